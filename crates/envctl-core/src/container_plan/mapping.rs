//! The mapping itself: a resolved profile (plus `up` overrides) and a few facts about the
//! host → [`CreateBody`]. Pure: whatever it needs from the world comes in [`SpecContext`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::checks::safety::is_pytorch;
use crate::profile::host_access::engine_capability;
use crate::profile::model::{GpuRequest, Ipc, MountKind, Profile};
use crate::profile::ports::{HostPortClaims, MAXIMUM_PORT_BINDINGS};
use crate::profile::resolve::{ResolvedProfile, config_hash};

use super::body::{
    CreateBody, DeviceMapping, DeviceRequest, EmptyObject, HostConfig, Mount, MountType,
    PortBinding, RestartPolicy, Ulimit,
};
use super::error::{MissingSource, SpecError};
use super::overrides::Overrides;
use super::sources::resolve_bind_source;
use super::{
    CONFIG_HASH_LABEL, CUDA_DEVICE_ORDER, DEFAULT_SHM_SIZE, KEEP_ALIVE_COMMAND, PROFILE_HASH_LABEL,
    PROFILE_LABEL,
};

/// What `create_body` needs to know about where it runs.
pub struct SpecContext<'a> {
    /// Absolute; `./` and `../` bind sources resolve against it.
    pub working_directory: PathBuf,
    /// `~` bind sources resolve against it; `None` makes them an error.
    pub home: Option<PathBuf>,
    /// Whether the host has a usable GPU: decides `gpus = "optional"`.
    pub host_has_gpus: bool,
    /// `up -e/-p/-v`, applied on top of the profile.
    pub overrides: Overrides,
    /// Whether a resolved bind source exists; `up` passes `&|path| path.exists()`, tests
    /// a set. Asked once per bind mount.
    pub path_exists: &'a dyn Fn(&Path) -> bool,
}

impl fmt::Debug for SpecContext<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SpecContext")
            .field("working_directory", &self.working_directory)
            .field("home", &self.home)
            .field("host_has_gpus", &self.host_has_gpus)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

/// The create body for `resolved` on a host described by `context`.
///
/// Fails, before anything is created, when a bind source is missing (all missing ones are
/// named at once), when `~` cannot be expanded, when a size or `cpus` does not fit the
/// Engine API's integers, or when an override publishes a host port twice.
pub fn create_body(
    resolved: &ResolvedProfile,
    context: &SpecContext<'_>,
) -> Result<CreateBody, SpecError> {
    let overridden;
    let (profile, hash) = if context.overrides.is_empty() {
        (&resolved.profile, resolved.config_hash.clone())
    } else {
        overridden = context.overrides.apply(&resolved.profile);
        // The label must tell `up` that this container differs from the plain profile's.
        let hash = config_hash(&overridden);
        (&overridden, hash)
    };
    check_port_conflicts(profile)?;
    let device_requests = device_requests(&profile.gpus, context.host_has_gpus);
    let gpus_requested = !device_requests.is_empty();
    let (cmd, init) = command_and_init(profile);
    let (port_bindings, exposed_ports) = port_bindings(profile);
    let labels = labels(profile, resolved, context, hash);
    Ok(CreateBody {
        image: profile.image.to_string(),
        cmd,
        env: environment(profile, gpus_requested),
        working_dir: profile.workdir.clone(),
        user: profile.user.clone(),
        hostname: profile.hostname.clone(),
        labels,
        exposed_ports,
        env_from_shell: context.overrides.from_shell.clone(),
        open_stdin: false,
        stdin_once: false,
        host_config: host_config(
            profile,
            context,
            HostRequests {
                device_requests,
                init,
                port_bindings,
            },
        )?,
    })
}

/// The container's variables as `KEY=VALUE`: the profile's, and, when it gets GPUs,
/// `CUDA_DEVICE_ORDER` unless the profile sets it.
fn environment(profile: &Profile, gpus_requested: bool) -> Vec<String> {
    let mut env = profile.env.clone();
    if gpus_requested {
        // nvidia-smi numbers GPUs by PCI bus, CUDA by speed unless told otherwise: make
        // `CUDA_VISIBLE_DEVICES=1` and `nvidia-smi -i 1` the same GPU.
        let (key, value) = CUDA_DEVICE_ORDER;
        env.entry(key.to_string())
            .or_insert_with(|| value.to_string());
    }
    env.iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect()
}

/// The container's labels: the profile's own first; envctl's (never `envctl.*` in a
/// profile) after, with the `hash` of what it was made from and, when overrides changed
/// it, the plain profile's hash.
fn labels(
    profile: &Profile,
    resolved: &ResolvedProfile,
    context: &SpecContext<'_>,
    hash: String,
) -> BTreeMap<String, String> {
    let mut labels = profile.labels.clone();
    labels.extend([
        (PROFILE_LABEL.to_string(), profile.name.clone()),
        (CONFIG_HASH_LABEL.to_string(), hash),
    ]);
    if !context.overrides.is_empty() {
        labels.insert(PROFILE_HASH_LABEL.to_string(), resolved.config_hash.clone());
    }
    labels
}

/// The profile's command, or the keep-alive command with docker-init as PID 1.
fn command_and_init(profile: &Profile) -> (Vec<String>, Option<bool>) {
    match &profile.command {
        Some(command) => (command.clone(), None),
        // docker-init as PID 1 forwards `docker stop`'s SIGTERM to `sleep`, which then
        // exits at once instead of waiting out the 10 s kill timeout.
        None => (
            KEEP_ALIVE_COMMAND
                .iter()
                .map(|word| word.to_string())
                .collect(),
            Some(true),
        ),
    }
}

/// What [`create_body`] decided before the host config: the GPU requests, docker-init,
/// and the published ports.
struct HostRequests {
    device_requests: Vec<DeviceRequest>,
    init: Option<bool>,
    port_bindings: BTreeMap<String, Vec<PortBinding>>,
}

/// The `HostConfig` of the body: limits, shared memory, mounts, ulimits, devices and
/// capabilities from the profile, with the `requests` decided before it.
fn host_config(
    profile: &Profile,
    context: &SpecContext<'_>,
    requests: HostRequests,
) -> Result<HostConfig, SpecError> {
    let gpus_requested = !requests.device_requests.is_empty();
    Ok(HostConfig {
        memory: profile
            .memory
            .map(|size| signed_size("memory", size.bytes()))
            .transpose()?,
        nano_cpus: profile.cpus.map(nano_cpus).transpose()?,
        shm_size: shm_size(profile, gpus_requested)
            .map(|bytes| signed_size("shm_size", bytes))
            .transpose()?,
        ipc_mode: profile.ipc.map(|ipc| ipc.as_str().to_string()),
        port_bindings: requests.port_bindings,
        mounts: mounts(profile, context)?,
        ulimits: profile
            .ulimits
            .iter()
            .map(|(name, limit)| Ulimit {
                name: name.clone(),
                soft: limit.soft,
                hard: limit.hard,
            })
            .collect(),
        restart_policy: RestartPolicy::default(),
        device_requests: requests.device_requests,
        init: requests.init,
        network_mode: profile
            .network
            .as_ref()
            .map(|network| network.as_str().to_string()),
        devices: profile
            .devices
            .iter()
            .map(|device| DeviceMapping {
                path_on_host: device.host.clone(),
                path_in_container: device.container.clone(),
                cgroup_permissions: device.permissions.clone(),
            })
            .collect(),
        cap_add: profile
            .cap_add
            .iter()
            .map(|name| engine_capability(name))
            .collect(),
    })
}

/// The `DeviceRequests` of `docker run --gpus`; `optional` is `all` on a host with GPUs
/// and nothing elsewhere (`Gpus::asked`, the one reading of a profile's `gpus`).
pub fn device_requests(gpus: &GpuRequest, host_has_gpus: bool) -> Vec<DeviceRequest> {
    super::gpus::Gpus::asked(gpus, host_has_gpus).docker_requests()
}

/// The profile's `shm_size`; else [`DEFAULT_SHM_SIZE`] for PyTorch images and GPU
/// containers, unless the IPC namespace is the host's (whose `/dev/shm` Docker does not
/// size); else `None`, Docker's 64 MiB.
pub fn shm_size(profile: &Profile, gpus_requested: bool) -> Option<u64> {
    if let Some(size) = profile.shm_size {
        return Some(size.bytes());
    }
    let needs_shared_memory = is_pytorch(profile) || gpus_requested;
    (needs_shared_memory && profile.ipc != Some(Ipc::Host)).then_some(DEFAULT_SHM_SIZE)
}

/// One `PortBindings` key per container port, as the docker CLI expands ranges, with the
/// matching `ExposedPorts`.
fn port_bindings(
    profile: &Profile,
) -> (
    BTreeMap<String, Vec<PortBinding>>,
    BTreeMap<String, EmptyObject>,
) {
    let mut bindings: BTreeMap<String, Vec<PortBinding>> = BTreeMap::new();
    for port in &profile.ports {
        for offset in 0..port.container.len() {
            // Lengths match (validated), and `offset` < a u16 range length.
            let offset = offset as u16;
            let key = format!(
                "{}/{}",
                port.container.start + offset,
                port.protocol.as_str()
            );
            let host_port = port
                .host
                .map(|host| (host.start + offset).to_string())
                .unwrap_or_default();
            bindings.entry(key).or_default().push(PortBinding {
                host_ip: port.host_ip.to_string(),
                host_port,
            });
        }
    }
    let exposed = bindings
        .keys()
        .map(|key| (key.clone(), EmptyObject {}))
        .collect();
    (bindings, exposed)
}

fn mounts(profile: &Profile, context: &SpecContext<'_>) -> Result<Vec<Mount>, SpecError> {
    let mut mounts = Vec::new();
    let mut missing = Vec::new();
    for mount in &profile.mounts {
        let (kind, source) = match mount.kind {
            MountKind::Volume => (MountType::Volume, mount.source.clone()),
            MountKind::Bind => {
                let path = resolve_bind_source(
                    &mount.source,
                    &context.working_directory,
                    context.home.as_deref(),
                )?;
                if !(context.path_exists)(&path) {
                    missing.push(MissingSource {
                        path,
                        written: mount.source.clone(),
                        target: mount.target.clone(),
                    });
                    continue;
                }
                let source = path
                    .to_str()
                    .ok_or_else(|| SpecError::NotUnicode { path: path.clone() })?
                    .to_string();
                (MountType::Bind, source)
            }
        };
        mounts.push(Mount {
            kind,
            source,
            target: mount.target.clone(),
            read_only: mount.read_only,
        });
    }
    if missing.is_empty() {
        Ok(mounts)
    } else {
        Err(SpecError::MissingBindSources { missing })
    }
}

/// In time linear in the ports claimed (comparing every pair was quadratic). The limit on
/// expanded bindings that validation puts on a profile holds here again for the profile
/// with its `-p` ports, before anything is expanded.
fn check_port_conflicts(profile: &Profile) -> Result<(), SpecError> {
    // Validation refuses a profile that does this; `-p` reaches here unchecked.
    if let Some(network) = profile
        .network
        .as_ref()
        .filter(|network| network.publishes_nothing())
        && let Some(binding) = profile.ports.first()
    {
        return Err(SpecError::PortsWithoutNetwork {
            binding: binding.to_string(),
            network: network.to_string(),
        });
    }
    let mut claims: HostPortClaims<usize> = HostPortClaims::default();
    let mut expanded: u32 = 0;
    for (index, second) in profile.ports.iter().enumerate() {
        expanded = expanded.saturating_add(second.container.len());
        if expanded > MAXIMUM_PORT_BINDINGS {
            return Err(SpecError::TooManyPortBindings {
                binding: second.to_string(),
                expanded,
                limit: MAXIMUM_PORT_BINDINGS,
            });
        }
        if let Some(first) = claims.conflict(second) {
            let first = &profile.ports[first];
            return Err(SpecError::PortConflict {
                first: first.to_string(),
                second: second.to_string(),
            });
        }
        claims.claim(second, index);
    }
    Ok(())
}

fn signed_size(key: &'static str, bytes: u64) -> Result<i64, SpecError> {
    i64::try_from(bytes).map_err(|_| SpecError::SizeOutOfRange { key, bytes })
}

/// CPUs × 10⁹, rounded to the nearest integer; the docker CLI refuses more precision.
fn nano_cpus(cpus: f64) -> Result<i64, SpecError> {
    let nanos = (cpus * 1e9).round();
    // `i64::MAX as f64` rounds up to 2⁶³, itself out of range: compare with `<`.
    if nanos.is_finite() && nanos >= 1.0 && nanos < i64::MAX as f64 {
        Ok(nanos as i64)
    } else {
        Err(SpecError::CpusOutOfRange { cpus })
    }
}
