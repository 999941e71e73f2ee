//! Which GPUs a placement picks: a count lands on the least used free GPUs pinned by UUID,
//! device nodes hold their minor numbers' GPUs, no room is refused naming the holders, busy GPUs
//! are placed last and refused by idle placement, and doctor names each GPU process's container.

use super::*;

#[test]
fn a_count_lands_on_the_least_used_free_gpus_pinned_by_uuid() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPU 0: free but busy (a process outside any container, 40 GiB); 1 held by UUID;
    // 2 and 3 by index.
    let machine = Machine::new("gpu.0.memory_used=42949672960\ngpu.0.processes=4242:42949672960\n");
    let image = docker::test_image();
    let folder = project(
        &image,
        &[
            ("two", "gpus = 2\n"),
            ("first", "gpus = { count = 2 }\nplacement = \"first\"\n"),
        ],
    );
    let holders = Holders::create(&[&format!("device={}", machine.uuids[1]), "\"device=2,3\""]);
    let (two, first, three, given, doctor) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
            (
                run(&["up", "two", "--dry-run", "--force", "--json"]),
                run(&["up", "first", "--dry-run", "--force", "--json"]),
                run(&["up", "two", "--dry-run", "--force", "--json", "--gpus", "3"]),
                run(&[
                    "up",
                    "two",
                    "--dry-run",
                    "--force",
                    "--json",
                    "--gpus",
                    "device=0",
                ]),
                run(&["doctor", "--json"]),
            )
        },
    );
    assert_eq!(two.code, 0, "{two}");
    let placed = two.json();
    assert_eq!(chosen(&placed), [4, 5], "{placed:#}");
    assert_eq!(placed["placement"]["placement"], "free");
    let request = &placed["body"]["HostConfig"]["DeviceRequests"][0];
    assert_eq!(
        request["DeviceIDs"],
        serde_json::json!([machine.uuids[4], machine.uuids[5]]),
        "{placed:#}"
    );
    assert_eq!(request["Count"], 0);
    assert_eq!(
        placed["body"]["Labels"]["envctl.gpus"],
        format!("devices={},{}", machine.uuids[4], machine.uuids[5])
    );
    // The human dry run says the same, on stderr.
    let said = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force"],
    );
    assert!(
        said.stderr
            .contains("placement: GPUs 4 and 5: no container holds them"),
        "{said}"
    );
    assert!(said.stdout.contains(&machine.uuids[4]), "{said}");

    // `placement = "first"`: Docker's own choice, a bare count.
    assert_eq!(first.code, 0, "{first}");
    let first = first.json();
    assert_eq!(first["placement"]["placement"], "first");
    let request = &first["body"]["HostConfig"]["DeviceRequests"][0];
    assert_eq!(request["Count"], 2, "{first:#}");
    assert!(request["DeviceIDs"].is_null(), "{first:#}");

    // `--gpus 3` is placed too; `--gpus device=0` names its GPU, shared or not.
    assert_eq!(three.code, 0, "{three}");
    assert_eq!(chosen(&three.json()), [4, 5, 6]);
    assert_eq!(given.code, 0, "{given}");
    let given = given.json();
    assert_eq!(given["placement"]["placement"], "given");
    assert_eq!(
        given["body"]["HostConfig"]["DeviceRequests"][0]["DeviceIDs"],
        serde_json::json!(["0"])
    );

    // doctor's occupancy: holders by name, GPU 0's process, free flags.
    let doctor = doctor.json();
    let gpus = doctor["occupancy"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{doctor:#}"));
    assert_eq!(gpus.len(), 8);
    let free: Vec<bool> = gpus
        .iter()
        .map(|gpu| gpu["free"].as_bool().unwrap())
        .collect();
    // GPU 0 is held by no container, but its 40 GiB foreign process makes it busy, and
    // busy is not free (issue 40: the words and the fields agree).
    assert_eq!(free, [false, false, false, false, true, true, true, true]);
    assert!(gpus[0]["busy"].as_str().is_some(), "{doctor:#}");
    assert_eq!(gpus[1]["holders"][0]["name"], holders.names[0].as_str());
    assert_eq!(gpus[2]["holders"][0]["name"], holders.names[1].as_str());
    assert_eq!(gpus[3]["holders"][0]["state"], "created");
    assert_eq!(gpus[0]["processes"][0]["pid"], 4242);
    assert_eq!(gpus[0]["memory_used_bytes"], 42_949_672_960_u64);
}

/// Another tool's container given GPU device nodes (`docker create --device
/// HOST:/dev/nvidiaM`, as scripts did before the NVIDIA runtime, and what Podman records
/// of a CDI device) holds the GPUs whose minor number is M: NVML's minor number, which
/// here is not the index. A node no GPU has is said as unmapped; the driver's own nodes
/// hold nothing.
#[test]
fn device_nodes_hold_the_gpus_of_their_minor_numbers() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new(&minor_numbers());
    let image = docker::test_image();
    let folder = project(&image, &[("two", "gpus = 2\n")]);
    let holders = Holders::given(&[
        vec![
            "--device",
            "/dev/null:/dev/nvidia20",
            "--device",
            "/dev/null:/dev/nvidiactl",
        ],
        vec![
            "--device",
            "/dev/null:/dev/nvidia21",
            "--device",
            "/dev/zero:/dev/nvidia99",
        ],
        vec!["--device", "/dev/null:/dev/nvidia-uvm"],
    ]);
    let (two, doctor) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
            (
                run(&["up", "two", "--dry-run", "--force", "--json"]),
                run(&["doctor", "--json"]),
            )
        },
    );
    assert_eq!(two.code, 0, "{two}");
    assert_eq!(chosen(&two.json()), [2, 3], "{two}");
    let doctor = doctor.json();
    let gpus = doctor["occupancy"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{doctor:#}"));
    let free: Vec<bool> = gpus
        .iter()
        .map(|gpu| gpu["free"].as_bool().unwrap())
        .collect();
    assert_eq!(
        free,
        [false, false, true, true, true, true, true, true],
        "{doctor:#}"
    );
    assert_eq!(gpus[0]["holders"][0]["name"], holders.names[0].as_str());
    assert_eq!(gpus[1]["holders"][0]["name"], holders.names[1].as_str());
    assert_eq!(
        doctor["occupancy"]["unmapped"],
        serde_json::json!([format!("/dev/nvidia99 ({})", holders.names[1])]),
        "{doctor:#}"
    );
}

#[test]
fn no_room_is_refused_naming_the_holders_and_unreadable_gpus_are_skipped() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPU 7's memory cannot be read: never picked, and said.
    let machine = Machine::new("gpu.7.fail=memory_info:999\n");
    let image = docker::test_image();
    let folder = project(&image, &[("two", "gpus = 2\n"), ("one", "gpus = 1\n")]);
    let holders = Holders::create(&["\"device=0,1,2,3,4,5\""]);
    let (two, one) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            (
                envctl(
                    folder.path(),
                    &machine,
                    "",
                    &["up", "two", "--dry-run", "--force"],
                ),
                envctl(
                    folder.path(),
                    &machine,
                    "",
                    &["up", "one", "--dry-run", "--force", "--json"],
                ),
            )
        },
    );
    assert_eq!(two.code, 1, "{two}");
    assert!(
        two.stderr
            .contains("error: no room on this host's GPUs: 2 GPUs asked for, 1 free"),
        "{two}"
    );
    assert!(
        two.stderr
            .contains(&format!("held: GPU 0: {} (created)", holders.names[0])),
        "{two}"
    );
    assert!(
        two.stderr
            .contains("skipped: GPU 7: NVML could not read its memory"),
        "{two}"
    );
    assert!(
        two.stderr
            .contains("hint: `envctl doctor` shows who holds each GPU"),
        "{two}"
    );
    assert!(two.stdout.is_empty(), "{two}");
    assert_eq!(one.code, 0, "{one}");
    let one = one.json();
    assert_eq!(chosen(&one), [6]);
    assert!(
        one["placement"]["skipped"][0]
            .as_str()
            .is_some_and(|line| line.starts_with("GPU 7: NVML could not read its memory")),
        "{one:#}"
    );
}

#[test]
fn doctor_names_the_container_each_gpu_process_runs_in() {
    if !docker::require_daemon() {
        return;
    }
    // A real running container's main process stands in for a training process on GPU 3
    // (NVML's answer is the stand-in's; the PID and its cgroup are the kernel's).
    let name = unique_name("gpu-process");
    let _guard = docker::ContainerGuard::new(name.clone());
    docker::docker_stdout([
        "run",
        "-d",
        "--label",
        TEST_LABEL,
        "--name",
        &name,
        &docker::test_image(),
        "sleep",
        "600",
    ]);
    let pid = docker::docker_stdout(["inspect", "--format", "{{.State.Pid}}", &name]);
    let machine = Machine::new(&format!(
        "gpu.3.processes={}:1073741824,999999:1024\n",
        pid.trim()
    ));
    let folder = tempfile::tempdir().unwrap();
    let doctor = envctl(folder.path(), &machine, "", &["doctor", "--json"]);
    let report = doctor.json();
    let processes = &report["occupancy"]["gpus"][3]["processes"];
    assert_eq!(
        processes[0]["pid"].as_u64(),
        pid.trim().parse::<u64>().ok(),
        "{report:#}"
    );
    assert_eq!(processes[0]["container"], name.as_str(), "{report:#}");
    assert_eq!(processes[0]["used_memory_bytes"], 1_073_741_824_u64);
    // A PID that is no process now belongs to no container, and says so.
    assert!(processes[1]["container"].is_null(), "{report:#}");
    let human = envctl(folder.path(), &machine, "", &["doctor"]);
    assert!(
        human.stdout.contains(&format!(
            "2 processes ({} in {name}, 999999 in no running container)",
            pid.trim()
        )),
        "{human}"
    );
}

/// Issue 28: a GPU no container holds but a process uses (another user's script) or
/// whose memory is in use is busy, not free: doctor says whose and how much, placement
/// takes an idle GPU first and says so when it must share a busy one, and
/// `placement = "idle"` refuses instead.
#[test]
fn busy_gpus_are_said_placed_last_and_refused_by_idle_placement() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPUs 0–5 run another user's process (57 GiB each), GPU 6 has 60 GB in use by no
    // process NVML lists, GPU 7 is idle.
    let mut extra: String = (0..6)
        .map(|index| format!("gpu.{index}.processes={}:61203283968\n", 4_000_000 + index))
        .collect();
    extra.push_str("gpu.6.memory_used=60000000000\n");
    let machine = Machine::new(&extra);
    let image = docker::test_image();
    let folder = project(
        &image,
        &[
            ("two", "gpus = 2\n"),
            ("one", "gpus = 1\n"),
            ("strict", "gpus = 2\nplacement = \"idle\"\n"),
        ],
    );
    let (doctor, two, one, strict) = quietly("", &|_| false, || {
        let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
        (
            run(&["doctor", "--json"]),
            run(&["up", "two", "--dry-run", "--force", "--json"]),
            run(&["up", "one", "--dry-run", "--force", "--json"]),
            run(&["up", "strict", "--dry-run", "--force"]),
        )
    });
    let report = doctor.json();
    let gpus = report["occupancy"]["gpus"].as_array().unwrap();
    let busy = gpus[0]["busy"]
        .as_str()
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        busy.contains("1 compute process")
            && busy.contains("PID 4000000")
            && busy.contains("57.0 GiB"),
        "{busy}"
    );
    assert!(
        gpus[6]["busy"]
            .as_str()
            .unwrap()
            .contains("55.9 GiB of its memory"),
        "{report:#}"
    );
    assert!(gpus[7]["busy"].is_null(), "{report:#}");
    let human = envctl(folder.path(), &machine, "", &["doctor"]);
    assert!(
        human
            .stdout
            .contains("! GPU 0: busy (no container holds it)"),
        "{human}"
    );

    // One GPU: the idle one, without a word of sharing.
    assert_eq!(one.code, 0, "{one}");
    assert_eq!(chosen(&one.json()), [7], "{one}");
    assert!(!one.stderr.contains("busy"), "{one}");
    // Two: the idle one and the least used busy one, said.
    assert_eq!(two.code, 0, "{two}");
    assert_eq!(chosen(&two.json()), [0, 7], "{two}");
    let said = two.json()["placement"]["skipped"].to_string();
    assert!(
        said.contains("GPU 0 is busy but no idle GPU is left, so it is shared"),
        "{two}"
    );
    // `placement = "idle"`: no room rather than sharing.
    assert_eq!(strict.code, 1, "{strict}");
    assert!(
        strict.stderr.contains("2 GPUs asked for, 1 free"),
        "{strict}"
    );
    assert!(
        strict
            .stderr
            .contains("GPU 6 is busy (`placement = \"idle\"`)"),
        "{strict}"
    );
}
