//! Issue 43, fault injection end to end: while `stats --serve` runs over eight stand-in
//! GPUs, the stand-in NVML delivers Xid 79 on GPU 2 and Xid 43 on GPU 3 through its event
//! set; Prometheus shows GPU 2 fatal, the watcher records it beside the GPU placement
//! lock, and a following `up` (after `stats` ended) on the real Docker daemon, with GPUs
//! 0 and 1 held by real containers, never picks GPU 2 and says why; the application Xid
//! leaves GPU 3 to placement. `envctl gpu clear 2` gives GPU 2 back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::placement::{Holders, Machine, chosen, envctl, project, quietly, turn};
use crate::support::cli::Envctl;
use crate::support::docker;
use crate::support::nvml;

/// `GET path` over plain HTTP/1.0; the body.
fn http_get(address: &str, path: &str) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{head}");
    body.to_string()
}

/// The `envctl_gpu_health` line of GPU `gpu`.
fn health_line(body: &str, gpu: u32) -> Option<String> {
    body.lines()
        .find(|line| {
            line.starts_with("envctl_gpu_health{") && line.contains(&format!("gpu=\"{gpu}\""))
        })
        .map(str::to_string)
}

/// Runs `stats --serve` on `machine` (placement lock in `folder`), appends each of
/// `events` (`gpu:xid`) once it serves, and stops it once GPU `fatal_gpu` reads fatal (or
/// 20 s pass); the last exposition.
fn stats_seeing(folder: &Path, machine: &Machine, events: &[&str], fatal_gpu: u32) -> String {
    let events_file = folder.join("xid-events");
    std::fs::write(&events_file, "").unwrap();
    let mut child = Envctl::in_folder(folder)
        .command()
        .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", &machine.fixture)
        .env("ENVCTL_NVML_STUB_EVENTS", &events_file)
        .env("ENVCTL_GPU_LOCK", folder.join("gpus.lock"))
        .args(["stats", "--interval", "0.5", "--serve", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_string();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&events_file)
        .unwrap();
    for event in events {
        writeln!(file, "{event}").unwrap();
    }
    let started = Instant::now();
    let body = loop {
        let body = http_get(&address, "/metrics");
        let fatal =
            health_line(&body, fatal_gpu).is_some_and(|line| line.contains("state=\"fatal\""));
        let counted = body.lines().any(|line| {
            line.starts_with("envctl_gpu_xid_errors_total{") && line.contains("xid=\"43\"")
        });
        if (fatal && counted) || started.elapsed() > Duration::from_secs(20) {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    body
}

#[test]
fn health_a_fatal_xid_seen_by_stats_keeps_the_gpu_out_of_up_until_gpu_clear() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new("");
    let image = docker::test_image();
    let folder = project(&image, &[("two", "gpus = 2\n")]);
    let body = stats_seeing(folder.path(), &machine, &["3:43", "2:79"], 2);
    assert!(
        health_line(&body, 2).is_some_and(|line| line.contains("state=\"fatal\"")),
        "{body}"
    );
    assert!(
        health_line(&body, 3).is_some_and(|line| line.contains("state=\"ok\"")),
        "an application Xid does not mark the GPU: {body}"
    );
    // The watcher kept what it saw beside the lock, by UUID, with this boot's id.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    let record_path = folder.path().join(format!("envctl-gpu-health.{uid}.json"));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(record["boot_id"], boot.trim(), "{record:#}");
    assert!(
        record["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .any(|gpu| gpu["uuid"] == machine.uuids[2].as_str() && gpu["xids"][0]["xid"] == 79),
        "{record:#}"
    );

    // GPUs 0 and 1 held by real containers: the least used free ones would be 2 and 3.
    let holders = Holders::create(&["\"device=0,1\""]);
    let mine = |name: &str| holders.names.iter().any(|own| own == name);
    let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
    // `quietly` runs a scenario again when another module's GPU container appeared
    // meanwhile: only the `up`s, which change nothing, run inside it.
    let (kept_out, said) = quietly("", &mine, || {
        (
            run(&["up", "two", "--dry-run", "--force", "--json"]),
            run(&["up", "two", "--dry-run", "--force"]),
        )
    });
    // `all` is not placed: the failed GPU among them is said.
    let all = run(&["up", "two", "--dry-run", "--force", "--gpus", "all"]);
    assert!(
        all.stderr
            .contains("the profile asks for a GPU that failed, which its container is given all the same: GPU 2 is kept out"),
        "{all}"
    );
    // `ps` marks a container of envctl's on the failed GPU, in the table and the JSON.
    {
        let profile_label = format!("envctl.profile=keepout-{}", std::process::id());
        let gpus_label = format!("envctl.gpus=devices={}", machine.uuids[2]);
        let device = format!("device={}", machine.uuids[2]);
        let on_failed = Holders::given(&[vec![
            "--label",
            &profile_label,
            "--label",
            &gpus_label,
            "--gpus",
            &device,
        ]]);
        let listed = run(&["ps", "-a", "--json"]);
        let table = run(&["ps", "-a"]);
        let rows = listed.json()["containers"].clone();
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == on_failed.names[0].as_str())
            .unwrap_or_else(|| panic!("{rows:#}"))
            .clone();
        assert_eq!(row["failed_gpus"][0]["index"], 2, "{row:#}");
        assert!(
            row["failed_gpus"][0]["why"]
                .as_str()
                .unwrap()
                .contains("envctl gpu clear"),
            "{row:#}"
        );
        let line = table
            .stdout
            .lines()
            .find(|line| line.contains(&on_failed.names[0]))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(line.contains("2 (GPU 2 FAILED)"), "{table}");
        assert!(
            table.stderr.contains("runs on a GPU that failed"),
            "{table}"
        );
    }
    let cleared = run(&["gpu", "clear", "2", "--json"]);
    let placed_again = quietly("", &mine, || {
        run(&["up", "two", "--dry-run", "--force", "--json"])
    });
    let again = run(&["gpu", "clear", &machine.uuids[2], "--json"]);
    let unknown = run(&["gpu", "clear", "9"]);
    assert_eq!(kept_out.code, 0, "{kept_out}");
    let placed = kept_out.json();
    assert_eq!(chosen(&placed), [3, 4], "{placed:#}");
    let skipped = placed["placement"]["skipped"].to_string();
    assert!(
        skipped.contains("GPU 2 is kept out (fatal)") && skipped.contains("Xid 79"),
        "{placed:#}"
    );
    assert!(
        skipped.contains(&format!("envctl gpu clear {}", machine.uuids[2])),
        "{placed:#}"
    );
    assert!(said.stderr.contains("GPU 2 is kept out"), "{said}");

    assert_eq!(cleared.code, 0, "{cleared}");
    let cleared = cleared.json();
    assert_eq!(cleared["schema_version"], 1, "{cleared:#}");
    assert_eq!(cleared["outcome"], "cleared", "{cleared:#}");
    assert_eq!(cleared["gpu"]["uuid"], machine.uuids[2].as_str());
    assert_eq!(cleared["cleared"][0]["xid"], 79, "{cleared:#}");
    assert_eq!(placed_again.code, 0, "{placed_again}");
    assert_eq!(chosen(&placed_again.json()), [2, 3], "{placed_again}");

    // Nothing left to clear, and a GPU the host does not have: exit 1, the GPUs listed.
    assert_eq!(again.code, 1, "{again}");
    assert_eq!(again.json()["outcome"], "nothing_to_clear", "{again}");
    assert_eq!(unknown.code, 1, "{unknown}");
    assert!(
        unknown.stderr.contains("no GPU of this host is `9`"),
        "{unknown}"
    );
    assert!(unknown.stderr.contains(&machine.uuids[7]), "{unknown}");
}

/// A GPU whose own NVML answers say it failed (a pending row remap) is kept out with the
/// reset as its fix, and `gpu clear` cannot end that: nothing recorded, exit 1, the
/// reason said.
#[test]
fn health_a_gpu_nvml_reports_failed_is_kept_out_and_no_clear_ends_it() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new(
        "gpu.*.remapped_rows_correctable=0\ngpu.*.remapped_rows_uncorrectable=0\ngpu.*.remapped_rows_pending=0\ngpu.*.remapped_rows_failure=0\ngpu.0.remapped_rows_uncorrectable=1\ngpu.0.remapped_rows_pending=1\n",
    );
    let image = docker::test_image();
    let folder = project(&image, &[("one", "gpus = 1\n")]);
    let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
    let placed = quietly("", &|_| false, || {
        run(&["up", "one", "--dry-run", "--force", "--json"])
    });
    let clear = run(&["gpu", "clear", "0"]);
    assert_eq!(placed.code, 0, "{placed}");
    let placed = placed.json();
    assert_eq!(chosen(&placed), [1], "{placed:#}");
    let skipped = placed["placement"]["skipped"].to_string();
    assert!(
        skipped.contains("GPU 0 is kept out (fatal)") && skipped.contains("nvidia-smi -r -i 0"),
        "{placed:#}"
    );
    assert_eq!(clear.code, 1, "{clear}");
    assert!(clear.stderr.contains("nothing to clear"), "{clear}");
    assert!(clear.stderr.contains("row remap is pending"), "{clear}");
}

/// The device rules of a running container's cgroup (v1 `devices`), as the kernel keeps
/// them; `None` where there are none to read (cgroup v2).
fn devices_folder(pid: &str) -> Option<std::path::PathBuf> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|controller| controller == "devices")
            .then(|| path.to_string())
    })?;
    let folder = Path::new("/sys/fs/cgroup/devices").join(path.trim_start_matches('/'));
    folder.join("devices.list").exists().then_some(folder)
}

/// A running container given a GPU (its node, and device rules for NVIDIA's nodes, as
/// the NVIDIA runtime writes them) is not flagged; once its device rules lose NVIDIA's
/// nodes, as a `systemctl daemon-reload` under the systemd cgroup driver does, `stats`
/// flags it as having lost its GPU, with the known cause and the fix.
#[test]
fn health_a_running_container_whose_gpu_access_was_cut_is_flagged() {
    if !docker::require_daemon() {
        return;
    }
    let machine = Machine::new(
        &(0..8)
            .map(|index| format!("gpu.{index}.minor_number={}\n", 20 + index))
            .collect::<String>(),
    );
    let guard = docker::ContainerGuard::unique("lost-gpu");
    docker::docker_stdout([
        "run",
        "-d",
        "--label",
        docker::TEST_LABEL,
        "--name",
        guard.name(),
        "--device",
        "/dev/null:/dev/nvidia22",
        "--device-cgroup-rule",
        "c 195:22 rwm",
        "--device-cgroup-rule",
        "c 195:255 rwm",
        &docker::test_image(),
        "sleep",
        "300",
    ]);
    let pid = docker::docker_stdout(["inspect", "--format", "{{.State.Pid}}", guard.name()]);
    let Some(folder) = devices_folder(pid.trim()) else {
        docker::skip_or_panic(
            "no cgroup v1 devices controller",
            "health_a_running_container_whose_gpu_access_was_cut_is_flagged",
            "the container's device rules are kept in an eBPF program on cgroup v2; envctl reads them from devices.list on v1",
        );
        return;
    };
    let stats = || {
        let run = Envctl::in_folder(Path::new("/"))
            .nvml_file(&machine.fixture)
            .args(["stats", "--once", "--json", guard.name()])
            .timeout(Duration::from_secs(60))
            .run();
        assert!(run.success(), "{run}");
        let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        document["diagnoses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|diagnosis| diagnosis["id"] == "gpu-access-lost")
            .cloned()
    };
    assert_eq!(stats(), None, "its device rules allow NVIDIA's nodes");
    // What systemd's reload leaves: the NVIDIA rules gone, the container running.
    let before = std::fs::read_to_string(folder.join("devices.list")).unwrap();
    for rule in before.lines().filter(|rule| rule.starts_with("c 195:")) {
        std::fs::write(folder.join("devices.deny"), rule).unwrap();
    }
    let list = std::fs::read_to_string(folder.join("devices.list")).unwrap();
    assert!(!list.contains("195:"), "{list}");
    let flagged = stats().expect("a container that lost its GPU is flagged");
    assert_eq!(flagged["subject"], guard.name());
    assert_eq!(flagged["severity"], "warning", "{flagged:#}");
    let message = flagged["message"].as_str().unwrap();
    assert!(
        message.contains("NVML: Unknown Error") && message.contains("systemctl daemon-reload"),
        "{message}"
    );
    let hint = flagged["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("docker restart {}", guard.name())) && hint.contains("nvidia-ctk"),
        "{hint}"
    );
}
