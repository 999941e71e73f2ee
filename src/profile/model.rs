//! The resolved profile: plain data that every later stage (doctor, up, export) reads.
//! Nothing here parses or reads files; `validate` builds these from TOML.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::{Serialize, Serializer};

use super::image::ImageReference;
use super::size::ByteSize;

/// A profile after `extends` is applied and every value is checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub image: ImageReference,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    pub gpus: GpuRequest,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shm_size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipc: Option<Ipc>,
    pub ports: Vec<PortBinding>,
    pub mounts: Vec<Mount>,
    pub env: BTreeMap<String, String>,
    pub ulimits: BTreeMap<String, Ulimit>,
    pub stack: Stack,
    pub commands: BTreeMap<String, Vec<String>>,
}

/// Which GPUs the container gets, in the forms `docker run --gpus` knows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GpuRequest {
    /// Every GPU of the host (`--gpus all`).
    All,
    /// No GPU; the default when a profile does not say.
    #[default]
    None,
    /// Every GPU when the host has some; run without when it has none.
    Optional,
    /// The first N GPUs (`--gpus 2`).
    Count(u32),
    /// Specific GPUs by index, GPU UUID or MIG UUID (`--gpus '"device=0,1"'`).
    Devices(Vec<String>),
}

impl GpuRequest {
    /// Whether the profile asks for at least one GPU (optional counts as asking).
    pub fn wants_gpus(&self) -> bool {
        !matches!(self, GpuRequest::None)
    }
}

impl fmt::Display for GpuRequest {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuRequest::All => formatter.write_str("all"),
            GpuRequest::None => formatter.write_str("none"),
            GpuRequest::Optional => formatter.write_str("optional"),
            GpuRequest::Count(count) => write!(formatter, "{count}"),
            GpuRequest::Devices(devices) => write!(formatter, "[{}]", devices.join(", ")),
        }
    }
}

impl Serialize for GpuRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            GpuRequest::Count(count) => serializer.serialize_u32(*count),
            GpuRequest::Devices(devices) => devices.serialize(serializer),
            other => serializer.collect_str(other),
        }
    }
}

/// The IPC namespace mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ipc {
    Private,
    Shareable,
    Host,
}

impl Ipc {
    pub const NAMES: [&'static str; 3] = ["private", "shareable", "host"];

    pub fn as_str(self) -> &'static str {
        match self {
            Ipc::Private => "private",
            Ipc::Shareable => "shareable",
            Ipc::Host => "host",
        }
    }
}

/// Transport protocol of a published port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// A port or an inclusive range of ports (`8000-8010`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    pub start: u16,
    pub end: u16,
}

impl PortRange {
    pub fn single(port: u16) -> Self {
        PortRange {
            start: port,
            end: port,
        }
    }

    pub fn len(self) -> u32 {
        u32::from(self.end - self.start) + 1
    }

    pub fn is_empty(self) -> bool {
        false
    }

    pub fn overlaps(self, other: PortRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end {
            write!(formatter, "{}", self.start)
        } else {
            write!(formatter, "{}-{}", self.start, self.end)
        }
    }
}

impl Serialize for PortRange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.start == self.end {
            serializer.serialize_u16(self.start)
        } else {
            serializer.collect_str(self)
        }
    }
}

/// One published port (or range). `host_ip` is 127.0.0.1 unless the profile wrote one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortBinding {
    pub host_ip: IpAddr,
    /// `None` lets Docker choose a free host port.
    pub host: Option<PortRange>,
    pub container: PortRange,
    pub protocol: Protocol,
}

impl fmt::Display for PortBinding {
    /// Docker's short syntax, always with the host IP: `127.0.0.1:8888:8888/tcp`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host_ip {
            IpAddr::V4(address) => write!(formatter, "{address}:")?,
            IpAddr::V6(address) => write!(formatter, "[{address}]:")?,
        }
        if let Some(host) = self.host {
            write!(formatter, "{host}")?;
        }
        write!(formatter, ":{}/{}", self.container, self.protocol.as_str())
    }
}

/// What a mount's source is: a host path or a named volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountKind {
    Bind,
    Volume,
}

/// A bind mount or named volume. Relative sources stay relative here; `up` resolves them
/// against the working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    #[serde(rename = "type")]
    pub kind: MountKind,
    pub source: String,
    pub target: String,
    pub read_only: bool,
}

impl fmt::Display for Mount {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}", self.source, self.target)?;
        if self.read_only {
            formatter.write_str(":ro")?;
        }
        Ok(())
    }
}

/// A resource limit; -1 is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ulimit {
    pub soft: i64,
    pub hard: i64,
}

/// The ulimit names Docker accepts (`docker run --ulimit`).
pub const ULIMIT_NAMES: [&str; 15] = [
    "core",
    "cpu",
    "data",
    "fsize",
    "locks",
    "memlock",
    "msgqueue",
    "nice",
    "nofile",
    "nproc",
    "rss",
    "rtprio",
    "rttime",
    "sigpending",
    "stack",
];

/// What the image holds, as the profile states it; doctor checks it against the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stack {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<u32>,
}

impl Stack {
    pub fn is_empty(&self) -> bool {
        self.cuda.is_none() && self.torch.is_none() && self.cudnn.is_none()
    }
}

/// A CUDA release, major.minor (`12.8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl std::str::FromStr for CudaVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid =
            || format!("`{text}` is not a CUDA version: write major.minor, like \"12.8\"");
        let (major, minor) = text.split_once('.').ok_or_else(invalid)?;
        let number = |part: &str| {
            if part.is_empty() || part.len() > 3 || !part.chars().all(|c| c.is_ascii_digit()) {
                Err(invalid())
            } else {
                part.parse::<u32>().map_err(|_| invalid())
            }
        };
        Ok(CudaVersion {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for CudaVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A PyTorch release with its optional wheel variant: `2.8.0`, `2.8.0+cu128`, `2.8.0+cpu`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchVersion {
    pub version: semver::Version,
    /// `cu128`, `cpu`.
    pub variant: Option<String>,
}

impl std::str::FromStr for TorchVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (version, variant) = match text.split_once('+') {
            Some((version, variant)) => (version, Some(variant)),
            None => (text, None),
        };
        let version = semver::Version::parse(version).map_err(|error| {
            format!("`{text}` is not a torch version ({error}): write it like \"2.8.0\" or \"2.8.0+cu128\"")
        })?;
        if let Some(variant) = variant {
            let cuda_digits = variant.strip_prefix("cu");
            let valid = variant == "cpu"
                || cuda_digits.is_some_and(|digits| {
                    (3..=4).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
                });
            if !valid {
                return Err(format!(
                    "`{text}` has an unknown wheel variant `+{variant}`: use `+cuXYZ` (like `+cu128`) or `+cpu`"
                ));
            }
        }
        Ok(TorchVersion {
            version,
            variant: variant.map(str::to_string),
        })
    }
}

impl fmt::Display for TorchVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.version)?;
        if let Some(variant) = &self.variant {
            write!(formatter, "+{variant}")?;
        }
        Ok(())
    }
}

impl Serialize for TorchVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_display() {
        assert_eq!(
            "12.8".parse::<CudaVersion>(),
            Ok(CudaVersion {
                major: 12,
                minor: 8
            })
        );
        assert!("12".parse::<CudaVersion>().is_err());
        assert!("12.8.1".parse::<CudaVersion>().is_err());
        assert!("a.b".parse::<CudaVersion>().is_err());
        let torch: TorchVersion = "2.8.0+cu128"
            .parse()
            .unwrap_or_else(|e: String| panic!("{e}"));
        assert_eq!(torch.to_string(), "2.8.0+cu128");
        assert!("2.8".parse::<TorchVersion>().is_err());
        assert!("2.8.0+rocm6".parse::<TorchVersion>().is_err());
        assert!("2.8.0+cpu".parse::<TorchVersion>().is_ok());
    }

    #[test]
    fn port_binding_displays_docker_syntax() {
        let binding = PortBinding {
            host_ip: "::1".parse().unwrap_or_else(|_| panic!("ip")),
            host: Some(PortRange {
                start: 8000,
                end: 8001,
            }),
            container: PortRange {
                start: 9000,
                end: 9001,
            },
            protocol: Protocol::Udp,
        };
        assert_eq!(binding.to_string(), "[::1]:8000-8001:9000-9001/udp");
    }
}
