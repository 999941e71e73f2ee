//! `stats --serve` under a hostile client: one connection pipelining 20,000 requests and
//! never reading its answers must not slow anyone else's scrape, and SIGTERM still ends
//! envctl within 2 s; and the Grafana board shipped in `grafana/envctl.json` answers every
//! query from a real Prometheus server that scraped two envctl servers of two host names
//! (the second in a UTS namespace of its own) and a third serving a team
//! (`--hosts team-local,team-stopped` of a team file), each host value of its `host`
//! variable picking that host's series only, every series of the team's `/metrics` with
//! its `host` (checked by `promtool check metrics`), and the stopped host
//! `envctl_host_up 0`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::Envctl;

/// The envctl under test, killed if the test ends before it does.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `envctl stats --serve 127.0.0.1:0` against the real daemon, and the address it serves.
fn serving() -> (Serving, String) {
    let mut child = Envctl::shared()
        .command()
        .args(["stats", "--interval", "0.3", "--serve", "127.0.0.1:0"])
        .env("NO_COLOR", "1")
        // Eight stand-in GPUs: an exposition of some kilobytes, so that the answers to
        // the pipelined requests fill the socket buffers.
        .env("ENVCTL_NVML_LIBRARY", crate::support::nvml::stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/nvml/healthy-8x-h100.conf"),
        )
        .stdout(Stdio::null())
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
    // The rest of stderr is drained, so that envctl never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Serving(child), address)
}

/// One scrape of `/metrics` on a connection of its own; the answer and the time it took,
/// or a panic past 5 s.
fn scrape(address: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|error| panic!("no answer within 5 s: {error}"));
    (answer, started.elapsed())
}

/// DNS rebinding: a page served under a name that resolves to 127.0.0.1 makes the
/// browser send `Host: that-name`; envctl on loopback refuses it, and answers the same
/// request addressed to loopback.
#[test]
fn a_request_addressed_to_another_name_is_refused() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let (_serving, address) = serving();
    let ask = |host: &str| {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(
            stream,
            "GET /api/v1/snapshot HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    let rebound = ask("rebound.example:9400");
    assert!(rebound.starts_with("HTTP/1.1 421 "), "{rebound}");
    let local = ask(&address);
    assert!(local.starts_with("HTTP/1.1 200 "), "{local}");
    let named = ask("localhost");
    assert!(named.starts_with("HTTP/1.1 200 "), "{named}");
}

#[test]
fn a_pipelining_client_that_never_reads_blocks_no_scrape_and_no_exit() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let (mut serving, address) = serving();
    let child = &mut serving.0;
    // The flood starts once the exposition is there (some kilobytes an answer): before the
    // first publish the answers are empty and fit in the socket buffers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !scrape(&address).0.contains("DCGM_FI_DEV_GPU_TEMP") {
        assert!(Instant::now() < deadline, "no exposition within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The hostile client: 20,000 requests in one go, answers never read. Its writes block
    // once the socket buffers are full; its thread is left to the write timeout.
    let mut flood = TcpStream::connect(&address).unwrap();
    flood
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let (flood_end, server_end) = (flood.local_addr().unwrap(), flood.peer_addr().unwrap());
    // Dropped when the test is done with the flood.
    let (done, held) = std::sync::mpsc::channel::<()>();
    let flooding = std::thread::spawn(move || {
        let requests = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(20_000);
        let _ = flood.write_all(&requests);
        // Held open, never read, until the test is done with it.
        let _ = held.recv_timeout(Duration::from_secs(60));
        drop(flood);
    });
    // The buffers are full: the server takes no more of the flood's requests, which wait
    // unsent in the flood's socket.
    crate::support::wait::wait_for(
        "the flood's requests to back up (bytes queued in its socket)",
        Duration::from_secs(10),
        || {
            crate::support::wait::tcp_queues(flood_end, server_end)
                .is_some_and(|(send, _)| send > 0)
                && crate::support::wait::tcp_queues(server_end, flood_end)
                    .is_some_and(|(_, received)| received > 0)
        },
    );
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let (answer, took) = scrape(&address);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        slowest < Duration::from_millis(500),
        "a scrape took {slowest:?} beside the pipelining client"
    );
    let started = Instant::now();
    assert!(
        Command::new("kill")
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("still running 5 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        took < Duration::from_secs(2),
        "exit took {took:?} after SIGTERM"
    );
    drop(done);
    let _ = flooding.join();
}

/// `GET path` on a server on loopback; the body, whatever the status.
fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// Prometheus's answer to an instant query.
fn query(prometheus: &str, expression: &str) -> serde_json::Value {
    let encoded: String = url::form_urlencoded::byte_serialize(expression.as_bytes()).collect();
    let body = get(prometheus, &format!("/api/v1/query?query={encoded}"));
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("{expression}: {error}: {body}"))
}

/// A board's query as Prometheus reads it: every variable at "All" (`.*`).
fn with_all(expression: &str) -> String {
    with_host(expression, ".*")
}

/// A board's query with the `host` variable at `host` (a regular expression, as Grafana
/// writes a chosen value) and the others at "All".
fn with_host(expression: &str, host: &str) -> String {
    ["$container", "$profile"]
        .iter()
        .fold(expression.replace("$host", host), |text, variable| {
            text.replace(variable, ".*")
        })
}

/// The address a `stats --serve` names on its first stderr line; the rest of stderr is
/// drained, so that envctl never blocks on it.
fn served_address(child: &mut Child) -> String {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_string();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    address
}

#[test]
fn every_query_of_the_grafana_board_returns_series_from_a_real_prometheus() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let Some(prometheus) = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|path| path.is_file())
    else {
        crate::support::docker::skip_or_panic(
            "no prometheus",
            &crate::support::docker::current_test_name(),
            "the Prometheus server is not installed: `sudo apt-get install prometheus` (.ci/run installs it)",
        );
        return;
    };
    let board: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("grafana/envctl.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let (container, profile, pid) = start_a_busy_container();
    // One stand-in GPU, nearly full of the container's process: every panel has series,
    // the diagnoses table too (`gpu-memory-near-full`).
    let folder = tempfile::TempDir::new().unwrap();
    let fixture = write_a_nearly_full_gpu(folder.path(), &pid);
    let servers = start_three_servers(folder.path(), &fixture, container.name());
    let (_prometheus, address) = start_prometheus(&prometheus, folder.path(), &servers);
    wait_for_samples_from_each_server(&address, container.name());
    let hosts = [
        servers.first_host.as_str(),
        servers.second_host,
        servers.team_host,
    ];
    every_panel_query_returns_series_for_each_host(&board, &address, hosts);
    every_variable_finds_this_runs_values(&board, &address, &profile, container.name(), hosts);
    the_team_exposition_names_each_host_and_why_one_is_down(
        &servers.team_envctl,
        servers.team_host,
    );
}

/// A container of this test's own, spinning on the CPU under a 256 MiB limit: its guard,
/// its profile label and its process id.
fn start_a_busy_container() -> (crate::support::docker::ContainerGuard, String, String) {
    let image = crate::support::docker::test_image();
    let container = crate::support::docker::ContainerGuard::unique("envctl-grafana");
    let profile = crate::support::docker::unique_name("grafana");
    crate::support::docker::docker_stdout([
        "run",
        "-d",
        "--name",
        container.name(),
        "--label",
        "envctl.test=1",
        "--label",
        &format!("envctl.profile={profile}"),
        "--memory",
        "256m",
        &image,
        "sh",
        "-c",
        "while :; do :; done",
    ]);
    let pid = crate::support::docker::docker_stdout([
        "inspect",
        "-f",
        "{{.State.Pid}}",
        container.name(),
    ]);
    (container, profile, pid)
}

/// The stand-in GPU's fixture in `folder`: one H100, nearly full of process `pid`.
fn write_a_nearly_full_gpu(folder: &std::path::Path, pid: &str) -> std::path::PathBuf {
    let fixture = folder.join("gpu.conf");
    std::fs::write(
        &fixture,
        format!(
            "driver_version=570.124.06\nnvml_version=12.570.124.06\ncuda_driver_version=12080\ndevice_count=1\n\
             gpu.0.name=NVIDIA H100 80GB HBM3\ngpu.0.uuid=GPU-00000000-0000-0000-0000-0000000000b0\n\
             gpu.0.pci_bus_id=00000000:18:00.0\ngpu.0.compute_capability=9.0\ngpu.0.memory_total=85520809984\n\
             gpu.0.memory_used=83751862272\ngpu.0.power_limit_milliwatts=700000\ngpu.0.utilization_gpu=64\n\
             gpu.0.utilization_memory=20\ngpu.0.temperature=66\ngpu.0.power_usage_milliwatts=455000\n\
             gpu.0.throttle_reasons=0x4\ngpu.0.clock_sm_mhz=1755\ngpu.0.clock_memory_mhz=2619\n\
             gpu.0.processes={pid}:83751862272\n"
        ),
    )
    .unwrap();
    fixture
}

/// The three `stats --serve` envctls Prometheus scrapes, the addresses they serve and the
/// host each names.
struct Servers {
    _first: Serving,
    _second: Serving,
    _team: Serving,
    envctl: String,
    second_envctl: String,
    team_envctl: String,
    first_host: String,
    second_host: &'static str,
    team_host: &'static str,
}

/// `command` started in `folder` with the stand-in GPU, as node `node` when one is given.
fn start_serving(
    command: &mut Command,
    folder: &std::path::Path,
    fixture: &std::path::Path,
    node: Option<&str>,
) -> Child {
    crate::support::cli::hermetic(command, folder);
    if let Some(node) = node {
        command.env("NODE_NAME", node);
    }
    command
        .env("ENVCTL_NVML_LIBRARY", crate::support::nvml::stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", fixture)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Two envctl servers, as on two machines, each serving `container`, and a third serving a
/// team of the team file.
fn start_three_servers(
    folder: &std::path::Path,
    fixture: &std::path::Path,
    container: &str,
) -> Servers {
    // Two envctl servers, as on two machines: this host's name, and a node's name of its
    // own (`NODE_NAME`, as a pod's is given), each serving the same container.
    let serve_arguments = [
        "stats",
        "--interval",
        "0.5",
        "--serve",
        "127.0.0.1:0",
        container,
    ];
    let mut first = start_serving(
        Envctl::shared().command().args(serve_arguments),
        folder,
        fixture,
        None,
    );
    let envctl = served_address(&mut first);
    let first = Serving(first);
    let first_host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let second_host = "envctl-test-second-host";
    let mut second = start_serving(
        Envctl::shared().command().args(serve_arguments),
        folder,
        fixture,
        Some(second_host),
    );
    let second_envctl = served_address(&mut second);
    let second = Serving(second);
    // A third serving a team of the team file: the local daemon, and an endpoint where
    // nothing listens.
    let team_host = "team-local";
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join("envctl/hosts.toml"),
        format!(
            "[hosts]\n{team_host} = \"unix:///var/run/docker.sock\"\nteam-stopped = \"tcp://127.0.0.1:{}\"\n",
            crate::remote_daemons::free_port()
        ),
    )
    .unwrap();
    let mut team = start_serving(
        Envctl::shared().command().args([
            "stats",
            "--interval",
            "0.5",
            "--all-users",
            "--serve",
            "127.0.0.1:0",
            "--hosts",
            "@team",
        ]),
        folder,
        fixture,
        None,
    );
    let team_envctl = served_address(&mut team);
    let team = Serving(team);
    Servers {
        _first: first,
        _second: second,
        _team: team,
        envctl,
        second_envctl,
        team_envctl,
        first_host,
        second_host,
        team_host,
    }
}

/// Prometheus on loopback only, scraping the three servers every second: it, killed on
/// drop, and its address.
fn start_prometheus(
    prometheus: &std::path::Path,
    folder: &std::path::Path,
    servers: &Servers,
) -> (Serving, String) {
    let Servers {
        envctl,
        second_envctl,
        team_envctl,
        ..
    } = servers;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let config = folder.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: envctl\n    static_configs:\n      - targets: ['{envctl}', '{second_envctl}', '{team_envctl}']\n"
        ),
    )
    .unwrap();
    let server = Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            folder.join("data").display()
        ))
        .arg(format!("--web.listen-address={address}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Serving(server), address)
}

/// Scrapes for some seconds: `rate(…[1m])` needs two samples of a counter, from each
/// server.
fn wait_for_samples_from_each_server(address: &str, container: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answered = TcpStream::connect(address).is_ok() && {
            let counts = query(address, "count_over_time(envctl_container_cpu_percent[1m])");
            // This test's container, from each of the three servers (the team's lists
            // every user's envctl containers, other tests' too).
            let counts: Vec<serde_json::Value> = counts["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|series| series["metric"]["container"] == container)
                .collect();
            counts.len() == 3
                && counts.iter().all(|series| {
                    series["value"][1]
                        .as_str()
                        .and_then(|count| count.parse::<u32>().ok())
                        .is_some_and(|count| count >= 5)
                })
        };
        if answered {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus has no samples of envctl within 60 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every query of every panel, with every variable at "All", returns series; each host
/// value picks that host's series, and only them.
fn every_panel_query_returns_series_for_each_host(
    board: &serde_json::Value,
    address: &str,
    hosts: [&str; 3],
) {
    let mut checked = 0;
    for panel in board["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expression = with_all(target["expr"].as_str().unwrap());
            let answer = query(address, &expression);
            assert_eq!(answer["status"], "success", "{expression}: {answer}");
            let result = answer["data"]["result"].as_array().unwrap();
            assert!(
                !result.is_empty(),
                "panel `{}`: `{expression}` returns no series",
                panel["title"]
            );
            checked += 1;
            // Each host value picks that host's series, and only them.
            for host in hosts {
                let expression = with_host(target["expr"].as_str().unwrap(), host);
                let answer = query(address, &expression);
                let result = answer["data"]["result"].as_array().unwrap();
                assert!(!result.is_empty(), "`{expression}` returns no series");
                for series in result {
                    assert_eq!(series["metric"]["host"], host, "`{expression}`: {series}");
                }
            }
        }
    }
    assert!(checked >= 15, "{checked} queries");
}

/// The variables: `label_values(METRIC, LABEL)` finds this run's profile and container,
/// and every host.
fn every_variable_finds_this_runs_values(
    board: &serde_json::Value,
    address: &str,
    profile: &str,
    container: &str,
    [first_host, second_host, team_host]: [&str; 3],
) {
    for variable in board["templating"]["list"].as_array().unwrap() {
        let Some(definition) = variable["definition"].as_str() else {
            continue;
        };
        let inner = definition
            .strip_prefix("label_values(")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap();
        let (metric, label) = inner.rsplit_once(", ").unwrap();
        let answer = query(address, &with_all(metric));
        let values: Vec<&str> = answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|series| series["metric"][label].as_str())
            .collect();
        assert!(
            !values.is_empty(),
            "variable {}: {answer}",
            variable["name"]
        );
        match label {
            "profile" => assert!(values.contains(&profile), "{values:?}"),
            "container" => assert!(values.contains(&container), "{values:?}"),
            "host" => {
                assert_eq!(variable["name"], "host");
                assert!(
                    values.contains(&first_host)
                        && values.contains(&second_host)
                        && values.contains(&team_host),
                    "{values:?}"
                );
            }
            _ => {}
        }
    }
}

/// The team's own exposition: every series with its `host`, the stopped host down with
/// why, valid for promtool.
fn the_team_exposition_names_each_host_and_why_one_is_down(team_envctl: &str, team_host: &str) {
    let text = get(team_envctl, "/metrics");
    let samples = crate::stats::check_exposition(&text);
    crate::stats::check_with_promtool(&text);
    for (family, labels, _) in &samples {
        assert!(
            labels.iter().any(|(name, _)| name == "host"),
            "{family} {labels:?} has no host"
        );
    }
    let up = |host: &str| {
        samples
            .iter()
            .find(|(family, labels, _)| {
                family == "envctl_host_up"
                    && labels
                        .iter()
                        .any(|(name, value)| name == "host" && value == host)
            })
            .unwrap_or_else(|| panic!("no envctl_host_up for {host}: {text}"))
            .clone()
    };
    assert_eq!(up(team_host).2, 1.0, "{text}");
    let (_, labels, value) = up("team-stopped");
    assert_eq!(value, 0.0, "{text}");
    assert!(
        labels
            .iter()
            .any(|(name, value)| name == "error_kind" && value == "connection_refused"),
        "{labels:?}"
    );
}
