//! Unit tests of nvidia-check's Architectures: `gpu.torch-arch` over the build's real arch list,
//! and the matrix's verdict as a cross-check or, without a list, alone.

use super::*;

#[test]
fn rtx_5090_with_torch_2_6_fails_with_the_classic_message_and_a_profile() {
    let mut expectations = expectations();
    expectations.host = HostDriver::Known {
        version: "575.57.08".into(),
        gpu_count: Some(1),
    };
    let findings = judge(&raw(RTX_5090_PYTHON, RTX_5090_SMI), &expectations);
    let arch = one(&findings, GPU_TORCH_ARCH);
    assert_eq!(arch.status, Status::Fail);
    assert!(
        arch.message
            .starts_with("sm_120 is not compatible with the current PyTorch installation: torch 2.6.0+cu124 has kernels only for sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"),
        "{}",
        arch.message
    );
    let hint = arch.hint.as_deref().unwrap();
    assert!(
        hint.starts_with(
            "this image's torch 2.6.0+cu124 has no kernels for sm_120: use profile `pytorch-2."
        ),
        "{hint}"
    );
    // Driver 575 cannot run CUDA 13 builds: the profile named is a CUDA 12.8 one.
    assert!(!hint.contains("pytorch-2.11"), "{hint}");
    assert!(arch.facts.contains_key("torch_warning"));
    assert_eq!(arch.facts["matrix_verdict"]["status"], "fail");
    assert!(with_id(&findings, TORCH_ARCH_MATRIX).is_empty());
    let kernel = one(&findings, KERNEL);
    assert_eq!(kernel.status, Status::Fail);
    assert!(
        kernel
            .hint
            .as_deref()
            .unwrap()
            .contains("see Architectures")
    );
    // The checks that failed for the same reason are named on the kernel's line.
    assert!(
        kernel
            .message
            .ends_with("(the float32, TF32, bfloat16 and timed matmuls failed the same way)"),
        "{}",
        kernel.message
    );
    assert!(with_id(&findings, MATMUL).is_empty());
    assert!(with_id(&findings, THROUGHPUT).is_empty());
    assert_eq!(status_of(&findings, COPY), Status::Info);
    assert_eq!(status_of(&findings, TORCH_CUDA_AVAILABLE), Status::Pass);
    assert_eq!(status_of(&findings, DRIVER_MATCH), Status::Pass);
    assert_eq!(worst(&findings), Status::Fail);
}

/// The H100 recording with another GPU capability and arch list.
fn arch_case(capability: [u32; 2], arch_list: &[&str], torch: &str, cuda: &str) -> Vec<Finding> {
    let mut report = h100();
    let torch_facts = torch_mut(&mut report);
    torch_facts.arch_list = Some(arch_list.iter().map(|arch| arch.to_string()).collect());
    torch_facts.version = Some(torch.into());
    torch_facts.cuda = Some(cuda.into());
    for device in &mut report.python.as_mut().unwrap().devices {
        device.capability = Some(capability.to_vec());
    }
    judge(&report, &expectations())
}

#[test]
fn arch_rules_over_the_real_arch_list() {
    // Same major, lower minor: sm_86 code runs on an sm_89 GPU.
    let ada = arch_case([8, 9], &["sm_80", "sm_86", "sm_90"], "2.8.0+cu128", "12.8");
    let finding = one(&ada, GPU_TORCH_ARCH);
    assert_eq!(finding.status, Status::Pass);
    assert!(
        finding
            .message
            .contains("no sm_89 kernels, but its sm_86 kernels run")
    );
    // Architecture-specific targets run only on their own capability.
    assert_eq!(
        status_of(
            &arch_case([9, 0], &["sm_80", "sm_90a"], "2.8.0+cu128", "12.8"),
            GPU_TORCH_ARCH
        ),
        Status::Pass
    );
    assert_eq!(
        status_of(
            &arch_case([10, 0], &["sm_80", "sm_90a"], "2.8.0+cu128", "12.8"),
            GPU_TORCH_ARCH
        ),
        Status::Fail
    );
    // PTX only: passes when torch's kernels ran, warns when they did not.
    let ptx = arch_case(
        [12, 0],
        &["sm_80", "sm_90", "compute_90"],
        "2.8.0+cu129",
        "12.9",
    );
    let finding = one(&ptx, GPU_TORCH_ARCH);
    assert_eq!(finding.status, Status::Pass, "{}", finding.message);
    assert!(finding.message.contains("compute_90 PTX"));
    let mut report = h100();
    let torch_facts = torch_mut(&mut report);
    torch_facts.arch_list = Some(vec!["sm_90".into(), "compute_90".into()]);
    for device in &mut report.python.as_mut().unwrap().devices {
        device.capability = Some(vec![12, 0]);
        device.elementwise = None;
    }
    assert_eq!(
        status_of(&judge(&report, &expectations()), GPU_TORCH_ARCH),
        Status::Warn
    );
    // PTX of a newer target does not reach an older GPU.
    assert_eq!(
        status_of(
            &arch_case([8, 0], &["sm_90", "compute_90"], "2.8.0+cu128", "12.8"),
            GPU_TORCH_ARCH
        ),
        Status::Fail
    );
}

#[test]
fn the_matrix_is_cross_checked_against_the_real_list() {
    // The matrix says 2.8.0+cu128 has sm_120; a build whose real list lacks it disagrees.
    let findings = arch_case([12, 0], &["sm_80", "sm_90"], "2.8.0+cu128", "12.8");
    assert_eq!(status_of(&findings, GPU_TORCH_ARCH), Status::Fail);
    let disagreement = one(&findings, TORCH_ARCH_MATRIX);
    assert_eq!(disagreement.status, Status::Warn);
    assert!(disagreement.message.contains("says otherwise for sm_120"));
    // The hint still names a profile that works, found from the candidates.
    let hint = one(&findings, GPU_TORCH_ARCH).hint.clone().unwrap();
    assert!(hint.contains("use profile `pytorch-2."), "{hint}");
    // A vendor build the matrix does not know: the real list decides, no disagreement.
    let vendor = arch_case([9, 0], &["sm_80", "sm_90"], "2.10.0a0+b4e4ee81d3", "13.1");
    assert_eq!(status_of(&vendor, GPU_TORCH_ARCH), Status::Pass);
    assert!(with_id(&vendor, TORCH_ARCH_MATRIX).is_empty());
}

#[test]
fn without_an_arch_list_the_matrix_decides() {
    let mut report = h100();
    let torch = torch_mut(&mut report);
    torch.arch_list = Some(Vec::new());
    torch.version = Some("2.6.0+cu124".into());
    torch.cuda = Some("12.4".into());
    for device in &mut report.python.as_mut().unwrap().devices {
        device.capability = Some(vec![12, 0]);
    }
    let finding = one(&judge(&report, &expectations()), GPU_TORCH_ARCH).clone();
    assert_eq!(finding.status, Status::Fail);
    assert!(
        finding.message.starts_with("sm_120 is not compatible"),
        "{}",
        finding.message
    );
}
