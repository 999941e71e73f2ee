//! `envctl compat`'s arguments: bad input is a usage error, the usage line and the hints for
//! unknown GPUs and capabilities are true, and `--torch` with or against `--image-cuda` is judged as
//! the sources say.

use super::*;

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
