//! Unit tests of nvidia-check's Environment: /dev/shm, memlock and stack limits, NCCL and the
//! CUDA device order.

use super::*;

#[test]
fn shm_threshold() {
    let shm = |kibibytes: u64| {
        let mut report = h100();
        shell_mut(&mut report).shm = Some(CommandOutput {
            exit_status: Some(0),
            output: Some(df(kibibytes)),
        });
        one(&judge(&report, &expectations()), SHM).clone()
    };
    let small = shm(1024 * 1024 - 1);
    assert_eq!(small.status, Status::Warn);
    assert!(small.message.contains("Bus error"));
    assert!(small.hint.unwrap().contains("shm_size = \"8g\""));
    assert_eq!(
        shm(64 * 1024).message.split(':').next().unwrap(),
        "/dev/shm is 64 MiB"
    );
    assert_eq!(shm(1024 * 1024).status, Status::Pass);
    let mut report = h100();
    shell_mut(&mut report).shm = Some(CommandOutput {
        exit_status: Some(1),
        output: Some("df: /dev/shm: No such file or directory".into()),
    });
    assert_eq!(
        status_of(&judge(&report, &expectations()), SHM),
        Status::Warn
    );
}

#[test]
fn memlock_and_stack_limits() {
    let limits = |memlock: &str, stack: &str| {
        let mut report = h100();
        shell_mut(&mut report).ulimits = Ulimits {
            memlock: Some(memlock.into()),
            stack: Some(stack.into()),
        };
        let findings = judge(&report, &expectations());
        (status_of(&findings, MEMLOCK), status_of(&findings, STACK))
    };
    assert_eq!(
        limits("unlimited", "unlimited"),
        (Status::Pass, Status::Pass)
    );
    assert_eq!(limits("65536", "65536").0, Status::Warn);
    assert_eq!(limits("unlimited", "65536").1, Status::Pass);
    assert_eq!(limits("unlimited", "65535").1, Status::Info);
    assert_eq!(limits("unlimited", "8192").1, Status::Info);
    assert_eq!(limits("unlimited", "8191").1, Status::Warn);
    assert_eq!(limits("ulimit: bad option", "8192").0, Status::Info);
}

#[test]
fn nccl_matters_with_several_gpus() {
    assert_eq!(
        status_of(&judge(&h100(), &expectations()), NCCL),
        Status::Pass
    );
    let mut report = h100();
    let torch = torch_mut(&mut report);
    torch.nccl_version = None;
    torch.nccl_error = Some("RuntimeError: NCCL is not available".into());
    assert_eq!(
        status_of(&judge(&report, &expectations()), NCCL),
        Status::Warn
    );
    let findings = judge(&raw(RTX_5090_PYTHON, RTX_5090_SMI), &expectations());
    assert_eq!(status_of(&findings, NCCL), Status::Info);
}

#[test]
fn device_order_matters_on_mixed_hosts() {
    let order = |value: Option<&str>, mixed: bool| {
        let mut report = h100();
        shell_mut(&mut report)
            .environment
            .insert("CUDA_DEVICE_ORDER".into(), value.map(str::to_string));
        if mixed {
            device_mut(&mut report, 1).name = Some("Tesla V100-SXM2-32GB".into());
        }
        one(&judge(&report, &expectations()), DEVICE_ORDER).clone()
    };
    assert_eq!(order(Some("PCI_BUS_ID"), true).status, Status::Pass);
    let mixed = order(None, true);
    assert_eq!(mixed.status, Status::Warn);
    assert!(mixed.hint.unwrap().contains("PCI_BUS_ID"));
    assert_eq!(order(Some("FASTEST_FIRST"), true).status, Status::Warn);
    assert_eq!(order(None, false).status, Status::Info);
}
