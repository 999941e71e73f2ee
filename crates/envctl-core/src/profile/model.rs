//! The resolved profile: plain data that every later stage (doctor, up, export) reads.
//! Nothing here parses or reads files; `validate` builds these from TOML.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::{Serialize, Serializer};

use super::host_access::{Device, Network};
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
    /// How `up` picks the GPUs of `gpus = N`; shown only when it is not the default.
    #[serde(skip_serializing_if = "GpuPlacement::is_default")]
    pub placement: GpuPlacement,
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
    /// The profile's own labels, on the container and in every export.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub labels: BTreeMap<String, String>,
    pub ulimits: BTreeMap<String, Ulimit>,
    /// `docker run --network`; `None` is Docker's default bridge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// `docker run --device`, in the profile's order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub devices: Vec<Device>,
    /// Capabilities added to Docker's default set, canonical without `CAP_` (`IPC_LOCK`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub cap_add: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
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

/// How `up` picks which GPUs a count (`gpus = 2`) gets. Docker alone gives `--gpus 2` the
/// first two GPUs every time, so on a shared host every such container lands on GPUs 0 and
/// 1; `free` picks GPUs no other container holds and pins them by UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuPlacement {
    /// The least used GPUs that no container holds (the default).
    #[default]
    Free,
    /// Docker's own choice: the first N GPUs.
    First,
    /// Like `free`, but never a busy GPU (compute processes or memory in use by no
    /// container that holds it): no room rather than sharing.
    Idle,
}

impl GpuPlacement {
    pub const NAMES: [&'static str; 3] = ["free", "first", "idle"];

    pub fn is_default(&self) -> bool {
        *self == GpuPlacement::Free
    }

    pub fn from_name(name: &str) -> Option<GpuPlacement> {
        match name {
            "free" => Some(GpuPlacement::Free),
            "first" => Some(GpuPlacement::First),
            "idle" => Some(GpuPlacement::Idle),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            GpuPlacement::Free => "free",
            GpuPlacement::First => "first",
            GpuPlacement::Idle => "idle",
        }
    }
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

/// A CUDA release, major.minor (`12.8`): a plain value the facts use too.
pub use crate::facts::versions::CudaVersion;

/// A PyTorch release as `torch.__version__` prints it: `2.8.0`, `2.8.0+cu128`, `2.8.0+cpu`,
/// or a pre-release such as NGC's `2.10.0a0+b4e4ee81d3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchVersion {
    /// The release as semver; PEP 440 pre-releases (`a0`, `rc1`, `.dev2`) become its pre part.
    pub version: semver::Version,
    /// The wheel's CUDA variant from the local part: `cu128`, `cpu`.
    pub variant: Option<String>,
    /// The text as written, for display.
    text: String,
}

impl std::str::FromStr for TorchVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            format!("`{text}` is not a torch version: write it like \"2.8.0\" or \"2.8.0+cu128\"")
        };
        let (public, local) = match text.split_once('+') {
            Some((public, local)) => (public, Some(local)),
            None => (text, None),
        };
        let release_end = public
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(public.len());
        let (release, suffix) = public.split_at(release_end);
        let release = release
            .strip_suffix('.')
            .filter(|_| suffix.starts_with("dev"))
            .unwrap_or(release);
        let numbers: Vec<&str> = release.split('.').collect();
        if numbers.len() != 3
            || numbers
                .iter()
                .any(|number| number.is_empty() || number.len() > 6)
        {
            return Err(invalid());
        }
        let number = |part: &str| part.parse::<u64>().map_err(|_| invalid());
        let mut version = semver::Version::new(
            number(numbers[0])?,
            number(numbers[1])?,
            number(numbers[2])?,
        );
        if !suffix.is_empty() {
            let pre_release = suffix.trim_start_matches('.').to_string();
            let well_formed = ["a", "b", "rc", "dev"]
                .iter()
                .any(|tag| pre_release.starts_with(tag))
                && pre_release
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.');
            if !well_formed {
                return Err(format!(
                    "`{text}` has an unknown pre-release `{suffix}`: PEP 440 writes a0, b1, rc1 or .dev0"
                ));
            }
            version.pre = semver::Prerelease::new(&pre_release).map_err(|_| invalid())?;
        }
        let mut variant = None;
        if let Some(local) = local {
            let valid = !local.is_empty()
                && local
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.');
            if !valid {
                return Err(format!(
                    "`{text}` has an invalid local version `+{local}`: use `+cuXYZ` (like `+cu128`) or `+cpu`"
                ));
            }
            let is_cuda = local.strip_prefix("cu").is_some_and(|digits| {
                (3..=4).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
            });
            if is_cuda || local == "cpu" {
                variant = Some(local.to_string());
            } else if local.starts_with("cu") || local.starts_with("rocm") {
                return Err(format!(
                    "`{text}` has an unknown wheel variant `+{local}`: use `+cuXYZ` (like `+cu128`) or `+cpu`"
                ));
            }
        }
        Ok(TorchVersion {
            version,
            variant,
            text: text.to_string(),
        })
    }
}

impl fmt::Display for TorchVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
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
        let ngc: TorchVersion = "2.10.0a0+b4e4ee81d3"
            .parse()
            .unwrap_or_else(|e: String| panic!("{e}"));
        assert_eq!((ngc.version.minor, ngc.variant.as_deref()), (10, None));
        assert!(ngc.version < semver::Version::new(2, 10, 0));
        assert!("2.9.0.dev20250101+cu128".parse::<TorchVersion>().is_ok());
        assert!("2.8.0x".parse::<TorchVersion>().is_err());
        assert!("2.8.0+CU128".parse::<TorchVersion>().is_err());
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
