//! Unit tests of nvidia-check's Compute: the kernel and the matmuls against their tolerances,
//! bfloat16 and TF32 before Ampere, the copy bandwidth and what `--quick` skips.

use super::*;

fn matmul_case(check: impl Fn(&mut DeviceFacts), id: &str) -> Finding {
    let mut report = h100();
    for device in &mut report.python.as_mut().unwrap().devices {
        check(device);
    }
    one(&judge(&report, &expectations()), id).clone()
}

#[test]
fn matmul_tolerances_on_both_sides() {
    let float32 = |error: f64| {
        matmul_case(
            |device| device.matmul.as_mut().unwrap().relative_error = Some(error),
            MATMUL,
        )
        .status
    };
    assert_eq!(float32(9e-4), Status::Pass);
    assert_eq!(float32(1.1e-3), Status::Fail);
    let tf32 = |error: f64| {
        matmul_case(
            |device| device.tf32_matmul.as_mut().unwrap().relative_error = Some(error),
            TF32,
        )
        .status
    };
    assert_eq!(tf32(9e-3), Status::Pass);
    assert_eq!(tf32(1.1e-2), Status::Fail);
    let bf16 = |error: f64| {
        matmul_case(
            |device| device.bf16_matmul.as_mut().unwrap().relative_error = Some(error),
            BF16,
        )
        .status
    };
    assert_eq!(bf16(4.9e-2), Status::Pass);
    assert_eq!(bf16(5.1e-2), Status::Fail);
    let nan = matmul_case(
        |device| device.matmul.as_mut().unwrap().all_finite = Some(false),
        MATMUL,
    );
    assert_eq!(nan.status, Status::Fail);
    assert!(nan.message.contains("NaN"));
    let failed = matmul_case(
        |device| {
            device.matmul.as_mut().unwrap().error =
                Some("RuntimeError: CUDA error: an illegal memory access was encountered".into());
        },
        MATMUL,
    );
    assert_eq!(failed.status, Status::Fail);
    assert!(failed.hint.unwrap().contains("Xid"));
}

#[test]
fn pre_ampere_gpus_get_no_bf16_or_tf32_verdicts_against_them() {
    let mut report = h100();
    for device in &mut report.python.as_mut().unwrap().devices {
        device.capability = Some(vec![7, 0]);
        device.name = Some("Tesla V100-SXM2-32GB".into());
        device.bf16_supported = Some(false);
        device.bf16_matmul = None;
        device.tf32_matmul = None;
    }
    let findings = judge(&report, &expectations());
    assert_eq!(status_of(&findings, BF16), Status::Info);
    assert_eq!(status_of(&findings, TF32), Status::Info);
    assert!(
        one(&findings, BF16)
            .message
            .contains("compute capability 7.0")
    );
}

#[test]
fn copy_bandwidth_threshold_and_pinning() {
    let copy = |rate: f64, pinned: bool| {
        let mut report = h100();
        report.python.as_mut().unwrap().devices.truncate(1);
        torch_mut(&mut report).device_count = Some(1);
        let device = device_mut(&mut report, 0);
        let copy = device.copy.as_mut().unwrap();
        copy.gigabytes_per_second = Some(rate);
        copy.pinned = Some(pinned);
        one(&judge(&report, &expectations()), COPY).clone()
    };
    assert_eq!(copy(3.1, true).status, Status::Info);
    let slow = copy(2.9, true);
    assert_eq!(slow.status, Status::Warn);
    assert!(slow.hint.unwrap().contains("nvidia-smi -q -d PCI"));
    let pageable = copy(10.0, false);
    assert_eq!(pageable.status, Status::Warn);
    assert!(pageable.hint.unwrap().contains("memlock = -1"));
}

#[test]
fn quick_runs_skip_the_timed_parts() {
    let mut report = h100();
    let python = report.python.as_mut().unwrap();
    python.quick = true;
    for device in &mut python.devices {
        device.benchmark = None;
        device.copy = None;
    }
    let findings = judge(&report, &expectations());
    let skipped = one(&findings, THROUGHPUT);
    assert_eq!(skipped.status, Status::Info);
    assert!(skipped.message.contains("--quick"));
    assert!(with_id(&findings, COPY).is_empty());
}
