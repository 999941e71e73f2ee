//! `envctl compat` on aarch64: hosts judged by their own wheels, Grace superchips as the aarch64
//! hosts they are, and Jetson boards (not judged by PyPI wheels; Thor needs CUDA 13).

use super::*;

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
