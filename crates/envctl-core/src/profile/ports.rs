//! Published ports in Docker's short syntax (`[ip:][host:]container[/protocol]`, with
//! ranges and bracketed IPv6) and the checks that apply to a whole list of them.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use super::model::{PortBinding, PortRange, Protocol};

/// The host IP a port binds to when the profile writes none: loopback, never all interfaces.
pub const DEFAULT_HOST_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The most port bindings a profile may expand to, ranges counted port by port. Docker
/// publishes every port of a range as a binding of its own (a key of `ExposedPorts` and
/// `PortBindings`, a proxy or NAT rule on the host); 65535 is one whole port space of one
/// protocol and address, more than any container can use, and it bounds the create body
/// (about 100 bytes a binding, so a few MB) where 200 full ranges made 1.2 GB of it.
pub const MAXIMUM_PORT_BINDINGS: u32 = 65535;

/// The host addresses and ports claimed so far, to find the binding a new one conflicts
/// with ([`conflicts`]) in time linear in the ports claimed, where comparing every pair
/// of bindings was quadratic in their number.
#[derive(Debug)]
pub struct HostPortClaims<T> {
    /// Per protocol, address family (IPv4 or not) and host port.
    claims: HashMap<(Protocol, bool, u16), PortClaim<T>>,
}

#[derive(Debug)]
struct PortClaim<T> {
    /// The claim of `0.0.0.0` or `::`, which covers every address of its family.
    unspecified: Option<T>,
    addresses: HashMap<IpAddr, T>,
}

impl<T> Default for HostPortClaims<T> {
    fn default() -> Self {
        HostPortClaims {
            claims: HashMap::new(),
        }
    }
}

impl<T: Copy> HostPortClaims<T> {
    /// The owner of the first claim `binding` conflicts with; a binding without a host
    /// port (Docker picks one) conflicts with nothing.
    pub fn conflict(&self, binding: &PortBinding) -> Option<T> {
        let host = binding.host?;
        (host.start..=host.end).find_map(|port| {
            let claim = self.claims.get(&key(binding, port))?;
            if binding.host_ip.is_unspecified() {
                claim
                    .unspecified
                    .or_else(|| claim.addresses.values().next().copied())
            } else {
                claim
                    .unspecified
                    .or_else(|| claim.addresses.get(&binding.host_ip).copied())
            }
        })
    }

    /// Records what `binding` claims, for `owner`.
    pub fn claim(&mut self, binding: &PortBinding, owner: T) {
        let Some(host) = binding.host else { return };
        for port in host.start..=host.end {
            let claim = self
                .claims
                .entry(key(binding, port))
                .or_insert_with(|| PortClaim {
                    unspecified: None,
                    addresses: HashMap::new(),
                });
            if binding.host_ip.is_unspecified() {
                claim.unspecified.get_or_insert(owner);
            } else {
                claim.addresses.entry(binding.host_ip).or_insert(owner);
            }
        }
    }
}

fn key(binding: &PortBinding, port: u16) -> (Protocol, bool, u16) {
    (binding.protocol, binding.host_ip.is_ipv4(), port)
}

/// Parses one short-form port spec: `8888`, `8888:8888`, `127.0.0.1:8888:8888`,
/// `[::1]:8888:8888/udp`, `8000-8010:8000-8010`, `0.0.0.0::8888` (any free host port).
pub fn parse_port_spec(spec: &str) -> Result<PortBinding, String> {
    let (addresses, protocol) = match spec.rsplit_once('/') {
        Some((addresses, protocol)) => (addresses, parse_protocol(protocol)?),
        None => (spec, Protocol::Tcp),
    };
    let (host_ip, ports) = if let Some(after_bracket) = addresses.strip_prefix('[') {
        let (address, rest) = after_bracket
            .split_once(']')
            .ok_or_else(|| format!("port `{spec}` has an unclosed `[` around its IPv6 address"))?;
        let ports = rest
            .strip_prefix(':')
            .ok_or_else(|| format!("port `{spec}`: write `[{address}]:HOST:CONTAINER`"))?;
        (Some(parse_host_ip(address)?), ports)
    } else {
        let parts: Vec<&str> = addresses.split(':').collect();
        match parts.len() {
            1 | 2 => (None, addresses),
            3 => {
                let split_at = parts[0].len() + 1;
                (Some(parse_host_ip(parts[0])?), &addresses[split_at..])
            }
            _ => {
                return Err(format!(
                    "port `{spec}` has too many `:`; an IPv6 host address goes in brackets: `[::1]:8888:8888`"
                ));
            }
        }
    };
    let (host, container) = match ports.split_once(':') {
        Some((host, container)) => {
            if host.is_empty() && host_ip.is_none() {
                return Err(format!(
                    "port `{spec}` has an empty host port; write just the container port to let Docker pick one"
                ));
            }
            let host = if host.is_empty() {
                None
            } else {
                Some(parse_port_range(host)?)
            };
            (host, parse_port_range(container)?)
        }
        None => (None, parse_port_range(ports)?),
    };
    if host.is_none() && host_ip.is_some() && !ports.contains(':') {
        return Err(format!(
            "port `{spec}` is missing the container port after the host IP"
        ));
    }
    make_binding(host_ip, host, container, protocol)
}

/// Builds a binding from its parts (short and long forms meet here), checking range lengths.
pub fn make_binding(
    host_ip: Option<IpAddr>,
    host: Option<PortRange>,
    container: PortRange,
    protocol: Protocol,
) -> Result<PortBinding, String> {
    if let Some(host) = host
        && host.len() != container.len()
    {
        return Err(format!(
            "host ports {host} and container ports {container} are ranges of different lengths ({} and {})",
            host.len(),
            container.len()
        ));
    }
    Ok(PortBinding {
        host_ip: host_ip.unwrap_or(DEFAULT_HOST_IP),
        host,
        container,
        protocol,
    })
}

pub fn parse_protocol(text: &str) -> Result<Protocol, String> {
    match text.to_ascii_lowercase().as_str() {
        "tcp" => Ok(Protocol::Tcp),
        "udp" => Ok(Protocol::Udp),
        "sctp" => Ok(Protocol::Sctp),
        _ => Err(format!("protocol `{text}` is not tcp, udp or sctp")),
    }
}

pub fn parse_host_ip(text: &str) -> Result<IpAddr, String> {
    let unbracketed = text
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(text);
    unbracketed
        .parse()
        .map_err(|_| format!("host IP `{text}` is not an IPv4 or IPv6 address"))
}

/// `8888` or `8000-8010`; ports are 1–65535.
pub fn parse_port_range(text: &str) -> Result<PortRange, String> {
    let port = |part: &str| -> Result<u16, String> {
        if part.is_empty() || !part.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("`{text}` is not a port number or range"));
        }
        match part.parse::<u32>() {
            Ok(number) if (1..=65535).contains(&number) => Ok(number as u16),
            _ => Err(format!(
                "port `{part}` is out of range: ports are 1 to 65535"
            )),
        }
    };
    match text.split_once('-') {
        Some((start, end)) => {
            let (start, end) = (port(start)?, port(end)?);
            if start > end {
                return Err(format!("port range `{text}` ends before it starts"));
            }
            Ok(PortRange { start, end })
        }
        None => Ok(PortRange::single(port(text)?)),
    }
}

/// Whether two bindings claim the same host address, port and protocol. An unspecified
/// address (`0.0.0.0`, `::`) covers every address of its family.
pub fn conflicts(first: &PortBinding, second: &PortBinding) -> bool {
    let (Some(first_host), Some(second_host)) = (first.host, second.host) else {
        return false;
    };
    let same_address = first.host_ip == second.host_ip
        || (first.host_ip.is_unspecified() && first.host_ip.is_ipv4() == second.host_ip.is_ipv4())
        || (second.host_ip.is_unspecified() && first.host_ip.is_ipv4() == second.host_ip.is_ipv4());
    first.protocol == second.protocol && same_address && first_host.overlaps(second_host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(spec: &str) -> PortBinding {
        parse_port_spec(spec).unwrap_or_else(|message| panic!("{spec}: {message}"))
    }

    #[test]
    fn short_forms() {
        assert_eq!(parse("8888").to_string(), "127.0.0.1::8888/tcp");
        assert_eq!(parse("8888:80").to_string(), "127.0.0.1:8888:80/tcp");
        assert_eq!(parse("0.0.0.0:2222:22").to_string(), "0.0.0.0:2222:22/tcp");
        assert_eq!(
            parse("[::1]:8888:8888/udp").to_string(),
            "[::1]:8888:8888/udp"
        );
        assert_eq!(
            parse("8000-8010:9000-9010/sctp").to_string(),
            "127.0.0.1:8000-8010:9000-9010/sctp"
        );
        assert_eq!(parse("127.0.0.1::8888").to_string(), "127.0.0.1::8888/tcp");
    }

    #[test]
    fn rejects_bad_specs() {
        for bad in [
            "",
            "0",
            "65536",
            "80:",
            ":80",
            "a:80",
            "80/http",
            "8000-8010:9000",
            "10-5:10-5",
            "::1:80:80",
            "[::1:80:80",
            "300.1.1.1:80:80",
            "1.2.3.4:80",
            "80-:80",
            "+80",
        ] {
            assert!(parse_port_spec(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    /// The claims find exactly the conflicts [`conflicts`] finds between every pair.
    #[test]
    fn claims_agree_with_the_pairwise_rule() {
        let specs = [
            "8888:1",
            "8888:2",
            "8888:1/udp",
            "0.0.0.0:8888:3",
            "127.0.0.2:8888:4",
            "[::]:8888:5",
            "[::1]:8888:6",
            "8000-8010:8000-8010",
            "127.0.0.3:8005:1",
            "0.0.0.0:8009-8012:1-4",
            "1",
            "1",
            "127.0.0.2:9000:9000",
        ];
        let bindings: Vec<PortBinding> = specs.iter().map(|spec| parse(spec)).collect();
        let mut claims = HostPortClaims::default();
        let mut kept: Vec<usize> = Vec::new();
        for (index, binding) in bindings.iter().enumerate() {
            let pairwise = kept
                .iter()
                .copied()
                .find(|&other| conflicts(&bindings[other], binding));
            let claimed = claims.conflict(binding);
            assert_eq!(pairwise.is_some(), claimed.is_some(), "{}", specs[index]);
            if let Some(owner) = claimed {
                assert!(conflicts(&bindings[owner], binding), "{}", specs[index]);
            } else {
                claims.claim(binding, index);
                kept.push(index);
            }
        }
    }

    #[test]
    fn conflicts_by_address_port_and_protocol() {
        assert!(conflicts(&parse("8888:1"), &parse("8888:2")));
        assert!(!conflicts(&parse("8888:1"), &parse("8888:1/udp")));
        assert!(conflicts(
            &parse("0.0.0.0:8888:1"),
            &parse("127.0.0.1:8888:2")
        ));
        assert!(!conflicts(
            &parse("127.0.0.2:8888:1"),
            &parse("127.0.0.1:8888:2")
        ));
        assert!(conflicts(&parse("8000-8010:8000-8010"), &parse("8005:1")));
        assert!(!conflicts(&parse("1"), &parse("1")));
    }
}
