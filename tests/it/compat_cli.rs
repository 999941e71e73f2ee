//! `envctl compat`: verdicts for a described host, through the built binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

fn compat(arguments: &[&str]) -> (i32, Value, String) {
    let directory = tempfile::tempdir().unwrap();
    let output = crate::support::cli::envctl()
        .current_dir(directory.path())
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", directory.path())
        .env_remove("ENVCTL_PROFILE_PATH")
        .arg("compat")
        .args(arguments)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap(),
        json,
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn finding<'a>(gpu: &'a Value, id: &str) -> &'a Value {
    gpu["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {gpu}"))
}

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

#[test]
fn driver_floors_on_both_sides() {
    let (_, just_below, _) = compat(&["--image-cuda", "12.8", "--driver", "524.99", "--cc", "9.0"]);
    assert_eq!(
        finding(&just_below["gpus"][0], "driver.cuda")["status"],
        "fail"
    );
    let (_, floor, _) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "525.60.13",
        "--cc",
        "9.0",
    ]);
    assert_eq!(finding(&floor["gpus"][0], "driver.cuda")["status"], "warn");
    let (code, minimum, _) = compat(&["--image-cuda", "12.8", "--driver", "570.26", "--cc", "9.0"]);
    assert_eq!(
        finding(&minimum["gpus"][0], "driver.cuda")["status"],
        "pass"
    );
    assert_eq!(code, 0);
}

#[test]
fn bad_input_is_a_usage_error() {
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "five-fifty",
        "--cc",
        "9.0",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not an NVIDIA driver version"), "{stderr}");
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "550.54.15",
        "--gpu",
        "Voodoo 5",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--cc"), "{stderr}");
    let (code, _, _) = compat(&["--driver", "550.54.15", "--cc", "9.0"]);
    assert_eq!(code, 2, "neither --profile nor --image-cuda");
}

/// The command's text output: exit code, stdout, stderr (no `--json`).
fn compat_text(arguments: &[&str]) -> (i32, String, String) {
    let directory = tempfile::tempdir().unwrap();
    let output = crate::support::cli::envctl()
        .current_dir(directory.path())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("XDG_CONFIG_HOME", directory.path())
        .env_remove("ENVCTL_PROFILE_PATH")
        .arg("compat")
        .args(arguments)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `+cu128` names CUDA 12.8: `--torch` alone is enough, and the report says where the
/// CUDA came from.
#[test]
fn torch_alone_takes_the_image_cuda_from_its_local_version() {
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 4090",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["cuda"], "12.8");
    assert_eq!(report["cuda_from"], "torch");
    let gpu = &report["gpus"][0];
    assert_eq!(finding(gpu, "driver.cuda")["status"], "pass");
    assert_eq!(finding(gpu, "gpu.cuda-arch")["status"], "pass");
    assert_eq!(finding(gpu, "gpu.torch-arch")["status"], "pass");
    for (torch, cuda) in [
        ("2.7.1+cu118", "11.8"),
        ("2.7.1+cu126", "12.6"),
        ("2.9.1+cu130", "13.0"),
    ] {
        let (_, report, stderr) =
            compat(&["--torch", torch, "--driver", "580.65.06", "--cc", "9.0"]);
        assert_eq!(report["cuda"], cuda, "{torch}: {stderr}");
    }
    // A build without a CUDA variant checks the torch kernels only.
    let (code, report, stderr) =
        compat(&["--torch", "2.8.0", "--driver", "570.124.06", "--cc", "9.0"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["cuda"], Value::Null);
    let ids: Vec<&str> = report["gpus"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["driver.architecture", "gpu.torch-arch"]);
}

#[test]
fn image_cuda_and_torch_that_disagree_are_refused() {
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.6",
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--cc",
        "9.0",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "--image-cuda 12.6 disagrees with --torch 2.8.0+cu128, whose +cu128 names CUDA 12.8"
        ),
        "{stderr}"
    );
    let (code, report, _) = compat(&[
        "--image-cuda",
        "12.8",
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--cc",
        "9.0",
    ]);
    assert_eq!(code, 0);
    assert_eq!(report["cuda_from"], "--image-cuda");
}

/// The usage line says what is required: one of --profile / --image-cuda / --torch, and
/// one of --gpu / --cc; --profile excludes the other two.
#[test]
fn the_usage_line_is_true() {
    let (code, _, stderr) = compat_text(&["--driver", "550.54.15"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("compat_missing_arguments", stderr);
    let (code, help, _) = compat_text(&["--help"]);
    assert_eq!(code, 0);
    let usage = help
        .lines()
        .find(|line| line.starts_with("Usage:"))
        .unwrap();
    insta::assert_snapshot!("compat_usage", usage);
    let (code, _, stderr) = compat_text(&[
        "--profile",
        "pytorch-2.8",
        "--image-cuda",
        "12.8",
        "--driver",
        "550.54.15",
        "--cc",
        "9.0",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

/// An unknown NVIDIA name gets the nearest known models with their own capabilities, never
/// an invented `--cc`; another vendor's part is said to be one.
#[test]
fn unknown_gpus_get_true_hints() {
    let (code, _, stderr) = compat_text(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "570.124.06",
        "--gpu",
        "Quadro P3000",
    ]);
    assert_eq!(code, 2);
    assert!(!stderr.contains("--cc 8.9"), "{stderr}");
    insta::assert_snapshot!("compat_unknown_gpu", stderr);
    for name in [
        "MI300X",
        "AMD Instinct MI250X",
        "Radeon RX 7900 XTX",
        "Arc A770",
        "Gaudi 3",
        "TPU v5e",
    ] {
        let (code, _, stderr) = compat_text(&[
            "--image-cuda",
            "12.8",
            "--driver",
            "570.124.06",
            "--gpu",
            name,
        ]);
        assert_eq!(code, 2, "{name}");
        assert!(
            stderr.contains(&format!("`{name}` is not an NVIDIA GPU"))
                && stderr.contains("envctl's matrix covers NVIDIA GPUs only"),
            "{stderr}"
        );
    }
}

/// Only compute capabilities that exist are accepted; the refusal lists them.
#[test]
fn capabilities_that_do_not_exist_are_refused() {
    let (code, _, stderr) = compat_text(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "570.124.06",
        "--cc",
        "9.9",
    ]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("compat_capability_does_not_exist", stderr);
    let (code, _, stderr) = compat_text(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "580.65.06",
        "--cc",
        "10.1",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("sm_101 was renamed sm_110 in CUDA 13.0: give --cc 11.0"),
        "{stderr}"
    );
    for valid in ["3.0", "6.1", "10.3", "12.1"] {
        let (code, _, stderr) = compat(&[
            "--image-cuda",
            "12.8",
            "--driver",
            "570.124.06",
            "--cc",
            valid,
        ]);
        assert_ne!(code, 2, "{valid}: {stderr}");
    }
}

/// Forward compatibility shows in the verdict below a CUDA major's driver floor: what the
/// cuda-compat package offers on a data-center GPU (by name or --datacenter), that it does
/// not apply on GeForce, and that a bare --cc needs --datacenter to say which.
#[test]
fn forward_compatibility_shows_in_the_verdict() {
    let arguments = ["--image-cuda", "13.0", "--driver", "570.124.06"];
    let forward =
        |report: &Value| finding(&report["gpus"][0], "driver.forward-compatibility").clone();
    let run = |extra: &[&str]| {
        let all: Vec<&str> = arguments.iter().chain(extra).copied().collect();
        compat(&all)
    };
    let (code, datacenter, _) = run(&["--cc", "9.0", "--datacenter"]);
    assert_eq!(
        code, 1,
        "the driver still fails: the image may lack the package"
    );
    assert_eq!(datacenter["gpus"][0]["datacenter"], true);
    assert_eq!(forward(&datacenter)["status"], "info");
    assert_eq!(forward(&datacenter)["facts"]["package"], "cuda-compat-13-0");
    let (_, by_name, _) = run(&["--gpu", "H100"]);
    assert_eq!(by_name["gpus"][0]["datacenter"], true);
    assert_eq!(
        forward(&by_name)["message"],
        forward(&datacenter)["message"]
    );
    let (_, bare, _) = run(&["--cc", "9.0"]);
    assert_eq!(bare["gpus"][0]["datacenter"], Value::Null);
    assert!(
        forward(&bare)["message"]
            .as_str()
            .unwrap()
            .contains("pass --datacenter")
    );
    let (_, geforce, _) = run(&["--gpu", "RTX 4090"]);
    assert_eq!(geforce["gpus"][0]["datacenter"], false);
    assert!(
        forward(&geforce)["message"]
            .as_str()
            .unwrap()
            .contains("does not apply")
    );
    // Not below the floor: nothing to say.
    let (_, recent, _) = compat(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "580.65.06",
        "--cc",
        "9.0",
        "--datacenter",
    ]);
    assert!(
        recent["gpus"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|finding| finding["id"] != "driver.forward-compatibility")
    );
    // --datacenter does not make a GeForce card a data-center one.
    let (code, _, stderr) = compat_text(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 4090",
        "--datacenter",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not supported on GeForce"), "{stderr}");
    let (_, text, _) = compat_text(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "570.124.06",
        "--cc",
        "9.0",
        "--datacenter",
    ]);
    // The lifecycle hint lists the branches still supported today, which changes with the
    // date: it is left out of the snapshot (`compat_gives_the_branch_lifecycle` checks it).
    let text: String = text
        .lines()
        .filter(|line| !line.contains("hint: move to a supported branch"))
        .map(|line| format!("{line}\n"))
        .collect();
    insta::assert_snapshot!("compat_datacenter_forward_compatibility", text);
}

/// Issue 17: a name that fits several models of one compute capability is that
/// capability — `Orin (nvgpu)` is what nvidia-smi prints on a Jetson Orin, and every
/// RTX PRO 6000 is sm_120 — while models of different capabilities stay ambiguous.
#[test]
fn names_that_fit_models_of_one_capability_are_that_capability() {
    for (name, expected) in [("Orin (nvgpu)", "8.7"), ("RTX PRO 6000", "12.0")] {
        let (code, report, stderr) = compat(&[
            "--image-cuda",
            "12.8",
            "--driver",
            "580.65.06",
            "--gpu",
            name,
        ]);
        assert!(code == 0 || code == 1, "{name}: {stderr}");
        let gpu = &report["gpus"][0];
        assert_eq!(
            gpu["compute_capability"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| gpu["compute_capability"].to_string()),
            expected,
            "{name}: {report}"
        );
        let rows = gpu["capability_rows"].as_array().unwrap();
        assert!(rows.len() > 1, "every model the name fits is named: {gpu}");
    }
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "580.65.06",
        "--gpu",
        "RTX 6000",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is ambiguous"), "{stderr}");
}

/// Names from NVIDIA's current and legacy lists that the matrix once lacked (issue 17), and
/// names that fit several models of one capability, resolve to that capability.
#[test]
fn gpu_names_from_nvidias_lists_resolve() {
    for (gpu, capability) in [
        ("Jetson AGX Thor", "11.0"),
        ("NVIDIA Thor", "11.0"),
        ("Quadro P2000", "6.1"),
        ("Quadro P4000", "6.1"),
        ("NVIDIA GeForce GTX 1650", "7.5"),
        ("NVIDIA GeForce GTX 1650 Ti", "7.5"),
        ("Tegra X1", "5.3"),
        ("Xavier", "7.2"),
        ("Orin (nvgpu)", "8.7"),
        ("RTX PRO 6000", "12.0"),
        ("Tesla P4", "6.1"),
        ("NVIDIA TITAN X (Pascal)", "6.1"),
        ("NVIDIA GeForce GTX TITAN X", "5.2"),
    ] {
        let (code, report, stderr) = compat(&[
            "--image-cuda",
            "12.8",
            "--driver",
            "580.65.06",
            "--gpu",
            gpu,
        ]);
        assert_ne!(code, 2, "{gpu}: {stderr}");
        assert_eq!(
            report["gpus"][0]["compute_capability"], capability,
            "{gpu}: {report}"
        );
    }
}

/// CUDA 12.8/12.9 call compute capability 11.0's predecessor `sm_101`; CUDA 13.0 renamed it
/// `sm_110`. Each toolkit's message uses its own name, and the old one is not 11.0 code.
#[test]
fn each_toolkit_names_the_thor_target_its_own_way() {
    for (cuda, words) in [
        (
            "12.8",
            "its sm_101 is the target of this GPU as the CUDA 12 driver reported it",
        ),
        (
            "12.9",
            "its sm_101 is the target of this GPU as the CUDA 12 driver reported it",
        ),
        ("13.0", "CUDA 13.0 has a sm_110 target"),
    ] {
        let (_, report, _) = compat(&[
            "--image-cuda",
            cuda,
            "--driver",
            "580.65.06",
            "--cc",
            "11.0",
        ]);
        let message = finding(&report["gpus"][0], "gpu.cuda-arch")["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains(words), "{message}");
    }
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

/// A driver branch older than the GPU's architecture fails, naming the first branch that
/// supports it (issue 32's two cases), where it only warned before.
#[test]
fn a_driver_that_predates_the_gpu_fails() {
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.7.1+cu128",
        "--driver",
        "550.54.15",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["verdict"], "fail");
    let floor = finding(&report["gpus"][0], "driver.architecture");
    assert_eq!(floor["status"], "fail", "{floor}");
    let message = floor["message"].as_str().unwrap();
    assert!(
        message.contains("R550") && message.contains("12.8") && message.contains("branch R570"),
        "{message}"
    );
    assert_eq!(
        floor["facts"]["release_row"]["linux_minimum_driver"],
        "570.26"
    );
    assert!(floor["hint"].as_str().unwrap().contains("R570"));

    let (code, report, _) = compat(&[
        "--image-cuda",
        "11.8",
        "--driver",
        "470.82.01",
        "--gpu",
        "H100",
    ]);
    assert_eq!(code, 1);
    let floor = finding(&report["gpus"][0], "driver.architecture");
    assert_eq!(floor["status"], "fail");
    let message = floor["message"].as_str().unwrap();
    assert!(
        message.contains("predates sm_90 (Hopper") && message.contains("branch R520"),
        "{message}"
    );
    // A branch past the architecture's last one fails too: R590 dropped Volta.
    let (code, report, _) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "590.44.01",
        "--gpu",
        "V100",
    ]);
    assert_eq!(code, 1);
    let dropped = finding(&report["gpus"][0], "driver.architecture");
    assert!(
        dropped["message"].as_str().unwrap().contains("R580"),
        "{dropped}"
    );
    // A driver of the GPU's time passes.
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.7.1+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        finding(&report["gpus"][0], "driver.architecture")["status"],
        "pass"
    );
}

/// `--platform aarch64` judges PyPI's aarch64 wheel: 2.15's has no sm_75 (a T4 on an Arm
/// host fails, on x86_64 it passes); Thor is judged by it whatever the flag says; 2.10's
/// aarch64 wheel is a CPU build.
#[test]
fn aarch64_hosts_are_judged_by_their_own_wheels() {
    let t4 = |platform: &[&str]| {
        let mut arguments = vec![
            "--torch",
            "2.15.0+cu132",
            "--driver",
            "595.71.05",
            "--gpu",
            "T4",
        ];
        arguments.extend_from_slice(platform);
        compat(&arguments)
    };
    let (code, report, stderr) = t4(&["--platform", "aarch64"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["platform"], "aarch64");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert_eq!(torch["facts"]["build_row"]["platform"], "aarch64");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .contains("(aarch64 wheel)"),
        "{torch}"
    );
    let (code, report, _) = t4(&[]);
    assert_eq!(code, 0);
    assert_eq!(report["platform"], "x86_64");
    assert!(
        finding(&report["gpus"][0], "gpu.torch-arch")["message"]
            .as_str()
            .unwrap()
            .contains("(x86_64 wheel)")
    );

    let (code, report, stderr) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "580.65.06",
        "--gpu",
        "Jetson AGX Thor",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let thor = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(thor["status"], "pass", "{thor}");
    assert!(
        thor["message"].as_str().unwrap().contains("sm_110 kernels"),
        "{thor}"
    );

    let (code, report, _) = compat(&[
        "--torch",
        "2.10.0",
        "--driver",
        "580.65.06",
        "--gpu",
        "GH200",
        "--platform",
        "aarch64",
    ]);
    assert_eq!(code, 0);
    let cpu = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(cpu["status"], "warn");
    assert!(
        cpu["message"].as_str().unwrap().contains("CPU-only build"),
        "{cpu}"
    );

    let (code, _, stderr) = compat(&[
        "--torch",
        "2.15.0",
        "--driver",
        "580.65.06",
        "--cc",
        "9.0",
        "--platform",
        "riscv64",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("x86_64 or aarch64"), "{stderr}");
}

/// Jetson GPUs under L4T run neither PyPI wheel: the verdict says no bundled row covers
/// them and names NVIDIA's Jetson builds, instead of judging an x86 list.
#[test]
fn jetson_gpus_are_not_judged_by_pypi_wheels() {
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "540.4.0",
        "--gpu",
        "Orin (nvgpu)",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let orin = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(orin["status"], "warn");
    assert!(
        orin["message"]
            .as_str()
            .unwrap()
            .contains("no bundled row covers NVIDIA's Jetson builds"),
        "{orin}"
    );
    assert!(
        orin["hint"]
            .as_str()
            .unwrap()
            .contains("install-pytorch-jetson-platform"),
        "{orin}"
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

/// Issue 32: 2.15.0's wheel pins cuda-toolkit==13.2.2 (CUDA 13.2 Update 2), so a driver
/// that meets only 13.2 GA's minimum is not called enough for it: the verdict warns, names
/// the pin and the row it rests on.
#[test]
fn the_pinned_runtime_is_the_driver_floor_of_a_build() {
    let (code, report, _) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "595.45.04",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 0, "a warning: {report}");
    let driver = finding(&report["gpus"][0], "driver.cuda");
    assert_eq!(driver["status"], "pass", "CUDA 13.2's own minimum is met");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "warn", "{torch}");
    let message = torch["message"].as_str().unwrap();
    assert!(
        message.contains("cuda-toolkit==13.2.2") && message.contains("595.71.05"),
        "{message}"
    );
    assert_eq!(torch["facts"]["runtime_row"]["release"], "13.2 Update 2");
    assert!(
        torch["facts"]["runtime_row"]["source"]
            .as_str()
            .unwrap()
            .contains("Table 3"),
        "{torch}"
    );
    assert!(
        torch["facts"]["build_row"]["source"]
            .as_str()
            .unwrap()
            .contains("torch-2.15.0.dist-info/METADATA"),
        "{torch}"
    );
    assert_eq!(torch["hint"], "upgrade the driver to 595.71.05 or newer");
}

/// The China-market parts as nvidia-smi names them (`NVIDIA H800`, `NVIDIA H800 PCIe`,
/// `NVIDIA H20`, `NVIDIA L20`, the A800 in its SXM, PCIe and workstation forms), from
/// NVIDIA's GPU Operator platform list, MIG user guide, mig-parted's default MIG
/// configuration and TensorRT-LLM hardware list (sources in `crates/envctl-core/src/compat/matrix.toml`).
/// The A800's row is derived, and `compat` says so in the finding's facts.
#[test]
fn china_market_gpus_resolve_by_their_nvml_names() {
    for (name, capability, status) in [
        ("NVIDIA H800", "9.0", "derived"),
        ("NVIDIA H800 PCIe", "9.0", "derived"),
        ("NVIDIA H20", "9.0", "verified"),
        ("NVIDIA L20", "8.9", "derived"),
        ("NVIDIA A800-SXM4-80GB", "8.0", "derived"),
        ("NVIDIA A800 80GB PCIe", "8.0", "derived"),
        ("NVIDIA A800 40GB Active", "8.0", "derived"),
    ] {
        let (code, report, stderr) =
            compat(&["--torch", "2.15.0", "--driver", "595.71.05", "--gpu", name]);
        assert_eq!(code, 0, "{name}: {stderr} {report}");
        let gpu = &report["gpus"][0];
        assert_eq!(gpu["compute_capability"], capability, "{name}: {gpu}");
        assert_eq!(finding(gpu, "gpu.torch-arch")["status"], "pass", "{name}");
        let rows = gpu["capability_rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{name}: {gpu}");
        assert_eq!(rows[0]["status"], status, "{name}: {gpu}");
        assert!(
            rows[0]["source"].as_str().unwrap().contains("NVIDIA"),
            "{name}"
        );
    }
    let (code, stdout, stderr) = compat_text(&[
        "--torch",
        "2.15.0",
        "--driver",
        "595.71.05",
        "--gpu",
        "NVIDIA A800-SXM4-80GB",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("NVIDIA A800 (sm_80, data-center; capability derived from NVIDIA's documents, see --json)"),
        "{stdout}"
    );
}

/// Issue 41, held out: every host with a Grace superchip (GH200, GB200, GB300) is aarch64
/// (compat-facts §8, NVIDIA's product pages), and PyPI's aarch64 torch 2.10.0 is a CPU build
/// (measured: torch-2.10.0-cp311-cp311-manylinux_2_28_aarch64.whl is 2.10.0+cpu). So
/// `--torch 2.10.0 --gpu GH200` is no longer ✓ from the x86_64 wheels, and says why in words.
#[test]
fn grace_superchips_are_judged_as_the_aarch64_hosts_they_are() {
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.10.0",
        "--driver",
        "580.95.05",
        "--gpu",
        "NVIDIA GH200 480GB",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let gh200 = &report["gpus"][0];
    assert_eq!(gh200["platform"], "aarch64", "{gh200}");
    let torch = finding(gh200, "gpu.torch-arch");
    assert_eq!(torch["status"], "warn", "{torch}");
    let message = torch["message"].as_str().unwrap();
    for words in [
        "from PyPI on aarch64 is a CPU-only build",
        "NVIDIA GH200 is found only in aarch64 hosts",
        "not the x86_64 one that `--platform` names",
    ] {
        assert!(message.contains(words), "{words}: {message}");
    }
    assert_eq!(torch["facts"]["platform_from"], "gpu");
    // GB200 and GB300 likewise: the aarch64 wheel's row is the one judged.
    for gpu in ["NVIDIA GB200", "NVIDIA GB300"] {
        let (_, report, _) = compat(&[
            "--torch",
            "2.15.0+cu132",
            "--driver",
            "595.71.05",
            "--gpu",
            gpu,
        ]);
        let torch = finding(&report["gpus"][0], "gpu.torch-arch");
        assert_eq!(
            torch["facts"]["build_row"]["platform"], "aarch64",
            "{gpu}: {torch}"
        );
        assert!(
            torch["message"]
                .as_str()
                .unwrap()
                .contains("(aarch64 wheel)"),
            "{gpu}: {torch}"
        );
    }
    // An H100 (found in x86_64 hosts too) keeps --platform's wheel.
    let (_, report, _) = compat(&[
        "--torch",
        "2.10.0",
        "--driver",
        "580.95.05",
        "--gpu",
        "H100",
    ]);
    assert_eq!(report["gpus"][0]["platform"], "x86_64");
    assert_eq!(
        finding(&report["gpus"][0], "gpu.torch-arch")["status"],
        "pass"
    );
}

/// Issue 41, held out: Jetson Thor reports 11.0 only under the CUDA 13 driver; CUDA
/// 12.8/12.9's sm_101 cubins are not 11.0 code, and NVIDIA supports binary compatibility
/// only on the desktop, not on Tegra (compat-facts §8: ollama/ollama#11999,
/// facebookresearch/xformers#1278; CUDA C Programming Guide §3.1.2). A CUDA 12.8/12.9 image
/// or torch stack on Thor fails; CUDA 13.0 passes.
#[test]
fn jetson_thor_needs_cuda_13() {
    for cuda in ["12.8", "12.9"] {
        let (code, report, _) = compat(&[
            "--image-cuda",
            cuda,
            "--driver",
            "580.95.05",
            "--gpu",
            "Jetson AGX Thor",
        ]);
        assert_eq!(code, 1, "CUDA {cuda}: {report}");
        let arch = finding(&report["gpus"][0], "gpu.cuda-arch");
        assert_eq!(arch["status"], "fail", "{arch}");
        assert_eq!(
            arch["hint"],
            "use an image with CUDA 13.0 or newer, which targets sm_110"
        );
        assert_eq!(arch["facts"]["rename_row"]["old"], "sm_101");
    }
    // The aarch64 cu128 wheel has no sm_110 kernels (build script: 8.0 9.0 10.0 12.0).
    let (code, report, _) = compat(&[
        "--torch",
        "2.9.1+cu128",
        "--driver",
        "580.95.05",
        "--gpu",
        "Thor",
    ]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        finding(&report["gpus"][0], "gpu.torch-arch")["status"],
        "fail"
    );
    let (code, report, _) = compat(&[
        "--torch",
        "2.9.1+cu130",
        "--driver",
        "580.95.05",
        "--gpu",
        "Thor",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        finding(&report["gpus"][0], "gpu.cuda-arch")["status"],
        "pass"
    );
    assert_eq!(
        finding(&report["gpus"][0], "gpu.torch-arch")["status"],
        "pass"
    );
}

/// Issue 41, held out: per-SKU and MIG driver floors (compat-facts §8: NVIDIA's MIG user
/// guide, Deployment Considerations; GPU Operator "HGX B200 requires … 570.133.20 or
/// later"). A B200 on 570.124.06 fails with MIG on or off; H200 with MIG needs 550.90.07;
/// B300 with MIG 580.82.07.
#[test]
fn per_sku_and_mig_driver_floors() {
    let model = |arguments: &[&str]| {
        let mut all = vec!["--image-cuda", "12.8"];
        all.extend_from_slice(arguments);
        let (code, report, stderr) = compat(&all);
        assert!(code == 0 || code == 1, "{stderr}");
        finding(&report["gpus"][0], "driver.gpu-model").clone()
    };
    for mig in [&[][..], &["--mig"][..]] {
        let mut arguments = vec!["--driver", "570.124.06", "--gpu", "NVIDIA B200"];
        arguments.extend_from_slice(mig);
        let b200 = model(&arguments);
        assert_eq!(b200["status"], "fail", "{b200}");
        assert!(
            b200["message"].as_str().unwrap().contains("570.133.20"),
            "{b200}"
        );
        assert_eq!(b200["hint"], "upgrade the driver to 570.133.20 or newer");
    }
    let b200 = model(&["--driver", "570.133.20", "--gpu", "NVIDIA B200", "--mig"]);
    assert_eq!(b200["status"], "pass", "{b200}");
    let h200 = model(&["--driver", "550.54.15", "--gpu", "NVIDIA H200", "--mig"]);
    assert_eq!(h200["status"], "fail", "{h200}");
    assert!(
        h200["message"]
            .as_str()
            .unwrap()
            .contains("MIG is enabled on NVIDIA H200")
            && h200["message"].as_str().unwrap().contains("550.90.07"),
        "{h200}"
    );
    assert!(
        h200["facts"]["floor_rows"][0]["source"]
            .as_str()
            .unwrap()
            .contains("mig-user-guide"),
        "{h200}"
    );
    let without = model(&["--driver", "550.54.15", "--gpu", "NVIDIA H200"]);
    assert_eq!(without["status"], "pass", "{without}");
    assert!(
        without["message"]
            .as_str()
            .unwrap()
            .contains("MIG on it needs 550.90.07"),
        "{without}"
    );
    let b300 = model(&["--driver", "575.57.08", "--gpu", "NVIDIA B300", "--mig"]);
    assert_eq!(b300["status"], "fail", "{b300}");
    assert!(
        b300["message"].as_str().unwrap().contains("580.82.07"),
        "{b300}"
    );
    // GB200's own floor is derived from B200's, and says so.
    let gb200 = model(&["--driver", "570.124.06", "--gpu", "NVIDIA GB200"]);
    assert_eq!(gb200["status"], "fail");
    assert!(
        gb200["message"]
            .as_str()
            .unwrap()
            .ends_with("(derived: not measured)"),
        "{gb200}"
    );
}

/// Issue 41, held out: 2.13/2.14 pin cuda-toolkit 13.0.3, whose runfile bundles driver
/// 580.126.20 (secondary: NVIDIA's runfile name `cuda_13.0.3_580.126.20_linux.run`,
/// compat-facts §8), so 580.95.05 is no longer passed without a word; and 2.15's hint names
/// 595.71.05 (13.2 Update 2, the pinned runtime), not 595.45.04 (13.2 GA).
#[test]
fn a_pinned_update_runtime_has_its_own_floor() {
    for torch in ["2.13.0+cu130", "2.14.1+cu130"] {
        let (code, report, _) =
            compat(&["--torch", torch, "--driver", "580.95.05", "--gpu", "H100"]);
        assert_eq!(code, 0, "{report}");
        let arch = finding(&report["gpus"][0], "gpu.torch-arch");
        assert_eq!(arch["status"], "warn", "{torch}: {arch}");
        let message = arch["message"].as_str().unwrap();
        assert!(
            message.contains("580.126.20")
                && message.contains("cuda-toolkit==13.0.3")
                && message.contains("(secondary:"),
            "{torch}: {message}"
        );
        assert_eq!(arch["facts"]["runtime_row"]["release"], "13.0 Update 3");
        assert_eq!(arch["facts"]["runtime_row"]["status"], "secondary");
        assert_eq!(arch["hint"], "upgrade the driver to 580.126.20 or newer");
    }
    let (_, report, _) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "590.48.01",
        "--gpu",
        "RTX 5090",
    ]);
    let driver = finding(&report["gpus"][0], "driver.cuda");
    assert_eq!(driver["status"], "warn", "{driver}");
    let hint = driver["hint"].as_str().unwrap();
    assert!(
        hint.starts_with("upgrade the driver to 595.71.05 or newer"),
        "{hint}"
    );
    assert!(!hint.contains("595.45.04"), "{hint}");
    assert_eq!(driver["facts"]["runtime_row"]["release"], "13.2 Update 2");
}

/// Issue 41: `compat` gives the data-center branch lifecycle as `doctor` does (R570 ended
/// 2026-02, compat-facts §6b), for data-center GPUs only.
#[test]
fn compat_gives_the_branch_lifecycle() {
    let (_, report, _) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "H100",
    ]);
    let lifecycle = finding(&report, "driver.branch-lifecycle");
    assert_eq!(lifecycle["status"], "warn", "{lifecycle}");
    assert!(
        lifecycle["message"].as_str().unwrap().contains("R570"),
        "{lifecycle}"
    );
    let (_, text, _) = compat_text(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "H100",
    ]);
    assert!(text.contains("which has reached end of life"), "{text}");
    let (_, report, _) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 4090",
    ]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 0, "{report}");
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
