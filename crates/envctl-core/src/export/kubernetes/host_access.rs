//! The profile's `network`, `devices`, `cap_add` and `hostname` in a pod: the host's
//! network as `hostNetwork` (with `dnsPolicy: ClusterFirstWithHostNet`, so the pod still
//! resolves the cluster's Services, which a multi-node job's rendezvous needs), added
//! capabilities as the container's `securityContext.capabilities.add`, the hostname as the
//! pod's `hostname`. A pod has no field for host devices: each becomes a notice naming the
//! device plugin that gives it.

use super::Notices;
use crate::export::view::BodyView;

/// What the pod and its container get.
#[derive(Debug, Default)]
pub(super) struct HostAccess {
    pub(super) host_network: bool,
    pub(super) dns_policy: Option<String>,
    pub(super) hostname: Option<String>,
    /// Without `CAP_`, as Kubernetes writes them (`IPC_LOCK`).
    pub(super) capabilities: Option<Vec<String>>,
}

/// `training` is a multi-node PyTorchJob, whose replicas the operator names.
pub(super) fn host_access(
    view: &BodyView<'_>,
    training: bool,
    notices: &mut Notices,
) -> HostAccess {
    let host_network = view.host_network();
    match view.network_mode {
        Some("none") => notices.add(
            "network",
            "a pod always has its network: `network = \"none\"` has no Kubernetes form (a NetworkPolicy that denies all traffic comes closest)",
        ),
        Some(network) if view.named_network() == Some(network) => notices.add(
            "network",
            format!(
                "Kubernetes has one pod network: the Docker network `{network}` has no counterpart, the pod joins the cluster's (a CNI such as Multus attaches more)"
            ),
        ),
        _ => {}
    }
    let hostname = view.hostname.and_then(|hostname| {
        let why_not = if host_network {
            Some("with `hostNetwork` the pod has its node's hostname".to_string())
        } else if training {
            Some("the training operator names each replica's pod".to_string())
        } else if !is_dns_label(hostname) {
            Some(format!(
                "a pod's `hostname` is one DNS label (lower-case letters, digits and `-`): `{hostname}` is not one"
            ))
        } else {
            None
        };
        match why_not {
            Some(reason) => {
                notices.add("hostname", format!("not set: {reason}"));
                None
            }
            None => Some(hostname.to_string()),
        }
    });
    if !view.devices.is_empty() {
        notices.add(
            "devices",
            format!(
                "a pod cannot name host devices ({}): a device plugin must advertise them as a resource the pod asks for (for InfiniBand/RoCE, the NVIDIA Network Operator's RDMA shared device plugin, `rdma/…`), or the pod must be privileged; not written",
                view.written_devices().join(", ")
            ),
        );
    }
    let capabilities = view.capability_names();
    HostAccess {
        host_network,
        dns_policy: host_network.then(|| "ClusterFirstWithHostNet".to_string()),
        hostname,
        capabilities: (!capabilities.is_empty()).then_some(capabilities),
    }
}

/// A DNS-1123 label: what a pod's `hostname` must be.
fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= crate::export::DNS_LABEL_MAX
        && !text.starts_with('-')
        && !text.ends_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
