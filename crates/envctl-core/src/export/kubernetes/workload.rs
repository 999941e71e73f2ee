//! The assembly: the container, the pod spec, and the workload object that runs it (a
//! Pod, a Job with `backoffLimit: 0`, or a Deployment with the `Recreate` strategy, so an
//! update never needs two pods' GPUs at once), with the file's header comment.

use super::host_access::HostAccess;
use super::labels::Identity;
use super::objects::{
    Capabilities, Container, ContainerPort, Deployment, DeploymentSpec, DeploymentStrategy, Job,
    JobSpec, LabelSelector, Pod, PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext,
    Volume,
};
use super::scheduling::Scheduling;
use super::security::Process;
use super::volumes::Storage;
use super::{KubernetesOptions, Notices, WorkloadKind, document, environment};
use crate::export::ExportError;
use crate::export::view::BodyView;

/// What the container is made of, each part built by its own concern.
pub(super) struct ContainerParts {
    pub(super) ports: Vec<ContainerPort>,
    pub(super) resources: Option<ResourceRequirements>,
    pub(super) storage: Storage,
    pub(super) process: Process,
    pub(super) host: HostAccess,
    pub(super) scheduling: Scheduling,
}

/// The pod spec: the one container, its volumes and the restart policy.
pub(super) fn pod_spec(
    view: &BodyView<'_>,
    identity: &Identity,
    container_name: String,
    parts: ContainerParts,
    kind: WorkloadKind,
    notices: &mut Notices,
) -> PodSpec {
    let ContainerParts {
        ports,
        resources,
        storage,
        process,
        host,
        scheduling,
    } = parts;
    let volume_mounts = storage.volume_mounts;
    let security_context = with_capabilities(process.security_context, host.capabilities);
    let container = Container {
        name: container_name,
        image: view.image.to_string(),
        args: environment::arguments(view),
        env: environment::variables(view, identity),
        working_dir: view.working_dir.map(str::to_string),
        ports: (!ports.is_empty()).then_some(ports),
        resources,
        volume_mounts: (!volume_mounts.is_empty()).then_some(volume_mounts),
        security_context,
    };
    let volumes: Vec<Volume> = storage.volumes;
    PodSpec {
        containers: vec![container],
        volumes: (!volumes.is_empty()).then_some(volumes),
        restart_policy: Some(restart_policy(kind, notices).into()),
        host_ipc: process.host_ipc.then_some(true),
        host_network: host.host_network.then_some(true),
        dns_policy: host.dns_policy,
        hostname: host.hostname,
        share_process_namespace: process.share_process_namespace,
        tolerations: scheduling.tolerations,
        runtime_class_name: scheduling.runtime_class_name,
    }
}

/// The container's security context with the added capabilities.
fn with_capabilities(
    context: Option<SecurityContext>,
    capabilities: Option<Vec<String>>,
) -> Option<SecurityContext> {
    let Some(add) = capabilities else {
        return context;
    };
    let mut context = context.unwrap_or_default();
    context.capabilities = Some(Capabilities { add });
    Some(context)
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

/// What GPU nodes need, for the header: the device plugin, the runtime, the taint.
pub(super) fn gpu_header(options: &KubernetesOptions) -> String {
    let mut header = match &options.runtime_class {
        Some(class) => format!(
            "# GPUs: the nodes need the NVIDIA device plugin (or GPU Operator); the pod runs with RuntimeClass `{class}`.\n"
        ),
        None => "# GPUs: the nodes need the NVIDIA device plugin (or GPU Operator), and the NVIDIA runtime as their\n\
                 # default runtime or as a RuntimeClass (then export with `--runtime-class nvidia`).\n"
            .to_string(),
    };
    if !options.no_gpu_toleration {
        header.push_str(
            "# The pod tolerates the `nvidia.com/gpu` NoSchedule taint of GPU node pools (`--no-gpu-toleration` leaves it out).\n",
        );
    }
    header
}

/// The YAML document of the workload object running `pod_spec`.
pub(super) fn workload_document(
    kind: WorkloadKind,
    identity: &Identity,
    pod_spec: PodSpec,
) -> Result<String, ExportError> {
    let metadata = identity.workload_metadata();
    let template = |spec: PodSpec| PodTemplateSpec {
        metadata: identity.template_metadata(),
        spec,
    };
    match kind {
        WorkloadKind::Pod => document(&Pod::pod(metadata, pod_spec)),
        WorkloadKind::Job => document(&Job::job(
            metadata,
            JobSpec {
                backoff_limit: 0,
                template: template(pod_spec),
            },
        )),
        WorkloadKind::Deployment => document(&Deployment::deployment(
            metadata,
            DeploymentSpec {
                replicas: 1,
                selector: LabelSelector {
                    match_labels: identity.labels.clone(),
                },
                strategy: DeploymentStrategy {
                    type_: "Recreate".into(),
                },
                template: template(pod_spec),
            },
        )),
    }
}

/// The comment lines above the documents: how to apply and enter, what GPU nodes need,
/// and how a keep-alive Job ends.
pub(super) fn header(
    view: &BodyView<'_>,
    options: &KubernetesOptions,
    identity: &Identity,
    has_gpus: bool,
) -> String {
    let kind = options.kind;
    let name = &identity.name;
    let profile_name = view.profile_name;
    let resource = kind.resource();
    let mut header = format!(
        "# Kubernetes manifests for envctl profile `{profile_name}` (`envctl export {profile_name} --to k8s`).\n\
         # Apply: `kubectl apply -f FILE`; enter: `kubectl exec -it {resource}/{name} -- sh`.\n"
    );
    if has_gpus {
        header.push_str(&gpu_header(options));
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
