//! `envctl stats`, from the formulas up to the real daemon.
//!
//! - Pure: CPU % and memory over stats frames recorded from a cgroup v1 daemon and written
//!   in a v2 daemon's shape (`tests/fixtures/stats/`), `/proc/PID/cgroup` texts of every
//!   layout, the Prometheus exposition (checked by `promtool` when installed, and always
//!   by a strict parser here), and `stats report`.
//! - Real daemon: busy and idle busybox containers give plausible numbers through both
//!   sources (cgroup files and the Engine API), once and streaming; 50 containers; the
//!   stand-in NVML reporting the PID of a process inside a test container puts that GPU
//!   memory on the container's row; `--record` survives a kill; `--serve`; the live view
//!   quits on `q` and gives the terminal back (in tmux, [`crate::support::tmux`]: skipped without
//!   it, a failure when `ENVCTL_REQUIRE_DOCKER=1`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::nvml::stub_library;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::support::docker::{docker_stdout, test_image, unique_name};
use crate::support::tmux::{MAIN_SCREEN_MARKER, Recording, Tmux, shell_quote};
use assert_cmd::Command;
use envctl::monitor::Snapshot;
use envctl::monitor::usage::container_usage;
use envctl_engine::stats::container_sample_from_api_json;
use serde_json::Value;
use tempfile::TempDir;

const MIB: u64 = 1024 * 1024;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stats")
        .join(name)
}

fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// envctl with no colour, no NVML unless a test gives one, and no source override.
fn envctl() -> Command {
    let mut command = crate::support::cli::envctl();
    command
        .env("NO_COLOR", "1")
        .env(
            "ENVCTL_NVML_LIBRARY",
            "/nonexistent/envctl-test/libnvidia-ml.so.1",
        )
        .env_remove("ENVCTL_NVML_STUB_FIXTURE")
        .env_remove("ENVCTL_STATS_SOURCE")
        .env_remove("CLICOLOR_FORCE");
    command
}

fn std_envctl() -> StdCommand {
    let mut command = crate::support::cli::envctl_command();
    command
        .env("NO_COLOR", "1")
        .env(
            "ENVCTL_NVML_LIBRARY",
            "/nonexistent/envctl-test/libnvidia-ml.so.1",
        )
        .env_remove("ENVCTL_NVML_STUB_FIXTURE")
        .env_remove("ENVCTL_STATS_SOURCE");
    command
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(command: &mut Command) -> Run {
    let output = command.output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn document(text: &str) -> Value {
    let value: Value = serde_json::from_str(text)
        .unwrap_or_else(|error| panic!("not one JSON document ({error}):\n{text}"));
    assert_eq!(value["schema_version"], 1);
    value
}

fn row<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("no row for `{name}` in {document:#}"))
}

// ---------------------------------------------------------------------------------------
// Pure: formulas over recorded frames.

struct Expected {
    file: &'static str,
    cpu_percent: Option<f64>,
    memory_bytes: u64,
    memory_limit_bytes: u64,
    block: (u64, u64),
    net: (Option<u64>, Option<u64>),
    pids: u64,
}

#[test]
fn recorded_frames_give_the_docker_cli_numbers() {
    let cases = [
        // Busy loop on 2 CPUs, --cpus 1.5: Δcontainer / Δsystem × 2 × 100.
        Expected {
            file: "v1-busy.json",
            cpu_percent: Some(89.060_282_288_557_22),
            memory_bytes: 544_768,
            memory_limit_bytes: 256 * MIB,
            block: (0, 0),
            net: (Some(516), Some(0)),
            pids: 1,
        },
        Expected {
            file: "v1-idle.json",
            cpu_percent: Some(0.0),
            memory_bytes: 593_920,
            memory_limit_bytes: 25_276_059_648,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // 66 MiB of page cache (`total_inactive_file`) is not the container's footprint.
        Expected {
            file: "v1-disk.json",
            cpu_percent: Some(0.0),
            memory_bytes: 2_228_224,
            memory_limit_bytes: 25_276_059_648,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // Read and Write entries of every device; Sync, Async, Discard, Total not added.
        Expected {
            file: "v1-blkio.json",
            cpu_percent: Some(0.0),
            memory_bytes: 2_228_224,
            memory_limit_bytes: 25_276_059_648,
            block: (1_052_672, 67_108_864),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // cgroup v2: `inactive_file`; 2 s of CPU in 1 s on 8 CPUs; two interfaces.
        Expected {
            file: "v2-training.json",
            cpu_percent: Some(200.0),
            memory_bytes: 942_141_440,
            memory_limit_bytes: 16 * 1024 * MIB,
            block: (11_386_880, 409_600),
            net: (Some(49_214), Some(12_100)),
            pids: 7,
        },
        // A stream's first frame: no previous reading, so no CPU %, never a made-up 0.
        Expected {
            file: "v2-cache-heavy-first-frame.json",
            cpu_percent: None,
            memory_bytes: 100 * MIB,
            memory_limit_bytes: 8 * 1024 * MIB,
            block: (0, 0),
            // `networks: {}`: no counters, so no figure, never 0 B.
            net: (None, None),
            pids: 3,
        },
        Expected {
            file: "v1-busy-one-shot.json",
            cpu_percent: None,
            memory_bytes: 544_768,
            memory_limit_bytes: 256 * MIB,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
    ];
    for case in cases {
        let sample = container_sample_from_api_json(&read_fixture(case.file), "x").unwrap();
        let usage = container_usage(&sample, None);
        match (usage.cpu_percent, case.cpu_percent) {
            (Some(actual), Some(expected)) => assert!(
                (actual - expected).abs() < 1e-9,
                "{}: CPU {actual} ≠ {expected}",
                case.file
            ),
            (actual, expected) => assert_eq!(actual, expected, "{}: CPU", case.file),
        }
        assert_eq!(usage.memory_bytes, Some(case.memory_bytes), "{}", case.file);
        assert_eq!(
            usage.memory_limit_bytes,
            Some(case.memory_limit_bytes),
            "{}",
            case.file
        );
        assert_eq!(
            (usage.block_read_bytes, usage.block_write_bytes),
            case.block,
            "{}",
            case.file
        );
        assert_eq!(
            (usage.net_rx_bytes, usage.net_tx_bytes),
            case.net,
            "{}",
            case.file
        );
        assert_eq!(usage.pids, Some(case.pids), "{}", case.file);
    }
}

#[test]
fn a_one_shot_frame_and_an_own_earlier_reading_give_cpu_percent() {
    // The one-shot frame came a moment after the two-sample one, from the same busy loop:
    // envctl keeps the earlier reading itself instead of waiting for the daemon's.
    let earlier = container_sample_from_api_json(&read_fixture("v1-busy.json"), "x").unwrap();
    let later =
        container_sample_from_api_json(&read_fixture("v1-busy-one-shot.json"), "x").unwrap();
    assert!(container_usage(&later, None).cpu_percent.is_none());
    let cpu = container_usage(&later, Some(&earlier.cpu))
        .cpu_percent
        .unwrap();
    assert!(
        (50.0..=110.0).contains(&cpu),
        "a busy loop on one core: {cpu}"
    );
}

#[test]
fn recorded_cgroup_texts_name_their_container() {
    use envctl_host::cgroup::{container_id_candidates, pick_container};
    const ID: &str = "e5fb59820be1185f00d4a5b52c24aeed78c44c1ad9f5a41244c1b8d02fdcf4be";
    const OUTER: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let cases: [(&str, &[&str]); 8] = [
        ("v1-cgroupfs.txt", &[ID]),
        ("v1-systemd.txt", &[ID]),
        ("v2-cgroupfs.txt", &[ID]),
        ("v2-systemd.txt", &[ID]),
        ("v2-rootless.txt", &[ID]),
        ("v2-docker-in-docker.txt", &[OUTER, ID]),
        ("v1-host-process.txt", &[]),
        ("v2-host-process.txt", &[]),
    ];
    for (file, expected) in cases {
        let text = read_fixture(&format!("cgroup/{file}"));
        let candidates = container_id_candidates(&text);
        assert_eq!(candidates, expected, "{file}");
        let picked = pick_container(&candidates, |id| id == ID);
        assert_eq!(picked.as_deref(), expected.last().map(|_| ID), "{file}");
    }
}

// ---------------------------------------------------------------------------------------
// Prometheus exposition.

/// One sample of an exposition: family name, labels, value.
pub(crate) type Sample = (String, Vec<(String, String)>, f64);

/// A strict reader of the text exposition format 0.0.4: every family has HELP then TYPE
/// before its samples, names and label names are valid, label values are quoted and
/// escaped correctly, values parse, and no family or series appears twice.
pub(crate) fn check_exposition(text: &str) -> Vec<Sample> {
    use std::collections::BTreeSet;
    let valid_name = |name: &str, colon: bool| {
        let mut characters = name.chars();
        characters.next().is_some_and(|first| {
            first.is_ascii_alphabetic() || first == '_' || (colon && first == ':')
        }) && characters.all(|character| {
            character.is_ascii_alphanumeric() || character == '_' || (colon && character == ':')
        })
    };
    let mut samples = Vec::new();
    let mut families = BTreeSet::new();
    let mut series = BTreeSet::new();
    let mut current: Option<(String, bool)> = None;
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    for (number, line) in text.lines().enumerate() {
        let at = format!("line {}: `{line}`", number + 1);
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _) = rest.split_once(' ').expect(&at);
            assert!(valid_name(name, true), "{at}");
            assert!(families.insert(name.to_string()), "family twice: {at}");
            current = Some((name.to_string(), false));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(&at);
            assert_eq!(
                current.as_ref().map(|(family, _)| family.as_str()),
                Some(name),
                "{at}"
            );
            assert!(
                ["counter", "gauge", "untyped", "summary", "histogram"].contains(&kind),
                "{at}"
            );
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counters end in _total: {at}");
            }
            current = Some((name.to_string(), true));
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "{at}");
        let (family, typed) = current.clone().expect(&at);
        assert!(typed, "TYPE before samples: {at}");
        let (head, value) = line.rsplit_once(' ').expect(&at);
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {at}"));
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect(&at)),
            None => (head, ""),
        };
        assert_eq!(name, family, "{at}");
        let mut parsed = Vec::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (label, after) = rest.split_once("=\"").expect(&at);
            assert!(valid_name(label, false), "label name: {at}");
            let mut value = String::new();
            let mut characters = after.char_indices();
            let end = loop {
                let (position, character) = characters.next().expect(&at);
                match character {
                    '\\' => match characters.next().expect(&at).1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        other => panic!("escape \\{other}: {at}"),
                    },
                    '"' => break position,
                    '\n' => panic!("raw line feed: {at}"),
                    other => value.push(other),
                }
            };
            parsed.push((label.to_string(), value));
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        assert!(series.insert(head.to_string()), "series twice: {at}");
        samples.push((name.to_string(), parsed, value));
    }
    samples
}

/// `promtool check metrics` on `text`; none when promtool is not installed (Debian's
/// prometheus package). Any other failure to start it fails the test.
fn promtool(text: &str) -> Option<(bool, String)> {
    let spawned = StdCommand::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
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
    Some((output.status.success(), said))
}

/// promtool's one complaint that is on purpose: dcgm-exporter's own `modelName` label is
/// camelCase, and envctl keeps DCGM's label names so dashboards built for it work.
const DCGM_LABEL_LINT: &str = "label names should be written in 'snake_case' not 'camelCase'";

pub(crate) fn check_with_promtool(text: &str) {
    match promtool(text) {
        Some((passed, said)) => {
            let other: Vec<&str> = said
                .lines()
                .filter(|line| !line.trim().is_empty() && !line.ends_with(DCGM_LABEL_LINT))
                .collect();
            assert!(
                passed || other.is_empty(),
                "promtool check metrics:\n{}\n---\n{text}",
                other.join("\n")
            );
            assert!(!said.contains("parsing error"), "{said}");
        }
        None => {
            // The strict parser still checks the text; under ENVCTL_REQUIRE_DOCKER=1 the
            // missing check is a failure, as CI installs promtool.
            crate::support::docker::skip_or_panic(
                "no promtool: the exposition is checked by the strict parser only",
                &crate::support::docker::current_test_name(),
                "`promtool` is not installed.\nFix: `sudo apt-get install prometheus`.",
            );
        }
    }
}

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

// ---------------------------------------------------------------------------------------
// stats report.

fn recording_from_fixture(folder: &Path, name: &str, samples: usize) -> PathBuf {
    let snapshot: Snapshot = serde_json::from_str(&read_fixture("snapshot-two-gpus.json")).unwrap();
    let path = folder.join(name);
    let mut recorder = envctl::ops::stats::recording::Recorder::open(&path).unwrap();
    for step in 0..samples {
        let mut moment = snapshot.clone();
        moment.time += step as f64;
        moment.containers[0].cpu_percent = Some(100.0 + step as f64 * 10.0);
        moment.gpus[1].temperature_c = Some(80.0 + step as f64);
        recorder.append(&moment).unwrap();
    }
    path
}

#[test]
fn report_draws_csv_and_json_lines_recordings() {
    let folder = TempDir::new().unwrap();
    for recording in [
        recording_from_fixture(folder.path(), "run.csv", 6),
        recording_from_fixture(folder.path(), "run.jsonl", 6),
    ] {
        let extension = recording
            .extension()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let svg = folder.path().join(format!("out-{extension}.svg"));
        let result = run(envctl()
            .args(["stats", "report"])
            .arg(&recording)
            .arg("-o")
            .arg(&svg));
        assert_eq!(result.code, 0, "{}", result.stderr);
        assert!(result.stderr.contains("6 samples"), "{}", result.stderr);
        let drawing = std::fs::read_to_string(&svg).unwrap();
        assert!(drawing.starts_with("<svg"), "{}", &drawing[..100]);
        for title in [
            "Container CPU",
            "Container memory",
            "GPU utilisation",
            "GPU memory used",
            "GPU temperature",
        ] {
            assert!(drawing.contains(title), "{title}");
        }
        let html = folder.path().join(format!("out-{extension}.html"));
        let result = run(envctl()
            .args(["stats", "report"])
            .arg(&recording)
            .args(["--output"])
            .arg(&html));
        assert_eq!(result.code, 0, "{}", result.stderr);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("<svg") && page.contains("<td>GPU 1</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td>125.0</td><td>150.0</td>"),
            "CPU mean and max:\n{page}"
        );
    }
}

#[test]
fn report_output_is_never_replaced_unasked_and_never_a_device() {
    let folder = TempDir::new().unwrap();
    let recording = recording_from_fixture(folder.path(), "run.csv", 3);
    let svg = folder.path().join("out.svg");
    std::fs::write(&svg, "mine").unwrap();
    let report = |output: &Path, force: bool| {
        let mut command = envctl();
        command
            .args(["stats", "report"])
            .arg(&recording)
            .arg("-o")
            .arg(output);
        if force {
            command.arg("--force");
        }
        run(&mut command)
    };
    let refused = report(&svg, false);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "mine");
    let replaced = report(&svg, true);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // What is not a regular file is never replaced, --force or not: a symlink (to a file
    // that must survive) named like a drawing.
    let kept = folder.path().join("kept.txt");
    std::fs::write(&kept, "keep").unwrap();
    let link = folder.path().join("link.svg");
    std::os::unix::fs::symlink(&kept, &link).unwrap();
    let linked = report(&link, true);
    assert_eq!(linked.code, 1, "{}", linked.stderr);
    assert!(
        linked.stderr.contains("not a regular file"),
        "{}",
        linked.stderr
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "keep");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // `-o -` is stdout.
    let stdout = report(Path::new("-"), false);
    assert_eq!(stdout.code, 0, "{}", stdout.stderr);
    assert!(stdout.stdout.starts_with("<svg"), "{}", stdout.stdout);
}

#[test]
fn report_skips_a_cut_last_line_and_names_bad_inputs() {
    let folder = TempDir::new().unwrap();
    let recording = recording_from_fixture(folder.path(), "cut.jsonl", 3);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&recording)
        .unwrap();
    file.write_all(b"{\"schema_version\":1,\"time\":17")
        .unwrap();
    let svg = folder.path().join("out.svg");
    let result = run(envctl()
        .args(["stats", "report"])
        .arg(&recording)
        .arg("-o")
        .arg(&svg));
    assert_eq!(result.code, 0, "{}", result.stderr);
    assert!(
        result.stderr.contains("cut.jsonl:4: skipped"),
        "{}",
        result.stderr
    );

    let missing = run(envctl().args(["stats", "report", "/nonexistent/run.csv", "-o", "x.svg"]));
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/nonexistent/run.csv"),
        "{}",
        missing.stderr
    );
    let wrong = run(envctl()
        .args(["stats", "report"])
        .arg(&recording)
        .args(["-o", "x.png"]));
    assert_eq!(wrong.code, 2);
    assert!(
        wrong.stderr.contains("neither .svg nor .html"),
        "{}",
        wrong.stderr
    );
    let foreign = folder.path().join("foreign.csv");
    std::fs::write(&foreign, "a,b\n1,2\n").unwrap();
    let refused = run(envctl()
        .args(["stats", "report"])
        .arg(&foreign)
        .args(["-o", "x.svg"]));
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("not an envctl CSV recording"),
        "{}",
        refused.stderr
    );
}

/// `stats report` under a 10 s limit: extreme numbers once sent the chart's axis into
/// an endless loop. A run killed at the limit reads as code -1.
fn report_within_ten_seconds(recording: &Path, output: &Path) -> Run {
    let started = Instant::now();
    let result = run(envctl()
        .args(["stats", "report"])
        .arg(recording)
        .arg("-o")
        .arg(output)
        .timeout(Duration::from_secs(10)));
    assert!(
        started.elapsed() < Duration::from_secs(10) && result.code != -1,
        "`stats report {}` did not end within 10 s:\n{}",
        recording.display(),
        result.stderr
    );
    result
}

#[test]
fn report_on_infinite_or_extreme_numbers_ends_quickly() {
    let folder = TempDir::new().unwrap();
    let svg = folder.path().join("out.svg");

    // CSV: `inf` and `NaN` parse as floats; their lines are skipped and named.
    let csv = recording_from_fixture(folder.path(), "extreme.csv", 3);
    let text = std::fs::read_to_string(&csv).unwrap();
    let container = text.lines().nth(1).unwrap().to_string();
    let gpu = text.lines().last().unwrap().to_string();
    let with_cell = |line: &str, column: usize, value: &str| {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        cells[0] = "1715677999".into();
        cells[column] = value.into();
        cells.join(",")
    };
    let column = |name: &str| {
        envctl::monitor::record::CSV_COLUMNS
            .iter()
            .position(|column| *column == name)
            .unwrap()
    };
    let extra = [
        with_cell(&container, column("cpu_percent"), "inf"),
        with_cell(&gpu, column("temperature_c"), "NaN"),
        with_cell(&gpu, column("time"), "-inf"),
    ];
    std::fs::write(&csv, format!("{text}{}\n", extra.join("\n"))).unwrap();
    let lines = text.lines().count();
    let result = report_within_ten_seconds(&csv, &svg);
    assert_eq!(result.code, 0, "{}", result.stderr);
    for (offset, why) in [
        (1, "cpu_percent is inf, not a finite number"),
        (2, "GPU 1: temperature_c is NaN"),
        (3, "time is -inf"),
    ] {
        let warning = format!("extreme.csv:{}: skipped: ", lines + offset);
        assert!(
            result
                .stderr
                .lines()
                .any(|line| line.contains(&warning) && line.contains(why)),
            "{warning}{why} in\n{}",
            result.stderr
        );
    }
    assert!(result.stderr.contains("3 samples"), "{}", result.stderr);

    // JSON lines: times or values whose span overflows a float are a clear error (2).
    let snapshot: Snapshot = serde_json::from_str(&read_fixture("snapshot-two-gpus.json")).unwrap();
    let far_apart = |name: &str, change: &dyn Fn(&mut Snapshot, f64)| {
        let path = folder.path().join(name);
        let mut text = String::new();
        for value in [-1.7e308, 1.7e308] {
            let mut moment = snapshot.clone();
            change(&mut moment, value);
            text.push_str(&envctl::monitor::record::json_line(&moment));
        }
        std::fs::write(&path, text).unwrap();
        path
    };
    let times = far_apart("times.jsonl", &|moment, value| moment.time = value);
    let cpu = far_apart("cpu.jsonl", &|moment, value| {
        moment.containers[0].cpu_percent = Some(value);
    });
    for (recording, message) in [
        (
            &times,
            "times run from -1.7e308 to 1.7e308 s, too far apart to draw",
        ),
        (&cpu, "Container CPU runs from -1.7e308 to 1.7e308"),
    ] {
        for output in ["refused.svg", "refused.html"] {
            let output = folder.path().join(output);
            let result = report_within_ten_seconds(recording, &output);
            assert_eq!(result.code, 2, "{}", result.stderr);
            assert!(
                result.stderr.contains("cannot draw the report") && result.stderr.contains(message),
                "{message} in\n{}",
                result.stderr
            );
            assert!(!output.exists(), "nothing written on an error");
        }
    }
}

#[test]
fn record_refuses_a_json_file_it_did_not_write() {
    let folder = TempDir::new().unwrap();
    let package = folder.path().join("package.json");
    let content = "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\"\n}\n";
    std::fs::write(&package, content).unwrap();
    // Refused before the daemon is asked anything: no daemon is needed here.
    let result = run(envctl()
        .args(["stats", "--once", "--record"])
        .arg(&package)
        .env("DOCKER_HOST", "unix:///nonexistent/envctl-test/docker.sock"));
    assert_eq!(result.code, 2, "{}", result.stderr);
    assert!(
        result
            .stderr
            .contains("is not an envctl JSON-lines recording: its first line is `{`"),
        "{}",
        result.stderr
    );
    assert!(result.stderr.contains("caused by:"), "{}", result.stderr);
    assert!(
        result.stderr.contains("record to a new file"),
        "{}",
        result.stderr
    );
    assert_eq!(std::fs::read(&package).unwrap(), content.as_bytes());
}

#[test]
fn help_shows_the_views_and_the_report() {
    let help = run(envctl().args(["stats", "--help"]));
    assert_eq!(help.code, 0);
    for text in [
        "report",
        "--once",
        "--interval",
        "--record",
        "--serve",
        "--all",
        "127.0.0.1:9400",
    ] {
        assert!(help.stdout.contains(text), "{text} in\n{}", help.stdout);
    }
    let usage = run(envctl().args(["stats", "--interval", "5ms"]));
    assert_eq!(usage.code, 2);
    assert!(
        usage.stderr.contains("shorter than 100 ms"),
        "{}",
        usage.stderr
    );
    let extension =
        run(envctl().args(["stats", "--once", "--record", "/tmp/envctl-stats-test.txt"]));
    assert_eq!(extension.code, 2, "{}", extension.stderr);
    assert!(extension.stderr.contains(".jsonl"), "{}", extension.stderr);
}

// ---------------------------------------------------------------------------------------
// The real daemon.

/// Containers made for one test, removed together (one `docker rm -f`) even on panic.
struct Fleet {
    names: Vec<String>,
    profile: String,
}

impl Fleet {
    fn new(prefix: &str) -> Fleet {
        Fleet {
            names: Vec::new(),
            profile: unique_name(prefix),
        }
    }

    /// Starts a container labelled with this fleet's profile; returns its name.
    fn start(&mut self, options: &[&str], command: &[&str]) -> String {
        let name = unique_name("envctl-stats");
        self.names.push(name.clone());
        let label = format!("envctl.profile={}", self.profile);
        let mut arguments = vec!["run", "-d", "--name", &name, "--label", &label];
        arguments.extend_from_slice(options);
        let image = test_image();
        arguments.push(&image);
        arguments.extend_from_slice(command);
        docker_stdout(arguments);
        name
    }

    /// Starts `count` idle containers, several `docker run` at a time.
    fn start_many(&mut self, count: usize) {
        let image = test_image();
        let label = format!("envctl.profile={}", self.profile);
        let names: Vec<String> = (0..count)
            .map(|_| unique_name("envctl-stats-many"))
            .collect();
        self.names.extend(names.iter().cloned());
        std::thread::scope(|scope| {
            for chunk in names.chunks(count.div_ceil(8)) {
                let (image, label) = (&image, &label);
                scope.spawn(move || {
                    for name in chunk {
                        docker_stdout([
                            "run", "-d", "--name", name, "--label", label, image, "sleep", "600",
                        ]);
                    }
                });
            }
        });
    }

    fn pid(&self, name: &str) -> u32 {
        docker_stdout(["inspect", "-f", "{{.State.Pid}}", name])
            .parse()
            .unwrap()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if self.names.is_empty() {
            return;
        }
        let mut command = StdCommand::new("docker");
        command.args(["rm", "-f", "-v"]).args(&self.names);
        let _ = crate::support::docker::run_with_timeout(&mut command, Duration::from_secs(120));
    }
}

/// A busy loop on one core and an idle container with a 64 MiB limit.
fn busy_and_idle(fleet: &mut Fleet) -> (String, String) {
    let busy = fleet.start(&["--cpus", "1"], &["sh", "-c", "while :; do :; done"]);
    let idle = fleet.start(&["-m", "64m"], &["sleep", "600"]);
    (busy, idle)
}

/// The CPU time a host process has used, in clock ticks (10 ms): `utime` and `stime` of
/// `/proc/PID/stat`; 0 when it cannot be read.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's name, which ends at the last ')'; utime and stime
    // are the 14th and 15th fields of the line, the 12th and 13th after the name.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|ticks| ticks.parse::<u64>().ok())
        .sum()
}

fn check_plausible(document: &Value, busy: &str, idle: &str, profile: &str) {
    let busy_row = row(document, busy);
    let idle_row = row(document, idle);
    let cpu = busy_row["cpu_percent"].as_f64().unwrap();
    let idle_cpu = idle_row["cpu_percent"].as_f64().unwrap();
    // A busy loop on a machine shared with compilers may get little of a core, but never
    // none, and never more than its 1-CPU limit (plus the 10 ms tick's slack); `sleep`
    // uses nothing.
    assert!(idle_cpu < 1.0, "idle CPU {idle_cpu}: {idle_row:#}");
    assert!(
        (idle_cpu + 1.0..=115.0).contains(&cpu),
        "busy CPU {cpu}: {busy_row:#}"
    );
    assert_eq!(idle_row["memory_limit_bytes"], 64 * MIB);
    let memory = idle_row["memory_bytes"].as_u64().unwrap();
    assert!(memory > 0 && memory < 64 * MIB, "idle memory {memory}");
    for row in [busy_row, idle_row] {
        assert_eq!(row["profile"], profile);
        assert!(row["pids"].as_u64().unwrap() >= 1, "{row:#}");
        assert!(
            row["net_rx_bytes"].is_u64() && row["block_write_bytes"].is_u64(),
            "{row:#}"
        );
        assert_eq!(row["id"].as_str().unwrap().len(), 64);
        // No NVML here: unknown, not zero.
        assert!(row["gpu_memory_bytes"].is_null(), "{row:#}");
    }
    assert_eq!(busy_row["cpu_limit_cores"], 1.0);
    assert!(
        document["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|failure| failure["subject"] == "nvml" && failure["kind"] == "library_not_found"),
        "{document:#}"
    );
}

#[test]
fn busy_and_idle_containers_give_plausible_numbers_once() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-once");
    let (busy, idle) = busy_and_idle(&mut fleet);
    // The busy loop has been given CPU (its own, by the host's account).
    let busy_pid = fleet.pid(&busy);
    crate::support::wait::wait_for(
        "the busy loop to have run 20 ms",
        Duration::from_secs(30),
        || cpu_ticks(busy_pid) >= 2,
    );
    // Both sources: the cgroup files (fast path) and the Engine API (a remote daemon's).
    for source in ["cgroup", "api"] {
        let started = Instant::now();
        let result = run(envctl()
            .args(["stats", "--once", "--json", &busy, &idle])
            .env("ENVCTL_STATS_SOURCE", source));
        let elapsed = started.elapsed();
        assert_eq!(result.code, 0, "{source}: {}", result.stderr);
        check_plausible(&document(&result.stdout), &busy, &idle, &fleet.profile);
        if source == "cgroup" {
            assert!(
                elapsed < Duration::from_millis(1500),
                "--once took {elapsed:?}"
            );
        }
    }
    // The table: both rows, and the NVML absence only said with -v.
    let table = run(envctl().args(["stats", "--once", &busy, &idle]));
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(table.stdout.starts_with("CONTAINER"), "{}", table.stdout);
    assert!(
        table.stdout.contains(&busy) && table.stdout.contains(&idle),
        "{}",
        table.stdout
    );
    assert!(!table.stderr.contains("nvml"), "{}", table.stderr);
    let conflicting = run(envctl().args(["stats", "--once", "--json", "--all", &busy]));
    assert_eq!(
        conflicting.code, 2,
        "TARGETs and --all conflict: {}",
        conflicting.stderr
    );
}

#[test]
fn streaming_gives_json_lines_from_both_sources() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-stream");
    let (busy, idle) = busy_and_idle(&mut fleet);
    for source in ["cgroup", "api"] {
        let result = run(envctl()
            .args([
                "stats",
                "--json",
                "--count",
                "6",
                "--interval",
                "0.7",
                &busy,
                &idle,
            ])
            .env("ENVCTL_STATS_SOURCE", source));
        assert_eq!(result.code, 0, "{source}: {}", result.stderr);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            6,
            "{source}: one line per sample:\n{}",
            result.stdout
        );
        let documents: Vec<Value> = lines.iter().map(|line| document(line)).collect();
        let times: Vec<f64> = documents
            .iter()
            .map(|document| document["time"].as_f64().unwrap())
            .collect();
        assert!(times.windows(2).all(|pair| pair[1] > pair[0]), "{times:?}");
        // The daemon's stream has no CPU % in its first frame (and a daemon busy with the
        // other tests may send the second late): the latest line where both have one.
        let complete = documents
            .iter()
            .rev()
            .find(|document| {
                row(document, &busy)["cpu_percent"].is_f64()
                    && row(document, &idle)["cpu_percent"].is_f64()
            })
            .unwrap_or_else(|| panic!("{source}: no line with both CPU %:\n{}", result.stdout));
        check_plausible(complete, &busy, &idle, &fleet.profile);
    }
    // Not a terminal, no --json: a plain table per interval.
    let plain = run(envctl().args(["stats", "--count", "2", "--interval", "0.3", &busy]));
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        plain.stdout.matches("CONTAINER").count(),
        2,
        "{}",
        plain.stdout
    );
}

#[test]
fn an_unknown_target_is_named() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let name = unique_name("envctl-stats-missing");
    let result = run(envctl().args(["stats", "--once", &name]));
    assert_eq!(result.code, 1, "{}", result.stderr);
    assert!(result.stderr.contains(&name), "{}", result.stderr);
}

#[test]
fn fifty_containers_once_and_streaming() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-fifty");
    fleet.start_many(50);
    let ours = |document: &Value| -> Vec<Value> {
        document["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["profile"] == fleet.profile.as_str())
            .cloned()
            .collect()
    };
    let started = Instant::now();
    let once = run(envctl().args(["stats", "--once", "--json"]));
    let elapsed = started.elapsed();
    assert_eq!(once.code, 0, "{}", once.stderr);
    let rows = ours(&document(&once.stdout));
    assert_eq!(rows.len(), 50, "envctl's containers include all 50");
    for row in &rows {
        assert!(
            row["cpu_percent"].is_f64() && row["memory_bytes"].as_u64().unwrap() > 0,
            "{row:#}"
        );
    }
    assert!(
        elapsed < Duration::from_secs(3),
        "--once with 50 containers took {elapsed:?}"
    );
    let stream = run(envctl().args(["stats", "--json", "--count", "2", "--interval", "0.5"]));
    assert_eq!(stream.code, 0, "{}", stream.stderr);
    let last = document(stream.stdout.lines().last().unwrap());
    assert_eq!(ours(&last).len(), 50);
}

// ---------------------------------------------------------------------------------------
// GPU memory per container through the stand-in NVML.

#[test]
fn gpu_memory_of_a_process_in_a_container_lands_on_its_row() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-gpu");
    let trainer = fleet.start(&[], &["sleep", "600"]);
    let bystander = fleet.start(&[], &["sleep", "600"]);
    let pid = fleet.pid(&trainer);
    let folder = TempDir::new().unwrap();
    let machine = folder.path().join("machine.conf");
    // The trainer holds 3 GiB on GPU 0 and 1 GiB on GPU 1; pid 1 (the host's init) 1 MiB.
    std::fs::write(
        &machine,
        format!(
            "driver_version=570.124.06\ncuda_driver_version=12080\ndevice_count=2\n\
             gpu.*.name=NVIDIA H100 80GB HBM3\ngpu.*.memory_total=85520809984\ngpu.*.memory_used=4294967296\n\
             gpu.*.power_limit_milliwatts=700000\ngpu.*.utilization_gpu=37\ngpu.*.utilization_memory=12\n\
             gpu.*.temperature=41\ngpu.*.power_usage_milliwatts=71234\ngpu.*.throttle_reasons=0x1\n\
             gpu.*.clock_sm_mhz=1980\ngpu.*.clock_memory_mhz=2619\n\
             gpu.0.uuid=GPU-0\ngpu.1.uuid=GPU-1\n\
             gpu.0.processes={pid}:3221225472,1:1048576\ngpu.1.processes={pid}:1073741824\n"
        ),
    )
    .unwrap();
    for (arguments, source) in [
        (vec!["stats", "--once", "--json"], "cgroup"),
        (
            vec!["stats", "--json", "--count", "1", "--interval", "0.3"],
            "api",
        ),
    ] {
        let result = run(envctl()
            .args(&arguments)
            .args([&trainer, &bystander])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine)
            .env("ENVCTL_STATS_SOURCE", source));
        assert_eq!(result.code, 0, "{}", result.stderr);
        // `--once --json` is one (pretty) document, a stream one line per sample.
        let document = if source == "cgroup" {
            document(&result.stdout)
        } else {
            document(result.stdout.lines().last().unwrap())
        };
        assert_eq!(row(&document, &trainer)["gpu_memory_bytes"], 4 * 1024 * MIB);
        assert_eq!(row(&document, &trainer)["gpus"], serde_json::json!([0, 1]));
        assert_eq!(row(&document, &bystander)["gpu_memory_bytes"], 0);
        let gpu = &document["gpus"][0];
        assert_eq!(gpu["utilization_percent"], 37.0);
        assert_eq!(gpu["memory_total_bytes"], 85_520_809_984_u64);
        assert_eq!(gpu["temperature_c"], 41.0);
        assert_eq!(gpu["power_w"], 71.234);
        assert_eq!(gpu["power_limit_w"], 700.0);
        assert_eq!(gpu["sm_clock_mhz"], 1980);
        assert_eq!(gpu["throttle_reasons"], serde_json::json!(["gpu_idle"]));
        assert_eq!(gpu["uuid"], "GPU-0");
        assert_eq!(gpu["processes"][0]["container"], trainer.as_str());
        assert!(
            gpu["processes"][1]["container"].is_null(),
            "pid 1 is on the host"
        );
    }
    let table = run(envctl()
        .args(["stats", "--once", &trainer])
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", &machine));
    assert!(table.stdout.contains("4.0GiB"), "{}", table.stdout);
    assert!(
        table.stdout.contains("NVIDIA H100 80GB HBM3"),
        "{}",
        table.stdout
    );
}

#[test]
fn gpu_memory_that_cannot_be_read_is_unknown_not_zero() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-gpu-unknown");
    let trainer = fleet.start(&[], &["sleep", "600"]);
    let bystander = fleet.start(&[], &["sleep", "600"]);
    let pid = fleet.pid(&trainer);
    let folder = TempDir::new().unwrap();
    let machine = folder.path().join("machine.conf");
    let base = "driver_version=570.124.06\ncuda_driver_version=12080\ndevice_count=2\n\
                gpu.*.name=NVIDIA H100 80GB HBM3\ngpu.*.memory_total=85520809984\n\
                gpu.*.memory_used=4294967296\ngpu.0.uuid=GPU-0\ngpu.1.uuid=GPU-1\n";
    for (case, lines) in [
        // GPU 1 does not list its processes (NVML_ERROR_NOT_SUPPORTED): the trainer, seen
        // on GPU 0, may hold memory there too.
        (
            "process list not supported",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.fail=processes:3\n"),
        ),
        (
            "process list failed",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.fail=processes:999\n"),
        ),
        // NVML_VALUE_NOT_AVAILABLE for one of the trainer's processes.
        (
            "memory unavailable",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.processes={pid}:0xffffffffffffffff\n"),
        ),
    ] {
        std::fs::write(&machine, format!("{base}{lines}")).unwrap();
        let result = run(envctl()
            .args(["stats", "--once", "--json", &trainer, &bystander])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine));
        assert_eq!(result.code, 0, "{case}: {}", result.stderr);
        let document = document(&result.stdout);
        assert!(
            row(&document, &trainer)["gpu_memory_bytes"].is_null(),
            "{case}: {document:#}"
        );
        assert_eq!(
            row(&document, &bystander)["gpu_memory_bytes"],
            0,
            "{case}: a container with no GPU holds none"
        );
        let table = run(envctl()
            .args(["stats", "--once", &trainer])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine));
        assert_eq!(table.code, 0, "{case}: {}", table.stderr);
        assert!(
            !table.stdout.contains("3.0GiB"),
            "{case}: the part that was read is not shown as the whole:\n{}",
            table.stdout
        );
    }
}

// ---------------------------------------------------------------------------------------
// --record and --serve.

#[test]
fn record_appends_and_survives_a_kill() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-record");
    let name = fleet.start(&[], &["sleep", "600"]);
    let folder = TempDir::new().unwrap();
    let csv = folder.path().join("run.csv");
    for count in ["3", "2"] {
        let result = run(envctl()
            .args(["stats", "--count", count, "--interval", "0.2", "--record"])
            .arg(&csv)
            .arg(&name));
        assert_eq!(result.code, 0, "{}", result.stderr);
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        text.matches("time,kind,id,name").count(),
        1,
        "one header:\n{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|line| line.contains(",container,"))
            .count(),
        5,
        "{text}"
    );

    // Killed mid-run: every line written before the kill is whole.
    let jsonl = folder.path().join("killed.jsonl");
    let mut child = std_envctl()
        .args(["stats", "--interval", "0.2", "--record"])
        .arg(&jsonl)
        .arg(&name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has recorded three intervals, while it goes on writing.
    crate::support::wait::wait_for("three lines in the record", Duration::from_secs(30), || {
        std::fs::read_to_string(&jsonl).is_ok_and(|text| text.matches('\n').count() >= 3)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() >= 2,
        "{} lines before the kill at 0.2 s",
        lines.len()
    );
    let whole = if text.ends_with('\n') {
        lines.len()
    } else {
        lines.len() - 1
    };
    for line in &lines[..whole] {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["schema_version"], 1);
        assert_eq!(line["containers"][0]["name"], name.as_str());
    }
    let svg = folder.path().join("killed.svg");
    let report = run(envctl()
        .args(["stats", "report"])
        .arg(&jsonl)
        .arg("-o")
        .arg(&svg));
    assert_eq!(report.code, 0, "{}", report.stderr);
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
    let mut child = std_envctl()
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

// ---------------------------------------------------------------------------------------
// The live view, in a real terminal (tmux).

#[test]
fn the_live_view_quits_on_q_and_gives_the_terminal_back() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-live");
    let name = fleet.start(&[], &["sleep", "600"]);
    let folder = TempDir::new().unwrap();
    let recording = Recording::new(
        folder.path(),
        &format!(
            "NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent {envctl} stats --interval 0.3 {name}",
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };
    let screen = tmux.wait_for_sample(2);
    assert!(
        screen.contains("envctl stats ·") && screen.contains("q quits"),
        "{screen}"
    );
    assert!(
        screen.contains(&name) && screen.contains("CPU %"),
        "{screen}"
    );
    assert!(
        !screen.contains(MAIN_SCREEN_MARKER),
        "the alternate screen hides the shell:\n{screen}"
    );
    tmux.keys("q");
    let screen = tmux.wait_for("exit=0");
    assert!(
        screen.contains(MAIN_SCREEN_MARKER),
        "the main screen is back:\n{screen}"
    );
    let (before, after) = recording.settings();
    assert_eq!(before, after, "terminal settings restored");
    // Ctrl-C, which raw mode turns into a key, quits too.
    let Some(again) = Tmux::start(&format!(
        "sh -c 'NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent {} stats --interval 0.3 {name}; echo exit=$?; sleep 30'",
        env!("CARGO_BIN_EXE_envctl")
    )) else {
        return;
    };
    again.wait_for_sample(1);
    again.keys("C-c");
    again.wait_for("exit=0");
}

// ---------------------------------------------------------------------------------------
// Out of memory, named.

#[test]
fn a_container_the_oom_killer_ends_is_named_by_stats_its_recording_and_ps() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-oom");
    // 32 MiB and no swap beyond it; a string doubled every 0.3 s passes that in seconds,
    // after some samples of its memory growing.
    let name = fleet.start(
        &["--memory", "32m", "--memory-swap", "32m"],
        &[
            "sh",
            "-c",
            "x=aaaaaaaaaaaaaaaa; while :; do x=\"$x$x\"; sleep 0.3; done",
        ],
    );
    let folder = TempDir::new().unwrap();
    let recording = folder.path().join("run.jsonl");
    // A second recorder writes CSV alongside; its file is read once the end is in it.
    let csv = folder.path().join("run.csv");
    let mut csv_child = std_envctl()
        .args(["stats", "--interval", "0.3", "--record"])
        .arg(&csv)
        .arg(&name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = std_envctl()
        .args(["stats", "--interval", "0.3", "--json", "--record"])
        .arg(&recording)
        .arg(&name)
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut grew = Vec::new();
    let named = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = receiver
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no OOM named within 60 s; memory seen: {grew:?}"));
        let snapshot: Value = serde_json::from_str(&line).unwrap();
        if let Some(row) = snapshot["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name.as_str())
        {
            grew.push(row["memory_bytes"].as_u64());
        }
        let ended = snapshot["ended"].as_array().cloned().unwrap_or_default();
        if ended.iter().any(|end| end["name"] == name.as_str()) {
            break snapshot;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let end = named["ended"]
        .as_array()
        .unwrap()
        .iter()
        .find(|end| end["name"] == name.as_str())
        .unwrap()
        .clone();
    assert_eq!(end["oom_killed"], true, "{end}");
    assert_eq!(end["exit_code"], 137, "{end}");
    let diagnosis = named["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|diagnosis| {
            diagnosis["id"] == "host-memory-growing" && diagnosis["subject"] == name.as_str()
        })
        .unwrap_or_else(|| panic!("no memory diagnosis: {named}"));
    let message = diagnosis["message"].as_str().unwrap();
    assert!(
        message.starts_with("killed by the OOM killer (exit 137) at its 32.0 MiB limit"),
        "{message}"
    );
    assert_eq!(diagnosis["evidence"]["oom_killed"], 1.0);
    assert_eq!(
        diagnosis["evidence"]["memory_limit_bytes"],
        (32_u64 << 20) as f64
    );
    assert!(
        grew.iter().flatten().count() >= 2,
        "the curve up to it has samples: {grew:?}"
    );
    // The recording keeps it, the same line as stdout's.
    let recorded = std::fs::read_to_string(&recording).unwrap();
    assert!(
        recorded
            .lines()
            .any(|line| line.contains("\"oom_killed\":true")
                && line.contains("killed by the OOM killer (exit 137)")),
        "{recorded}"
    );
    // The CSV recording marks it: an `ended` row at the sample it was seen stopped,
    // after the rows of its memory growing.
    let deadline = Instant::now() + Duration::from_secs(30);
    let csv_text = loop {
        let text = match std::fs::read_to_string(&csv) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => panic!("{}: {error}", csv.display()),
        };
        let marked = text
            .lines()
            .any(|line| line.contains(",ended,") && line.contains(&name));
        if marked || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = csv_child.kill();
    let _ = csv_child.wait();
    assert_eq!(
        csv_text.lines().next(),
        Some(envctl::monitor::record::CSV_COLUMNS.join(",").as_str())
    );
    let ended_rows: Vec<&str> = csv_text
        .lines()
        .filter(|line| line.contains(",ended,") && line.contains(&name))
        .collect();
    assert_eq!(ended_rows.len(), 1, "one end, named once:\n{csv_text}");
    assert!(
        ended_rows[0].ends_with(",exited,137,true"),
        "status, exit code, the OOM killer: {}",
        ended_rows[0]
    );
    let curve = csv_text
        .lines()
        .take_while(|line| !line.contains(",ended,"))
        .filter(|line| line.contains(",container,") && line.contains(&name))
        .count();
    assert!(curve >= 2, "the curve up to it:\n{csv_text}");
    // `stats report` of either recording marks it on the memory curve; the page names it
    // in the summary and (made from the CSV, which keeps no diagnoses) the diagnoses.
    for (source, output) in [(&csv, "csv.svg"), (&recording, "jsonl.svg")] {
        let svg = folder.path().join(output);
        let drawn = envctl()
            .args(["stats", "report"])
            .arg(source)
            .arg("-o")
            .arg(&svg)
            .output()
            .unwrap();
        assert_eq!(drawn.status.code(), Some(0), "{drawn:?}");
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert!(
            svg.contains("fill=\"#B22222\">\nOOM killed\n</text>"),
            "{output}: the mark's words:\n{svg}"
        );
        assert!(
            svg.contains("\nOOM killed at ") && svg.contains(&format!("s: {}", &name[..10])),
            "{output}: the legend names it:\n{svg}"
        );
    }
    let page = folder.path().join("csv.html");
    let drawn = envctl()
        .args(["stats", "report"])
        .arg(&csv)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(drawn.status.code(), Some(0), "{drawn:?}");
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("<td>killed by the OOM killer (exit 137) at "),
        "the summary's ended column:\n{page}"
    );
    assert!(
        page.contains(&format!(
            "<li><b>host-memory-growing</b> {name}: killed by the OOM killer (exit 137) at its 32.0 MiB limit"
        )),
        "{page}"
    );
    // `ps` says so, in its JSON and its table.
    let output = envctl().args(["ps", "--all", "--json"]).output().unwrap();
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = listing["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{listing}"))
        .clone();
    assert_eq!(row["oom_killed"], true, "{row}");
    let table = envctl().args(["ps", "--all"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.lines().any(|line| line.contains(&name)
            && line.contains("Exited (137)")
            && line.contains("(OOM killed)")),
        "{table}"
    );
    // A named target found stopped says why.
    let once = envctl()
        .args(["stats", "--once", "--json", &name])
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent")
        .output()
        .unwrap();
    let once: Value = serde_json::from_slice(&once.stdout).unwrap();
    assert!(
        once["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|failure| failure["message"]
                .as_str()
                .unwrap()
                .ends_with("is exited: killed by the OOM killer (exit 137)")),
        "{once}"
    );
}

#[test]
fn the_live_view_draws_a_minute_of_sparklines_within_the_terminal() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-spark");
    let name = fleet.start(&["--cpus", "1"], &["sh", "-c", "while :; do :; done"]);
    let folder = TempDir::new().unwrap();
    let recording = Recording::new(
        folder.path(),
        &format!(
            "NO_COLOR=1 ENVCTL_NVML_LIBRARY={stub} ENVCTL_NVML_STUB_FIXTURE={fixture} {envctl} stats --interval 0.3 {name}",
            stub = shell_quote(&stub_library().to_string_lossy()),
            fixture = shell_quote(
                &crate::support::nvml::fixture("healthy-8x-h100.conf").to_string_lossy()
            ),
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };
    let screen = tmux.wait_for_sample(8);
    let lines: Vec<&str> = screen.lines().collect();
    let header = lines
        .iter()
        .find(|line| line.starts_with("CONTAINER"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        header.contains("CPU 1m") && header.contains("MEM 1m"),
        "{screen}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("GPU") && line.contains("UTIL 1m")),
        "{screen}"
    );
    // The busy container's CPU curve: several samples of block characters.
    let row = lines
        .iter()
        .find(|line| line.starts_with(name.as_str()))
        .unwrap_or_else(|| panic!("{screen}"));
    let blocks = row.chars().filter(|c| ('▁'..='█').contains(c)).count();
    assert!(blocks >= 5, "{row}");
    for line in &lines {
        assert!(
            console::measure_text_width(line) <= usize::from(crate::support::tmux::COLUMNS),
            "wider than the terminal: `{line}`"
        );
    }
    tmux.keys("q");
    tmux.wait_for("exit=0");
}

/// A container without a network has no network counters: its NET I/O is unknown in the
/// JSON (null) and the table (`-`), through the cgroup files and through the Engine API
/// alike, never a measured-looking 0 B.
#[test]
fn a_container_without_network_counters_shows_them_unknown() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let container = crate::support::docker::ContainerGuard::unique("envctl-stats-nonet");
    crate::support::docker::docker_stdout([
        "run",
        "-d",
        "--name",
        container.name(),
        "--label",
        crate::support::docker::TEST_LABEL,
        "--network",
        "none",
        &test_image(),
        "sleep",
        "600",
    ]);
    for source in ["cgroup", "api"] {
        let run = crate::support::cli::Run::of(
            crate::support::cli::envctl_in(folder.path())
                .env("ENVCTL_STATS_SOURCE", source)
                .args(["stats", "--once", "--json", container.name()])
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap(),
        );
        assert_eq!(run.code, 0, "{source}: {run}");
        let document = run.json();
        let row = row(&document, container.name());
        assert!(
            row["net_rx_bytes"].is_null() && row["net_tx_bytes"].is_null(),
            "{source}: {row:#}"
        );
        // The rest is still read.
        assert!(row["memory_bytes"].is_u64(), "{source}: {row:#}");
        let table = crate::support::cli::Run::of(
            crate::support::cli::envctl_in(folder.path())
                .env("ENVCTL_STATS_SOURCE", source)
                .args(["stats", "--once", container.name()])
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap(),
        );
        assert_eq!(table.code, 0, "{source}: {table}");
        let header = table.stdout.lines().next().unwrap();
        let line = table
            .stdout
            .lines()
            .find(|line| line.starts_with(container.name()))
            .unwrap_or_else(|| panic!("{table}"));
        let column = header.find("NET I/O").unwrap_or_else(|| panic!("{table}"));
        // Right-aligned under its header: the cell ends where `NET I/O` ends.
        let cell = &line[..column + "NET I/O".len()];
        assert!(cell.ends_with('-'), "{source}: {table}");
    }
}
