//! The census of a library's `.nv_fatbin` section in the xtask's own terms: which targets
//! (`sm_90a`, `compute_120`) how many fat binaries carry. The section is read by the
//! `envctl-fatbin` crate (crates/envctl-fatbin), the same reader envctl's image scan uses;
//! what is here is the stricter reading a measurement needs: an entry whose kind or
//! architecture number is not one nvcc writes is an error, not a target left unnamed, since
//! a matrix row must not rest on a census with holes.
//!
//! The variant bits were measured, not guessed: a fat binary made by NVIDIA's `fatbinary`
//! 13.0.88 from cubins for sm_100, sm_100a, sm_100f and sm_90a carries 0x10_0000 on the `a`
//! entries and 0x20_0000 on the `f` entry, and `cuobjdump` 13.4.92 names the `a` entries
//! `sm_100a` and `sm_90a` (it prints `f` entries without their suffix, so it cannot tell
//! `sm_100f` from `sm_100`).

use std::collections::BTreeMap;
use std::fmt;

use envctl_fatbin::container::{self, Damage};
use envctl_fatbin::{Entry, EntryKind};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FatbinError {
    #[error("the .nv_fatbin section is damaged {0}")]
    Damaged(Damage),
    #[error(
        "the fat binary at offset {offset:#x} of .nv_fatbin has an entry of kind {kind}, neither PTX (1) nor cubin (2)"
    )]
    UnknownKind { offset: usize, kind: u16 },
    #[error(
        "the fat binary at offset {offset:#x} of .nv_fatbin has an entry for architecture {arch}, not an sm_XY number"
    )]
    BadArchitecture { offset: usize, arch: u32 },
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Ptx,
    Cubin,
}

/// The suffix of the architecture: none, `a` (architecture-specific) or `f` (family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    Portable,
    ArchitectureSpecific,
    Family,
}

/// A target as nvcc names it: `sm_90a` for a cubin, `compute_120` for PTX. Orders by
/// kind, then architecture number, then variant (sm_90 < sm_90a < sm_100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub kind: Kind,
    pub arch: u32,
    pub variant: Variant,
}

impl fmt::Display for Target {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            Kind::Ptx => "compute",
            Kind::Cubin => "sm",
        };
        let suffix = match self.variant {
            Variant::Portable => "",
            Variant::ArchitectureSpecific => "a",
            Variant::Family => "f",
        };
        write!(formatter, "{prefix}_{}{suffix}", self.arch)
    }
}

/// The xtask's target of an entry the crate read, or why it is none.
fn target_of(entry: &Entry, offset: usize) -> Result<Target, FatbinError> {
    let kind = match entry.kind {
        EntryKind::Ptx => Kind::Ptx,
        EntryKind::Cubin => Kind::Cubin,
        EntryKind::Other(kind) => return Err(FatbinError::UnknownKind { offset, kind }),
    };
    if !entry.has_capability() {
        return Err(FatbinError::BadArchitecture {
            offset,
            arch: entry.arch,
        });
    }
    let variant = match entry.variant {
        envctl_fatbin::Variant::Portable => Variant::Portable,
        envctl_fatbin::Variant::ArchitectureSpecific => Variant::ArchitectureSpecific,
        envctl_fatbin::Variant::Family => Variant::Family,
    };
    Ok(Target {
        kind,
        arch: entry.arch,
        variant,
    })
}

/// How many fat binaries of a `.nv_fatbin` section carry each target (a target twice in one
/// fat binary counts once), and how many fat binaries there are. Damage anywhere is an
/// error: a census that skipped bytes could silently miss a whole architecture.
pub fn census(section: &[u8]) -> Result<(BTreeMap<Target, usize>, usize), FatbinError> {
    let parsed = container::parse_section(section);
    if let Some(damage) = parsed.damage {
        return Err(FatbinError::Damaged(damage));
    }
    let mut counts = BTreeMap::new();
    for fatbin in &parsed.containers {
        let mut seen = fatbin
            .entries
            .iter()
            .map(|entry| target_of(entry, fatbin.offset))
            .collect::<Result<Vec<Target>, FatbinError>>()?;
        seen.sort();
        seen.dedup();
        for target in seen {
            *counts.entry(target).or_insert(0) += 1;
        }
    }
    Ok((counts, parsed.containers.len()))
}

#[cfg(test)]
mod tests {
    use envctl_fatbin::container::DamageKind;
    use envctl_fatbin::fixture::{FixtureEntry, container};

    use super::*;

    fn count(counts: &BTreeMap<Target, usize>, name: &str) -> Option<usize> {
        counts
            .iter()
            .find(|(target, _)| target.to_string() == name)
            .map(|(_, count)| *count)
    }

    #[test]
    fn counts_fat_binaries_per_target_with_variants() {
        let mut section = container(&[
            FixtureEntry::cubin(75),
            FixtureEntry::cubin(80),
            FixtureEntry::cubin(80),
            FixtureEntry::cubin(90).specific(),
            FixtureEntry::cubin(103).family(),
            FixtureEntry::ptx(120, (8, 8)),
        ]);
        section.extend_from_slice(&[0; 8]);
        section.extend(container(&[FixtureEntry::cubin(80).zstd()]));
        let (counts, fatbins) = census(&section).unwrap();
        assert_eq!(fatbins, 2);
        let names: Vec<String> = counts.keys().map(Target::to_string).collect();
        assert_eq!(
            names,
            ["compute_120", "sm_75", "sm_80", "sm_90a", "sm_103f"]
        );
        assert_eq!(count(&counts, "sm_80"), Some(2));
        assert_eq!(count(&counts, "sm_75"), Some(1));
    }

    #[test]
    fn damage_unknown_kinds_and_odd_architectures_are_errors() {
        let mut section = container(&[FixtureEntry::cubin(75)]);
        let at = section.len();
        section.extend_from_slice(b"not a fatbin header!");
        assert_eq!(
            census(&section),
            Err(FatbinError::Damaged(Damage {
                offset: at,
                what: DamageKind::BadMagic {
                    found: u32::from_le_bytes(*b"not ")
                }
            }))
        );
        let mut entry = FixtureEntry::cubin(75);
        entry.kind = 7;
        assert!(matches!(
            census(&container(&[entry])),
            Err(FatbinError::UnknownKind { kind: 7, offset: 0 })
        ));
        let mut entry = FixtureEntry::cubin(75);
        entry.arch = 5;
        assert!(matches!(
            census(&container(&[entry])),
            Err(FatbinError::BadArchitecture { arch: 5, .. })
        ));
    }
}
