//! The wire types of `POST /containers/create`: the subset of the Engine API's create body
//! that envctl sends, spelled so that `serde_json::to_string` gives exactly the JSON the
//! daemon expects (and the JSON `docker run` sends for the same settings).
//!
//! Field names follow the Engine API (PascalCase, with `DeviceIDs` spelled out), which are
//! also the serde names of bollard's `ContainerCreateBody`, so the engine adapter converts
//! with `serde_json::from_value::<bollard::models::ContainerCreateBody>(to_value(&body))`
//! and loses nothing (`tests/it/spec_equivalence.rs` checks that round trip). Two places where
//! bollard 0.21's Rust types differ from the API and why the JSON still round-trips:
//!
//! - `ExposedPorts` is an object (`{"8888/tcp": {}}`) in the API and here, but
//!   `Option<Vec<String>>` in bollard; bollard's own (de)serialiser maps the object's keys
//!   to the list and back, so deserialising this JSON into bollard works unchanged.
//! - `DeviceIDs` is `null` for count requests here, as the docker CLI sends it (Go's nil
//!   slice); bollard reads `null` as `None` and then omits the field, which the daemon
//!   stores as the same nil slice.
//!
//! Maps are `BTreeMap`s so the JSON, and the `docker run` line built from it, are the same
//! on every run.
//!
//! Which `Env` values are secret ([`CreateBody::is_secret_env`]) travels with the body but
//! is never sent: the rule of [`crate::secret`] plus the keys `up -e KEY` took from the
//! shell, so everything that shows the body (the `docker run` line, `--dry-run --json`, the
//! drift list) masks the same values.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The container-create body: image, process, labels, and [`HostConfig`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateBody {
    /// The image reference as the profile writes it (`pytorch/pytorch:2.8.0-…`).
    pub image: String,
    /// Arguments after the image, replacing its `CMD` (its `ENTRYPOINT` stays), as
    /// `docker run IMAGE COMMAND…` does.
    pub cmd: Vec<String>,
    /// `KEY=value`, sorted by key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// `Config.Hostname` (`--hostname`); absent lets the engine name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// `"8888/tcp": {}` for every published container port, as `docker run -p` adds them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exposed_ports: BTreeMap<String, EmptyObject>,
    pub host_config: HostConfig,
    /// `OpenStdin` and `StdinOnce`: the main process reads what `envctl run` passes on
    /// from its own stdin (a pipe or file, or a terminal with `-i`), closed when that ends,
    /// as `docker run -i`. Absent for `up`'s containers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_stdin: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdin_once: bool,
    /// The `Env` keys whose value `up -e KEY` took from the shell: secret whatever their
    /// name. Not part of the request.
    #[serde(skip)]
    pub env_from_shell: BTreeSet<String>,
}

impl CreateBody {
    /// Whether the variable `key` holding `value` must not be shown: its name or value looks
    /// secret ([`crate::secret::is_secret`]) or it came from the shell.
    pub fn is_secret_env(&self, key: &str, value: &str) -> bool {
        crate::secret::is_secret(key, value) || self.env_from_shell.contains(key)
    }

    /// The secret keys of `Env`, in its order.
    pub fn secret_env_keys(&self) -> Vec<String> {
        crate::secret::secret_keys(self.env.iter().map(String::as_str), |key, value| {
            self.is_secret_env(key, value)
        })
    }

    /// The body with every secret value replaced by [`crate::secret::MASK`]: what
    /// `up --dry-run --json` shows. Never send it.
    pub fn masked(&self) -> CreateBody {
        let mut masked = self.clone();
        masked.env = self
            .env
            .iter()
            .map(|entry| {
                crate::secret::mask_entry(entry, |key, value| self.is_secret_env(key, value))
            })
            .collect();
        masked
    }
}

/// The `{}` values of `ExposedPorts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyObject {}

/// `HostConfig`: resources, namespaces, ports, mounts, limits, devices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostConfig {
    /// Bytes (`--memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<i64>,
    /// CPUs × 10⁹ (`--cpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nano_cpus: Option<i64>,
    /// Bytes of `/dev/shm` (`--shm-size`); absent means Docker's 64 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_size: Option<i64>,
    /// `private`, `shareable` or `host`; absent means the daemon's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc_mode: Option<String>,
    /// `"8888/tcp"` → one binding per host address, one key per container port (a range
    /// is expanded, as the docker CLI does).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub port_bindings: BTreeMap<String, Vec<PortBinding>>,
    /// Binds and named volumes (`--mount`, never the older `Binds` strings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ulimits: Vec<Ulimit>,
    pub restart_policy: RestartPolicy,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_requests: Vec<DeviceRequest>,
    /// `true` runs docker-init as PID 1 (`--init`); absent means the daemon's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<bool>,
    /// `host`, `none`, `bridge` or a network's name (`--network`); absent is the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_mode: Option<String>,
    /// Host device nodes (`--device`), in the profile's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceMapping>,
    /// Added capabilities as the docker CLI sends them (`CAP_IPC_LOCK`, `ALL`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
}

/// One entry of `HostConfig.Devices`, as `docker run --device` sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeviceMapping {
    pub path_on_host: String,
    pub path_in_container: String,
    /// Some of `r`, `w`, `m`.
    pub cgroup_permissions: String,
}

/// One host address a container port is published on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PortBinding {
    /// `127.0.0.1`, `0.0.0.0`, `::1` (no brackets).
    pub host_ip: String,
    /// A port number, or `""` to let Docker pick a free one.
    pub host_port: String,
}

/// Whether a mount's source is a host path or a named volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MountType {
    Bind,
    Volume,
}

impl MountType {
    pub fn as_str(self) -> &'static str {
        match self {
            MountType::Bind => "bind",
            MountType::Volume => "volume",
        }
    }
}

/// One entry of `HostConfig.Mounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Mount {
    #[serde(rename = "Type")]
    pub kind: MountType,
    /// An absolute host path (bind) or a volume name.
    pub source: String,
    pub target: String,
    /// Omitted when false, as the docker CLI (Go's `omitempty`) sends it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
}

/// One entry of `HostConfig.Ulimits`; -1 is unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Ulimit {
    pub name: String,
    pub soft: i64,
    pub hard: i64,
}

/// `HostConfig.RestartPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RestartPolicy {
    /// `no`, `always`, `unless-stopped` or `on-failure`.
    pub name: String,
    pub maximum_retry_count: i64,
}

impl Default for RestartPolicy {
    /// What `docker run` sends without `--restart`: never restart.
    fn default() -> Self {
        RestartPolicy {
            name: "no".into(),
            maximum_retry_count: 0,
        }
    }
}

/// One entry of `HostConfig.DeviceRequests`, field for field what `docker run --gpus`
/// sends (docker/cli `opts/gpus.go`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeviceRequest {
    /// `""`: the daemon picks the driver whose capabilities match (nvidia for `gpu`).
    pub driver: String,
    /// -1 for every GPU, N for the first N, 0 when `DeviceIDs` names them.
    pub count: i64,
    /// GPU indexes or UUIDs; `null` for count requests, as the CLI sends it.
    #[serde(rename = "DeviceIDs")]
    pub device_ids: Option<Vec<String>>,
    /// An OR-list of AND-lists; `[["gpu"]]`.
    pub capabilities: Vec<Vec<String>>,
    /// Driver options; `{}`, as the CLI sends it.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

impl DeviceRequest {
    fn gpus(count: i64, device_ids: Option<Vec<String>>) -> Self {
        DeviceRequest {
            driver: String::new(),
            count,
            device_ids,
            capabilities: vec![vec!["gpu".into()]],
            options: BTreeMap::new(),
        }
    }

    /// `--gpus all`.
    pub fn all_gpus() -> Self {
        DeviceRequest::gpus(-1, None)
    }

    /// `--gpus N`: the first N GPUs.
    pub fn gpu_count(count: u32) -> Self {
        DeviceRequest::gpus(i64::from(count), None)
    }

    /// `--gpus '"device=0,1"'`: Count stays 0, else the daemon refuses the request
    /// ("cannot set both Count and DeviceIDs on device request").
    pub fn gpu_devices(devices: Vec<String>) -> Self {
        DeviceRequest::gpus(0, Some(devices))
    }

    /// Whether this is a plain GPU request (`Driver` "", `Capabilities` `[["gpu"]]`, no
    /// options), the only kind `docker run --gpus` can write without extra keys.
    pub fn is_plain_gpu_request(&self) -> bool {
        self.driver.is_empty()
            && self.options.is_empty()
            && self.capabilities == [vec!["gpu".to_string()]]
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}
