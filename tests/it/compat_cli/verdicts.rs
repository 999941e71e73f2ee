//! `envctl compat` verdicts for x86-64 hosts: architecture support of a torch build, one
//! verdict per GPU on a mixed host, and the rows of the matrix (derived, secondary, dropped,
//! build-script lists, new torch versions) saying what they are.

use super::*;

#[test]
fn pascal_with_a_cu128_build_fails_and_names_the_cu126_profile() {
    let (code, report, _) = compat(&[
        "--profile",
        "pytorch-2.8",
        "--driver",
        "570.124.06",
        "--gpu",
        "GTX 1080 Ti",
    ]);
    assert_eq!(code, 1);
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["verdict"], "fail");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .starts_with("sm_61 is not compatible with the current PyTorch installation")
    );
    assert!(
        torch["hint"]
            .as_str()
            .unwrap()
            .contains("pytorch-2.8-cu126")
    );
}

#[test]
fn blackwell_with_an_old_torch_fails() {
    let (code, report, _) = compat(&[
        "--image-cuda",
        "12.4",
        "--torch",
        "2.6.0+cu124",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 1);
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .contains("sm_120 is not compatible")
    );
}

#[test]
fn mixed_host_gets_one_verdict_per_gpu() {
    let (code, report, _) = compat(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "580.65.06",
        "--cc",
        "9.0",
        "--cc",
        "7.0",
    ]);
    assert_eq!(code, 1);
    let verdicts: Vec<&str> = report["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| gpu["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["ok", "fail"], "CUDA 13 dropped sm_70: {report}");
}

/// cu129 builds (download.pytorch.org) are said as the sources state them: 2.11 has one;
/// 2.12 from 2.12.1 only (the maintainer's statement is of 2.12.1), so 2.12.0 has none; 2.13's
/// rests on a statement of intent and is not claimed.
#[test]
fn cu129_builds_are_what_the_sources_state() {
    let message = |torch: &str| {
        let (_, report, _) = compat(&["--torch", torch, "--driver", "580.65.06", "--gpu", "H100"]);
        let torch_arch = finding(&report["gpus"][0], "gpu.torch-arch");
        assert_eq!(torch_arch["status"], "warn", "{torch}: {torch_arch}");
        torch_arch["message"].as_str().unwrap().to_string()
    };
    let eleven = message("2.11.0+cu129");
    assert!(
        eleven.contains("has a cu129 build, but its arch list is not in"),
        "{eleven}"
    );
    let patched = message("2.12.1+cu129");
    assert!(
        patched.contains("torch 2.12 has cu129 builds from 2.12.1, but their arch list is not in"),
        "{patched}"
    );
    let first = message("2.12.0+cu129");
    assert!(
        first.contains("torch 2.12.0+cu129 has no cu129 build: cu129 wheels of torch 2.12 exist only from 2.12.1"),
        "{first}"
    );
    let intent = message("2.13.0+cu129");
    assert!(
        intent.contains("torch 2.13 has no x86_64 cu129 build"),
        "{intent}"
    );
}

/// The text line says what a verdict rests on: a derived row is `(derived: not measured)`,
/// a secondary one says so; a measured row says nothing more.
#[test]
fn derived_and_secondary_rows_say_so_in_the_text() {
    let (code, stdout, stderr) = compat_text(&[
        "--torch",
        "2.6.0+cu118",
        "--driver",
        "580.65.06",
        "--gpu",
        "H100",
    ]);
    assert_eq!(code, 0, "{stderr}");
    // Lines wrap at the terminal's width: compare the words.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "has sm_90 kernels for sm_90 (Hopper, compute capability 9.0) (derived: not measured)"
        ),
        "{stdout}"
    );
    let (_, stdout, _) = compat_text(&[
        "--torch",
        "2.7.1+cu128",
        "--driver",
        "580.65.06",
        "--gpu",
        "H100",
    ]);
    assert!(stdout.contains("(secondary: "), "{stdout}");
    let (_, stdout, _) = compat_text(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "580.65.06",
        "--gpu",
        "H100",
    ]);
    assert!(
        !stdout.contains("derived") && !stdout.contains("secondary"),
        "{stdout}"
    );
}

/// A user matrix's UNVERIFIED row is not used, and the verdict that would have rested on it
/// names it instead of dropping it without a word.
#[test]
fn a_dropped_unverified_row_is_named() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("team.toml");
    std::fs::write(
        &file,
        "[[torch_build]]\ntorch = \"2.16\"\nvariant = \"cu132\"\nplatform = \"x86_64\"\ntargets = [\"sm_90\"]\nstatus = \"UNVERIFIED\"\nsource = \"a guess\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = compat_text(&[
        "--torch",
        "2.16.0+cu132",
        "--driver",
        "595.71.05",
        "--gpu",
        "H100",
        "--matrix",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "its [[torch_build]] row 2.16+cu132 is marked UNVERIFIED, so no verdict uses it"
        ),
        "{stdout}"
    );
}

/// The default PyPI builds through 2.15 are in the matrix, measured from the wheels.
#[test]
fn torch_2_15_is_in_the_matrix() {
    let (code, report, _) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "595.71.05",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 0, "{report}");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "pass");
    let source = torch["facts"]["build_row"]["source"].as_str().unwrap();
    assert!(
        source.contains("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl, sha256 "),
        "{source}"
    );
}

/// Issue 41, item 2: the aarch64 lists of download.pytorch.org's 2.8-2.10 wheels and 2.15's
/// cu130 come from PyTorch's build script (`filter_aarch64_archs`, build_cuda.sh @799d09f2,
/// compat-facts §8), marked `verified (file)`, never measured. GB10 with 2.9.1+cu130 runs
/// (sm_120 code on sm_121, vllm-project/vllm#43969); what is still unknown says so.
#[test]
fn build_script_lists_are_judged_and_say_they_were_read() {
    let (code, report, _) = compat(&[
        "--torch",
        "2.9.1+cu130",
        "--driver",
        "580.95.05",
        "--gpu",
        "GB10",
    ]);
    assert_eq!(code, 0, "{report}");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "pass", "{torch}");
    assert_eq!(torch["facts"]["build_row"]["status"], "verified (file)");
    assert!(
        torch["facts"]["build_row"]["source"]
            .as_str()
            .unwrap()
            .starts_with("build script, read from the file (not a measured wheel)"),
        "{torch}"
    );
    assert!(
        torch["message"].as_str().unwrap().contains(
            "(verified from a file: read in the build script, not measured from a wheel)"
        ),
        "{torch}"
    );
    let (_, report, _) = compat(&[
        "--torch",
        "2.15.0+cu130",
        "--driver",
        "580.95.05",
        "--gpu",
        "H100",
        "--platform",
        "aarch64",
    ]);
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "pass", "{torch}");
    assert_eq!(torch["facts"]["build_row"]["status"], "verified (file)");
    // The x86_64 cu130 list of 2.15 is in no file read: unknown, in words.
    let (_, report, _) = compat(&[
        "--torch",
        "2.15.0+cu130",
        "--driver",
        "580.95.05",
        "--gpu",
        "H100",
    ]);
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "warn", "{torch}");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .contains("torch 2.15 has a cu130 build, but its arch list is not in"),
        "{torch}"
    );
}
