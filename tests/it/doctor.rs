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
//! pinned with insta snapshots (`tests/it/snapshots/it__doctor__*.snap`), with what differs
//! between machines (Docker version, endpoint, cgroup, free space, the branches still
//! supported today) filtered out.
//!
//! Assertions that depend on the daemon come after `crate::support::docker::require_daemon()`,
//! which skips loudly (or fails, with `ENVCTL_REQUIRE_DOCKER=1`) when there is none; what
//! does not depend on it is asserted before, so every test checks something either way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::nvml::{compile_old_driver_library, fixture as nvml_fixture, stub_library};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

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

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Output {
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

    fn command(&self) -> Command {
        let mut command = crate::support::cli::envctl();
        command
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HOME", self.path().join("home"))
            .env_remove("ENVCTL_PROFILE_PATH")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("ENVCTL_NVML_LIBRARY")
            .env_remove("ENVCTL_NVML_STUB_FIXTURE")
            .timeout(HANG_GUARD)
            .args(["--color", "never"]);
        match &self.nvml {
            Nvml::System => {}
            Nvml::Stub(name) => {
                command
                    .env("ENVCTL_NVML_LIBRARY", stub_library())
                    .env("ENVCTL_NVML_STUB_FIXTURE", nvml_fixture(name));
            }
            Nvml::Library(path) => {
                command.env("ENVCTL_NVML_LIBRARY", path);
            }
        }
        if let Some(host) = &self.docker_host {
            command.env("DOCKER_HOST", host);
        }
        command
    }

    /// `envctl --color never ARGUMENTS…`, with its exit code and output.
    fn run(&self, arguments: &[&str]) -> Output {
        let started = Instant::now();
        let output = self.command().args(arguments).output().unwrap();
        let elapsed = started.elapsed();
        Output {
            code: output
                .status
                .code()
                .unwrap_or_else(|| panic!("envctl {arguments:?} was killed ({:?})", output.status)),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
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

/// A note on the real stderr (libtest captures `eprintln!` of passing tests).
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "\n*** {text}");
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

/// The exit code a report of this verdict gives (without `--strict`).
fn exit_code_for(report: &Value) -> i32 {
    i32::from(report["verdict"] == "fail")
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

/// The bundled profile a hint like "use profile `pytorch-2.10` (…)" names.
fn hinted_profile(hint: &str) -> &str {
    hint.strip_prefix("use profile `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name)
        .unwrap_or_else(|| panic!("the hint names no profile: {hint}"))
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

// ---------------------------------------------------------------------------------------
// The JSON document
// ---------------------------------------------------------------------------------------

#[test]
fn json_is_one_document_with_schema_version_verdict_host_findings_and_profiles() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    for arguments in [
        &["doctor", "--json"][..],
        &["doctor", "--json", "pytorch-2.8", "pytorch-2.8-cu126"][..],
        &["--json", "doctor"][..],
    ] {
        let output = scenario.run(arguments);
        let report = output.json();
        assert_report_shape(&report);
        assert_eq!(
            output.code,
            exit_code_for(&report),
            "the exit code follows the verdict ({arguments:?})"
        );
        assert_eq!(
            output.stderr, "",
            "stdout is data, stderr is talk: nothing to say with --json"
        );
        assert!(report["findings"].is_array());
        assert_eq!(
            report["host"]["gpu"]["nvml"]["outcome"], "loaded",
            "{:#}",
            report["host"]["gpu"]
        );
    }
    let (report, _) = scenario.doctor_json(&["pytorch-2.8", "pytorch-2.8-cu126"]);
    let names: Vec<&str> = report["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|profile| profile["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pytorch-2.8", "pytorch-2.8-cu126"]);
    let (empty, _) = scenario.doctor_json(&[]);
    assert_eq!(
        empty["profiles"],
        serde_json::json!([]),
        "no profile named and no ./envctl/: no profile is checked"
    );
    assert!(
        empty["matrix"]
            .as_str()
            .unwrap()
            .starts_with("the bundled matrix (dated "),
        "{}",
        empty["matrix"]
    );
}

// ---------------------------------------------------------------------------------------
// GPU scenarios
// ---------------------------------------------------------------------------------------

#[test]
fn healthy_8x_h100_runs_pytorch_2_8_on_every_gpu() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);

    let nvml = &report["host"]["gpu"]["nvml"];
    assert_eq!(nvml["outcome"], "loaded", "{nvml:#}");
    assert_eq!(
        report["host"]["gpu"]["library"],
        stub_library().to_str().unwrap()
    );
    let host_gpu = finding(&report["findings"], "gpu.nvml");
    assert_eq!(host_gpu["status"], "pass");
    assert_eq!(
        message(host_gpu),
        "NVIDIA driver 570.124.06 (CUDA 12.8), 8 GPUs"
    );
    let devices = all_with_id(&report["findings"], "gpu.device");
    assert_eq!(devices.len(), 8);
    for (index, device) in devices.iter().enumerate() {
        assert_eq!(device["status"], "pass", "{device:#}");
        assert_eq!(device["facts"]["index"], index);
        assert_eq!(
            message(device),
            format!("GPU {index}: NVIDIA H100 80GB HBM3, sm_90 (compute 9.0), 80 GiB")
        );
    }
    // R570 (Production) reached its end of life in 2026-02.
    let lifecycle = finding(&report["findings"], "driver.branch-lifecycle");
    assert_eq!(lifecycle["status"], "warn", "{lifecycle:#}");
    assert!(
        message(lifecycle).contains("R570"),
        "{}",
        message(lifecycle)
    );

    let pytorch = profile(&report, "pytorch-2.8");
    assert_eq!(pytorch["file"], "<bundled>/pytorch-2.8.toml");
    assert_eq!(pytorch["stack"]["cuda"], "12.8");
    assert_eq!(pytorch["stack"]["torch"], "2.8.0+cu128");
    assert_eq!(
        message(finding(&pytorch["findings"], "profile.gpus")),
        "all 8 GPUs of this host"
    );
    let rows = gpu_rows(pytorch);
    assert_eq!(rows.len(), 8);
    for (index, row) in rows.iter().enumerate() {
        assert_eq!(
            row,
            &(
                index as u64,
                "NVIDIA H100 80GB HBM3".to_string(),
                "9.0".to_string(),
                "ok".to_string()
            )
        );
    }
    for gpu in pytorch["gpus"].as_array().unwrap() {
        for id in ["driver.cuda", "gpu.cuda-arch", "gpu.torch-arch"] {
            let verdict = finding(&gpu["findings"], id);
            assert_eq!(verdict["status"], "pass", "{verdict:#}");
        }
    }
    // Nothing about the GPUs or the stack stands in the way: only the daemon may.
    let failing: Vec<&str> = ids_with_status(&pytorch["findings"], "fail");
    assert!(
        failing
            .iter()
            .all(|id| *id == "profile.gpu-runtime" || *id == "profile.daemon"),
        "{failing:?}"
    );

    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_gpu_runtime_verdict(&report, pytorch);
    if !daemon_has_gpu_path(&report) {
        assert_eq!(
            failing,
            ["profile.gpu-runtime"],
            "exactly one thing fails: no NVIDIA runtime"
        );
        assert_eq!(pytorch["verdict"], "fail");
        assert_eq!(report["verdict"], "fail");
        assert_eq!(code, 1);
    }
}

#[test]
fn healthy_8x_h100_human_report() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let output = scenario.run(&["doctor", "pytorch-2.8"]);
    // GPUs of one model and one outcome fold into one line per finding.
    assert!(
        output.stdout.contains(
            "✓ GPU 0-7 (NVIDIA H100 80GB HBM3): torch 2.8.0+cu128 (x86_64 wheel) has sm_90 kernels"
        ),
        "{}",
        output.stdout
    );
    assert_eq!(output.stderr, "");
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert_human_snapshot("healthy_8x_h100_pytorch_2_8", &output.stdout);
}

#[test]
fn mixed_h100_v100_with_cuda_13_judges_each_gpu() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.11"]);
    let pytorch = profile(&report, "pytorch-2.11");
    assert_eq!(pytorch["stack"]["cuda"], "13.0");
    let h100 = ("NVIDIA H100 80GB HBM3", "9.0");
    let v100 = ("Tesla V100-SXM2-32GB", "7.0");
    // Driver 570 is below CUDA 13's floor of 580: every GPU fails on the driver alone.
    assert_eq!(
        gpu_rows(pytorch),
        [h100, h100, v100, v100]
            .iter()
            .enumerate()
            .map(|(index, (name, capability))| (
                index as u64,
                name.to_string(),
                capability.to_string(),
                "fail".to_string()
            ))
            .collect::<Vec<_>>()
    );
    let gpus = pytorch["gpus"].as_array().unwrap();
    for gpu in &gpus[..2] {
        let driver = finding(&gpu["findings"], "driver.cuda");
        assert_eq!(driver["status"], "fail", "{driver:#}");
        assert!(
            hint(driver).contains("cuda-compat-13-0"),
            "a data-center GPU gets the forward-compatibility package: {}",
            hint(driver)
        );
        for id in ["gpu.cuda-arch", "gpu.torch-arch"] {
            assert_eq!(
                finding(&gpu["findings"], id)["status"],
                "pass",
                "the H100's architecture is fine with CUDA 13: {gpu:#}"
            );
        }
    }
    for gpu in &gpus[2..] {
        let arch = finding(&gpu["findings"], "gpu.cuda-arch");
        assert_eq!(arch["status"], "fail", "{arch:#}");
        assert!(
            message(arch).starts_with("CUDA 13.0 cannot target sm_70 (Volta"),
            "{}",
            message(arch)
        );
        assert!(hint(arch).contains("CUDA 12.9 or older"), "{}", hint(arch));
        let torch = finding(&gpu["findings"], "gpu.torch-arch");
        assert_eq!(torch["status"], "fail");
        assert!(
            message(torch)
                .starts_with("sm_70 is not compatible with the current PyTorch installation"),
            "{}",
            message(torch)
        );
    }
    assert_eq!(pytorch["verdict"], "fail");
    assert_eq!(code, 1);

    // The profile the V100's hint names runs on every GPU of this host.
    let suggested = hinted_profile(hint(finding(&gpus[2]["findings"], "gpu.torch-arch")));
    let (suggested_report, _) = scenario.doctor_json(&[suggested]);
    for (index, _, _, verdict) in gpu_rows(profile(&suggested_report, suggested)) {
        assert_ne!(verdict, "fail", "GPU {index} with `{suggested}`");
    }
}

#[test]
fn mixed_h100_v100_on_r580_fails_only_the_v100s() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100-r580.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.11"]);
    let pytorch = profile(&report, "pytorch-2.11");
    let verdicts: Vec<(u64, String)> = gpu_rows(pytorch)
        .into_iter()
        .map(|(index, _, _, verdict)| (index, verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            (0, "ok".to_string()),
            (1, "ok".to_string()),
            (2, "fail".to_string()),
            (3, "fail".to_string())
        ]
    );
    for gpu in pytorch["gpus"].as_array().unwrap() {
        assert_eq!(
            finding(&gpu["findings"], "driver.cuda")["status"],
            "pass",
            "driver 580.95.05 meets CUDA 13.0: {gpu:#}"
        );
    }
    let v100 = &pytorch["gpus"][2];
    assert_eq!(
        ids_with_status(&v100["findings"], "fail"),
        ["gpu.cuda-arch", "gpu.torch-arch"]
    );
}

#[test]
fn mixed_h100_v100_human_report() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100.conf"));
    let output = scenario.run(&["doctor", "pytorch-2.11"]);
    assert_eq!(output.code, 1);
    assert!(
        output
            .stdout
            .contains("✗ GPU 2-3 (Tesla V100-SXM2-32GB): CUDA 13.0 cannot target sm_70 (Volta"),
        "{}",
        output.stdout
    );
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_human_snapshot("mixed_h100_v100_pytorch_2_11", &output.stdout);
}

#[test]
fn rtx_5090_with_an_old_torch_is_not_compatible_and_names_a_profile_that_works() {
    let scenario = Scenario::new(Nvml::Stub("rtx-5090.conf"));
    let old = test_profile("pytorch-2.6-cu124.toml");
    let (report, code) = scenario.doctor_json(&[&old]);
    let pytorch = profile(&report, "pytorch-2.6-cu124");
    assert_eq!(pytorch["stack"]["torch"], "2.6.0+cu124");
    assert_eq!(pytorch["stack"]["source"], "profile");
    assert_eq!(
        gpu_rows(pytorch),
        [(
            0,
            "NVIDIA GeForce RTX 5090".to_string(),
            "12.0".to_string(),
            "fail".to_string()
        )]
    );
    let gpu = &pytorch["gpus"][0];
    let torch = finding(&gpu["findings"], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        message(torch)
            .starts_with("sm_120 is not compatible with the current PyTorch installation"),
        "{}",
        message(torch)
    );
    assert_eq!(torch["facts"]["build_row"]["torch"], "2.6");
    assert_eq!(torch["facts"]["build_row"]["variant"], "cu124");
    assert_eq!(
        finding(&gpu["findings"], "driver.cuda")["status"],
        "pass",
        "driver 575 runs CUDA 12.4: only the kernels are missing"
    );
    assert_eq!(code, 1);

    // The hint names a bundled profile, and that profile works on this GPU and driver.
    let suggested = hinted_profile(hint(torch)).to_string();
    let listed = scenario.run(&["profiles", "list", "--json"]).json();
    let bundled: Vec<&str> = listed["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["source"] == "bundled")
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert!(
        bundled.contains(&suggested.as_str()),
        "`{suggested}` is not a bundled profile: {bundled:?}"
    );
    let (fixed, _) = scenario.doctor_json(&[&suggested]);
    let fixed_gpu = &profile(&fixed, &suggested)["gpus"][0];
    assert_eq!(
        finding(&fixed_gpu["findings"], "gpu.torch-arch")["status"],
        "pass",
        "{fixed_gpu:#}"
    );
    assert_eq!(fixed_gpu["verdict"], "ok", "{fixed_gpu:#}");
}

#[test]
fn gtx_1080_ti_with_a_cu128_build_is_told_to_use_cu126() {
    let scenario = Scenario::new(Nvml::Stub("gtx-1080-ti.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&report, "pytorch-2.8");
    assert_eq!(
        gpu_rows(pytorch),
        [(
            0,
            "NVIDIA GeForce GTX 1080 Ti".to_string(),
            "6.1".to_string(),
            "fail".to_string()
        )]
    );
    let torch = finding(&pytorch["gpus"][0]["findings"], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        message(torch).starts_with("sm_61 is not compatible with the current PyTorch installation"),
        "{}",
        message(torch)
    );
    assert!(
        hint(torch).starts_with("use profile `pytorch-2.8-cu126`"),
        "{}",
        hint(torch)
    );
    assert_eq!(hinted_profile(hint(torch)), "pytorch-2.8-cu126");
    assert_eq!(code, 1);

    let (fixed, _) = scenario.doctor_json(&["pytorch-2.8-cu126"]);
    let fixed_gpu = &profile(&fixed, "pytorch-2.8-cu126")["gpus"][0];
    assert_eq!(
        finding(&fixed_gpu["findings"], "gpu.torch-arch")["status"],
        "pass",
        "{fixed_gpu:#}"
    );
    assert_ne!(fixed_gpu["verdict"], "fail", "{fixed_gpu:#}");
}

// ---------------------------------------------------------------------------------------
// NVML that does not load
// ---------------------------------------------------------------------------------------

/// Runs doctor with no profile and with `pytorch-2.8` on an NVML that fails to load, and
/// checks the host finding and the profile's GPU finding. Returns the host finding.
fn assert_nvml_load_failure(nvml: Nvml, outcome: &str, words: &str, hint_words: &str) -> Value {
    let scenario = Scenario::new(nvml);
    let (report, code) = scenario.doctor_json(&[]);
    assert_eq!(
        report["host"]["gpu"]["nvml"]["outcome"], outcome,
        "{:#}",
        report["host"]["gpu"]
    );
    let host = finding(&report["findings"], "gpu.nvml").clone();
    assert_eq!(host["status"], "fail", "{host:#}");
    assert!(message(&host).contains(words), "{}", message(&host));
    assert!(hint(&host).contains(hint_words), "{}", hint(&host));
    assert!(
        all_with_id(&report["findings"], "gpu.device").is_empty(),
        "no GPU facts without NVML"
    );
    assert_eq!(code, 1, "a broken driver fails doctor even with no profile");

    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&report, "pytorch-2.8");
    let gpus = finding(&pytorch["findings"], "profile.gpus");
    assert_eq!(gpus["status"], "fail");
    assert!(
        message(gpus).contains("no usable GPU (NVML could not be loaded"),
        "the profile says why there is no GPU: {}",
        message(gpus)
    );
    // NVML's own words are kept, as the cause under envctl's.
    assert!(
        gpus["facts"]["caused_by"]
            .as_str()
            .is_some_and(|cause| !cause.is_empty()),
        "{gpus:#}"
    );
    assert_eq!(pytorch["gpus"], serde_json::json!([]));
    assert_eq!(code, 1);
    host
}

#[test]
fn driver_not_loaded() {
    assert_nvml_load_failure(
        Nvml::Stub("driver-not-loaded.conf"),
        "driver_not_loaded",
        "the NVIDIA driver is installed but not loaded",
        "sudo modprobe nvidia",
    );
}

#[test]
fn driver_library_version_mismatch() {
    assert_nvml_load_failure(
        Nvml::Stub("version-mismatch.conf"),
        "version_mismatch",
        "driver/library version mismatch",
        "reboot",
    );
}

#[test]
fn driver_library_version_mismatch_human_report() {
    let scenario = Scenario::new(Nvml::Stub("version-mismatch.conf"));
    let output = scenario.run(&["doctor"]);
    assert_eq!(output.code, 1);
    assert!(
        output
            .stdout
            .contains("✗ NVIDIA\n  ✗ driver/library version mismatch"),
        "{}",
        output.stdout
    );
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_human_snapshot("version_mismatch", &output.stdout);
}

#[test]
fn library_named_by_the_environment_is_absent() {
    let missing = PathBuf::from("/nonexistent/envctl-doctor-test/libnvidia-ml.so.1");
    let host = assert_nvml_load_failure(
        Nvml::Library(missing.clone()),
        "library_not_found",
        "ENVCTL_NVML_LIBRARY names a library that cannot be loaded",
        "unset ENVCTL_NVML_LIBRARY",
    );
    assert!(
        message(&host).contains(missing.to_str().unwrap()),
        "the message names the file: {}",
        message(&host)
    );
    assert_eq!(host["facts"]["library"], missing.to_str().unwrap());
}

#[test]
fn missing_symbol_reported_by_nvml() {
    let host = assert_nvml_load_failure(
        Nvml::Stub("missing-init-symbol.conf"),
        "symbol_missing",
        "the NVIDIA driver is too old for envctl's NVML calls",
        "upgrade the driver",
    );
    // Errors name their cause: which function the driver lacks.
    assert!(
        message(&host).contains("nvmlInit_v2"),
        "the message should name the missing function nvmlInit_v2: {}",
        message(&host)
    );
}

#[test]
fn missing_symbol_in_a_library_that_truly_lacks_it() {
    let library = compile_old_driver_library("doctor-old-driver-no-init", &[]);
    let host = assert_nvml_load_failure(
        Nvml::Library(library),
        "symbol_missing",
        "the NVIDIA driver is too old for envctl's NVML calls",
        "upgrade the driver",
    );
    assert!(
        message(&host).contains("undefined symbol: nvmlInit_v2"),
        "{}",
        message(&host)
    );

    // An R418 library that loads but lacks newer per-GPU symbols: the GPU is still listed,
    // with what could not be read, and its architecture is still judged.
    let library = compile_old_driver_library(
        "doctor-old-driver-complete",
        &["-DWITH_INIT", "-DWITH_SHUTDOWN"],
    );
    let scenario = Scenario::new(Nvml::Library(library));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(finding(&report["findings"], "gpu.nvml")["status"], "pass");
    let device = finding(&report["findings"], "gpu.device");
    assert_eq!(device["status"], "warn", "{device:#}");
    assert!(
        message(device).contains("undefined symbol: nvmlDeviceGetMemoryInfo_v2"),
        "{}",
        message(device)
    );
    let gpu = &profile(&report, "pytorch-2.8")["gpus"][0];
    assert_eq!(gpu["compute_capability"], "7.0");
    assert_eq!(
        finding(&gpu["findings"], "gpu.torch-arch")["status"],
        "pass"
    );
    assert_eq!(
        finding(&gpu["findings"], "driver.cuda")["status"],
        "fail",
        "driver 418 is below CUDA 12's floor"
    );
}

// ---------------------------------------------------------------------------------------
// No NVIDIA stack at all, and the real daemon
// ---------------------------------------------------------------------------------------

#[test]
fn no_nvidia_stack_doctor_still_works_and_says_so() {
    let scenario = Scenario::new(Nvml::System);
    let (report, code) = scenario.doctor_json(&[]);
    let outcome = report["host"]["gpu"]["nvml"]["outcome"].as_str().unwrap();
    if outcome == "loaded" {
        // A machine with a real driver cannot show this scenario; it shows the driver.
        note("this host has a real NVIDIA driver: the no-NVIDIA-stack scenario cannot be shown");
        assert_eq!(finding(&report["findings"], "gpu.nvml")["status"], "pass");
        return;
    }
    assert_eq!(outcome, "library_not_found", "{:#}", report["host"]["gpu"]);
    assert_eq!(report["host"]["gpu"]["library"], "libnvidia-ml.so.1");
    let host = finding(&report["findings"], "gpu.nvml");
    assert_eq!(host["status"], "info", "no driver is a fact, not a failure");
    assert_eq!(
        message(host),
        "no NVIDIA driver on this host: only profiles without GPUs can run here"
    );
    let human = scenario.run(&["doctor"]);
    assert!(
        human.stdout.contains(
            "· NVIDIA\n  · no NVIDIA driver on this host: only profiles without GPUs can run here\n"
        ),
        "{}",
        human.stdout
    );
    assert_eq!(human.code, code);

    // A GPU profile cannot run here, whatever the daemon says.
    let (gpu_report, gpu_code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&gpu_report, "pytorch-2.8");
    let gpus = finding(&pytorch["findings"], "profile.gpus");
    assert_eq!(gpus["status"], "fail");
    assert!(
        message(gpus).starts_with("the profile asks for all GPUs, but this host has no usable GPU"),
        "{}",
        message(gpus)
    );
    assert_eq!(gpu_code, 1);

    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(
        ids_with_status(&report["findings"], "fail"),
        Vec::<&str>::new(),
        "{:#}",
        report["findings"]
    );
    assert_eq!(code, 0, "no GPU and no profile: nothing failed");
    // A CPU-only profile runs here.
    let (cpu, cpu_code) = scenario.doctor_json(&[&test_profile("cpu-only.toml")]);
    let cpu_profile = profile(&cpu, "cpu-only");
    assert_eq!(cpu_profile["verdict"], "ok", "{cpu_profile:#}");
    assert_eq!(cpu_profile["gpus"], serde_json::json!([]));
    assert_eq!(cpu_code, 0);
}

#[test]
fn real_daemon_facts_and_no_nvidia_runtime() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let version = crate::support::docker::daemon_status()
        .as_ref()
        .unwrap()
        .clone();
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    let engine = &report["host"]["engine"];
    assert_eq!(engine["status"], "reachable", "{engine:#}");
    assert_eq!(engine["server_version"], version.as_str(), "{engine:#}");
    assert!(
        engine["api_version"]
            .as_str()
            .is_some_and(|api| !api.is_empty())
    );
    assert!(
        engine["runtimes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|runtime| runtime.as_str().is_some_and(|name| name.contains("runc"))),
        "{engine:#}"
    );
    let endpoint = engine["endpoint"].as_str().unwrap();
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => assert_eq!(endpoint, host),
        _ => assert_eq!(endpoint, "unix:///var/run/docker.sock"),
    }
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "pass");
    assert!(
        message(reachable).starts_with(&format!("Docker {version} at {endpoint} (API ")),
        "{}",
        message(reachable)
    );
    assert_eq!(
        finding(&report["findings"], "docker.cgroup")["status"],
        "info"
    );
    let gpu_support = finding(&report["findings"], "docker.gpu-support");
    let registered = engine["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|runtime| runtime == "nvidia");
    if registered {
        assert_eq!(gpu_support["status"], "pass", "{gpu_support:#}");
    } else {
        assert_ne!(
            gpu_support["facts"]["gpu_support"]["via"], "runtime",
            "no `nvidia` runtime is registered: {gpu_support:#}"
        );
    }
    assert_gpu_runtime_verdict(&report, profile(&report, "pytorch-2.8"));
}

#[test]
fn missing_docker_socket_fails_fast() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let socket = scenario.path().join("docker.sock");
    let scenario = scenario.docker_host(format!("unix://{}", socket.display()));
    let output = scenario.run(&["doctor", "--json", "pytorch-2.8"]);
    assert!(
        output.elapsed < Duration::from_secs(3),
        "a missing socket is known at once, took {:?}",
        output.elapsed
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    let report = output.json();
    assert_report_shape(&report);
    assert_eq!(report["host"]["engine"]["status"], "unreachable");
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "fail");
    assert!(
        message(reachable).contains(socket.to_str().unwrap()),
        "the message names the socket: {}",
        message(reachable)
    );
    assert_eq!(reachable["facts"]["cause"], "socket_missing");
    assert!(
        hint(reachable).contains("DOCKER_HOST"),
        "{}",
        hint(reachable)
    );
    let pytorch = profile(&report, "pytorch-2.8");
    let daemon = finding(&pytorch["findings"], "profile.daemon");
    assert_eq!(daemon["status"], "fail");
    assert!(
        message(daemon).contains("nothing can start"),
        "{}",
        message(daemon)
    );
    // Issue 31: the fix is said once (under Docker), and names DOCKER_HOST as set.
    assert!(daemon["hint"].is_null(), "{daemon:#}");
    assert!(
        message(reachable).contains(&format!("(DOCKER_HOST=unix://{})", socket.display())),
        "{}",
        message(reachable)
    );
    assert_eq!(pytorch["verdict"], "fail");
    // The GPUs are still judged: the daemon being away changes nothing about them.
    assert!(
        gpu_rows(pytorch)
            .iter()
            .all(|(_, _, _, verdict)| verdict == "ok")
    );

    let human = scenario.run(&["doctor", "pytorch-2.8"]);
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .contains("✗ Docker\n  ✗ the engine is not reachable"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_daemon_that_never_answers_is_named_after_the_ping_timeout() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let socket = scenario.path().join("hung.sock");
    // Listening but never accepting: connections queue and no answer ever comes.
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let scenario = scenario.docker_host(format!("unix://{}", socket.display()));
    let (report, code) = scenario.doctor_json(&[]);
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "fail");
    assert_eq!(reachable["facts"]["cause"], "timeout", "{reachable:#}");
    assert!(
        message(reachable).contains("did not answer within 3 s"),
        "{}",
        message(reachable)
    );
    assert_eq!(code, 1);
}

// ---------------------------------------------------------------------------------------
// --strict, --matrix, --matrix-info
// ---------------------------------------------------------------------------------------

#[test]
fn strict_turns_a_warning_only_report_into_exit_1() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let notebook = test_profile("notebook-exposed.toml");
    let (report, code) = scenario.doctor_json(&[&notebook]);
    let exposed = finding(
        &profile(&report, "notebook-exposed")["findings"],
        "profile.service-exposed",
    );
    assert_eq!(exposed["status"], "warn");
    assert!(message(exposed).starts_with("Jupyter (container port 8888)"));
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(
        report["verdict"], "warn",
        "precondition: warnings and no failure: {report:#}"
    );
    assert_eq!(code, 0, "warnings alone exit 0");
    let (strict, strict_code) = scenario.doctor_json(&["--strict", &notebook]);
    assert_eq!(strict["verdict"], "warn");
    assert_eq!(strict_code, 1, "--strict turns warnings into exit 1");
    let human = scenario.run(&["doctor", "--strict", &notebook]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.ends_with(" 0 failed\n"), "{}", human.stdout);
}

const LAB_MATRIX: &str = r#"# Our lab's torch 2.8 cu128 build, rebuilt with Pascal kernels.
[[torch_build]]
torch = "2.8"
variant = "cu128"
targets = ["sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
status = "verified"
source = "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)"
read = "2026-11-20"
"#;

#[test]
fn user_matrix_row_changes_a_verdict() {
    let scenario = Scenario::new(Nvml::Stub("gtx-1080-ti.conf"));
    let torch_verdict = |report: &Value| {
        finding(
            &profile(report, "pytorch-2.8")["gpus"][0]["findings"],
            "gpu.torch-arch",
        )
        .clone()
    };
    let (bundled, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(torch_verdict(&bundled)["status"], "fail");

    scenario.write("lab.toml", LAB_MATRIX);
    let (overlaid, _) = scenario.doctor_json(&["--matrix", "lab.toml", "pytorch-2.8"]);
    let verdict = torch_verdict(&overlaid);
    assert_eq!(verdict["status"], "pass", "{verdict:#}");
    assert_eq!(
        verdict["facts"]["build_row"]["source"],
        "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)",
        "the verdict names the row it rests on"
    );
    assert!(
        overlaid["matrix"].as_str().unwrap().contains("lab.toml"),
        "{}",
        overlaid["matrix"]
    );

    // The same file as $XDG_CONFIG_HOME/envctl/matrix.toml is picked up without a flag.
    scenario.write("xdg/envctl/matrix.toml", LAB_MATRIX);
    let (user, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(torch_verdict(&user)["status"], "pass");
}

const BAD_MATRIX: &str = r#"[[torch_build]]
torch = "2.8"
varient = "cu128"
targets = ["sm_61"]
status = "verified"
source = "typo"
"#;

#[test]
fn malformed_matrix_is_exit_2_with_file_line_column() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write("bad.toml", BAD_MATRIX);
    for arguments in [
        &["doctor", "--matrix", "bad.toml"][..],
        &["doctor", "--json", "--matrix", "bad.toml", "pytorch-2.8"][..],
        &["doctor", "--matrix-info", "--matrix", "bad.toml"][..],
    ] {
        let output = scenario.run(arguments);
        assert_eq!(output.code, 2, "{arguments:?}: {}", output.stderr);
        assert_eq!(output.stdout, "", "nothing on stdout for an invalid matrix");
        assert!(
            output.stderr.contains("bad.toml:3:1"),
            "the unknown key is at its line and column: {}",
            output.stderr
        );
        assert!(
            output.stderr.contains("did you mean `variant`?"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains("missing field `variant`"),
            "{}",
            output.stderr
        );
    }
}

#[test]
fn malformed_matrix_problems_are_reported_once() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write("bad.toml", BAD_MATRIX);
    let output = scenario.run(&["doctor", "--matrix", "bad.toml"]);
    assert_eq!(output.code, 2);
    // Each problem is drawn once with its source line, as `profiles check` does; the
    // closing `error:` line sums them up instead of listing them all again.
    assert_eq!(
        output.stderr.matches("did you mean `variant`?").count(),
        1,
        "{}",
        output.stderr
    );
}

#[test]
fn missing_matrix_file_is_named_as_a_matrix() {
    let scenario = Scenario::new(Nvml::System);
    let output = scenario.run(&["doctor", "--matrix", "no-such-matrix.toml"]);
    assert_eq!(output.code, 2);
    assert_eq!(output.stdout, "");
    assert!(
        output.stderr.contains("no-such-matrix.toml"),
        "{}",
        output.stderr
    );
    assert!(
        !output.stderr.contains("profile"),
        "a matrix file is not a profile; the hint should not point at `profiles list`:\n{}",
        output.stderr
    );
}

#[test]
fn matrix_info_lists_date_and_sources() {
    let scenario = Scenario::new(Nvml::System);
    // --matrix-info only reads the matrix: no daemon, no NVML.
    let scenario = scenario.docker_host(format!(
        "unix://{}",
        Path::new("/nonexistent/envctl-doctor-test/docker.sock").display()
    ));
    let info = scenario.run(&["doctor", "--json", "--matrix-info"]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    let document = info.json();
    let matrix = &document["matrix"];
    let date = matrix["date"].as_str().unwrap();
    assert!(
        date.len() == 10
            && date.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }),
        "the matrix date is YYYY-MM-DD: {date}"
    );
    assert_eq!(
        matrix["origins"],
        serde_json::json!(["<bundled>/matrix.toml"])
    );
    let sources: Vec<&str> = matrix["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source.as_str().unwrap())
        .collect();
    assert!(sources.len() >= 10, "{sources:?}");
    assert!(
        sources
            .iter()
            .any(|source| source.contains("NVIDIA CUDA Toolkit Release Notes")),
        "{sources:?}"
    );
    let rows = |table: &str| {
        matrix["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["table"] == table)
            .unwrap_or_else(|| panic!("no table {table} in {matrix:#}"))["rows"]
            .as_u64()
            .unwrap()
    };
    for table in [
        "cuda_driver",
        "cuda_targets",
        "torch_build",
        "gpu",
        "branch_lifecycle",
    ] {
        assert!(rows(table) > 0, "{table}");
    }

    let human = scenario.run(&["doctor", "--matrix-info"]);
    assert_eq!(human.code, 0);
    assert!(
        human
            .stdout
            .starts_with(&format!("compatibility matrix, sources read {date}\n")),
        "{}",
        human.stdout
    );
    // An installed binary has no source tree: the bundled matrix is named as such
    // (issue 17).
    assert!(human.stdout.contains("files: <bundled>/matrix.toml\n"));
    let (_, listed) = human.stdout.split_once("\nsources:\n").unwrap();
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(listed.len(), sources.len());
    assert!(listed.iter().all(|line| line.starts_with("  - ")));
    let torch_build_line = human
        .stdout
        .lines()
        .find(|line| line.starts_with("torch_build "))
        .unwrap_or_else(|| panic!("no torch_build row:\n{}", human.stdout));
    assert_eq!(
        torch_build_line.split_whitespace().collect::<Vec<_>>(),
        ["torch_build", rows("torch_build").to_string().as_str()]
    );

    // A user matrix shows up among the files and the sources.
    scenario.write("lab.toml", LAB_MATRIX);
    let with_lab = scenario
        .run(&["doctor", "--json", "--matrix-info", "--matrix", "lab.toml"])
        .json();
    assert_eq!(
        with_lab["matrix"]["origins"],
        serde_json::json!(["<bundled>/matrix.toml", "lab.toml"])
    );
    assert!(
        with_lab["matrix"]["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|source| source == "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)")
    );
}

// ---------------------------------------------------------------------------------------
// Which profiles are checked
// ---------------------------------------------------------------------------------------

#[test]
fn no_profile_argument_checks_the_project_profiles() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    scenario.write(
        "envctl/train.toml",
        "extends = \"pytorch-2.8\"\nuser = \"1000:1000\"\nmemory = \"32g\"\n",
    );
    scenario.write(
        "envctl/notebook.toml",
        "image = \"python:3.12-slim\"\nuser = \"1000:1000\"\nmemory = \"4g\"\nmounts = [\"./:/work\"]\n",
    );
    scenario.write("envctl/README.md", "not a profile\n");
    // A user profile is found by name, but is not the project's: doctor leaves it alone.
    scenario.write("xdg/envctl/profiles/personal.toml", "image = \"busybox\"\n");

    let (report, _) = scenario.doctor_json(&[]);
    let mut found: Vec<(&str, &str)> = report["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|profile| {
            (
                profile["name"].as_str().unwrap(),
                profile["file"].as_str().unwrap(),
            )
        })
        .collect();
    found.sort_unstable();
    assert_eq!(
        found,
        [
            ("notebook", "envctl/notebook.toml"),
            ("train", "envctl/train.toml")
        ]
    );
    let train = profile(&report, "train");
    assert_eq!(
        train["image"],
        "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime"
    );
    assert_eq!(gpu_rows(train).len(), 8, "`extends` brings gpus = \"all\"");
    assert_eq!(profile(&report, "notebook")["gpus"], serde_json::json!([]));

    let human = scenario.run(&["doctor"]);
    assert!(
        human
            .stdout
            .contains("Profile train (pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime)")
    );
    assert!(human.stdout.contains("Profile notebook (python:3.12-slim)"));
    assert!(!human.stdout.contains("personal"));

    // A broken project profile stops doctor: exit 2, at its line.
    scenario.write("envctl/broken.toml", "image = \"x\"\ngpus = \"al\"\n");
    let broken = scenario.run(&["doctor"]);
    assert_eq!(broken.code, 2, "{}", broken.stderr);
    assert!(
        broken.stderr.contains("envctl/broken.toml:2:8"),
        "{}",
        broken.stderr
    );
}

#[test]
fn invalid_profile_argument_is_exit_2_with_diagnostics() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    scenario.write(
        "team.toml",
        "image = \"pytorch/pytorch:2.8.0\"\ngpus = \"all\"\nshm_sise = \"8g\"\nmemory = \"lots\"\n",
    );
    for arguments in [
        &["doctor", "team.toml"][..],
        &["doctor", "--json", "team.toml"][..],
        &["doctor", "pytorch-2.8", "team.toml"][..],
    ] {
        let output = scenario.run(arguments);
        assert_eq!(output.code, 2, "{arguments:?}");
        // The host and the valid profiles are still reported (issue 15, item 6); the
        // invalid one is named in the report, its problems on stderr.
        assert!(output.stdout.contains("team.toml"), "{}", output.stdout);
        if arguments.contains(&"pytorch-2.8") {
            assert!(output.stdout.contains("pytorch-2.8"), "{}", output.stdout);
        }
        assert!(
            output.stderr.contains(" --> team.toml:3:1"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains("did you mean `shm_size`?"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains(" --> team.toml:4:10"),
            "{}",
            output.stderr
        );
        assert!(
            output
                .stderr
                .contains("error: invalid profile: 2 problems in `team.toml`"),
            "{}",
            output.stderr
        );
    }

    let unknown = scenario.run(&["doctor", "no-such-profile"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stdout
            .contains("Profile no-such-profile (not judged)"),
        "{}",
        unknown.stdout
    );
    assert!(
        unknown
            .stderr
            .starts_with("error: profile `no-such-profile` not found"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("envctl profiles list"),
        "{}",
        unknown.stderr
    );
}

/// Issue 15, item 5: more CPUs or memory than the daemon's host has is a doctor failure with
/// the host's figure and a fix (before, doctor passed and `up` met the daemon's bare 400).
#[test]
fn cpus_and_memory_beyond_the_daemons_host_fail_with_its_figures() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let host_cpus = crate::support::docker::docker_stdout(["info", "--format", "{{.NCPU}}"]);
    let scenario = Scenario::new(Nvml::System);
    scenario.write(
        "envctl/huge.toml",
        "image = \"busybox:1\"\ncpus = 4096\nmemory = \"64t\"\n",
    );
    scenario.write(
        "envctl/fits.toml",
        "image = \"busybox:1\"\ncpus = 1\nmemory = \"64m\"\n",
    );
    let (report, code) = scenario.doctor_json(&["huge", "fits"]);
    assert_eq!(code, 1);
    let huge = profile(&report, "huge");
    let cpus = finding(&huge["findings"], "profile.cpus");
    assert_eq!(cpus["status"], "fail");
    assert!(
        message(cpus).contains(&format!("has {host_cpus} CPU")),
        "{cpus}"
    );
    assert!(
        hint(cpus).contains(&format!("cpus = {host_cpus} or less")),
        "{cpus}"
    );
    let memory = finding(&huge["findings"], "profile.memory");
    assert_eq!(memory["status"], "fail");
    assert!(message(memory).contains("GiB"), "{memory}");
    let fits = profile(&report, "fits");
    assert!(all_with_id(&fits["findings"], "profile.cpus").is_empty());
    assert!(all_with_id(&fits["findings"], "profile.memory").is_empty());
}

/// Issue 15, item 6: one invalid profile in ./envctl/ is reported on its own (exit 2, its
/// problems on stderr) and the host and the other profiles are still judged.
#[test]
fn an_invalid_profile_is_reported_beside_the_host_and_the_others() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write(
        "envctl/broken.toml",
        "image = \"busybox:1\"\nmemroy = \"1g\"\n",
    );
    scenario.write(
        "envctl/fine.toml",
        "image = \"busybox:1\"\nmemory = \"64m\"\n",
    );
    let human = scenario.run(&["doctor"]);
    assert_eq!(human.code, 2, "{}", human.stderr);
    assert!(
        human.stderr.contains("unknown key `memroy`"),
        "{}",
        human.stderr
    );
    assert!(human.stdout.contains("Docker"), "{}", human.stdout);
    assert!(
        human.stdout.contains("Profile fine (busybox:1)"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("Profile envctl/broken.toml (not judged)"),
        "{}",
        human.stdout
    );

    let json = scenario.run(&["doctor", "--json"]);
    assert_eq!(json.code, 2, "{}", json.stderr);
    let report = json.json();
    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["profiles"][0]["name"], "fine");
    let invalid = &report["invalid_profiles"][0];
    assert_eq!(invalid["profile"], "envctl/broken.toml");
    assert_eq!(invalid["diagnostics"][0]["line"], 2);
    assert!(
        invalid["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("memroy")
    );
}

/// NVML that loaded but could not count the GPUs is not "0 GPUs": doctor fails its
/// `gpu.nvml` line in NVML's words, a profile asking for GPUs is told that whether the
/// host has them is unknown, and `gpus = "optional"` is warned that it may run without.
#[test]
fn gpus_nvml_could_not_count_are_unknown_not_zero() {
    let scenario = Scenario::new(Nvml::Stub("count-fails.conf"));
    scenario.write(
        "envctl/two.toml",
        "image = \"busybox:1.36\"\ngpus = 2\n[stack]\ncuda = \"12.8\"\n",
    );
    scenario.write(
        "envctl/maybe.toml",
        "image = \"busybox:1.36\"\ngpus = \"optional\"\n",
    );
    let (report, code) = scenario.doctor_json(&["two", "maybe", "pytorch-2.8"]);
    assert_eq!(code, 1, "{report:#}");
    let nvml = finding(&report["findings"], "gpu.nvml");
    assert_eq!(nvml["status"], "fail", "{nvml:#}");
    assert!(
        message(nvml).contains("NVML could not count the GPUs")
            && !message(nvml).contains("0 GPUs"),
        "{nvml:#}"
    );
    for name in ["two", "pytorch-2.8"] {
        let gpus = finding(&profile(&report, name)["findings"], "profile.gpus");
        assert_eq!(gpus["status"], "fail", "{name}: {gpus:#}");
        assert!(message(gpus).contains("is unknown"), "{name}: {gpus:#}");
    }
    let optional = finding(&profile(&report, "maybe")["findings"], "profile.gpus");
    assert_eq!(optional["status"], "warn", "{optional:#}");
    assert!(message(optional).contains("unknown"), "{optional:#}");
}

/// A driver version NVML would not give leaves the driver-vs-CUDA check undone, and doctor
/// says so (`driver.cuda` warns) rather than pass a profile whose check never ran.
#[test]
fn a_driver_version_nvml_would_not_give_is_said_not_skipped() {
    let scenario = Scenario::new(Nvml::Stub("driver-version-fails.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    let profile = profile(&report, "pytorch-2.8");
    let unchecked = finding(&profile["findings"], "driver.cuda");
    assert_eq!(unchecked["status"], "warn", "{unchecked:#}");
    assert!(
        message(unchecked).contains("the driver version is unknown")
            && message(unchecked).contains("CUDA 12.8 was not checked"),
        "{unchecked:#}"
    );
    assert_ne!(profile["verdict"], "ok", "{profile:#}");
}
