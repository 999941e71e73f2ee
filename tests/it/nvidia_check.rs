//! `envctl exec TARGET nvidia-check`: the embedded scripts under real shells, and the whole
//! command against the real Docker daemon.
//!
//! - Without Docker: the shell half runs under `sh` (and busybox's and dash's when present)
//!   with the stand-in `python3` and `nvidia-smi` of `tests/fixtures/nvidia-check/stand-in`
//!   first on PATH, and its output parses; the Python half runs standalone with this
//!   machine's python3 and prints one document.
//! - With Docker: a busybox container made by `envctl up` (no GPU, no python) fails clearly
//!   and fast, in text and `--json`; then a test image built FROM the busybox test image with
//!   the stand-ins and the recorded scenarios (`/envctl-test/<scenario>/`) gives the
//!   parser's verdicts for a healthy 2×H100, an RTX 5090 with torch 2.6.0+cu124, torch without
//!   CUDA, a driver that differs from the host's (the host being the stub NVML library with a
//!   fixture), and a Python half that never answers (`--timeout 2`).
//!
//! The stand-in containers are started with `docker run` and an `envctl.profile` label rather
//! than `envctl up`, because `up` refuses GPU profiles on a daemon without an NVIDIA runtime;
//! the label makes nvidia-check resolve the profile (and its `gpus`) all the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::cuda_images::ImageBuild;
use crate::support::docker::{
    ContainerGuard, ImageGuard, TEST_LABEL, docker_stdout, require_daemon, run_with_timeout,
    test_image, unique_name,
};
use envctl::nvcheck;

/// No envctl run in these tests may take longer than this: a hang is a failure, not a
/// stuck test run.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn fixtures() -> PathBuf {
    crate::support::cuda_images::nvidia_check_fixtures()
}

// ---------------------------------------------------------------------------------------
// The scripts themselves, without Docker.

/// The shells on this machine to run the shell half under.
fn shells() -> Vec<Vec<String>> {
    let mut shells = vec![vec!["sh".to_string()]];
    for candidate in ["dash", "busybox"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {candidate}")])
            .output()
            .is_ok_and(|output| output.status.success());
        if found {
            let mut shell = vec![candidate.to_string()];
            if candidate == "busybox" {
                shell.push("sh".to_string());
            }
            shells.push(shell);
        } else if candidate == "busybox" {
            // busybox's sh is the strictest shell the script meets in images; CI has it.
            crate::support::docker::skip_or_panic(
                "no busybox: the shell half is not run under busybox sh",
                &crate::support::docker::current_test_name(),
                "`busybox` is not on PATH.\nFix: `sudo apt-get install busybox-static`.",
            );
        }
    }
    shells
}

/// Runs the embedded shell half under `shell` with the stand-ins first on PATH.
fn run_script(shell: &[String], scenario: &str, timeout_seconds: u64) -> (String, Duration) {
    let stand_in = fixtures().join("stand-in");
    let path = format!(
        "{}:{}",
        stand_in.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(&shell[0]);
    command
        .args(&shell[1..])
        .arg("-c")
        .arg(nvcheck::SHELL_SCRIPT)
        .arg("envctl-nvidia-check")
        .arg(nvcheck::PYTHON_SCRIPT)
        .arg(timeout_seconds.to_string())
        .arg("0")
        .env("PATH", path)
        .env("ENVCTL_TEST_FIXTURES", fixtures())
        .env("ENVCTL_TEST_SCENARIO", scenario)
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .env_remove("CUDA_VISIBLE_DEVICES");
    let started = Instant::now();
    let output = run_with_timeout(&mut command, Duration::from_secs(60)).unwrap();
    assert!(output.status.success(), "{shell:?}: {output:?}");
    (String::from_utf8(output.stdout).unwrap(), started.elapsed())
}

#[test]
fn the_shell_half_runs_under_posix_shells_and_its_output_parses() {
    for shell in shells() {
        let (stdout, _) = run_script(&shell, "h100", 60);
        let parsed = nvcheck::parse_output(&stdout);
        assert!(
            parsed.problems.is_empty(),
            "{shell:?}: {:?}",
            parsed.problems
        );
        let facts = parsed
            .shell
            .unwrap_or_else(|| panic!("{shell:?}: {stdout}"));
        assert!(facts.escaped, "{shell:?}");
        let smi = facts.nvidia_smi.unwrap();
        assert_eq!(smi.exit_status, Some(0));
        assert_eq!(
            smi.stdout.as_deref().unwrap(),
            std::fs::read_to_string(fixtures().join("h100/nvidia-smi.txt"))
                .unwrap()
                .trim_end()
        );
        assert_eq!(
            facts.environment["CUDA_DEVICE_ORDER"].as_deref(),
            Some("PCI_BUS_ID")
        );
        assert_eq!(facts.environment["CUDA_VISIBLE_DEVICES"], None);
        assert!(facts.ulimits.stack.is_some() && facts.ulimits.memlock.is_some());
        assert!(
            facts
                .python
                .as_deref()
                .unwrap()
                .ends_with("stand-in/python3"),
            "{shell:?}: {:?}",
            facts.python
        );
        let run = parsed.python_run.unwrap();
        assert_eq!((run.exit_status, run.timed_out), (Some(0), false));
        // The stand-in printed a stray line before the recorded document.
        let python = parsed.python.unwrap();
        assert_eq!(
            python.torch.unwrap().version.as_deref(),
            Some("2.8.0+cu128")
        );
    }
}

#[test]
fn the_shell_half_stops_a_python_that_never_answers() {
    for shell in shells() {
        let (stdout, elapsed) = run_script(&shell, "hang", 3);
        assert!(
            elapsed < Duration::from_secs(10),
            "{shell:?} took {elapsed:?}"
        );
        let parsed = nvcheck::parse_output(&stdout);
        let run = parsed
            .python_run
            .unwrap_or_else(|| panic!("{shell:?}: {stdout}"));
        assert!(run.timed_out, "{shell:?}: {run:?}");
        // The budget is what is left of the 3 s less a second; the shell part took up to 1 s.
        assert!(
            matches!(run.budget_seconds, Some(1 | 2)),
            "{shell:?}: {run:?}"
        );
        // nvidia-smi had no recording for this scenario: it failed, as on a driverless host.
        assert_eq!(
            parsed.shell.unwrap().nvidia_smi.unwrap().exit_status,
            Some(9)
        );
    }
}

/// Runs a python3 command: `None` (a loud skip) only when there is no python3 at all, or a
/// panic under `ENVCTL_REQUIRE_DOCKER`. A script that hangs or cannot start otherwise is a
/// failure: the watchdog is what these tests guard.
fn run_python(command: &mut Command, limit: Duration) -> Option<std::process::Output> {
    if let Err(error) = Command::new("python3").arg("--version").output() {
        crate::support::docker::skip_or_panic(
            "no python3",
            &crate::support::docker::current_test_name(),
            &format!("`python3 --version` failed: {error}\nFix: `sudo apt-get install python3`."),
        );
        return None;
    }
    Some(
        run_with_timeout(command, limit)
            .unwrap_or_else(|error| panic!("the Python half did not finish: {error}")),
    )
}

#[test]
fn the_python_half_runs_standalone_and_prints_one_document() {
    let mut command = Command::new("python3");
    command
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("crates/envctl-core/src/nvcheck/nvidia_check.py"),
        )
        .arg("--quick");
    let Some(output) = run_python(&mut command, Duration::from_secs(120)) else {
        return;
    };
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    // Exactly one JSON document, nothing around it.
    let document: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(document["schema_version"], 1);
    assert_eq!(document["quick"], true);
    let facts = nvcheck::python_document(&stdout).unwrap().unwrap();
    assert!(facts.python.unwrap().version.is_some());
    assert!(facts.torch.is_some());
}

/// Runs the Python half as envctl does (`-c SOURCE --envctl-wrapped`) with the fake torch of
/// `tests/fixtures/nvidia-check/fake-torch` importable; None without python3.
fn run_python_with_fake_torch(mode: &str) -> Option<String> {
    let mut command = Command::new("python3");
    command
        .args(
            nvcheck::python_command("python3", 30, false)
                .into_iter()
                .skip(1),
        )
        .env("PYTHONPATH", fixtures().join("fake-torch"))
        .env("ENVCTL_FAKE_TORCH", mode);
    let output = run_python(&mut command, Duration::from_secs(60))?;
    assert!(output.status.success(), "{output:?}");
    Some(String::from_utf8(output.stdout).unwrap())
}

fn judge_python(stdout: &str) -> Vec<envctl::checks::Finding> {
    let python = nvcheck::python_document(stdout)
        .unwrap()
        .unwrap_or_else(|| panic!("no report in: {stdout}"));
    let raw = nvcheck::RawReport {
        schema_version: nvcheck::SCHEMA_VERSION,
        python: Some(python),
        ..nvcheck::RawReport::default()
    };
    let bundled = envctl::ops::doctor::bundled_candidates();
    let candidates: Vec<envctl::compat::TorchCandidate<'_>> = bundled
        .iter()
        .map(|(name, torch, cuda)| envctl::compat::TorchCandidate::new(name, torch, *cuda))
        .collect();
    let expectations = nvcheck::Expectations {
        target: "envctl-test".into(),
        profile: None,
        host: nvcheck::HostDriver::Known {
            version: "575.57.08".into(),
            gpu_count: Some(1),
        },
        gpus: None,
        stack_torch: None,
        environment: Default::default(),
        given: Default::default(),
        daemon: Default::default(),
        matrix: envctl::compat::Matrix::bundled(),
        candidates: &candidates,
    };
    nvcheck::judge(&raw, &expectations)
}

/// A CUDA error in every tensor operation (an RTX 5090 under torch 2.6.0+cu124) ends up as
/// findings: the script records each error and still prints its one document.
#[test]
fn the_python_half_records_cuda_errors_and_still_reports() {
    let Some(stdout) = run_python_with_fake_torch("cuda") else {
        return;
    };
    assert!(stdout.contains(envctl::nvcheck::PYTHON_MARKER), "{stdout}");
    let findings = judge_python(&stdout);
    let status = |id: &str| {
        findings
            .iter()
            .find(|finding| finding.id == id)
            .unwrap_or_else(|| panic!("no {id} in {findings:#?}"))
            .status
    };
    use envctl::checks::Status;
    assert_eq!(status("torch.cuda-available"), Status::Pass);
    assert_eq!(status("gpu.torch-arch"), Status::Fail);
    assert_eq!(status("compute.kernel"), Status::Fail);
    assert_eq!(status("compute.copy-bandwidth"), Status::Warn);
    let arch = findings
        .iter()
        .find(|finding| finding.id == "gpu.torch-arch")
        .unwrap();
    // The capability warning torch raised was captured.
    assert!(arch.facts.contains_key("torch_warning"), "{arch:#?}");

    let Some(stdout) = run_python_with_fake_torch("cpu") else {
        return;
    };
    let findings = judge_python(&stdout);
    let build = findings
        .iter()
        .find(|finding| finding.id == "torch.cuda-build")
        .unwrap();
    assert_eq!(build.status, Status::Fail);
    assert!(
        build
            .message
            .contains("torch 2.8.0+cpu is a CPU-only build")
    );
}

// ---------------------------------------------------------------------------------------
// The command against the real daemon.

/// One test's working directory with `./envctl/<profile>.toml`.
struct Workspace {
    directory: tempfile::TempDir,
    profile: String,
}

/// The findings of a `--json` report with this id.
fn findings<'a>(report: &'a Value, id: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == id)
        .collect()
}

fn status(report: &Value, id: &str) -> String {
    let found = findings(report, id);
    assert!(!found.is_empty(), "no {id} finding in {report:#}");
    found[0]["status"].as_str().unwrap().to_string()
}

impl Workspace {
    /// `text` with this workspace's random profile name replaced, for snapshots.
    fn redact(&self, text: &str) -> String {
        text.replace(&self.profile, "[PROFILE]")
    }

    fn new(prefix: &str, image: &str, profile_rest: &str) -> Workspace {
        let profile = unique_name(prefix);
        let directory = tempfile::Builder::new()
            .prefix("envctl-nvidia-check-test-")
            .tempdir()
            .unwrap();
        for folder in ["envctl", "xdg", "home"] {
            std::fs::create_dir_all(directory.path().join(folder)).unwrap();
        }
        std::fs::write(
            directory
                .path()
                .join("envctl")
                .join(format!("{profile}.toml")),
            format!("image = \"{image}\"\n{profile_rest}"),
        )
        .unwrap();
        Workspace { directory, profile }
    }

    /// `envctl --color never ARGUMENTS…` in the workspace, the NVML stub loaded with
    /// `host` (a fixture) when given.
    fn envctl(&self, arguments: &[&str], host: Option<&Path>) -> Run {
        self.envctl_timed(arguments, host).0
    }

    /// [`Workspace::envctl`] and how long it took.
    fn envctl_timed(&self, arguments: &[&str], host: Option<&Path>) -> (Run, Duration) {
        let envctl = Envctl::in_folder(self.directory.path())
            .timeout(HANG_GUARD)
            .args(["--color", "never"])
            .args(arguments);
        match host {
            Some(host) => envctl.nvml_file(host),
            None => envctl,
        }
        .run_timed()
    }
}

#[test]
fn a_container_without_gpu_or_python_fails_clearly_and_fast() {
    if !require_daemon() {
        return;
    }
    let workspace = Workspace::new("nvcheck-plain", &test_image(), "");
    let _container = ContainerGuard::new(format!("envctl-{}", workspace.profile));
    let up = workspace.envctl(&["up", &workspace.profile], None);
    assert_eq!(up.code, 0, "envctl up: {up}");

    let (run, elapsed) =
        workspace.envctl_timed(&["exec", &workspace.profile, "nvidia-check"], None);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        elapsed < Duration::from_secs(60),
        "after {elapsed:?}: {run}"
    );
    assert!(run.stdout.contains("✗ GPU passthrough"), "{run}");
    assert!(
        run.stdout.contains("no NVIDIA device files (/dev/nvidia0"),
        "{run}"
    );
    assert!(
        run.stdout
            .contains(&format!("profile `{}` asks for no GPU", workspace.profile)),
        "{run}"
    );
    assert!(
        run.stdout.contains("nvidia-smi is not in the container"),
        "{run}"
    );
    assert!(
        run.stdout.contains("no python3 or python in the container"),
        "{run}"
    );
    assert!(run.stdout.contains("/dev/shm is "), "{run}");
    assert!(run.stdout.contains(" failed"), "{run}");

    let run = workspace.envctl(
        &["--json", "exec", &workspace.profile, "nvidia-check"],
        None,
    );
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["profile"], workspace.profile.as_str());
    assert_eq!(status(&report, "gpu.devices"), "fail");
    assert_eq!(status(&report, "python.interpreter"), "warn");
    assert_eq!(
        findings(&report, "gpu.devices")[0]["section"],
        "GPU passthrough"
    );
    let facts = &report["facts"];
    assert_eq!(facts["schema_version"], 1);
    assert_eq!(facts["run"]["runner"], "sh");
    assert_eq!(facts["shell"]["devices"], serde_json::json!([]));
    assert_eq!(facts["shell"]["python"], Value::Null);
    assert_eq!(facts["run"]["timeout_seconds"], 120);
}

/// A test image: the busybox test image with the stand-in `python3` and `nvidia-smi` and
/// the recorded scenarios under /envctl-test. Removed when dropped.
fn stand_in_image() -> ImageGuard {
    ImageBuild::new()
        .stand_in()
        .scenarios(&["h100", "rtx-5090-torch-2.6", "torch-cpu"])
        .build(&format!(
            "{}:latest",
            unique_name("envctl-test/nvidia-check")
        ))
}

/// Starts a container of the stand-in image playing `scenario`, labelled with the
/// workspace's profile, with device files for two GPUs, NVIDIA's recommended stack limit
/// and a small locked-memory limit (so the memlock warning shows).
fn start_scenario(image: &ImageGuard, workspace: &Workspace, scenario: &str) -> ContainerGuard {
    let guard = ContainerGuard::unique("envctl-nvcheck");
    docker_stdout([
        "run",
        "--detach",
        "--name",
        guard.name(),
        "--label",
        &format!("envctl.profile={}", workspace.profile),
        "--label",
        TEST_LABEL,
        "--env",
        &format!("ENVCTL_TEST_SCENARIO={scenario}"),
        "--env",
        "NVIDIA_VISIBLE_DEVICES=all",
        "--env",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        "--shm-size",
        "2g",
        // NVIDIA recommends memlock=-1, but an unprivileged daemon (CI) may not raise the
        // limit: a small fixed one is allowed everywhere and keeps the output the same.
        "--ulimit",
        "memlock=65536:65536",
        "--ulimit",
        "stack=67108864:67108864",
        image.reference(),
        "sh",
        "-c",
        // Plain files stand in for the device nodes: the check lists them, it opens none.
        "touch /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl /dev/nvidia-uvm && exec sleep 600",
    ]);
    // The device files exist once the container's command has run.
    let deadline = Instant::now() + Duration::from_secs(30);
    while docker_stdout([
        "exec",
        guard.name(),
        "sh",
        "-c",
        "ls /dev/nvidia-uvm 2>/dev/null || true",
    ])
    .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the scenario container did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    guard
}

const GPU_PROFILE: &str = "gpus = \"all\"\nshm_size = \"2g\"\n";

#[test]
fn stand_in_scenarios_give_the_parsers_verdicts() {
    if !require_daemon() {
        return;
    }
    let image = stand_in_image();
    let host_h100 = fixtures().join("host-2x-h100.conf");
    a_healthy_h100_passes_and_a_driver_mismatch_fails(&image, &host_h100);
    an_rtx_5090_with_an_old_torch_gets_the_classic_message(&image);
    torch_without_cuda_fails_its_cuda_build_check(&image, &host_h100);
}

/// A healthy 2×H100 passes in text and in JSON (either place of `--json`), and fails once
/// the host's driver differs from the container's.
fn a_healthy_h100_passes_and_a_driver_mismatch_fails(image: &ImageGuard, host_h100: &Path) {
    // A healthy 2×H100 with torch 2.8.0+cu128, as the profile's [stack] says.
    let workspace = Workspace::new(
        "nvcheck-h100",
        image.reference(),
        &format!("{GPU_PROFILE}[stack]\ntorch = \"2.8.0+cu128\"\n"),
    );
    let container = start_scenario(image, &workspace, "h100");
    let run = workspace.envctl(&["exec", container.name(), "nvidia-check"], Some(host_h100));
    assert_eq!(run.code, 0, "{run}");
    for expected in [
        "✓ GPU passthrough",
        "nvidia-smi sees 2 × NVIDIA H100 80GB HBM3, driver 570.124.06",
        "the driver inside is the host's (570.124.06)",
        "2 GPUs visible, as profile",
        "torch 2.8.0+cu128 has sm_90 kernels for sm_90 (Hopper",
        "float32 matmul matches the CPU result",
        "/dev/shm is 2.0 GiB",
        "locked memory (ulimit -l) is limited to 64 KiB",
        "stack size (ulimit -s) is 64 MiB",
        "NCCL 2.27.3 for the 2 GPUs",
        " 0 failed",
    ] {
        assert!(
            run.stdout.contains(expected),
            "missing `{expected}`:\n{run}"
        );
    }
    insta::assert_snapshot!("healthy_h100", workspace.redact(&run.stdout));

    // The same container, `--json --quick`: one document, the run's options in its facts.
    let run = workspace.envctl(
        &[
            "--json",
            "exec",
            container.name(),
            "nvidia-check",
            "--quick",
            "--timeout",
            "60",
        ],
        Some(host_h100),
    );
    assert_eq!(run.code, 0, "{run}");
    let report = run.json();
    assert_eq!(report["schema_version"], 1);
    // Warnings only (the small memlock limit): the verdict says so, the exit code is 0.
    assert_eq!(report["verdict"], "warn");
    assert_eq!(report["facts"]["run"]["quick"], true);
    assert_eq!(report["facts"]["run"]["timeout_seconds"], 60);
    assert_eq!(report["expectations"]["host"]["version"], "570.124.06");
    assert_eq!(status(&report, "gpu.count"), "pass");
    // Issue 40: `--json` after the name, as `envctl nvidia-check --json` takes it, is the
    // same document (it was refused as "not one of its options").
    let after = workspace.envctl(
        &[
            "exec",
            container.name(),
            "nvidia-check",
            "--json",
            "--quick",
            "--timeout",
            "60",
        ],
        Some(host_h100),
    );
    assert_eq!(after.code, 0, "{after}");
    let after = after.json();
    assert_eq!(after["schema_version"], 1);
    assert_eq!(after["verdict"], report["verdict"]);
    assert_eq!(after["facts"]["run"], report["facts"]["run"]);
    assert_eq!(after["findings"], report["findings"]);

    // The host's driver (NVML) differs from the one the container sees.
    let run = workspace.envctl(
        &["--json", "exec", container.name(), "nvidia-check"],
        Some(&fixtures().join("host-2x-h100-r580.conf")),
    );
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    let mismatch = findings(&report, "gpu.driver-match")[0];
    assert_eq!(mismatch["status"], "fail");
    assert_eq!(
        mismatch["message"],
        "the container sees driver 570.124.06, but the host runs 580.95.05"
    );
    drop(container);
}

/// An RTX 5090 with torch 2.6.0+cu124: the classic message, a bundled profile in the hint.
fn an_rtx_5090_with_an_old_torch_gets_the_classic_message(image: &ImageGuard) {
    let workspace = Workspace::new("nvcheck-5090", image.reference(), GPU_PROFILE);
    let container = start_scenario(image, &workspace, "rtx-5090-torch-2.6");
    let host_5090 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/rtx-5090.conf");
    let run = workspace.envctl(
        &["exec", container.name(), "nvidia-check"],
        Some(&host_5090),
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout.contains(
            "✗ sm_120 is not compatible with the current PyTorch installation: torch 2.6.0+cu124 has kernels only for"
        ),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("hint: this image's torch 2.6.0+cu124 has no kernels for sm_120: use profile `pytorch-2."),
        "{run}"
    );
    assert!(run.stdout.contains("no kernel image is available"), "{run}");
    // Two device files but one GPU in the recording: the count still follows nvidia-smi.
    insta::assert_snapshot!("rtx_5090_torch_2_6", workspace.redact(&run.stdout));
    let report = workspace
        .envctl(
            &["--json", "exec", container.name(), "nvidia-check"],
            Some(&host_5090),
        )
        .json();
    let arch = findings(&report, "gpu.torch-arch")[0];
    assert_eq!(arch["status"], "fail");
    assert_eq!(arch["section"], "Architectures");
    assert!(
        arch["hint"]
            .as_str()
            .unwrap()
            .contains("use profile `pytorch-2.")
    );
    drop(container);
}

/// torch without CUDA fails its CUDA-build check; the devices still pass.
fn torch_without_cuda_fails_its_cuda_build_check(image: &ImageGuard, host_h100: &Path) {
    let workspace = Workspace::new("nvcheck-cpu", image.reference(), GPU_PROFILE);
    let container = start_scenario(image, &workspace, "torch-cpu");
    let run = workspace.envctl(
        &["--json", "exec", container.name(), "nvidia-check"],
        Some(host_h100),
    );
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    assert_eq!(status(&report, "torch.cuda-build"), "fail");
    assert!(
        findings(&report, "torch.cuda-build")[0]["message"]
            .as_str()
            .unwrap()
            .contains("torch 2.8.0+cpu is a CPU-only build")
    );
    assert_eq!(status(&report, "gpu.devices"), "pass");
    assert!(findings(&report, "compute.matmul").is_empty());
}

#[test]
fn a_python_that_never_answers_is_stopped_by_the_timeout() {
    if !require_daemon() {
        return;
    }
    let image = stand_in_image();
    let workspace = Workspace::new("nvcheck-hang", image.reference(), GPU_PROFILE);
    let container = start_scenario(&image, &workspace, "hang");
    let (run, elapsed) = workspace.envctl_timed(
        &["exec", container.name(), "nvidia-check", "--timeout", "2"],
        None,
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(
        elapsed < Duration::from_secs(15),
        "after {elapsed:?}: {run}"
    );
    assert!(run.stdout.contains("timeout"), "{run}");
    assert!(run.stdout.contains("--timeout"), "{run}");
    // What the shell half gathered before is still judged.
    assert!(run.stdout.contains("device files for 2 GPUs"), "{run}");

    let run = workspace.envctl(
        &[
            "--json",
            "exec",
            container.name(),
            "nvidia-check",
            "--timeout",
            "2",
        ],
        None,
    );
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    assert_eq!(status(&report, "nvidia-check.timeout"), "fail");
}

/// An image without `sh` (and without python): exec answers "executable file not found";
/// nvidia-check tries python3 and python directly, then says it cannot run there.
#[test]
fn an_image_without_a_shell_is_named_not_crashed_on() {
    if !require_daemon() {
        return;
    }
    let image = ImageBuild::new()
        .step(r#"RUN ["/bin/busybox", "rm", "-f", "/bin/sh", "/bin/ash"]"#)
        .build(&format!("{}:latest", unique_name("envctl-test/no-shell")));
    let container = ContainerGuard::unique("envctl-nvcheck-no-shell");
    docker_stdout([
        "run",
        "--detach",
        "--name",
        container.name(),
        "--label",
        TEST_LABEL,
        image.reference(),
        "/bin/busybox",
        "sleep",
        "600",
    ]);
    let workspace = Workspace::new("nvcheck-no-shell", image.reference(), "");
    let run = workspace.envctl(&["--json", "exec", container.name(), "nvidia-check"], None);
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    assert_eq!(status(&report, "nvidia-check.report"), "fail");
    assert!(
        findings(&report, "nvidia-check.report")[0]["message"]
            .as_str()
            .unwrap()
            .contains("neither `sh` nor `python3`/`python`"),
        "{report:#}"
    );
    assert_eq!(report["facts"]["run"]["shell_missing"], true);
}

#[test]
fn up_check_runs_the_check_once_the_container_started() {
    if !require_daemon() {
        return;
    }
    let workspace = Workspace::new("up-check", &test_image(), "memory = \"64m\"\n");
    let _container = ContainerGuard::new(format!("envctl-{}", workspace.profile));
    let run = workspace.envctl(&["up", &workspace.profile, "--check", "--json"], None);
    assert_eq!(
        run.code, 1,
        "no GPU here: the check fails and up says so: {}",
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("one JSON document ({error}): {}", run.stdout));
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["container"], format!("envctl-{}", workspace.profile));
    assert_eq!(report["verdict"], "fail");
    let running = docker_stdout([
        "inspect",
        "--format",
        "{{.State.Running}}",
        &format!("envctl-{}", workspace.profile),
    ]);
    assert_eq!(
        running.trim(),
        "true",
        "the container stays up for the user to look at"
    );
}

/// Issue 31: a `gpus = "optional"` container started on a host without a driver (its
/// `DeviceRequests` null) is told so, with the real reason, whichever host judges it: no
/// driver → the driver; a stand-in 8-GPU host → created without GPUs, recreate it. Never
/// a daemon-reload on a cgroupfs daemon, never lost GPUs or MIG. The hint's command runs.
#[test]
fn an_optional_container_started_without_gpus_is_told_why() {
    if !require_daemon() {
        return;
    }
    let workspace = Workspace::new("nvcheck-optional", &test_image(), "gpus = \"optional\"\n");
    let container = ContainerGuard::new(format!("envctl-{}", workspace.profile));
    let no_driver = crate::support::nvml::fixture("driver-not-loaded.conf");
    let up = workspace.envctl(&["up", &workspace.profile], Some(&no_driver));
    assert_eq!(up.code, 0, "envctl up: {up}");
    assert_eq!(
        docker_stdout([
            "inspect",
            "--format",
            "{{json .HostConfig.DeviceRequests}}",
            container.name()
        ]),
        "null",
        "optional met no GPU"
    );
    let cgroup_driver = docker_stdout(["info", "--format", "{{.CgroupDriver}}"]);

    let run = workspace.envctl(
        &["--json", "exec", &workspace.profile, "nvidia-check"],
        Some(&no_driver),
    );
    let report = run.json();
    let hint = findings(&report, "gpu.devices")[0]["hint"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        hint.contains(
            "`gpus = \"optional\"` met no GPU, because this host has no usable NVIDIA driver"
        ),
        "{hint}"
    );
    assert!(
        !hint.contains("daemon-reload") && !hint.contains("gpus = \"all\""),
        "{hint}"
    );

    let eight = crate::support::nvml::fixture("healthy-8x-h100.conf");
    let run = workspace.envctl(
        &["--json", "exec", &workspace.profile, "nvidia-check"],
        Some(&eight),
    );
    let report = run.json();
    for id in ["gpu.devices", "gpu.count"] {
        let hint = findings(&report, id)[0]["hint"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(hint.contains("created without GPUs"), "{id}: {hint}");
        assert!(!hint.contains("MIG"), "{id}: {hint}");
        if cgroup_driver != "systemd" {
            assert!(!hint.contains("daemon-reload"), "{id}: {hint}");
        }
        assert!(
            hint.contains(&format!("`envctl up {} --recreate`", workspace.profile)),
            "{id}: {hint}"
        );
    }
    // The hint's command runs (here, without GPUs to give, it keeps the container as is).
    let recreate = workspace.envctl(&["up", &workspace.profile, "--recreate"], Some(&no_driver));
    assert_eq!(recreate.code, 0, "{recreate}");
}
