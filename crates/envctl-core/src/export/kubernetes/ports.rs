//! The published ports as containerPorts and, with `--service`, a ClusterIP Service: a
//! pod publishes nothing on its node's addresses, so the notice says how to reach them.

use std::collections::BTreeSet;

use super::labels::Identity;
use super::objects::{ContainerPort, Service, ServicePort, ServiceSpec};
use super::{KubernetesOptions, Notices};
use crate::export::view::BodyView;
use crate::profile::model::Protocol;

/// The container's ports and the Service for them.
#[derive(Debug)]
pub(super) struct Ports {
    pub(super) container_ports: Vec<ContainerPort>,
    pub(super) service: Option<Service>,
}

pub(super) fn ports(
    view: &BodyView<'_>,
    options: &KubernetesOptions,
    identity: &Identity,
    notices: &mut Notices,
) -> Ports {
    let (container_ports, service_ports) = port_lists(view);
    if !view.ports.is_empty() {
        notices.add("ports", publishing_message(view, options, &identity.name));
    }
    let service = if options.service {
        service(identity, service_ports, notices)
    } else {
        None
    };
    Ports {
        container_ports,
        service,
    }
}

/// One containerPort per container port and protocol, and one Service port per port the
/// host would publish (the host port where the profile fixes one).
fn port_lists(view: &BodyView<'_>) -> (Vec<ContainerPort>, Vec<ServicePort>) {
    let mut container_ports = Vec::new();
    let mut service_ports = Vec::new();
    let mut seen_container = BTreeSet::new();
    let mut seen_service = BTreeSet::new();
    for published in view.published_ports() {
        let container = published.container_port;
        let protocol = protocol_name(published.protocol);
        if seen_container.insert((container, protocol)) {
            container_ports.push(ContainerPort {
                container_port: i32::from(container),
                protocol: protocol.into(),
            });
        }
        let service_port = published.host_port.unwrap_or(container);
        if seen_service.insert((service_port, protocol)) {
            service_ports.push(ServicePort {
                name: format!("{}-{service_port}", protocol.to_ascii_lowercase()),
                port: i32::from(service_port),
                target_port: i32::from(container),
                protocol: protocol.into(),
            });
        }
    }
    (container_ports, service_ports)
}

/// The notice for publishing: what the ports became and how to reach them.
fn publishing_message(view: &BodyView<'_>, options: &KubernetesOptions, name: &str) -> String {
    let exposed = view
        .ports
        .iter()
        .any(|port| !port.binding.host_ip.is_loopback());
    let mut message = format!(
        "a pod publishes no ports on its node's addresses ({}): they are containerPorts",
        view.written_ports().join(", ")
    );
    // `kubectl port-forward` carries TCP only: UDP and SCTP ports are reached in the cluster.
    let mut others: Vec<String> = view
        .published_ports()
        .filter(|port| port.protocol != Protocol::Tcp)
        .map(|port| {
            format!(
                "{}/{}",
                port.container_port,
                protocol_name(port.protocol).to_ascii_lowercase()
            )
        })
        .collect();
    others.dedup();
    let any_tcp = view
        .published_ports()
        .any(|port| port.protocol == Protocol::Tcp);
    if options.service {
        message.push_str(", reached in the cluster through the ClusterIP Service");
        if any_tcp {
            message.push_str(", and from here with `kubectl port-forward svc/");
            message.push_str(name);
            message.push('`');
        }
    } else if any_tcp {
        message.push_str(&format!(
            "; reach them with `kubectl port-forward {}/{name} PORT`, or export with `--service`",
            options.kind.resource()
        ));
    } else {
        message.push_str("; export with `--service` to reach them in the cluster");
    }
    if !others.is_empty() {
        message.push_str(&format!(
            "; `kubectl port-forward` carries TCP only, so {} can be reached only from inside the cluster",
            others.join(", ")
        ));
    }
    if exposed {
        message.push_str(
            "; for ports published beyond loopback, expose them with a NodePort or LoadBalancer Service",
        );
    }
    message
}

/// The ClusterIP Service, unless there is no port for it.
fn service(
    identity: &Identity,
    service_ports: Vec<ServicePort>,
    notices: &mut Notices,
) -> Option<Service> {
    if service_ports.is_empty() {
        notices.add(
            "ports",
            "the profile publishes no ports: no Service is written",
        );
        return None;
    }
    Some(Service::service(
        identity.object_metadata(&identity.name),
        ServiceSpec {
            type_: "ClusterIP".into(),
            selector: identity.labels.clone(),
            ports: service_ports,
        },
    ))
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
        Protocol::Sctp => "SCTP",
    }
}
