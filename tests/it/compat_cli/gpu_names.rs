//! `envctl compat --gpu NAME`: marketing and NVML names (NVIDIA's lists, China-market models,
//! names that fit several models of one capability) resolve to the right compute capability, and
//! each toolkit's name for the Thor target is understood.

use super::*;

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
