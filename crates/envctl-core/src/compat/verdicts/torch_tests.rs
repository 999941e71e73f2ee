//! Unit tests of `gpu.torch-arch`: builds against GPUs, inferred variants, PTX through the
//! driver's JIT, mixed hosts, the hints' candidates, what the rows rest on, aarch64 and
//! Jetson hosts.

use super::{
    GPU_TORCH_ARCH, TorchCandidate, cuda_vs_gpu, driver_vs_cuda, gpu_vs_torch, gpus_vs_torch,
};
use crate::checks::Status;
use crate::compat::matrix::{GpuHost, Matrix};
use crate::compat::test_values::{capability, cuda, driver, matrix, torch};
use crate::compat::values::Platform;
use crate::profile::model::{CudaVersion, TorchVersion};

/// The bundled profiles (profiles/*.toml), in the order a caller would list them.
fn bundled_profiles() -> Vec<(&'static str, TorchVersion, CudaVersion)> {
    [
        ("pytorch-2.7", "2.7.1+cu128", "12.8"),
        ("pytorch-2.8", "2.8.0+cu128", "12.8"),
        ("pytorch-2.8-cu126", "2.8.0+cu126", "12.6"),
        ("pytorch-2.9", "2.9.1+cu128", "12.8"),
        ("pytorch-2.10", "2.10.0+cu128", "12.8"),
        ("pytorch-2.11", "2.11.0+cu130", "13.0"),
    ]
    .into_iter()
    .map(|(name, torch_text, cuda_text)| (name, torch(torch_text), cuda(cuda_text)))
    .collect()
}

fn candidates<'a>(
    profiles: &'a [(&'static str, TorchVersion, CudaVersion)],
) -> Vec<TorchCandidate<'a>> {
    profiles
        .iter()
        .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
        .collect()
}

#[test]
fn rtx_5090_with_torch_2_6_cu124_fails_naming_a_profile_that_works() {
    let profiles = bundled_profiles();
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("12.0"),
        &torch("2.6.0+cu124"),
        Some(cuda("12.4")),
        Some(&driver("570.124.06")),
        &candidates(&profiles),
    );
    assert_eq!(
        (finding.id.as_str(), finding.status),
        (GPU_TORCH_ARCH, Status::Fail)
    );
    assert!(
        finding
            .message
            .starts_with("sm_120 is not compatible with the current PyTorch installation"),
        "{}",
        finding.message
    );
    let hint = finding.hint.unwrap();
    assert!(hint.starts_with("use profile `pytorch-2.7`"), "{hint}");
    assert!(
        hint.contains("torch==2.7.*") && hint.contains("whl/cu128"),
        "{hint}"
    );
    assert_eq!(finding.facts["build_row"]["torch"], "2.6");
    assert_eq!(finding.facts["build_row"]["status"], "verified");
}

#[test]
fn gtx_1080_ti_with_a_cu128_build_fails_with_the_cu126_hint() {
    let profiles = bundled_profiles();
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("6.1"),
        &torch("2.8.0+cu128"),
        Some(cuda("12.8")),
        None,
        &candidates(&profiles),
    );
    assert_eq!(finding.status, Status::Fail);
    assert!(
        finding.message.starts_with("sm_61 is not compatible"),
        "{}",
        finding.message
    );
    let hint = finding.hint.unwrap();
    assert!(
        hint.starts_with("use profile `pytorch-2.8-cu126`"),
        "{hint}"
    );
    assert!(hint.contains("install torch 2.8.0+cu126"), "{hint}");
}

#[test]
fn h100_with_torch_2_8_cu128_passes() {
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("9.0"),
        &torch("2.8.0+cu128"),
        Some(cuda("12.8")),
        Some(&driver("570.124.06")),
        &[],
    );
    assert_eq!(finding.status, Status::Pass, "{}", finding.message);
    assert!(finding.message.contains("sm_90"));
    assert!(finding.hint.is_none());
}

#[test]
fn v100_with_cuda_13_fails() {
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("7.0"),
        &torch("2.11.0+cu130"),
        None,
        None,
        &[],
    );
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(
        cuda_vs_gpu(matrix(), cuda("13.0"), capability("7.0")).status,
        Status::Fail
    );
}

#[test]
fn missing_variants_are_inferred_from_cuda_and_said_so() {
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("6.1"),
        &torch("2.8.0"),
        Some(cuda("12.8")),
        None,
        &[],
    );
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(finding.facts["variant_inferred_from_cuda"], "12.8");
    assert_eq!(finding.facts["variant"], "cu128");
    assert!(
        finding.message.contains("inferred from CUDA 12.8"),
        "{}",
        finding.message
    );

    // No variant and no CUDA: every build of the release is checked.
    let all = |gpu: &str, text: &str| {
        gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability(gpu),
            &torch(text),
            None,
            None,
            &[],
        )
    };
    assert_eq!(all("8.9", "2.8.0").status, Status::Pass);
    assert_eq!(all("12.0", "2.6.0").status, Status::Fail);
    let mixed = all("6.1", "2.8.0");
    assert_eq!(mixed.status, Status::Warn);
    assert!(mixed.message.contains("cu126"), "{}", mixed.message);
    assert!(mixed.hint.unwrap().contains("2.8.0+cu126"));
}

#[test]
fn unknown_releases_and_variants_warn_without_guessing() {
    let check = |text: &str, toolkit: Option<&str>| {
        gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("8.9"),
            &torch(text),
            toolkit.map(cuda),
            None,
            &[],
        )
    };
    let unknown_variant = check("2.8.0+cu130", None);
    assert_eq!(unknown_variant.status, Status::Warn);
    assert!(
        unknown_variant.message.contains("cu126, cu128, cu129"),
        "{}",
        unknown_variant.message
    );
    let inferred = check("2.10.0", Some("13.1"));
    assert_eq!(inferred.status, Status::Warn);
    assert!(inferred.message.contains("cu131"));
    let unknown_release = check("2.16.0+cu132", None);
    assert_eq!(unknown_release.status, Status::Warn);
    assert!(
        unknown_release
            .message
            .contains("not in the bundled matrix")
    );
    let vendor = check("2.10.0a0+b4e4ee81d3", Some("13.1"));
    assert_eq!(vendor.status, Status::Warn);
    assert!(vendor.hint.unwrap().contains("get_arch_list"));
    let cpu = check("2.8.0+cpu", None);
    assert_eq!(cpu.status, Status::Warn);
    assert!(cpu.message.contains("CPU-only"));
}

/// PTX reaches a GPU newer than every machine-code target only through the driver's JIT,
/// which needs a driver at least the build's CUDA minimum. (No GPU of capability 13.0
/// exists yet: this is the rule, not a product.)
#[test]
fn ptx_needs_a_new_enough_driver() {
    let future = capability("13.0");
    let build = torch("2.8.0+cu129");
    let check = |host: Option<&str>| {
        let host = host.map(driver);
        gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            future,
            &build,
            None,
            host.as_ref(),
            &[],
        )
    };
    assert_eq!(check(None).status, Status::Warn);
    assert_eq!(check(Some("575.51.03")).status, Status::Pass);
    let old = check(Some("570.26"));
    assert_eq!(old.status, Status::Fail);
    assert!(
        old.message.contains("cudaErrorUnsupportedPtxVersion"),
        "{}",
        old.message
    );
    assert!(old.facts.contains_key("release_row"));
    // cu128 of 2.8 has no PTX: nothing reaches 13.0.
    let none = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        future,
        &torch("2.8.0+cu128"),
        None,
        None,
        &[],
    );
    assert_eq!(none.status, Status::Fail);
}

/// The matrix verdict follows the one reach rule: `a` and `f` PTX JIT-compile only on
/// their capability or family (the copy this replaced let them reach any later GPU).
#[test]
fn suffixed_ptx_reaches_only_its_capability_or_family() {
    let with_ptx = |ptx: &str| {
        let user = Matrix::parse(
            &format!(
                "[[torch_build]]\ntorch = \"2.8\"\nvariant = \"cu129\"\ntargets = [\"sm_80\"]\nptx = \"{ptx}\"\nstatus = \"derived\"\nsource = \"test\"\n"
            ),
            "user.toml",
        )
        .unwrap();
        matrix().overlay(user)
    };
    let check = |matrix: &Matrix, gpu: &str| {
        gpu_vs_torch(
            matrix,
            Some(Platform::X86_64),
            capability(gpu),
            &torch("2.8.0+cu129"),
            None,
            None,
            &[],
        )
    };
    let specific = with_ptx("compute_90a");
    let on_hopper = check(&specific, "9.0");
    assert_eq!(on_hopper.status, Status::Warn, "{}", on_hopper.message);
    assert!(
        on_hopper.message.contains("compute_90a PTX"),
        "{}",
        on_hopper.message
    );
    let on_blackwell = check(&specific, "10.0");
    assert_eq!(
        on_blackwell.status,
        Status::Fail,
        "{}",
        on_blackwell.message
    );
    let family = with_ptx("compute_100f");
    let on_b300 = check(&family, "10.3");
    assert_eq!(on_b300.status, Status::Warn, "{}", on_b300.message);
    assert!(
        on_b300.message.contains("compute_100f PTX"),
        "{}",
        on_b300.message
    );
    let on_rtx_5090 = check(&family, "12.0");
    assert_eq!(on_rtx_5090.status, Status::Fail, "{}", on_rtx_5090.message);
    let portable = with_ptx("compute_80");
    let on_h100 = check(&portable, "9.0");
    assert_eq!(on_h100.status, Status::Warn, "{}", on_h100.message);
    assert!(
        on_h100.message.contains("compute_80 PTX"),
        "{}",
        on_h100.message
    );
}

#[test]
fn mixed_hosts_get_one_finding_per_capability() {
    let profiles = bundled_profiles();
    let gpus = [capability("8.9"), capability("6.1"), capability("8.9")];
    let findings = gpus_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        &gpus,
        &torch("2.8.0+cu128"),
        Some(cuda("12.8")),
        None,
        &candidates(&profiles),
    );
    assert_eq!(findings.len(), 2);
    assert_eq!(findings[0].status, Status::Pass);
    assert_eq!(findings[0].facts["gpu_indices"], serde_json::json!([0, 2]));
    assert_eq!(findings[1].status, Status::Fail);
    assert_eq!(findings[1].facts["gpu_indices"], serde_json::json!([1]));
    // cu126 covers both sm_89 and sm_61.
    let hint = findings[1].hint.clone().unwrap();
    assert!(
        hint.starts_with("use profile `pytorch-2.8-cu126`"),
        "{hint}"
    );

    // RTX 5090 next to a GTX 1080 Ti: no build covers both.
    let gpus = [capability("12.0"), capability("6.1")];
    let findings = gpus_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        &gpus,
        &torch("2.8.0+cu126"),
        None,
        None,
        &candidates(&profiles),
    );
    assert_eq!(findings[0].status, Status::Fail);
    assert_eq!(findings[1].status, Status::Pass);
    let hint = findings[0].hint.clone().unwrap();
    assert!(
        hint.contains("no build in the matrix runs on every GPU"),
        "{hint}"
    );
    assert!(hint.starts_with("use profile `pytorch-2.7`"), "{hint}");
}

/// A candidate whose CUDA the driver cannot run is not suggested.
#[test]
fn candidates_respect_the_driver() {
    let profiles: Vec<(&'static str, TorchVersion, CudaVersion)> = vec![
        ("pytorch-2.11", torch("2.11.0+cu130"), cuda("13.0")),
        ("pytorch-2.10", torch("2.10.0+cu128"), cuda("12.8")),
    ];
    let finding = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("12.0"),
        &torch("2.6.0+cu126"),
        None,
        Some(&driver("570.124.06")),
        &candidates(&profiles),
    );
    let hint = finding.hint.unwrap();
    assert!(hint.starts_with("use profile `pytorch-2.10`"), "{hint}");
    let anything = gpu_vs_torch(
        matrix(),
        Some(Platform::X86_64),
        capability("12.0"),
        &torch("2.6.0+cu126"),
        None,
        None,
        &candidates(&profiles),
    );
    assert!(
        anything
            .hint
            .unwrap()
            .starts_with("use profile `pytorch-2.11`")
    );
}

/// Verdicts resting on derived or secondary rows say so in the text line.
#[test]
fn verdicts_say_what_their_rows_rest_on() {
    let x86 = Some(Platform::X86_64);
    let check = |text: &str| {
        gpu_vs_torch(
            matrix(),
            x86,
            capability("9.0"),
            &torch(text),
            None,
            None,
            &[],
        )
    };
    let derived = check("2.6.0+cu118");
    assert_eq!(derived.status, Status::Pass);
    assert!(
        derived.message.ends_with(" (derived: not measured)"),
        "{}",
        derived.message
    );
    let secondary = check("2.7.1+cu128");
    assert!(
        secondary.message.contains("(secondary: "),
        "{}",
        secondary.message
    );
    let measured = check("2.8.0+cu128");
    assert!(
        !measured.message.contains("derived") && !measured.message.contains("secondary"),
        "{}",
        measured.message
    );
    assert!(
        measured.message.contains("(x86_64 wheel)"),
        "{}",
        measured.message
    );
    // A release without a variant names the builds whose rows are not measured.
    let every = check("2.6.0");
    assert!(
        every
            .message
            .contains("cu118, cu126: derived: not measured"),
        "{}",
        every.message
    );
    // The driver's release row (13.3 is read through quotations) and a compile-target row.
    let quoted = driver_vs_cuda(matrix(), &driver("610.43.02"), cuda("13.3"), false);
    assert!(
        quoted.message.contains("(secondary: "),
        "{}",
        quoted.message
    );
    let targets = cuda_vs_gpu(matrix(), cuda("11.2"), capability("8.6"));
    assert!(
        targets.message.contains("(secondary: "),
        "{}",
        targets.message
    );
    assert!(
        !cuda_vs_gpu(matrix(), cuda("12.8"), capability("8.6"))
            .message
            .contains("secondary")
    );
}

/// The aarch64 wheels are judged by their own rows (issue 32): 2.15's has sm_110 for
/// Thor and nothing for a T4's 7.5; up to 2.10 PyPI's aarch64 wheel is a CPU build.
#[test]
fn aarch64_hosts_are_judged_by_the_aarch64_wheels() {
    let arm = Some(Platform::Aarch64);
    let check = |platform, gpu: &str, text: &str| {
        gpu_vs_torch(
            matrix(),
            platform,
            capability(gpu),
            &torch(text),
            None,
            None,
            &[],
        )
    };
    // Thor exists only on aarch64 hosts: its wheel is the aarch64 one, whatever was said.
    for platform in [arm, Some(Platform::X86_64), None] {
        let thor = check(platform, "11.0", "2.15.0+cu132");
        assert_eq!(thor.status, Status::Pass, "{}", thor.message);
        assert!(
            thor.message.contains("sm_110 kernels") && thor.message.contains("(aarch64 wheel)"),
            "{}",
            thor.message
        );
    }
    let t4 = check(arm, "7.5", "2.15.0+cu132");
    assert_eq!(t4.status, Status::Fail, "{}", t4.message);
    // No aarch64 build runs on 7.5: the hint says so instead of naming none.
    assert!(
        t4.hint
            .as_deref()
            .is_some_and(|hint| hint.starts_with("no aarch64 torch build in the bundled matrix")),
        "{:?}",
        t4.hint
    );
    assert!(
        t4.message.contains("sm_80 sm_90 sm_100 sm_110 sm_120"),
        "{}",
        t4.message
    );
    // On x86_64 the T4 has torch's sm_75 kernels (its linalg library is what lacks them).
    assert_eq!(
        check(Some(Platform::X86_64), "7.5", "2.15.0+cu132").status,
        Status::Warn
    );
    // A build whose libraries were not measured (2.6's PyPI cu124) has no gap to say.
    assert_eq!(
        check(Some(Platform::X86_64), "7.5", "2.6.0+cu124").status,
        Status::Pass
    );
    // An A10G's 8.6 runs the aarch64 wheel's sm_80 code; an H100 its sm_90.
    assert_eq!(check(arm, "8.6", "2.11.0+cu130").status, Status::Pass);
    assert_eq!(check(arm, "9.0", "2.11.0").status, Status::Pass);
}

/// On aarch64, builds the matrix does not list for it are not taken for the x86_64 ones:
/// PyPI's CPU wheel up to 2.10, a variant or a release without an aarch64 row, a list
/// read from the build script, and an unknown platform are each said.
#[test]
fn aarch64_builds_without_a_measured_row_are_said() {
    let arm = Some(Platform::Aarch64);
    let check = |platform, gpu: &str, text: &str| {
        gpu_vs_torch(
            matrix(),
            platform,
            capability(gpu),
            &torch(text),
            None,
            None,
            &[],
        )
    };
    // Up to 2.10, `pip install torch` on aarch64 gets a CPU build.
    let cpu = check(arm, "9.0", "2.10.0");
    assert_eq!(cpu.status, Status::Warn, "{}", cpu.message);
    assert!(cpu.message.contains("CPU-only build"), "{}", cpu.message);
    // A CUDA variant there without an aarch64 row: its list is unknown, not the x86 one.
    let unknown = check(arm, "9.0", "2.8.0+cu129");
    assert_eq!(unknown.status, Status::Warn, "{}", unknown.message);
    assert!(
        unknown
            .message
            .contains("torch 2.8 has a cu129 build, but its arch list is not in"),
        "{}",
        unknown.message
    );
    let unmeasured = check(arm, "9.0", "2.7.1");
    assert_eq!(unmeasured.status, Status::Warn);
    assert!(
        unmeasured.message.contains("has no aarch64 build"),
        "{}",
        unmeasured.message
    );
    // The build script's lists (2.8-2.10) are judged, and say they were read, not measured.
    let read = check(arm, "9.0", "2.9.1+cu128");
    assert_eq!(read.status, Status::Pass, "{}", read.message);
    assert!(
        read.message.ends_with(
            " (verified from a file: read in the build script, not measured from a wheel)"
        ),
        "{}",
        read.message
    );
    // An unknown platform is said, not taken for x86_64.
    let blind = check(None, "9.0", "2.8.0+cu128");
    assert_eq!(blind.status, Status::Warn);
    assert!(
        blind.message.contains("platform is unknown"),
        "{}",
        blind.message
    );
}

/// Jetson GPUs under L4T run neither PyPI wheel: no bundled row covers them, and the
/// hint names NVIDIA's Jetson builds.
#[test]
fn jetson_gpus_say_no_bundled_row_covers_them() {
    for gpu in ["8.7", "7.2", "6.2", "5.3"] {
        for platform in [Some(Platform::Aarch64), Some(Platform::X86_64)] {
            let finding = gpu_vs_torch(
                matrix(),
                platform,
                capability(gpu),
                &torch("2.8.0+cu128"),
                None,
                None,
                &[],
            );
            assert_eq!(finding.status, Status::Warn, "{gpu}: {}", finding.message);
            assert!(
                finding.message.contains("is a Jetson GPU")
                    && finding.message.contains("no bundled row covers"),
                "{}",
                finding.message
            );
            assert!(finding.hint.unwrap().contains("PyTorch for Jetson"));
        }
    }
    assert_eq!(matrix().gpu_host(capability("8.7")), Some(GpuHost::Jetson));
    assert_eq!(
        matrix().gpu_host(capability("12.1")),
        Some(GpuHost::Aarch64)
    );
    assert_eq!(matrix().gpu_host(capability("9.0")), None);
}
