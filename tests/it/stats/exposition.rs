//! The Prometheus exposition: it parses and uses DCGM's names, and `stats --serve` answers
//! scrapes.

use super::*;

#[test]
fn the_exposition_parses_and_uses_dcgm_names() {
    let snapshot: Snapshot = serde_json::from_str(&read_fixture("snapshot-two-gpus.json")).unwrap();
    let text = envctl::monitor::prometheus::exposition(&snapshot, Some("node-1"), "node-1");
    let samples = check_exposition(&text);
    check_with_promtool(&text);
    let find = |name: &str, label: (&str, &str)| {
        samples
            .iter()
            .find(|(family, labels, _)| {
                family == name
                    && labels
                        .iter()
                        .any(|(key, value)| key == label.0 && value == label.1)
            })
            .map(|(_, labels, value)| (labels.clone(), *value))
            .unwrap_or_else(|| panic!("no {name} with {label:?} in\n{text}"))
    };
    let (labels, used) = find("DCGM_FI_DEV_FB_USED", ("gpu", "0"));
    assert_eq!(used, 16384.0, "MiB, as dcgm-exporter");
    for label in [
        "UUID",
        "device",
        "modelName",
        "Hostname",
        "container",
        "profile",
    ] {
        assert!(
            labels.iter().any(|(key, _)| key == label),
            "{label} in {labels:?}"
        );
    }
    // GPU 1 has a process outside any container: no single owner, no container label.
    let (labels, mask) = find("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", ("gpu", "1"));
    assert_eq!(mask, 68.0);
    assert!(
        !labels.iter().any(|(key, _)| key == "container"),
        "{labels:?}"
    );
    let (_, cpu) = find(
        "envctl_container_cpu_percent",
        ("container", "envctl-pytorch-2.8"),
    );
    assert_eq!(cpu, 395.25);
    let (labels, _) = find(
        "envctl_container_memory_bytes",
        ("container", "notebook \"scratch\""),
    );
    assert!(labels.contains(&("profile".to_string(), String::new())));
    // The host labels every series, the containers' as the GPUs' (one Prometheus, several
    // envctl servers).
    assert!(labels.contains(&("Hostname".to_string(), "node-1".to_string())));
    let (labels, _) = find("envctl_diagnosis", ("id", "gpu-thermal-throttle"));
    assert!(labels.contains(&("Hostname".to_string(), "node-1".to_string())));
    insta::assert_snapshot!("prometheus_exposition", text);
}

/// `GET path` on `address`; the body.
fn http_get(address: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_string()
}

#[test]
fn serve_answers_prometheus_scrapes() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-serve");
    let name = fleet.start(&[], &["sleep", "600"]);
    let mut child = envctl()
        .command()
        .args([
            "stats",
            "--interval",
            "0.3",
            "--serve",
            "127.0.0.1:0",
            &name,
        ])
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/healthy-8x-h100.conf"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let body = http_get(&address, "/metrics");
        if body.contains("envctl_container_memory_bytes") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let samples = check_exposition(&body);
    check_with_promtool(&body);
    assert!(
        samples.iter().any(
            |(family, labels, _)| family == "envctl_container_memory_bytes"
                && labels.contains(&("container".to_string(), name.clone()))
                && labels.contains(&("profile".to_string(), fleet.profile.clone()))
        ),
        "{body}"
    );
    assert_eq!(
        samples
            .iter()
            .filter(|(family, _, _)| family == "DCGM_FI_DEV_GPU_TEMP")
            .count(),
        8,
        "eight GPUs in the fixture: {body}"
    );
    // SIGTERM: a clean exit with the code a shell reports for it.
    let killed = StdCommand::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(
        stdout.is_empty(),
        "--serve off a terminal prints no tables: {stdout}"
    );
}
