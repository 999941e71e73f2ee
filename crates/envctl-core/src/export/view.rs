//! The create body (and the profile settings it came from) as every exporter reads it: a
//! typed, already-interpreted view, so "which mounts are binds and which named volumes",
//! "the published ports", "the command", "the environment as pairs" and "the GPU request"
//! are each derived once, the same way for compose, Kubernetes and devcontainer.json.
//!
//! Building the view reads nothing but the [`ExportInput`]: no lock, no file system. A bind
//! source that cannot be resolved is kept as its error, so that an exporter returns it when
//! it reaches that mount, in the profile's order, as it would have walking the profile.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::{BindSource, ExportInput, bind_source};
use crate::container_plan::{
    CONFIG_HASH_LABEL, DeviceMapping, DeviceRequest, KEEP_ALIVE_COMMAND, SpecError, Ulimit,
};
use crate::profile::model::{GpuRequest, Ipc, MountKind, PortBinding, Protocol};

/// What every exporter reads of the body and the profile.
#[derive(Debug)]
pub(super) struct BodyView<'a> {
    /// The profile's name, as written.
    pub(super) profile_name: &'a str,
    /// Already pinned by `envctl.lock` when the lock pins it (`ops::environment`).
    pub(super) image: &'a str,
    /// The body's `Cmd`: the words after the image.
    pub(super) command: &'a [String],
    /// The command the profile itself sets, if it sets one (the body's may be envctl's
    /// keep-alive).
    pub(super) profile_command: Option<&'a [String]>,
    /// `KEY=value` pairs of the body's `Env`, split at the first `=`, in the body's order.
    pub(super) environment: Vec<(String, String)>,
    /// The keys of `environment` whose values are secret (`crate::secret`): exports
    /// reference them (`${KEY}`, a Kubernetes Secret) and never write the value.
    pub(super) secrets: Vec<String>,
    pub(super) working_dir: Option<&'a str>,
    pub(super) user: Option<&'a str>,
    pub(super) labels: &'a BTreeMap<String, String>,
    /// Bytes.
    pub(super) memory: Option<u64>,
    /// CPUs × 10⁹.
    pub(super) nano_cpus: Option<i64>,
    /// Bytes of `/dev/shm`.
    pub(super) shm_size: Option<u64>,
    /// Whether the profile sets `shm_size` itself (rather than envctl's default).
    pub(super) profile_sets_shm_size: bool,
    /// The profile's IPC mode, typed.
    pub(super) ipc: Option<Ipc>,
    /// The body's `IpcMode`, as Docker reads it.
    pub(super) ipc_mode: Option<&'a str>,
    pub(super) init: Option<bool>,
    /// The body's `RestartPolicy.Name` (`no`).
    pub(super) restart_policy: &'a str,
    pub(super) ulimits: &'a [Ulimit],
    pub(super) gpus: Gpus<'a>,
    /// The GPU request as the profile writes it (`2`, `[0, 1]`), for notices.
    pub(super) written_gpus: String,
    /// The body's GPU `DeviceRequests`, for targets that write them as Docker has them.
    pub(super) device_requests: &'a [DeviceRequest],
    /// The profile's mounts, in order.
    pub(super) mounts: Vec<MountView<'a>>,
    /// The profile's port bindings, in order.
    pub(super) ports: Vec<PortView<'a>>,
    /// The body's `NetworkMode`: `host`, `none`, `bridge` or a network's name.
    pub(super) network_mode: Option<&'a str>,
    /// The body's `Devices`, in the profile's order.
    pub(super) devices: &'a [DeviceMapping],
    /// The body's `CapAdd`, as Docker takes them (`CAP_IPC_LOCK`).
    pub(super) cap_add: &'a [String],
    /// The body's `Hostname`.
    pub(super) hostname: Option<&'a str>,
}

/// The GPU request, with "no GPU" said one way: a count of 0 and an empty id list ask for
/// none, as `up` reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gpus<'a> {
    None,
    All,
    Optional,
    Count(u32),
    Devices(&'a [String]),
}

/// One mount of the profile.
#[derive(Debug)]
pub(super) struct MountView<'a> {
    /// The path in the container.
    pub(super) target: &'a str,
    pub(super) read_only: bool,
    /// The source as the profile writes it: a volume name or a host path.
    pub(super) written: &'a str,
    pub(super) source: MountSource,
}

/// Where a mount's data lives.
#[derive(Debug)]
pub(super) enum MountSource {
    /// A named volume; its name is the mount's `written`.
    Volume,
    /// A bind mount of a host path, or the error `up` gives for its source.
    Bind(Result<BindSource, SpecError>),
}

/// One port binding of the profile.
#[derive(Debug)]
pub(super) struct PortView<'a> {
    /// Docker's short syntax with the host IP: `127.0.0.1:8888:8888/tcp`.
    pub(super) written: String,
    pub(super) binding: &'a PortBinding,
    /// Every port of the binding's range, in order.
    pub(super) published: Vec<PublishedPort>,
}

/// One container port and where it is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PublishedPort {
    pub(super) host_ip: IpAddr,
    /// `None` lets Docker choose a free host port.
    pub(super) host_port: Option<u16>,
    pub(super) container_port: u16,
    pub(super) protocol: Protocol,
}

impl<'a> BodyView<'a> {
    pub(super) fn new(input: &ExportInput<'a>) -> Self {
        let profile = &input.resolved.profile;
        let body = input.body;
        let host = &body.host_config;
        BodyView {
            profile_name: &profile.name,
            image: &body.image,
            command: &body.cmd,
            profile_command: profile.command.as_deref(),
            environment: environment(&body.env),
            secrets: body.secret_env_keys(),
            working_dir: body.working_dir.as_deref(),
            user: body.user.as_deref(),
            labels: &body.labels,
            memory: host.memory.and_then(|bytes| u64::try_from(bytes).ok()),
            nano_cpus: host.nano_cpus,
            shm_size: host.shm_size.and_then(|bytes| u64::try_from(bytes).ok()),
            profile_sets_shm_size: profile.shm_size.is_some(),
            ipc: profile.ipc,
            ipc_mode: host.ipc_mode.as_deref(),
            init: host.init,
            restart_policy: &host.restart_policy.name,
            ulimits: &host.ulimits,
            gpus: Gpus::of(&profile.gpus),
            written_gpus: profile.gpus.to_string(),
            device_requests: &host.device_requests,
            mounts: profile
                .mounts
                .iter()
                .map(|mount| MountView {
                    target: &mount.target,
                    read_only: mount.read_only,
                    written: &mount.source,
                    source: match mount.kind {
                        MountKind::Volume => MountSource::Volume,
                        MountKind::Bind => MountSource::Bind(bind_source(mount, input)),
                    },
                })
                .collect(),
            ports: profile.ports.iter().map(PortView::of).collect(),
            network_mode: host.network_mode.as_deref(),
            devices: &host.devices,
            cap_add: &host.cap_add,
            hostname: body.hostname.as_deref(),
        }
    }

    /// Whether the container shares the host's network namespace.
    pub(super) fn host_network(&self) -> bool {
        self.network_mode == Some("host")
    }

    /// A network made with `docker network create`, which the target must join by name.
    pub(super) fn named_network(&self) -> Option<&'a str> {
        self.network_mode
            .filter(|mode| !matches!(*mode, "host" | "none" | "bridge"))
    }

    /// The devices as `docker run --device` writes them.
    pub(super) fn written_devices(&self) -> Vec<String> {
        self.devices
            .iter()
            .map(crate::container_plan::device_flag)
            .collect()
    }

    /// The added capabilities without `CAP_`, as Kubernetes and people write them.
    pub(super) fn capability_names(&self) -> Vec<String> {
        self.cap_add
            .iter()
            .map(|name| name.strip_prefix("CAP_").unwrap_or(name).to_string())
            .collect()
    }

    /// The `envctl.config-hash` label's value.
    pub(super) fn config_hash(&self) -> Option<&'a str> {
        self.labels.get(CONFIG_HASH_LABEL).map(String::as_str)
    }

    /// Whether the value of the variable `key` is secret: written as a reference only.
    pub(super) fn is_secret(&self, key: &str) -> bool {
        self.secrets.iter().any(|secret| secret == key)
    }

    /// Whether the container shares the host's IPC namespace (and so its `/dev/shm`).
    pub(super) fn host_ipc(&self) -> bool {
        self.ipc == Some(Ipc::Host)
    }

    /// Whether the command is envctl's keep-alive `sleep infinity`.
    pub(super) fn keeps_alive(&self) -> bool {
        self.command
            .iter()
            .map(String::as_str)
            .eq(KEEP_ALIVE_COMMAND)
    }

    /// Every published container port of every binding, in the profile's order.
    pub(super) fn published_ports(&self) -> impl Iterator<Item = &PublishedPort> {
        self.ports.iter().flat_map(|port| &port.published)
    }

    /// The bindings in Docker's short syntax.
    pub(super) fn written_ports(&self) -> Vec<String> {
        self.ports.iter().map(|port| port.written.clone()).collect()
    }

    /// The ulimits as `name=soft:hard`, as `docker run --ulimit` takes them.
    pub(super) fn written_ulimits(&self) -> Vec<String> {
        self.ulimits.iter().map(ulimit_text).collect()
    }
}

impl<'a> Gpus<'a> {
    fn of(request: &'a GpuRequest) -> Self {
        match request {
            GpuRequest::None | GpuRequest::Count(0) => Gpus::None,
            GpuRequest::Devices(devices) if devices.is_empty() => Gpus::None,
            GpuRequest::All => Gpus::All,
            GpuRequest::Optional => Gpus::Optional,
            GpuRequest::Count(count) => Gpus::Count(*count),
            GpuRequest::Devices(devices) => Gpus::Devices(devices),
        }
    }
}

impl MountView<'_> {
    /// The mount type as compose and `--mount` name it.
    pub(super) fn kind_name(&self) -> &'static str {
        match self.source {
            MountSource::Volume => "volume",
            MountSource::Bind(_) => "bind",
        }
    }
}

impl<'a> PortView<'a> {
    fn of(binding: &'a PortBinding) -> Self {
        PortView {
            written: binding.to_string(),
            binding,
            published: expand(binding),
        }
    }
}

/// Every port of a binding's range, with the fixed host port where it has one.
fn expand(binding: &PortBinding) -> Vec<PublishedPort> {
    (binding.container.start..=binding.container.end)
        .enumerate()
        .map(|(offset, container_port)| {
            let host_port = binding.host.and_then(|host| {
                u16::try_from(offset)
                    .ok()
                    .and_then(|offset| host.start.checked_add(offset))
            });
            PublishedPort {
                host_ip: binding.host_ip,
                host_port,
                container_port,
                protocol: binding.protocol,
            }
        })
        .collect()
}

/// `KEY=value` pairs of an `Env` list, split at the first `=`.
fn environment(env: &[String]) -> Vec<(String, String)> {
    env.iter()
        .map(|variable| match variable.split_once('=') {
            Some((key, value)) => (key.to_string(), value.to_string()),
            None => (variable.clone(), String::new()),
        })
        .collect()
}

/// `name=soft:hard`.
fn ulimit_text(limit: &Ulimit) -> String {
    format!("{}={}:{}", limit.name, limit.soft, limit.hard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::model::PortRange;

    #[test]
    fn a_range_publishes_each_port_with_its_host_port() {
        let binding = PortBinding {
            host_ip: IpAddr::from([127, 0, 0, 1]),
            host: Some(PortRange {
                start: 9000,
                end: 9001,
            }),
            container: PortRange {
                start: 8000,
                end: 8001,
            },
            protocol: Protocol::Udp,
        };
        let published: Vec<(Option<u16>, u16)> = expand(&binding)
            .iter()
            .map(|port| (port.host_port, port.container_port))
            .collect();
        assert_eq!(published, [(Some(9000), 8000), (Some(9001), 8001)]);
        let any_host = PortBinding {
            host: None,
            ..binding
        };
        assert!(
            expand(&any_host)
                .iter()
                .all(|port| port.host_port.is_none())
        );
    }

    #[test]
    fn no_gpu_is_said_one_way() {
        assert_eq!(Gpus::of(&GpuRequest::Count(0)), Gpus::None);
        assert_eq!(Gpus::of(&GpuRequest::Devices(Vec::new())), Gpus::None);
        assert_eq!(Gpus::of(&GpuRequest::Count(2)), Gpus::Count(2));
        let ids = vec!["0".to_string()];
        assert_eq!(
            Gpus::of(&GpuRequest::Devices(ids.clone())),
            Gpus::Devices(&ids)
        );
    }

    #[test]
    fn environment_splits_at_the_first_equals_sign() {
        let env = [
            "A=b=c".to_string(),
            "EMPTY=".to_string(),
            "BARE".to_string(),
        ];
        assert_eq!(
            environment(&env),
            [
                ("A".to_string(), "b=c".to_string()),
                ("EMPTY".to_string(), String::new()),
                ("BARE".to_string(), String::new()),
            ]
        );
    }
}
