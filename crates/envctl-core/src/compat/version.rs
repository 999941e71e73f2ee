//! Version types the matrix and the verdicts compare: NVIDIA driver versions and GPU
//! compute capabilities.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An NVIDIA driver version: `550.54.15`, `570.26`, `535.183.01` (compared numerically,
/// component by component; a missing component is 0).
#[derive(Debug, Clone)]
pub struct DriverVersion {
    pub components: Vec<u32>,
    text: String,
}

impl DriverVersion {
    /// The branch, e.g. 550 for 550.54.15.
    pub fn branch(&self) -> u32 {
        self.components.first().copied().unwrap_or(0)
    }
}

impl PartialEq for DriverVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for DriverVersion {}

impl PartialOrd for DriverVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DriverVersion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let length = self.components.len().max(other.components.len());
        let padded = |version: &DriverVersion| {
            let mut components = version.components.clone();
            components.resize(length, 0);
            components
        };
        padded(self).cmp(&padded(other))
    }
}

impl FromStr for DriverVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let components: Result<Vec<u32>, _> = trimmed.split('.').map(str::parse::<u32>).collect();
        match components {
            Ok(components) if (1..=4).contains(&components.len()) => Ok(DriverVersion {
                components,
                text: trimmed.to_string(),
            }),
            _ => Err(format!(
                "`{text}` is not an NVIDIA driver version like 550.54.15"
            )),
        }
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl Serialize for DriverVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DriverVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A GPU's compute capability: a plain value of the facts NVML gives, judged here.
pub use crate::facts::versions::ComputeCapability;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_compare_numerically() {
        let parse = |text: &str| {
            text.parse::<DriverVersion>()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(parse("570.26") < parse("570.124.06"));
        assert!(parse("535.183.01") > parse("535.54.03"));
        assert_eq!(parse("580.0"), parse("580"));
        assert_eq!(parse("550.54.15").branch(), 550);
        assert!("abc".parse::<DriverVersion>().is_err());
        assert!("".parse::<DriverVersion>().is_err());
    }

    #[test]
    fn compute_capabilities_parse_both_spellings() {
        assert_eq!("8.9".parse(), Ok(ComputeCapability::new(8, 9)));
        assert_eq!("sm_120".parse(), Ok(ComputeCapability::new(12, 0)));
        assert_eq!("sm_90a".parse(), Ok(ComputeCapability::new(9, 0)));
        assert_eq!(ComputeCapability::new(10, 0).sm(), "sm_100");
        assert!("89".parse::<ComputeCapability>().is_err());
    }
}
