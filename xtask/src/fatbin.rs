//! The CUDA fat binary as nvcc's `fatbinary` writes it into a host library's `.nv_fatbin`
//! section: one fat binary per translation unit, back to back (8-byte aligned), each a
//! 16-byte header (magic 0xBA55ED50, version 1, header size, size of the entries) followed
//! by entries, each with its own header (kind, header size, payload size, architecture,
//! flags) and payload (a cubin ELF, or PTX text; usually compressed).
//!
//! Only the entry headers are read: the architecture and its `a`/`f` variant are there, so
//! a payload is never decompressed. The variant bits were measured, not guessed: a fat
//! binary made by NVIDIA's `fatbinary` 13.0.88 from cubins for sm_100, sm_100a, sm_100f
//! and sm_90a carries 0x10_0000 on the `a` entries and 0x20_0000 on the `f` entry, and
//! `cuobjdump` 13.4.92 names the `a` entries `sm_100a` and `sm_90a` (it prints `f` entries
//! without their suffix, so it cannot tell `sm_100f` from `sm_100`).

use crate::bytes::{u16_at, u32_at, u64_at};

use std::collections::BTreeMap;
use std::fmt;

use thiserror::Error;

pub const MAGIC: u32 = 0xBA55_ED50;
pub const HEADER_SIZE: usize = 16;
/// The smallest entry header; newer toolkits write 80, 104 or 112 bytes (the extra bytes
/// hold options this reader does not need).
pub const ENTRY_HEADER_MINIMUM: usize = 64;

pub const KIND_PTX: u16 = 1;
pub const KIND_CUBIN: u16 = 2;

/// The payload is compressed (LZ4-like, CUDA 11.x/12.x `--compress`).
pub const FLAG_COMPRESSED: u64 = 0x2000;
/// The payload is compressed with zstd (CUDA 12.8+ `--compress-mode`).
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
/// Architecture-specific code: `sm_90a`.
pub const FLAG_ARCHITECTURE_SPECIFIC: u64 = 0x10_0000;
/// Family-specific code: `sm_100f`.
pub const FLAG_FAMILY: u64 = 0x20_0000;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FatbinError {
    #[error(
        "offset {offset:#x} of .nv_fatbin: expected a fat binary (magic 0xBA55ED50), found {found:#010x}"
    )]
    BadMagic { offset: usize, found: u32 },
    #[error(
        "offset {offset:#x} of .nv_fatbin: fat binary version {version}, only version 1 is known"
    )]
    UnknownVersion { offset: usize, version: u16 },
    #[error("offset {offset:#x} of .nv_fatbin: {what} runs past the end of its {container}")]
    Truncated {
        offset: usize,
        what: &'static str,
        container: &'static str,
    },
    #[error(
        "offset {offset:#x} of .nv_fatbin: entry header size {size} is below {ENTRY_HEADER_MINIMUM}"
    )]
    SmallEntryHeader { offset: usize, size: u32 },
    #[error("offset {offset:#x} of .nv_fatbin: entry kind {kind} is neither PTX (1) nor cubin (2)")]
    UnknownKind { offset: usize, kind: u16 },
    #[error("offset {offset:#x} of .nv_fatbin: architecture {arch} is not an sm_XY number")]
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

/// One entry's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub target: Target,
    pub compressed: bool,
    pub payload_size: u64,
}

/// One fat binary: where it starts in the section and its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatbin {
    pub offset: usize,
    pub entries: Vec<Entry>,
}

/// Every fat binary of a `.nv_fatbin` section. Zero bytes between fat binaries are
/// alignment; anything else that is not a fat binary is an error (a reader that skipped
/// unknown bytes could silently miss a whole architecture).
pub fn parse_section(section: &[u8]) -> Result<Vec<Fatbin>, FatbinError> {
    let mut fatbins = Vec::new();
    let mut position = 0;
    while position < section.len() {
        if section[position] == 0 {
            position += 1;
            continue;
        }
        let (fatbin, end) = parse_one(section, position)?;
        fatbins.push(fatbin);
        position = end;
    }
    Ok(fatbins)
}

/// The fat binary at `offset`, and where the next one may start.
fn parse_one(section: &[u8], offset: usize) -> Result<(Fatbin, usize), FatbinError> {
    let truncated = |what| FatbinError::Truncated {
        offset,
        what,
        container: "section",
    };
    if section.len() - offset < HEADER_SIZE {
        return Err(truncated("fat binary header"));
    }
    let magic = u32_at(section, offset);
    if magic != MAGIC {
        return Err(FatbinError::BadMagic {
            offset,
            found: magic,
        });
    }
    let version = u16_at(section, offset + 4);
    if version != 1 {
        return Err(FatbinError::UnknownVersion { offset, version });
    }
    let header_size = usize::from(u16_at(section, offset + 6));
    let entries_size = u64_at(section, offset + 8);
    let end = usize::try_from(entries_size)
        .ok()
        .and_then(|size| offset.checked_add(header_size)?.checked_add(size))
        .filter(|end| *end <= section.len())
        .ok_or_else(|| truncated("fat binary"))?;
    let mut entries = Vec::new();
    let mut at = offset + header_size.max(HEADER_SIZE);
    while at < end {
        let (entry, next) = parse_entry(section, at, end)?;
        entries.push(entry);
        at = next;
    }
    Ok((Fatbin { offset, entries }, end))
}

fn parse_entry(section: &[u8], at: usize, end: usize) -> Result<(Entry, usize), FatbinError> {
    let truncated = |what| FatbinError::Truncated {
        offset: at,
        what,
        container: "fat binary",
    };
    if end - at < ENTRY_HEADER_MINIMUM {
        return Err(truncated("entry header"));
    }
    let kind = match u16_at(section, at) {
        KIND_PTX => Kind::Ptx,
        KIND_CUBIN => Kind::Cubin,
        kind => return Err(FatbinError::UnknownKind { offset: at, kind }),
    };
    let header_size = u32_at(section, at + 4);
    if (header_size as usize) < ENTRY_HEADER_MINIMUM {
        return Err(FatbinError::SmallEntryHeader {
            offset: at,
            size: header_size,
        });
    }
    let payload_size = u64_at(section, at + 8);
    let arch = u32_at(section, at + 28);
    let flags = u64_at(section, at + 40);
    let next = usize::try_from(payload_size)
        .ok()
        .and_then(|size| at.checked_add(header_size as usize)?.checked_add(size))
        .filter(|next| *next <= end)
        .ok_or_else(|| truncated("entry"))?;
    if !(10..1000).contains(&arch) {
        return Err(FatbinError::BadArchitecture { offset: at, arch });
    }
    let variant = if flags & FLAG_ARCHITECTURE_SPECIFIC != 0 {
        Variant::ArchitectureSpecific
    } else if flags & FLAG_FAMILY != 0 {
        Variant::Family
    } else {
        Variant::Portable
    };
    let entry = Entry {
        target: Target {
            kind,
            arch,
            variant,
        },
        compressed: flags & (FLAG_COMPRESSED | FLAG_COMPRESSED_ZSTD) != 0,
        payload_size,
    };
    Ok((entry, next))
}

/// How many fat binaries carry each target (a target twice in one fat binary counts once).
pub fn census(fatbins: &[Fatbin]) -> BTreeMap<Target, usize> {
    let mut counts = BTreeMap::new();
    for fatbin in fatbins {
        let mut seen: Vec<Target> = fatbin.entries.iter().map(|entry| entry.target).collect();
        seen.sort();
        seen.dedup();
        for target in seen {
            *counts.entry(target).or_insert(0) += 1;
        }
    }
    counts
}

/// Builds fat binaries for tests: the inverse of the parser, written from the layout above.
#[cfg(test)]
pub mod fixture {
    use super::*;

    pub const FLAG_64_BIT: u64 = 0x1;
    pub const FLAG_HOST_LINUX: u64 = 0x10;

    /// One entry: kind, architecture, flags, payload; header of `header_size` bytes.
    pub struct FixtureEntry {
        pub kind: u16,
        pub arch: u32,
        pub flags: u64,
        pub header_size: u32,
        pub payload: Vec<u8>,
    }

    impl FixtureEntry {
        pub fn cubin(arch: u32, flags: u64) -> Self {
            FixtureEntry {
                kind: KIND_CUBIN,
                arch,
                flags: flags | FLAG_64_BIT | FLAG_HOST_LINUX,
                header_size: 64,
                payload: b"\x7fELF fake cubin".to_vec(),
            }
        }

        pub fn ptx(arch: u32) -> Self {
            FixtureEntry {
                kind: KIND_PTX,
                arch,
                flags: FLAG_64_BIT | FLAG_HOST_LINUX | FLAG_COMPRESSED_ZSTD,
                header_size: 80,
                payload: format!(".version 8.8\n.target sm_{arch}\n").into_bytes(),
            }
        }
    }

    pub fn fatbin(entries: &[FixtureEntry]) -> Vec<u8> {
        let mut body = Vec::new();
        for entry in entries {
            let mut header = vec![0u8; entry.header_size as usize];
            header[0..2].copy_from_slice(&entry.kind.to_le_bytes());
            header[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            header[4..8].copy_from_slice(&entry.header_size.to_le_bytes());
            header[8..16].copy_from_slice(&(entry.payload.len() as u64).to_le_bytes());
            header[24..26].copy_from_slice(&8u16.to_le_bytes());
            header[26..28].copy_from_slice(&1u16.to_le_bytes());
            header[28..32].copy_from_slice(&entry.arch.to_le_bytes());
            header[40..48].copy_from_slice(&entry.flags.to_le_bytes());
            body.extend_from_slice(&header);
            body.extend_from_slice(&entry.payload);
        }
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        while !out.len().is_multiple_of(8) {
            out.push(0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{FixtureEntry, fatbin};
    use super::*;

    fn names(fatbin: &Fatbin) -> Vec<String> {
        fatbin
            .entries
            .iter()
            .map(|entry| entry.target.to_string())
            .collect()
    }

    #[test]
    fn reads_kinds_architectures_and_variants() {
        let section = fatbin(&[
            FixtureEntry::cubin(90, 0),
            FixtureEntry::cubin(90, FLAG_ARCHITECTURE_SPECIFIC),
            FixtureEntry::cubin(103, FLAG_FAMILY | 0x100_0000),
            FixtureEntry::cubin(100, FLAG_COMPRESSED_ZSTD),
            FixtureEntry::ptx(120),
        ]);
        let fatbins = parse_section(&section).unwrap();
        assert_eq!(fatbins.len(), 1);
        assert_eq!(
            names(&fatbins[0]),
            ["sm_90", "sm_90a", "sm_103f", "sm_100", "compute_120"]
        );
        assert!(fatbins[0].entries[3].compressed);
        assert!(!fatbins[0].entries[0].compressed);
        assert!(fatbins[0].entries[4].compressed);
    }

    #[test]
    fn reads_fat_binaries_back_to_back_with_padding() {
        let mut section = fatbin(&[FixtureEntry::cubin(75, 0), FixtureEntry::cubin(80, 0)]);
        let second_at = section.len() + 8;
        section.extend_from_slice(&[0; 8]);
        section.extend(fatbin(&[FixtureEntry::cubin(80, 0)]));
        let fatbins = parse_section(&section).unwrap();
        assert_eq!(fatbins.len(), 2);
        assert_eq!(fatbins[1].offset, second_at);
        let counts = census(&fatbins);
        let count = |name: &str| {
            counts
                .iter()
                .find(|(target, _)| target.to_string() == name)
                .map(|(_, count)| *count)
        };
        assert_eq!(count("sm_75"), Some(1));
        assert_eq!(count("sm_80"), Some(2));
    }

    #[test]
    fn a_larger_entry_header_is_skipped_whole() {
        let mut entry = FixtureEntry::cubin(120, 0x100_0000);
        entry.header_size = 104;
        let section = fatbin(&[entry, FixtureEntry::cubin(121, FLAG_ARCHITECTURE_SPECIFIC)]);
        let fatbins = parse_section(&section).unwrap();
        assert_eq!(names(&fatbins[0]), ["sm_120", "sm_121a"]);
    }

    #[test]
    fn garbage_is_an_error_with_its_offset() {
        let mut section = fatbin(&[FixtureEntry::cubin(75, 0)]);
        let at = section.len();
        section.extend_from_slice(b"not a fatbin header!");
        assert_eq!(
            parse_section(&section),
            Err(FatbinError::BadMagic {
                offset: at,
                found: u32::from_le_bytes(*b"not ")
            })
        );
    }

    #[test]
    fn truncation_and_unknown_kinds_are_errors() {
        let section = fatbin(&[FixtureEntry::cubin(75, 0)]);
        assert!(matches!(
            parse_section(&section[..section.len() - 12]),
            Err(FatbinError::Truncated { .. })
        ));
        let mut entry = FixtureEntry::cubin(75, 0);
        entry.kind = 7;
        assert!(matches!(
            parse_section(&fatbin(&[entry])),
            Err(FatbinError::UnknownKind { kind: 7, .. })
        ));
        // A header claiming 8 bytes: rejected before its payload is looked for.
        let mut bytes = fatbin(&[FixtureEntry::cubin(75, 0)]);
        bytes[HEADER_SIZE + 4..HEADER_SIZE + 8].copy_from_slice(&8u32.to_le_bytes());
        assert!(matches!(
            parse_section(&bytes),
            Err(FatbinError::SmallEntryHeader { size: 8, .. })
        ));
    }

    #[test]
    fn an_entry_larger_than_its_fat_binary_is_an_error() {
        let mut bytes = fatbin(&[FixtureEntry::cubin(75, 0)]);
        bytes[HEADER_SIZE + 8..HEADER_SIZE + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse_section(&bytes),
            Err(FatbinError::Truncated { what: "entry", .. })
        ));
    }
}
