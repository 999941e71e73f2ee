//! Unit tests of the parser and of every rule of the judge, over the recorded reports in
//! `tests/fixtures/nvidia-check/` and variations of them (both sides of each threshold).
//!
//! The judged parts have their tests beside each other under `tests/`, one file per
//! section ([`Area`]) and one for the run and its report; here are the fixtures they share
//! and the test of a healthy run across every section.

mod architectures;
mod compute;
mod environment;
mod passthrough;
mod pytorch;
mod report;

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

fn h100_without_devices() -> RawReport {
    let mut report = h100();
    shell_mut(&mut report).devices.clear();
    report
}
