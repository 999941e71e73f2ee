//! The world misbehaving: each way of not reaching the daemon gets its own named cause and
//! fix within 3 s, and what envctl creates never has more privilege than the profile asks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::cli::{Envctl, Run};
use crate::support::disk::FullDisk;
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};

const LIMIT: Duration = Duration::from_secs(3);

/// envctl against the daemon at `host`, ended if it runs past 20 s.
fn against(host: &str) -> Envctl {
    Envctl::shared()
        .daemon(host)
        .timeout(Duration::from_secs(20))
}

#[test]
fn missing_socket() {
    let (Run { code, stderr, .. }, took) = against("unix:///nonexistent/envctl/docker.sock")
        .args(["ps"])
        .run_timed();
    assert_eq!(code, 1);
    assert!(
        stderr.contains("`/nonexistent/envctl/docker.sock` does not exist"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: start Docker"), "{stderr}");
    assert!(took < LIMIT, "{took:?}");
}

#[test]
fn stale_socket() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("docker.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let (Run { code, stderr, .. }, took) = against(&format!("unix://{}", path.display()))
        .args(["ps"])
        .run_timed();
    assert_eq!(code, 1);
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(stderr.contains("nothing listens"), "{stderr}");
    assert!(took < LIMIT, "{took:?}");
}

#[test]
fn closed_tcp_port() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (Run { code, stderr, .. }, took) = against(&format!("tcp://127.0.0.1:{port}"))
        .args(["ps"])
        .run_timed();
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("tcp://127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(took < LIMIT, "{took:?}");
}

#[test]
fn hung_daemon() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (Run { code, stderr, .. }, took) =
        against(&format!("tcp://{}", listener.local_addr().unwrap()))
            .args(["ps"])
            .run_timed();
    assert_eq!(code, 1);
    assert!(stderr.contains("did not answer within 3 s"), "{stderr}");
    assert!(took < LIMIT + Duration::from_secs(1), "{took:?}");
}

#[test]
fn socket_without_permission() {
    if !require_daemon() {
        return;
    }
    let socket = "/var/run/docker.sock";
    if !Path::new(socket).exists()
        || docker_stdout(["info", "--format", "{{.SecurityOptions}}"]).contains("rootless")
    {
        panic!("this test needs the system socket {socket} (owned by root, mode 660)");
    }
    // `nobody` is in no `docker` group: exactly the user who forgot `usermod -aG docker`.
    let (_copy_folder, binary) = crate::support::cli::envctl_for_other_users();
    let output = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&binary)
        .arg("ps")
        .env("NO_COLOR", "1")
        .env("DOCKER_HOST", format!("unix://{socket}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("permission denied on the socket"),
        "{stderr}"
    );
    assert!(stderr.contains("usermod -aG docker"), "{stderr}");
    assert_eq!(
        stderr.matches("client error (Connect)").count(),
        1,
        "causes are said once: {stderr}"
    );
}

#[test]
fn containers_get_no_privilege_the_profile_did_not_ask_for() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("privilege");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join(format!("envctl/{profile}.toml")),
        format!("image = \"{}\"\nmemory = \"64m\"\n", test_image()),
    )
    .unwrap();
    let name = format!("envctl-{profile}");
    let _guard = ContainerGuard::new(name.as_str());
    let up = Envctl::in_folder(folder.path())
        .args(["up", &profile])
        .run();
    assert!(up.success(), "{}", up.stderr);
    let inspect = docker_stdout([
        "inspect",
        "--format",
        "{{.HostConfig.Privileged}}|{{.HostConfig.CapAdd}}|{{.HostConfig.SecurityOpt}}|{{.HostConfig.PidMode}}|{{.HostConfig.NetworkMode}}|{{.HostConfig.Devices}}|{{len .HostConfig.PortBindings}}",
        &name,
    ]);
    assert_eq!(
        inspect.trim(),
        "false|[]|[]||default|[]|0",
        "no privilege, capability, host namespace, device or port beyond the profile"
    );
}

#[test]
fn a_full_disk_leaves_the_previous_lock_file_intact() {
    let Some(disk) = FullDisk::new() else { return };
    let path = disk.path().join("envctl.lock");
    let previous = "version = 1\n";
    std::fs::write(&path, previous).unwrap();
    disk.fill();
    let bigger = format!("version = 1\n# {}\n", "x".repeat(256 * 1024));
    let error = envctl::lock::file::write_atomically(&path, &bigger).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::StorageFull, "{error}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        previous,
        "the old lock file is intact"
    );
    let leftovers: Vec<_> = std::fs::read_dir(disk.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left behind");
}

#[test]
fn a_full_disk_stops_stats_recording_with_a_clear_error_and_keeps_earlier_lines() {
    if !require_daemon() {
        return;
    }
    let Some(disk) = FullDisk::new() else { return };
    let record = disk.path().join("samples.jsonl");
    // An earlier sample, as `--record` writes it (one compact JSON line), padded with
    // blanks to exactly one page: the next line needs a new block, which a full disk does
    // not have.
    let once = Envctl::shared()
        .args(["stats", "--all", "--once", "--json"])
        .timeout(Duration::from_secs(30))
        .run();
    assert!(once.success(), "{once}");
    let mut sample: serde_json::Value = once.json();
    // Other tests' containers come and go: keep the sample's shape, not their rows.
    for list in ["containers", "gpus", "diagnoses", "failures"] {
        sample[list] = serde_json::json!([]);
    }
    let compact = sample.to_string();
    let body = compact.strip_suffix('}').unwrap();
    assert!(
        compact.len() < 4000,
        "one sample fits a page: {}",
        compact.len()
    );
    let earlier = format!("{body}{}}}\n", " ".repeat(4096 - compact.len() - 1));
    assert_eq!(earlier.len(), 4096);
    std::fs::write(&record, &earlier).unwrap();
    disk.fill();
    let run = Envctl::shared()
        .args([
            "stats",
            "--all",
            "--count",
            "2",
            "--interval",
            "100ms",
            "--json",
            "--record",
        ])
        .arg(&record)
        .timeout(Duration::from_secs(30))
        .run();
    let stderr = &run.stderr;
    assert_eq!(
        run.code, 1,
        "a recording that cannot be written is an error (the request cannot be met): {stderr}"
    );
    assert!(stderr.contains("samples.jsonl"), "names the file: {stderr}");
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(
        text.starts_with(&earlier),
        "earlier lines are intact: {text:?}"
    );
}

#[test]
fn serving_metrics_on_a_taken_address_names_it_and_exits_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let started = Instant::now();
    let run = Envctl::shared()
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .args(["stats", "--serve", &address])
        .timeout(Duration::from_secs(20))
        .run();
    let stderr = &run.stderr;
    assert_eq!(run.code, 1, "{stderr}");
    assert!(started.elapsed() < LIMIT, "took {:?}", started.elapsed());
    assert!(
        stderr.contains(&format!("cannot serve metrics on `{address}`")),
        "{stderr}"
    );
    assert!(stderr.contains("caused by:"), "{stderr}");
    assert!(stderr.contains("--serve HOST:PORT"), "{stderr}");
    assert!(run.stdout.is_empty(), "no data on stdout");
}
