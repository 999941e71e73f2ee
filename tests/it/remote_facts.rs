//! A server's facts from any client (issue 38, item 1): daemons of the tests' own
//! (`support::server`), each in a network and UTS namespace of its own, whose stand-in
//! NVIDIA hook gives containers an `nvidia-smi` answering from the server's fixture. The
//! probe containers a killed envctl leaves are swept by the next probe.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{TEST_LABEL, unique_name};
use crate::support::server::{Fixture, FixtureProcess, Server};

/// envctl in `folder` against `server`, as a machine without NVML runs it.
fn envctl_on(folder: &Path, server: &Server, arguments: &[&str]) -> Run {
    Envctl::in_folder(folder)
        .daemon(&server.host())
        .env("ENVCTL_NVML_LIBRARY", folder.join("no-nvml-here.so"))
        .args(arguments)
        .timeout(Duration::from_secs(120))
        .run()
}

/// A profile `name` in `folder`: `image`, `gpus` GPUs (none for 0), a sleeper.
fn gpu_profile(folder: &Path, name: &str, image: &str, gpus: u32) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join("envctl").join(format!("{name}.toml")),
        match gpus {
            0 => format!("image = \"{image}\"\ncommand = [\"sleep\", \"600\"]\n"),
            _ => format!("image = \"{image}\"\ngpus = {gpus}\ncommand = [\"sleep\", \"600\"]\n"),
        },
    )
    .unwrap();
}

/// The probe containers created on `server` since `since` (a [`moment`]), from its events.
pub(crate) fn probes_since(server: &Server, since: &str) -> usize {
    let until = now() + 1;
    server
        .docker_ok(&[
            "events",
            "--since",
            since,
            "--until",
            &until.to_string(),
            "--filter",
            "type=container",
            "--filter",
            "event=create",
            "--filter",
            "label=envctl.probe",
            "--format",
            "{{.ID}}",
        ])
        .lines()
        .filter(|line| !line.trim().is_empty())
        .count()
}

/// The probe containers left on `server` (`docker ps -aq`), once the daemon has had a
/// moment to remove those that ended: a probe read attached is removed by the daemon
/// itself after its output ends (`AutoRemove`), which envctl does not wait for.
pub(crate) fn probes_left(server: &Server) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = server
            .docker_ok(&["ps", "-aq", "--filter", "label=envctl.probe"])
            .trim()
            .to_string();
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Now as the daemon's `events --since` takes it, to the nanosecond (`SECONDS.NANOS`): a
/// probe made earlier in the same second is not "since" (whole seconds counted a probe
/// of the command before as one of the command after).
pub(crate) fn moment() -> String {
    let elapsed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}.{:09}", elapsed.as_secs(), elapsed.subsec_nanos())
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The infrastructure itself: a test server names its own host, and a `--gpus` container
/// on it runs the stand-in nvidia-smi, which answers the fixture for the GPUs the
/// container was given; a server without the toolkit refuses `--gpus`.
#[test]
fn a_test_server_is_another_machine_with_the_fixtures_gpus() {
    let test = "a_test_server_is_another_machine_with_the_fixtures_gpus";
    let mut fixture = Fixture::gpus(
        "aaaaaaaa",
        4,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "535.161.08",
        "12.2",
    );
    fixture.processes.push(FixtureProcess {
        gpu_uuid: fixture.gpus[3].uuid.clone(),
        pid: 4242,
        used_memory: "2048".into(),
        name: "python".into(),
    });
    let Some(server) = Server::start(test, "gpu-infra", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    assert_eq!(
        server.docker_ok(&["info", "--format", "{{.Name}}"]).trim(),
        "gpu-infra"
    );
    let query = "PATH=/usr/bin:$PATH; nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv,noheader,nounits && nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits && nvidia-smi -q";
    let all = server.docker_ok(&[
        "run", "--rm", "--label", TEST_LABEL, "--gpus", "all", &image, "sh", "-c", query,
    ]);
    assert!(
        all.contains(
            "0, GPU-aaaaaaaa-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 535.161.08"
        ),
        "{all}"
    );
    assert!(
        all.contains("3, GPU-aaaaaaaa-0000-0000-0000-000000000003"),
        "{all}"
    );
    assert!(
        all.contains("GPU-aaaaaaaa-0000-0000-0000-000000000003, 4242, 2048"),
        "{all}"
    );
    assert!(
        all.contains("CUDA Version                              : 12.2"),
        "{all}"
    );
    let two = server.docker_ok(&[
        "run",
        "--rm",
        "--label",
        TEST_LABEL,
        "--gpus",
        "\"device=1,2\"",
        &image,
        "sh",
        "-c",
        query,
    ]);
    assert!(
        two.contains("1, GPU-aaaaaaaa") && two.contains("2, GPU-aaaaaaaa"),
        "{two}"
    );
    assert!(
        !two.contains("0, GPU-aaaaaaaa") && !two.contains("4242"),
        "{two}"
    );

    let Some(bare) = Server::start(test, "gpu-bare", None) else {
        return;
    };
    let image = bare.load_test_image();
    let refused = bare.docker(&[
        "run", "--rm", "--label", TEST_LABEL, "--gpus", "all", &image, "true",
    ]);
    assert!(!refused.status.success(), "{refused:?}");
}

/// `doctor` against another machine's daemon shows that machine's driver, CUDA version and
/// GPUs from the fixture, through a probe; the record it keeps there carries its age and
/// source, and the next doctor reads it without a probe (the daemon's events show none).
#[test]
fn remote_doctor_shows_the_servers_driver_and_gpus_and_reuses_the_record() {
    let test = "remote_doctor_shows_the_servers_driver_and_gpus_and_reuses_the_record";
    let fixture = Fixture::gpus(
        "bbbbbbbb",
        2,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "535.161.08",
        "12.2",
    );
    let Some(server) = Server::start(test, "gpu-doctor", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("remote-doctor");
    gpu_profile(folder.path(), &profile, &image, 1);
    // A profile that wants no GPU makes no probe (an `up` of it would pay for one).
    let cpu = unique_name("remote-cpu");
    gpu_profile(folder.path(), &cpu, &image, 0);
    let before = now();
    let probed_from = moment();
    let cpu_doctor = envctl_on(folder.path(), &server, &["doctor", &cpu]);
    assert_eq!(probes_since(&server, &probed_from), 0, "{cpu_doctor}");
    let first = envctl_on(folder.path(), &server, &["doctor", &profile]);
    assert!(
        first
            .stdout
            .contains("NVIDIA driver 535.161.08 (CUDA 12.2), 2 GPUs"),
        "{first}"
    );
    assert!(
        first.stdout.contains("GPU 1: NVIDIA H100 80GB HBM3, sm_90"),
        "{first}"
    );
    assert!(
        first.stdout.contains("as seen by a probe container"),
        "{first}"
    );
    assert_eq!(probes_since(&server, &probed_from), 1, "{first}");
    // The probe is removed.
    assert_eq!(probes_left(&server), "", "{first}");
    let labels: serde_json::Value = serde_json::from_str(&server.docker_ok(&[
        "volume",
        "inspect",
        "envctl-gpus",
        "--format",
        "{{json .Labels}}",
    ]))
    .unwrap();
    assert_eq!(labels["envctl.gpu-record.driver"], "535.161.08", "{labels}");
    assert_eq!(labels["envctl.gpu-record.cuda"], "12.2", "{labels}");
    assert_eq!(labels["envctl.gpu-record.by"], "probe", "{labels}");
    assert_eq!(labels["envctl.gpu-record.host"], "gpu-doctor", "{labels}");
    let taken: u64 = labels["envctl.gpu-record.taken"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(taken >= before && taken <= now(), "{labels}");

    let again = moment();
    let second = envctl_on(folder.path(), &server, &["--json", "doctor", &profile]);
    let report = second.json();
    let nvml = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "gpu.nvml" && finding["facts"]["from_record"] == true)
        .unwrap_or_else(|| panic!("no finding read from the record: {second}"))
        .clone();
    assert_eq!(nvml["facts"]["seen_by"], "probe", "{second}");
    assert_eq!(nvml["facts"]["taken_at"], taken, "{second}");
    assert!(second.stdout.contains("535.161.08"), "{second}");
    assert_eq!(
        probes_since(&server, &again),
        0,
        "a second doctor probed again: {second}"
    );
}

/// Two laptops `up` a `gpus = 2` profile at once on a server of eight GPUs whose GPUs 0
/// and 1 a container holds and whose GPU 2 runs a compute process of no container holding
/// it, with no GPU record yet: each gets two GPUs, disjoint, none of 0, 1 and 2.
#[test]
fn two_laptops_get_disjoint_gpus_that_no_container_or_process_holds() {
    let test = "two_laptops_get_disjoint_gpus_that_no_container_or_process_holds";
    let mut fixture = Fixture::gpus(
        "cccccccc",
        8,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "550.54.15",
        "12.4",
    );
    let Some(server) = Server::start(test, "gpu-race", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    let holder = unique_name("holder");
    server.docker_ok(&[
        "run",
        "-d",
        "--name",
        &holder,
        "--label",
        TEST_LABEL,
        "--gpus",
        "\"device=0,1\"",
        &image,
        "sleep",
        "600",
    ]);
    let other = unique_name("no-gpu");
    server.docker_ok(&[
        "run", "-d", "--name", &other, "--label", TEST_LABEL, &image, "sleep", "600",
    ]);
    fixture.processes.push(FixtureProcess {
        gpu_uuid: fixture.gpus[2].uuid.clone(),
        pid: server.container_pid(&other),
        used_memory: "4096".into(),
        name: "python".into(),
    });
    server.set_fixture(&fixture);
    assert!(
        server
            .docker(&["volume", "inspect", "envctl-gpus"])
            .status
            .code()
            != Some(0)
    );
    let folders: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let profiles: Vec<String> = (0..2).map(|n| unique_name(&format!("laptop{n}"))).collect();
    for (folder, profile) in folders.iter().zip(&profiles) {
        gpu_profile(folder.path(), profile, &image, 2);
    }
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = folders
            .iter()
            .zip(&profiles)
            .map(|(folder, profile)| {
                let server = &server;
                scope.spawn(move || {
                    // Each laptop is a machine of its own (its own host name).
                    Envctl::on_a_laptop(folder.path(), None)
                        .daemon(&server.host())
                        .env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"))
                        .args(["up", profile])
                        .timeout(Duration::from_secs(120))
                        .run()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let mut given: Vec<u32> = Vec::new();
    for (run, profile) in runs.iter().zip(&profiles) {
        assert_eq!(run.code, 0, "{run}");
        let requests = server.docker_ok(&[
            "inspect",
            "--format",
            "{{json .HostConfig.DeviceRequests}}",
            &format!("envctl-{profile}"),
        ]);
        let requests: serde_json::Value = serde_json::from_str(&requests).unwrap();
        let ids: Vec<String> = requests[0]["DeviceIDs"]
            .as_array()
            .unwrap_or_else(|| panic!("no DeviceIDs: {requests} {run}"))
            .iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 2, "{requests}");
        for id in ids {
            let gpu = fixture
                .gpus
                .iter()
                .find(|gpu| gpu.uuid == id)
                .unwrap_or_else(|| panic!("{id} is none of the server's GPUs: {run}"));
            given.push(gpu.index);
        }
    }
    let mut unique = given.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 4, "the laptops shared GPUs: {given:?}");
    assert!(
        given.iter().all(|index| *index > 2),
        "given {given:?}: 0-1 are held, 2 is busy"
    );
}

/// A server whose daemon gives containers no GPUs (no NVIDIA toolkit): doctor says why its
/// GPUs cannot be learnt, with the command that helps, and `up` of a `gpus = 2` profile is
/// refused (exit 1) instead of left to the daemon's first-N choice: nothing is created.
#[test]
fn no_probe_possible_is_said_and_nothing_is_double_booked() {
    let test = "no_probe_possible_is_said_and_nothing_is_double_booked";
    let Some(server) = Server::start(test, "gpu-bare", None) else {
        return;
    };
    let image = server.load_test_image();
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("bare");
    gpu_profile(folder.path(), &profile, &image, 2);
    let doctor = envctl_on(folder.path(), &server, &["doctor", &profile]);
    assert!(
        doctor
            .stdout
            .contains("gives containers no GPUs (no NVIDIA runtime, hook or CDI spec)"),
        "{doctor}"
    );
    assert!(
        doctor.stdout.contains("nvidia-ctk runtime configure"),
        "{doctor}"
    );
    let up = envctl_on(folder.path(), &server, &["up", &profile]);
    assert_eq!(up.code, 1, "{up}");
    assert!(
        up.stderr
            .contains("cannot tell which GPUs of gpu-bare are free"),
        "{up}"
    );
    assert!(up.stderr.contains("hint:"), "{up}");
    assert_eq!(
        server
            .docker_ok(&["ps", "-aq", "--filter", &format!("name=envctl-{profile}")])
            .trim(),
        "",
        "{up}"
    );
    assert_eq!(probes_left(&server), "");
}

/// `doctor --hosts` over two servers with different drivers and GPU models: each server's
/// driver branch and GPUs are learnt through its daemon and shown, and the differences are
/// marked (exit 1), never "agree" over unknowns.
#[test]
fn doctor_hosts_marks_two_servers_with_different_drivers() {
    let test = "doctor_hosts_marks_two_servers_with_different_drivers";
    let older = Fixture::gpus(
        "dddddddd",
        2,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "535.161.08",
        "12.2",
    );
    let newer = Fixture::gpus(
        "eeeeeeee",
        4,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "550.54.15",
        "12.4",
    );
    let Some(first) = Server::start(test, "gpu-old", Some(&older)) else {
        return;
    };
    let Some(second) = Server::start(test, "gpu-new", Some(&newer)) else {
        return;
    };
    let image = first.load_test_image();
    second.load_test_image();
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("team");
    gpu_profile(folder.path(), &profile, &image, 1);
    std::fs::write(
        folder.path().join("envctl").join("hosts.toml"),
        format!(
            "[hosts]\nold = \"{}\"\nnew = \"{}\"\n",
            first.host(),
            second.host()
        ),
    )
    .unwrap();
    let run = Envctl::in_folder(folder.path())
        .env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"))
        .args(["--json", "doctor", "--hosts", "@team", &profile])
        .timeout(Duration::from_secs(120))
        .run();
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    let fact = |name: &str| {
        report["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|fact| fact["fact"] == name)
            .unwrap_or_else(|| panic!("no {name}: {run}"))
            .clone()
    };
    // The columns in the order the report names the hosts.
    let column = |host: &str| {
        report["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .position(|state| state["host"] == host)
            .unwrap_or_else(|| panic!("no host {host}: {run}"))
    };
    let (old, new) = (column("old"), column("new"));
    let branch = fact("NVIDIA driver branch");
    assert_eq!(branch["differs"], true, "{run}");
    assert_eq!(branch["cells"][old]["text"], "535", "{run}");
    assert_eq!(branch["cells"][new]["text"], "550", "{run}");
    let gpus = fact("GPUs");
    assert_eq!(gpus["differs"], true, "{run}");
    assert_eq!(
        gpus["cells"][old]["text"], "2 × NVIDIA A100-SXM4-80GB",
        "{run}"
    );
    assert_eq!(
        gpus["cells"][new]["text"], "4 × NVIDIA H100 80GB HBM3",
        "{run}"
    );
    assert_eq!(fact("CUDA (driver)")["differs"], true, "{run}");
    assert_eq!(fact("NVIDIA driver branch")["incomplete"], false, "{run}");
}

/// Probe containers an envctl killed mid-probe left behind (never started, exited, still
/// running) are removed by the next probe of the daemon once older than the sweep bound;
/// a container without the label, and one whose label only its image gives, stay.
#[test]
fn a_probe_left_by_a_killed_envctl_is_swept_by_the_next_probe() {
    let test = "a_probe_left_by_a_killed_envctl_is_swept_by_the_next_probe";
    let fixture = Fixture::gpus(
        "abababab",
        2,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "535.161.08",
        "12.2",
    );
    let Some(server) = Server::start(test, "gpu-sweep", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    let probe = "envctl.probe=1";
    let never_started = server
        .docker_ok(&["create", "--label", probe, &image, "true"])
        .trim()
        .to_string();
    let exited = unique_name("exited-probe");
    server.docker_ok(&["run", "--name", &exited, "--label", probe, &image, "true"]);
    let running = unique_name("running-probe");
    server.docker_ok(&[
        "run", "-d", "--name", &running, "--label", probe, &image, "sleep", "600",
    ]);
    let unlabelled = unique_name("not-a-probe");
    server.docker_ok(&[
        "create",
        "--name",
        &unlabelled,
        "--label",
        TEST_LABEL,
        &image,
        "true",
    ]);
    // An image that gives its containers the label: no proof that envctl made them.
    let labelling_image = format!("envctl-test/{}:1", unique_name("probe-label"));
    server.docker_ok(&[
        "commit",
        "--change",
        &format!("LABEL {probe}"),
        &unlabelled,
        &labelling_image,
    ]);
    let inherited = unique_name("inherited-label");
    server.docker_ok(&[
        "create",
        "--name",
        &inherited,
        "--label",
        TEST_LABEL,
        &labelling_image,
        "true",
    ]);
    // Older than the sweep bound (`engine::probe::SWEEP_AFTER`, 30 s) by the daemon's clock.
    std::thread::sleep(Duration::from_secs(32));
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("sweep");
    gpu_profile(folder.path(), &profile, &image, 1);
    let doctor = envctl_on(folder.path(), &server, &["doctor", &profile]);
    assert!(
        doctor.stdout.contains("as seen by a probe container"),
        "{doctor}"
    );
    let left: Vec<String> = server
        .docker_ok(&["ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}}"])
        .lines()
        .map(str::to_string)
        .collect();
    for gone in [never_started.as_str(), exited.as_str(), running.as_str()] {
        assert!(
            !left
                .iter()
                .any(|line| line.split(' ').any(|word| word == gone)),
            "{gone} is still there: {left:?}\n{doctor}"
        );
    }
    for kept in [&unlabelled, &inherited] {
        assert!(
            left.iter().any(|line| line.ends_with(&format!(" {kept}"))),
            "{kept} was removed: {left:?}\n{doctor}"
        );
    }
}

/// An envctl killed while its probe runs (attached, over the server's socket) leaves
/// nothing behind: the daemon removes the probe when it ends (`AutoRemove`). The probe is
/// made slow by its image, whose `/bin/sh` sleeps before it runs the script.
#[test]
fn a_probe_whose_envctl_was_killed_is_removed_by_the_daemon_when_it_ends() {
    let test = "a_probe_whose_envctl_was_killed_is_removed_by_the_daemon_when_it_ends";
    let fixture = Fixture::gpus(
        "acacacac",
        2,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "550.54.15",
        "12.4",
    );
    let Some(server) = Server::start(test, "gpu-killed", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    // The test image's shell, slowed: four seconds the first time a container runs it (the
    // probe's script; the stand-in nvidia-smi it runs is a shell script too), then the
    // real one.
    let slowing = unique_name("slow-shell");
    server.docker_ok(&[
        "run",
        "--name",
        &slowing,
        "--label",
        TEST_LABEL,
        "--entrypoint",
        "/bin/busybox",
        &image,
        "sh",
        "-c",
        "rm /bin/sh && printf '#!/bin/busybox sh\\n[ -e /slept ] || { touch /slept; sleep 4; }\\nexec /bin/busybox sh \"$@\"\\n' >/bin/sh && chmod +x /bin/sh",
    ]);
    let slow_image = format!("envctl-test/{}:1", unique_name("slow-probe"));
    server.docker_ok(&["commit", &slowing, &slow_image]);
    server.docker_ok(&["rm", &slowing]);
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("killed");
    gpu_profile(folder.path(), &profile, &slow_image, 1);
    let mut command = Envctl::in_folder(folder.path()).command();
    command
        .env("DOCKER_HOST", server.host())
        .env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"))
        .args(["doctor", &profile])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut envctl = command.spawn().unwrap();
    // Killed once its probe runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let running = loop {
        let running = server
            .docker_ok(&[
                "ps",
                "-q",
                "--filter",
                "label=envctl.probe",
                "--filter",
                "status=running",
            ])
            .trim()
            .to_string();
        if !running.is_empty() || std::time::Instant::now() > deadline {
            break running;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    envctl.kill().unwrap();
    envctl.wait().unwrap();
    assert!(!running.is_empty(), "no probe ran within 60 s");
    // Still there just after the kill (it sleeps), gone once it ended.
    assert!(
        server
            .docker_ok(&["ps", "-aq", "--filter", "label=envctl.probe"])
            .contains(&running),
        "the probe ended before its envctl was killed: the test proves nothing"
    );
    assert_eq!(probes_left(&server), "");
}

/// Where the profile's image is not on the server, the probe runs in the smallest image
/// there that declares CUDA (the cheapest create where the storage driver copies an
/// image's files), not in the first one listed.
#[test]
fn without_the_profiles_image_the_probe_runs_in_the_smallest_cuda_image() {
    let test = "without_the_profiles_image_the_probe_runs_in_the_smallest_cuda_image";
    let fixture = Fixture::gpus(
        "adadadad",
        2,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "550.54.15",
        "12.4",
    );
    let Some(server) = Server::start(test, "gpu-images", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    // Two CUDA images made from the test image, the larger by 4 MiB (made last, so listed
    // first: the daemon lists the newest first).
    let cuda_image = |name: &str, bytes: u32| {
        let maker = unique_name("cuda-image");
        server.docker_ok(&[
            "run",
            "--name",
            &maker,
            "--label",
            TEST_LABEL,
            &image,
            "sh",
            "-c",
            &format!("head -c {bytes} /dev/zero > /ballast"),
        ]);
        let reference = format!("envctl-test/{}:1", unique_name(name));
        server.docker_ok(&[
            "commit",
            "--change",
            "ENV CUDA_VERSION=12.4.1",
            &maker,
            &reference,
        ]);
        server.docker_ok(&["rm", &maker]);
        reference
    };
    let small = cuda_image("small-cuda", 1);
    let large = cuda_image("large-cuda", 4 << 20);
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("absent-image");
    gpu_profile(
        folder.path(),
        &profile,
        &format!("envctl-test/{}:1", unique_name("not-here")),
        1,
    );
    let since = moment();
    let doctor = envctl_on(folder.path(), &server, &["doctor", &profile]);
    assert!(
        doctor.stdout.contains("as seen by a probe container"),
        "{doctor}"
    );
    let until = now() + 1;
    let used = server.docker_ok(&[
        "events",
        "--since",
        &since,
        "--until",
        &until.to_string(),
        "--filter",
        "type=container",
        "--filter",
        "event=create",
        "--filter",
        "label=envctl.probe",
        "--format",
        "{{.Actor.Attributes.image}}",
    ]);
    assert_eq!(used.trim(), small, "not {large}: {doctor}");
}
