//! The keys that open a container to the host's network and devices, which multi-node
//! training needs (NCCL over InfiniBand or RoCE wants the host's network, the RDMA device
//! nodes and `IPC_LOCK` to pin memory): `network`, `devices`, `cap_add` and `hostname`.
//! The values are parsed and checked here, as `docker run` reads them; `validate` reports
//! each problem at its place in the file.

use std::fmt;

use serde::{Serialize, Serializer};

/// `network`: which network namespace the container joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// Docker's default bridge (`--network bridge`), written out.
    Bridge,
    /// The host's own network stack: no isolation, no published ports.
    Host,
    /// Only a loopback interface.
    None,
    /// A network made with `docker network create` (compose: an external network).
    Named(String),
}

impl Network {
    /// The value of `docker run --network` and of the Engine API's `NetworkMode`.
    pub fn as_str(&self) -> &str {
        match self {
            Network::Bridge => "bridge",
            Network::Host => "host",
            Network::None => "none",
            Network::Named(name) => name,
        }
    }

    /// Whether the container's ports are the host's own, so none can be published.
    pub fn publishes_nothing(&self) -> bool {
        matches!(self, Network::Host | Network::None)
    }

    /// `host`, `none`, `bridge` or the name of a network; `container:NAME` and Docker's
    /// `default` are refused, each with why.
    pub fn parse(text: &str) -> Result<Network, String> {
        match text {
            "bridge" => return Ok(Network::Bridge),
            "host" => return Ok(Network::Host),
            "none" => return Ok(Network::None),
            "default" => {
                return Err(
                    "`network = \"default\"` is Docker's own default: leave `network` out".into(),
                );
            }
            _ => {}
        }
        if let Some(mode) = ["host", "none", "bridge"]
            .iter()
            .find(|mode| mode.eq_ignore_ascii_case(text))
        {
            return Err(format!(
                "`network = \"{text}\"` is not `{mode}`: the network modes are written in lower case"
            ));
        }
        if text.starts_with("container:") {
            return Err(format!(
                "`network = \"{}\"` joins another container's network; envctl cannot tell that container's life from this one's",
                text.escape_debug()
            ));
        }
        if is_network_name(text) {
            Ok(Network::Named(text.to_string()))
        } else {
            Err(format!(
                "`network = \"{}\"` is not `host`, `none`, `bridge` or a network name (letters, digits, `_`, `.`, `-`, starting with a letter or digit, at most 64)",
                text.escape_debug()
            ))
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Docker's rule for object names (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`), bounded.
fn is_network_name(text: &str) -> bool {
    text.len() <= 64
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// One entry of `devices`: a host device node (or a folder of them, as `/dev/infiniband`)
/// given to the container, as `docker run --device`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub host: String,
    /// The path in the container; the host path unless the profile says otherwise.
    pub container: String,
    /// The cgroup permissions, some of `r`, `w` and `m` (`rwm` unless written).
    pub permissions: String,
}

/// What `--device` grants when the entry says nothing.
pub const DEFAULT_DEVICE_PERMISSIONS: &str = "rwm";

impl Device {
    /// Parses `docker run --device`'s syntax: `HOST[:CONTAINER][:PERMISSIONS]`, where a
    /// second part made only of `r`, `w`, `m` is the permissions (as the docker CLI reads it).
    pub fn parse(spec: &str) -> Result<Device, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        let (host, container, permissions) = match parts.as_slice() {
            [host] => (*host, *host, DEFAULT_DEVICE_PERMISSIONS),
            [host, second] if is_permissions(second) => (*host, *host, *second),
            [host, container] => (*host, *container, DEFAULT_DEVICE_PERMISSIONS),
            [host, container, permissions] => (*host, *container, *permissions),
            _ => {
                return Err(format!(
                    "device `{}` is not HOST[:CONTAINER][:PERMISSIONS]",
                    spec.escape_debug()
                ));
            }
        };
        let container = if container.is_empty() {
            host
        } else {
            container
        };
        check_device_path("host", host)?;
        check_device_path("container", container)?;
        if !is_permissions(permissions) {
            return Err(format!(
                "device permissions `{}` must be some of `r`, `w` and `m`, each once",
                permissions.escape_debug()
            ));
        }
        if is_gpu_device_node(host) {
            return Err(format!(
                "`{host}` is an NVIDIA GPU device node: GPUs are given with `gpus`, which places them and starts the driver's libraries; a device entry would bypass both"
            ));
        }
        Ok(Device {
            host: host.to_string(),
            container: container.to_string(),
            permissions: permissions.to_string(),
        })
    }

    /// Whether the entry is `--device HOST` with nothing else.
    pub fn is_plain(&self) -> bool {
        self.container == self.host && self.permissions == DEFAULT_DEVICE_PERMISSIONS
    }
}

impl fmt::Display for Device {
    /// The shortest `--device` spelling that reads back as the same entry.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.host)?;
        if self.container != self.host {
            write!(formatter, ":{}", self.container)?;
        }
        if self.permissions != DEFAULT_DEVICE_PERMISSIONS {
            write!(formatter, ":{}", self.permissions)?;
        }
        Ok(())
    }
}

impl Serialize for Device {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn is_permissions(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 3
        && text.chars().all(|c| matches!(c, 'r' | 'w' | 'm'))
        && text
            .chars()
            .enumerate()
            .all(|(index, c)| !text[..index].contains(c))
}

/// An absolute, clean path: no `.`/`..` segments, no empty segment, no NUL.
fn check_device_path(side: &str, path: &str) -> Result<(), String> {
    let clean = path.starts_with('/')
        && path.len() > 1
        && !path.contains('\0')
        && path
            .split('/')
            .skip(1)
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..");
    if clean {
        Ok(())
    } else {
        Err(format!(
            "device {side} path `{}` must be an absolute path without `.`, `..` or empty parts, like \"/dev/infiniband\"",
            path.escape_debug()
        ))
    }
}

/// `/dev/nvidia0`, `/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/nvidia-caps/…`: the nodes
/// the NVIDIA runtime gives with a GPU request.
fn is_gpu_device_node(path: &str) -> bool {
    path.starts_with("/dev/nvidia")
}

/// The Linux capabilities `cap_add` may name (capabilities(7)), without the `CAP_` prefix.
pub const CAPABILITIES: [&str; 41] = [
    "AUDIT_CONTROL",
    "AUDIT_READ",
    "AUDIT_WRITE",
    "BLOCK_SUSPEND",
    "BPF",
    "CHECKPOINT_RESTORE",
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "IPC_LOCK",
    "IPC_OWNER",
    "KILL",
    "LEASE",
    "LINUX_IMMUTABLE",
    "MAC_ADMIN",
    "MAC_OVERRIDE",
    "MKNOD",
    "NET_ADMIN",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_RAW",
    "PERFMON",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYSLOG",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_CHROOT",
    "SYS_MODULE",
    "SYS_NICE",
    "SYS_PACCT",
    "SYS_PTRACE",
    "SYS_RAWIO",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "WAKE_ALARM",
];

/// A capability as written (`ipc_lock`, `CAP_IPC_LOCK`, `IPC_LOCK`, `ALL`) in its
/// canonical form without the prefix (`IPC_LOCK`), or why it is none.
pub fn capability(text: &str) -> Result<String, Option<&'static str>> {
    let upper = text.trim().to_ascii_uppercase();
    if upper == "ALL" {
        return Ok(upper);
    }
    let name = upper.strip_prefix("CAP_").unwrap_or(&upper);
    if CAPABILITIES.contains(&name) {
        return Ok(name.to_string());
    }
    // The shared rule compares in lower case.
    let lower: Vec<String> = CAPABILITIES
        .iter()
        .map(|known| known.to_ascii_lowercase())
        .collect();
    let known: Vec<&str> = lower.iter().map(String::as_str).collect();
    Err(crate::suggest::did_you_mean(name, &known)
        .and_then(|found| known.iter().position(|candidate| *candidate == found))
        .map(|index| CAPABILITIES[index]))
}

/// A capability as the docker CLI sends it to the Engine API (`CAP_IPC_LOCK`; `ALL` as is).
pub fn engine_capability(name: &str) -> String {
    if name == "ALL" {
        name.to_string()
    } else {
        format!("CAP_{name}")
    }
}

/// The longest hostname: Linux keeps 64 bytes; 63 is also a DNS label's limit.
pub const MAXIMUM_HOSTNAME: usize = 63;

/// A hostname as RFC 1123 allows it: dot-separated labels of letters, digits and `-`, none
/// starting or ending with `-`, at most 63 characters in all.
pub fn check_hostname(text: &str) -> Result<(), String> {
    let valid = !text.is_empty()
        && text.len() <= MAXIMUM_HOSTNAME
        && text.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`hostname = \"{}\"` is not a hostname: letters, digits and `-` in dot-separated parts, none starting or ending with `-`, at most {MAXIMUM_HOSTNAME} characters",
            text.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks() {
        assert_eq!(Network::parse("host"), Ok(Network::Host));
        assert_eq!(Network::parse("none"), Ok(Network::None));
        assert_eq!(Network::parse("bridge"), Ok(Network::Bridge));
        assert_eq!(
            Network::parse("train-net_1.a"),
            Ok(Network::Named("train-net_1.a".into()))
        );
        for bad in [
            "",
            "default",
            "container:abc",
            "-x",
            "a b",
            "a/b",
            &"n".repeat(65),
        ] {
            assert!(Network::parse(bad).is_err(), "{bad}");
        }
        assert!(Network::Host.publishes_nothing());
        assert!(!Network::Named("x".into()).publishes_nothing());
    }

    #[test]
    fn devices_read_as_docker_reads_them() {
        let device = |spec: &str| Device::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(
            device("/dev/infiniband"),
            Device {
                host: "/dev/infiniband".into(),
                container: "/dev/infiniband".into(),
                permissions: "rwm".into(),
            }
        );
        assert_eq!(device("/dev/fuse:rw").permissions, "rw");
        assert_eq!(device("/dev/fuse:rw").container, "/dev/fuse");
        assert_eq!(device("/dev/sdb:/dev/xvdb").container, "/dev/xvdb");
        assert_eq!(
            device("/dev/sdb:/dev/xvdb:r").to_string(),
            "/dev/sdb:/dev/xvdb:r"
        );
        assert_eq!(device("/dev/infiniband").to_string(), "/dev/infiniband");
        assert!(device("/dev/infiniband").is_plain());
        for bad in [
            "infiniband",
            "/dev/../etc",
            "/dev//x",
            "/",
            "/dev/x:relative",
            "/dev/x:/dev/y:rwx",
            "/dev/x:/dev/y:rr",
            "/dev/x:/dev/y:r:w",
            "/dev/nvidia0",
            "/dev/nvidia-caps/nvidia-cap1",
        ] {
            assert!(Device::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn capabilities_are_canonical() {
        assert_eq!(capability("ipc_lock"), Ok("IPC_LOCK".into()));
        assert_eq!(capability("CAP_SYS_NICE"), Ok("SYS_NICE".into()));
        assert_eq!(capability("all"), Ok("ALL".into()));
        assert_eq!(capability("IPC_LOK"), Err(Some("IPC_LOCK")));
        assert_eq!(capability("zzzzzzzzzz"), Err(None));
        assert_eq!(engine_capability("IPC_LOCK"), "CAP_IPC_LOCK");
        assert_eq!(engine_capability("ALL"), "ALL");
    }

    #[test]
    fn hostnames() {
        for good in ["node-0", "trainer.example.com", "a", "N1"] {
            assert!(check_hostname(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "a..b", "a_b", "a b", &"h".repeat(64)] {
            assert!(check_hostname(bad).is_err(), "{bad}");
        }
    }
}
