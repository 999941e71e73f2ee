//! `envctl nvidia-check` without a container (issue 29, item 5): the same scripts run in
//! envctl's own environment, with the same document and exit codes as in a container.
//! Inside a Slurm job it is checked in `tests/it/slurm.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::cli::Envctl;
use crate::support::nvml;

#[test]
fn the_check_runs_here_with_the_same_document_and_exit_codes() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/two.toml"),
        "image = \"busybox:latest\"\ngpus = 2\n",
    )
    .unwrap();
    let run = Envctl::in_folder(folder.path())
        .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            nvml::fixture("healthy-8x-h100.conf"),
        )
        .env_remove("SLURM_JOB_ID")
        .args([
            "--json",
            "nvidia-check",
            "--quick",
            "--timeout",
            "60",
            "--profile",
            "two",
        ])
        .run();
    let report = run.json();
    assert_eq!(report["schema_version"], 1, "{}", run.stdout);
    assert_eq!(report["ran"], "here");
    assert!(report["container"].is_null());
    assert_eq!(report["profile"], "two");
    for key in ["verdict", "matrix", "findings", "expectations", "facts"] {
        assert!(!report[key].is_null(), "no `{key}`: {}", run.stdout);
    }
    // The shell half ran here: its report was read, whatever this machine has.
    assert!(!report["facts"]["shell"].is_null(), "{}", run.stdout);
    let findings = report["findings"].as_array().unwrap();
    // Outside a Slurm job there is no allocation to check.
    assert!(findings.iter().all(|finding| finding["id"] != "slurm.gpus"));
    // The profile asks for two GPUs; this test machine has none to see: a failure, exit 1,
    // and the hints name commands to run here, never `envctl exec`.
    assert_eq!(report["verdict"], "fail", "{}", run.stdout);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for finding in findings {
        let hint = finding["hint"].as_str().unwrap_or_default();
        assert!(!hint.contains("envctl exec  "), "{hint}");
    }
    // A profile that does not resolve is refused before anything runs.
    let missing = Envctl::in_folder(folder.path())
        .args(["nvidia-check", "--profile", "nope"])
        .run();
    // A name that names nothing: 1, as `docker exec nosuch` (issue 40).
    assert_eq!(missing.code, 1, "{}", missing.stderr);
}
