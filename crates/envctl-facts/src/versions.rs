//! The version values facts carry and every layer compares: a GPU's compute capability
//! (`8.9`, sm_89) and a CUDA release (`12.8`). Plain values on the floor: `compat` and
//! `profile` re-export them, so NVML's facts need neither.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A GPU's compute capability, `8.9` → sm_89.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// `sm_89`.
    pub fn sm(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

impl FromStr for ComputeCapability {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("`{text}` is not a compute capability like 8.9 or sm_89");
        let trimmed = text.trim();
        if let Some(digits) = trimmed
            .strip_prefix("sm_")
            .or_else(|| trimmed.strip_prefix("compute_"))
        {
            let digits = digits.trim_end_matches(['a', 'f']);
            if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(invalid());
            }
            let (major, minor) = digits.split_at(digits.len() - 1);
            return Ok(ComputeCapability {
                major: major.parse().map_err(|_| invalid())?,
                minor: minor.parse().map_err(|_| invalid())?,
            });
        }
        let (major, minor) = trimmed.split_once('.').ok_or_else(invalid)?;
        Ok(ComputeCapability {
            major: major.parse().map_err(|_| invalid())?,
            minor: minor.parse().map_err(|_| invalid())?,
        })
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for ComputeCapability {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ComputeCapability {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A CUDA release, major.minor (`12.8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl FromStr for CudaVersion {
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
