//! How containers of a daemon can get GPUs, and so how they are asked for them: the one
//! decision behind doctor's `docker.gpu-support` and `profile.gpu-runtime` findings, behind
//! `gpus = "optional"` asking for GPUs, and behind the form of the request `up`, its dry
//! run and doctor write (`gpus::render`). Pure over the daemon's and the host's facts;
//! the findings that word it live in `checks/`.

use serde::Serialize;

use crate::facts::engine::{DaemonFacts, EngineFacts, EngineKind, EngineState, GpuRequestForm};
use crate::facts::host::HostFacts;

/// How containers on this daemon can get GPUs, strongest evidence first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum GpuSupport {
    /// The daemon discovered CDI GPU devices (Docker 28.3+).
    DiscoveredDevices { devices: Vec<String> },
    /// A CDI spec for `nvidia.com/gpu` and CDI enabled in the daemon.
    Cdi { specs: Vec<String> },
    /// The `nvidia` runtime is registered with the daemon.
    Runtime,
    /// `nvidia-container-runtime-hook` or `nvidia-cdi-hook` is on PATH: `--gpus` works once
    /// dockerd was started after the toolkit was installed.
    Hook { path: String },
    /// Nothing: `--gpus` fails with `could not select device driver "" with capabilities: [[gpu]]`.
    None,
    /// Nothing the daemon reports, and it runs on another machine (`DaemonHost`), whose
    /// hook and CDI specs cannot be seen from here: the daemon decides at the create.
    Unseen { host: String },
}

/// Whether a device the daemon discovered (`SOURCE:ID`) is an NVIDIA GPU through CDI:
/// source `cdi` and a CDI name of kind `nvidia.com/gpu` (`cdi:nvidia.com/gpu=0`). Not a
/// substring: `cdi:example.com/x=nvidia.com/gpu` names no NVIDIA GPU.
pub fn is_discovered_nvidia_gpu(device: &str) -> bool {
    device
        .strip_prefix("cdi:")
        .and_then(|name| name.strip_prefix("nvidia.com/gpu="))
        .is_some_and(|name| !name.is_empty())
}

/// Works out how containers get GPUs here (api-facts §4.3).
pub fn gpu_support(daemon: &DaemonFacts, host: &HostFacts) -> GpuSupport {
    let discovered: Vec<String> = daemon
        .discovered_devices
        .iter()
        .flatten()
        .filter(|device| is_discovered_nvidia_gpu(device))
        .cloned()
        .collect();
    if !discovered.is_empty() {
        return GpuSupport::DiscoveredDevices {
            devices: discovered,
        };
    }
    // This machine's CDI specs and tools say nothing of another machine's daemon.
    if let Some(elsewhere) = daemon.host.elsewhere() {
        return if daemon.runtimes.iter().any(|runtime| runtime == "nvidia") {
            GpuSupport::Runtime
        } else {
            GpuSupport::Unseen {
                host: elsewhere.to_string(),
            }
        };
    }
    // A spec that could not be read is not counted: whether it names GPUs is unknown.
    let specs: Vec<String> = host
        .cdi_specs
        .iter()
        .filter(|spec| spec.nvidia_gpus && spec.unreadable.is_none())
        .map(|spec| spec.path.clone())
        .collect();
    if cdi_enabled(daemon) && !specs.is_empty() {
        return GpuSupport::Cdi { specs };
    }
    if daemon.runtimes.iter().any(|runtime| runtime == "nvidia") {
        return GpuSupport::Runtime;
    }
    let hook = host
        .tools
        .iter()
        .filter(|tool| {
            tool.name == "nvidia-container-runtime-hook" || tool.name == "nvidia-cdi-hook"
        })
        .find_map(|tool| tool.path.clone());
    match hook {
        Some(path) => GpuSupport::Hook { path },
        None => GpuSupport::None,
    }
}

/// Whether the daemon reads CDI specs: Podman natively, Docker only with CDI enabled
/// (25+), which it shows by reporting its spec folders.
pub fn cdi_enabled(daemon: &DaemonFacts) -> bool {
    daemon.kind == EngineKind::Podman
        || daemon
            .cdi_spec_dirs
            .as_ref()
            .is_some_and(|dirs| !dirs.is_empty())
}

/// The CDI specs that make GPU access unknown: nothing else gives GPUs (`support`), and
/// the daemon would read a spec that could not be read here, which may be NVIDIA's.
/// Empty where access is known either way.
pub fn specs_making_gpus_unknown<'a>(
    daemon: &DaemonFacts,
    host: &'a HostFacts,
    support: &GpuSupport,
) -> Vec<&'a str> {
    if *support != GpuSupport::None || !cdi_enabled(daemon) {
        return Vec::new();
    }
    unreadable_specs(host)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// The specs that could not be read, each with why.
pub fn unreadable_specs(host: &HostFacts) -> Vec<(&str, &str)> {
    host.cdi_specs
        .iter()
        .filter_map(|spec| {
            spec.unreadable
                .as_deref()
                .map(|error| (spec.path.as_str(), error))
        })
        .collect()
}

/// Whether a container started by this daemon can be given GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuPath {
    /// Yes, this way.
    Open(GpuSupport),
    /// The engine drops GPU requests sent through its Docker API (Podman before 5.4),
    /// whatever is set up on the host.
    EngineDrops { reason: String },
    /// The daemon is rootless, and rootless Docker reaches GPUs only through CDI, which is
    /// not set up (the runtime and the hook need root).
    RootlessWithoutCdi,
    /// No runtime or hook, and CDI specs the daemon reads that could not be read here:
    /// one of them may be NVIDIA's, so whether containers get GPUs is unknown.
    Unknown { unreadable_specs: Vec<String> },
    /// No runtime, CDI spec or hook.
    Missing,
    /// The daemon runs on another machine and reports no NVIDIA runtime or device: a hook
    /// or CDI spec there may give GPUs, which only the create tells.
    Unseen { host: String },
}

/// How GPUs reach containers of this daemon, if they do: the one decision behind
/// `profile.gpu-runtime` and behind `gpus = "optional"` asking for GPUs.
pub fn gpu_path(daemon: &DaemonFacts, host: &HostFacts) -> GpuPath {
    if let Some(reason) = daemon.drops_gpu_requests() {
        return GpuPath::EngineDrops { reason };
    }
    match gpu_support(daemon, host) {
        support @ (GpuSupport::Cdi { .. } | GpuSupport::DiscoveredDevices { .. }) => {
            GpuPath::Open(support)
        }
        GpuSupport::Unseen { host } => GpuPath::Unseen { host },
        _ if daemon.rootless => GpuPath::RootlessWithoutCdi,
        GpuSupport::None => match specs_making_gpus_unknown(daemon, host, &GpuSupport::None) {
            specs if specs.is_empty() => GpuPath::Missing,
            specs => GpuPath::Unknown {
                unreadable_specs: specs.into_iter().map(str::to_string).collect(),
            },
        },
        support => GpuPath::Open(support),
    }
}

/// How the GPU request is written for this engine, from the same facts as [`gpu_path`]:
/// CDI names where the GPUs come through CDI (devices the daemon discovered, or a CDI
/// spec the engine reads: Docker 25+ with CDI enabled, Podman 5.4+), `--gpus`'s request
/// where the NVIDIA runtime or hook takes it (and where nothing is set up: Docker then
/// refuses loudly, naming the missing driver), and none where the engine would drop it.
/// On Podman, CDI is the only way, spec found or not: the create then fails naming the
/// device it cannot resolve.
pub fn gpu_request_form(daemon: &DaemonFacts, host: &HostFacts) -> GpuRequestForm {
    if daemon.kind == EngineKind::Podman {
        return match daemon.drops_gpu_requests() {
            Some(reason) => GpuRequestForm::Unavailable { reason },
            None => GpuRequestForm::Cdi,
        };
    }
    match gpu_support(daemon, host) {
        GpuSupport::DiscoveredDevices { .. } | GpuSupport::Cdi { .. } => GpuRequestForm::Cdi,
        GpuSupport::Runtime
        | GpuSupport::Hook { .. }
        | GpuSupport::None
        | GpuSupport::Unseen { .. } => GpuRequestForm::Gpus,
    }
}

/// Whether a container started here can be given GPUs: `gpus = "optional"` asks for them
/// only then, as `profile.gpu-runtime` promises.
pub fn gpus_reachable(engine: &EngineFacts, host: &HostFacts) -> bool {
    match &engine.state {
        EngineState::Reachable(daemon) => matches!(gpu_path(daemon, host), GpuPath::Open(_)),
        EngineState::Unreachable { .. } => false,
    }
}
