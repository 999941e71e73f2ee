//! `export --to k8s`: a Job (or Pod, or Deployment), the PersistentVolumeClaims its mounts
//! need, and with `--service` a Service, built from the plain structs of `objects.rs`,
//! which carry the API's own field names and are checked against its pinned schemas.
//!
//! Mapping of `up`'s container:
//!
//! - **Image** — the digest `envctl.lock` pins for the profile (`name:tag@sha256:…`), so
//!   every node runs the same bytes; else the profile's reference.
//! - **Command** — the body's `Cmd` as `args`, not `command`: Docker's `Cmd` replaces the
//!   image's `CMD` and keeps its `ENTRYPOINT`, which is what `args` does. A `$` before `$`
//!   or `(` is doubled in command, args and env values: the kubelet expands `$(VAR)` and
//!   reduces `$$` to `$` there.
//! - **Resources** — memory and CPU as equal requests and limits (Docker's are limits;
//!   equal requests make the pod Guaranteed, so it is not the first evicted); GPUs as the
//!   `nvidia.com/gpu` limit (the device plugin's extended resource, limits only).
//! - **`/dev/shm`** — an `emptyDir` with `medium: Memory` and the body's `ShmSize` as its
//!   size limit: a pod's own `/dev/shm` is 64 MiB, the PyTorch DataLoader "bus error".
//! - **Mounts** — bind sources as `hostPath` (this machine's absolute path; `type:
//!   Directory` or `File`, so a missing source fails the pod instead of being created
//!   empty, as `up` refuses it) or, with `--volumes pvc`, as PersistentVolumeClaims; named
//!   volumes always as claims.
//! - **Names** — DNS-1123 labels of at most 63 characters. A longer one (a long profile
//!   name) is cut and ends in `-` and 8 hex digits of the SHA-256 of the whole text, and a
//!   mount whose claim or volume name would be another mount's (`my_cache` and `my.cache`
//!   both read `my-cache`) gets the same kind of suffix: no two mounts ever share a claim,
//!   and a notice names each claim that is not named as written.
//! - **Secrets** — a secret variable (`crate::secret`) is a `secretKeyRef` to the Secret
//!   `<container>-env`, never its value; the header holds the `kubectl create secret`
//!   command that makes it from the user's shell.
//! - **Labels** — `envctl.profile` on every object and as the selector; the config hash
//!   is an annotation, since a 64-character hash does not fit a label value (63 at most).
//! - **Restart** — `Never` for a Pod and a Job (with `backoffLimit: 0`), as `up`'s
//!   restart policy `no`; a Deployment can only restart `Always`, and uses the `Recreate`
//!   strategy so an update never needs two pods' GPUs at once.
//! - **Scheduling** — a pod that asks for GPUs tolerates the `nvidia.com/gpu` NoSchedule
//!   taint (`--no-gpu-toleration` leaves it out), `--runtime-class` sets
//!   `runtimeClassName`, `--mig-profile` asks for the `mixed` strategy's
//!   `nvidia.com/mig-<profile>` (`scheduling.rs`).
//! - **Host access** — `network = "host"` as `hostNetwork` with `dnsPolicy:
//!   ClusterFirstWithHostNet`, `cap_add` as `capabilities.add`, `hostname`; devices and
//!   Docker networks as notices (`host_access.rs`).
//! - **Nodes** — `--nodes N` (N > 1): a Kubeflow `PyTorchJob` of the same pod, one Master
//!   and N − 1 Workers (`pytorch_job.rs`).

mod environment;
mod host_access;
mod labels;
mod names;
mod objects;
mod ports;
mod pytorch_job;
mod resources;
pub mod scheduling;
mod security;
mod volumes;
mod workload;

use serde::Serialize;

use super::view::BodyView;
use super::{ExportError, ExportInput, Exported, Notice, Target, yaml};

const TARGET: Target = Target::Kubernetes;
/// The device plugin's extended resource for NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The storage request of a claim made for a mount; the profile says nothing about size.
pub const DEFAULT_CLAIM_SIZE: &str = "10Gi";
/// The volume that becomes `/dev/shm`.
const SHM_VOLUME: &str = "shm";

/// The workload object that runs the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkloadKind {
    Pod,
    #[default]
    Job,
    Deployment,
}

impl WorkloadKind {
    fn resource(self) -> &'static str {
        match self {
            WorkloadKind::Pod => "pod",
            WorkloadKind::Job => "job",
            WorkloadKind::Deployment => "deployment",
        }
    }
}

/// How bind mounts reach the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VolumeMode {
    /// The node's own path (`hostPath`).
    #[default]
    HostPath,
    /// A PersistentVolumeClaim per bind mount.
    Pvc,
}

/// The Kubernetes flags of `export`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KubernetesOptions {
    pub kind: WorkloadKind,
    pub volumes: VolumeMode,
    /// Also write a ClusterIP Service for the published ports.
    pub service: bool,
    /// Leave out the toleration of the `nvidia.com/gpu` taint GPU pools carry.
    pub no_gpu_toleration: bool,
    /// The pod's `runtimeClassName` (`nvidia` where the NVIDIA runtime is not the default).
    pub runtime_class: Option<String>,
    /// A MIG profile (`1g.10gb`): GPUs become the device plugin's `nvidia.com/mig-1g.10gb`.
    pub mig_profile: Option<String>,
    /// More than one node: a Kubeflow `PyTorchJob` with one Master and `nodes - 1` Workers.
    pub nodes: Option<u32>,
}

/// The manifests for `input`'s profile, as one multi-document YAML file.
pub fn kubernetes(
    input: &ExportInput<'_>,
    options: KubernetesOptions,
) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Notices::default();
    let training = options.nodes.filter(|nodes| *nodes > 1);
    // Each concern adds its notices in turn, so they read in this order.
    let identity = labels::Identity::new(&view, &mut notices);
    let resources = resources::resources(&view, options.mig_profile.as_deref(), &mut notices);
    let mut storage = volumes::storage(&view, input, options.volumes, &identity, &mut notices)?;
    // The claims are documents of their own, before the workload.
    let claims = std::mem::take(&mut storage.claims);
    let ports = ports::ports(&view, &options, &identity, &mut notices);
    let process = security::process(&view, &mut notices);
    let host = host_access::host_access(&view, training.is_some(), &mut notices);
    environment::secrets_notice(&view, &identity, &mut notices);
    let scheduling = scheduling::scheduling(&options, resources.gpus.is_some());
    let parts = workload::ContainerParts {
        ports: ports.container_ports,
        resources: resources.requirements,
        storage,
        process,
        host,
        scheduling,
    };
    let container_name = match training {
        Some(_) => pytorch_job::CONTAINER_NAME.to_string(),
        None => identity.name.clone(),
    };
    let pod_spec = workload::pod_spec(
        &view,
        &identity,
        container_name,
        parts,
        options.kind,
        &mut notices,
    );

    let mut documents = Vec::new();
    for claim in &claims {
        documents.push(document(claim)?);
    }
    if training.is_some() && !claims.is_empty() {
        notices.add(
            "mounts",
            "the replicas run on different nodes, and a ReadWriteOnce claim attaches to one node at a time: give the claims a ReadWriteMany storage class (shared storage) before applying",
        );
    }
    match training {
        Some(nodes) => documents.push(pytorch_job::document(
            &view,
            &identity,
            pod_spec,
            nodes,
            resources.gpus,
            &mut notices,
        )?),
        None => documents.push(workload::workload_document(
            options.kind,
            &identity,
            pod_spec,
        )?),
    }
    if let Some(service) = &ports.service {
        documents.push(document(service)?);
    }
    let header = match training {
        Some(nodes) => {
            pytorch_job::header(&view, &identity, nodes, &options, resources.gpus.is_some())
        }
        None => workload::header(&view, &options, &identity, resources.gpus.is_some()),
    };
    Ok(Exported {
        text: format!("{header}{}", documents.join("---\n")),
        notices: notices.0,
    })
}

/// The notices of one export, in the order the settings are mapped.
#[derive(Debug, Default)]
struct Notices(Vec<Notice>);

impl Notices {
    fn add(&mut self, setting: &str, message: impl Into<String>) {
        self.0.push(Notice::new(TARGET, setting, message));
    }
}

/// One YAML document of a typed object.
fn document<T: Serialize>(object: &T) -> Result<String, ExportError> {
    let value =
        serde_json::to_value(object).map_err(|error| ExportError::serialize(TARGET, error))?;
    Ok(yaml::to_yaml(&value))
}

#[cfg(test)]
mod tests {
    use super::environment::escape_references;
    use super::labels::label_value;
    use super::names::{Names, volume_text};
    use super::resources::{binary_quantity, cpu_quantity};
    use super::security::numeric_user;
    use super::*;
    use crate::export::short_hash;

    #[test]
    fn quantities() {
        assert_eq!(binary_quantity(16 << 30), "16Gi");
        assert_eq!(binary_quantity(1536 << 20), "1536Mi");
        assert_eq!(binary_quantity(1000), "1000");
        assert_eq!(cpu_quantity(8_000_000_000), ("8".into(), false));
        assert_eq!(cpu_quantity(1_500_000_000), ("1500m".into(), false));
        assert_eq!(cpu_quantity(1_500_000), ("2m".into(), true));
    }

    #[test]
    fn users_labels_and_names() {
        assert_eq!(numeric_user("1000:1000"), Some((1000, Some(1000))));
        assert_eq!(numeric_user("0"), Some((0, None)));
        assert_eq!(numeric_user("ubuntu"), None);
        assert_eq!(numeric_user("1000:staff"), None);
        assert_eq!(label_value("pytorch-2.8"), "pytorch-2.8");
        assert_eq!(label_value("-a b_"), "a-b");
        let long = format!("{}.x", "p".repeat(62));
        assert_eq!(
            label_value(&long),
            format!("{}-{}", "p".repeat(54), short_hash(&long))
        );
        assert_ne!(
            label_value(&long),
            label_value(&format!("{}.y", "p".repeat(62)))
        );
        assert_eq!(label_value(&"p".repeat(63)), "p".repeat(63));
        let mut volumes = Names::default();
        volumes.reserve(SHM_VOLUME);
        let mut volume = |target: &str| volumes.unique(volume_text(target), target).0;
        assert_eq!(volume("/data/sets"), "data-sets");
        assert_eq!(
            volume("/data.sets"),
            format!("data-sets-{}", short_hash("data.sets"))
        );
        assert_eq!(volume("/shm"), format!("shm-{}", short_hash("shm")));
        assert_eq!(volume("//"), "root");
        assert_eq!(escape_references("$(HOME) $HOME"), "$$(HOME) $HOME");
    }
}
