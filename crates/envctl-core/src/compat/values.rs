//! The small value types the compatibility matrix is written in: a row's evidence status,
//! compiler targets (`sm_90a`, `compute_120`), torch releases (`2.8`), CUDA wheel variants
//! (`cu128`), and the serde forms for the profile's `CudaVersion`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::version::ComputeCapability;
use crate::profile::model::{CudaVersion, TorchVersion};

/// How well a matrix row is supported, as compat-facts grades it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RowStatus {
    /// Read in a primary source, or measured from a vendor binary.
    #[serde(rename = "verified")]
    Verified,
    /// Read in the primary file itself (PyTorch's build script at a named commit), where no
    /// binary could be measured: as good as the file, but not what a wheel was seen to hold.
    #[serde(rename = "verified (file)")]
    VerifiedFile,
    /// A faithful copy of a primary source, or a maintainer's statement.
    #[serde(rename = "secondary")]
    Secondary,
    /// Follows mechanically from verified rows.
    #[serde(rename = "derived")]
    Derived,
    /// Not confirmed: parsed, but no verdict ever uses such a row.
    #[serde(rename = "UNVERIFIED")]
    Unverified,
}

impl RowStatus {
    /// The spellings a matrix file may use.
    pub const NAMES: [&'static str; 5] = [
        "verified",
        "verified (file)",
        "secondary",
        "derived",
        "UNVERIFIED",
    ];

    /// Whether verdicts may rest on a row with this status.
    pub fn usable(self) -> bool {
        !matches!(self, RowStatus::Unverified)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Verified => "verified",
            RowStatus::VerifiedFile => "verified (file)",
            RowStatus::Secondary => "secondary",
            RowStatus::Derived => "derived",
            RowStatus::Unverified => "UNVERIFIED",
        }
    }
}

impl fmt::Display for RowStatus {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl RowStatus {
    /// What a verdict resting on a row of this status says in its text line, so the
    /// evidence shows without `--json`: ` (derived: not measured)` for a derived row,
    /// ` (secondary: from a copy or a maintainer's statement, not measured)` for a secondary
    /// one, ` (verified from a file: …)` for a row read in a build script, nothing for a verified
    /// row (read in a primary source or measured).
    pub fn caveat(self) -> &'static str {
        match self {
            RowStatus::Verified => "",
            RowStatus::VerifiedFile => {
                " (verified from a file: read in the build script, not measured from a wheel)"
            }
            RowStatus::Secondary => {
                " (secondary: from a copy of the source or a maintainer's statement, not measured)"
            }
            RowStatus::Derived => " (derived: not measured)",
            // No verdict rests on one; named for completeness.
            RowStatus::Unverified => " (UNVERIFIED)",
        }
    }
}

/// The platform a torch wheel is built for: PyPI publishes a `manylinux_*_x86_64` and a
/// `manylinux_*_aarch64` wheel of each release, with different contents (up to 2.10 the
/// aarch64 one is a CPU build; from 2.11 a CUDA build with its own arch list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Platform {
    #[serde(rename = "x86_64")]
    X86_64,
    /// Arm64 servers (SBSA: Grace Hopper, Grace Blackwell, DGX Spark) and Jetson Thor.
    #[serde(rename = "aarch64")]
    Aarch64,
}

impl Platform {
    pub const ALL: [Platform; 2] = [Platform::X86_64, Platform::Aarch64];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::X86_64 => "x86_64",
            Platform::Aarch64 => "aarch64",
        }
    }

    /// The platform this envctl binary was built for, which is the host's: the kernel runs
    /// it natively (an emulated binary, qemu-user, is the exception envctl cannot see).
    pub fn this_binary() -> Option<Platform> {
        Platform::of_machine(std::env::consts::ARCH)
    }

    /// The platform of a machine as the kernel names it (`uname -m`): `x86_64`, and
    /// `aarch64` (Docker's and Debian's `arm64` too). `None` for any other.
    pub fn of_machine(machine: &str) -> Option<Platform> {
        match machine.trim() {
            "x86_64" | "amd64" => Some(Platform::X86_64),
            "aarch64" | "arm64" => Some(Platform::Aarch64),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Platform::of_machine(text).ok_or_else(|| {
            format!("`{text}` is not a platform envctl knows: x86_64 or aarch64 (arm64)")
        })
    }
}

/// Whether a target is machine code (SASS, `sm_XY`) or PTX (`compute_XY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    Real,
    Virtual,
}

/// The suffix of an architecture-specific (`a`) or family (`f`) target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetSuffix {
    /// `sm_90`: runs on the same major with an equal or higher minor.
    Portable,
    /// `sm_90a`: runs on exactly that compute capability.
    ArchitectureSpecific,
    /// `sm_100f`: runs on the same family (same major, equal or higher minor).
    Family,
}

/// A compiler target: `sm_90`, `sm_90a`, `sm_100f`, `compute_120`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    pub kind: TargetKind,
    pub capability: ComputeCapability,
    pub suffix: TargetSuffix,
}

impl Target {
    pub fn real(capability: ComputeCapability) -> Self {
        Target {
            kind: TargetKind::Real,
            capability,
            suffix: TargetSuffix::Portable,
        }
    }

    /// Whether machine code for this target runs on a GPU of `capability`: the cubin case
    /// of the one architecture-reach rule, [`super::reach::target_reach`]. PTX
    /// (`compute_XY`) is not machine code and never counts here.
    pub fn machine_code_runs_on(self, capability: ComputeCapability) -> bool {
        super::reach::target_reach(self, capability) == Ok(super::reach::Via::Cubin)
    }
}

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("`{text}` is not a GPU target like sm_90, sm_90a or compute_90");
        let (kind, rest) = if let Some(rest) = text.strip_prefix("sm_") {
            (TargetKind::Real, rest)
        } else if let Some(rest) = text.strip_prefix("compute_") {
            (TargetKind::Virtual, rest)
        } else {
            return Err(invalid());
        };
        let (digits, suffix) = match rest.strip_suffix('a') {
            Some(digits) => (digits, TargetSuffix::ArchitectureSpecific),
            None => match rest.strip_suffix('f') {
                Some(digits) => (digits, TargetSuffix::Family),
                None => (rest, TargetSuffix::Portable),
            },
        };
        if !(2..=3).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(invalid());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let major = major.parse::<u32>().map_err(|_| invalid())?;
        let minor = minor.parse::<u32>().map_err(|_| invalid())?;
        if major == 0 {
            return Err(invalid());
        }
        Ok(Target {
            kind,
            capability: ComputeCapability::new(major, minor),
            suffix,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            TargetKind::Real => "sm",
            TargetKind::Virtual => "compute",
        };
        let suffix = match self.suffix {
            TargetSuffix::Portable => "",
            TargetSuffix::ArchitectureSpecific => "a",
            TargetSuffix::Family => "f",
        };
        write!(
            formatter,
            "{prefix}_{}{}{suffix}",
            self.capability.major, self.capability.minor
        )
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A torch release series, major.minor (`2.8`): wheels of one series share their arch lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TorchRelease {
    pub major: u64,
    pub minor: u64,
}

impl TorchRelease {
    pub fn of(torch: &TorchVersion) -> Self {
        TorchRelease {
            major: torch.version.major,
            minor: torch.version.minor,
        }
    }
}

impl FromStr for TorchRelease {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("`{text}` is not a torch release like \"2.8\"");
        let (major, minor) = text.split_once('.').ok_or_else(invalid)?;
        let number = |part: &str| {
            if part.is_empty() || part.len() > 4 || !part.chars().all(|c| c.is_ascii_digit()) {
                Err(invalid())
            } else {
                part.parse::<u64>().map_err(|_| invalid())
            }
        };
        Ok(TorchRelease {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl fmt::Display for TorchRelease {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for TorchRelease {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TorchRelease {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A CUDA wheel variant of torch: `cu128` is CUDA 12.8, `cu130` is CUDA 13.0.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVariant(String);

impl CudaVariant {
    /// The variant PyTorch names its CUDA `cuda` wheels with (`12.8` → `cu128`).
    pub fn for_cuda(cuda: CudaVersion) -> Self {
        CudaVariant(format!("cu{}{}", cuda.major, cuda.minor))
    }

    /// The CUDA release the wheel was built with.
    pub fn cuda(&self) -> CudaVersion {
        // Parsing checked the form `cu` + two major digits + one or two minor digits.
        let digits = &self.0[2..];
        let number = |part: &str| part.parse::<u32>().unwrap_or(0);
        CudaVersion {
            major: number(&digits[..2]),
            minor: number(&digits[2..]),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CudaVariant {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let well_formed = text.strip_prefix("cu").is_some_and(|digits| {
            (3..=4).contains(&digits.len())
                && digits.chars().all(|c| c.is_ascii_digit())
                && !digits.starts_with('0')
        });
        if well_formed {
            Ok(CudaVariant(text.to_string()))
        } else {
            Err(format!(
                "`{text}` is not a CUDA wheel variant like cu128 (CUDA 12.8) or cu130"
            ))
        }
    }
}

impl fmt::Display for CudaVariant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl Serialize for CudaVariant {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CudaVariant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The CUDA release a torch build names in its local version: `2.8.0+cu128` → 12.8,
/// `2.9.1+cu130` → 13.0 (`cuXYZ` is CUDA XY.Z). `None` for a build that names none
/// (`2.8.0`, `2.8.0+cpu`, `2.8.0+rocm6.3`); an error for a `cu…` part that is not a CUDA
/// variant (`+cu12`), rather than a guess.
pub fn torch_cuda(torch: &TorchVersion) -> Result<Option<CudaVersion>, String> {
    match torch.variant.as_deref() {
        Some(variant) if variant.starts_with("cu") => variant
            .parse::<CudaVariant>()
            .map(|variant| Some(variant.cuda())),
        _ => Ok(None),
    }
}

/// serde forms for [`CudaVersion`], which the profile model only serialises.
pub mod cuda_form {
    use serde::{Deserialize, Deserializer};

    use crate::profile::model::CudaVersion;

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<CudaVersion, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }

    pub fn optional<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<CudaVersion>, D::Error> {
        deserialize(deserializer).map(Some)
    }
}

/// Whether `text` is a date `YYYY-MM-DD`.
pub fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && is_year_month(&text[..7])
        && text[8..]
            .parse::<u32>()
            .is_ok_and(|day| (1..=31).contains(&day))
}

/// Whether `text` is a month `YYYY-MM`.
pub fn is_year_month(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 7
        && bytes[4] == b'-'
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[5..].iter().all(u8::is_ascii_digit)
        && text[5..]
            .parse::<u32>()
            .is_ok_and(|month| (1..=12).contains(&month))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_display() {
        for text in [
            "sm_90",
            "sm_90a",
            "sm_100f",
            "sm_121a",
            "compute_120",
            "sm_35",
        ] {
            let target: Target = text.parse().unwrap();
            assert_eq!(target.to_string(), text);
        }
        let target: Target = "sm_100f".parse().unwrap();
        assert_eq!(target.capability, ComputeCapability::new(10, 0));
        assert_eq!(target.suffix, TargetSuffix::Family);
        for bad in ["sm_", "sm_9", "sm_1000", "90", "sm_x0", "compute_", "sm_05"] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn machine_code_runs_on_same_major_higher_minor_only() {
        let target = |text: &str| text.parse::<Target>().unwrap();
        let capability = ComputeCapability::new;
        assert!(target("sm_80").machine_code_runs_on(capability(8, 6)));
        assert!(target("sm_86").machine_code_runs_on(capability(8, 9)));
        assert!(target("sm_120").machine_code_runs_on(capability(12, 1)));
        assert!(target("sm_100").machine_code_runs_on(capability(10, 3)));
        assert!(target("sm_100f").machine_code_runs_on(capability(10, 3)));
        assert!(!target("sm_86").machine_code_runs_on(capability(8, 0)));
        assert!(!target("sm_90").machine_code_runs_on(capability(10, 0)));
        assert!(!target("sm_90a").machine_code_runs_on(capability(9, 1)));
        assert!(target("sm_90a").machine_code_runs_on(capability(9, 0)));
        assert!(!target("compute_90").machine_code_runs_on(capability(9, 0)));
    }

    #[test]
    fn variants_map_to_cuda_releases() {
        let variant: CudaVariant = "cu128".parse().unwrap();
        assert_eq!(variant.cuda(), "12.8".parse().unwrap());
        let variant: CudaVariant = "cu130".parse().unwrap();
        assert_eq!(variant.cuda(), "13.0".parse().unwrap());
        let variant: CudaVariant = "cu1210".parse().unwrap();
        assert_eq!(variant.cuda(), "12.10".parse().unwrap());
        assert_eq!(
            CudaVariant::for_cuda("11.8".parse().unwrap()).as_str(),
            "cu118"
        );
        for bad in ["cpu", "cu12", "cu12345", "cuda128", "cu012"] {
            assert!(bad.parse::<CudaVariant>().is_err(), "{bad}");
        }
    }

    #[test]
    fn torch_builds_name_their_cuda() {
        let cuda_of = |text: &str| torch_cuda(&text.parse::<TorchVersion>().unwrap());
        assert_eq!(cuda_of("2.8.0+cu128"), Ok(Some("12.8".parse().unwrap())));
        assert_eq!(cuda_of("2.7.1+cu118"), Ok(Some("11.8".parse().unwrap())));
        assert_eq!(cuda_of("2.7.1+cu126"), Ok(Some("12.6".parse().unwrap())));
        assert_eq!(cuda_of("2.9.1+cu130"), Ok(Some("13.0".parse().unwrap())));
        assert_eq!(cuda_of("2.8.0"), Ok(None));
        assert_eq!(cuda_of("2.8.0+cpu"), Ok(None));
        assert_eq!(cuda_of("2.10.0a0+b4e4ee81d3"), Ok(None));
        // A `cu` part that names no CUDA release is an error, not a guess.
        assert!(cuda_of("2.8.0+cu012").is_err());
    }

    #[test]
    fn torch_releases_order_numerically() {
        let release = |text: &str| text.parse::<TorchRelease>().unwrap();
        assert!(release("2.10") > release("2.9"));
        assert_eq!(release("2.8").to_string(), "2.8");
        assert!("2".parse::<TorchRelease>().is_err());
        assert!("2.x".parse::<TorchRelease>().is_err());
    }

    #[test]
    fn dates_and_months() {
        assert!(is_date("2026-11-29"));
        assert!(!is_date("2026-13-01"));
        assert!(!is_date("29.11.2026"));
        assert!(is_year_month("2028-06"));
        assert!(!is_year_month("June 2028"));
        assert!(!is_year_month("2028-6"));
        assert!(!is_year_month("2028-é"));
        assert!(!is_date("2026-11-é"));
    }
}
