//! Unit tests of the parser and of every rule of the judge, over the recorded reports in
//! `tests/fixtures/nvidia-check/` and variations of them (both sides of each threshold).

use std::collections::BTreeMap;

use super::*;
use crate::checks::{Finding, Status, worst};
use crate::compat::{GPU_TORCH_ARCH, Matrix, TorchCandidate};
use crate::profile::model::{CudaVersion, GpuRequest, TorchVersion};

const H100_PYTHON: &str = include_str!("../../../../tests/fixtures/nvidia-check/h100/python.json");
const H100_SMI: &str = include_str!("../../../../tests/fixtures/nvidia-check/h100/nvidia-smi.txt");
const RTX_5090_PYTHON: &str =
    include_str!("../../../../tests/fixtures/nvidia-check/rtx-5090-torch-2.6/python.json");
const RTX_5090_SMI: &str =
    include_str!("../../../../tests/fixtures/nvidia-check/rtx-5090-torch-2.6/nvidia-smi.txt");
const CPU_PYTHON: &str =
    include_str!("../../../../tests/fixtures/nvidia-check/torch-cpu/python.json");

const QUERY: &str = "index,name,driver_version,uuid,pci.bus_id,memory.total,compute_cap";

fn candidates() -> &'static [TorchCandidate<'static>] {
    let bundled: &'static Vec<(String, TorchVersion, CudaVersion)> =
        Box::leak(Box::new(crate::profile::bundled::pytorch_candidates()));
    let candidates: Vec<TorchCandidate<'static>> = bundled
        .iter()
        .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
        .collect();
    Box::leak(candidates.into_boxed_slice())
}

/// A healthy container's shell facts, with `smi` as nvidia-smi's answer.
fn shell(smi: &str) -> ShellFacts {
    let mut environment = BTreeMap::new();
    environment.insert(
        "NVIDIA_VISIBLE_DEVICES".to_string(),
        Some("all".to_string()),
    );
    environment.insert("CUDA_VISIBLE_DEVICES".to_string(), None);
    environment.insert(
        "CUDA_DEVICE_ORDER".to_string(),
        Some("PCI_BUS_ID".to_string()),
    );
    environment.insert(
        "NVIDIA_DRIVER_CAPABILITIES".to_string(),
        Some("compute,utility".to_string()),
    );
    let device = |name: &str| DeviceFile {
        name: name.to_string(),
        kind: "character".to_string(),
    };
    ShellFacts {
        schema_version: 1,
        escaped: true,
        user: Some("uid=0(root) gid=0(root)".into()),
        devices: vec![
            device("nvidia0"),
            device("nvidia1"),
            device("nvidia-uvm"),
            device("nvidia-uvm-tools"),
            device("nvidiactl"),
        ],
        nvidia_smi: Some(SmiRun {
            path: Some("/usr/bin/nvidia-smi".into()),
            query: QUERY.into(),
            exit_status: Some(0),
            timed_out: false,
            limit_seconds: Some(20),
            stdout: Some(smi.to_string()),
            stderr: Some(String::new()),
        }),
        shm: Some(CommandOutput {
            exit_status: Some(0),
            output: Some(df(8 * 1024 * 1024)),
        }),
        ulimits: Ulimits {
            memlock: Some("unlimited".into()),
            stack: Some("65536".into()),
        },
        environment,
        python: Some("/opt/conda/bin/python3".into()),
        temporary_directory: Some("/tmp/envctl-nvidia-check.12.0".into()),
        elapsed_seconds: Some(0),
    }
}

/// `df -P -k /dev/shm` for a tmpfs of `kibibytes`.
fn df(kibibytes: u64) -> String {
    format!(
        "Filesystem     1024-blocks  Used Available Capacity Mounted on\nshm {kibibytes} 0 {kibibytes} 0% /dev/shm\n"
    )
}

fn python(text: &str) -> PythonFacts {
    python_document(text).unwrap().unwrap()
}

/// A run of scenario `python_text` / `smi` that went well.
fn raw(python_text: &str, smi: &str) -> RawReport {
    RawReport {
        schema_version: SCHEMA_VERSION,
        run: RunFacts {
            timeout_seconds: 120,
            runner: Some("sh".into()),
            exit_code: Some(0),
            ..RunFacts::default()
        },
        shell: Some(shell(smi)),
        python_run: Some(PythonRun {
            path: Some("/opt/conda/bin/python3".into()),
            budget_seconds: Some(119),
            exit_status: Some(0),
            timed_out: false,
            stderr: Some(String::new()),
        }),
        python: Some(python(python_text)),
    }
}

fn h100() -> RawReport {
    raw(H100_PYTHON, H100_SMI)
}

fn expectations() -> Expectations<'static> {
    Expectations {
        target: "envctl-team".into(),
        profile: Some("team".into()),
        host: HostDriver::Known {
            version: "570.124.06".into(),
            gpu_count: Some(2),
        },
        gpus: Some(ExpectedGpus {
            request: GpuRequest::All,
            source: GpuSource::Profile {
                name: "team".into(),
            },
        }),
        stack_torch: None,
        environment: BTreeMap::new(),
        given: GivenGpus::Gpus("all".into()),
        daemon: DaemonGpuFacts {
            cgroup_driver: Some("systemd".into()),
            runtimes: Some(vec!["nvidia".into(), "runc".into()]),
            unknown_because: None,
        },
        matrix: Matrix::bundled(),
        candidates: candidates(),
    }
}

fn with_id<'a>(findings: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|finding| finding.id == id).collect()
}

/// The one finding with `id`.
fn one<'a>(findings: &'a [Finding], id: &str) -> &'a Finding {
    let found = with_id(findings, id);
    assert_eq!(found.len(), 1, "{id}: {findings:#?}");
    found[0]
}

fn status_of(findings: &[Finding], id: &str) -> Status {
    one(findings, id).status
}

fn device_mut(raw: &mut RawReport, index: usize) -> &mut DeviceFacts {
    &mut raw.python.as_mut().unwrap().devices[index]
}

fn torch_mut(raw: &mut RawReport) -> &mut TorchFacts {
    raw.python.as_mut().unwrap().torch.as_mut().unwrap()
}

fn shell_mut(raw: &mut RawReport) -> &mut ShellFacts {
    raw.shell.as_mut().unwrap()
}

#[test]
fn healthy_h100_passes_everything() {
    let findings = judge(&h100(), &expectations());
    let bad: Vec<&Finding> = findings
        .iter()
        .filter(|finding| finding.status >= Status::Warn)
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for id in [
        DEVICES,
        NVIDIA_SMI,
        DRIVER_MATCH,
        GPU_COUNT,
        PYTHON,
        TORCH_IMPORT,
        TORCH_CUDA_BUILD,
        TORCH_CUDNN,
        TORCH_CUDA_AVAILABLE,
        GPU_TORCH_ARCH,
        MATMUL,
        BF16,
        TF32,
        SHM,
        MEMLOCK,
        STACK,
        NCCL,
        DEVICE_ORDER,
    ] {
        assert_eq!(
            status_of(&findings, id),
            Status::Pass,
            "{id}: {findings:#?}"
        );
    }
    assert!(
        one(&findings, NVIDIA_SMI)
            .message
            .contains("2 × NVIDIA H100 80GB HBM3, driver 570.124.06")
    );
    assert_eq!(one(&findings, TORCH_CUDNN).message, "cuDNN 9.10.2");
    // Two identical GPUs fold into one line per check.
    let matmul = one(&findings, MATMUL);
    assert!(
        matmul
            .message
            .starts_with("GPU 0-1 (NVIDIA H100 80GB HBM3): float32 matmul matches"),
        "{}",
        matmul.message
    );
    let arch = one(&findings, GPU_TORCH_ARCH);
    assert!(
        arch.message.contains("has sm_90 kernels for sm_90 (Hopper"),
        "{}",
        arch.message
    );
    assert_eq!(arch.facts["gpu_indices"], serde_json::json!([0, 1]));
    assert_eq!(arch.facts["matrix_verdict"]["status"], "pass");
    // Throughput differs per GPU: one line each.
    assert_eq!(with_id(&findings, THROUGHPUT).len(), 2);
    assert!(
        with_id(&findings, THROUGHPUT)[0]
            .message
            .contains("bfloat16 matmul 8192×8192: 718.4 TFLOP/s")
    );
    assert_eq!(with_id(&findings, COPY).len(), 2);
    // Sections come in order.
    let areas: Vec<Area> = findings
        .iter()
        .map(|finding| finding.area.unwrap())
        .collect();
    let mut sorted = areas.clone();
    sorted.sort();
    assert_eq!(areas, sorted);
}

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

fn h100_without_devices() -> RawReport {
    let mut report = h100();
    shell_mut(&mut report).devices.clear();
    report
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
    assert!(plain.hint.unwrap().contains("profile `pytorch-"));
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

#[test]
fn timeouts_are_named_with_the_option_to_raise_them() {
    let mut report = RawReport {
        run: RunFacts {
            timeout_seconds: 2,
            timed_out: true,
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let findings = judge(&report, &expectations());
    let timeout = one(&findings, TIMEOUT);
    assert_eq!(timeout.status, Status::Fail);
    assert!(timeout.message.contains("within its timeout of 2 s"));
    assert!(timeout.hint.as_deref().unwrap().contains("--timeout 60"));
    assert!(with_id(&findings, REPORT).is_empty());

    report.run.timed_out = false;
    report.shell = Some(shell(H100_SMI));
    report.python_run = Some(PythonRun {
        path: Some("/usr/bin/python3".into()),
        budget_seconds: Some(1),
        exit_status: Some(137),
        timed_out: true,
        stderr: Some(String::new()),
    });
    let findings = judge(&report, &expectations());
    let timeout = one(&findings, TIMEOUT);
    assert!(
        timeout
            .message
            .contains("within its 1 s of the 2 s timeout")
    );
    // The shell's facts are still judged, and the Python part's absence is not blamed twice.
    assert_eq!(status_of(&findings, DEVICES), Status::Pass);
    assert!(with_id(&findings, PYTHON).is_empty());
}

#[test]
fn no_report_at_all() {
    let report = RawReport {
        run: RunFacts {
            timeout_seconds: 120,
            exit_code: Some(1),
            stderr_tail: "sh: syntax error\n".into(),
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let finding = one(&judge(&report, &expectations()), REPORT).clone();
    assert_eq!(finding.status, Status::Fail);
    assert!(finding.message.contains("(exit code 1): sh: syntax error"));

    let bare = RawReport {
        run: RunFacts {
            shell_missing: true,
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let finding = one(&judge(&bare, &expectations()), REPORT).clone();
    assert!(finding.message.contains("neither `sh` nor `python3`"));
}

#[test]
fn the_output_parser_finds_every_part_among_stray_lines() {
    let shell_json = serde_json::to_string(&shell(H100_SMI)).unwrap();
    let output = format!(
        "welcome to the image!\n{SHELL_MARKER}\n{shell_json}\n{PYTHON_RUN_MARKER}\n{{\"path\":\"/usr/bin/python3\",\"budget_seconds\":118,\"exit_status\":0,\"timed_out\":false,\"stderr\":\"\"}}\n{PYTHON_OUTPUT_MARKER}\nsitecustomize says hi\n{{not json\n\n{PYTHON_MARKER}\n{}\n\n{END_MARKER}\n",
        serde_json::to_string(&python(H100_PYTHON)).unwrap()
    );
    let parsed = parse_output(&output);
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    assert_eq!(parsed.shell.unwrap().devices.len(), 5);
    assert_eq!(parsed.python_run.unwrap().budget_seconds, Some(118));
    assert_eq!(parsed.python.unwrap().devices.len(), 2);

    // A recording printed by a stand-in: pretty JSON after a stray line, no marker.
    let recorded =
        format!("{PYTHON_OUTPUT_MARKER}\na stray line\n{RTX_5090_PYTHON}\n{END_MARKER}\n");
    let parsed = parse_output(&recorded);
    assert_eq!(
        parsed.python.unwrap().torch.unwrap().version.as_deref(),
        Some("2.6.0+cu124")
    );

    // Cut short (a timeout): the shell part alone, and garbage where JSON should be.
    let cut = format!("{SHELL_MARKER}\n{shell_json}\n{PYTHON_RUN_MARKER}\n{{\"path\": \n");
    let parsed = parse_output(&cut);
    assert!(parsed.shell.is_some());
    assert!(parsed.python_run.is_none());
    assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
    assert!(parse_output("").shell.is_none());
    assert_eq!(python_document("no json here\n"), Ok(None));
}

#[test]
fn text_readings() {
    let size = df_size(
        "Filesystem           1024-blocks    Used Available Capacity Mounted on\nshm                      65536         0     65536   0% /dev/shm\n",
    )
    .unwrap();
    assert_eq!(size.total_bytes, 64 << 20);
    assert_eq!(df_size("df: /dev/shm: No such file or directory"), None);
    assert_eq!(ulimit_value("unlimited"), Some(Limit::Unlimited));
    assert_eq!(ulimit_value("8192\n"), Some(Limit::Bytes(8 << 20)));
    assert_eq!(ulimit_value("sh: ulimit: bad"), None);
    assert_eq!(crate::units::binary_limit(64 << 20), "64 MiB");
    assert_eq!(crate::units::binary_limit(8 << 30), "8.0 GiB");
    assert_eq!(crate::units::index_ranges(&[3, 0, 1, 2, 5]), "0-3, 5");
    let gpus = smi_gpus(QUERY, "No devices were found\n");
    assert!(gpus.is_empty());
}

#[test]
fn the_embedded_scripts_are_the_files() {
    assert!(SHELL_SCRIPT.contains(SHELL_MARKER) && SHELL_SCRIPT.contains(END_MARKER));
    assert!(PYTHON_SCRIPT.contains(PYTHON_MARKER));
    let command = shell_command(120, true);
    assert_eq!(command[..2], ["sh", "-c"]);
    assert_eq!(command[5..], ["120", "1"]);
    let python = python_command("python3", 99, false);
    assert_eq!(python[3..], ["--envctl-wrapped", "--budget", "99"]);
}
