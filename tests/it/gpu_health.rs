//! Issue 43: doctor's GPU health through the stand-in NVML (`ENVCTL_NVML_LIBRARY`) and the
//! real nvml-wrapper calls: each GPU's state and what to do, a lost GPU that no longer
//! reads `free`, persistence mode off on a data-center host, and a profile that asks for
//! every GPU (or names a failed one) failing with the fix.

// Helpers outside #[test] functions may unwrap: a failure here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

use crate::support::cli::Envctl;
use crate::support::nvml::{fixture, stub_library};

/// `envctl doctor --json ARGUMENTS…` in `directory` with this stand-in fixture: the report
/// and the exit code.
fn doctor(directory: &Path, nvml_fixture: &str, arguments: &[&str]) -> (Value, i32, String) {
    let mut command = Envctl::shared().command();
    crate::support::cli::hermetic(&mut command, directory);
    command
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", fixture(nvml_fixture))
        .args(["--color", "never", "doctor"])
        .args(arguments);
    let output = command.output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let code = output.status.code().unwrap();
    let report = if arguments.contains(&"--json") {
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}:\n{stdout}\n{stderr}"))
    } else {
        Value::Null
    };
    (report, code, stdout + &stderr)
}

fn with_id<'a>(findings: &'a Value, id: &str) -> Vec<&'a Value> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == id)
        .collect()
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn write_profile(directory: &Path, name: &str, gpus: &str) -> String {
    let path = directory.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "image = \"python:3.12-slim\"\ngpus = {gpus}\nuser = \"1000:1000\"\nmemory = \"4g\"\nmounts = [\"./:/work\"]\n"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn health_each_faulty_gpu_is_named_with_its_state_and_fix() {
    let directory = tempfile::tempdir().unwrap();
    let (report, _code, _) = doctor(directory.path(), "gpu-health-faults.conf", &["--json"]);
    let findings = &report["findings"];
    let health = with_id(findings, "gpu.health");
    let by_start = |start: &str| {
        health
            .iter()
            .find(|finding| text(&finding["message"]).starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in {health:#?}"))
    };
    let remap = by_start("GPU 1 ");
    assert_eq!(remap["status"], "warn");
    assert_eq!(remap["facts"]["state"], "fatal");
    assert!(
        text(&remap["message"]).contains("row remap is pending"),
        "{remap:#}"
    );
    assert!(
        text(&remap["hint"]).contains("nvidia-smi -r -i 1"),
        "{remap:#}"
    );

    let lost = by_start("GPU 2 ");
    assert_eq!(lost["facts"]["state"], "lost");
    assert!(text(&lost["hint"]).contains("dmesg"), "{lost:#}");

    let retired = by_start("GPU 3 ");
    assert_eq!(retired["facts"]["state"], "fatal");
    assert!(
        text(&retired["message"]).contains("double-bit"),
        "{retired:#}"
    );
    // The V100 reports no row remapping: unknown in the facts, not zero rows.
    assert_eq!(
        retired["facts"]["health"]["remapped_rows"]["error"]["kind"], "not_supported",
        "{retired:#}"
    );

    let sound = by_start("GPU 0: healthy");
    assert_eq!(sound["status"], "pass");

    // GPU 0 runs without persistence mode on a data-center host: a warning with the fix.
    let persistence = with_id(findings, "gpu.persistence");
    assert_eq!(persistence.len(), 1, "{findings:#}");
    assert_eq!(persistence[0]["status"], "warn");
    assert!(text(&persistence[0]["message"]).contains("GPU 0"));
    assert!(text(&persistence[0]["hint"]).contains("nvidia-persistenced"));
}

#[test]
fn health_a_lost_gpu_no_longer_reads_free() {
    let directory = tempfile::tempdir().unwrap();
    let (report, _code, _) = doctor(directory.path(), "gpu-lost.conf", &["--json"]);
    let findings = &report["findings"];
    let lost: Vec<&Value> = with_id(findings, "gpu.health")
        .into_iter()
        .filter(|finding| finding["facts"]["state"] == "lost")
        .collect();
    assert_eq!(lost.len(), 1, "{findings:#}");
    assert!(
        text(&lost[0]["message"]).starts_with("GPU 1: lost"),
        "{lost:#?}"
    );
    // The occupancy table, where the daemon answers: GPU 1 is not free.
    if let Some(rows) = report["occupancy"]["gpus"].as_array() {
        let row = rows.iter().find(|row| row["index"] == 1).unwrap();
        assert_eq!(row["free"], false, "{row:#}");
        assert!(text(&row["busy"]).starts_with("lost"), "{row:#}");
    }
    let (_, _, human) = doctor(directory.path(), "gpu-lost.conf", &[]);
    assert!(!human.contains("GPU 1: free"), "{human}");
    assert!(human.contains("GPU 1: lost"), "{human}");
}

#[test]
fn health_all_gpus_on_a_host_with_a_lost_gpu_fails_with_the_fix_a_count_does_not() {
    let directory = tempfile::tempdir().unwrap();
    let all = write_profile(directory.path(), "all", "\"all\"");
    let (report, code, _) = doctor(directory.path(), "gpu-lost.conf", &["--json", &all]);
    assert_eq!(code, 1, "{report:#}");
    let profile = &report["profiles"][0];
    let failed = with_id(&profile["findings"], "profile.gpu-health");
    assert_eq!(failed.len(), 1, "{profile:#}");
    assert_eq!(failed[0]["status"], "fail");
    assert!(
        text(&failed[0]["message"]).contains("GPU 1 is lost"),
        "{failed:#?}"
    );
    assert!(
        text(&failed[0]["hint"]).contains("nvidia-smi -r -i 1"),
        "{failed:#?}"
    );
    assert_eq!(profile["verdict"], "fail");

    let named = write_profile(directory.path(), "named", "[\"1\"]");
    let (report, _, _) = doctor(directory.path(), "gpu-lost.conf", &["--json", &named]);
    assert_eq!(
        with_id(&report["profiles"][0]["findings"], "profile.gpu-health").len(),
        1,
        "{report:#}"
    );

    let count = write_profile(directory.path(), "count", "1");
    let (report, _, _) = doctor(directory.path(), "gpu-lost.conf", &["--json", &count]);
    assert!(
        with_id(&report["profiles"][0]["findings"], "profile.gpu-health").is_empty(),
        "{report:#}"
    );
}

/// The old fixtures report no health fact: doctor says nothing about health rather than
/// call an unread GPU healthy.
#[test]
fn health_nothing_read_nothing_said() {
    let directory = tempfile::tempdir().unwrap();
    let (report, _code, _) = doctor(directory.path(), "healthy-8x-h100.conf", &["--json"]);
    assert!(
        with_id(&report["findings"], "gpu.health").is_empty(),
        "{report:#}"
    );
    assert!(with_id(&report["findings"], "gpu.persistence").is_empty());
}

/// `GET path` over plain HTTP/1.0; the body.
fn http_get(address: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{head}");
    body.to_string()
}

/// promtool's verdict on `text`, leaving out the one complaint envctl makes on purpose
/// (dcgm-exporter's camelCase `modelName` label); skipped through the skip helper where
/// promtool is not installed.
fn promtool_complaints(text: &str) -> Option<Vec<String>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            crate::support::docker::skip_or_panic(
                "no promtool: the health series are checked without it",
                &crate::support::docker::current_test_name(),
                "`promtool` is not installed.\nFix: `sudo apt-get install prometheus`.",
            );
            return None;
        }
        Err(error) => panic!("cannot run promtool: {error}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        said.lines()
            .filter(|line| {
                !line.trim().is_empty()
                    && !line
                        .ends_with("label names should be written in 'snake_case' not 'camelCase'")
            })
            .map(str::to_string)
            .collect(),
    )
}

/// `stats --serve` exposes each GPU's health and its ECC, retired-page and remapped-row
/// counters, read through the stand-in NVML at every sample; promtool accepts them.
#[test]
fn health_prometheus_shows_each_gpus_state_and_counters() {
    use std::io::BufRead;
    let directory = tempfile::tempdir().unwrap();
    let mut command = Envctl::shared().command();
    crate::support::cli::hermetic(&mut command, directory.path());
    let mut child = command
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            fixture("gpu-health-faults.conf"),
        )
        .args(["stats", "--interval", "0.3", "--serve", "127.0.0.1:0"])
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
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let body = loop {
        let body = http_get(&address, "/metrics");
        if body.contains("envctl_gpu_health") || std::time::Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();

    let series = |prefix: &str| -> Vec<&str> {
        body.lines()
            .filter(|line| line.starts_with(prefix))
            .collect()
    };
    let health = series("envctl_gpu_health{");
    assert_eq!(health.len(), 4, "{body}");
    let of = |gpu: &str| {
        *health
            .iter()
            .find(|line| line.contains(&format!("gpu=\"{gpu}\"")))
            .unwrap_or_else(|| panic!("no GPU {gpu}: {body}"))
    };
    assert!(
        of("0").contains("state=\"ok\"") && of("0").ends_with(" 0"),
        "{}",
        of("0")
    );
    assert!(
        of("1").contains("state=\"fatal\"") && of("1").ends_with(" 2"),
        "{}",
        of("1")
    );
    assert!(
        of("2").contains("state=\"lost\"") && of("2").ends_with(" 2"),
        "{}",
        of("2")
    );
    assert!(of("3").contains("state=\"fatal\""), "{}", of("3"));
    assert!(
        body.contains("# TYPE envctl_gpu_ecc_errors_total counter"),
        "{body}"
    );
    assert!(
        series("envctl_gpu_ecc_errors_total{gpu=\"0\"")
            .iter()
            .any(
                |line| line.contains("counter=\"aggregate\",error=\"corrected\"")
                    && line.ends_with(" 12")
            ),
        "{body}"
    );
    // The V100 has no row remapping: no remapped-row series, not a 0.
    assert!(
        series("envctl_gpu_remapped_rows{gpu=\"3\"").is_empty(),
        "{body}"
    );
    assert!(
        series("envctl_gpu_row_remap_pending{gpu=\"1\"")
            .iter()
            .any(|line| line.ends_with(" 1")),
        "{body}"
    );
    // The lost GPU is also a diagnosis, as `stats` and the dashboard show it.
    assert!(
        series("envctl_diagnosis{id=\"gpu-unhealthy\",subject=\"gpu 2\",severity=\"warning\"")
            .len()
            == 1,
        "{body}"
    );
    if let Some(complaints) = promtool_complaints(&body) {
        assert!(complaints.is_empty(), "promtool: {complaints:?}\n{body}");
    }
}

/// `envctl stats --interval 0.5 --serve` over the stand-in NVML with the faulty fixture,
/// whose Xid events the test appends (`ENVCTL_NVML_STUB_EVENTS`), under the host policy
/// `policy` (none: NVIDIA's fatal list). Stopped when dropped.
struct ServedStats {
    child: std::process::Child,
    address: String,
    events: std::path::PathBuf,
}

impl ServedStats {
    fn start(directory: &Path, policy: Option<&str>) -> ServedStats {
        use std::io::BufRead;
        let events = directory.join("xid-events");
        std::fs::write(&events, "").unwrap();
        let mut command = Envctl::shared().command();
        crate::support::cli::hermetic(&mut command, directory);
        if let Some(policy) = policy {
            let path = directory.join("policy.toml");
            std::fs::write(&path, policy).unwrap();
            command.env("ENVCTL_POLICY", path);
        }
        let mut child = command
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env(
                "ENVCTL_NVML_STUB_FIXTURE",
                fixture("gpu-health-faults.conf"),
            )
            .env("ENVCTL_NVML_STUB_EVENTS", &events)
            // The watcher records a fatal Xid beside the placement lock: in this test's
            // folder, never the host's `/run/lock`, where it would keep a GPU out of
            // others' `up`s.
            .env("ENVCTL_GPU_LOCK", directory.join("gpus.lock"))
            .args(["stats", "--interval", "0.5", "--serve", "127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let Some(address) = line
            .trim()
            .strip_prefix("serving Prometheus metrics at http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("first line: {line}");
        };
        ServedStats {
            address: address.to_string(),
            child,
            events,
        }
    }

    /// Polls the exposition until `found` holds, or 10 s pass; the body and the wait.
    fn wait_for(&self, found: &dyn Fn(&str) -> bool) -> (String, std::time::Duration) {
        let started = std::time::Instant::now();
        loop {
            let body = http_get(&self.address, "/metrics");
            if found(&body) || started.elapsed() > std::time::Duration::from_secs(10) {
                return (body, started.elapsed());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Sends the stand-in's next event: `GPU:XID`.
    fn inject(&self, event: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.events)
            .unwrap();
        writeln!(file, "{event}").unwrap();
    }
}

impl Drop for ServedStats {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// GPU 0's line of `metric` in the exposition `body`.
fn gpu0(body: &str, metric: &str) -> Option<String> {
    body.lines()
        .find(|line| line.starts_with(metric) && line.contains("gpu=\"0\""))
        .map(str::to_string)
}

/// Whether GPU 0's `envctl_gpu_health` line says `state`.
fn gpu0_is(body: &str, state: &str) -> bool {
    gpu0(body, "envctl_gpu_health{")
        .is_some_and(|line| line.contains(&format!("state=\"{state}\"")))
}

/// Fault injection through NVML's event set: an application Xid (43) arriving mid-run is
/// counted but does not mark the GPU; a fatal one (79) marks it fatal in the Prometheus
/// exposition and as a diagnosis within 2 s (the bound; dcgm-exporter's default
/// interval is 30 s). The measured delay is printed.
#[test]
fn health_an_xid_mid_run_is_counted_and_only_a_fatal_one_marks_the_gpu() {
    use std::io::Write;
    use std::time::Duration;
    let directory = tempfile::tempdir().unwrap();
    let stats = ServedStats::start(directory.path(), None);
    let (body, _) = stats.wait_for(&|body| gpu0(body, "envctl_gpu_health{").is_some());
    assert!(gpu0_is(&body, "ok"), "{body}");

    stats.inject("0:43");
    let (body, _) = stats.wait_for(&|body| {
        body.lines().any(|line| {
            line.starts_with("envctl_gpu_xid_errors_total{gpu=\"0\"") && line.contains("xid=\"43\"")
        })
    });
    assert!(
        body.lines().any(
            |line| line.starts_with("envctl_gpu_xid_errors_total{gpu=\"0\"")
                && line.contains("xid=\"43\"")
                && line.ends_with(" 1")
        ),
        "{body}"
    );
    assert!(
        gpu0_is(&body, "ok"),
        "an application Xid does not mark the GPU: {body}"
    );

    stats.inject("0:79");
    let (body, delay) = stats.wait_for(&|body| gpu0_is(body, "fatal"));
    drop(stats);
    assert!(gpu0_is(&body, "fatal"), "{body}");
    assert!(
        body.contains("envctl_diagnosis{id=\"gpu-unhealthy\",subject=\"gpu 0\""),
        "{body}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "\n*** Xid 79 → envctl_gpu_health fatal in {} ms (stats --interval 0.5)",
        delay.as_millis()
    );
    assert!(delay < Duration::from_secs(2), "took {delay:?}");
}

/// The dashboard and the metrics judge Xids by the host policy's `gpus.fatal_xids`, as
/// placement does: a site that counts Xid 43 (NVIDIA: an application's fault) as fatal
/// sees the GPU fatal, with its diagnosis; an Xid NVIDIA calls fatal that the policy
/// leaves out (79) no longer marks one.
#[test]
fn health_the_policys_fatal_xids_judge_the_served_metrics() {
    let directory = tempfile::tempdir().unwrap();
    let stats = ServedStats::start(directory.path(), Some("[gpus]\nfatal_xids = [43]\n"));
    let (body, _) = stats.wait_for(&|body| gpu0(body, "envctl_gpu_health{").is_some());
    assert!(gpu0_is(&body, "ok"), "{body}");

    stats.inject("0:79");
    let (body, _) = stats.wait_for(&|body| {
        body.lines().any(|line| {
            line.starts_with("envctl_gpu_xid_errors_total{gpu=\"0\"") && line.contains("xid=\"79\"")
        })
    });
    assert!(
        body.lines().any(
            |line| line.starts_with("envctl_gpu_xid_errors_total{gpu=\"0\"")
                && line.contains("xid=\"79\"")
                && line.ends_with(" 1")
        ),
        "{body}"
    );
    assert!(
        gpu0_is(&body, "ok"),
        "Xid 79 is not fatal under this policy: {body}"
    );

    stats.inject("0:43");
    let (body, _) = stats.wait_for(&|body| gpu0_is(body, "fatal"));
    assert!(
        gpu0_is(&body, "fatal"),
        "Xid 43 is fatal by the policy: {body}"
    );
    assert!(
        body.contains("envctl_diagnosis{id=\"gpu-unhealthy\",subject=\"gpu 0\""),
        "{body}"
    );
}
