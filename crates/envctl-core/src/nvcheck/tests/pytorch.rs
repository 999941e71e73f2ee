//! Unit tests of nvidia-check's PyTorch: the interpreter, `import torch`, its build against the
//! profile's `[stack]`, cuDNN, `torch.cuda.is_available()` and the GPUs torch counts.

use super::*;

#[test]
fn torch_without_cuda_fails_and_skips_the_gpu_checks() {
    let findings = judge(&raw(CPU_PYTHON, H100_SMI), &expectations());
    let build = one(&findings, TORCH_CUDA_BUILD);
    assert_eq!(build.status, Status::Fail);
    assert!(
        build
            .message
            .contains("torch 2.8.0+cpu is a CPU-only build"),
        "{}",
        build.message
    );
    assert!(
        build.hint.as_deref().unwrap().contains("profile `"),
        "{:?}",
        build.hint
    );
    assert!(with_id(&findings, TORCH_CUDA_AVAILABLE).is_empty());
    assert!(with_id(&findings, GPU_TORCH_ARCH).is_empty());
    assert!(
        findings
            .iter()
            .all(|finding| finding.area != Some(Area::Compute))
    );
    // Passthrough itself is fine.
    assert_eq!(status_of(&findings, DEVICES), Status::Pass);
}

#[test]
fn no_python_fails_only_when_the_profile_promises_torch() {
    let mut report = h100();
    shell_mut(&mut report).python = None;
    report.python_run = Some(PythonRun::default());
    report.python = None;
    let mut expectations = expectations();
    let plain = one(&judge(&report, &expectations), PYTHON).clone();
    assert_eq!(plain.status, Status::Warn);
    assert!(
        plain
            .message
            .starts_with("no python3 or python in the container")
    );
    let hint = plain.hint.unwrap();
    assert!(hint.contains("profile `pytorch-"), "{hint}");
    // Issue 40: the suggestion is an image that exists, never a tag only made by pattern.
    for unconfirmed in crate::profile::bundled::TAG_UNCONFIRMED {
        assert!(!hint.contains(&format!("`{unconfirmed}`")), "{hint}");
    }
    expectations.stack_torch = Some("2.8.0+cu128".parse().unwrap());
    assert_eq!(
        status_of(&judge(&report, &expectations), PYTHON),
        Status::Fail
    );
}

#[test]
fn a_python_that_dies_is_a_failure_with_its_last_words() {
    let mut report = h100();
    report.python = None;
    report.python_run = Some(PythonRun {
        path: Some("/usr/bin/python3".into()),
        budget_seconds: Some(100),
        exit_status: Some(1),
        timed_out: false,
        stderr: Some("Traceback (most recent call last):\n  File \"<string>\"\nSyntaxError: invalid syntax\n".into()),
    });
    let finding = one(&judge(&report, &expectations()), PYTHON).clone();
    assert_eq!(finding.status, Status::Fail);
    assert!(
        finding.message.contains("exit code 1")
            && finding.message.ends_with("SyntaxError: invalid syntax"),
        "{}",
        finding.message
    );
}

#[test]
fn torch_missing_broken_or_not_what_the_profile_says() {
    let mut expectations = expectations();
    let mut report = h100();
    *torch_mut(&mut report) = TorchFacts::default();
    report.python.as_mut().unwrap().devices.clear();
    assert_eq!(
        status_of(&judge(&report, &expectations), TORCH_IMPORT),
        Status::Warn
    );
    expectations.stack_torch = Some("2.8.0+cu128".parse().unwrap());
    assert_eq!(
        status_of(&judge(&report, &expectations), TORCH_IMPORT),
        Status::Fail
    );

    let mut broken = h100();
    let torch = torch_mut(&mut broken);
    torch.import_error = Some("ImportError: libcudnn.so.9: cannot open shared object file".into());
    torch.version = None;
    let finding = one(&judge(&broken, &expectations), TORCH_IMPORT).clone();
    assert_eq!(finding.status, Status::Fail);
    assert!(finding.message.contains("libcudnn.so.9"));

    // [stack] matches: no finding; differs: a warning naming both.
    assert!(with_id(&judge(&h100(), &expectations), TORCH_STACK).is_empty());
    expectations.stack_torch = Some("2.8.0".parse().unwrap());
    assert!(with_id(&judge(&h100(), &expectations), TORCH_STACK).is_empty());
    expectations.stack_torch = Some("2.7.1+cu128".parse().unwrap());
    let differs = one(&judge(&h100(), &expectations), TORCH_STACK).clone();
    assert_eq!(differs.status, Status::Warn);
    assert!(differs.message.contains("2.8.0+cu128") && differs.message.contains("2.7.1+cu128"));
}

#[test]
fn cudnn_versions_and_absence() {
    assert_eq!(cudnn_version(91002), "9.10.2");
    assert_eq!(cudnn_version(90100), "9.1.0");
    assert_eq!(cudnn_version(8902), "8.9.2");
    assert_eq!(cudnn_version(8500), "8.5.0");
    let mut report = h100();
    let torch = torch_mut(&mut report);
    torch.cudnn_version = None;
    torch.cudnn_available = Some(false);
    assert_eq!(
        status_of(&judge(&report, &expectations()), TORCH_CUDNN),
        Status::Warn
    );
}

#[test]
fn cuda_unavailable_says_why() {
    let mut report = h100();
    let torch = torch_mut(&mut report);
    torch.cuda_available = Some(false);
    torch.warnings = vec!["CUDA initialization: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver.".into()];
    report.python.as_mut().unwrap().devices.clear();
    let findings = judge(&report, &expectations());
    let finding = one(&findings, TORCH_CUDA_AVAILABLE);
    assert_eq!(finding.status, Status::Fail);
    assert!(finding.message.contains("too old (found version 12020)"));
    assert!(
        finding
            .hint
            .as_deref()
            .unwrap()
            .contains("torch's CUDA 12.8")
    );
    assert!(
        findings
            .iter()
            .all(|finding| finding.area != Some(Area::Compute))
    );

    let mut hidden = h100_without_devices();
    torch_mut(&mut hidden).cuda_available = Some(false);
    let finding = one(&judge(&hidden, &expectations()), TORCH_CUDA_AVAILABLE).clone();
    assert!(finding.hint.unwrap().contains("no GPU device files"));
}

#[test]
fn torch_and_nvidia_smi_counts() {
    let mut report = h100();
    torch_mut(&mut report).device_count = Some(1);
    report.python.as_mut().unwrap().devices.truncate(1);
    let findings = judge(&report, &expectations());
    assert_eq!(with_id(&findings, TORCH_DEVICES)[0].status, Status::Warn);
    shell_mut(&mut report)
        .environment
        .insert("CUDA_VISIBLE_DEVICES".into(), Some("0".into()));
    let findings = judge(&report, &expectations());
    assert_eq!(with_id(&findings, TORCH_DEVICES)[0].status, Status::Info);
    // One line per model: two identical GPUs make one.
    let lines = with_id(&judge(&h100(), &expectations()), TORCH_DEVICES)
        .into_iter()
        .map(|finding| finding.message.clone())
        .collect::<Vec<_>>();
    assert_eq!(
        lines,
        [
            "torch sees 2 GPUs",
            "GPU 0-1: NVIDIA H100 80GB HBM3, sm_90 (compute capability 9.0), 79.2 GiB"
        ]
    );
}

#[test]
fn a_torch_that_cannot_count_its_gpus_is_not_zero_gpus() {
    // torch.cuda.device_count() raised: no count and no device list.
    let mut report = h100();
    let torch = torch_mut(&mut report);
    torch.device_count = None;
    torch.device_count_error = Some("RuntimeError: CUDA error: unspecified launch failure\nCUDA kernel errors might be asynchronously reported".into());
    report.python.as_mut().unwrap().devices.clear();
    let findings = judge(&report, &expectations());
    let finding = one(&findings, TORCH_DEVICES);
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(
        finding.message,
        "torch.cuda.device_count() failed: RuntimeError: CUDA error: unspecified launch failure, so torch's GPU count is unknown"
    );
    assert!(!finding.message.contains("0 GPUs"));
    assert!(finding.hint.as_deref().unwrap().contains(
        "envctl exec envctl-team -- python3 -c 'import torch; print(torch.cuda.device_count())'"
    ));
    assert!(
        finding.facts["device_count_error"]
            .as_str()
            .unwrap()
            .starts_with("RuntimeError: CUDA error")
    );
    // Without a GPU request it only warns, and without an error it still says unknown.
    let mut unasked = expectations();
    unasked.gpus = None;
    torch_mut(&mut report).device_count_error = None;
    let finding = one(&judge(&report, &unasked), TORCH_DEVICES).clone();
    assert_eq!(finding.status, Status::Warn);
    assert_eq!(
        finding.message,
        "torch.cuda.device_count() gave no count, so torch's GPU count is unknown"
    );
    unasked.gpus = Some(ExpectedGpus {
        request: GpuRequest::None,
        source: GpuSource::Container,
    });
    assert_eq!(
        status_of(&judge(&report, &unasked), TORCH_DEVICES),
        Status::Warn
    );
}
