//! compat-facts §7, "Combinations that fail", one test per row, against the bundled matrix:
//! the verdicts must fail what the table says fails and pass what it says works.

use super::test_values::{capability, cuda, driver, matrix, torch};
use super::*;
use crate::checks::Status;
use crate::profile::model::{CudaVersion, TorchVersion};

/// Every official x86_64 build in the matrix as `2.8.0+cu128`, with its release and CUDA.
fn all_builds() -> Vec<(TorchVersion, TorchRelease, CudaVersion)> {
    matrix()
        .torch_build
        .iter()
        .filter(|build| build.platform == crate::compat::Platform::X86_64)
        .map(|build| {
            let text = format!("{}.0+{}", build.torch, build.variant);
            (torch(&text), build.torch, build.variant.cuda())
        })
        .collect()
}

fn arch_status(gpu: &str, build: &TorchVersion) -> Status {
    gpu_vs_torch(
        matrix(),
        Some(crate::compat::Platform::X86_64),
        capability(gpu),
        build,
        None,
        None,
        &[],
    )
    .status
}

fn release(text: &str) -> TorchRelease {
    text.parse().unwrap()
}

/// Checks every build: `fails(release, cuda)` says which must fail on `gpu`; all others pass.
fn check_every_build(gpu: &str, fails: impl Fn(TorchRelease, CudaVersion) -> bool) {
    for (build, release, cuda) in all_builds() {
        let expected = if fails(release, cuda) {
            Status::Fail
        } else {
            Status::Pass
        };
        assert_eq!(arch_status(gpu, &build), expected, "{gpu} with {build}");
    }
}

/// RTX 5090 / RTX PRO 6000 Blackwell / 50-series (12.0): every torch ≤ 2.6 and every
/// cu118/cu121/cu124/cu126 wheel fails; cu128, cu129, cu130, cu132 work, with the driver
/// floor of their family. GB10 (12.1) is only in DGX Spark, an aarch64 host: it is judged
/// by the aarch64 wheels (sm_120 from 2.11), and releases without a measured aarch64 CUDA
/// wheel are unknown, not failures.
#[test]
fn blackwell_consumer_and_gb10() {
    check_every_build("12.0", |release, cuda| {
        release <= self::release("2.6") || cuda < self::cuda("12.8")
    });
    for build in ["2.11.0+cu130", "2.14.1+cu130", "2.15.0+cu132"] {
        assert_eq!(
            arch_status("12.1", &torch(build)),
            Status::Pass,
            "GB10 {build}"
        );
    }
    // Held out (compat-facts §8: the build script's aarch64 lists; GB10 runs sm_120 code,
    // vllm-project/vllm#43969): 2.9.1+cu130 runs on GB10, as do the cu128 wheels of 2.8-2.10.
    for build in ["2.9.1+cu130", "2.8.0+cu128", "2.10.0+cu128"] {
        let verdict = gpu_vs_torch(
            matrix(),
            Some(crate::compat::Platform::X86_64),
            capability("12.1"),
            &torch(build),
            None,
            None,
            &[],
        );
        assert_eq!(verdict.status, Status::Pass, "GB10 {build}");
        assert!(
            verdict.message.contains("(aarch64 wheel)")
                && verdict
                    .message
                    .contains("verified from a file: read in the build script, not measured"),
            "GB10 {build}: {}",
            verdict.message
        );
    }
    // Still unknown, said so: no aarch64 CUDA wheel of 2.6 is in the matrix.
    assert_eq!(
        arch_status("12.1", &torch("2.6.0+cu124")),
        Status::Warn,
        "GB10 2.6.0+cu124"
    );
    // cu126's aarch64 list (8.0 9.0) has nothing for GB10: it fails.
    assert_eq!(arch_status("12.1", &torch("2.9.1+cu126")), Status::Fail);
    for name in [
        "NVIDIA GeForce RTX 5090",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    ] {
        assert_eq!(model_capability(matrix(), name)[0].1, capability("12.0"));
    }
    assert_eq!(
        model_capability(matrix(), "NVIDIA GB10")[0].1,
        capability("12.1")
    );
    // The driver axis: ≥ 525 for cu12x, ≥ 580 for cu13x.
    let status = |driver_text: &str, cuda_text: &str| {
        driver_vs_cuda(matrix(), &driver(driver_text), cuda(cuda_text), false).status
    };
    assert_eq!(status("570.124.06", "12.8"), Status::Pass);
    assert_eq!(status("550.54.15", "12.8"), Status::Warn);
    assert_eq!(status("520.61.05", "12.8"), Status::Fail);
    assert_eq!(status("575.57.08", "13.0"), Status::Fail);
    assert_eq!(status("580.65.06", "13.0"), Status::Pass);
}

/// B200 / GB200 (10.0), B300 (10.3): cu126 and older fail; cu128+ and cu13x work (sm_100
/// machine code runs on 10.3).
#[test]
fn blackwell_datacenter() {
    for gpu in ["10.0", "10.3"] {
        check_every_build(gpu, |_, cuda| cuda < self::cuda("12.8"));
    }
    let finding = gpu_vs_torch(
        matrix(),
        Some(crate::compat::Platform::X86_64),
        capability("10.3"),
        &torch("2.8.0+cu128"),
        None,
        None,
        &[],
    );
    assert!(finding.message.contains("sm_100"), "{}", finding.message);
}

/// H100 / H200 (9.0): torch 2.0 cu117 fails (last arch 8.6, no PTX); 2.0 cu118 and every
/// later variant works.
#[test]
fn hopper() {
    check_every_build("9.0", |release, cuda| {
        release == self::release("2.0") && cuda == self::cuda("11.7")
    });
}

/// V100 (7.0): 2.7 cu128, 2.11 cu128 and every cu130/cu132 wheel fail (CUDA 13 cannot
/// target sm_70); cu118–cu126 of any release, 2.8–2.10 cu128 and 2.8 cu129 work.
#[test]
fn volta() {
    check_every_build("7.0", |release, cuda| {
        let cu128 = cuda == self::cuda("12.8");
        (cu128 && (release == self::release("2.7") || release == self::release("2.11")))
            || cuda.major >= 13
    });
    for toolkit in ["13.0", "13.1", "13.2", "13.3", "13.4", "13.5"] {
        let finding = cuda_vs_gpu(matrix(), cuda(toolkit), capability("7.0"));
        assert_eq!(
            finding.status,
            Status::Fail,
            "CUDA {toolkit}: {}",
            finding.message
        );
    }
    assert_eq!(
        cuda_vs_gpu(matrix(), cuda("12.9"), capability("7.0")).status,
        Status::Pass
    );
}

/// P100 (6.0), GTX 10xx / P40 / P4 (6.1), GTX 9xx / M40 / M60 (5.x): every cu128, cu129,
/// cu130, cu132 wheel fails; cu126, cu124, cu121, cu118 work.
#[test]
fn pascal_and_maxwell() {
    for gpu in ["6.0", "6.1", "5.0", "5.2"] {
        check_every_build(gpu, |_, cuda| cuda >= self::cuda("12.8"));
    }
    // 5.3 is Jetson Nano / TX1 only: no PyPI wheel runs there, so no verdict but unknown.
    for (build, _, _) in all_builds() {
        assert_eq!(arch_status("5.3", &build), Status::Warn, "5.3 with {build}");
    }
}

/// K80 (3.7): every cu12x/cu13x wheel fails; the driver stops at R470 (CUDA 11.4 native),
/// and cu118 wheels (2.0–2.7, plus cu117 on 2.0) run through 11.x minor-version
/// compatibility.
#[test]
fn kepler() {
    check_every_build("3.7", |_, cuda| cuda.major >= 12);
    let r470 = driver("470.82.01");
    assert_eq!(native_cuda_for_driver(matrix(), &r470), Some(cuda("11.4")));
    let eleven_eight = driver_vs_cuda(matrix(), &r470, cuda("11.8"), true);
    assert_eq!(
        eleven_eight.status,
        Status::Warn,
        "{}",
        eleven_eight.message
    );
    assert!(eleven_eight.message.contains("minor-version compatibility"));
    assert_eq!(
        driver_vs_cuda(matrix(), &r470, cuda("12.1"), true).status,
        Status::Fail
    );
    assert_eq!(
        cuda_vs_gpu(matrix(), cuda("12.0"), capability("3.7")).status,
        Status::Fail
    );
}

/// T4 / RTX 20xx (7.5): no arch failure in any build; only the driver axis. The measured
/// 2.14 and 2.15 PyPI wheels warn: their linalg library (MAGMA) has no sm_75 kernels.
#[test]
fn turing() {
    for (build, release, _) in all_builds() {
        let linalg_gap = matrix()
            .torch_build(
                release,
                &build.variant.as_deref().unwrap().parse().unwrap(),
                crate::compat::Platform::X86_64,
            )
            .is_some_and(|row| !row.library_gaps.is_empty());
        let expected = if linalg_gap {
            Status::Warn
        } else {
            Status::Pass
        };
        assert_eq!(arch_status("7.5", &build), expected, "7.5 with {build}");
    }
    let finding = gpu_vs_torch(
        matrix(),
        Some(crate::compat::Platform::X86_64),
        capability("7.5"),
        &torch("2.14.1+cu130"),
        None,
        None,
        &[],
    );
    assert_eq!(finding.status, Status::Warn);
    assert!(
        finding.message.contains(
            "libtorch_cuda_linalg.so (linalg operations run with MAGMA) has sm_75 in only 0 of its 65 fat binaries"
        ),
        "{}",
        finding.message
    );
    assert!(finding.hint.unwrap().contains("preferred_linalg_library"));
    // Other GPUs of the same build are not concerned.
    assert_eq!(arch_status("8.0", &torch("2.14.1+cu130")), Status::Pass);
}

/// RTX 4090 / L4 / L40S (8.9): nothing fails (sm_86 machine code runs on 8.9).
#[test]
fn ada() {
    check_every_build("8.9", |_, _| false);
    let finding = gpu_vs_torch(
        matrix(),
        Some(crate::compat::Platform::X86_64),
        capability("8.9"),
        &torch("2.6.0+cu124"),
        None,
        None,
        &[],
    );
    assert!(finding.message.contains("sm_86"), "{}", finding.message);
}

/// Jetson Thor (11.0): an aarch64 host, judged by the aarch64 wheels, which carry sm_110
/// from 2.11; releases without a measured aarch64 CUDA wheel are unknown. CUDA 12.8 targets
/// it as sm_101, 13.0 as sm_110.
#[test]
fn jetson_thor() {
    // Judged by the aarch64 wheels: a build with sm_110 runs; one without (the cu126/cu128
    // lists of the build script) fails: Thor needs CUDA 13; one with no aarch64 row is unknown.
    for (build, release, _) in all_builds() {
        let aarch64 = matrix().torch_build(
            release,
            &build.variant.as_deref().unwrap().parse().unwrap(),
            crate::compat::Platform::Aarch64,
        );
        let expected = match aarch64 {
            Some(row)
                if row
                    .targets
                    .iter()
                    .any(|target| target.to_string() == "sm_110") =>
            {
                Status::Pass
            }
            Some(_) => Status::Fail,
            None => Status::Warn,
        };
        assert_eq!(arch_status("11.0", &build), expected, "Thor with {build}");
    }
    // Held out (compat-facts §8; ollama/ollama#11999 "AGX Thor is CC 11.0, which requires
    // CUDA v13"; NVIDIA: binary compatibility is not supported on Tegra): CUDA 12.8/12.9 name
    // the old sm_101, whose cubins are not 11.0 code, so Thor fails with them.
    let status = |toolkit: &str| cuda_vs_gpu(matrix(), cuda(toolkit), capability("11.0")).status;
    assert_eq!(status("12.8"), Status::Fail);
    assert_eq!(status("12.9"), Status::Fail);
    assert_eq!(status("13.0"), Status::Pass);
    assert_eq!(status("12.6"), Status::Warn);
    // Each toolkit's message uses its own name for the target.
    let message = |toolkit: &str| cuda_vs_gpu(matrix(), cuda(toolkit), capability("11.0")).message;
    for toolkit in ["12.8", "12.9"] {
        let message = message(toolkit);
        assert!(
            message
                .contains("its sm_101 is the target of this GPU as the CUDA 12 driver reported it")
                && message.contains("not on Tegra")
                && message.contains("first in CUDA 13.0"),
            "{message}"
        );
    }
    assert!(
        message("13.0").contains("has a sm_110 target"),
        "{}",
        message("13.0")
    );
    // The aarch64 cu128 wheel of 2.9 has no sm_110 kernels: it fails on Thor, cu130 runs.
    let on_thor = |build: &str| {
        gpu_vs_torch(
            matrix(),
            Some(crate::compat::Platform::X86_64),
            capability("11.0"),
            &torch(build),
            None,
            None,
            &[],
        )
    };
    assert_eq!(on_thor("2.9.1+cu128").status, Status::Fail);
    let runs = on_thor("2.9.1+cu130");
    assert_eq!(runs.status, Status::Pass, "{}", runs.message);
    assert!(
        runs.message
            .contains("verified from a file: read in the build script"),
        "{}",
        runs.message
    );
}

/// Any GPU, driver < 580 (R535/R550/R570/R575): every cu130/cu132 wheel fails unless a
/// data-center GPU uses cuda-compat; cu12x wheels work.
#[test]
fn drivers_before_580_and_cuda_13() {
    for host in ["535.104.05", "550.54.15", "570.124.06", "575.57.08"] {
        let host = driver(host);
        for toolkit in ["13.0", "13.2"] {
            let consumer = driver_vs_cuda(matrix(), &host, cuda(toolkit), false);
            assert_eq!(consumer.status, Status::Fail, "{host} {toolkit}");
            let hint = consumer.hint.unwrap_or_default();
            assert!(
                !hint.contains("install the forward-compatibility"),
                "{hint}"
            );
            let datacenter = driver_vs_cuda(matrix(), &host, cuda(toolkit), true);
            assert_eq!(datacenter.status, Status::Fail);
            let package = format!("cuda-compat-{}", toolkit.replace('.', "-"));
            assert!(datacenter.hint.unwrap_or_default().contains(&package));
        }
        assert_ne!(
            driver_vs_cuda(matrix(), &host, cuda("12.6"), false).status,
            Status::Fail
        );
    }
}

/// Any GPU, driver < 525 (R470–R520): every cu12x/cu13x wheel fails; cu118 works.
#[test]
fn drivers_before_525() {
    for host in ["470.82.01", "515.43.04", "520.61.05"] {
        let host = driver(host);
        for toolkit in ["12.0", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0"] {
            assert_eq!(
                driver_vs_cuda(matrix(), &host, cuda(toolkit), false).status,
                Status::Fail,
                "{host} {toolkit}"
            );
        }
        assert_ne!(
            driver_vs_cuda(matrix(), &host, cuda("11.8"), false).status,
            Status::Fail
        );
    }
    assert_eq!(
        driver_vs_cuda(matrix(), &driver("520.61.05"), cuda("11.8"), false).status,
        Status::Pass
    );
}

/// Issue 41, held out: the GPU model's own and MIG driver floors (compat-facts §8: NVIDIA's
/// MIG user guide, Deployment Considerations; GPU Operator: "HGX B200 requires a driver
/// container version of 570.133.20 or later").
#[test]
fn per_sku_and_mig_driver_floors() {
    let verdict = |driver_text: &str, model: &str, mig: Option<bool>| {
        driver_vs_gpu_model(matrix(), &driver(driver_text), &[model.to_string()], mig)
    };
    let status = |driver_text: &str, model: &str, mig: Option<bool>| {
        verdict(driver_text, model, mig).map(|finding| finding.status)
    };
    // B200 on 570.124.06 passed before, with MIG on or off: both fail now.
    for mig in [Some(true), Some(false), None] {
        assert_eq!(status("570.124.06", "NVIDIA B200", mig), Some(Status::Fail));
    }
    assert_eq!(
        status("570.133.20", "NVIDIA B200", Some(true)),
        Some(Status::Pass)
    );
    // H200 needs 550.90.07 for MIG only: with MIG off it runs, and the pass names the floor.
    assert_eq!(
        status("550.54.15", "NVIDIA H200", Some(true)),
        Some(Status::Fail)
    );
    assert_eq!(status("550.54.15", "NVIDIA H200", None), Some(Status::Warn));
    let off = verdict("550.54.15", "NVIDIA H200", Some(false)).unwrap();
    assert_eq!(off.status, Status::Pass);
    assert!(
        off.message.contains("MIG on it needs 550.90.07"),
        "{}",
        off.message
    );
    assert_eq!(
        status("580.65.06", "NVIDIA B300", Some(true)),
        Some(Status::Fail)
    );
    assert_eq!(
        status("580.82.07", "NVIDIA B300", Some(true)),
        Some(Status::Pass)
    );
    assert_eq!(
        status(
            "575.51.03",
            "RTX PRO 6000 Blackwell Workstation Edition",
            Some(true)
        ),
        Some(Status::Pass)
    );
    // A model without floors has no such verdict.
    assert!(verdict("570.124.06", "GeForce RTX 4090", Some(false)).is_none());
}

/// A user matrix may add or replace a model's floor (key: `gpus` + `mig`), and a floor
/// that names no GPU is refused at its place.
#[test]
fn gpu_driver_floors_overlay_and_are_checked() {
    let user = Matrix::parse(
        "[[gpu_driver_floor]]\ngpus = [\"NVIDIA H200\"]\nmig = true\nlinux_minimum_driver = \"555.42.02\"\nstatus = \"verified\"\nsource = \"a team's own reading\"\n",
        "team.toml",
    )
    .unwrap();
    let merged = matrix().overlay(user);
    let finding = driver_vs_gpu_model(
        &merged,
        &driver("550.90.07"),
        &["NVIDIA H200".to_string()],
        Some(true),
    )
    .unwrap();
    assert_eq!(finding.status, Status::Fail, "{}", finding.message);
    assert!(finding.message.contains("555.42.02"), "{}", finding.message);
    let error = Matrix::parse(
        "[[gpu_driver_floor]]\ngpus = []\nlinux_minimum_driver = \"555.42.02\"\nstatus = \"verified\"\nsource = \"x\"\n",
        "team.toml",
    )
    .unwrap_err();
    assert!(
        error.problems[0].message.contains("`gpus` names no GPU"),
        "{error:?}"
    );
}
