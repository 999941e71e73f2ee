//! The Kubernetes objects the export writes, as plain serde structs holding only the fields
//! envctl fills.
//!
//! Why not k8s-openapi's typed structs, which the export used until issue 42: they cover
//! the whole API, and the crate was the workspace's second-largest compiled one (a 27 MiB
//! rlib and an 18 MiB rmeta per build, compiled more than once when feature sets differ)
//! for the dozen objects printed here. Each field carries its API name
//! (`rename_all = "camelCase"`, `type` spelled out) and an unset `Option` is left out, as
//! the API's own serializers do; keys are printed sorted by `yaml::to_yaml`, so field order
//! here does not matter. The output was compared byte for byte with k8s-openapi's for every
//! bundled and test profile with every option when the switch was made.
//!
//! How the shapes stay right: `tests/it/validators.rs` passes every bundled and edge
//! profile × `--kind` × `--volumes` × `--service` through `kubernetes-validate --strict`,
//! which reads the pinned Kubernetes 1.33 OpenAPI schemas and refuses an unknown field or a
//! wrong type; the PyTorchJob's pod template is checked against the pinned Kubeflow CRD by
//! `tests/it/export_clusters.rs`. A field added here must pass both.

use std::collections::BTreeMap;

use serde::Serialize;

/// A quantity as the API writes it (`16Gi`, `1500m`, `2`).
pub(super) type Quantity = String;

/// A top-level object: `apiVersion`, `kind`, its metadata and its spec.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Object<Spec> {
    pub(super) api_version: &'static str,
    pub(super) kind: &'static str,
    pub(super) metadata: ObjectMeta,
    pub(super) spec: Spec,
}

impl<Spec> Object<Spec> {
    fn new(
        api_version: &'static str,
        kind: &'static str,
        metadata: ObjectMeta,
        spec: Spec,
    ) -> Self {
        Object {
            api_version,
            kind,
            metadata,
            spec,
        }
    }
}

pub(super) type Pod = Object<PodSpec>;
pub(super) type Job = Object<JobSpec>;
pub(super) type Deployment = Object<DeploymentSpec>;
pub(super) type Service = Object<ServiceSpec>;
pub(super) type PersistentVolumeClaim = Object<PersistentVolumeClaimSpec>;

impl Pod {
    pub(super) fn pod(metadata: ObjectMeta, spec: PodSpec) -> Self {
        Object::new("v1", "Pod", metadata, spec)
    }
}

impl Job {
    pub(super) fn job(metadata: ObjectMeta, spec: JobSpec) -> Self {
        Object::new("batch/v1", "Job", metadata, spec)
    }
}

impl Deployment {
    pub(super) fn deployment(metadata: ObjectMeta, spec: DeploymentSpec) -> Self {
        Object::new("apps/v1", "Deployment", metadata, spec)
    }
}

impl Service {
    pub(super) fn service(metadata: ObjectMeta, spec: ServiceSpec) -> Self {
        Object::new("v1", "Service", metadata, spec)
    }
}

impl PersistentVolumeClaim {
    pub(super) fn claim(metadata: ObjectMeta, spec: PersistentVolumeClaimSpec) -> Self {
        Object::new("v1", "PersistentVolumeClaim", metadata, spec)
    }
}

/// `metadata`: a pod template's has no name.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ObjectMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<String>,
    pub(super) labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct PodTemplateSpec {
    pub(super) metadata: ObjectMeta,
    pub(super) spec: PodSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct JobSpec {
    pub(super) backoff_limit: i32,
    pub(super) template: PodTemplateSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeploymentSpec {
    pub(super) replicas: i32,
    pub(super) selector: LabelSelector,
    pub(super) strategy: DeploymentStrategy,
    pub(super) template: PodTemplateSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LabelSelector {
    pub(super) match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct DeploymentStrategy {
    #[serde(rename = "type")]
    pub(super) type_: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodSpec {
    pub(super) containers: Vec<Container>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) volumes: Option<Vec<Volume>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) restart_policy: Option<String>,
    #[serde(rename = "hostIPC", skip_serializing_if = "Option::is_none")]
    pub(super) host_ipc: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) host_network: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) dns_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) share_process_namespace: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tolerations: Option<Vec<Toleration>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) runtime_class_name: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Container {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) args: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) env: Option<Vec<EnvVar>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) working_dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) ports: Option<Vec<ContainerPort>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) resources: Option<ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) volume_mounts: Option<Vec<VolumeMount>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) security_context: Option<SecurityContext>,
}

/// An `env` entry: a `value`, or for a secret a `valueFrom.secretKeyRef`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EnvVar {
    pub(super) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) value_from: Option<EnvVarSource>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EnvVarSource {
    pub(super) secret_key_ref: SecretKeySelector,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct SecretKeySelector {
    pub(super) name: String,
    pub(super) key: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContainerPort {
    pub(super) container_port: i32,
    pub(super) protocol: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct ResourceRequirements {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) requests: Option<BTreeMap<String, Quantity>>,
    pub(super) limits: BTreeMap<String, Quantity>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SecurityContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) capabilities: Option<Capabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) run_as_user: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) run_as_group: Option<i64>,
}

/// Capabilities without `CAP_`, as Kubernetes writes them (`IPC_LOCK`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Capabilities {
    pub(super) add: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Toleration {
    pub(super) key: String,
    pub(super) operator: String,
    pub(super) effect: String,
}

/// A pod volume: exactly one of its sources is set.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Volume {
    pub(super) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) empty_dir: Option<EmptyDirVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) host_path: Option<HostPathVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) persistent_volume_claim: Option<PersistentVolumeClaimVolumeSource>,
}

impl Volume {
    /// A volume named `name` with no source yet.
    pub(super) fn named(name: impl Into<String>) -> Self {
        Volume {
            name: name.into(),
            empty_dir: None,
            host_path: None,
            persistent_volume_claim: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EmptyDirVolumeSource {
    pub(super) medium: String,
    pub(super) size_limit: Quantity,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct HostPathVolumeSource {
    pub(super) path: String,
    #[serde(rename = "type")]
    pub(super) type_: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PersistentVolumeClaimVolumeSource {
    pub(super) claim_name: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct VolumeMount {
    pub(super) name: String,
    pub(super) mount_path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) read_only: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PersistentVolumeClaimSpec {
    pub(super) access_modes: Vec<String>,
    pub(super) resources: VolumeResourceRequirements,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct VolumeResourceRequirements {
    pub(super) requests: BTreeMap<String, Quantity>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct ServiceSpec {
    #[serde(rename = "type")]
    pub(super) type_: String,
    pub(super) selector: BTreeMap<String, String>,
    pub(super) ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ServicePort {
    pub(super) name: String,
    pub(super) port: i32,
    /// The container's port; the API's IntOrString, always a number here.
    pub(super) target_port: i32,
    pub(super) protocol: String,
}
