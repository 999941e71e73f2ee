//! One profile against this host: which GPUs it will get, and per GPU the driver against
//! the image's CUDA and the GPU against the image's CUDA and PyTorch builds; plus the
//! host-wide findings that decide whether it can start at all (daemon, GPU runtime) and
//! its safety findings. Pure over gathered facts.
//!
//! Finding ids: `profile.gpus`, `profile.gpu-runtime`, `profile.daemon`, plus those of
//! `compat` (`driver.cuda`, `gpu.cuda-arch`, `gpu.torch-arch`), `stack` and `safety`.

use std::path::Path;

use serde::Serialize;

use super::host::{GpuPath, gpu_path};
use super::stack::{EffectiveStack, effective};
use super::{Finding, Status, safety, worst};
use crate::compat::{self, ComputeCapability, DriverVersion, Matrix, TorchCandidate};
use crate::facts::engine::{DaemonFacts, EngineFacts, EngineState};
use crate::facts::gpu::{GpuDevice, GpuFacts};
use crate::facts::host::HostFacts;
use crate::profile::ResolvedProfile;
use crate::profile::model::GpuRequest;

/// Everything gathered about the host that a profile is judged against.
#[derive(Debug, Clone, Copy)]
pub struct HostView<'a> {
    pub gpu: &'a GpuFacts,
    pub engine: &'a EngineFacts,
    pub host: &'a HostFacts,
    pub home: Option<&'a Path>,
}

/// The image as far as the daemon knows it.
#[derive(Debug, Clone, Copy)]
pub enum ImageState<'a> {
    /// Present locally: its config env.
    Present(&'a std::collections::BTreeMap<String, String>),
    /// Not pulled (or the daemon could not be asked).
    Absent,
}

/// One GPU the profile will use, and its verdict with this image.
#[derive(Debug, Clone, Serialize)]
pub struct GpuVerdict {
    pub index: u32,
    pub name: Option<String>,
    pub compute_capability: Option<ComputeCapability>,
    pub verdict: &'static str,
    pub findings: Vec<Finding>,
}

/// A profile's report: its GPUs, its findings, and the worst of all of them.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileReport {
    pub name: String,
    pub file: String,
    pub image: String,
    pub verdict: &'static str,
    pub stack: EffectiveStack,
    pub gpus: Vec<GpuVerdict>,
    pub findings: Vec<Finding>,
}

impl ProfileReport {
    /// The worst status of the profile's findings and its GPUs' findings.
    pub fn status(&self) -> Status {
        worst(
            self.findings
                .iter()
                .chain(self.gpus.iter().flat_map(|gpu| gpu.findings.iter())),
        )
    }
}

/// Data-center GPU models: the forward-compatibility package only helps these.
const DATACENTER_MODELS: [&str; 24] = [
    "A100", "A800", "A30", "A40", "A10", "A10G", "A16", "A2", "H100", "H200", "H800", "H20",
    "B100", "B200", "GB200", "GH200", "L4", "L40", "L40S", "T4", "V100", "P100", "P40", "K80",
];

/// Whether NVML's name is a data-center part (`Tesla V100-SXM2-32GB`, `NVIDIA H100 80GB HBM3`).
pub fn is_datacenter(name: &str) -> bool {
    name.contains("Tesla")
        || name
            .split(|c: char| c.is_whitespace() || c == '-')
            .any(|word| DATACENTER_MODELS.contains(&word))
}

/// Judges `resolved` against the host. `candidates` are the bundled PyTorch profiles a
/// failing GPU's hint may point to.
pub fn evaluate(
    resolved: &ResolvedProfile,
    image: ImageState<'_>,
    host: HostView<'_>,
    matrix: &Matrix,
    candidates: &[TorchCandidate<'_>],
) -> ProfileReport {
    let profile = &resolved.profile;
    let mut findings = Vec::new();
    let image_env = match image {
        ImageState::Present(env) => Some(env),
        ImageState::Absent => None,
    };
    let (stack, stack_findings) = effective(&profile.stack, image_env);
    findings.extend(stack_findings);
    findings.extend(daemon_findings(profile.gpus.clone(), host));
    findings.extend(init_findings(profile.command.is_none(), host));
    if let EngineState::Reachable(daemon) = &host.engine.state {
        findings.extend(resource_findings(profile, daemon));
    }
    let (selected, selection_findings) = select_gpus(&profile.gpus, &profile.name, host.gpu);
    findings.extend(selection_findings);
    let nvml_driver = host.gpu.judged().map(|facts| &facts.driver_version);
    let driver = nvml_driver
        .and_then(|version| version.value())
        .and_then(|text| text.parse::<DriverVersion>().ok());
    // A GPU host whose driver version NVML would not give (or gave in a form envctl does
    // not read) cannot be checked against the profile's CUDA: say so, rather than leave
    // the check out of a passing report.
    if let (Some(cuda), Some(version), None, false) =
        (stack.cuda, nvml_driver, &driver, selected.is_empty())
    {
        let why = match version.as_result() {
            Ok(text) => format!("NVML gave `{text}`, which is not a driver version"),
            Err(failure) => format!("NVML could not give it: {}", failure.message),
        };
        findings.push(
            Finding::warn(
                compat::DRIVER_CUDA,
                format!("the driver version is unknown ({why}), so whether it runs CUDA {cuda} was not checked"),
            )
            .with_hint(format!("run `nvidia-smi` to see the driver version, then check it with `envctl compat --driver VERSION --image-cuda {cuda} --gpu NAME`")),
        );
    }
    let gpus = selected
        .iter()
        .map(|device| {
            let platform = host
                .host
                .machine
                .as_deref()
                .and_then(compat::Platform::of_machine);
            gpu_verdict(
                device,
                &stack,
                platform,
                driver.as_ref(),
                matrix,
                candidates,
            )
        })
        .collect();
    findings.extend(safety::check(profile, host.home));
    let mut report = ProfileReport {
        name: profile.name.clone(),
        file: resolved.file.clone(),
        image: profile.image.to_string(),
        verdict: "ok",
        stack,
        gpus,
        findings,
    };
    report.verdict = report.status().verdict();
    report
}

/// CPU and memory limits the daemon's host can give: Docker refuses `--cpus` above its CPU
/// count with a bare 400 ("Range of CPUs is from 0.01 to 2.00"), and a memory limit above
/// the host's memory limits nothing. Judged from `/info`'s `NCPU` and `MemTotal`, the
/// daemon's own figures (the daemon may run on another machine).
fn resource_findings(profile: &crate::profile::Profile, daemon: &DaemonFacts) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let (Some(cpus), Some(host_cpus)) = (profile.cpus, daemon.cpus)
        && cpus > f64::from(host_cpus)
    {
        findings.push(
            Finding::fail(
                "profile.cpus",
                format!("the profile asks for cpus = {cpus}, but the daemon's host has {host_cpus} CPU{}: the create would be refused", if host_cpus == 1 { "" } else { "s" }),
            )
            .with_hint(format!("set cpus = {host_cpus} or less, or run it on a bigger host"))
            .with_fact("host_cpus", host_cpus),
        );
    }
    if let (Some(memory), Some(host_memory)) = (profile.memory, daemon.memory_bytes)
        && memory.0 > host_memory
    {
        findings.push(
            Finding::fail(
                "profile.memory",
                format!(
                    "the profile asks for memory = \"{memory}\", but the daemon's host has {}: the limit would limit nothing",
                    crate::units::binary_limit(host_memory)
                ),
            )
            .with_hint(format!("set memory below {}, or run it on a bigger host", crate::units::binary_limit(host_memory)))
            .with_fact("host_memory_bytes", host_memory),
        );
    }
    findings
}

/// A profile without `command` runs with `--init`; Podman then needs its `catatonit`, and
/// without it refuses the create with a 500 (`container-init binary not found on the
/// host`). Judged where the engine is Podman on this machine (a unix socket).
fn init_findings(runs_init: bool, host: HostView<'_>) -> Vec<Finding> {
    let EngineState::Reachable(daemon) = &host.engine.state else {
        return Vec::new();
    };
    let local = host.host.docker_socket.is_some();
    if !runs_init || daemon.kind != crate::facts::engine::EngineKind::Podman || !local {
        return Vec::new();
    }
    vec![match &host.host.container_init {
        Some(path) => Finding::pass(
            "profile.init",
            format!("Podman's container init is installed ({path}): the keep-alive `--init` works"),
        ),
        None => Finding::fail(
            "profile.init",
            "the profile has no `command`, so envctl runs it with `--init`, but Podman's container init (catatonit) is not installed: the create would fail",
        )
        .with_hint("install it (`sudo apt-get install catatonit`), or give the profile a `command`"),
    }]
}

/// Can a container of this profile start here at all: daemon reachable, and a GPU path
/// when GPUs are requested.
fn daemon_findings(request: GpuRequest, host: HostView<'_>) -> Vec<Finding> {
    let daemon = match &host.engine.state {
        EngineState::Reachable(daemon) => daemon,
        // The cause and its fix are said once, under Docker: each profile only says what
        // it means for it.
        EngineState::Unreachable { kind, .. } => {
            let finding = Finding::fail(
                "profile.daemon",
                if crate::facts::engine::daemon_answered(kind) {
                    "the engine answered with an error (see Docker above), so nothing can start"
                } else {
                    "the engine is not reachable (see Docker above), so nothing can start"
                },
            );
            return vec![finding];
        }
    };
    if !request.wants_gpus() {
        return Vec::new();
    }
    let optional = request == GpuRequest::Optional;
    let finding = match gpu_path(daemon, host.host) {
        GpuPath::Unseen { host } => Finding::info(
            "profile.gpu-runtime",
            format!("the profile asks for GPUs; whether the daemon on {host} hands them out is told by the create (its hook and CDI specs cannot be seen from here)"),
        )
        .with_hint(format!("run `envctl doctor` on {host} for its container toolkit")),
        GpuPath::RootlessWithoutCdi => {
            let finding = if optional {
                Finding::warn
            } else {
                Finding::fail
            };
            finding("profile.gpu-runtime", "the daemon is rootless, and rootless Docker reaches GPUs only through CDI, which is not set up")
                .with_hint("`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, enable CDI in daemon.json, restart Docker (NVIDIA/nvidia-container-toolkit#434)")
        }
        GpuPath::EngineDrops { reason } => {
            let finding = if optional {
                Finding::warn
            } else {
                Finding::fail
            };
            finding(
                "profile.gpu-runtime",
                format!("the profile asks for GPUs, but {reason}: the container would start without them"),
            )
            .with_hint(daemon.kind.gpu_fix())
        }
        GpuPath::Unknown { unreadable_specs } => Finding::warn(
            "profile.gpu-runtime",
            format!(
                "the profile asks for GPUs; the daemon has no NVIDIA runtime or hook, and its CDI spec{} {} could not be read, so whether the container gets GPUs is unknown",
                if unreadable_specs.len() == 1 { "" } else { "s" },
                unreadable_specs.join(", ")
            ),
        )
        .with_hint(super::host::cdi_spec_hint(
            &unreadable_specs.iter().map(String::as_str).collect::<Vec<_>>(),
        )),
        GpuPath::Missing => {
            let message = "the profile asks for GPUs, but the daemon has no NVIDIA runtime, CDI spec or hook: start would fail with `could not select device driver \"\" with capabilities: [[gpu]]`";
            let finding = if optional {
                Finding::warn(
                    "profile.gpu-runtime",
                    format!("{message}; with `gpus = \"optional\"` it runs without GPUs"),
                )
            } else {
                Finding::fail("profile.gpu-runtime", message).failing_any_start()
            };
            finding.with_hint(daemon.kind.gpu_fix())
        }
        GpuPath::Open(support) => Finding::pass(
            "profile.gpu-runtime",
            "the daemon can hand GPUs to containers",
        )
        .with_fact("gpu_support", &support),
    };
    vec![finding]
}

/// Why NVML gave no GPUs, in words: its loader's own error is the finding's cause.
fn nvml_not_loaded(outcome: &crate::facts::gpu::LoadOutcome) -> String {
    use crate::facts::gpu::LoadOutcome;
    let why = match outcome {
        LoadOutcome::LibraryNotFound { .. } => "no NVIDIA driver library on this machine",
        LoadOutcome::DriverNotLoaded { .. } => "the NVIDIA driver is not loaded",
        LoadOutcome::VersionMismatch { .. } => {
            "the driver's kernel module and library are from different releases"
        }
        LoadOutcome::NoPermission { .. } => "no permission to use the NVIDIA driver",
        LoadOutcome::SymbolMissing { .. } => "the NVIDIA driver is too old",
        LoadOutcome::Loaded(_)
        | LoadOutcome::Unknown { .. }
        | LoadOutcome::OnAnotherHost { .. } => {
            return "NVML could not be loaded".into();
        }
    };
    format!("NVML could not be loaded: {why}")
}

/// The failure of a profile that asks for `what` where no GPU can be listed: NVML's own
/// error (`why`, none when it listed no GPU) is the cause under envctl's words.
fn no_gpu_here(
    what: &str,
    name: &str,
    gpu: &GpuFacts,
    why: Option<&String>,
    count_unknown: bool,
) -> Finding {
    let (reason, cause) = match why {
        Some(why) if count_unknown => (why.clone(), None),
        Some(why) => (nvml_not_loaded(&gpu.nvml), Some(why.clone())),
        None => ("NVML reports no GPU".to_string(), None),
    };
    let finding = Finding::fail(
        "profile.gpus",
        if count_unknown {
            format!(
                "the profile asks for {what}, but whether this host has them is unknown ({reason})"
            )
        } else {
            format!("the profile asks for {what}, but this host has no usable GPU ({reason})")
        },
    );
    let finding = match cause {
        Some(cause) => finding.with_cause(cause),
        None => finding,
    };
    if count_unknown {
        finding.with_hint("run `nvidia-smi`; a GPU that fell off the bus (Xid 79) or a driver mismatch needs a reboot")
    } else {
        // Docker refuses a GPU request on a host without them: forcing it fails too.
        finding.failing_any_start().with_hint(format!(
            "run it on a GPU server: `envctl up {name} -H ssh://SERVER`; or here without GPUs: `envctl up {name} --gpus none`"
        ))
    }
}

/// The GPUs a profile gets, with the findings that say so (or why it gets fewer).
type Selection<'a> = (Vec<&'a GpuDevice>, Vec<Finding>);

/// The GPUs the profile will get, and findings when it asks for more than there is.
fn select_gpus<'a>(request: &GpuRequest, name: &str, gpu: &'a GpuFacts) -> Selection<'a> {
    // No list is not an empty list: NVML that loaded but could not count the GPUs says
    // nothing about how many there are.
    // Another machine's GPUs as its daemon told them are judged as this machine's are.
    let listed = match gpu.seen_on_server() {
        Some(seen) => Ok(seen.facts.gpus.as_slice()),
        None => gpu.listed_gpus(),
    };
    let count_unknown = gpu.loaded().is_some() && listed.is_err();
    let available: Vec<&GpuDevice> = listed
        .as_ref()
        .map_or_else(|_| Vec::new(), |gpus| gpus.iter().collect());
    let none_here = |what: &str| no_gpu_here(what, name, gpu, listed.as_ref().err(), count_unknown);
    if let crate::facts::gpu::LoadOutcome::OnAnotherHost {
        host, seen: None, ..
    } = &gpu.nvml
        && request.wants_gpus()
    {
        return (Vec::new(), vec![unseen_on_another_host(host)]);
    }
    match request {
        GpuRequest::None => (Vec::new(), Vec::new()),
        GpuRequest::Optional if count_unknown => (
            Vec::new(),
            vec![Finding::warn(
                "profile.gpus",
                format!(
                    "whether this host has GPUs is unknown ({}): `gpus = \"optional\"` may run without one",
                    listed.as_ref().err().map_or("", String::as_str)
                ),
            )],
        ),
        GpuRequest::Optional if available.is_empty() => (
            Vec::new(),
            vec![Finding::info(
                "profile.gpus",
                "no GPU here: `gpus = \"optional\"` runs without one",
            )],
        ),
        GpuRequest::Optional | GpuRequest::All if !available.is_empty() => {
            let count = available.len();
            (
                available,
                vec![Finding::pass(
                    "profile.gpus",
                    if count == 1 {
                        "the host's only GPU".to_string()
                    } else {
                        format!("all {count} GPUs of this host")
                    },
                )],
            )
        }
        GpuRequest::All | GpuRequest::Optional => (Vec::new(), vec![none_here("all GPUs")]),
        GpuRequest::Count(count) => select_count(*count as usize, available, &none_here),
        GpuRequest::Devices(devices) => select_devices(devices, &available, &none_here),
    }
}

/// The profile's GPUs are another machine's, which its daemon did not describe: the
/// daemon there hands them out, and doctor there judges them.
fn unseen_on_another_host(host: &str) -> Finding {
    Finding::info(
        "profile.gpus",
        format!("the profile's GPUs are {host}'s, which cannot be seen from here: the daemon there hands them out"),
    )
    .with_hint(format!("run `envctl doctor` on {host} for its GPUs and this profile's verdict there"))
}

/// `gpus = N`: the first `count` of the `available` GPUs, or all of them with a failure
/// when there are fewer; `none_here` says what is wrong when there is none.
fn select_count<'a>(
    count: usize,
    available: Vec<&'a GpuDevice>,
    none_here: &dyn Fn(&str) -> Finding,
) -> Selection<'a> {
    if available.is_empty() {
        return (
            Vec::new(),
            vec![none_here(&format!(
                "{count} GPU{}",
                if count == 1 { "" } else { "s" }
            ))],
        );
    }
    if available.len() < count {
        let have = available.len();
        return (
            available,
            vec![
                Finding::fail(
                    "profile.gpus",
                    format!("the profile asks for {count} GPUs, this host has {have}"),
                )
                .with_hint(format!("set gpus = {have}, or run it on a bigger host")),
            ],
        );
    }
    (
        available.into_iter().take(count).collect(),
        vec![Finding::pass(
            "profile.gpus",
            format!("{count} of the host's GPUs"),
        )],
    )
}

/// `gpus = ["0", "GPU-…"]`: each device named by index or UUID among the `available`
/// GPUs. A name not found fails; `MIG-…` instances pass as written, since only the
/// container can check them.
fn select_devices<'a>(
    devices: &[String],
    available: &[&'a GpuDevice],
    none_here: &dyn Fn(&str) -> Finding,
) -> Selection<'a> {
    if available.is_empty() {
        return (
            Vec::new(),
            vec![none_here(&format!("GPU {}", devices.join(", ")))],
        );
    }
    let mut selected = Vec::new();
    let mut missing = Vec::new();
    for device in devices {
        let found = available.iter().find(|gpu| {
            device.parse::<u32>().is_ok_and(|index| gpu.index == index)
                || gpu.uuid.value().is_some_and(|uuid| uuid == device)
        });
        match found {
            Some(gpu) => selected.push(*gpu),
            None if device.starts_with("MIG-") => {}
            None => missing.push(device.clone()),
        }
    }
    let mut findings = Vec::new();
    if !missing.is_empty() {
        findings.push(
            Finding::fail(
                "profile.gpus",
                format!("GPU {} not found on this host", missing.join(", ")),
            )
            .with_hint("`nvidia-smi -L` lists the indices and UUIDs here"),
        );
    }
    if devices.iter().any(|device| device.starts_with("MIG-")) {
        findings.push(Finding::info("profile.gpus", "MIG devices are passed as written; envctl checks them against their parent GPU only inside the container (`envctl exec … nvidia-check`)"));
    }
    if missing.is_empty() && !selected.is_empty() {
        findings.push(Finding::pass(
            "profile.gpus",
            format!("GPU {}", devices.join(", ")),
        ));
    }
    (selected, findings)
}

fn gpu_verdict(
    device: &GpuDevice,
    stack: &EffectiveStack,
    platform: Option<compat::Platform>,
    driver: Option<&DriverVersion>,
    matrix: &Matrix,
    candidates: &[TorchCandidate<'_>],
) -> GpuVerdict {
    let name = device.name.value().cloned();
    let capability = device.compute_capability.value().copied();
    let mut findings = Vec::new();
    if let (Some(cuda), Some(driver)) = (stack.cuda, driver) {
        let datacenter = name.as_deref().is_some_and(is_datacenter);
        findings.push(compat::driver_vs_cuda_of(
            matrix,
            driver,
            cuda,
            datacenter,
            compat::pinned_runtime(matrix, platform, stack.torch.as_ref(), stack.cuda),
        ));
    }
    match capability {
        Some(capability) => {
            if let Some(cuda) = stack.cuda {
                findings.push(compat::cuda_vs_gpu(matrix, cuda, capability));
            }
            if let Some(torch) = &stack.torch {
                findings.push(compat::gpu_vs_torch(
                    matrix, platform, capability, torch, stack.cuda, driver, candidates,
                ));
            }
        }
        None if stack.cuda.is_some() || stack.torch.is_some() => findings.push(
            Finding::warn(
                "gpu.torch-arch",
                format!(
                    "GPU {}'s compute capability is unknown, so its architecture cannot be checked",
                    device.index
                ),
            )
            .with_hint("`envctl exec TARGET nvidia-check` checks it inside the container"),
        ),
        None => {}
    }
    GpuVerdict {
        index: device.index,
        name,
        compute_capability: capability,
        verdict: worst(&findings).verdict(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::engine::DaemonFacts;
    use crate::facts::gpu::{Fact, FailureKind, GpuMemory, LoadOutcome, NvmlFacts, NvmlFailure};

    fn device(index: u32, name: &str, capability: &str) -> GpuDevice {
        GpuDevice {
            index,
            name: Fact::Value(name.into()),
            uuid: Fact::Value(format!("GPU-0000000{index}-0000-0000-0000-000000000000")),
            pci_bus_id: Fact::Value(String::new()),
            compute_capability: Fact::Value(capability.parse().unwrap()),
            memory: Fact::Value(GpuMemory {
                total_bytes: 1 << 34,
                used_bytes: 0,
                reserved_bytes: 0,
                free_bytes: 1 << 34,
            }),
            mig_mode: Fact::Error(NvmlFailure::new(FailureKind::NotSupported, "no")),
            power_limit_watts: Fact::Value(300.0),
            processes: Fact::Value(Vec::new()),
            minor_number: Fact::Value(index),
            health: Default::default(),
        }
    }

    #[test]
    fn a_count_takes_the_first_gpus_or_fails_short() {
        let devices = [device(0, "A", "8.0"), device(1, "B", "8.0")];
        let available: Vec<&GpuDevice> = devices.iter().collect();
        let unused = |_: &str| -> Finding { unreachable!("there are GPUs") };
        let (selected, findings) = select_count(1, available.clone(), &unused);
        assert_eq!(
            selected.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            [0]
        );
        assert_eq!(findings[0].status, Status::Pass);
        let (selected, findings) = select_count(3, available, &unused);
        assert_eq!(selected.len(), 2);
        assert_eq!(
            findings[0].message,
            "the profile asks for 3 GPUs, this host has 2"
        );
        let none = |what: &str| Finding::fail("profile.gpus", what.to_string());
        let (selected, findings) = select_count(2, Vec::new(), &none);
        assert!(selected.is_empty());
        assert_eq!(findings[0].message, "2 GPUs");
    }

    #[test]
    fn devices_are_found_by_index_or_uuid_and_mig_passes_as_written() {
        let devices = [device(0, "A", "8.0"), device(1, "B", "8.0")];
        let available: Vec<&GpuDevice> = devices.iter().collect();
        let unused = |_: &str| -> Finding { unreachable!("there are GPUs") };
        let names = |list: &[&str]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let uuid = "GPU-00000001-0000-0000-0000-000000000000";
        let (selected, findings) = select_devices(&names(&["0", uuid]), &available, &unused);
        assert_eq!(
            selected.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].status, Status::Pass);
        let (selected, findings) = select_devices(&names(&["7", "MIG-x"]), &available, &unused);
        assert!(selected.is_empty());
        let statuses: Vec<Status> = findings.iter().map(|finding| finding.status).collect();
        assert_eq!(statuses, [Status::Fail, Status::Info]);
        assert_eq!(findings[0].message, "GPU 7 not found on this host");
    }

    fn gpus(driver: &str, devices: Vec<GpuDevice>) -> GpuFacts {
        GpuFacts {
            library: "stub".into(),
            nvml: LoadOutcome::Loaded(Box::new(NvmlFacts {
                driver_version: Fact::Value(driver.into()),
                cuda_driver_version: Fact::Value(crate::facts::gpu::CudaDriverVersion {
                    major: 12,
                    minor: 8,
                }),
                nvml_version: Fact::Value(String::new()),
                device_count: Fact::Value(devices.len() as u32),
                gpus: devices,
                shutdown_failure: None,
            })),
        }
    }

    fn engine(runtimes: &[&str]) -> EngineFacts {
        EngineFacts {
            endpoint: "unix:///var/run/docker.sock".into(),
            state: EngineState::Reachable(Box::new(DaemonFacts {
                runtimes: runtimes.iter().map(|r| r.to_string()).collect(),
                ..DaemonFacts::default()
            })),
        }
    }

    fn profile(text: &str) -> ResolvedProfile {
        crate::profile::resolve::resolve_text("p.toml", text)
            .unwrap_or_else(|error| panic!("{error}: {:?}", error.diagnostics()))
    }

    const CAREFUL: &str =
        "user = \"1\"\nmemory = \"8g\"\nshm_size = \"8g\"\nmounts = [\"./:/w\"]\n";

    fn run(text: &str, gpu: &GpuFacts, engine: &EngineFacts) -> ProfileReport {
        run_on("x86_64", text, gpu, engine)
    }

    /// `run` on a host of the given machine architecture (`uname -m`).
    fn run_on(machine: &str, text: &str, gpu: &GpuFacts, engine: &EngineFacts) -> ProfileReport {
        let host = HostFacts {
            machine: Some(machine.into()),
            ..HostFacts::default()
        };
        let view = HostView {
            gpu,
            engine,
            host: &host,
            home: None,
        };
        evaluate(
            &profile(&format!("{CAREFUL}{text}")),
            ImageState::Absent,
            view,
            Matrix::bundled(),
            &[],
        )
    }

    fn find<'a>(report: &'a ProfileReport, id: &str) -> &'a Finding {
        report
            .findings
            .iter()
            .find(|finding| finding.id == id)
            .unwrap_or_else(|| panic!("no {id} in {:#?}", report.findings))
    }

    #[test]
    fn healthy_h100_host_runs_pytorch_2_8() {
        let host = gpus(
            "570.124.06",
            (0..8)
                .map(|index| device(index, "NVIDIA H100 80GB HBM3", "9.0"))
                .collect(),
        );
        let report = run(
            "image = \"pytorch/pytorch:2.8.0\"\ngpus = \"all\"\n[stack]\ncuda = \"12.8\"\ntorch = \"2.8.0+cu128\"\n",
            &host,
            &engine(&["nvidia", "runc"]),
        );
        assert_eq!(report.gpus.len(), 8);
        assert_eq!(report.verdict, "ok", "{report:#?}");
        assert!(report.gpus.iter().all(|gpu| gpu.verdict == "ok"));
    }

    /// Doctor judges the wheel of the host's platform: on an Arm host (a GH200 here) the
    /// aarch64 wheel of 2.15 has Hopper kernels, a T4 gets none, and 2.8's aarch64 build
    /// is not in the matrix.
    #[test]
    fn an_arm_host_is_judged_by_the_aarch64_wheels() {
        let torch_arch = |machine: &str, gpu: &str, capability: &str, torch: &str| {
            let host = gpus("595.71.05", vec![device(0, gpu, capability)]);
            let report = run_on(
                machine,
                &format!(
                    "image = \"pytorch/pytorch\"\ngpus = \"all\"\n[stack]\ntorch = \"{torch}\"\n"
                ),
                &host,
                &engine(&["nvidia", "runc"]),
            );
            report.gpus[0]
                .findings
                .iter()
                .find(|finding| finding.id == compat::GPU_TORCH_ARCH)
                .cloned()
                .unwrap_or_else(|| panic!("{report:#?}"))
        };
        let gh200 = torch_arch("aarch64", "NVIDIA GH200 480GB", "9.0", "2.15.0+cu132");
        assert_eq!(gh200.status, Status::Pass, "{}", gh200.message);
        assert!(
            gh200.message.contains("(aarch64 wheel)"),
            "{}",
            gh200.message
        );
        let t4 = torch_arch("aarch64", "Tesla T4", "7.5", "2.15.0+cu132");
        assert_eq!(t4.status, Status::Fail, "{}", t4.message);
        let x86_t4 = torch_arch("x86_64", "Tesla T4", "7.5", "2.13.0+cu130");
        assert!(
            x86_t4.message.contains("(x86_64 wheel)"),
            "{}",
            x86_t4.message
        );
        let old = torch_arch("aarch64", "NVIDIA GH200 480GB", "9.0", "2.7.1+cu128");
        assert_eq!(old.status, Status::Warn, "{}", old.message);
        assert!(
            old.message.contains("has no aarch64 build"),
            "{}",
            old.message
        );
        // A machine envctl has no wheels for is an unknown platform, said as such.
        let unknown = torch_arch("riscv64", "NVIDIA GH200 480GB", "9.0", "2.15.0+cu132");
        assert_eq!(unknown.status, Status::Warn);
        assert!(
            unknown.message.contains("platform is unknown"),
            "{}",
            unknown.message
        );
    }

    #[test]
    fn a_gpu_profile_without_runtime_fails_before_anything_starts() {
        let host = gpus(
            "570.124.06",
            vec![device(0, "NVIDIA H100 80GB HBM3", "9.0")],
        );
        let report = run("image = \"x\"\ngpus = \"all\"\n", &host, &engine(&["runc"]));
        assert_eq!(find(&report, "profile.gpu-runtime").status, Status::Fail);
        assert!(
            find(&report, "profile.gpu-runtime")
                .message
                .contains("could not select device driver")
        );
        assert_eq!(report.verdict, "fail");
        let optional = run(
            "image = \"x\"\ngpus = \"optional\"\n",
            &host,
            &engine(&["runc"]),
        );
        assert_eq!(find(&optional, "profile.gpu-runtime").status, Status::Warn);
    }

    /// A CDI spec the daemon would read but envctl could not: whether the container gets
    /// GPUs is unknown, a warning that names the spec, not the certain start failure.
    #[test]
    fn an_unreadable_cdi_spec_makes_the_gpu_path_unknown_not_missing() {
        let gpu = gpus(
            "570.124.06",
            vec![device(0, "NVIDIA H100 80GB HBM3", "9.0")],
        );
        let podman = EngineFacts {
            endpoint: "unix:///run/podman/podman.sock".into(),
            state: EngineState::Reachable(Box::new(DaemonFacts {
                kind: crate::facts::engine::EngineKind::Podman,
                server_version: Some("5.4.2".into()),
                runtimes: vec!["crun".into()],
                ..DaemonFacts::default()
            })),
        };
        let host = HostFacts {
            cdi_specs: vec![crate::facts::host::CdiSpec {
                path: "/etc/cdi/nvidia.yaml".into(),
                nvidia_gpus: false,
                unreadable: Some("Permission denied (os error 13)".into()),
            }],
            ..HostFacts::default()
        };
        let view = HostView {
            gpu: &gpu,
            engine: &podman,
            host: &host,
            home: None,
        };
        let report = evaluate(
            &profile(&format!("{CAREFUL}image = \"x\"\ngpus = \"all\"\n")),
            ImageState::Absent,
            view,
            Matrix::bundled(),
            &[],
        );
        let path = find(&report, "profile.gpu-runtime");
        assert_eq!(path.status, Status::Warn, "{path:#?}");
        assert!(
            path.message
                .contains("/etc/cdi/nvidia.yaml could not be read")
                && path.message.contains("unknown"),
            "{path:#?}"
        );
    }

    #[test]
    fn no_gpu_host() {
        let none = GpuFacts {
            library: "libnvidia-ml.so.1".into(),
            nvml: LoadOutcome::LibraryNotFound {
                message: "not found".into(),
            },
        };
        let wants = run("image = \"x\"\ngpus = 2\n", &none, &engine(&["nvidia"]));
        assert_eq!(find(&wants, "profile.gpus").status, Status::Fail);
        let optional = run(
            "image = \"x\"\ngpus = \"optional\"\n",
            &none,
            &engine(&["nvidia"]),
        );
        assert_eq!(find(&optional, "profile.gpus").status, Status::Info);
        let cpu = run("image = \"x\"\n", &none, &engine(&["runc"]));
        assert_eq!(cpu.verdict, "ok", "{cpu:#?}");
    }

    #[test]
    fn mixed_host_gets_a_verdict_per_gpu() {
        let host = gpus(
            "570.124.06",
            vec![
                device(0, "NVIDIA H100 80GB HBM3", "9.0"),
                device(1, "Tesla V100-SXM2-32GB", "7.0"),
            ],
        );
        let report = run(
            "image = \"x\"\ngpus = \"all\"\n[stack]\ncuda = \"13.0\"\ntorch = \"2.11.0+cu130\"\n",
            &host,
            &engine(&["nvidia"]),
        );
        let verdicts: Vec<&str> = report.gpus.iter().map(|gpu| gpu.verdict).collect();
        assert_eq!(
            verdicts[1], "fail",
            "CUDA 13 cannot target sm_70: {:#?}",
            report.gpus[1]
        );
        assert_eq!(
            verdicts[0], "fail",
            "driver 570 is below CUDA 13's floor of 580: {:#?}",
            report.gpus[0]
        );
        assert_eq!(report.verdict, "fail");
    }

    #[test]
    fn device_lists_and_counts_are_checked() {
        let host = gpus(
            "570.124.06",
            vec![device(0, "NVIDIA GeForce RTX 4090", "8.9")],
        );
        let report = run(
            "image = \"x\"\ngpus = [\"0\", \"3\"]\n",
            &host,
            &engine(&["nvidia"]),
        );
        assert!(
            find(&report, "profile.gpus")
                .message
                .contains("GPU 3 not found")
        );
        assert_eq!(report.gpus.len(), 1);
        let too_many = run("image = \"x\"\ngpus = 4\n", &host, &engine(&["nvidia"]));
        assert_eq!(find(&too_many, "profile.gpus").status, Status::Fail);
    }

    #[test]
    fn unreachable_daemon_fails_the_profile() {
        let unreachable = EngineFacts {
            endpoint: "unix:///x.sock".into(),
            state: EngineState::Unreachable {
                kind: "socket_missing".into(),
                message: "no socket".into(),
                hint: Some("start Docker".into()),
            },
        };
        let none = GpuFacts {
            library: "x".into(),
            nvml: LoadOutcome::LibraryNotFound {
                message: "x".into(),
            },
        };
        let report = run("image = \"x\"\n", &none, &unreachable);
        assert_eq!(find(&report, "profile.daemon").status, Status::Fail);
    }

    #[test]
    fn datacenter_names() {
        assert!(is_datacenter("NVIDIA H100 80GB HBM3"));
        assert!(is_datacenter("Tesla V100-SXM2-32GB"));
        assert!(is_datacenter("NVIDIA A100-SXM4-80GB"));
        assert!(!is_datacenter("NVIDIA GeForce RTX 4090"));
        assert!(!is_datacenter("NVIDIA RTX A1000"));
    }

    #[test]
    fn podman_needs_its_init_for_a_profile_without_command() {
        let podman = EngineFacts {
            endpoint: "unix:///run/podman/podman.sock".into(),
            state: EngineState::Reachable(Box::new(DaemonFacts {
                kind: crate::facts::engine::EngineKind::Podman,
                server_version: Some("4.3.1".into()),
                ..DaemonFacts::default()
            })),
        };
        let gpu = gpus("570.124.06", Vec::new());
        let local = |init: Option<&str>| HostFacts {
            docker_socket: Some(crate::facts::host::SocketAccess {
                path: "/run/podman/podman.sock".into(),
                exists: true,
                access: "ok".into(),
            }),
            container_init: init.map(str::to_string),
            ..HostFacts::default()
        };
        let judged = |engine: &EngineFacts, host: &HostFacts, runs_init: bool| {
            init_findings(
                runs_init,
                HostView {
                    gpu: &gpu,
                    engine,
                    host,
                    home: None,
                },
            )
        };
        let missing = judged(&podman, &local(None), true);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].status, Status::Fail);
        assert!(missing[0].hint.as_deref().unwrap().contains("catatonit"));
        let found = judged(&podman, &local(Some("/usr/bin/catatonit")), true);
        assert_eq!(found[0].status, Status::Pass);
        // A profile with a command, and Docker (its own docker-init), are not judged.
        assert!(judged(&podman, &local(None), false).is_empty());
        assert!(judged(&engine(&[]), &local(None), true).is_empty());
    }
}
