//! Which containers hold GPUs: every container that was given GPUs and has not exited,
//! with its request as the engine stored it. envctl's own containers say it in a label
//! ([`GPUS_LABEL`], written in the same create as the request, so the list answers for
//! them); any other container is inspected, several at a time, once: a container's
//! `DeviceRequests` and `Devices` never change after its create, so what a caller read
//! before (by id, [`HoldersRead::requests`]) is taken as known. The one exception is
//! Podman's CDI devices, which appear in `Devices` at start: a created container with no
//! GPUs is not taken as known. GPUs given as device nodes (`--device /dev/nvidia3`) count
//! by the node's minor number.

use std::collections::{BTreeMap, HashMap};

use futures_util::StreamExt;

use super::{Engine, EngineError};
use crate::facts::container::GpuAssignment;
use crate::facts::occupancy::GpuHolder;
use crate::spec::{GPUS_LABEL, PROFILE_LABEL, USER_LABEL};

/// States in which a container holds nothing: it gets its GPUs again only when started.
const HOLDS_NOTHING: [&str; 3] = ["exited", "dead", "removing"];

/// How many inspects are in flight at once: the daemon answers them in parallel, and a
/// host with hundreds of containers must not open hundreds of connections.
const INSPECTS_AT_ONCE: usize = 8;

/// A container without [`GPUS_LABEL`] and the GPU request its inspect shows.
type Inspected = (GpuHolder, Option<GpuAssignment>);

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
            let name = container.name();
            let super::list::Listed {
                id, state, labels, ..
            } = container;
            let holder = |gpus| GpuHolder {
                id: id.clone(),
                name: name.clone(),
                state: state.clone(),
                profile: labels.get(PROFILE_LABEL).cloned(),
                user: labels.get(USER_LABEL).cloned(),
                uid: labels
                    .get(crate::spec::UID_LABEL)
                    .and_then(|uid| uid.parse().ok()),
                gpus,
            };
            match labels.get(GPUS_LABEL).map(|label| parse_label(label)) {
                Some(Some(gpus)) => holders.push(holder(gpus)),
                // No label (not envctl's, or an older envctl's), or one this envctl cannot
                // read: the container's own request decides.
                _ => match known.get(&id) {
                    Some(request) => {
                        requests.insert(id.clone(), request.clone());
                        holders.extend(request.clone().map(holder));
                    }
                    None => to_inspect.push(holder(GpuAssignment::All)),
                },
            }
        }
        let inspected: Vec<Result<Option<Inspected>, EngineError>> =
            futures_util::stream::iter(to_inspect.into_iter().map(|holder| async move {
                let Some(inspect) = self.inspect_response(&holder.id).await? else {
                    // Removed between the list and the inspect: it holds nothing now.
                    return Ok(None);
                };
                Ok(Some((holder, inspect.host_config.and_then(gpus_of))))
            }))
            .buffer_unordered(INSPECTS_AT_ONCE)
            .collect()
            .await;
        for answer in inspected {
            if let Some((holder, request)) = answer? {
                // Podman adds a CDI request's nodes only when it starts the container: a
                // created one that shows no GPUs yet is asked again next time, not known.
                if request.is_some() || holder.state != "created" {
                    requests.insert(holder.id.clone(), request.clone());
                }
                holders.extend(request.map(|gpus| GpuHolder { gpus, ..holder }));
            }
        }
        holders.sort_by(|left, right| left.name.cmp(&right.name));
        Ok(HoldersRead {
            holders,
            requests,
            running,
        })
    }
}

/// The GPUs an inspected container was given, wherever the engine keeps them: its
/// requests ([`requested`]), else envctl's [`GPUS_LABEL`] (Podman resolves a CDI request
/// into device nodes and keeps neither the request nor the names), else the GPU device
/// nodes it was given ([`gpu_nodes`]).
pub(crate) fn gpus_of_container(
    host: Option<bollard::models::HostConfig>,
    labels: Option<&HashMap<String, String>>,
) -> Option<GpuAssignment> {
    let nodes = host.as_ref().and_then(gpu_nodes);
    host.and_then(requested)
        .or_else(|| {
            labels
                .and_then(|labels| labels.get(GPUS_LABEL))
                .and_then(|label| parse_label(label))
        })
        .or(nodes)
}

/// The GPUs a container without envctl's label holds: what it asked for, else the GPU
/// nodes it was given.
fn gpus_of(host: bollard::models::HostConfig) -> Option<GpuAssignment> {
    let nodes = gpu_nodes(&host);
    requested(host).or(nodes)
}

/// The GPUs a `HostConfig` asks for: its `gpu` device request, else the CDI names of
/// NVIDIA GPUs (`nvidia.com/gpu=…`) in a `cdi` request or in `Devices` (as the docker CLI
/// sends `--device nvidia.com/gpu=0`).
fn requested(host: bollard::models::HostConfig) -> Option<GpuAssignment> {
    let cdi_names: Vec<String> = host
        .device_requests
        .iter()
        .flatten()
        .filter(|request| request.driver.as_deref() == Some(crate::spec::gpus::CDI_DRIVER))
        .flat_map(|request| request.device_ids.iter().flatten().cloned())
        .chain(
            host.devices
                .iter()
                .flatten()
                .filter_map(|device| device.path_on_host.clone()),
        )
        .filter_map(|name| {
            name.strip_prefix(crate::spec::gpus::NVIDIA_CDI_KIND)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::to_string)
        })
        .collect();
    GpuAssignment::from_requests(host.device_requests)
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
        .filter_map(crate::facts::container::gpu_node_minor)
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
