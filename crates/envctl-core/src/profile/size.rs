//! Byte sizes as Docker writes them (`16g`, `512m`, `1.5g`): parsing and display.
//!
//! Hand-written on purpose: Docker's units are binary (`1k` = 1024 bytes) whatever
//! their spelling (`k`, `kb`, `kib`), which the general size crates read as decimal.
//! This follows go-units `RAMInBytes`, the parser behind `docker run --memory`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A size in bytes, written in Docker's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

const UNITS: [(char, u64); 5] = [
    ('b', 1),
    ('k', 1 << 10),
    ('m', 1 << 20),
    ('g', 1 << 30),
    ('t', 1 << 40),
];

impl ByteSize {
    /// Bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let number_end = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(number_end);
        if number.is_empty() {
            return Err(format!(
                "`{text}` is not a size: it must start with a number"
            ));
        }
        let value: f64 = number
            .parse()
            .map_err(|_| format!("`{text}` is not a size: `{number}` is not a number"))?;
        let unit = unit.trim_start().to_ascii_lowercase();
        let multiplier = match unit.as_str() {
            "" => 1,
            _ => {
                let mut chars = unit.chars();
                let first = chars.next().unwrap_or('b');
                let rest: String = chars.collect();
                let known_rest = if first == 'b' {
                    rest.is_empty()
                } else {
                    matches!(rest.as_str(), "" | "b" | "ib")
                };
                match UNITS.iter().find(|(letter, _)| *letter == first) {
                    Some((_, multiplier)) if known_rest => *multiplier,
                    _ => {
                        return Err(format!(
                            "`{text}` has an unknown unit `{unit}`: use b, k, m, g or t (binary units, as docker)"
                        ));
                    }
                }
            }
        };
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(format!("`{text}` is too large"));
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    /// The shortest exact Docker spelling: `16g`, `1536m`, `100b`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (letter, multiplier) in UNITS.iter().rev() {
            if *multiplier > 1 && self.0 >= *multiplier && self.0.is_multiple_of(*multiplier) {
                return write!(formatter, "{}{letter}", self.0 / multiplier);
            }
        }
        write!(formatter, "{}b", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u64::deserialize(deserializer).map(ByteSize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_units_as_binary() {
        assert_eq!("16g".parse::<ByteSize>(), Ok(ByteSize(16 << 30)));
        assert_eq!("512M".parse::<ByteSize>(), Ok(ByteSize(512 << 20)));
        assert_eq!("1.5g".parse::<ByteSize>(), Ok(ByteSize(3 << 29)));
        assert_eq!("64kb".parse::<ByteSize>(), Ok(ByteSize(64 << 10)));
        assert_eq!("2GiB".parse::<ByteSize>(), Ok(ByteSize(2 << 30)));
        assert_eq!("100".parse::<ByteSize>(), Ok(ByteSize(100)));
        assert_eq!("100b".parse::<ByteSize>(), Ok(ByteSize(100)));
        assert_eq!("8 g".parse::<ByteSize>(), Ok(ByteSize(8 << 30)));
    }

    #[test]
    fn rejects_what_docker_rejects() {
        for bad in ["", "g", "16x", "16gbb", "1.2.3g", "-5m", "16 gigs", "bb"] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn displays_shortest_exact_unit() {
        assert_eq!(ByteSize(16 << 30).to_string(), "16g");
        assert_eq!(ByteSize(1536 << 20).to_string(), "1536m");
        assert_eq!(ByteSize(100).to_string(), "100b");
        assert_eq!(ByteSize(67108864).to_string(), "64m");
    }
}
