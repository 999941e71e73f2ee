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
//!
//! This folder holds the fixtures, the `envctl` runners, the exposition checks (`serve` uses
//! them too) and the `Fleet` of real containers; the tests sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::nvml::stub_library;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{docker_stdout, test_image, unique_name};
use crate::support::tmux::{MAIN_SCREEN_MARKER, Recording, Tmux, shell_quote};
use assert_cmd::Command;
use envctl::monitor::Snapshot;
use envctl::monitor::usage::container_usage;
use envctl_engine::stats::container_sample_from_api_json;
use serde_json::Value;
use tempfile::TempDir;

mod containers;
mod exposition;
mod frames;
mod gpu_memory;
mod live_view;
mod report;

const MIB: u64 = 1024 * 1024;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stats")
        .join(name)
}

fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// envctl with no NVML unless a test gives one ([`Envctl::shared`] already clears colour
/// and every other `ENVCTL_*` setting, the stats source among them).
fn envctl() -> Envctl {
    Envctl::shared().env(
        "ENVCTL_NVML_LIBRARY",
        "/nonexistent/envctl-test/libnvidia-ml.so.1",
    )
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
