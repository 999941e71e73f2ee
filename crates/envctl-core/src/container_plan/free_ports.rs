//! Whether the host ports a create body publishes are already published by a running
//! container (envctl's or not). The daemon only finds out at start, with a 500 naming
//! neither the container nor a fix; `up` asks before it creates.

use super::CreateBody;
use crate::facts::container::ContainerSummary;

/// A host port the body wants that a running container already publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenPort {
    /// `127.0.0.1:8888/tcp`, as the body asks for it.
    pub wanted: String,
    /// The container publishing it, and how (`0.0.0.0:8888->8888/tcp`).
    pub container: String,
    pub published: String,
    /// The body's container port (`8888/tcp`), for the `-p` hint.
    pub container_port: String,
    pub host_port: u16,
}

/// The first host port of `body` that one of `running` publishes on an address that
/// overlaps (the same address, or either one the wildcard), for the same protocol.
pub fn taken_port(body: &CreateBody, running: &[ContainerSummary]) -> Option<TakenPort> {
    for (container_port, bindings) in &body.host_config.port_bindings {
        let protocol = container_port
            .rsplit_once('/')
            .map_or("tcp", |(_, protocol)| protocol);
        for binding in bindings {
            // An empty host port lets the daemon pick a free one: it cannot collide.
            let Ok(host_port) = binding.host_port.parse::<u16>() else {
                continue;
            };
            for other in running {
                if let Some(published) = other.published.iter().find(|published| {
                    published.host_port == host_port
                        && published.protocol == protocol
                        && addresses_overlap(&binding.host_ip, &published.host_ip)
                }) {
                    return Some(TakenPort {
                        wanted: format!("{}:{host_port}/{protocol}", binding.host_ip),
                        container: other.name.clone(),
                        published: format!(
                            "{}:{}/{}",
                            published.host_ip, published.host_port, published.protocol
                        ),
                        container_port: container_port.clone(),
                        host_port,
                    });
                }
            }
        }
    }
    None
}

/// The wildcard (`0.0.0.0`, `::`, or none) overlaps every address of its family; Docker
/// also binds `::` when it binds `0.0.0.0`, so the two wildcards overlap each other.
fn addresses_overlap(first: &str, second: &str) -> bool {
    let wildcard = |address: &str| matches!(address, "" | "0.0.0.0" | "::" | "[::]");
    first == second || wildcard(first) || wildcard(second)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::container::PublishedPort;

    fn body(ports: &str) -> CreateBody {
        let resolved = crate::profile::resolve::resolve_text(
            "p.toml",
            &format!("image = \"busybox\"\nports = [{ports}]\n"),
        )
        .unwrap();
        let exists = |_: &std::path::Path| true;
        let context = crate::container_plan::SpecContext {
            working_directory: std::path::PathBuf::from("/work"),
            home: None,
            host_has_gpus: false,
            overrides: crate::container_plan::Overrides::default(),
            path_exists: &exists,
        };
        crate::container_plan::create_body(&resolved, &context).unwrap()
    }

    fn running(name: &str, published: &[(&str, u16, &str)]) -> ContainerSummary {
        ContainerSummary {
            id: format!("{name}-id"),
            name: name.to_string(),
            image: "x".into(),
            image_id: "sha256:x".into(),
            state: "running".into(),
            status: "Up".into(),
            created: 0,
            labels: Default::default(),
            ports: Vec::new(),
            published: published
                .iter()
                .map(|(ip, port, protocol)| PublishedPort {
                    host_ip: (*ip).to_string(),
                    host_port: *port,
                    protocol: (*protocol).to_string(),
                    container_port: None,
                })
                .collect(),
        }
    }

    #[test]
    fn the_same_port_on_an_overlapping_address_is_taken() {
        let wanted = body("\"8888:8888\"");
        let taken = taken_port(&wanted, &[running("jupyter", &[("0.0.0.0", 8888, "tcp")])])
            .expect("0.0.0.0 overlaps 127.0.0.1");
        assert_eq!(taken.container, "jupyter");
        assert_eq!(taken.wanted, "127.0.0.1:8888/tcp");
        assert_eq!(taken.published, "0.0.0.0:8888/tcp");
        assert!(taken_port(&wanted, &[running("a", &[("127.0.0.1", 8888, "tcp")])]).is_some());
    }

    #[test]
    fn other_ports_addresses_and_protocols_are_free() {
        let wanted = body("\"8888:8888\", \"9000:9000/udp\"");
        let others = [
            running("b", &[("127.0.0.2", 8888, "tcp")]),
            running("c", &[("127.0.0.1", 8888, "udp")]),
            running("d", &[("127.0.0.1", 8889, "tcp"), ("0.0.0.0", 9000, "tcp")]),
            running("e", &[("::1", 8888, "tcp")]),
        ];
        assert_eq!(taken_port(&wanted, &others), None);
    }
}
