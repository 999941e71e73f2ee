//! The verdicts of nvidia-check: [`judge`] turns a [`RawReport`] and what the host and the
//! profile lead to expect ([`Expectations`]) into findings. Pure: no I/O, no clock.
//!
//! Here: the finding ids, what is expected, the facts read once ([`View`]) and the run's
//! own findings (the report, timeouts). Each section ([`Area`]) judges in a file of its
//! own: `passthrough`, `pytorch`, `architectures`, `compute`, `environment`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::report::{DeviceFacts, PythonFacts, RawReport, ShellFacts, TorchFacts};
use super::values::{SmiGpu, last_line, smi_gpus};
use crate::checks::Finding;
use crate::compat::{ComputeCapability, Matrix, TorchCandidate};
use crate::profile::model::{GpuRequest, TorchVersion};

mod architectures;
mod compute;
mod environment;
mod passthrough;
mod pytorch;

pub use passthrough::no_gpu_explained;

/// The script's report could not be read (no shell, garbled output).
pub const REPORT: &str = "nvidia-check.report";
/// The check, or a part of it, ran out of time.
pub const TIMEOUT: &str = "nvidia-check.timeout";
/// `/dev/nvidia*` in the container.
pub const DEVICES: &str = "gpu.devices";
/// `nvidia-smi` runs inside.
pub const NVIDIA_SMI: &str = "gpu.nvidia-smi";
/// The driver seen inside is the host's.
pub const DRIVER_MATCH: &str = "gpu.driver-match";
/// `NVIDIA_VISIBLE_DEVICES` and `CUDA_VISIBLE_DEVICES`.
pub const VISIBLE_DEVICES: &str = "gpu.visible-devices";
/// The number of GPUs visible vs what the profile asked for.
pub const GPU_COUNT: &str = "gpu.count";
/// A Python interpreter, and whether the Python half ran.
pub const PYTHON: &str = "python.interpreter";
/// `import torch`.
pub const TORCH_IMPORT: &str = "torch.import";
/// The image's torch vs the profile's `[stack]`.
pub const TORCH_STACK: &str = "torch.stack";
/// `torch.version.cuda`: a CUDA build or a CPU-only one.
pub const TORCH_CUDA_BUILD: &str = "torch.cuda-build";
/// `torch.backends.cudnn.version()`.
pub const TORCH_CUDNN: &str = "torch.cudnn";
/// `torch.cuda.is_available()`.
pub const TORCH_CUDA_AVAILABLE: &str = "torch.cuda-available";
/// The GPUs torch sees: count, names, capabilities.
pub const TORCH_DEVICES: &str = "torch.devices";
/// The matrix's verdict disagrees with the build's real arch list.
pub const TORCH_ARCH_MATRIX: &str = "gpu.torch-arch-matrix";
/// One of torch's own kernels runs.
pub const KERNEL: &str = "compute.kernel";
/// A float32 matmul matches the CPU.
pub const MATMUL: &str = "compute.matmul";
/// bfloat16: native support and a matmul within tolerance.
pub const BF16: &str = "compute.bf16";
/// TF32: support, the matmul setting, and a matmul within tolerance.
pub const TF32: &str = "compute.tf32";
/// The timed matmul, in TFLOP/s.
pub const THROUGHPUT: &str = "compute.throughput";
/// Pinned host-to-device copy bandwidth.
pub const COPY: &str = "compute.copy-bandwidth";
/// The size of `/dev/shm`.
pub const SHM: &str = "environment.shm";
/// `ulimit -l`.
pub const MEMLOCK: &str = "environment.memlock";
/// `ulimit -s`.
pub const STACK: &str = "environment.stack";
/// NCCL when several GPUs are visible.
pub const NCCL: &str = "environment.nccl";
/// `CUDA_DEVICE_ORDER`.
pub const DEVICE_ORDER: &str = "environment.device-order";

/// The largest error of a float32 matmul (TF32 off), relative to the largest value of the
/// exact product: rounding gives about 1e-6; a wrong result is off by order 1.
pub const FLOAT32_TOLERANCE: f64 = 1e-3;
/// TF32 keeps 10 mantissa bits (about 1e-3 per product).
pub const TF32_TOLERANCE: f64 = 1e-2;
/// bfloat16 keeps 7 mantissa bits (about 4e-3 per rounding).
pub const BFLOAT16_TOLERANCE: f64 = 5e-2;
/// Below this `/dev/shm` warns: Docker's default is 64 MiB, and DataLoader workers pass
/// whole batches through it.
pub const SHM_MINIMUM_BYTES: u64 = 1 << 30;
/// Below this stack limit warns (8 MiB is Linux's default).
pub const STACK_MINIMUM_BYTES: u64 = 8 << 20;
/// NVIDIA's recommended stack limit for its PyTorch containers (`--ulimit stack=67108864`).
pub const STACK_RECOMMENDED_BYTES: u64 = 64 << 20;
/// Below this host-to-device bandwidth warns: PCIe 3.0 x16 gives about 12 GB/s, so a few
/// GB/s means a narrow or degraded link.
pub const COPY_MINIMUM_GIGABYTES_PER_SECOND: f64 = 3.0;

/// The host's NVIDIA driver, as NVML on the machine envctl runs on says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HostDriver {
    Known {
        version: String,
        gpu_count: Option<u32>,
    },
    /// NVML could not say (no driver, no library): nothing to compare.
    Unknown { reason: String },
    /// The daemon is on another machine: this machine's driver says nothing about it.
    Remote { endpoint: String },
}

/// Where the GPU request that the count is checked against comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum GpuSource {
    /// The container's profile (its `envctl.profile` label).
    Profile { name: String },
    /// The container's own device request (a container without a profile).
    Container,
    /// A Slurm job's allocation, for a check run here inside the job.
    SlurmJob { job: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpectedGpus {
    pub request: GpuRequest,
    pub source: GpuSource,
}

/// The GPUs a container was really given, as the engine reports them (its `gpu` device
/// request, CDI devices, or GPU device nodes): what a missing GPU is explained from, rather
/// than from what the profile asks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(tag = "state", content = "gpus", rename_all = "snake_case")]
pub enum GivenGpus {
    /// Not read (no container facts at hand).
    #[default]
    Unknown,
    /// The container was created with no GPU at all (`DeviceRequests: null`, no CDI device,
    /// no GPU node).
    Nothing,
    /// What it was given: `all`, `count=2`, `devices=0,1`, `nodes=3`.
    Gpus(String),
}

/// The daemon's facts that decide how GPUs reach a container, each unknown when the
/// daemon's `/info` could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DaemonGpuFacts {
    /// `systemd` or `cgroupfs`.
    pub cgroup_driver: Option<String>,
    /// The registered runtimes (`runc`, `nvidia`, …).
    pub runtimes: Option<Vec<String>>,
    /// Why these are unknown, when they are.
    pub unknown_because: Option<String>,
}

/// What the host and the profile lead to expect inside the container.
#[derive(Debug, Clone, Serialize)]
pub struct Expectations<'a> {
    /// TARGET as the user wrote it, for the commands hints name.
    pub target: String,
    /// The container's profile, when it has one that resolves.
    pub profile: Option<String>,
    pub host: HostDriver,
    pub gpus: Option<ExpectedGpus>,
    /// The profile's `[stack] torch`.
    pub stack_torch: Option<TorchVersion>,
    /// The profile's own values of the GPU variables it sets (`NVIDIA_VISIBLE_DEVICES`…).
    pub environment: BTreeMap<String, String>,
    /// The GPUs the container was really given.
    #[serde(default)]
    pub given: GivenGpus,
    /// The daemon's cgroup driver and runtimes.
    #[serde(default)]
    pub daemon: DaemonGpuFacts,
    #[serde(skip)]
    pub matrix: &'a Matrix,
    #[serde(skip)]
    pub candidates: &'a [TorchCandidate<'a>],
}

/// The sections nvidia-check prints: [`crate::checks::Area`]'s nvidia-check variants,
/// set on each finding by the section function that makes it (see [`judge`]).
pub use crate::checks::Area;

/// The facts read once and shared by the rules.
struct View<'r> {
    raw: &'r RawReport,
    shell: Option<&'r ShellFacts>,
    python: Option<&'r PythonFacts>,
    torch: Option<&'r TorchFacts>,
    /// nvidia-smi ran and answered.
    smi_gpus: Option<Vec<SmiGpu>>,
    /// The GPUs torch found, when CUDA works in torch.
    devices: &'r [DeviceFacts],
    environment: BTreeMap<String, Option<String>>,
}

impl<'r> View<'r> {
    fn new(raw: &'r RawReport) -> Self {
        let shell = raw.shell.as_ref();
        let python = raw.python.as_ref();
        let smi_gpus = shell
            .and_then(|shell| shell.nvidia_smi.as_ref())
            .filter(|run| run.exit_status == Some(0) && !run.timed_out)
            .map(|run| smi_gpus(&run.query, run.stdout.as_deref().unwrap_or("")));
        View {
            raw,
            shell,
            python,
            torch: python.and_then(|python| python.torch.as_ref()),
            smi_gpus,
            devices: python.map_or(&[], |python| python.devices.as_slice()),
            environment: shell
                .map(|shell| shell.environment.clone())
                .unwrap_or_default(),
        }
    }

    fn variable(&self, name: &str) -> Option<&str> {
        self.environment
            .get(name)
            .and_then(|value| value.as_deref())
    }

    fn gpu_device_files(&self) -> Vec<&str> {
        self.shell
            .map(|shell| {
                shell
                    .devices
                    .iter()
                    .map(|device| device.name.as_str())
                    .filter(|name| is_gpu_device_file(name))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many GPUs the container sees, and who says so: nvidia-smi, else torch, else
    /// the device files.
    fn visible_gpus(&self) -> Option<(usize, &'static str)> {
        if let Some(gpus) = &self.smi_gpus {
            return Some((gpus.len(), "nvidia-smi"));
        }
        if let Some(count) = self.torch_cuda_works().then(|| self.torch_device_count()) {
            return count.map(|count| (count as usize, "torch"));
        }
        self.shell
            .map(|_| (self.gpu_device_files().len(), "the /dev/nvidia* files"))
    }

    fn torch_device_count(&self) -> Option<u32> {
        self.torch.and_then(|torch| torch.device_count)
    }

    fn torch_cuda_works(&self) -> bool {
        self.torch
            .is_some_and(|torch| torch.cuda_available == Some(true))
    }

    /// The driver version nvidia-smi reports inside.
    fn inside_driver(&self) -> Option<&str> {
        self.smi_gpus
            .as_ref()
            .and_then(|gpus| gpus.iter().find_map(|gpu| gpu.driver_version.as_deref()))
    }

    /// Each GPU's index, compute capability and name: torch's view, else nvidia-smi's.
    fn capabilities(&self) -> Vec<(u32, ComputeCapability, Option<String>)> {
        let from_torch: Vec<_> = self
            .devices
            .iter()
            .filter_map(|device| {
                let capability = device.capability.as_deref()?;
                let [major, minor] = capability else {
                    return None;
                };
                Some((
                    device.index,
                    ComputeCapability::new(*major, *minor),
                    device.name.clone(),
                ))
            })
            .collect();
        if !from_torch.is_empty() {
            return from_torch;
        }
        self.smi_gpus
            .iter()
            .flatten()
            .filter_map(|gpu| Some((gpu.index?, gpu.compute_capability?, gpu.name.clone())))
            .collect()
    }

    fn python_path(&self) -> Option<&str> {
        self.raw
            .python_run
            .as_ref()
            .and_then(|run| run.path.as_deref())
            .or_else(|| self.shell.and_then(|shell| shell.python.as_deref()))
            .or(self
                .raw
                .run
                .runner
                .as_deref()
                .filter(|runner| *runner != "sh"))
    }
}

/// `nvidia0`, `nvidia7`: a GPU's own device file (not `nvidiactl`, `nvidia-uvm`).
fn is_gpu_device_file(name: &str) -> bool {
    name.strip_prefix("nvidia")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
}

/// Judges one run. The order of the findings is the order of the sections.
pub fn judge(raw: &RawReport, expectations: &Expectations<'_>) -> Vec<Finding> {
    let view = View::new(raw);
    let mut findings = Vec::new();
    type Section = fn(&View<'_>, &Expectations<'_>, &mut Vec<Finding>);
    let sections: [(Area, Section); 6] = [
        (Area::Passthrough, run),
        (Area::Passthrough, passthrough::passthrough),
        (Area::PyTorch, pytorch::pytorch),
        (Area::Architectures, architectures::architectures),
        (Area::Compute, compute::compute),
        (Area::Environment, environment::environment),
    ];
    for (area, section) in sections {
        let before = findings.len();
        section(&view, expectations, &mut findings);
        for finding in &mut findings[before..] {
            // Every unit test that judges a run holds the ids to their section's convention.
            #[cfg(test)]
            assert_eq!(
                section_by_id(&finding.id),
                area,
                "finding `{}` is made in the {area:?} section but its id reads as another",
                finding.id
            );
            finding.area = Some(area);
        }
    }
    // Stable: within a section, the order the checks ran in.
    findings.sort_by_key(|finding| finding.area);
    findings
}

fn exec_hint(expectations: &Expectations<'_>, command: &str) -> String {
    // Run here (`envctl nvidia-check`, no container): the command itself.
    if expectations.target.is_empty() {
        return command.to_string();
    }
    format!("envctl exec {} -- {command}", expectations.target)
}

fn recreate_hint(expectations: &Expectations<'_>) -> String {
    match &expectations.profile {
        Some(profile) => format!("envctl up {profile} --recreate"),
        None => "recreate the container".to_string(),
    }
}

fn timeout_hint(seconds: u64) -> String {
    format!(
        "give it longer with `--timeout {}`, or skip the timed matmul and copy with `--quick`; a hang in nvidia-smi or in CUDA's start often means a GPU in a bad state: run `nvidia-smi` on the host and look for Xid errors in `dmesg`",
        seconds.saturating_mul(2).max(60)
    )
}

/// The exec itself: the timeout, a missing shell, a report that cannot be read.
fn run(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    findings.extend(timeouts(view));
    findings.extend(no_report(view, expectations));
    for problem in &view.raw.run.problems {
        findings.push(Finding::warn(
            REPORT,
            format!("part of the report was unreadable: {problem}"),
        ));
    }
    if let Some(shell) = view.shell
        && !shell.escaped
    {
        findings.push(Finding::info(
            REPORT,
            "the image has no `sed` or `tr`: the shell part could not quote texts, so nvidia-smi's output, /dev/shm and the ulimits are unknown",
        ));
    }
}

/// `nvidia-check.timeout`: the whole check ran out of time (saying how far it got), and
/// the Python part ran out of its share.
fn timeouts(view: &View<'_>) -> Vec<Finding> {
    let run = &view.raw.run;
    let mut findings = Vec::new();
    if run.timed_out {
        let reached = match (view.shell.is_some(), view.raw.python_run.is_some()) {
            (false, _) => "not even the shell part reported",
            (true, false) => {
                "the shell part reported, the Python part (PyTorch and compute checks) did not"
            }
            (true, true) => "the report was cut short",
        };
        findings.push(
            Finding::fail(
                TIMEOUT,
                format!(
                    "nvidia-check did not finish within its timeout of {} s: {reached}",
                    run.timeout_seconds
                ),
            )
            .with_hint(timeout_hint(run.timeout_seconds))
            .with_fact("timeout_seconds", run.timeout_seconds),
        );
    }
    if let Some(python_run) = &view.raw.python_run
        && python_run.timed_out
    {
        let budget = python_run.budget_seconds.unwrap_or(run.timeout_seconds);
        findings.push(
            Finding::fail(
                TIMEOUT,
                format!(
                    "the Python part (PyTorch and compute checks) did not finish within its {budget} s of the {} s timeout and was stopped",
                    run.timeout_seconds
                ),
            )
            .with_hint(timeout_hint(run.timeout_seconds))
            .with_fact("timeout_seconds", run.timeout_seconds)
            .with_fact("python_budget_seconds", budget),
        );
    }
    findings
}

/// `nvidia-check.report` when neither half reported and time did not run out: the
/// container has no shell and no Python, or the script printed nothing.
fn no_report(view: &View<'_>, expectations: &Expectations<'_>) -> Option<Finding> {
    let run = &view.raw.run;
    if run.timed_out || view.python.is_some() {
        return None;
    }
    if run.shell_missing {
        return Some(
            Finding::fail(
                REPORT,
                "the container has neither `sh` nor `python3`/`python`: nvidia-check cannot run inside it",
            )
            .with_hint(format!(
                "check the GPU from an image with a shell (e.g. `envctl exec {} -- nvidia-smi` works when the runtime mounted it)",
                expectations.target
            )),
        );
    }
    if view.shell.is_some() {
        return None;
    }
    let detail = match last_line(&run.stderr_tail) {
        "" => String::new(),
        line => format!(": {line}"),
    };
    let code = run
        .exit_code
        .map_or_else(String::new, |code| format!(" (exit code {code})"));
    Some(
        Finding::fail(
            REPORT,
            format!("the check script printed no report{code}{detail}"),
        )
        .with_hint(format!(
            "run it again with `-v`, or look at the container with `{}`",
            exec_hint(expectations, "sh -c 'ls -l /dev/nvidia*; nvidia-smi'")
        ))
        .with_fact("stderr", &run.stderr_tail),
    )
}

// `1 GPU`, `2 GPUs`: the one plural helper, shared with every other message.
use crate::units::plural;

/// The id convention each section's findings follow (`torch.`/`python.` → PyTorch, …);
/// a test holds every finding's section to it, so ids stay readable by section.
#[cfg(test)]
pub fn section_by_id(id: &str) -> Area {
    if id.starts_with(crate::compat::GPU_TORCH_ARCH) {
        Area::Architectures
    } else if id.starts_with("python.") || id.starts_with("torch.") {
        Area::PyTorch
    } else if id.starts_with("compute.") {
        Area::Compute
    } else if id.starts_with("environment.") {
        Area::Environment
    } else {
        Area::Passthrough
    }
}
