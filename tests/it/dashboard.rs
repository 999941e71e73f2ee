//! The dashboard of `stats --serve` in a real browser: headless Chromium (Debian's
//! `chromium`) loads `/` while two containers run (one CPU-bound and holding GPU memory on
//! a stand-in GPU, one whose memory grows), lets the page poll for two intervals, and the
//! test reads the DOM it built: a chart per container and per GPU, values equal to the
//! history's at the sequence the page shows, the diagnosis that fires. Chromium's network
//! log shows that the page asked nothing of anyone but envctl; a screenshot is kept in
//! `$CARGO_TARGET_TMPDIR/dashboard.png`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::Envctl;
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, run_with_timeout, skip_or_panic, test_image,
};

/// The interval envctl samples at here: the page polls at the same pace.
const INTERVAL_SECONDS: f64 = 0.5;

/// The envctl under test, killed when the test ends.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Chromium's binary, or none (a skip, or a failure under `ENVCTL_REQUIRE_DOCKER=1`).
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"]
        .iter()
        .find_map(|name| which(name));
    if found.is_none() {
        skip_or_panic(
            "no chromium",
            &crate::support::docker::current_test_name(),
            "headless Chromium is not on PATH: `sudo apt-get install chromium` (Debian's package; .ci/run installs it)",
        );
    }
    found
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|folder| folder.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// `GET path` on a connection of its own; the body of a 200.
fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{path}: {head}");
    body.to_string()
}

/// The value of `name="…"` in an element's opening tag.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// Every opening tag `<tag …>` in `html`, as text.
fn tags<'a>(html: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag} ");
    html.match_indices(&open)
        .filter_map(|(start, _)| {
            let end = html[start..].find('>')? + start;
            Some(&html[start..=end])
        })
        .collect()
}

/// The DOM's sections (charts), each with its HTML up to the next one.
fn sections(dom: &str) -> Vec<(&str, &str)> {
    let starts: Vec<usize> = dom.match_indices("<section ").map(|(at, _)| at).collect();
    starts
        .iter()
        .enumerate()
        .map(|(position, start)| {
            let end = starts.get(position + 1).copied().unwrap_or(dom.len());
            let head_end = dom[*start..].find('>').unwrap() + start;
            (&dom[*start..=head_end], &dom[*start..end])
        })
        .collect()
}

/// The `data-value` of each `<dd data-metric=…>` in a section.
fn shown_values(section: &str) -> Vec<(String, String)> {
    tags(section, "dd")
        .into_iter()
        .filter_map(|tag| {
            Some((
                attribute(tag, "data-metric")?.to_string(),
                attribute(tag, "data-value")?.to_string(),
            ))
        })
        .collect()
}

/// The same number, as the browser and the API print it: serde_json's reader (without
/// `float_roundtrip`) may land one unit in the last place away from the shortest digits.
fn same(shown: f64, expected: f64) -> bool {
    (shown - expected).abs() <= expected.abs() * 1e-12
}

/// Headless Chromium on `url` with its own profile folder, for `budget` ms of the page's
/// virtual time, and `extra` arguments (`--dump-dom`, `--screenshot=…`); its stdout.
fn browse(chromium: &Path, profile: &Path, url: &str, budget: u64, extra: &[String]) -> String {
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            // Names resolve to nothing but loopback: a page reaching out would fail,
            // and its attempt would still be in the log.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--window-size=1400,1150",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={budget}"))
        .args(extra)
        .arg(url);
    let output = run_with_timeout(&mut command, Duration::from_secs(90))
        .unwrap_or_else(|error| panic!("chromium: {error}"));
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `envctl stats --serve 127.0.0.1:0 …` with `environment`: the address it serves, and
/// its second line (where the dashboard is).
fn serve(
    arguments: &[&str],
    environment: &[(&str, &std::ffi::OsStr)],
) -> (Serving, String, String) {
    let mut command = Envctl::shared().command();
    command
        .args(["stats", "--serve", "127.0.0.1:0"])
        .args(arguments)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in environment {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_string();
    line.clear();
    stderr.read_line(&mut line).unwrap();
    // The rest of stderr is drained, so that envctl never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Serving(child), address, line.trim().to_string())
}

/// Waits up to `limit` for the history to satisfy `accept`; the history.
fn wait_history(
    address: &str,
    limit: Duration,
    what: &str,
    accept: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let history: Value = serde_json::from_str(&get(address, "/api/v1/history")).unwrap();
        if accept(&history) {
            return history;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within {limit:?}: {history}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn newest_lost(history: &Value) -> Option<bool> {
    history["daemon_lost"].as_array()?.last()?.as_bool()
}

#[test]
fn the_dashboard_marks_a_lost_daemon_as_a_gap_and_resumes_when_it_returns() {
    if !require_daemon() {
        return;
    }
    let Some(chromium) = chromium() else {
        return;
    };
    let image = test_image();
    let busy = ContainerGuard::unique("envctl-dash-lost");
    docker_stdout([
        "run",
        "-d",
        "--name",
        busy.name(),
        "--label",
        "envctl.test=1",
        "--label",
        "envctl.profile=dash-lost",
        &image,
        "sh",
        "-c",
        "while :; do :; done",
    ]);
    let folder = tempfile::TempDir::new().unwrap();
    let socket = folder.path().join("docker.sock");
    let mut proxy = crate::daemon_loss::Proxy::start(&socket);
    let host = std::ffi::OsString::from(format!("unix://{}", socket.display()));
    let (_serving, address, _) = serve(
        &["--interval", "0.3", "--window", "30s", busy.name()],
        &[
            ("DOCKER_HOST", host.as_os_str()),
            ("ENVCTL_NVML_LIBRARY", std::ffi::OsStr::new("/nonexistent")),
        ],
    );
    let url = format!("http://{address}/");
    let page = |profile: &str| {
        browse(
            &chromium,
            &folder.path().join(profile),
            &url,
            1000,
            &["--dump-dom".to_string()],
        )
    };
    wait_history(
        &address,
        Duration::from_secs(20),
        "five points",
        |history| {
            history["times"]
                .as_array()
                .is_some_and(|times| times.len() >= 5)
        },
    );
    proxy.stop();
    wait_history(
        &address,
        Duration::from_secs(30),
        "the daemon seen lost",
        |history| newest_lost(history) == Some(true),
    );
    let lost = page("profile-lost");
    let status = tags(&lost, "span")
        .into_iter()
        .find(|tag| attribute(tag, "id") == Some("status"))
        .unwrap();
    assert_eq!(attribute(status, "class"), Some("lost"), "{lost}");
    assert!(lost.contains("Docker daemon lost since"), "{lost}");
    assert!(
        lost.contains("<rect class=\"lost\""),
        "the stretch is shaded: {lost}"
    );
    let _back = crate::daemon_loss::Proxy::start(&socket);
    wait_history(
        &address,
        Duration::from_secs(30),
        "the daemon back",
        |history| newest_lost(history) == Some(false),
    );
    let resumed = page("profile-back");
    let status = tags(&resumed, "span")
        .into_iter()
        .find(|tag| attribute(tag, "id") == Some("status"))
        .unwrap();
    assert_ne!(attribute(status, "class"), Some("lost"), "{resumed}");
    assert!(resumed.contains("live, every 0.3 s"), "{resumed}");
    // The gap stays marked in the window, and the container's chart goes on.
    assert!(resumed.contains("<rect class=\"lost\""), "{resumed}");
    let (_, chart) = sections(&resumed)
        .into_iter()
        .find(|(head, _)| attribute(head, "data-name") == Some(busy.name()))
        .unwrap_or_else(|| panic!("no chart for {} in\n{resumed}", busy.name()));
    let cpu = shown_values(chart)
        .into_iter()
        .find(|(metric, _)| metric == "cpu_percent")
        .unwrap();
    assert!(
        !cpu.1.is_empty(),
        "CPU read again after the daemon came back"
    );
}

fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

#[test]
fn the_dashboard_draws_each_container_and_gpu_from_the_api_in_a_real_browser() {
    if !require_daemon() {
        return;
    }
    let Some(chromium) = chromium() else {
        return;
    };
    let (busy, growing, busy_pid) = start_a_busy_and_a_growing_container();
    // Two stand-in GPUs: GPU 0 holds the busy container's process (8 GiB), GPU 1 is
    // nearly full of a host process, which `gpu-memory-near-full` names at once.
    let folder = tempfile::TempDir::new().unwrap();
    let fixture = write_two_gpus(folder.path(), &busy_pid);
    let interval = INTERVAL_SECONDS.to_string();
    let stub = crate::support::nvml::stub_library();
    let (_serving, address, said) = serve(
        &[
            "--interval",
            &interval,
            "--window",
            "15s",
            busy.name(),
            growing.name(),
        ],
        &[
            ("ENVCTL_NVML_LIBRARY", stub.as_os_str()),
            ("ENVCTL_NVML_STUB_FIXTURE", fixture.as_os_str()),
        ],
    );
    assert_eq!(
        said,
        format!("dashboard at http://{address}/ (the last 15 s)")
    );

    // Some seconds of both containers before the browser comes, for curves to see.
    wait_for_history_of_both_containers(&address);

    let url = format!("http://{address}/");
    let net_log = folder.path().join("net-log.json");
    // Two intervals of the page's own polling (Chromium's virtual time runs its timers,
    // and waits for each request to be answered).
    let budget = ((2.0 * INTERVAL_SECONDS + 0.5) * 1000.0) as u64;
    let browse = |extra: &[String], profile: &str| {
        browse(&chromium, &folder.path().join(profile), &url, budget, extra)
    };
    // When the page opens: the problems below began before it.
    let opened = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let dom = browse(
        &[
            "--dump-dom".to_string(),
            format!("--log-net-log={}", net_log.display()),
        ],
        "profile-dom",
    );

    let (history, at) = the_page_shows_the_history_up_to_its_sequence(&dom, &address);
    let charts = sections(&dom);
    each_containers_chart_shows_the_apis_values(&dom, &charts, &history, at, &busy, &growing);
    each_gpus_chart_shows_the_apis_values(&charts, &history, at);
    the_diagnosis_is_shown_since_the_server_first_saw_it(&dom, &address, opened);
    every_request_of_the_page_went_to_envctl(&net_log, &url);

    // The screenshot, kept for people (and the README).
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let _ = std::fs::remove_file(&screenshot);
    browse(
        &[format!("--screenshot={}", screenshot.display())],
        "profile-screenshot",
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{}",
        png.len()
    );
}

/// A container spinning on two CPUs and one whose memory grows, each with its profile
/// label: their guards and the busy one's process id.
fn start_a_busy_and_a_growing_container() -> (ContainerGuard, ContainerGuard, String) {
    let image = test_image();
    let busy = ContainerGuard::unique("envctl-dash-cpu");
    let growing = ContainerGuard::unique("envctl-dash-mem");
    docker_stdout([
        "run",
        "-d",
        "--name",
        busy.name(),
        "--label",
        "envctl.test=1",
        "--label",
        "envctl.profile=dash-train",
        "--cpus",
        "2",
        &image,
        "sh",
        "-c",
        "while :; do :; done",
    ]);
    // A 64 KiB string doubled every three seconds: some megabytes in the test's time, far
    // under its limit.
    docker_stdout([
        "run",
        "-d",
        "--name",
        growing.name(),
        "--label",
        "envctl.test=1",
        "--label",
        "envctl.profile=dash-leak",
        "--memory",
        "512m",
        &image,
        "sh",
        "-c",
        "x=a; i=0; while [ $i -lt 16 ]; do x=$x$x; i=$((i+1)); done; while :; do x=\"$x$x\"; sleep 3; done",
    ]);
    let busy_pid = docker_stdout(["inspect", "-f", "{{.State.Pid}}", busy.name()]);
    (busy, growing, busy_pid)
}

/// The two stand-in GPUs' fixture in `folder`: GPU 0 holds process `busy_pid` (8 GiB),
/// GPU 1 is nearly full of a host process.
fn write_two_gpus(folder: &Path, busy_pid: &str) -> PathBuf {
    let fixture = folder.join("gpus.conf");
    std::fs::write(
        &fixture,
        format!(
            "driver_version=570.124.06\nnvml_version=12.570.124.06\ncuda_driver_version=12080\ndevice_count=2\n\
             gpu.*.name=NVIDIA H100 80GB HBM3\ngpu.*.compute_capability=9.0\ngpu.*.memory_total=85520809984\n\
             gpu.*.power_limit_milliwatts=700000\ngpu.*.utilization_memory=5\n\
             gpu.0.uuid=GPU-00000000-0000-0000-0000-0000000000a0\ngpu.0.pci_bus_id=00000000:18:00.0\n\
             gpu.0.memory_used=8589934592\ngpu.0.utilization_gpu=18\ngpu.0.temperature=51\n\
             gpu.0.power_usage_milliwatts=183000\ngpu.0.processes={busy_pid}:8589934592\n\
             gpu.1.uuid=GPU-00000000-0000-0000-0000-0000000000a1\ngpu.1.pci_bus_id=00000000:2A:00.0\n\
             gpu.1.memory_used=83751862272\ngpu.1.utilization_gpu=97\ngpu.1.temperature=78\n\
             gpu.1.power_usage_milliwatts=655000\ngpu.1.processes=1:83751862272\n"
        ),
    )
    .unwrap();
    fixture
}

/// Waits (20 s at most) until the server's history has some seconds of both containers.
fn wait_for_history_of_both_containers(address: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let history: Value = serde_json::from_str(&get(address, "/api/v1/history")).unwrap();
        let points = history["times"].as_array().unwrap().len();
        let containers = history["containers"].as_array().unwrap().len();
        if points >= 12 && containers == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no history within 20 s: {history}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The page shows the history up to a sequence number the API's history has: that history
/// and the sequence's place in it.
fn the_page_shows_the_history_up_to_its_sequence(dom: &str, address: &str) -> (Value, usize) {
    let body = tags(dom, "body")[0];
    let shown: u64 = attribute(body, "data-last-sequence")
        .unwrap()
        .parse()
        .unwrap();
    assert!(shown >= 4, "the page saw no history: {body}");
    let history: Value = serde_json::from_str(&get(address, "/api/v1/history")).unwrap();
    let at = history["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .position(|sequence| sequence.as_u64() == Some(shown))
        .unwrap_or_else(|| panic!("sequence {shown} not in the history"));
    (history, at)
}

/// Each container's chart shows the API's latest CPU and memory values and draws their
/// curves; the busy one's GPU memory is mapped from NVML's processes.
fn each_containers_chart_shows_the_apis_values(
    dom: &str,
    charts: &[(&str, &str)],
    history: &Value,
    at: usize,
    busy: &ContainerGuard,
    growing: &ContainerGuard,
) {
    for (guard, profile) in [(busy, "dash-train"), (growing, "dash-leak")] {
        let series = history["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|series| series["name"] == guard.name())
            .unwrap_or_else(|| panic!("{} not in the history", guard.name()));
        assert_eq!(series["profile"], profile);
        let (_, chart) = charts
            .iter()
            .find(|(head, _)| {
                attribute(head, "data-kind") == Some("container")
                    && attribute(head, "data-name") == Some(guard.name())
            })
            .unwrap_or_else(|| panic!("no chart for {} in\n{dom}", guard.name()));
        let values = shown_values(chart);
        for metric in ["cpu_percent", "memory_bytes", "memory_limit_bytes"] {
            let (_, text) = values
                .iter()
                .find(|(name, _)| name == metric)
                .unwrap_or_else(|| panic!("{metric} not shown for {}", guard.name()));
            let expected = number(&series[metric][at]).unwrap();
            let shown: f64 = text.parse().unwrap();
            assert!(
                same(shown, expected),
                "{} {metric}: {shown} shown, {expected} in the API",
                guard.name()
            );
        }
        // A curve is drawn for CPU and memory.
        for metric in ["cpu_percent", "memory_bytes"] {
            let svg = tags(chart, "svg")
                .into_iter()
                .find(|tag| attribute(tag, "data-metric") == Some(metric))
                .unwrap_or_else(|| panic!("no {metric} plot"));
            assert!(!svg.is_empty());
            let drawn = tags(chart, "path")
                .into_iter()
                .any(|path| attribute(path, "d").is_some_and(|d| d.matches('L').count() >= 2));
            assert!(drawn, "no curve in the {metric} plot of {}", guard.name());
        }
    }
    let (_, busy_chart) = charts
        .iter()
        .find(|(head, _)| attribute(head, "data-name") == Some(busy.name()))
        .unwrap();
    assert!(
        shown_values(busy_chart).contains(&("gpu_memory_bytes".into(), "8589934592".into())),
        "the busy container's GPU memory, mapped from NVML's processes"
    );
    let memory = &history["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|series| series["name"] == growing.name())
        .unwrap()["memory_bytes"];
    assert!(number(memory.as_array().unwrap().last().unwrap()).unwrap() > 0.0);
}

/// Each GPU's chart shows the API's latest values in four plots, and there is a chart per
/// container and per GPU.
fn each_gpus_chart_shows_the_apis_values(charts: &[(&str, &str)], history: &Value, at: usize) {
    for gpu in history["gpus"].as_array().unwrap() {
        let index = gpu["index"].as_u64().unwrap().to_string();
        let (_, chart) = charts
            .iter()
            .find(|(head, _)| {
                attribute(head, "data-kind") == Some("gpu")
                    && attribute(head, "data-key") == Some(&index)
            })
            .unwrap_or_else(|| panic!("no chart for GPU {index}"));
        let values = shown_values(chart);
        for metric in [
            "utilization_percent",
            "memory_used_bytes",
            "temperature_c",
            "power_w",
        ] {
            let (_, text) = values.iter().find(|(name, _)| name == metric).unwrap();
            let (shown, expected) = (
                text.parse::<f64>().unwrap(),
                number(&gpu[metric][at]).unwrap(),
            );
            assert!(
                same(shown, expected),
                "GPU {index} {metric}: {shown} shown, {expected} in the API"
            );
        }
        assert_eq!(tags(chart, "svg").len(), 4, "four plots for GPU {index}");
    }
    assert_eq!(
        charts.len(),
        2 + history["gpus"].as_array().unwrap().len(),
        "a chart per container and per GPU"
    );
}

/// The diagnosis is on the page with its evidence, as the snapshot has it, "since" the
/// moment the server first saw it (issue 31), kept on the page as a number.
fn the_diagnosis_is_shown_since_the_server_first_saw_it(dom: &str, address: &str, opened: f64) {
    let snapshot: Value = serde_json::from_str(&get(address, "/api/v1/snapshot")).unwrap();
    let near_full = snapshot["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|diagnosis| diagnosis["id"] == "gpu-memory-near-full")
        .unwrap_or_else(|| panic!("{snapshot}"));
    let item = tags(dom, "li")
        .into_iter()
        .find(|tag| {
            attribute(tag, "data-id") == Some("gpu-memory-near-full")
                && attribute(tag, "data-subject") == Some("gpu 1")
        })
        .unwrap_or_else(|| panic!("the diagnosis is not on the page:\n{dom}"));
    assert!(item.contains("diagnosis"));
    // Issue 31: "(since …)" is when the server first saw the problem (its first
    // snapshots, seconds before this page opened), not when the page first did.
    let since = near_full["since"]
        .as_f64()
        .unwrap_or_else(|| panic!("{near_full}"));
    assert!(
        since < opened - 2.0,
        "the server saw it from its first snapshots ({since}), before the page opened ({opened})"
    );
    let seconds = since.floor() as u64 % 86_400;
    let shown_since = format!(
        "> (since {:02}:{:02}:{:02} UTC)<",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    let start = dom.find(item).unwrap();
    let whole = &dom[start..start + dom[start..].find("</li>").unwrap()];
    assert!(
        whole.contains(&shown_since),
        "{shown_since} not in the diagnosis:\n{whole}"
    );
    // The page keeps the moment as a number: the browser writes it back in its own
    // shortest form, which may differ from Rust's in the last digit of the same double.
    let on_page: f64 = attribute(whole, "data-since")
        .unwrap_or_else(|| panic!("no data-since in the diagnosis:\n{whole}"))
        .parse()
        .unwrap();
    assert!(
        (on_page - since).abs() < 1e-3,
        "the page's moment {on_page} is not the server's {since}:\n{whole}"
    );
    let fraction = near_full["evidence"]["used_fraction"].as_f64().unwrap();
    assert!(
        dom.contains(&format!("data-evidence=\"used_fraction\">{fraction}<")),
        "evidence used_fraction={fraction} not shown"
    );
}

/// Every request made for the page (its network isolation key is the page's site) went to
/// envctl; Chromium's own (updates, sign-in) are keyed otherwise.
fn every_request_of_the_page_went_to_envctl(net_log: &Path, url: &str) {
    let log: Value = serde_json::from_str(&std::fs::read_to_string(net_log).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    let mut asked = Vec::new();
    for event in log["events"].as_array().unwrap() {
        if event["type"] != start_job {
            continue;
        }
        let params = &event["params"];
        let key = params["network_isolation_key"].as_str().unwrap_or_default();
        if key.contains("127.0.0.1") {
            asked.push(params["url"].as_str().unwrap().to_string());
        }
    }
    assert!(
        asked
            .iter()
            .any(|url| url.contains("/api/v1/history?since="))
            && asked.iter().any(|url| url.ends_with("/api/v1/snapshot")),
        "{asked:#?}"
    );
    for request in &asked {
        assert!(request.starts_with(url), "the page asked {request}");
    }
}

/// The `<tr …>` rows of the team's tables: each opening tag with its text (the cells'
/// contents, tags removed).
fn team_rows(dom: &str) -> Vec<(&str, String)> {
    dom.match_indices("<tr data-host=")
        .map(|(start, _)| {
            let head_end = dom[start..].find('>').unwrap() + start;
            let end = dom[start..].find("</tr>").unwrap() + start;
            let mut text = String::new();
            let mut inside = false;
            for character in dom[head_end + 1..end].chars() {
                match character {
                    '<' => inside = true,
                    '>' => inside = false,
                    _ if !inside => text.push(character),
                    _ => {}
                }
            }
            (&dom[start..=head_end], text)
        })
        .collect()
}

/// Of the [`team_rows`] `rows`, those of `host` in `state` (`container`, `gpu`,
/// `unreachable`): each row's `data-name` (empty where it has none) and its text.
fn rows_of(rows: &[(&str, String)], host: &str, state: &str) -> Vec<(String, String)> {
    rows.iter()
        .filter(|(head, _)| {
            attribute(head, "data-host") == Some(host)
                && attribute(head, "data-state") == Some(state)
        })
        .map(|(head, text)| {
            (
                attribute(head, "data-name").unwrap_or("").to_string(),
                text.clone(),
            )
        })
        .collect()
}

/// The first page shows the team's tables: each container under its host (the local
/// daemon's never under another), the stopped endpoint a row saying why, and this
/// machine's stand-in GPUs under the local daemon.
fn the_first_page_shows_each_container_under_its_host(
    dom: &str,
    [local, tls, forwarded, stopped]: [&str; 4],
    local_name: &str,
    remote_name: &str,
) {
    assert!(
        dom.contains("<div id=\"team\">"),
        "the team's tables are shown: {dom}"
    );
    let rows = team_rows(dom);
    let row = |host: &str, state: &str| rows_of(&rows, host, state);
    assert!(
        row(local, "container")
            .iter()
            .any(|(name, _)| *name == local_name),
        "{rows:?}"
    );
    assert!(
        row(tls, "container")
            .iter()
            .any(|(name, _)| *name == remote_name),
        "{rows:?}"
    );
    assert!(
        row(forwarded, "container")
            .iter()
            .any(|(name, _)| *name == remote_name),
        "{rows:?}"
    );
    // The local daemon's container never under another host.
    assert!(
        !row(tls, "container")
            .iter()
            .any(|(name, _)| *name == local_name),
        "{rows:?}"
    );
    let refused = row(stopped, "unreachable");
    assert_eq!(refused.len(), 1, "{rows:?}");
    assert!(
        refused[0].1.contains("unreachable: nothing answers at"),
        "the row says why: {rows:?}"
    );
    // This machine's stand-in GPUs, under the local daemon.
    assert_eq!(row(local, "gpu").len(), 8, "{rows:?}");
}

/// `stats --serve --hosts` in a real browser: the local daemon, the second daemon over
/// TLS, the second daemon again through a forwarder, and a stopped endpoint. The page shows
/// the team's tables with a host on each row: each container under its host, the stopped
/// endpoint a row saying why; when the forwarder is killed, its host becomes an
/// "unreachable" row within its deadline, while the others' rows stay.
#[test]
fn the_dashboard_shows_a_team_with_a_host_on_each_row_and_one_that_goes_away() {
    let Some(engine) = crate::remote_daemons::dockerd2(
        "the_dashboard_shows_a_team_with_a_host_on_each_row_and_one_that_goes_away",
    ) else {
        return;
    };
    let Some(chromium) = chromium() else {
        return;
    };
    let profile = crate::support::docker::unique_name("board");
    let local_name = crate::support::docker::unique_name("envctl-board-local");
    let remote_name = crate::support::docker::unique_name("envctl-board-remote");
    let _local = ContainerGuard::new(local_name.clone());
    let _remote = engine.container_guard(remote_name.clone());
    docker_stdout(crate::team_view::sleeper(
        &local_name,
        &profile,
        &test_image(),
    ));
    engine.docker_stdout(crate::team_view::sleeper(
        &remote_name,
        &profile,
        &engine.test_image(),
    ));
    let mut forwarder = crate::team_view::Forwarder::start();
    let local = "unix:///var/run/docker.sock";
    let tls = crate::remote_daemons::TLS_ENDPOINT;
    let forwarded = forwarder.endpoint.clone();
    let stopped = format!("tcp://127.0.0.1:{}", crate::remote_daemons::free_port());
    let variables = crate::team_view::team_variables();
    let environment: Vec<(&str, &std::ffi::OsStr)> = variables
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_os_str()))
        .collect();
    let hosts = format!("{local},{tls},{forwarded},{stopped}");
    let (_serving, address, _) = serve(
        &["--all", "--interval", "0.5", "--hosts", &hosts],
        &environment,
    );
    let wait_team = |what: &str, accept: &dyn Fn(&Value) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let team: Value = serde_json::from_str(&get(&address, "/api/v1/snapshot")).unwrap();
            if accept(&team) {
                return team;
            }
            assert!(Instant::now() < deadline, "{what} within 30 s: {team}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let has = |team: &Value, host: &str, name: &str| {
        team["containers"].as_array().is_some_and(|rows| {
            rows.iter()
                .any(|row| row["host"] == host && row["name"] == name)
        })
    };
    wait_team("every host's containers", &|team| {
        has(team, local, &local_name)
            && has(team, tls, &remote_name)
            && has(team, forwarded.as_str(), &remote_name)
    });
    let folder = tempfile::tempdir().unwrap();
    let url = format!("http://{address}/");
    let dom = browse(
        &chromium,
        &folder.path().join("first"),
        &url,
        3000,
        &["--dump-dom".to_string()],
    );
    the_first_page_shows_each_container_under_its_host(
        &dom,
        [local, tls, &forwarded, &stopped],
        &local_name,
        &remote_name,
    );
    // The forwarded daemon goes away mid-run.
    forwarder.kill();
    let killed = Instant::now();
    wait_team("the forwarded host unreachable", &|team| {
        team["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|state| state["host"] == forwarded.as_str() && state["reachable"] == false)
    });
    let took = killed.elapsed();
    // Its deadline (2 intervals + 3 s) and the 5 s between container listings.
    assert!(took < Duration::from_secs(12), "unreachable after {took:?}");
    let dom = browse(
        &chromium,
        &folder.path().join("second"),
        &url,
        3000,
        &["--dump-dom".to_string()],
    );
    let rows = team_rows(&dom);
    let row = |host: &str, state: &str| rows_of(&rows, host, state);
    let gone = row(&forwarded, "unreachable");
    assert_eq!(gone.len(), 1, "{rows:?}");
    assert!(
        gone[0].1.starts_with(&format!("{forwarded}unreachable: ")),
        "the host, then why: {rows:?}"
    );
    assert!(row(&forwarded, "container").is_empty(), "{rows:?}");
    assert!(
        row(tls, "container")
            .iter()
            .any(|(name, _)| *name == remote_name),
        "{rows:?}"
    );
    assert!(
        row(local, "container")
            .iter()
            .any(|(name, _)| *name == local_name),
        "{rows:?}"
    );
}
