//! Unit tests of nvidia-check's GPU passthrough: the device files, nvidia-smi, the driver
//! against the host's, the visible-device variables and the GPU count against the request,
//! and why a container without GPUs has none.

use super::*;

#[test]
fn the_driver_inside_is_compared_with_the_hosts() {
    let mut expectations = expectations();
    expectations.host = HostDriver::Known {
        version: "580.95.05".into(),
        gpu_count: Some(2),
    };
    let findings = judge(&h100(), &expectations);
    let mismatch = one(&findings, DRIVER_MATCH);
    assert_eq!(mismatch.status, Status::Fail);
    assert!(mismatch.message.contains("570.124.06") && mismatch.message.contains("580.95.05"));
    assert!(
        mismatch
            .hint
            .as_deref()
            .unwrap()
            .contains("envctl up team --recreate")
    );

    expectations.host = HostDriver::Unknown {
        reason: "NVML from libnvidia-ml.so.1: not found".into(),
    };
    let unknown = judge(&h100(), &expectations);
    assert_eq!(status_of(&unknown, DRIVER_MATCH), Status::Info);
    expectations.host = HostDriver::Remote {
        endpoint: "tcp://gpu-box:2376".into(),
    };
    let remote = judge(&h100(), &expectations);
    assert!(
        one(&remote, DRIVER_MATCH)
            .message
            .contains("tcp://gpu-box:2376")
    );
}

#[test]
fn missing_device_files_fail_with_a_hint_for_the_cause() {
    let mut report = h100();
    shell_mut(&mut report).devices.clear();
    let mut expectations = expectations();
    let asked = one(&judge(&report, &expectations), DEVICES).clone();
    assert_eq!(asked.status, Status::Fail);
    assert!(asked.message.starts_with("no NVIDIA device files"));
    assert!(asked.hint.unwrap().contains("daemon-reload"));

    expectations.gpus = Some(ExpectedGpus {
        request: GpuRequest::None,
        source: GpuSource::Profile {
            name: "team".into(),
        },
    });
    expectations.given = GivenGpus::Nothing;
    let none = one(&judge(&report, &expectations), DEVICES).clone();
    assert!(
        none.hint
            .unwrap()
            .contains("profile `team` asks for no GPU")
    );

    shell_mut(&mut report)
        .environment
        .insert("NVIDIA_VISIBLE_DEVICES".into(), Some("void".into()));
    let void = one(&judge(&report, &expectations), DEVICES).clone();
    assert!(
        void.hint
            .unwrap()
            .contains("NVIDIA_VISIBLE_DEVICES=\"void\"")
    );

    expectations.gpus = None;
    let unknown = one(&judge(&h100_without_devices(), &expectations), DEVICES).clone();
    assert!(unknown.hint.unwrap().contains("created without GPUs"));
}

fn profile_asks(request: GpuRequest) -> Option<ExpectedGpus> {
    Some(ExpectedGpus {
        request,
        source: GpuSource::Profile {
            name: "team".into(),
        },
    })
}

fn no_driver() -> HostDriver {
    HostDriver::Unknown {
        reason: "NVML from libnvidia-ml.so.1: not found".into(),
    }
}

fn cgroupfs() -> DaemonGpuFacts {
    DaemonGpuFacts {
        cgroup_driver: Some("cgroupfs".into()),
        runtimes: Some(vec!["runc".into()]),
        unknown_because: None,
    }
}

/// Issue 31: the hint for a container without GPUs comes from what it was given and what
/// the host has, never from the profile's request alone.
#[test]
fn a_container_without_gpus_is_told_the_real_reason() {
    // A profile without GPUs on a host without a driver: not told to ask for `all`.
    let mut expectations = expectations();
    expectations.gpus = profile_asks(GpuRequest::None);
    expectations.given = GivenGpus::Nothing;
    expectations.host = no_driver();
    expectations.daemon = cgroupfs();
    let hint = one(&judge(&h100_without_devices(), &expectations), DEVICES)
        .hint
        .clone()
        .unwrap();
    assert!(!hint.contains("gpus = \"all\""), "{hint}");
    assert!(
        hint.contains(
            "this host has no usable NVIDIA driver (NVML from libnvidia-ml.so.1: not found)"
        ),
        "{hint}"
    );

    // `optional` that met no GPU on that host: the reason is the missing driver, not a
    // daemon-reload (the daemon uses cgroupfs).
    expectations.gpus = profile_asks(GpuRequest::Optional);
    let hint = one(&judge(&h100_without_devices(), &expectations), DEVICES)
        .hint
        .clone()
        .unwrap();
    assert!(
        hint.contains(
            "`gpus = \"optional\"` met no GPU, because this host has no usable NVIDIA driver"
        ),
        "{hint}"
    );
    assert!(!hint.contains("daemon-reload"), "{hint}");

    // The same container on an 8-GPU host: it was created without GPUs, not robbed of them.
    expectations.host = HostDriver::Known {
        version: "570.124.06".into(),
        gpu_count: Some(8),
    };
    let findings = judge(&h100_without_devices(), &expectations);
    for id in [DEVICES, GPU_COUNT] {
        let hint = one(&findings, id).hint.clone().unwrap();
        assert!(hint.contains("created without GPUs"), "{id}: {hint}");
        assert!(hint.contains("`envctl up team --recreate`"), "{id}: {hint}");
        assert!(
            !hint.contains("MIG") && !hint.contains("daemon-reload"),
            "{id}: {hint}"
        );
    }

    // Given GPUs that did not arrive: daemon-reload only with the systemd cgroup driver.
    expectations.gpus = profile_asks(GpuRequest::All);
    expectations.given = GivenGpus::Gpus("all".into());
    let hint = one(&judge(&h100_without_devices(), &expectations), DEVICES)
        .hint
        .clone()
        .unwrap();
    assert!(
        hint.contains("cgroup driver cgroupfs, so not a `systemctl daemon-reload`"),
        "{hint}"
    );
    assert!(
        hint.contains("the daemon lists no `nvidia` runtime"),
        "{hint}"
    );
    expectations.daemon.cgroup_driver = Some("systemd".into());
    let hint = one(&judge(&h100_without_devices(), &expectations), DEVICES)
        .hint
        .clone()
        .unwrap();
    assert!(hint.contains("after `systemctl daemon-reload`"), "{hint}");
}

#[test]
fn a_missing_uvm_device_warns() {
    let mut report = h100();
    shell_mut(&mut report)
        .devices
        .retain(|device| !device.name.starts_with("nvidia-uvm"));
    let finding = one(&judge(&report, &expectations()), DEVICES).clone();
    assert_eq!(finding.status, Status::Warn);
    assert!(finding.message.contains("/dev/nvidia-uvm"));
}

#[test]
fn nvidia_smi_absent_failing_hanging_or_empty() {
    let expectations = expectations();
    let mut report = h100();
    shell_mut(&mut report).nvidia_smi = None;
    assert_eq!(
        status_of(&judge(&report, &expectations), NVIDIA_SMI),
        Status::Warn
    );

    let failing = |output: &str| {
        let mut report = h100();
        let smi = shell_mut(&mut report).nvidia_smi.as_mut().unwrap();
        smi.exit_status = Some(255);
        smi.stdout = Some(output.to_string());
        one(&judge(&report, &expectations), NVIDIA_SMI).clone()
    };
    let lost = failing("Failed to initialize NVML: Unknown Error");
    assert_eq!(lost.status, Status::Fail);
    assert!(
        lost.message
            .ends_with("Failed to initialize NVML: Unknown Error")
    );
    assert!(lost.hint.unwrap().contains("create-dev-char-symlinks"));
    let mismatch = failing("Failed to initialize NVML: Driver/library version mismatch");
    assert!(mismatch.hint.unwrap().contains("reboot"));
    let other = failing("something else");
    assert!(
        other
            .hint
            .unwrap()
            .contains("envctl exec envctl-team -- nvidia-smi")
    );

    let mut report = h100();
    let smi = shell_mut(&mut report).nvidia_smi.as_mut().unwrap();
    smi.timed_out = true;
    smi.exit_status = Some(137);
    let hung = one(&judge(&report, &expectations), NVIDIA_SMI).clone();
    assert_eq!(hung.status, Status::Fail);
    assert!(hung.message.contains("did not answer within 20 s"));

    let mut report = h100();
    shell_mut(&mut report).nvidia_smi.as_mut().unwrap().stdout = Some(String::new());
    assert_eq!(
        status_of(&judge(&report, &expectations), NVIDIA_SMI),
        Status::Warn
    );
}

#[test]
fn old_nvidia_smi_without_compute_cap_still_counts() {
    let mut report = h100();
    let smi = shell_mut(&mut report).nvidia_smi.as_mut().unwrap();
    smi.query = "index,name,driver_version,uuid,pci.bus_id,memory.total".into();
    smi.stdout = Some(
        "0, Tesla V100-SXM2-32GB, 418.226.00, GPU-a, 00000000:18:00.0, 32510\n\
         1, Tesla V100-SXM2-32GB, 418.226.00, GPU-b, 00000000:19:00.0, [N/A]\n"
            .into(),
    );
    let gpus = smi_gpus(&smi.query, smi.stdout.as_deref().unwrap());
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].memory_total_mib, Some(32510));
    assert_eq!(gpus[1].memory_total_mib, None);
    assert_eq!(gpus[0].compute_capability, None);
    let findings = judge(&report, &expectations());
    assert!(one(&findings, NVIDIA_SMI).message.contains("418.226.00"));
    assert_eq!(status_of(&findings, GPU_COUNT), Status::Pass);
}

#[test]
fn visible_device_variables() {
    let check = |value: Option<&str>, profile: Option<&str>| {
        let mut report = h100();
        shell_mut(&mut report)
            .environment
            .insert("CUDA_VISIBLE_DEVICES".into(), value.map(str::to_string));
        let mut expectations = expectations();
        if let Some(profile) = profile {
            expectations
                .environment
                .insert("CUDA_VISIBLE_DEVICES".into(), profile.into());
        }
        with_id(&judge(&report, &expectations), VISIBLE_DEVICES)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>()
    };
    let unset = check(None, None);
    assert_eq!(unset[0].status, Status::Info);
    assert_eq!(
        unset[0].message,
        "NVIDIA_VISIBLE_DEVICES=all, CUDA_VISIBLE_DEVICES unset"
    );
    assert_eq!(check(Some("0,1"), None)[0].status, Status::Info);
    assert_eq!(check(Some(""), None)[0].status, Status::Warn);
    assert_eq!(check(Some("-1"), None)[0].status, Status::Warn);
    let differs = check(Some("0"), Some("0,1"));
    assert_eq!(differs[0].status, Status::Warn);
    assert!(
        differs[0]
            .message
            .contains("the profile sets CUDA_VISIBLE_DEVICES=0,1")
    );
    assert_eq!(check(Some("0,1"), Some("0,1"))[0].status, Status::Info);
}

#[test]
fn gpu_count_against_the_request() {
    let check = |request: GpuRequest, host_count: Option<u32>| {
        let mut expectations = expectations();
        expectations.host = HostDriver::Known {
            version: "570.124.06".into(),
            gpu_count: host_count,
        };
        expectations.gpus = Some(ExpectedGpus {
            request,
            source: GpuSource::Profile {
                name: "team".into(),
            },
        });
        one(&judge(&h100(), &expectations), GPU_COUNT).clone()
    };
    // Two GPUs are visible in the recording.
    assert_eq!(check(GpuRequest::Count(2), None).status, Status::Pass);
    let fewer = check(GpuRequest::Count(3), None);
    assert_eq!(fewer.status, Status::Fail);
    assert!(
        fewer
            .message
            .contains("sees 2 of the 3 GPUs profile `team` asks for")
    );
    assert_eq!(check(GpuRequest::Count(1), None).status, Status::Warn);
    assert_eq!(check(GpuRequest::All, Some(2)).status, Status::Pass);
    assert_eq!(check(GpuRequest::All, Some(4)).status, Status::Fail);
    assert_eq!(check(GpuRequest::All, None).status, Status::Pass);
    assert_eq!(check(GpuRequest::Optional, Some(2)).status, Status::Pass);
    assert_eq!(
        check(GpuRequest::Devices(vec!["0".into(), "1".into()]), None).status,
        Status::Pass
    );
    assert_eq!(check(GpuRequest::None, None).status, Status::Warn);

    let mut expectations = expectations();
    expectations.gpus = None;
    assert_eq!(
        status_of(&judge(&h100(), &expectations), GPU_COUNT),
        Status::Info
    );
}
