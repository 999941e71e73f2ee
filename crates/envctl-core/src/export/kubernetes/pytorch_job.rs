//! `export --to k8s --nodes N`: a Kubeflow training operator `PyTorchJob`
//! (`kubeflow.org/v1`): one `Master` and `N - 1` `Worker` replicas, each the pod `up`'s
//! container becomes, with the profile's GPUs per replica.
//!
//! The operator gives every replica the rendezvous torchrun reads (`PET_MASTER_ADDR`,
//! `PET_MASTER_PORT`, `PET_NNODES`, `PET_NODE_RANK`, `PET_NPROC_PER_NODE`, and
//! `MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`) in the container named `pytorch`,
//! the only name it looks for. `nprocPerNode` is the GPUs per replica. Replicas never
//! restart (`restartPolicy: Never`, `runPolicy.backoffLimit: 0`), as `up` never restarts.
//!
//! The shape is checked against the operator's published CRD schema, pinned in
//! `tests/fixtures/kubeflow/` (see its README), by `tests/it/export_clusters.rs`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::labels::Identity;
use super::objects::{ObjectMeta, PodSpec, PodTemplateSpec};
use super::{KubernetesOptions, Notices};
use crate::export::ExportError;
use crate::export::view::BodyView;

/// The container name the training operator injects its variables into.
pub(super) const CONTAINER_NAME: &str = "pytorch";
pub const API_VERSION: &str = "kubeflow.org/v1";
pub const KIND: &str = "PyTorchJob";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PyTorchJob {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: PyTorchJobSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PyTorchJobSpec {
    run_policy: RunPolicy,
    #[serde(skip_serializing_if = "Option::is_none")]
    nproc_per_node: Option<String>,
    pytorch_replica_specs: BTreeMap<&'static str, ReplicaSpec>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunPolicy {
    backoff_limit: i32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReplicaSpec {
    replicas: i32,
    restart_policy: &'static str,
    template: PodTemplateSpec,
}

/// The PyTorchJob document for `nodes` replicas of `pod_spec`, each with `gpus` GPUs.
pub(super) fn document(
    view: &BodyView<'_>,
    identity: &Identity,
    pod_spec: PodSpec,
    nodes: u32,
    gpus: Option<u32>,
    notices: &mut Notices,
) -> Result<String, ExportError> {
    if view.keeps_alive() {
        notices.add(
            "command",
            "the profile has no `command`: every replica runs `sleep infinity` and the PyTorchJob never completes; set `command = [\"torchrun\", \"train.py\"]` (torchrun reads the operator's PET_* variables)",
        );
    }
    let template = PodTemplateSpec {
        metadata: identity.template_metadata(),
        spec: pod_spec,
    };
    let replica = |replicas: u32| ReplicaSpec {
        replicas: i32::try_from(replicas).unwrap_or(i32::MAX),
        restart_policy: "Never",
        template: template.clone(),
    };
    let job = PyTorchJob {
        api_version: API_VERSION,
        kind: KIND,
        metadata: identity.workload_metadata(),
        spec: PyTorchJobSpec {
            run_policy: RunPolicy { backoff_limit: 0 },
            nproc_per_node: gpus.map(|count| count.to_string()),
            pytorch_replica_specs: BTreeMap::from([
                ("Master", replica(1)),
                ("Worker", replica(nodes.saturating_sub(1))),
            ]),
        },
    };
    super::document(&job)
}

/// The comment lines above the documents.
pub(super) fn header(
    view: &BodyView<'_>,
    identity: &Identity,
    nodes: u32,
    options: &KubernetesOptions,
    has_gpus: bool,
) -> String {
    let name = &identity.name;
    let profile_name = view.profile_name;
    let mut header = format!(
        "# A Kubeflow PyTorchJob for envctl profile `{profile_name}` on {nodes} nodes (`envctl export {profile_name} --to k8s --nodes {nodes}`).\n\
         # Needs the Kubeflow training operator (v1, `kubeflow.org/v1`). Apply: `kubectl apply -f FILE`;\n\
         # follow: `kubectl get pytorchjob {name}`, `kubectl logs {name}-master-0`.\n\
         # Each replica's container `pytorch` gets MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and torchrun's PET_* variables.\n"
    );
    if has_gpus {
        header.push_str(&super::workload::gpu_header(options));
    }
    if let Some(command) = super::environment::create_secret_command(view, identity) {
        header.push_str(&format!(
            "# Secrets ({}) are read from a Secret this file does not hold; create it first, from your shell:\n#   {command}\n",
            view.secrets.join(", ")
        ));
    }
    header
}
