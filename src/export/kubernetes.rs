//! `export --to k8s`: a Job (or Pod, or Deployment), the PersistentVolumeClaims its mounts
//! need, and with `--service` a Service, built from k8s-openapi's typed structs so every
//! field name and shape is the API's own.
//!
//! Mapping of `up`'s container:
//!
//! - **Image** — the digest `envctl.lock` pins for the profile (`name:tag@sha256:…`), so
//!   every node runs the same bytes; else the profile's reference.
//! - **Command** — the body's `Cmd` as `args`, not `command`: Docker's `Cmd` replaces the
//!   image's `CMD` and keeps its `ENTRYPOINT`, which is what `args` does. `$(` is written
//!   `$$(` in args and env values: the kubelet expands `$(VAR)` there.
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
//! - **Labels** — `envctl.profile` on every object and as the selector; the config hash
//!   is an annotation, since a 64-character hash does not fit a label value (63 at most).
//! - **Restart** — `Never` for a Pod and a Job (with `backoffLimit: 0`), as `up`'s
//!   restart policy `no`; a Deployment can only restart `Always`, and uses the `Recreate`
//!   strategy so an update never needs two pods' GPUs at once.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, HostPathVolumeSource,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, Pod,
    PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext, Service, ServicePort,
    ServiceSpec, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use super::{
    BindSource, DNS_LABEL_MAX, ExportError, ExportInput, Exported, Notice, Target, bind_source,
    dns_label, dns_label_whole, hashed_label, path_text, yaml,
};
use crate::profile::model::{GpuRequest, Ipc, MountKind, PortBinding, Protocol};
use crate::spec::{CONFIG_HASH_LABEL, KEEP_ALIVE_COMMAND, PROFILE_LABEL, container_name};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KubernetesOptions {
    pub kind: WorkloadKind,
    pub volumes: VolumeMode,
    /// Also write a ClusterIP Service for the published ports.
    pub service: bool,
}

/// The manifests for `input`'s profile, as one multi-document YAML file.
pub fn kubernetes(
    input: &ExportInput<'_>,
    options: KubernetesOptions,
) -> Result<Exported, ExportError> {
    let profile = &input.resolved.profile;
    let body = input.body;
    let host = &body.host_config;
    let mut notices = Vec::new();
    let mut notice = |setting: &str, message: String| {
        notices.push(Notice::new(TARGET, setting, message));
    };

    let container = container_name(&profile.name);
    let name = dns_label(&container);
    if name != dns_label_whole(&container) {
        notice(
            "name",
            format!(
                "`{container}` is longer than the {DNS_LABEL_MAX} characters of a Kubernetes name: the objects are named `{name}`"
            ),
        );
    }
    let label = label_value(&profile.name);
    if label != profile.name {
        notice(
            "name",
            format!(
                "`{}` is not a valid label value; the `{PROFILE_LABEL}` label says `{label}`",
                profile.name
            ),
        );
    }
    let labels = BTreeMap::from([(PROFILE_LABEL.to_string(), label.clone())]);
    let mut annotations = BTreeMap::new();
    if let Some(hash) = body.labels.get(CONFIG_HASH_LABEL) {
        annotations.insert(CONFIG_HASH_LABEL.to_string(), hash.clone());
    }

    // Pinned by `envctl.lock` already when the lock pins it (`ops::environment`).
    let image = body.image.clone();

    // Resources.
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    if let Some(memory) = host.memory.and_then(|bytes| u64::try_from(bytes).ok()) {
        let quantity = Quantity(binary_quantity(memory));
        requests.insert("memory".to_string(), quantity.clone());
        limits.insert("memory".to_string(), quantity);
    }
    if let Some(nanos) = host.nano_cpus {
        let (quantity, rounded) = cpu_quantity(nanos);
        if rounded {
            notice(
                "cpus",
                format!(
                    "Kubernetes counts CPUs in thousandths: {} rounded up to {quantity}",
                    super::decimal_cpus(nanos)
                ),
            );
        }
        requests.insert("cpu".to_string(), Quantity(quantity.clone()));
        limits.insert("cpu".to_string(), Quantity(quantity));
    }
    let gpus = gpu_count(&profile.gpus, &mut notice);
    if let Some(count) = gpus {
        limits.insert(GPU_RESOURCE.to_string(), Quantity(count.to_string()));
    }
    let resources = (!limits.is_empty()).then(|| ResourceRequirements {
        requests: (!requests.is_empty()).then_some(requests),
        limits: Some(limits),
        ..ResourceRequirements::default()
    });

    // Volumes: `/dev/shm` first, then the profile's mounts in order.
    let mut volumes = Vec::new();
    let mut volume_mounts = Vec::new();
    let mut claims = Vec::new();
    // Volume names within the pod, and claim names within the namespace: one per text.
    let mut volume_names = Names::default();
    volume_names.reserve(SHM_VOLUME);
    let mut claim_names = Names::default();
    let host_ipc = profile.ipc == Some(Ipc::Host);
    if let Some(shm) = host.shm_size.and_then(|bytes| u64::try_from(bytes).ok())
        && !host_ipc
    {
        volumes.push(Volume {
            name: SHM_VOLUME.into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity(binary_quantity(shm))),
            }),
            ..Volume::default()
        });
        volume_mounts.push(VolumeMount {
            name: SHM_VOLUME.into(),
            mount_path: "/dev/shm".into(),
            ..VolumeMount::default()
        });
    }
    let mut host_paths = Vec::new();
    let mut claimed_binds = Vec::new();
    let mut claimed_volumes = Vec::new();
    for mount in &profile.mounts {
        let setting = format!("mounts.{}", mount.target);
        let what = match mount.kind {
            MountKind::Volume => format!("the named volume `{}`", mount.source),
            MountKind::Bind => format!("the bind mount `{}:{}`", mount.source, mount.target),
        };
        let volume_name = volume_names.unique(volume_text(&mount.target), &what).0;
        let claim_notice = |claim: &str, renamed: Option<Renamed>| {
            renamed.map(|renamed| {
                renamed.message(&format!("the PersistentVolumeClaim for {what}"), claim)
            })
        };
        let source = match mount.kind {
            MountKind::Volume => {
                // The same named volume mounted twice is one volume, so one claim.
                let (claim, renamed) = claim_names.shared(&mount.source, &what);
                if let Some(message) = claim_notice(&claim, renamed) {
                    notice(&setting, message);
                }
                if !claims.iter().any(|object: &PersistentVolumeClaim| {
                    object.metadata.name.as_ref() == Some(&claim)
                }) {
                    claimed_volumes.push(mount.source.clone());
                    claims.push(claim_object(&claim, &labels));
                }
                claim_source(&claim, &volume_name)
            }
            MountKind::Bind => {
                let written = bind_source(mount, input)?;
                let path = written.path(input, &mount.source)?;
                match options.volumes {
                    VolumeMode::HostPath => {
                        let path_text = path_text(&path)?;
                        host_paths.push(path_text.clone());
                        let kind = if (input.path_is_file)(&path) {
                            "File"
                        } else {
                            "Directory"
                        };
                        Volume {
                            name: volume_name.clone(),
                            host_path: Some(HostPathVolumeSource {
                                path: path_text,
                                type_: Some(kind.into()),
                            }),
                            ..Volume::default()
                        }
                    }
                    VolumeMode::Pvc => {
                        claimed_binds.push(match written {
                            BindSource::Relative(_) | BindSource::Home { .. } => {
                                mount.source.clone()
                            }
                            BindSource::Absolute(_) => path_text(&path)?,
                        });
                        // `envctl-PROFILE-VOLUME`, from the whole container name: the
                        // hash of a long one differs per mount.
                        let (claim, renamed) =
                            claim_names.unique(&format!("{container}-{volume_name}"), &what);
                        if let Some(message) = claim_notice(&claim, renamed) {
                            notice(&setting, message);
                        }
                        claims.push(claim_object(&claim, &labels));
                        claim_source(&claim, &volume_name)
                    }
                }
            }
        };
        volumes.push(source);
        volume_mounts.push(VolumeMount {
            name: volume_name,
            mount_path: mount.target.clone(),
            read_only: mount.read_only.then_some(true),
            ..VolumeMount::default()
        });
    }
    if !host_paths.is_empty() {
        notice(
            "mounts",
            format!(
                "bind mounts become hostPath volumes of this machine's paths ({}): they must exist on the node that runs the pod; `--volumes pvc` writes PersistentVolumeClaims instead",
                host_paths.join(", ")
            ),
        );
    }
    if !claimed_binds.is_empty() {
        notice(
            "mounts",
            format!(
                "bind sources ({}) become PersistentVolumeClaims of {DEFAULT_CLAIM_SIZE} each; their data is not copied into them, and their size is a guess (`resources.requests.storage`)",
                claimed_binds.join(", ")
            ),
        );
    }
    if !claimed_volumes.is_empty() {
        notice(
            "mounts",
            format!(
                "named volumes ({}) become PersistentVolumeClaims of {DEFAULT_CLAIM_SIZE} each; their data is not copied into them, and their size is a guess (`resources.requests.storage`)",
                claimed_volumes.join(", ")
            ),
        );
    }

    // Ports: containerPorts; host publishing has no pod equivalent.
    let mut container_ports = Vec::new();
    let mut service_ports = Vec::new();
    let mut seen_container = BTreeSet::new();
    let mut seen_service = BTreeSet::new();
    for port in &profile.ports {
        for (container, host_port) in expand(port) {
            let protocol = protocol_name(port.protocol);
            if seen_container.insert((container, protocol)) {
                container_ports.push(ContainerPort {
                    container_port: i32::from(container),
                    protocol: Some(protocol.into()),
                    ..ContainerPort::default()
                });
            }
            let service_port = host_port.unwrap_or(container);
            if seen_service.insert((service_port, protocol)) {
                service_ports.push(ServicePort {
                    name: Some(format!("{}-{service_port}", protocol.to_ascii_lowercase())),
                    port: i32::from(service_port),
                    target_port: Some(IntOrString::Int(i32::from(container))),
                    protocol: Some(protocol.into()),
                    ..ServicePort::default()
                });
            }
        }
    }
    if !profile.ports.is_empty() {
        let written: Vec<String> = profile.ports.iter().map(ToString::to_string).collect();
        let exposed = profile.ports.iter().any(|port| !port.host_ip.is_loopback());
        let mut message = format!(
            "a pod publishes no ports on its node's addresses ({}): they are containerPorts",
            written.join(", ")
        );
        if options.service {
            message.push_str(
                ", reached in the cluster through the ClusterIP Service, and from here with `kubectl port-forward svc/",
            );
            message.push_str(&name);
            message.push('`');
        } else {
            message.push_str(&format!(
                "; reach them with `kubectl port-forward {}/{name} PORT`, or export with `--service`",
                options.kind.resource()
            ));
        }
        if exposed {
            message.push_str(
                "; for ports published beyond loopback, expose them with a NodePort or LoadBalancer Service",
            );
        }
        notice("ports", message);
    }
    let service = if options.service {
        if service_ports.is_empty() {
            notice(
                "ports",
                "the profile publishes no ports: no Service is written".into(),
            );
            None
        } else {
            Some(Service {
                metadata: metadata(&name, &labels, &BTreeMap::new()),
                spec: Some(ServiceSpec {
                    type_: Some("ClusterIP".into()),
                    selector: Some(labels.clone()),
                    ports: Some(service_ports),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            })
        }
    } else {
        None
    };

    // The process.
    let security_context = match &body.user {
        Some(user) => match numeric_user(user) {
            Some((uid, gid)) => Some(SecurityContext {
                run_as_user: Some(uid),
                run_as_group: gid,
                ..SecurityContext::default()
            }),
            None => {
                notice(
                    "user",
                    format!(
                        "Kubernetes runs as numeric ids only: `{user}` is not set, the image's user runs; write `user = \"UID:GID\"`"
                    ),
                );
                None
            }
        },
        None => None,
    };
    let keep_alive = body.cmd.iter().map(String::as_str).eq(KEEP_ALIVE_COMMAND);
    let share_process_namespace = if host.init == Some(true) {
        notice(
            "init",
            "Kubernetes has no `--init`: `shareProcessNamespace` makes the pod's pause process PID 1 instead, so the command still stops at once on SIGTERM".into(),
        );
        Some(true)
    } else {
        None
    };
    match profile.ipc {
        Some(Ipc::Shareable) => notice(
            "ipc",
            "a pod's IPC namespace is shared by its own containers only; other pods cannot join it".into(),
        ),
        Some(Ipc::Host) if profile.shm_size.is_some() => notice(
            "shm_size",
            "with `ipc = \"host\"` the pod uses the node's /dev/shm (`hostIPC`), whose size the pod cannot set".into(),
        ),
        _ => {}
    }
    if !host.ulimits.is_empty() {
        let written: Vec<String> = host
            .ulimits
            .iter()
            .map(|limit| format!("{}={}:{}", limit.name, limit.soft, limit.hard))
            .collect();
        notice(
            "ulimits",
            format!(
                "a pod cannot set ulimits ({}): the node's container runtime defaults apply; configure them there",
                written.join(", ")
            ),
        );
    }
    let environment: Vec<EnvVar> = super::environment(body)
        .into_iter()
        .map(|(key, value)| EnvVar {
            name: key,
            value: Some(escape_references(&value)),
            ..EnvVar::default()
        })
        .collect();

    let container = Container {
        name: name.clone(),
        image: Some(image),
        args: Some(
            body.cmd
                .iter()
                .map(|word| escape_references(word))
                .collect(),
        ),
        env: (!environment.is_empty()).then_some(environment),
        working_dir: body.working_dir.clone(),
        ports: (!container_ports.is_empty()).then_some(container_ports),
        resources,
        volume_mounts: (!volume_mounts.is_empty()).then_some(volume_mounts),
        security_context,
        ..Container::default()
    };
    let restart_policy = match options.kind {
        WorkloadKind::Deployment => {
            notice(
                "restart",
                "a Deployment always restarts its pod (`restartPolicy: Always`); `up` never restarts the container".into(),
            );
            "Always"
        }
        WorkloadKind::Pod | WorkloadKind::Job => "Never",
    };
    let pod_spec = PodSpec {
        containers: vec![container],
        volumes: (!volumes.is_empty()).then_some(volumes),
        restart_policy: Some(restart_policy.into()),
        host_ipc: host_ipc.then_some(true),
        share_process_namespace,
        ..PodSpec::default()
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            annotations: (!annotations.is_empty()).then(|| annotations.clone()),
            ..ObjectMeta::default()
        }),
        spec: Some(pod_spec.clone()),
    };

    let mut documents = Vec::new();
    for claim in &claims {
        documents.push(document(claim)?);
    }
    documents.push(match options.kind {
        WorkloadKind::Pod => document(&Pod {
            metadata: metadata(&name, &labels, &annotations),
            spec: Some(pod_spec),
            ..Pod::default()
        })?,
        WorkloadKind::Job => document(&Job {
            metadata: metadata(&name, &labels, &annotations),
            spec: Some(JobSpec {
                backoff_limit: Some(0),
                template,
                ..JobSpec::default()
            }),
            ..Job::default()
        })?,
        WorkloadKind::Deployment => document(&Deployment {
            metadata: metadata(&name, &labels, &annotations),
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                selector: LabelSelector {
                    match_labels: Some(labels.clone()),
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
        })?,
    });
    if let Some(service) = &service {
        documents.push(document(service)?);
    }

    let profile_name = &profile.name;
    let resource = options.kind.resource();
    let mut header = format!(
        "# Kubernetes manifests for envctl profile `{profile_name}` (`envctl export {profile_name} --to k8s`).\n\
         # Apply: `kubectl apply -f FILE`; enter: `kubectl exec -it {resource}/{name} -- sh`.\n"
    );
    if gpus.is_some() {
        header.push_str(
            "# GPUs: the nodes need the NVIDIA device plugin (or GPU Operator), and the NVIDIA runtime as their\n\
             # default runtime or as a RuntimeClass (then add `runtimeClassName` to the pod).\n",
        );
    }
    if keep_alive && options.kind == WorkloadKind::Job {
        header.push_str(&format!(
            "# The container runs `sleep infinity`: the Job never completes; `kubectl delete job {name}` ends it.\n"
        ));
    }
    Ok(Exported {
        text: format!("{header}{}", documents.join("---\n")),
        notices,
    })
}

/// The `nvidia.com/gpu` limit for a GPU request, with a notice where Kubernetes cannot
/// say the same thing.
fn gpu_count(gpus: &GpuRequest, notice: &mut impl FnMut(&str, String)) -> Option<u32> {
    match gpus {
        GpuRequest::None | GpuRequest::Count(0) => None,
        GpuRequest::Devices(devices) if devices.is_empty() => None,
        GpuRequest::Count(count) => Some(*count),
        GpuRequest::All => {
            notice(
                "gpus",
                format!(
                    "Kubernetes has no \"all GPUs\": the pod asks for 1 `{GPU_RESOURCE}`; raise the limit to the GPUs of your nodes"
                ),
            );
            Some(1)
        }
        GpuRequest::Optional => {
            notice(
                "gpus",
                format!(
                    "Kubernetes has no optional GPU: the pod asks for 1 `{GPU_RESOURCE}` and runs only on GPU nodes; delete the limit to run it without"
                ),
            );
            Some(1)
        }
        GpuRequest::Devices(devices) => {
            let count = u32::try_from(devices.len()).unwrap_or(u32::MAX);
            notice(
                "gpus",
                format!(
                    "Kubernetes cannot pick GPUs by id ({}): the pod asks for {count} `{GPU_RESOURCE}` and the device plugin chooses which",
                    devices.join(", ")
                ),
            );
            Some(count)
        }
    }
}

fn metadata(
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels.clone()),
        annotations: (!annotations.is_empty()).then(|| annotations.clone()),
        ..ObjectMeta::default()
    }
}

fn claim_object(claim: &str, labels: &BTreeMap<String, String>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: metadata(claim, labels, &BTreeMap::new()),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(DEFAULT_CLAIM_SIZE.into()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

fn claim_source(claim: &str, volume_name: &str) -> Volume {
    Volume {
        name: volume_name.to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.to_string(),
            ..PersistentVolumeClaimVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// One YAML document of a typed object.
fn document<T: Serialize>(object: &T) -> Result<String, ExportError> {
    let value =
        serde_json::to_value(object).map_err(|error| ExportError::serialize(TARGET, error))?;
    Ok(yaml::to_yaml(&value))
}

/// The text a mount target's volume name is made from: `/data/sets` → `data/sets`
/// (named `data-sets`).
fn volume_text(target: &str) -> &str {
    let text = target.trim_start_matches('/');
    if text.trim_matches('/').is_empty() {
        "root"
    } else {
        text
    }
}

/// Names made from the profile's text (mount targets, named volumes, the claim of a bind
/// mount), each held by one mount within one export: two mounts share a name only when
/// [`Names::shared`] is asked for the same text (a named volume mounted twice is one
/// volume). A text whose label ([`dns_label_whole`]) is longer than 63 characters, or is
/// another mount's name already (`my_cache` and `my.cache` both read `my-cache`), is named
/// with [`hashed_label`] instead: cut, then `-` and a short hash of the text.
#[derive(Debug, Default)]
struct Names {
    given: BTreeMap<String, Holder>,
}

/// Who holds a name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holder {
    /// envctl itself (the `shm` volume).
    Envctl,
    /// A mount, described for notices (`the named volume \`cache\``); `shared` is the
    /// text when other mounts of the same text share the name.
    Mount {
        what: String,
        shared: Option<String>,
    },
}

/// Why a mount is not named by its text's plain label.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Renamed {
    /// The label is longer than a Kubernetes name.
    TooLong { label: String },
    /// The label is held by another mount (described) or, with `None`, by envctl.
    Taken { label: String, by: Option<String> },
}

impl Renamed {
    /// The notice for `object` (`the PersistentVolumeClaim for …`) named `name`.
    fn message(&self, object: &str, name: &str) -> String {
        match self {
            Renamed::TooLong { label } => format!(
                "{object} is named `{name}`: `{label}` is longer than the {DNS_LABEL_MAX} characters of a Kubernetes name"
            ),
            Renamed::Taken {
                label,
                by: Some(by),
            } => format!(
                "{object} is named `{name}`: `{label}` is the name of {by} already, and the two must not share data"
            ),
            Renamed::Taken { label, by: None } => {
                format!("{object} is named `{name}`: envctl uses `{label}` itself")
            }
        }
    }
}

impl Names {
    /// Keeps `name` for envctl's own use.
    fn reserve(&mut self, name: &str) {
        self.given.insert(name.to_string(), Holder::Envctl);
    }

    /// The name of `text` for the mount `what`, the same for every mount of the same
    /// `text`, and why it is not `text`'s plain label, if it is not.
    fn shared(&mut self, text: &str, what: &str) -> (String, Option<Renamed>) {
        let held = self.given.iter().find(|(_, holder)| {
            matches!(holder, Holder::Mount { shared: Some(shared), .. } if shared == text)
        });
        if let Some((name, _)) = held {
            return (name.clone(), None);
        }
        self.give(text, what, Some(text.to_string()))
    }

    /// A name of `text` for the mount `what` alone, and why it is not `text`'s plain
    /// label, if it is not.
    fn unique(&mut self, text: &str, what: &str) -> (String, Option<Renamed>) {
        self.give(text, what, None)
    }

    fn give(
        &mut self,
        text: &str,
        what: &str,
        shared: Option<String>,
    ) -> (String, Option<Renamed>) {
        let label = dns_label_whole(text);
        let (mut name, mut renamed) = if label.len() > DNS_LABEL_MAX {
            let renamed = Renamed::TooLong {
                label: label.clone(),
            };
            (hashed_label(&label, text), Some(renamed))
        } else {
            (label.clone(), None)
        };
        if let Some(holder) = self.given.get(&name) {
            renamed = Some(Renamed::Taken {
                label: name.clone(),
                by: match holder {
                    Holder::Envctl => None,
                    Holder::Mount { what, .. } => Some(what.clone()),
                },
            });
            name = hashed_label(&label, text);
        }
        // A hash that is held too (a text that reads as `name` literally, or the same text
        // for another mount): hash again, with a round number.
        let mut round = 1u32;
        while self.given.contains_key(&name) {
            name = hashed_label(&label, &format!("{text}\n{round}"));
            round += 1;
        }
        self.given.insert(
            name.clone(),
            Holder::Mount {
                what: what.to_string(),
                shared,
            },
        );
        (name, renamed)
    }
}

/// `(container port, fixed host port)` for every port of a binding's range.
fn expand(port: &PortBinding) -> Vec<(u16, Option<u16>)> {
    (port.container.start..=port.container.end)
        .enumerate()
        .map(|(offset, container)| {
            let host = port.host.and_then(|host| {
                u16::try_from(offset)
                    .ok()
                    .and_then(|offset| host.start.checked_add(offset))
            });
            (container, host)
        })
        .collect()
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
        Protocol::Sctp => "SCTP",
    }
}

/// Bytes in the largest binary unit that holds them exactly (`16Gi`), else plain bytes.
fn binary_quantity(bytes: u64) -> String {
    const UNITS: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    for (suffix, shift) in UNITS {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// NanoCpus as a CPU quantity in whole CPUs or millicores (rounded up), and whether it
/// had to be rounded.
fn cpu_quantity(nanos: i64) -> (String, bool) {
    let millis = (nanos + 999_999) / 1_000_000;
    let rounded = nanos % 1_000_000 != 0;
    let text = if millis % 1000 == 0 {
        (millis / 1000).to_string()
    } else {
        format!("{millis}m")
    };
    (text, rounded)
}

/// `uid` or `uid:gid` as numbers; names have no Kubernetes field.
fn numeric_user(user: &str) -> Option<(i64, Option<i64>)> {
    let (uid, gid) = match user.split_once(':') {
        Some((uid, gid)) => (uid, Some(gid)),
        None => (user, None),
    };
    let uid = uid.parse::<i64>().ok()?;
    let gid = match gid {
        Some(gid) => Some(gid.parse::<i64>().ok()?),
        None => None,
    };
    Some((uid, gid))
}

/// The kubelet expands `$(VAR)` in args and env values; `$$(` keeps it literal.
fn escape_references(text: &str) -> String {
    text.replace("$(", "$$(")
}

/// A profile name as a label value: `[A-Za-z0-9._-]`, at most 63 characters, starting
/// and ending with a letter or digit. A longer one is cut and ends in `-` and a short hash
/// of the name, so that two long names do not select each other's pods.
fn label_value(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.len() <= DNS_LABEL_MAX {
        return trimmed.to_string();
    }
    let suffix = super::short_hash(name);
    let cut: String = trimmed
        .chars()
        .take(DNS_LABEL_MAX - suffix.len() - 1)
        .collect();
    format!(
        "{}-{suffix}",
        cut.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
            format!("{}-{}", "p".repeat(54), super::super::short_hash(&long))
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
            format!("data-sets-{}", super::super::short_hash("data.sets"))
        );
        assert_eq!(
            volume("/shm"),
            format!("shm-{}", super::super::short_hash("shm"))
        );
        assert_eq!(volume("//"), "root");
        assert_eq!(escape_references("$(HOME) $HOME"), "$$(HOME) $HOME");
    }

    #[test]
    fn claim_names_are_one_per_mount() {
        use super::super::short_hash;
        let mut claims = Names::default();
        // Named volumes that read the same as a label.
        let underscore = "the named volume `my_cache`";
        let dot = "the named volume `my.cache`";
        assert_eq!(
            claims.shared("my_cache", underscore),
            ("my-cache".to_string(), None)
        );
        let (dotted, renamed) = claims.shared("my.cache", dot);
        assert_eq!(dotted, format!("my-cache-{}", short_hash("my.cache")));
        let renamed = renamed.unwrap();
        assert_eq!(
            renamed,
            Renamed::Taken {
                label: "my-cache".into(),
                by: Some(underscore.into())
            }
        );
        assert_eq!(
            renamed.message(&format!("the PersistentVolumeClaim for {dot}"), &dotted),
            format!(
                "the PersistentVolumeClaim for the named volume `my.cache` is named `{dotted}`: `my-cache` is the name of the named volume `my_cache` already, and the two must not share data"
            )
        );
        // A named volume mounted again: the same claim, nothing renamed.
        assert_eq!(claims.shared("my.cache", dot), (dotted.clone(), None));
        assert_eq!(
            claims.shared("my_cache", underscore),
            ("my-cache".to_string(), None)
        );
        // A bind mount whose text reads as a named volume's: a claim of its own.
        let (bind, renamed) = claims.unique("my_cache", "the bind mount `./c:/c`");
        assert_ne!(bind, "my-cache");
        assert!(matches!(renamed, Some(Renamed::Taken { .. })));
        // ... and a named volume after it does not join it either.
        let (later, _) = claims.shared("my-cache", "the named volume `my-cache`");
        assert!(![dotted.as_str(), bind.as_str(), "my-cache"].contains(&later.as_str()));
        // Bind claims of a 59-character profile: cut, with different hashes.
        let profile = format!("envctl-{}", "p".repeat(59));
        let train_text = format!("{profile}-data-train");
        let valid_text = format!("{profile}-data-valid");
        let (train, renamed) = claims.unique(&train_text, "/data/train");
        assert_eq!(
            renamed,
            Some(Renamed::TooLong {
                label: train_text.clone()
            })
        );
        let (valid, _) = claims.unique(&valid_text, "/data/valid");
        assert_ne!(train, valid);
        assert_eq!(train.len(), 63);
        assert!(train.ends_with(&short_hash(&train_text)), "{train}");
        assert!(valid.ends_with(&short_hash(&valid_text)), "{valid}");
        // The same text for two mounts, and a text that reads as a hashed name literally.
        let (again, _) = claims.unique(&train_text, "/other");
        assert_ne!(again, train);
        let (literal, renamed) = claims.shared(&dotted, "the named volume `literal`");
        assert_ne!(literal, dotted);
        assert!(matches!(renamed, Some(Renamed::Taken { .. })));
        for name in claims.given.keys() {
            assert!(name.len() <= DNS_LABEL_MAX, "{name}");
        }
        assert_eq!(claims.given.len(), 8);
        // Reserved names are never given.
        let mut volumes = Names::default();
        volumes.reserve(SHM_VOLUME);
        let (shm, renamed) = volumes.shared("shm", "the named volume `shm`");
        assert_ne!(shm, SHM_VOLUME);
        assert_eq!(
            renamed.unwrap().message("the volume", &shm),
            format!("the volume is named `{shm}`: envctl uses `shm` itself")
        );
    }
}
