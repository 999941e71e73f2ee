//! Which containers hold GPUs: every container that was given GPUs and has not exited,
//! with its request as the engine stored it. Labels are claims: envctl's [`GPUS_LABEL`]
//! never makes a container a holder (any docker user can write it on a container with no
//! GPU); it only names, in envctl's words, the GPUs of a container that has some. So every
//! container is inspected, several at a time, once: a container's `DeviceRequests`,
//! `Devices`, environment and runtime never change after its create, so what a caller read
//! before (by id, [`HoldersRead::requests`]) is taken as known. The one exception is
//! Podman's CDI devices, which appear in `Devices` at start: a created container with no
//! GPUs is not taken as known (and on Podman, its label is believed until it starts). GPUs
//! given as device nodes (`--device /dev/nvidia3`) count by the node's minor number; GPUs
//! given by the environment (`NVIDIA_VISIBLE_DEVICES`, which every CUDA image sets to
//! `all`) count where the container runs under the NVIDIA runtime, its own or the daemon's
//! default ([`environment_gpus`]). A GPU probe of envctl's (`engine::probe`), given every
//! GPU for a few seconds of nvidia-smi, holds none.

use std::collections::{BTreeMap, HashMap};

use futures_util::StreamExt;

use super::{Engine, EngineError};
use envctl_core::container_plan::{GPUS_LABEL, PROFILE_LABEL, USER_LABEL};
use envctl_facts::container::GpuAssignment;
use envctl_facts::occupancy::GpuHolder;

/// States in which a container holds nothing: it gets its GPUs again only when started.
const HOLDS_NOTHING: [&str; 3] = ["exited", "dead", "removing"];

/// How many inspects are in flight at once: the daemon answers them in parallel, and a
/// host with hundreds of containers must not open hundreds of connections.
const INSPECTS_AT_ONCE: usize = 8;

/// A container, the GPUs its inspect shows, what its [`GPUS_LABEL`] claims, and whether
/// the answer gave its environment.
type Inspected = (
    GpuHolder,
    Option<GpuAssignment>,
    Option<GpuAssignment>,
    bool,
);

/// What one reading of the holders found.
#[derive(Debug, Default)]
pub struct HoldersRead {
    pub holders: Vec<GpuHolder>,
    /// The GPU request of every container that has not exited and carries no
    /// [`GPUS_LABEL`], by id (`None`: no GPUs): what a later reading may take as known, since
    /// a container's `DeviceRequests` never change after its create.
    pub requests: BTreeMap<String, Option<GpuAssignment>>,
    /// Every running container, `(id, name)`, from the same list: whose cgroup a GPU
    /// process may be in.
    pub running: Vec<(String, String)>,
}

impl Engine {
    /// Every container that holds GPUs now (created, running, paused or restarting).
    pub async fn gpu_holders(&self) -> Result<Vec<GpuHolder>, EngineError> {
        Ok(self.gpu_holders_known(&BTreeMap::new()).await?.holders)
    }

    /// [`Engine::gpu_holders`], taking the requests of the containers in `known` (by id)
    /// from there instead of inspecting them again.
    pub async fn gpu_holders_known(
        &self,
        known: &BTreeMap<String, Option<GpuAssignment>>,
    ) -> Result<HoldersRead, EngineError> {
        let listed = self.list_raw(true, None).await?;
        let mut holders = Vec::new();
        let mut requests = BTreeMap::new();
        let mut to_inspect = Vec::new();
        let mut running = Vec::new();
        for container in listed {
            if container.state == "running" {
                running.push((container.id.clone(), container.name()));
            }
            // Podman says `stopped` for a container it is stopping: it holds nothing then.
            if HOLDS_NOTHING.contains(&container.state.as_str()) || container.state == "stopped" {
                continue;
            }
            // Another client's GPU probe (`engine::probe`): given every GPU for nvidia-smi's
            // queries (`utility`, no compute), for seconds, and swept once past its
            // deadline; counted, it would make every GPU look taken to a placement that
            // runs meanwhile. Only a label its image did not give, on a container that is
            // no profile's (`Engine::is_probe`).
            if container.labels.contains_key(super::probe::PROBE_LABEL)
                && self.is_probe(&container).await
            {
                continue;
            }
            let label = container
                .labels
                .get(GPUS_LABEL)
                .and_then(|label| parse_label(label));
            let holder = holder_of(container);
            match known.get(&holder.id) {
                Some(request) => {
                    requests.insert(holder.id.clone(), request.clone());
                    holders.extend(request.clone().map(|gpus| GpuHolder { gpus, ..holder }));
                }
                None => to_inspect.push((holder, label)),
            }
        }
        // The daemon's default runtime decides whether a container's environment gives it
        // GPUs: asked once, only when a container is inspected.
        let default_runtime = if to_inspect.is_empty() {
            None
        } else {
            self.default_runtime().await?
        };
        let podman = self.known_kind() == envctl_facts::engine::EngineKind::Podman;
        let inspected: Vec<Result<Option<Inspected>, EngineError>> =
            futures_util::stream::iter(to_inspect.into_iter().map(|(holder, label)| {
                self.inspect_holder(holder, label, default_runtime.as_deref())
            }))
            .buffer_unordered(INSPECTS_AT_ONCE)
            .collect()
            .await;
        for answer in inspected {
            if let Some(inspected) = answer? {
                take_inspected(inspected, podman, &mut holders, &mut requests);
            }
        }
        holders.sort_by(|left, right| left.name.cmp(&right.name));
        Ok(HoldersRead {
            holders,
            requests,
            running,
        })
    }

    /// Inspects one container for the GPUs it was given; `None` when it is gone.
    async fn inspect_holder(
        &self,
        holder: GpuHolder,
        label: Option<GpuAssignment>,
        default_runtime: Option<&str>,
    ) -> Result<Option<Inspected>, EngineError> {
        let Some(inspect) = self.inspect_response(&holder.id).await? else {
            // Removed between the list and the inspect: it holds nothing now.
            return Ok(None);
        };
        // The daemon writes an empty environment as `null` (Docker's `Config`
        // always writes `Env`, `null` for none; bollard reads it as `None`), so
        // there empty is the fact; an answer without `Config` says nothing of
        // it: unknown, not empty.
        let environment = inspect
            .config
            .as_ref()
            .map(|config| config.env.clone().unwrap_or_default());
        let environment_known = environment.is_some();
        let request = inspect.host_config.and_then(|host| {
            let runtime = host.runtime.clone();
            gpus_of_host(Some(host), label.as_ref()).or_else(|| {
                environment_gpus(environment.as_deref()?, runtime.as_deref(), default_runtime)
            })
        });
        Ok(Some((holder, request, label, environment_known)))
    }
}

/// A listed container as a holder of every GPU, until its request says which.
fn holder_of(container: super::list::Listed) -> GpuHolder {
    let name = container.name();
    let super::list::Listed {
        id, state, labels, ..
    } = container;
    GpuHolder {
        id,
        name,
        state,
        profile: labels.get(PROFILE_LABEL).cloned(),
        user: labels.get(USER_LABEL).cloned(),
        uid: labels
            .get(envctl_core::container_plan::UID_LABEL)
            .and_then(|uid| uid.parse().ok()),
        identity: labels
            .get(envctl_core::container_plan::ownership::IDENTITY_LABEL)
            .cloned(),
        gpus: GpuAssignment::All,
    }
}

/// Records what one inspect found: the request as known where it is final, the container
/// as a holder where it has GPUs.
fn take_inspected(
    (holder, request, label, environment_known): Inspected,
    podman: bool,
    holders: &mut Vec<GpuHolder>,
    requests: &mut BTreeMap<String, Option<GpuAssignment>>,
) {
    // Podman adds a CDI request's nodes only when it starts the container: a
    // created one that shows no GPUs yet is asked again next time, not known,
    // and meanwhile envctl's claim for it stands (on Podman only: Docker keeps
    // the request from the create on). One whose environment the answer left
    // out is asked again too.
    if request.is_some() || (holder.state != "created" && environment_known) {
        requests.insert(holder.id.clone(), request.clone());
    }
    let request = match (request, label) {
        (None, Some(label)) if podman && holder.state == "created" => Some(label),
        (request, _) => request,
    };
    holders.extend(request.map(|gpus| GpuHolder { gpus, ..holder }));
}

/// The GPUs an inspected container was given, wherever the engine keeps them: its
/// requests ([`requested`]), else the GPU device nodes it was given ([`gpu_nodes`]), named
/// by envctl's `label` where it has such nodes (Podman resolves a CDI request into device
/// nodes and keeps neither the request nor the names). A label alone gives nothing.
pub(crate) fn gpus_of_container(
    host: Option<bollard::models::HostConfig>,
    labels: Option<&HashMap<String, String>>,
) -> Option<GpuAssignment> {
    let label = labels
        .and_then(|labels| labels.get(GPUS_LABEL))
        .and_then(|label| parse_label(label));
    gpus_of_host(host, label.as_ref())
}

/// [`gpus_of_container`] with the label already read.
fn gpus_of_host(
    host: Option<bollard::models::HostConfig>,
    label: Option<&GpuAssignment>,
) -> Option<GpuAssignment> {
    let nodes = host.as_ref().and_then(gpu_nodes);
    host.and_then(requested)
        .or_else(|| nodes.as_ref().and(label.cloned()))
        .or(nodes)
}

/// The GPUs a container's environment gives it: `NVIDIA_VISIBLE_DEVICES` (its last
/// value, as the runtime reads it) where the container runs under the NVIDIA runtime —
/// its own `runtime`, or the daemon's `default_runtime` when it names none. `all` is every
/// GPU, a list its devices; `void`, `none`, empty or `NoDevFiles` is none.
pub fn environment_gpus(
    environment: &[String],
    runtime: Option<&str>,
    default_runtime: Option<&str>,
) -> Option<GpuAssignment> {
    let runtime = runtime
        .filter(|runtime| !runtime.is_empty())
        .or(default_runtime);
    if runtime != Some(NVIDIA_RUNTIME) {
        return None;
    }
    let value = environment
        .iter()
        .rev()
        .find_map(|pair| pair.strip_prefix("NVIDIA_VISIBLE_DEVICES="))?
        .trim();
    match value {
        "" | "void" | "none" | "NoDevFiles" => None,
        "all" => Some(GpuAssignment::All),
        list => {
            let devices: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|device| !device.is_empty())
                .map(str::to_string)
                .collect();
            (!devices.is_empty()).then_some(GpuAssignment::Devices(devices))
        }
    }
}

/// The NVIDIA container runtime's name, as `/info`'s `Runtimes` and a `HostConfig.Runtime`
/// give it.
pub const NVIDIA_RUNTIME: &str = "nvidia";

impl Engine {
    /// `/info`'s `DefaultRuntime`: the runtime of every container that names none.
    async fn default_runtime(&self) -> Result<Option<String>, EngineError> {
        let answer: serde_json::Value = self.get_json("/info", "GET /info", 4 << 20).await?;
        Ok(answer
            .get("DefaultRuntime")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string))
    }
}

/// The GPUs a container holds by its `HostConfig` alone: what it asked for, else the GPU
/// nodes it was given.
#[cfg(test)]
fn gpus_of(host: bollard::models::HostConfig) -> Option<GpuAssignment> {
    gpus_of_host(Some(host), None)
}

/// The GPUs a `HostConfig` asks for: its `gpu` device request, else the CDI names of
/// NVIDIA GPUs (`nvidia.com/gpu=…`) in a `cdi` request or in `Devices` (as the docker CLI
/// sends `--device nvidia.com/gpu=0`).
fn requested(host: bollard::models::HostConfig) -> Option<GpuAssignment> {
    let cdi_names: Vec<String> = host
        .device_requests
        .iter()
        .flatten()
        .filter(|request| {
            request.driver.as_deref() == Some(envctl_core::container_plan::gpus::CDI_DRIVER)
        })
        .flat_map(|request| request.device_ids.iter().flatten().cloned())
        .chain(
            host.devices
                .iter()
                .flatten()
                .filter_map(|device| device.path_on_host.clone()),
        )
        .filter_map(|name| {
            name.strip_prefix(envctl_core::container_plan::gpus::NVIDIA_CDI_KIND)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::to_string)
        })
        .collect();
    super::stats::gpu_assignment(host.device_requests)
        .or_else(|| (!cdi_names.is_empty()).then_some(GpuAssignment::Devices(cdi_names)))
}

/// The GPU device nodes in `Devices`, by the path the container sees (`/dev/nvidia3`):
/// `docker run --device /dev/nvidia3`, or a CDI device once Podman started the container
/// (it records the spec's container path, and `/dev/null` or the like as the host's when
/// the node is a copy).
fn gpu_nodes(host: &bollard::models::HostConfig) -> Option<GpuAssignment> {
    let mut minors: Vec<u32> = host
        .devices
        .iter()
        .flatten()
        .filter_map(|device| device.path_in_container.as_deref())
        .filter_map(envctl_facts::container::gpu_node_minor)
        .collect();
    minors.sort_unstable();
    minors.dedup();
    (!minors.is_empty()).then_some(GpuAssignment::Nodes(minors))
}

/// The value of [`GPUS_LABEL`] for a request: `all`, `count=N`, `devices=A,B` (or
/// `nodes=3,5`, which envctl never asks for but reads back alike).
pub fn label_value(gpus: &GpuAssignment) -> String {
    match gpus {
        GpuAssignment::All => "all".into(),
        GpuAssignment::Count(count) => format!("count={count}"),
        GpuAssignment::Devices(devices) => format!("devices={}", devices.join(",")),
        GpuAssignment::Nodes(minors) => {
            let minors: Vec<String> = minors.iter().map(u32::to_string).collect();
            format!("nodes={}", minors.join(","))
        }
    }
}

/// Reads [`label_value`] back; `None` for anything else.
pub fn parse_label(label: &str) -> Option<GpuAssignment> {
    if label == "all" {
        return Some(GpuAssignment::All);
    }
    if let Some(count) = label.strip_prefix("count=") {
        return count.parse().ok().map(GpuAssignment::Count);
    }
    if let Some(minors) = label.strip_prefix("nodes=") {
        let minors: Option<Vec<u32>> = minors.split(',').map(|minor| minor.parse().ok()).collect();
        return minors
            .filter(|minors| !minors.is_empty())
            .map(GpuAssignment::Nodes);
    }
    let devices = label.strip_prefix("devices=")?;
    let devices: Vec<String> = devices
        .split(',')
        .filter(|device| !device.is_empty())
        .map(str::to_string)
        .collect();
    (!devices.is_empty()).then_some(GpuAssignment::Devices(devices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_what_they_wrote() {
        for gpus in [
            GpuAssignment::All,
            GpuAssignment::Count(3),
            GpuAssignment::Devices(vec!["3".into()]),
            GpuAssignment::Devices(vec!["GPU-a".into(), "GPU-b".into()]),
            GpuAssignment::Nodes(vec![0, 7]),
        ] {
            assert_eq!(parse_label(&label_value(&gpus)), Some(gpus));
        }
        for unreadable in [
            "",
            "2",
            "count=two",
            "devices=",
            "some",
            "nodes=",
            "nodes=a",
        ] {
            assert_eq!(parse_label(unreadable), None, "{unreadable}");
        }
    }

    /// A bare `envctl.gpus` label on a container the engine gave no GPU holds nothing:
    /// any docker user could write it, and it would block placement for everyone.
    #[test]
    fn a_label_alone_holds_no_gpu() {
        for claim in ["all", "count=8", "devices=0,1", "nodes=3"] {
            let labels: HashMap<String, String> =
                [(GPUS_LABEL.to_string(), claim.to_string())].into();
            assert_eq!(
                gpus_of_container(Some(bollard::models::HostConfig::default()), Some(&labels)),
                None,
                "{claim}"
            );
            assert_eq!(gpus_of_container(None, Some(&labels)), None, "{claim}");
        }
        // With a GPU request the request decides, whatever the label says.
        let requested = bollard::models::HostConfig {
            device_requests: Some(vec![bollard::models::DeviceRequest {
                driver: Some("nvidia".into()),
                count: Some(1),
                capabilities: Some(vec![vec!["gpu".into()]]),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let labels: HashMap<String, String> = [(GPUS_LABEL.to_string(), "all".to_string())].into();
        assert_eq!(
            gpus_of_container(Some(requested), Some(&labels)),
            Some(GpuAssignment::Count(1))
        );
    }

    /// `ENV NVIDIA_VISIBLE_DEVICES=all` (every CUDA image) gives every GPU where the
    /// container runs under the NVIDIA runtime, its own or the daemon's default.
    #[test]
    fn the_environment_gives_gpus_under_the_nvidia_runtime_only() {
        let env = |pairs: &[&str]| {
            pairs
                .iter()
                .map(|pair| pair.to_string())
                .collect::<Vec<_>>()
        };
        let all = env(&["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"]);
        assert_eq!(
            environment_gpus(&all, None, Some("nvidia")),
            Some(GpuAssignment::All)
        );
        assert_eq!(
            environment_gpus(&all, Some(""), Some("nvidia")),
            Some(GpuAssignment::All)
        );
        assert_eq!(
            environment_gpus(&all, Some("nvidia"), Some("runc")),
            Some(GpuAssignment::All)
        );
        assert_eq!(environment_gpus(&all, None, Some("runc")), None);
        assert_eq!(environment_gpus(&all, Some("runc"), Some("nvidia")), None);
        assert_eq!(environment_gpus(&all, None, None), None);
        // The last value is the one the runtime reads (a create's `-e` after the image's).
        let overridden = env(&["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=void"]);
        assert_eq!(environment_gpus(&overridden, None, Some("nvidia")), None);
        for none in ["", "none", "NoDevFiles", " void "] {
            let given = vec![format!("NVIDIA_VISIBLE_DEVICES={none}")];
            assert_eq!(
                environment_gpus(&given, None, Some("nvidia")),
                None,
                "{none:?}"
            );
        }
        let listed = env(&["NVIDIA_VISIBLE_DEVICES=0, GPU-a,"]);
        assert_eq!(
            environment_gpus(&listed, None, Some("nvidia")),
            Some(GpuAssignment::Devices(vec!["0".into(), "GPU-a".into()]))
        );
        // CUDA_VISIBLE_DEVICES only narrows what a program uses; it gives nothing.
        let cuda = env(&["CUDA_VISIBLE_DEVICES=0,1"]);
        assert_eq!(environment_gpus(&cuda, None, Some("nvidia")), None);
    }

    #[test]
    fn cdi_names_count_as_gpus_wherever_the_engine_keeps_them() {
        let podman = bollard::models::HostConfig {
            devices: Some(vec![bollard::models::DeviceMapping {
                path_on_host: Some("nvidia.com/gpu=1".into()),
                path_in_container: Some("nvidia.com/gpu=1".into()),
                cgroup_permissions: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            gpus_of(podman),
            Some(GpuAssignment::Devices(vec!["1".into()]))
        );
        let docker = bollard::models::HostConfig {
            device_requests: Some(vec![bollard::models::DeviceRequest {
                driver: Some("cdi".into()),
                device_ids: Some(vec!["nvidia.com/gpu=all".into(), "vendor.com/x=0".into()]),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            gpus_of(docker),
            Some(GpuAssignment::Devices(vec!["all".into()]))
        );
        assert_eq!(gpus_of(bollard::models::HostConfig::default()), None);
    }

    /// GPU nodes given directly (`--device /dev/nvidia3`, or what Podman records of a
    /// started CDI device) hold those GPUs by minor number; the driver's own nodes and
    /// look-alikes do not.
    #[test]
    fn gpu_device_nodes_hold_their_gpus() {
        let node = |host: &str, container: &str| bollard::models::DeviceMapping {
            path_on_host: Some(host.into()),
            path_in_container: Some(container.into()),
            cgroup_permissions: Some("rwm".into()),
        };
        let given = bollard::models::HostConfig {
            devices: Some(vec![
                node("/dev/null", "/dev/nvidia7"),
                node("/dev/nvidia3", "/dev/nvidia3"),
                node("/dev/nvidiactl", "/dev/nvidiactl"),
                node("/dev/nvidia-uvm", "/dev/nvidia-uvm"),
                node(
                    "/dev/nvidia-caps/nvidia-cap1",
                    "/dev/nvidia-caps/nvidia-cap1",
                ),
                node("/dev/nvidia3", "/dev/nvidia3"),
                node("/dev/sda", "/dev/nvidia"),
                node("/dev/x", "/dev/nvidia1x"),
            ]),
            ..Default::default()
        };
        assert_eq!(
            gpus_of(given.clone()),
            Some(GpuAssignment::Nodes(vec![3, 7]))
        );
        // envctl's label says what it asked for, before the nodes Podman resolved it to.
        let labels: HashMap<String, String> =
            [(GPUS_LABEL.to_string(), "devices=GPU-a".to_string())].into();
        assert_eq!(
            gpus_of_container(Some(given.clone()), Some(&labels)),
            Some(GpuAssignment::Devices(vec!["GPU-a".into()]))
        );
        assert_eq!(
            gpus_of_container(Some(given), None),
            Some(GpuAssignment::Nodes(vec![3, 7]))
        );
        let driver_only = bollard::models::HostConfig {
            devices: Some(vec![node("/dev/nvidiactl", "/dev/nvidiactl")]),
            ..Default::default()
        };
        assert_eq!(gpus_of(driver_only), None);
    }
}
