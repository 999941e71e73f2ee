//! The assembly: the container, the pod spec, and the workload object that runs it (a
//! Pod, a Job with `backoffLimit: 0`, or a Deployment with the `Recreate` strategy, so an
//! update never needs two pods' GPUs at once), with the file's header comment.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Pod, PodSpec, PodTemplateSpec, ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels::Identity;
use super::security::Process;
use super::volumes::Storage;
use super::{Notices, WorkloadKind, document, environment};
use crate::export::ExportError;
use crate::export::view::BodyView;

/// What the container is made of, each part built by its own concern.
pub(super) struct ContainerParts {
    pub(super) ports: Vec<ContainerPort>,
    pub(super) resources: Option<ResourceRequirements>,
    pub(super) storage: Storage,
    pub(super) process: Process,
}

/// The pod spec: the one container, its volumes and the restart policy.
pub(super) fn pod_spec(
    view: &BodyView<'_>,
    identity: &Identity,
    parts: ContainerParts,
    kind: WorkloadKind,
    notices: &mut Notices,
) -> PodSpec {
    let ContainerParts {
        ports,
        resources,
        storage,
        process,
    } = parts;
    let volume_mounts = storage.volume_mounts;
    let container = Container {
        name: identity.name.clone(),
        image: Some(view.image.to_string()),
        args: Some(environment::arguments(view)),
        env: environment::variables(view, identity),
        working_dir: view.working_dir.map(str::to_string),
        ports: (!ports.is_empty()).then_some(ports),
        resources,
        volume_mounts: (!volume_mounts.is_empty()).then_some(volume_mounts),
        security_context: process.security_context,
        ..Container::default()
    };
    let volumes: Vec<Volume> = storage.volumes;
    PodSpec {
        containers: vec![container],
        volumes: (!volumes.is_empty()).then_some(volumes),
        restart_policy: Some(restart_policy(kind, notices).into()),
        host_ipc: process.host_ipc.then_some(true),
        share_process_namespace: process.share_process_namespace,
        ..PodSpec::default()
    }
}

/// `Never` for a Pod and a Job, as `up`'s restart policy `no`; a Deployment can only
/// restart `Always`.
fn restart_policy(kind: WorkloadKind, notices: &mut Notices) -> &'static str {
    match kind {
        WorkloadKind::Deployment => {
            notices.add(
                "restart",
                "a Deployment always restarts its pod (`restartPolicy: Always`); `up` never restarts the container",
            );
            "Always"
        }
        WorkloadKind::Pod | WorkloadKind::Job => "Never",
    }
}

/// The YAML document of the workload object running `pod_spec`.
pub(super) fn workload_document(
    kind: WorkloadKind,
    identity: &Identity,
    pod_spec: PodSpec,
) -> Result<String, ExportError> {
    let template = PodTemplateSpec {
        metadata: Some(identity.template_metadata()),
        spec: Some(pod_spec.clone()),
    };
    match kind {
        WorkloadKind::Pod => document(&Pod {
            metadata: identity.workload_metadata(),
            spec: Some(pod_spec),
            ..Pod::default()
        }),
        WorkloadKind::Job => document(&Job {
            metadata: identity.workload_metadata(),
            spec: Some(JobSpec {
                backoff_limit: Some(0),
                template,
                ..JobSpec::default()
            }),
            ..Job::default()
        }),
        WorkloadKind::Deployment => document(&Deployment {
            metadata: identity.workload_metadata(),
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                selector: LabelSelector {
                    match_labels: Some(identity.labels.clone()),
                    ..LabelSelector::default()
                },
                strategy: Some(DeploymentStrategy {
                    type_: Some("Recreate".into()),
                    ..DeploymentStrategy::default()
                }),
                template,
                ..DeploymentSpec::default()
            }),
            ..Deployment::default()
        }),
    }
}

/// The comment lines above the documents: how to apply and enter, what GPU nodes need,
/// and how a keep-alive Job ends.
pub(super) fn header(
    view: &BodyView<'_>,
    kind: WorkloadKind,
    identity: &Identity,
    has_gpus: bool,
) -> String {
    let name = &identity.name;
    let profile_name = view.profile_name;
    let resource = kind.resource();
    let mut header = format!(
        "# Kubernetes manifests for envctl profile `{profile_name}` (`envctl export {profile_name} --to k8s`).\n\
         # Apply: `kubectl apply -f FILE`; enter: `kubectl exec -it {resource}/{name} -- sh`.\n"
    );
    if has_gpus {
        header.push_str(
            "# GPUs: the nodes need the NVIDIA device plugin (or GPU Operator), and the NVIDIA runtime as their\n\
             # default runtime or as a RuntimeClass (then add `runtimeClassName` to the pod).\n",
        );
    }
    if let Some(command) = environment::create_secret_command(view, identity) {
        header.push_str(&format!(
            "# Secrets ({}) are read from a Secret this file does not hold; create it first, from your shell:\n#   {command}\n",
            view.secrets.join(", ")
        ));
    }
    if view.keeps_alive() && kind == WorkloadKind::Job {
        header.push_str(&format!(
            "# The container runs `sleep infinity`: the Job never completes; `kubectl delete job {name}` ends it.\n"
        ));
    }
    header
}
