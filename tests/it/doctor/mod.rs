//! `envctl doctor` end to end: the built binary against the stand-in NVML library
//! (`libenvctl_nvml_stub.so`, driven by `tests/fixtures/nvml/*.conf`), the test profiles in
//! `tests/fixtures/profiles/`, the bundled profiles, and the real Docker daemon.
//!
//! Every scenario is its own process (NVML state is process-global), run in a fresh
//! temporary directory with `HOME` and `XDG_CONFIG_HOME` inside it, `ENVCTL_PROFILE_PATH`
//! removed, `NO_COLOR=1` and `--color never`. `DOCKER_HOST` is left as the environment has
//! it, except where a scenario points it somewhere on purpose.
//!
//! Facts and verdicts are asserted on `--json`; the human report of three scenarios is
//! pinned with insta snapshots (`tests/it/doctor/snapshots/it__doctor__*.snap`), with what
//! differs between machines (Docker version, endpoint, cgroup, free space, the branches still
//! supported today) filtered out.
//!
//! Assertions that depend on the daemon come after `crate::support::docker::require_daemon()`,
//! which skips loudly (or fails, with `ENVCTL_REQUIRE_DOCKER=1`) when there is none; what
//! does not depend on it is asserted before, so every test checks something either way.
//!
//! This folder holds the `Scenario` runner, the report readers and the human-report snapshot
//! helper (so its snapshots stay in `doctor/snapshots/` under the module's own name); the tests
//! sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::cli::{Envctl, Run};
use crate::support::nvml::{compile_old_driver_library, stub_library};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

mod daemon;
mod gpus;
mod matrix;
mod nvml_failures;
mod report;

/// No doctor run may take this long; a hang is a failure, not a stuck test.
const HANG_GUARD: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------

/// Which NVML the doctor process loads.
#[derive(Debug, Clone)]
enum Nvml {
    /// `ENVCTL_NVML_LIBRARY` unset: the system's `libnvidia-ml.so.1` (none on this machine).
    System,
    /// The stub library with this fixture from `tests/fixtures/nvml/`.
    Stub(&'static str),
    /// `ENVCTL_NVML_LIBRARY` naming this file, with no stub fixture.
    Library(PathBuf),
}

/// One doctor scenario: a fresh working directory, an NVML, and optionally a `DOCKER_HOST`.
struct Scenario {
    directory: TempDir,
    nvml: Nvml,
    docker_host: Option<String>,
}

/// One run and how long it took (a doctor that must fail fast is timed).
struct Output {
    run: Run,
    elapsed: Duration,
}

impl std::ops::Deref for Output {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

impl Output {
    /// stdout as the one report document, checked to carry `schema_version` 1.
    fn json(&self) -> Value {
        one_json_document(&self.stdout)
    }
}

impl Scenario {
    fn new(nvml: Nvml) -> Self {
        let directory = TempDir::new().unwrap();
        std::fs::create_dir_all(directory.path().join("home")).unwrap();
        std::fs::create_dir_all(directory.path().join("xdg")).unwrap();
        Scenario {
            directory,
            nvml,
            docker_host: None,
        }
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }

    /// Points `DOCKER_HOST` at `host` for this scenario only.
    fn docker_host(mut self, host: String) -> Self {
        self.docker_host = Some(host);
        self
    }

    /// Writes `text` to `relative` inside the working directory.
    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// envctl in this scenario's folder ([`Envctl::in_folder`]), with its NVML and daemon.
    fn envctl(&self) -> Envctl {
        let mut envctl = Envctl::in_folder(self.path()).args(["--color", "never"]);
        match &self.nvml {
            Nvml::System => {}
            Nvml::Stub(name) => envctl = envctl.nvml(name),
            Nvml::Library(path) => envctl = envctl.env("ENVCTL_NVML_LIBRARY", path),
        }
        if let Some(host) = &self.docker_host {
            envctl = envctl.daemon(host);
        }
        envctl
    }

    /// `envctl --color never ARGUMENTS…`, within [`HANG_GUARD`], with its exit code,
    /// output and duration.
    fn run(&self, arguments: &[&str]) -> Output {
        let started = Instant::now();
        let output = Command::from_std(self.envctl().args(arguments).command())
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        let elapsed = started.elapsed();
        assert!(
            output.status.code().is_some(),
            "envctl {arguments:?} was killed ({:?})",
            output.status
        );
        Output {
            run: Run::of(output),
            elapsed,
        }
    }

    /// `envctl doctor --json ARGUMENTS…`: its report, checked to be one document, and the
    /// exit code.
    fn doctor_json(&self, arguments: &[&str]) -> (Value, i32) {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(arguments);
        let output = self.run(&all);
        assert!(
            output.code == 0 || output.code == 1,
            "doctor exited {} for {arguments:?}:\n{}",
            output.code,
            output.stderr
        );
        let report = output.json();
        assert_report_shape(&report);
        (report, output.code)
    }
}

/// A test profile from `tests/fixtures/profiles/`, as an absolute path argument.
fn test_profile(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/profiles")
        .join(name);
    assert!(path.exists(), "test profile {} is missing", path.display());
    path.to_str().unwrap().to_string()
}

// ---------------------------------------------------------------------------------------
// Reading the report
// ---------------------------------------------------------------------------------------

/// Parses stdout as exactly one JSON document carrying `schema_version` 1.
fn one_json_document(stdout: &str) -> Value {
    let documents: Vec<Value> = serde_json::Deserializer::from_str(stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{stdout}"));
    assert_eq!(
        documents.len(),
        1,
        "--json prints exactly one document, got {}:\n{stdout}",
        documents.len()
    );
    let document = documents.into_iter().next().unwrap();
    assert_eq!(document["schema_version"], 1, "{document:#}");
    document
}

const VERDICTS: [&str; 3] = ["ok", "warn", "fail"];
const STATUSES: [&str; 4] = ["info", "pass", "warn", "fail"];

/// The verdict word for the worst of these statuses, as the report computes it.
fn verdict_of<'a>(statuses: impl IntoIterator<Item = &'a str>) -> &'static str {
    let worst = statuses
        .into_iter()
        .map(|status| {
            STATUSES
                .iter()
                .position(|known| *known == status)
                .unwrap_or_else(|| panic!("unknown status {status:?}"))
        })
        .max()
        .unwrap_or(1);
    match worst {
        0 | 1 => "ok",
        2 => "warn",
        _ => "fail",
    }
}

fn statuses(findings: &Value) -> Vec<&str> {
    findings
        .as_array()
        .unwrap_or_else(|| panic!("findings is not a list: {findings}"))
        .iter()
        .map(|finding| finding["status"].as_str().unwrap())
        .collect()
}

/// The report has its documented fields, every finding is well-formed, and every verdict
/// is the worst of the findings below it.
fn assert_report_shape(report: &Value) {
    for key in ["schema_version", "verdict", "host", "findings", "profiles"] {
        assert!(report.get(key).is_some(), "no `{key}` in {report:#}");
    }
    assert!(report["host"]["engine"].is_object(), "{report:#}");
    assert!(report["host"]["gpu"].is_object(), "{report:#}");
    let all_findings = report["findings"].as_array().unwrap().iter().chain(
        report["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|profile| {
                profile["findings"].as_array().unwrap().iter().chain(
                    profile["gpus"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|gpu| gpu["findings"].as_array().unwrap()),
                )
            }),
    );
    for finding in all_findings {
        let id = finding["id"].as_str().unwrap_or_default();
        assert!(id.contains('.'), "finding ids are dotted: {finding:#}");
        assert!(
            STATUSES.contains(&finding["status"].as_str().unwrap_or_default()),
            "{finding:#}"
        );
        assert!(
            !finding["message"].as_str().unwrap_or_default().is_empty(),
            "{finding:#}"
        );
    }
    let mut everything = statuses(&report["findings"]);
    for profile in report["profiles"].as_array().unwrap() {
        let mut own = statuses(&profile["findings"]);
        for gpu in profile["gpus"].as_array().unwrap() {
            let gpu_statuses = statuses(&gpu["findings"]);
            assert_eq!(gpu["verdict"], verdict_of(gpu_statuses.clone()), "{gpu:#}");
            own.extend(gpu_statuses);
        }
        assert_eq!(
            profile["verdict"],
            verdict_of(own.clone()),
            "{}",
            profile["name"]
        );
        everything.extend(own);
    }
    assert!(VERDICTS.contains(&report["verdict"].as_str().unwrap()));
    assert_eq!(report["verdict"], verdict_of(everything), "{report:#}");
}

/// Every finding with this id.
fn all_with_id<'a>(findings: &'a Value, id: &str) -> Vec<&'a Value> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == id)
        .collect()
}

/// The one finding with this id.
fn finding<'a>(findings: &'a Value, id: &str) -> &'a Value {
    let found = all_with_id(findings, id);
    assert_eq!(found.len(), 1, "expected one `{id}` in {findings:#}");
    found[0]
}

fn message(finding: &Value) -> &str {
    finding["message"].as_str().unwrap()
}

fn hint(finding: &Value) -> &str {
    finding["hint"]
        .as_str()
        .unwrap_or_else(|| panic!("no hint in {finding:#}"))
}

/// The ids of the findings with this status, in order.
fn ids_with_status<'a>(findings: &'a Value, status: &str) -> Vec<&'a str> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["status"] == status)
        .map(|finding| finding["id"].as_str().unwrap())
        .collect()
}

/// The one profile report with this name.
fn profile<'a>(report: &'a Value, name: &str) -> &'a Value {
    let found: Vec<&Value> = report["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|profile| profile["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "expected profile {name} in {report:#}");
    found[0]
}

/// `(index, name, compute_capability, verdict)` of each GPU of a profile report.
fn gpu_rows(profile: &Value) -> Vec<(u64, String, String, String)> {
    profile["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| {
            (
                gpu["index"].as_u64().unwrap(),
                gpu["name"].as_str().unwrap().to_string(),
                gpu["compute_capability"].as_str().unwrap().to_string(),
                gpu["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Whether the daemon can hand GPUs to containers, as the doctor itself judged it.
fn daemon_has_gpu_path(report: &Value) -> bool {
    finding(&report["findings"], "docker.gpu-support")["status"] == "pass"
}

/// Asserts a GPU profile's start-up findings on the real daemon: it can start only if the
/// daemon has a GPU path; on this machine's daemon (no NVIDIA runtime) it cannot.
fn assert_gpu_runtime_verdict(report: &Value, profile: &Value) {
    let runtime = finding(&profile["findings"], "profile.gpu-runtime");
    if daemon_has_gpu_path(report) {
        assert_eq!(runtime["status"], "pass", "{runtime:#}");
        return;
    }
    assert_eq!(runtime["status"], "fail", "{runtime:#}");
    assert!(
        message(runtime).contains("no NVIDIA runtime"),
        "{}",
        message(runtime)
    );
    assert!(
        message(runtime).contains("could not select device driver"),
        "the message quotes the error `docker run --gpus` would give: {}",
        message(runtime)
    );
    assert!(
        hint(runtime).contains("NVIDIA Container Toolkit"),
        "{}",
        hint(runtime)
    );
    assert_eq!(profile["verdict"], "fail");
}

// ---------------------------------------------------------------------------------------
// Human output snapshots
// ---------------------------------------------------------------------------------------

/// What differs from one machine (or one day) to the next in the human report.
const HUMAN_FILTERS: [(&str, &str); 8] = [
    // Who holds each GPU depends on the containers other tests have on the daemon now.
    (
        r"(?m)^  · GPU ([0-9]+): (?:free|held by .*?); ",
        "  · GPU $1: [FREE OR HELD]; ",
    ),
    (
        r"Docker \S+ at \S+ \(API [0-9.]+\)",
        "Docker [VERSION] at [ENDPOINT] (API [API])",
    ),
    (
        r"cgroup \S+ with the \S+ driver",
        "cgroup [VERSION] with the [DRIVER] driver",
    ),
    // Free space: its amount, and whether it is low enough to warn.
    (
        r"(?m)^  . (only )?[0-9.]+ GB free under the Docker root.*$",
        "  [DISK] free under the Docker root",
    ),
    (
        r"(?m)^      hint: free space with `docker system prune`.*\n",
        "",
    ),
    (r"(?m)^. Docker$", "[STATUS] Docker"),
    (
        r"(?m)^[0-9]+ passed, [0-9]+ warnings?, ",
        "[N] passed, [N] warnings, ",
    ),
    // Which driver branches are still supported depends on today's date.
    (
        r"move to a supported branch: [^;]*; see",
        "move to a supported branch: [SUPPORTED BRANCHES]; see",
    ),
];

fn assert_human_snapshot(name: &str, stdout: &str) {
    let filters: Vec<(&str, &str)> = HUMAN_FILTERS.to_vec();
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(name, stdout);
    });
}
