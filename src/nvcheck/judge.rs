//! The verdicts of nvidia-check: [`judge`] turns a [`RawReport`] and what the host and the
//! profile lead to expect ([`Expectations`]) into findings. Pure: no I/O, no clock.

use std::collections::BTreeMap;

use serde::Serialize;

use super::report::{DeviceFacts, MatmulCheck, PythonFacts, RawReport, ShellFacts, TorchFacts};
use super::values::{
    Limit, SmiGpu, cudnn_version, df_size, first_line, last_line, smi_gpus, ulimit_value,
};
use crate::checks::{Finding, Status};
use crate::compat::{
    ComputeCapability, DriverVersion, GPU_TORCH_ARCH, Matrix, Reach, Target, TorchCandidate,
    gpu_label, gpu_vs_torch, reach,
};
use crate::profile::model::{CudaVersion, GpuRequest, TorchVersion};
use crate::units::{binary_limit, index_ranges};

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

/// The id convention each section's findings follow (`torch.`/`python.` → PyTorch, …);
/// a test holds every finding's section to it, so ids stay readable by section.
#[cfg(test)]
pub(crate) fn section_by_id(id: &str) -> Area {
    if id.starts_with(GPU_TORCH_ARCH) {
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
        (Area::Passthrough, passthrough),
        (Area::PyTorch, pytorch),
        (Area::Architectures, architectures),
        (Area::Compute, compute),
        (Area::Environment, environment),
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
    let run = &view.raw.run;
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
    if run.shell_missing && view.python.is_none() && !run.timed_out {
        findings.push(
            Finding::fail(
                REPORT,
                "the container has neither `sh` nor `python3`/`python`: nvidia-check cannot run inside it",
            )
            .with_hint(format!(
                "check the GPU from an image with a shell (e.g. `envctl exec {} -- nvidia-smi` works when the runtime mounted it)",
                expectations.target
            )),
        );
    } else if view.shell.is_none() && view.python.is_none() && !run.timed_out {
        let detail = match last_line(&run.stderr_tail) {
            "" => String::new(),
            line => format!(": {line}"),
        };
        let code = run
            .exit_code
            .map_or_else(String::new, |code| format!(" (exit code {code})"));
        findings.push(
            Finding::fail(
                REPORT,
                format!("the check script printed no report{code}{detail}"),
            )
            .with_hint(format!(
                "run it again with `-v`, or look at the container with `{}`",
                exec_hint(expectations, "sh -c 'ls -l /dev/nvidia*; nvidia-smi'")
            ))
            .with_fact("stderr", &run.stderr_tail),
        );
    }
    for problem in &run.problems {
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

/// GPU passthrough: device files, nvidia-smi, the driver, the visible devices, the count.
fn passthrough(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some(shell) = view.shell else {
        return;
    };
    devices(view, shell, expectations, findings);
    nvidia_smi(view, shell, expectations, findings);
    driver_match(view, expectations, findings);
    visible_devices(view, expectations, findings);
    gpu_count(view, expectations, findings);
}

fn devices(
    view: &View<'_>,
    shell: &ShellFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let names: Vec<&str> = shell
        .devices
        .iter()
        .map(|device| device.name.as_str())
        .collect();
    let gpus = view.gpu_device_files();
    if gpus.is_empty() {
        let message = if names.is_empty() {
            "no NVIDIA device files (/dev/nvidia0, /dev/nvidiactl…) in the container: it has no GPU access".to_string()
        } else {
            format!(
                "no GPU device file (/dev/nvidia0…) in the container, only {}: it has no GPU",
                names.join(", ")
            )
        };
        let hidden = view
            .variable("NVIDIA_VISIBLE_DEVICES")
            .filter(|value| matches!(value.trim(), "void" | "none" | ""));
        let hint = match hidden {
            Some(value) => format!(
                "NVIDIA_VISIBLE_DEVICES={value:?} tells the NVIDIA runtime to pass no GPU: remove it from the image or profile and {}",
                recreate_hint(expectations)
            ),
            None => no_gpu_explained(expectations),
        };
        findings.push(
            Finding::fail(DEVICES, message)
                .with_hint(hint)
                .with_fact("device_files", &names),
        );
        return;
    }
    if !names.contains(&"nvidia-uvm") {
        findings.push(
            Finding::warn(
                DEVICES,
                format!(
                    "{} but no /dev/nvidia-uvm: CUDA fails to start (CUDA_ERROR_UNKNOWN) without the nvidia_uvm kernel module",
                    plural(gpus.len(), "GPU device file")
                ),
            )
            .with_hint(format!(
                "load it on the host (`sudo modprobe nvidia-uvm`, or `sudo nvidia-modprobe -u -c=0`), then {}",
                recreate_hint(expectations)
            ))
            .with_fact("device_files", &names),
        );
        return;
    }
    findings.push(
        Finding::pass(
            DEVICES,
            format!(
                "device files for {}: {}",
                plural(gpus.len(), "GPU"),
                names
                    .iter()
                    .map(|name| format!("/dev/{name}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        )
        .with_fact("device_files", &names),
    );
}

fn nvidia_smi(
    view: &View<'_>,
    shell: &ShellFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let Some(run) = &shell.nvidia_smi else {
        let capabilities = view
            .variable("NVIDIA_DRIVER_CAPABILITIES")
            .map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
        findings.push(
            Finding::warn(NVIDIA_SMI, "nvidia-smi is not in the container")
                .with_hint(format!(
                    "the NVIDIA runtime mounts it when the container gets GPUs and NVIDIA_DRIVER_CAPABILITIES includes `utility` (here: {capabilities}); `compute,utility` is what CUDA images set"
                )),
        );
        return;
    };
    let output = format!(
        "{}\n{}",
        run.stdout.as_deref().unwrap_or(""),
        run.stderr.as_deref().unwrap_or("")
    );
    if run.timed_out {
        findings.push(
            Finding::fail(
                NVIDIA_SMI,
                format!(
                    "nvidia-smi did not answer within {} s",
                    run.limit_seconds.unwrap_or_default()
                ),
            )
            .with_hint("a GPU may be in a bad state: run `nvidia-smi` on the host and look for Xid errors in `dmesg`")
            .with_fact("output", output.trim()),
        );
        return;
    }
    if run.exit_status != Some(0) {
        let said = first_line(&output);
        let hint = if output.contains("Failed to initialize NVML: Unknown Error") {
            format!(
                "the container lost its GPU access, typically after `systemctl daemon-reload` with the systemd cgroup driver: restart the container ({}); to stop it happening, run `sudo nvidia-ctk system create-dev-char-symlinks --create-all` on the host or switch to CDI",
                recreate_hint(expectations)
            )
        } else if output.contains("Driver/library version mismatch") {
            "the host's NVIDIA kernel module and its libraries differ (a driver upgrade without a reboot): reboot the host or reload the nvidia modules, then recreate the container".to_string()
        } else if output.contains("couldn't communicate with the NVIDIA driver") {
            "the NVIDIA driver is not loaded or not reachable: check `nvidia-smi` on the host and `envctl doctor`".to_string()
        } else {
            format!(
                "see its full output: `{}`",
                exec_hint(expectations, "nvidia-smi")
            )
        };
        let code = run
            .exit_status
            .map_or_else(|| "?".to_string(), |code| code.to_string());
        findings.push(
            Finding::fail(
                NVIDIA_SMI,
                format!("nvidia-smi failed (exit code {code}): {said}"),
            )
            .with_hint(hint)
            .with_fact("output", output.trim()),
        );
        return;
    }
    let gpus = view.smi_gpus.clone().unwrap_or_default();
    if gpus.is_empty() {
        findings.push(
            Finding::warn(NVIDIA_SMI, "nvidia-smi ran but listed no GPU")
                .with_hint(format!(
                    "see its output: `{}`",
                    exec_hint(expectations, "nvidia-smi")
                ))
                .with_fact("output", output.trim()),
        );
        return;
    }
    let driver = view
        .inside_driver()
        .map_or_else(String::new, |driver| format!(", driver {driver}"));
    findings.push(
        Finding::pass(
            NVIDIA_SMI,
            format!("nvidia-smi sees {}{driver}", models_text(&gpus)),
        )
        .with_fact("gpus", &gpus),
    );
}

/// `2 × NVIDIA H100 80GB HBM3`, `NVIDIA GeForce RTX 5090`, `1 × A, 1 × B`.
fn models_text(gpus: &[SmiGpu]) -> String {
    let mut models: Vec<(String, usize)> = Vec::new();
    for gpu in gpus {
        let name = gpu.name.clone().unwrap_or_else(|| "an unnamed GPU".into());
        match models.iter_mut().find(|(model, _)| *model == name) {
            Some((_, count)) => *count += 1,
            None => models.push((name, 1)),
        }
    }
    if let [(name, 1)] = models.as_slice() {
        return name.clone();
    }
    models
        .iter()
        .map(|(name, count)| format!("{count} × {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn driver_match(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some(inside) = view.inside_driver() else {
        return;
    };
    match &expectations.host {
        HostDriver::Unknown { reason } => findings.push(
            Finding::info(
                DRIVER_MATCH,
                format!("driver {inside} inside; the host's driver is unknown ({reason}), so they are not compared"),
            )
            .with_fact("inside", inside),
        ),
        HostDriver::Remote { endpoint } => findings.push(
            Finding::info(
                DRIVER_MATCH,
                format!("driver {inside} inside; the daemon at {endpoint} is on another machine, so it is not compared with this machine's"),
            )
            .with_fact("inside", inside),
        ),
        HostDriver::Known { version, .. } => {
            let same = match (
                inside.parse::<DriverVersion>(),
                version.parse::<DriverVersion>(),
            ) {
                (Ok(inside), Ok(host)) => inside == host,
                _ => inside.trim() == version.trim(),
            };
            let finding = if same {
                Finding::pass(
                    DRIVER_MATCH,
                    format!("the driver inside is the host's ({version})"),
                )
            } else {
                Finding::fail(
                    DRIVER_MATCH,
                    format!("the container sees driver {inside}, but the host runs {version}"),
                )
                .with_hint(format!(
                    "either the image ships its own NVIDIA driver libraries (an image must not install driver packages: the runtime mounts the host's), or the host's driver changed after the container started: {}",
                    recreate_hint(expectations)
                ))
            };
            findings.push(
                finding
                    .with_fact("inside", inside)
                    .with_fact("host", version),
            );
        }
    }
}

fn visible_devices(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    const NAMES: [&str; 2] = ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"];
    let shown = |name: &str| match view.variable(name) {
        Some(value) => format!("{name}={value}"),
        None => format!("{name} unset"),
    };
    let facts = |finding: Finding| {
        NAMES.iter().fold(finding, |finding, name| {
            finding.with_fact(name, view.variable(name))
        })
    };
    let mut problems = Vec::new();
    for name in NAMES {
        if let Some(wanted) = expectations.environment.get(name)
            && view.variable(name) != Some(wanted.as_str())
        {
            problems.push(
                Finding::warn(
                    VISIBLE_DEVICES,
                    format!(
                        "{} inside, but the profile sets {name}={wanted}",
                        shown(name)
                    ),
                )
                .with_hint(format!(
                    "the container predates the profile's value: {}",
                    recreate_hint(expectations)
                )),
            );
        }
    }
    if let Some(value) = view.variable("CUDA_VISIBLE_DEVICES")
        && matches!(value.trim(), "" | "-1" | "none" | "NoDevFiles")
    {
        problems.push(
            Finding::warn(
                VISIBLE_DEVICES,
                format!("CUDA_VISIBLE_DEVICES={value:?} hides every GPU from CUDA"),
            )
            .with_hint("unset it, or list the GPUs to use (`CUDA_VISIBLE_DEVICES=0,1`)"),
        );
    }
    if problems.is_empty() {
        findings.push(facts(Finding::info(
            VISIBLE_DEVICES,
            format!(
                "{}, {}",
                shown("NVIDIA_VISIBLE_DEVICES"),
                shown("CUDA_VISIBLE_DEVICES")
            ),
        )));
    } else {
        findings.extend(problems.into_iter().map(facts));
    }
}

/// Why a container has no GPU, from the facts: what it was really given (its device
/// requests and CDI devices), what its profile asks, the host's NVML and the daemon's
/// cgroup driver and runtimes. Never the profile's request alone: a profile without GPUs
/// on a host without a driver is not told to ask for `gpus = "all"`, which `up` refuses
/// there, and a container started without GPUs is not told it lost them.
pub fn no_gpu_explained(expectations: &Expectations<'_>) -> String {
    let request = expectations.gpus.as_ref().map(|expected| &expected.request);
    let profile = expectations.profile.as_deref();
    let up = |flag: &str| match profile {
        Some(name) => format!("`envctl up {name}{flag}`"),
        None => "create it again with GPUs (`docker run --gpus all`)".to_string(),
    };
    // What this host's NVML says: the reason there can be no GPU, or how many there are.
    let host_gpus: Result<Option<u32>, String> = match &expectations.host {
        HostDriver::Known { gpu_count, .. } => Ok(*gpu_count),
        HostDriver::Unknown { reason } => {
            Err(format!("this host has no usable NVIDIA driver ({reason})"))
        }
        // The daemon's host is another machine: its GPUs are not known from here.
        HostDriver::Remote { .. } => Ok(None),
    };
    let no_gpu_here = match &host_gpus {
        Err(reason) => Some(reason.clone()),
        Ok(Some(0)) => Some("NVML on this host lists no GPU".to_string()),
        Ok(_) => None,
    };
    let given_nothing = match &expectations.given {
        GivenGpus::Nothing => true,
        GivenGpus::Gpus(given) => return given_but_missing(given, no_gpu_here, expectations),
        // Not read: a container asked for no GPU was given none (`up` gives what is asked).
        GivenGpus::Unknown => !request.is_some_and(GpuRequest::wants_gpus),
    };
    if given_nothing {
        let created = "the container was created without GPUs (no device request, no CDI device)";
        match (request, &no_gpu_here) {
            (Some(GpuRequest::None) | None, Some(reason)) => format!(
                "{created}, as {} asks, and {reason}: there is no GPU to give it here; nvidia-check means something on a GPU host (`envctl doctor` there)",
                profile.map_or("it".to_string(), |name| format!("profile `{name}`"))
            ),
            (Some(GpuRequest::None), None) => match profile {
                Some(name) => format!(
                    "{created}: profile `{name}` asks for no GPU; set `gpus = \"all\"` in it and run `envctl up {name} --recreate`"
                ),
                None => {
                    format!("{created}: create it again with GPUs (`docker run --gpus all`)")
                }
            },
            (None, None) => format!(
                "{created}: create it from a profile with `gpus = \"all\"` (`envctl up PROFILE`), and see `envctl doctor` for the host's NVIDIA runtime"
            ),
            (Some(GpuRequest::Optional), Some(reason)) => format!(
                "{created}: `gpus = \"optional\"` met no GPU, because {reason}; on a host with GPUs, {} gives it them",
                up(" --recreate")
            ),
            (Some(GpuRequest::Optional), None) => format!(
                "{created}: `gpus = \"optional\"` met no GPU when it was made (the driver or GPUs were missing then); {} gives it the GPUs this host has now",
                up(" --recreate")
            ),
            (Some(_), Some(reason)) => format!(
                "{created}, though its profile asks for GPUs, and {reason}: `envctl doctor` says what the host lacks"
            ),
            (Some(request), None) => format!(
                "{created}, though its profile asks for gpus = {request} (the profile changed since, or another tool made it): {} creates it with them",
                up(" --recreate")
            ),
        }
    } else {
        // What it was given is unknown, and its profile asks for GPUs.
        format!(
            "the container has no GPU though gpus = {} is asked: `envctl doctor` checks the host's driver and runtime, then {}",
            request.map_or("?".to_string(), ToString::to_string),
            recreate_hint(expectations)
        )
    }
}

/// Whether the daemon is known to have no `nvidia` runtime registered.
fn no_runtime(expectations: &Expectations<'_>) -> bool {
    expectations
        .daemon
        .runtimes
        .as_ref()
        .is_some_and(|runtimes| !runtimes.iter().any(|runtime| runtime == "nvidia"))
}

/// A container given GPUs (`given`) that has no device file: the host's driver, then the
/// daemon's cgroup driver and runtimes say why.
fn given_but_missing(
    given: &str,
    no_gpu_here: Option<String>,
    expectations: &Expectations<'_>,
) -> String {
    if let Some(reason) = no_gpu_here {
        return format!(
            "the container was given GPUs ({given}) but {reason}: `envctl doctor` says what the host lacks"
        );
    }
    match expectations.daemon.cgroup_driver.as_deref() {
        Some("systemd") => format!(
            "the container was given GPUs ({given}) but has no device files: GPU access is lost after `systemctl daemon-reload` with the daemon's systemd cgroup driver; restart the container ({}), and to stop it happening run `sudo nvidia-ctk system create-dev-char-symlinks --create-all` or switch to CDI",
            recreate_hint(expectations)
        ),
        driver => {
            // Only a fact to look at: Docker's `--gpus` also works through the NVIDIA hook,
            // and CDI needs no runtime, so no runtime alone is not the reason.
            let runtime = if no_runtime(expectations) {
                " (the daemon lists no `nvidia` runtime)".to_string()
            } else {
                String::new()
            };
            let driver = driver.map_or_else(String::new, |driver| {
                format!(" (cgroup driver {driver}, so not a `systemctl daemon-reload`)")
            });
            format!(
                "the container was given GPUs ({given}) but the runtime passed no device file{runtime}{driver}: `envctl doctor` checks the NVIDIA runtime, CDI specs and hook, then {}",
                recreate_hint(expectations)
            )
        }
    }
}

/// Why the container sees fewer GPUs than asked: what it was given says whether it ever
/// had them; only a container given them can have lost them.
fn fewer_gpus_explained(visible: usize, expectations: &Expectations<'_>) -> String {
    match &expectations.given {
        GivenGpus::Nothing => no_gpu_explained(expectations),
        GivenGpus::Gpus(given) => {
            let lost = match expectations.daemon.cgroup_driver.as_deref() {
                Some("systemd") => "lost (after `systemctl daemon-reload` with the systemd cgroup driver)",
                _ => "lost",
            };
            format!(
                "the container was given {given} and sees {visible}: a GPU may be {lost} or taken by MIG (`nvidia-smi` on the host, `envctl doctor`), or CUDA_VISIBLE_DEVICES hides some; if the profile asks for more than it was given, {}",
                recreate_hint(expectations)
            )
        }
        GivenGpus::Unknown => "a GPU of the host may be lost or taken by MIG: check `nvidia-smi` on the host and `envctl doctor`; CUDA_VISIBLE_DEVICES can hide GPUs too".to_string(),
    }
}

/// The number of GPUs a request means on this host; None when it cannot be known.
fn expected_count(request: &GpuRequest, host: &HostDriver) -> Option<usize> {
    let host_count = match host {
        HostDriver::Known { gpu_count, .. } => gpu_count.map(|count| count as usize),
        _ => None,
    };
    match request {
        GpuRequest::None => Some(0),
        GpuRequest::All => host_count,
        GpuRequest::Optional => host_count,
        GpuRequest::Count(count) => Some(*count as usize),
        GpuRequest::Devices(devices) => Some(devices.len()),
    }
}

fn gpu_count(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some((visible, counted_by)) = view.visible_gpus() else {
        return;
    };
    let Some(expected) = &expectations.gpus else {
        if visible > 0 {
            findings.push(
                Finding::info(
                    GPU_COUNT,
                    format!(
                        "{} visible (counted by {counted_by}); the container has no profile to compare with",
                        plural(visible, "GPU")
                    ),
                )
                .with_fact("visible", visible),
            );
        }
        return;
    };
    let asker = match &expected.source {
        GpuSource::Profile { name } => format!("profile `{name}`"),
        GpuSource::Container => "the container's device request".to_string(),
        GpuSource::SlurmJob { job } => format!("Slurm job {job}'s allocation"),
    };
    let facts = |finding: Finding| {
        finding
            .with_fact("visible", visible)
            .with_fact("counted_by", counted_by)
            .with_fact("request", &expected.request)
    };
    match expected_count(&expected.request, &expectations.host) {
        Some(0) if visible == 0 => findings.push(facts(Finding::info(
            GPU_COUNT,
            format!("{asker} asks for no GPU, and none is visible"),
        ))),
        Some(wanted) if visible < wanted => findings.push(facts(
            Finding::fail(
                GPU_COUNT,
                format!(
                    "the container sees {visible} of the {wanted} GPUs {asker} asks for (gpus = {})",
                    expected.request
                ),
            )
            .with_fact("expected", wanted)
            .with_hint(fewer_gpus_explained(visible, expectations)),
        )),
        Some(wanted) if visible > wanted => findings.push(facts(
            Finding::warn(
                GPU_COUNT,
                format!(
                    "the container sees {} but {asker} asks for {wanted} (gpus = {})",
                    plural(visible, "GPU"),
                    expected.request
                ),
            )
            .with_fact("expected", wanted)
            .with_hint(format!(
                "the image or the runtime exposes more than asked (NVIDIA_VISIBLE_DEVICES?); {}",
                recreate_hint(expectations)
            )),
        )),
        Some(wanted) => findings.push(facts(
            Finding::pass(
                GPU_COUNT,
                format!(
                    "{} visible, as {asker} asks (gpus = {})",
                    plural(visible, "GPU"),
                    expected.request
                ),
            )
            .with_fact("expected", wanted),
        )),
        None if visible == 0 => findings.push(facts(
            Finding::fail(
                GPU_COUNT,
                format!(
                    "{asker} asks for GPUs (gpus = {}), but none is visible",
                    expected.request
                ),
            )
            .with_hint(no_gpu_explained(expectations)),
        )),
        None => findings.push(facts(Finding::pass(
            GPU_COUNT,
            format!(
                "{} visible ({asker} asks for gpus = {}; the host's count is unknown)",
                plural(visible, "GPU"),
                expected.request
            ),
        ))),
    }
}

/// Whether the profile promises PyTorch: then its absence is a failure, else a warning.
fn torch_expected(expectations: &Expectations<'_>) -> bool {
    expectations.stack_torch.is_some()
}

fn a_profile_with_torch(expectations: &Expectations<'_>) -> String {
    match expectations.candidates.first() {
        Some(candidate) => format!(
            "use an image with Python and PyTorch, such as profile `{}` (`envctl profiles list` shows all)",
            candidate.profile
        ),
        None => "use an image with Python and PyTorch".to_string(),
    }
}

/// Python and PyTorch: the interpreter, the import, versions, CUDA, cuDNN, devices.
fn pytorch(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let expected = torch_expected(expectations);
    let missing = |message: String| {
        if expected {
            Finding::fail(PYTHON, message)
        } else {
            Finding::warn(PYTHON, message)
        }
    };
    let Some(python) = view.python else {
        let python_run = view.raw.python_run.as_ref();
        let no_interpreter = match view.shell {
            Some(shell) => shell.python.is_none(),
            None => view.raw.run.shell_missing,
        };
        if no_interpreter && !view.raw.run.timed_out {
            findings.push(
                missing(
                    "no python3 or python in the container: PyTorch, the architectures and the compute checks cannot be checked".to_string(),
                )
                .with_hint(a_profile_with_torch(expectations)),
            );
        } else if let Some(python_run) = python_run.filter(|run| !run.timed_out) {
            let path = python_run.path.as_deref().unwrap_or("python");
            let stderr = python_run.stderr.as_deref().unwrap_or("");
            let said = match last_line(stderr) {
                "" => String::new(),
                line => format!(": {line}"),
            };
            let code = python_run
                .exit_status
                .map_or_else(|| "?".to_string(), |code| code.to_string());
            findings.push(
                Finding::fail(
                    PYTHON,
                    format!("{path} stopped (exit code {code}) before it printed its report{said}"),
                )
                .with_hint(format!(
                    "see the whole error: `{}`",
                    exec_hint(
                        expectations,
                        &format!("{path} -c 'import torch; print(torch.cuda.is_available())'")
                    )
                ))
                .with_fact("stderr", stderr),
            );
        }
        return;
    };
    let interpreter = python.python.as_ref();
    let version = interpreter
        .and_then(|interpreter| interpreter.version.as_deref())
        .unwrap_or("of unknown version");
    let path = interpreter
        .and_then(|interpreter| interpreter.executable.as_deref())
        .or(view.python_path())
        .unwrap_or("python");
    findings.push(
        Finding::pass(PYTHON, format!("Python {version} ({path})"))
            .with_fact("python", interpreter),
    );
    for error in &python.errors {
        findings.push(Finding::warn(
            PYTHON,
            format!(
                "the probe `{}` failed: {}",
                error.probe,
                first_line(&error.error)
            ),
        ));
    }
    let Some(torch) = view.torch else {
        return;
    };
    if !torch.found {
        let message = format!("torch is not installed for {path}");
        let finding = if expected {
            Finding::fail(TORCH_IMPORT, message)
        } else {
            Finding::warn(TORCH_IMPORT, message)
        };
        findings.push(finding.with_hint(a_profile_with_torch(expectations)));
        return;
    }
    if let Some(error) = &torch.import_error {
        findings.push(
            Finding::fail(
                TORCH_IMPORT,
                format!("`import torch` failed: {}", first_line(error)),
            )
            .with_hint(format!(
                "see the whole traceback: `{}`",
                exec_hint(expectations, &format!("{path} -c 'import torch'"))
            ))
            .with_fact("traceback", torch.import_traceback.as_deref()),
        );
        return;
    }
    let torch_text = torch.version.as_deref().unwrap_or("of unknown version");
    findings.push(
        Finding::pass(TORCH_IMPORT, format!("torch {torch_text}"))
            .with_fact("import_seconds", torch.import_seconds),
    );
    stack_match(torch, expectations, findings);
    let Some(cuda) = cuda_build(view, torch, expectations, findings) else {
        return;
    };
    cudnn(torch, findings);
    if !cuda_available(view, torch, &cuda, expectations, findings) {
        return;
    }
    torch_devices(view, torch, expectations, findings);
}

fn stack_match(torch: &TorchFacts, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let (Some(stated), Some(actual)) = (
        &expectations.stack_torch,
        torch
            .version
            .as_deref()
            .and_then(|text| text.parse::<TorchVersion>().ok()),
    ) else {
        return;
    };
    let same = stated.version == actual.version
        && (stated.variant.is_none() || stated.variant == actual.variant);
    if !same {
        let profile = expectations.profile.as_deref().unwrap_or("the profile");
        findings.push(
            Finding::warn(
                TORCH_STACK,
                format!("the image has torch {actual}, but {profile}'s [stack] says {stated}"),
            )
            .with_hint(format!(
                "write torch = \"{actual}\" under [stack] in {profile}, so `envctl doctor` judges the build the image really has"
            )),
        );
    }
}

/// `torch.version.cuda`: Some(version text) for a CUDA build.
fn cuda_build(
    view: &View<'_>,
    torch: &TorchFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) -> Option<String> {
    let version = torch.version.as_deref().unwrap_or("?");
    if let Some(cuda) = &torch.cuda {
        findings.push(Finding::pass(
            TORCH_CUDA_BUILD,
            format!("torch {version} is built with CUDA {cuda}"),
        ));
        return Some(cuda.clone());
    }
    if let Some(hip) = &torch.hip {
        findings.push(
            Finding::fail(
                TORCH_CUDA_BUILD,
                format!("torch {version} is a ROCm (HIP {hip}) build: it cannot use NVIDIA GPUs"),
            )
            .with_hint(a_profile_with_torch(expectations)),
        );
        return None;
    }
    // The matrix's verdict for a CPU build names the profiles and builds that would work.
    let alternative = torch
        .version
        .as_deref()
        .and_then(|text| text.split('+').next())
        .and_then(|release| format!("{release}+cpu").parse::<TorchVersion>().ok())
        .and_then(|cpu_build| {
            let capability = view
                .capabilities()
                .first()
                .map(|(_, capability, _)| *capability)?;
            let driver = inside_or_host_driver(view, expectations);
            gpu_vs_torch(
                expectations.matrix,
                crate::compat::Platform::this_binary(),
                capability,
                &cpu_build,
                None,
                driver.as_ref(),
                expectations.candidates,
            )
            .hint
        });
    let hint = alternative.unwrap_or_else(|| {
        "install a CUDA build of torch (e.g. `pip install torch --index-url https://download.pytorch.org/whl/cu128`), or use an image that has one".to_string()
    });
    findings.push(
        Finding::fail(
            TORCH_CUDA_BUILD,
            format!("torch {version} is a CPU-only build (torch.version.cuda is None): it cannot use the GPU"),
        )
        .with_hint(hint),
    );
    None
}

fn cudnn(torch: &TorchFacts, findings: &mut Vec<Finding>) {
    match (torch.cudnn_version, torch.cudnn_available, &torch.cudnn_error) {
        (Some(number), _, _) => findings.push(
            Finding::pass(TORCH_CUDNN, format!("cuDNN {}", cudnn_version(number)))
                .with_fact("cudnn_version", number),
        ),
        (None, _, Some(error)) => findings.push(Finding::warn(
            TORCH_CUDNN,
            format!("cuDNN could not be asked: {}", first_line(error)),
        )),
        (None, _, None) => findings.push(
            Finding::warn(
                TORCH_CUDNN,
                "cuDNN is not available to torch: convolutions and RNNs run on slower fallbacks",
            )
            .with_hint("use a `-cudnn9-` image, or install the cuDNN wheel torch expects (`pip install nvidia-cudnn-cu12`)"),
        ),
    }
}

/// `torch.cuda.is_available()`: true when CUDA works in torch.
fn cuda_available(
    view: &View<'_>,
    torch: &TorchFacts,
    cuda: &str,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) -> bool {
    if torch.cuda_available == Some(true) {
        findings.push(Finding::pass(
            TORCH_CUDA_AVAILABLE,
            "torch.cuda.is_available() is True",
        ));
        return true;
    }
    let said: Vec<&str> = torch
        .warnings
        .iter()
        .map(String::as_str)
        .chain(torch.cuda_available_error.as_deref())
        .collect();
    let reason = said
        .iter()
        .map(|text| first_line(text))
        .find(|line| !line.is_empty())
        .map_or_else(String::new, |line| format!(": {line}"));
    let all = said.join("\n");
    let hint = if all.contains("too old") {
        format!(
            "the host's driver is too old for torch's CUDA {cuda}: upgrade the driver, or use an image built for an older CUDA (`envctl doctor` names what this driver runs)"
        )
    } else if view.gpu_device_files().is_empty() {
        "the container has no GPU device files: see GPU passthrough above".to_string()
    } else if view
        .variable("CUDA_VISIBLE_DEVICES")
        .is_some_and(|value| matches!(value.trim(), "" | "-1" | "none"))
    {
        "CUDA_VISIBLE_DEVICES hides every GPU: unset it".to_string()
    } else {
        format!(
            "see CUDA's own error: `{}`",
            exec_hint(expectations, "python3 -c 'import torch; torch.cuda.init()'")
        )
    };
    findings.push(
        Finding::fail(
            TORCH_CUDA_AVAILABLE,
            format!("torch.cuda.is_available() is False{reason}"),
        )
        .with_hint(hint)
        .with_fact("warnings", &torch.warnings),
    );
    false
}

/// torch's GPU count against nvidia-smi's, then one line per kind of GPU torch found.
///
/// An unknown count (`torch.cuda.device_count()` raised) is a finding of its own, not the
/// length of the device list: that list is empty then, and "torch sees 0 GPUs" would pass
/// a container whose torch cannot count its GPUs.
fn torch_devices(
    view: &View<'_>,
    torch: &TorchFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let smi = view.smi_gpus.as_ref().map(Vec::len);
    match (torch.device_count.map(|count| count as usize), smi) {
        (None, _) => {
            let said = torch
                .device_count_error
                .as_deref()
                .map(first_line)
                .filter(|line| !line.is_empty())
                .map_or_else(
                    || " gave no count".to_string(),
                    |line| format!(" failed: {line}"),
                );
            let message =
                format!("torch.cuda.device_count(){said}, so torch's GPU count is unknown");
            // Asked for GPUs, torch that cannot count them is broken; otherwise it only
            // leaves the count unchecked.
            let asked = expectations
                .gpus
                .as_ref()
                .is_some_and(|expected| expected.request.wants_gpus());
            let finding = if asked {
                Finding::fail(TORCH_DEVICES, message)
            } else {
                Finding::warn(TORCH_DEVICES, message)
            };
            findings.push(
                finding
                    .with_hint(format!(
                        "see CUDA's own error: `{}`",
                        exec_hint(
                            expectations,
                            "python3 -c 'import torch; print(torch.cuda.device_count())'"
                        )
                    ))
                    .with_fact("device_count_error", torch.device_count_error.as_deref()),
            );
        }
        (Some(count), Some(smi)) if smi != count => {
            let selected = view.variable("CUDA_VISIBLE_DEVICES");
            let message = format!("torch sees {}, nvidia-smi {smi}", plural(count, "GPU"));
            findings.push(match selected {
                Some(value) => Finding::info(
                    TORCH_DEVICES,
                    format!("{message} (CUDA_VISIBLE_DEVICES={value} selects them)"),
                ),
                None => Finding::warn(TORCH_DEVICES, message).with_hint(
                    "a GPU nvidia-smi lists failed to initialise in CUDA: look for Xid errors in the host's `dmesg`",
                ),
            });
        }
        (Some(count), _) => findings.push(Finding::pass(
            TORCH_DEVICES,
            format!("torch sees {}", plural(count, "GPU")),
        )),
    }
    // One line per model, capability and memory: eight identical GPUs make one line.
    let mut groups: Vec<(Vec<u32>, String)> = Vec::new();
    for device in view.devices {
        if let Some(error) = &device.error {
            findings.push(Finding::fail(
                TORCH_DEVICES,
                format!("GPU {}: {}", device.index, first_line(error)),
            ));
            continue;
        }
        let name = device.name.as_deref().unwrap_or("unnamed GPU");
        let capability = match device.capability.as_deref() {
            Some([major, minor]) => {
                let capability = ComputeCapability::new(*major, *minor);
                format!(", {} (compute capability {capability})", capability.sm())
            }
            _ => String::new(),
        };
        let memory = device
            .total_memory_bytes
            .map_or_else(String::new, |bytes| format!(", {}", binary_limit(bytes)));
        let description = format!("{name}{capability}{memory}");
        match groups.iter_mut().find(|(_, text)| *text == description) {
            Some((indices, _)) => indices.push(device.index),
            None => groups.push((vec![device.index], description)),
        }
    }
    for (indices, description) in groups {
        findings.push(
            Finding::info(
                TORCH_DEVICES,
                format!("GPU {}: {description}", index_ranges(&indices)),
            )
            .with_fact("gpu_indices", &indices),
        );
    }
}

fn inside_or_host_driver(
    view: &View<'_>,
    expectations: &Expectations<'_>,
) -> Option<DriverVersion> {
    view.inside_driver()
        .and_then(|text| text.parse().ok())
        .or_else(|| match &expectations.host {
            HostDriver::Known { version, .. } => version.parse().ok(),
            _ => None,
        })
}

/// The first candidate profile whose torch build the matrix finds runnable on every GPU.
fn working_candidate(
    expectations: &Expectations<'_>,
    capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
) -> Option<String> {
    expectations
        .candidates
        .iter()
        .find(|candidate| {
            capabilities.iter().all(|capability| {
                gpu_vs_torch(
                    expectations.matrix,
                    crate::compat::Platform::this_binary(),
                    *capability,
                    candidate.torch,
                    Some(candidate.cuda),
                    driver,
                    &[],
                )
                .status
                    == Status::Pass
            })
        })
        .map(|candidate| {
            format!(
                "use profile `{}` (torch {}, CUDA {})",
                candidate.profile, candidate.torch, candidate.cuda
            )
        })
}

/// `gpu.torch-arch`, per distinct compute capability: the build's real arch list against
/// each GPU, with doctor's rules and wording; the matrix's verdict as a cross-check.
fn architectures(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some(torch) = view.torch else {
        return;
    };
    if torch.cuda.is_none() || torch.import_error.is_some() || !torch.found {
        return;
    }
    let gpus = view.capabilities();
    if gpus.is_empty() {
        return;
    }
    let matrix = expectations.matrix;
    let version_text = torch.version.clone().unwrap_or_else(|| "?".into());
    let version = torch
        .version
        .as_deref()
        .and_then(|text| text.parse::<TorchVersion>().ok());
    let cuda = torch
        .cuda
        .as_deref()
        .and_then(|text| text.parse::<CudaVersion>().ok());
    let driver = inside_or_host_driver(view, expectations);
    let targets: Option<Vec<Target>> = torch
        .arch_list
        .as_ref()
        .filter(|list| !list.is_empty())
        .map(|list| list.iter().filter_map(|arch| arch.parse().ok()).collect());
    let mut distinct: Vec<ComputeCapability> = Vec::new();
    for (_, capability, _) in &gpus {
        if !distinct.contains(capability) {
            distinct.push(*capability);
        }
    }
    for capability in &distinct {
        let indices: Vec<u32> = gpus
            .iter()
            .filter(|(_, other, _)| other == capability)
            .map(|(index, _, _)| *index)
            .collect();
        let names: Vec<&str> = gpus
            .iter()
            .filter(|(_, other, _)| other == capability)
            .filter_map(|(_, _, name)| name.as_deref())
            .collect();
        let matrix_verdict = version.as_ref().map(|version| {
            gpu_vs_torch(
                matrix,
                crate::compat::Platform::this_binary(),
                *capability,
                version,
                cuda,
                driver.as_ref(),
                expectations.candidates,
            )
        });
        let with_gpus = |finding: Finding| {
            finding
                .with_fact("gpu_indices", &indices)
                .with_fact("gpu_names", &names)
                .with_fact("capability", capability)
        };
        let Some(targets) = &targets else {
            // No arch list from torch (an error, or a build that lists none): the matrix alone.
            if let Some(verdict) = matrix_verdict {
                findings.push(
                    with_gpus(verdict)
                        .with_fact("arch_list_error", torch.arch_list_error.as_deref()),
                );
            }
            continue;
        };
        let sm = capability.sm();
        let gpu = gpu_label(matrix, *capability);
        let list: Vec<String> = targets.iter().map(ToString::to_string).collect();
        let real = match reach(*capability, targets) {
            Reach::Cubin(target) if target.capability == *capability => Finding::pass(
                GPU_TORCH_ARCH,
                format!("torch {version_text} has {target} kernels for {gpu}"),
            ),
            Reach::Cubin(target) => Finding::pass(
                GPU_TORCH_ARCH,
                format!(
                    "torch {version_text} has no {sm} kernels, but its {target} kernels run on {gpu}: same major, lower minor"
                ),
            ),
            Reach::Ptx(ptx) => {
                let jit = format!(
                    "torch {version_text} has no machine code for {gpu}; its {ptx} PTX is JIT-compiled by the driver (slow first start)"
                );
                let kernels_ran = view
                    .devices
                    .iter()
                    .filter(|device| indices.contains(&device.index))
                    .all(|device| device.elementwise.as_ref().is_some_and(|check| check.ok));
                if kernels_ran && !view.devices.is_empty() {
                    Finding::pass(GPU_TORCH_ARCH, format!("{jit}, and its kernels ran"))
                } else {
                    Finding::warn(
                        GPU_TORCH_ARCH,
                        format!("{jit}, which needs a driver at least as new as CUDA {}", torch.cuda.as_deref().unwrap_or("?")),
                    )
                    .with_hint("check that the compute checks below ran; a build with machine code for this GPU starts faster")
                }
            }
            Reach::Missing(_) => {
                let alternative = matrix_verdict
                    .as_ref()
                    .filter(|verdict| verdict.status == Status::Fail)
                    .and_then(|verdict| verdict.hint.clone())
                    .or_else(|| working_candidate(expectations, &distinct, driver.as_ref()))
                    .unwrap_or_else(|| {
                        format!("use an image whose torch lists {sm} (or a lower sm_{}x) in torch.cuda.get_arch_list()", capability.major)
                    });
                Finding::fail(
                    GPU_TORCH_ARCH,
                    format!(
                        "{sm} is not compatible with the current PyTorch installation: torch {version_text} has kernels only for {}, none of which runs on {gpu}",
                        list.join(" ")
                    ),
                )
                .with_hint(format!(
                    "this image's torch {version_text} has no kernels for {sm}: {alternative}"
                ))
            }
        };
        let mut real = with_gpus(real).with_fact("arch_list", &list);
        let torch_warning = torch
            .warnings
            .iter()
            .find(|warning| warning.contains(&format!("{sm} is not compatible")));
        if let Some(warning) = torch_warning {
            real = real.with_fact("torch_warning", warning);
        }
        if let Some(verdict) = matrix_verdict {
            let disagree = matches!(
                (real.status, verdict.status),
                (Status::Pass, Status::Fail) | (Status::Fail, Status::Pass)
            );
            real = real.with_fact(
                "matrix_verdict",
                serde_json::json!({"status": verdict.status, "message": verdict.message}),
            );
            findings.push(real);
            if disagree {
                findings.push(
                    with_gpus(Finding::warn(
                        TORCH_ARCH_MATRIX,
                        format!(
                            "{} says otherwise for {sm}: {}",
                            matrix.describe(),
                            verdict.message
                        ),
                    ))
                    .with_hint("the build's own arch list decides; a user matrix file ($XDG_CONFIG_HOME/envctl/matrix.toml) can correct the row so `envctl doctor` agrees")
                    .with_fact("arch_list", &list),
                );
            }
        } else {
            findings.push(real);
        }
    }
}

/// A compute finding of one GPU, before identical ones are folded.
struct DeviceFinding {
    index: u32,
    name: String,
    finding: Finding,
}

/// Compute: a torch kernel, matmul vs CPU, bf16, TF32, throughput, copy bandwidth.
fn compute(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    if !view.torch_cuda_works() || view.devices.is_empty() {
        return;
    }
    let quick = view.python.is_some_and(|python| python.quick) || view.raw.run.quick;
    let mut per_device = Vec::new();
    for device in view.devices {
        if device.error.is_some() {
            continue;
        }
        let mut push = |finding: Finding| {
            per_device.push(DeviceFinding {
                index: device.index,
                name: device.name.clone().unwrap_or_else(|| "unnamed GPU".into()),
                finding,
            });
        };
        device_compute(device, quick, expectations, &mut push);
    }
    let mut folded = fold(per_device);
    // Per check, then per GPU: every GPU's throughput together, then every GPU's copy.
    let order = [KERNEL, MATMUL, BF16, TF32, THROUGHPUT, COPY];
    folded.sort_by_key(|finding| order.iter().position(|id| *id == finding.id));
    findings.extend(folded);
    if quick {
        findings.push(Finding::info(
            THROUGHPUT,
            "the timed matmul and the copy bandwidth were skipped (--quick)",
        ));
    }
}

fn no_kernels(error: &str) -> bool {
    error.contains("no kernel image is available")
}

fn error_hint(error: &str, expectations: &Expectations<'_>) -> String {
    if no_kernels(error) {
        "torch has no kernels for this GPU: see Architectures above".to_string()
    } else if error.contains("out of memory") {
        "the GPU's memory is taken by other processes: see `nvidia-smi` on the host".to_string()
    } else {
        format!(
            "a CUDA error in a plain operation points at the GPU or driver: look for Xid errors in the host's `dmesg`; rerun with `{}`",
            exec_hint(
                expectations,
                "env CUDA_LAUNCH_BLOCKING=1 python3 -c 'import torch; print(torch.ones(1).cuda() + 1)'"
            )
        )
    }
}

fn device_compute(
    device: &DeviceFacts,
    quick: bool,
    expectations: &Expectations<'_>,
    push: &mut impl FnMut(Finding),
) {
    if let Some(error) = &device.compute_error {
        push(
            Finding::fail(
                MATMUL,
                format!("the compute checks stopped: {}", first_line(error)),
            )
            .with_hint(error_hint(error, expectations)),
        );
    }
    // When torch's own kernel fails, the checks after it usually fail the same way: one
    // line says it for all of them.
    let kernel_error = device
        .elementwise
        .as_ref()
        .and_then(|check| check.error.as_deref())
        .map(first_line);
    let same_failure = |error: Option<&String>| {
        kernel_error.is_some() && error.map(|error| first_line(error)) == kernel_error
    };
    let mut also: Vec<&str> = Vec::new();
    let matmuls = [
        (&device.matmul, "float32"),
        (&device.tf32_matmul, "TF32"),
        (&device.bf16_matmul, "bfloat16"),
    ];
    for (check, name) in matmuls {
        if check
            .as_ref()
            .is_some_and(|check| same_failure(check.error.as_ref()))
        {
            also.push(name);
        }
    }
    let timed_failed_alike = !quick
        && device
            .benchmark
            .as_ref()
            .is_some_and(|benchmark| same_failure(benchmark.error.as_ref()));
    if timed_failed_alike {
        also.push("timed");
    }
    if let Some(check) = &device.elementwise {
        match &check.error {
            Some(error) => {
                let alike = match also.as_slice() {
                    [] => String::new(),
                    [one] => format!(" (the {one} matmul failed the same way)"),
                    [first @ .., last] => format!(
                        " (the {} and {last} matmuls failed the same way)",
                        first.join(", ")
                    ),
                };
                push(
                    Finding::fail(
                        KERNEL,
                        format!("a torch kernel failed: {}{alike}", first_line(error)),
                    )
                    .with_hint(error_hint(error, expectations)),
                );
            }
            None if !check.ok => push(
                Finding::fail(
                    KERNEL,
                    "a torch kernel computed a wrong sum",
                )
                .with_fact("value", check.value)
                .with_fact("expected", check.expected)
                .with_hint("the GPU computes wrong results: check `nvidia-smi -q -d ECC` and `dmesg` on the host"),
            ),
            None => {}
        }
    }
    if let Some(check) = device
        .matmul
        .as_ref()
        .filter(|check| !same_failure(check.error.as_ref()))
    {
        push(matmul_finding(
            MATMUL,
            check,
            FLOAT32_TOLERANCE,
            expectations,
        ));
    }
    let capability = match device.capability.as_deref() {
        Some([major, minor]) => Some(ComputeCapability::new(*major, *minor)),
        _ => None,
    };
    let ampere = capability.is_some_and(|capability| capability.major >= 8);
    match (
        &device.bf16_matmul,
        ampere || device.bf16_supported == Some(true),
    ) {
        (Some(check), _) if same_failure(check.error.as_ref()) => {}
        (Some(check), _) => push(matmul_finding(
            BF16,
            check,
            BFLOAT16_TOLERANCE,
            expectations,
        )),
        (None, true) => push(Finding::pass(BF16, "bfloat16 is supported")),
        (None, false) => push(Finding::info(
            BF16,
            match capability {
                Some(capability) => format!(
                    "no native bfloat16 before Ampere (compute capability {capability}): train in float16 with a GradScaler"
                ),
                None => "no native bfloat16: train in float16 with a GradScaler".to_string(),
            },
        )),
    }
    if ampere {
        match &device.tf32_matmul {
            Some(check) if same_failure(check.error.as_ref()) => {}
            Some(check) => push(matmul_finding(TF32, check, TF32_TOLERANCE, expectations)),
            None => push(Finding::pass(TF32, "TF32 is supported")),
        }
    } else if capability.is_some() {
        push(Finding::info(
            TF32,
            "no TF32 before Ampere: float32 matmuls run at full precision",
        ));
    }
    if quick {
        return;
    }
    if let Some(benchmark) = device.benchmark.as_ref().filter(|_| !timed_failed_alike) {
        let dtype = benchmark.dtype.as_deref().unwrap_or("?");
        match (&benchmark.skipped, &benchmark.error, benchmark.tflops) {
            (Some(why), _, _) => push(Finding::info(
                THROUGHPUT,
                format!("timed matmul skipped: {why}"),
            )),
            (None, Some(error), _) => push(
                Finding::warn(
                    THROUGHPUT,
                    format!("the timed {dtype} matmul failed: {}", first_line(error)),
                )
                .with_hint(error_hint(error, expectations)),
            ),
            (None, None, Some(tflops)) => push(
                Finding::info(
                    THROUGHPUT,
                    format!(
                        "{dtype} matmul {size}×{size}: {tflops:.1} TFLOP/s",
                        size = benchmark.size.unwrap_or_default()
                    ),
                )
                .with_fact("tflops", tflops)
                .with_fact("iterations", benchmark.iterations)
                .with_fact("seconds", benchmark.seconds),
            ),
            (None, None, None) => {}
        }
    }
    if let Some(copy) = &device.copy {
        push(copy_finding(copy, expectations));
    }
}

fn matmul_finding(
    id: &str,
    check: &MatmulCheck,
    tolerance: f64,
    expectations: &Expectations<'_>,
) -> Finding {
    let what = if id == TF32 {
        "float32 matmul with TF32".to_string()
    } else {
        format!("{} matmul", check.dtype)
    };
    let facts = |finding: Finding| {
        finding
            .with_fact("relative_error", check.relative_error)
            .with_fact("tolerance", tolerance)
            .with_fact("size", check.size)
    };
    if let Some(error) = &check.error {
        return facts(
            Finding::fail(id, format!("{what} failed: {}", first_line(error)))
                .with_hint(error_hint(error, expectations)),
        );
    }
    let wrong_hint = "the GPU computes wrong results: check `nvidia-smi -q -d ECC` and look for Xid errors in `dmesg` on the host; reset or replace the GPU";
    if check.all_finite == Some(false) {
        return facts(
            Finding::fail(id, format!("{what} produced NaN or infinity")).with_hint(wrong_hint),
        );
    }
    match check.relative_error {
        Some(error) if error > tolerance => facts(
            Finding::fail(
                id,
                format!(
                    "{what} differs from the CPU result by {error:.1e} (tolerance {tolerance:.0e})"
                ),
            )
            .with_hint(wrong_hint),
        ),
        Some(_) => facts(Finding::pass(
            id,
            format!("{what} matches the CPU result (tolerance {tolerance:.0e})"),
        )),
        None => facts(Finding::warn(
            id,
            format!("{what} ran, but its error is unknown"),
        )),
    }
}

fn copy_finding(copy: &super::report::CopyCheck, expectations: &Expectations<'_>) -> Finding {
    if let Some(why) = &copy.skipped {
        return Finding::info(COPY, format!("copy bandwidth skipped: {why}"));
    }
    if let Some(error) = &copy.error {
        return Finding::warn(
            COPY,
            format!("the host-to-device copy failed: {}", first_line(error)),
        )
        .with_hint(error_hint(error, expectations));
    }
    let Some(rate) = copy.gigabytes_per_second else {
        return Finding::warn(
            COPY,
            "the host-to-device copy ran, but its bandwidth is unknown",
        );
    };
    let facts = |finding: Finding| {
        finding
            .with_fact("gigabytes_per_second", rate)
            .with_fact("pinned", copy.pinned)
            .with_fact("bytes", copy.bytes)
    };
    if copy.pinned == Some(false) {
        let why = copy
            .pin_error
            .as_deref()
            .map_or_else(String::new, |error| format!(" ({})", first_line(error)));
        return facts(
            Finding::warn(
                COPY,
                format!("pinned host memory is unavailable{why}: host-to-device copies run from pageable memory at {rate:.1} GB/s"),
            )
            .with_hint(match &expectations.profile {
                Some(profile) => format!("allow locked memory: `memlock = -1` under [ulimits] in profile `{profile}`, then `envctl up {profile} --recreate`"),
                None => "allow locked memory: recreate the container with `--ulimit memlock=-1`".to_string(),
            }),
        );
    }
    if rate < COPY_MINIMUM_GIGABYTES_PER_SECOND {
        return facts(
            Finding::warn(
                COPY,
                format!(
                    "pinned host-to-device copies reach only {rate:.1} GB/s (PCIe 3.0 x16 gives about 12): a narrow or degraded PCIe link"
                ),
            )
            .with_hint("look at the link's generation and width on the host: `nvidia-smi -q -d PCI` (a riser, a x4 slot, or a link trained down)"),
        );
    }
    facts(Finding::info(
        COPY,
        format!("pinned host-to-device copy: {rate:.1} GB/s"),
    ))
}

/// Folds findings that are the same on several GPUs into one line naming them all.
fn fold(per_device: Vec<DeviceFinding>) -> Vec<Finding> {
    let mut groups: Vec<(Vec<u32>, Vec<String>, Finding)> = Vec::new();
    for item in per_device {
        let same = groups.iter_mut().find(|(_, _, finding)| {
            finding.id == item.finding.id
                && finding.status == item.finding.status
                && finding.message == item.finding.message
                && finding.hint == item.finding.hint
        });
        match same {
            Some((indices, names, _)) => {
                indices.push(item.index);
                if !names.contains(&item.name) {
                    names.push(item.name);
                }
            }
            None => groups.push((vec![item.index], vec![item.name], item.finding)),
        }
    }
    groups
        .into_iter()
        .map(|(indices, names, finding)| {
            let message = format!(
                "GPU {} ({}): {}",
                index_ranges(&indices),
                names.join(", "),
                finding.message
            );
            Finding { message, ..finding }.with_fact("gpu_indices", &indices)
        })
        .collect()
}

/// Environment: /dev/shm, memlock, stack, NCCL, CUDA_DEVICE_ORDER.
fn environment(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some(shell) = view.shell else {
        return;
    };
    let profile_fix = |setting: &str| match &expectations.profile {
        Some(profile) => {
            format!("set {setting} in profile `{profile}`, then `envctl up {profile} --recreate`")
        }
        None => format!("recreate the container with {setting}"),
    };
    if let Some(shm) = &shell.shm {
        match shm.output.as_deref().and_then(df_size) {
            Some(size) if size.total_bytes < SHM_MINIMUM_BYTES => findings.push(
                Finding::warn(
                    SHM,
                    format!(
                        "/dev/shm is {}: DataLoader workers (num_workers > 0) pass batches through it and die with `Bus error` when it fills",
                        binary_limit(size.total_bytes)
                    ),
                )
                .with_hint(profile_fix("`shm_size = \"8g\"` (or `ipc = \"host\"`)"))
                .with_fact("shm", size),
            ),
            Some(size) => findings.push(
                Finding::pass(
                    SHM,
                    format!(
                        "/dev/shm is {} ({} free)",
                        binary_limit(size.total_bytes),
                        binary_limit(size.available_bytes)
                    ),
                )
                .with_fact("shm", size),
            ),
            None => findings.push(
                Finding::warn(
                    SHM,
                    format!(
                        "the size of /dev/shm is unknown: {}",
                        first_line(shm.output.as_deref().unwrap_or("df printed nothing"))
                    ),
                )
                .with_hint(profile_fix("`shm_size = \"8g\"`")),
            ),
        }
    }
    match shell.ulimits.memlock.as_deref().map(|text| (text, ulimit_value(text))) {
        Some((_, Some(Limit::Unlimited))) => findings.push(Finding::pass(
            MEMLOCK,
            "locked memory (ulimit -l) is unlimited",
        )),
        Some((_, Some(Limit::Bytes(bytes)))) => findings.push(
            Finding::warn(
                MEMLOCK,
                format!(
                    "locked memory (ulimit -l) is limited to {}: NCCL over InfiniBand/RoCE and large pinned buffers need it unlimited",
                    binary_limit(bytes)
                ),
            )
            .with_hint(profile_fix("`memlock = -1` under [ulimits] (NVIDIA's recommendation)"))
            .with_fact("bytes", bytes),
        ),
        Some((text, None)) => findings.push(Finding::info(
            MEMLOCK,
            format!("locked memory (ulimit -l) is unknown: {}", first_line(text)),
        )),
        None => {}
    }
    match shell.ulimits.stack.as_deref().map(|text| (text, ulimit_value(text))) {
        Some((_, Some(Limit::Unlimited))) => {
            findings.push(Finding::pass(STACK, "stack size (ulimit -s) is unlimited"));
        }
        Some((_, Some(Limit::Bytes(bytes)))) if bytes >= STACK_RECOMMENDED_BYTES => findings.push(
            Finding::pass(STACK, format!("stack size (ulimit -s) is {}", binary_limit(bytes)))
                .with_fact("bytes", bytes),
        ),
        Some((_, Some(Limit::Bytes(bytes)))) if bytes >= STACK_MINIMUM_BYTES => findings.push(
            Finding::info(
                STACK,
                format!(
                    "stack size (ulimit -s) is {}; NVIDIA recommends 64 MiB for its PyTorch containers (`stack = 67108864` under [ulimits])",
                    binary_limit(bytes)
                ),
            )
            .with_fact("bytes", bytes),
        ),
        Some((_, Some(Limit::Bytes(bytes)))) => findings.push(
            Finding::warn(
                STACK,
                format!(
                    "stack size (ulimit -s) is only {}: deep recursion and some CUDA libraries overflow it",
                    binary_limit(bytes)
                ),
            )
            .with_hint(profile_fix("`stack = 67108864` under [ulimits]"))
            .with_fact("bytes", bytes),
        ),
        Some((text, None)) => findings.push(Finding::info(
            STACK,
            format!("stack size (ulimit -s) is unknown: {}", first_line(text)),
        )),
        None => {}
    }
    let visible = view.visible_gpus().map_or(0, |(count, _)| count);
    if view.torch_cuda_works() {
        match (
            &view.torch.and_then(|torch| torch.nccl_version.clone()),
            visible > 1,
        ) {
            (Some(version), true) => findings.push(Finding::pass(
                NCCL,
                format!("NCCL {version} for the {visible} GPUs"),
            )),
            (None, true) => {
                let why = view
                    .torch
                    .and_then(|torch| torch.nccl_error.as_deref())
                    .map_or_else(String::new, |error| format!(" ({})", first_line(error)));
                findings.push(
                    Finding::warn(
                        NCCL,
                        format!("{visible} GPUs are visible but torch has no NCCL{why}: DistributedDataParallel cannot use the nccl backend"),
                    )
                    .with_hint("use an official PyTorch image or wheel, which bundle NCCL (`pip install nvidia-nccl-cu12`)"),
                );
            }
            (Some(version), false) => findings.push(Finding::info(NCCL, format!("NCCL {version}"))),
            (None, false) => {}
        }
    }
    let order = view.variable("CUDA_DEVICE_ORDER");
    let models: Vec<&str> = {
        let mut models: Vec<&str> = view
            .smi_gpus
            .iter()
            .flatten()
            .filter_map(|gpu| gpu.name.as_deref())
            .chain(
                view.devices
                    .iter()
                    .filter_map(|device| device.name.as_deref()),
            )
            .collect();
        models.sort_unstable();
        models.dedup();
        models
    };
    match order {
        Some("PCI_BUS_ID") => findings.push(Finding::pass(
            DEVICE_ORDER,
            "CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers the GPUs as nvidia-smi does",
        )),
        _ if visible > 1 && models.len() > 1 => {
            let shown = order.map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
            findings.push(
                Finding::warn(
                    DEVICE_ORDER,
                    format!(
                        "CUDA_DEVICE_ORDER is {shown} on a mix of GPUs ({}): CUDA numbers them fastest first, nvidia-smi by PCI bus, so GPU 0 is not the same GPU in both",
                        models.join(", ")
                    ),
                )
                .with_hint(profile_fix("`CUDA_DEVICE_ORDER = \"PCI_BUS_ID\"` under env (envctl up sets it for profiles that ask for GPUs)")),
            );
        }
        _ if visible > 0 => {
            let shown = order.map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
            findings.push(Finding::info(
                DEVICE_ORDER,
                format!("CUDA_DEVICE_ORDER is {shown}; the GPUs are all one model, so CUDA's and nvidia-smi's numbering agree"),
            ));
        }
        _ => {}
    }
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}
