//! The CUDA fat-binary container as nvcc's `fatbinary` writes it into a section: one
//! container per translation unit (or per linked device program), back to back, zero bytes
//! between them for alignment.
//!
//! A container is a 16-byte header — magic 0xBA55ED50 (u32), version 1 (u16), header size
//! (u16), size of the entries that follow (u64) — and its entries. An entry is a header of
//! at least 64 bytes (newer toolkits write 80, 96, 104 or 112; the rest is skipped whole),
//! then its payload:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 2 | kind: 1 PTX, 2 cubin (ELF with SASS) |
//! | 4 | 4 | size of this header |
//! | 8 | 8 | size of the payload (as stored: compressed when compressed) |
//! | 24 | 2 + 2 | code version, minor then major: the PTX ISA version for PTX (8.8) |
//! | 28 | 4 | architecture: 90 for sm_90 |
//! | 40 | 8 | flags: 0x2000 compressed, 0x8000 compressed with zstd, 0x10_0000 `a`, 0x20_0000 `f` |
//!
//! Checked against NVIDIA's `cuobjdump` on real libraries (tests/corpus/fatbin): the PTX ISA
//! version of the header equals the `.version` line of the PTX `cuobjdump -xptx` extracts.
//! Payloads are never decompressed: everything the verdicts need is in the headers.
//! Damage stops the reading of a section where it is found and is kept ([`Damage`]), with
//! every entry read before it: a reader that skipped unknown bytes could silently miss an
//! architecture, so a damaged section can make a verdict unknown, never a pass it did
//! not earn.

use super::{Compression, Entry, EntryKind, Variant};

pub const MAGIC: u32 = 0xBA55_ED50;
pub const HEADER_SIZE: usize = 16;
pub const ENTRY_HEADER_MINIMUM: usize = 64;

pub const KIND_PTX: u16 = 1;
pub const KIND_CUBIN: u16 = 2;

pub const FLAG_COMPRESSED: u64 = 0x2000;
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
pub const FLAG_ARCHITECTURE_SPECIFIC: u64 = 0x10_0000;
pub const FLAG_FAMILY: u64 = 0x20_0000;

/// Where reading a section stopped, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Damage {
    /// Offset in the section.
    pub offset: usize,
    pub what: DamageKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DamageKind {
    /// Bytes that are neither alignment nor a container's magic.
    BadMagic {
        found: u32,
    },
    UnknownVersion {
        version: u16,
    },
    /// A header or a size that runs past the end of its container or section.
    Truncated {
        what: &'static str,
    },
    /// An entry header smaller than the 64 bytes every version writes.
    SmallEntryHeader {
        size: u32,
    },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let offset = self.offset;
        match self.what {
            DamageKind::BadMagic { found } => write!(
                formatter,
                "at offset {offset:#x}: {found:#010x} where a fat binary (magic 0xba55ed50) was expected"
            ),
            DamageKind::UnknownVersion { version } => write!(
                formatter,
                "at offset {offset:#x}: fat binary version {version}, only version 1 is known"
            ),
            DamageKind::Truncated { what } => write!(
                formatter,
                "at offset {offset:#x}: the {what} runs past the end of the bytes that hold it"
            ),
            DamageKind::SmallEntryHeader { size } => write!(
                formatter,
                "at offset {offset:#x}: an entry header of {size} bytes, below the {ENTRY_HEADER_MINIMUM} every version writes"
            ),
        }
    }
}

/// What one section holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub containers: usize,
    pub entries: Vec<Entry>,
    pub damage: Option<Damage>,
}

fn field<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    let slice = bytes.get(at..at.checked_add(N)?)?;
    let mut out = [0; N];
    out.copy_from_slice(slice);
    Some(out)
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    field::<2>(bytes, at).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    field::<4>(bytes, at).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    field::<8>(bytes, at).map(u64::from_le_bytes)
}

/// `start + a + b` when it fits in `limit`.
fn end_within(start: usize, a: usize, b: u64, limit: usize) -> Option<usize> {
    let b = usize::try_from(b).ok()?;
    start
        .checked_add(a)?
        .checked_add(b)
        .filter(|end| *end <= limit)
}

/// Every container and entry of one section's bytes.
pub fn parse_section(section: &[u8]) -> Parsed {
    let mut parsed = Parsed::default();
    let mut position = 0;
    while position < section.len() {
        if section[position] == 0 {
            position += 1;
            continue;
        }
        match parse_container(section, position, &mut parsed.entries) {
            Ok(end) => {
                parsed.containers += 1;
                position = end;
            }
            Err(damage) => {
                parsed.damage = Some(damage);
                break;
            }
        }
    }
    parsed
}

/// Reads the container at `offset` into `entries`; returns where it ends.
fn parse_container(
    section: &[u8],
    offset: usize,
    entries: &mut Vec<Entry>,
) -> Result<usize, Damage> {
    let damage = |what| Damage { offset, what };
    let truncated = |what| damage(DamageKind::Truncated { what });
    let (Some(magic), Some(version), Some(header_size), Some(size)) = (
        u32_at(section, offset),
        u16_at(section, offset + 4),
        u16_at(section, offset + 6),
        u64_at(section, offset + 8),
    ) else {
        return Err(truncated("fat binary header"));
    };
    if magic != MAGIC {
        return Err(damage(DamageKind::BadMagic { found: magic }));
    }
    if version != 1 {
        return Err(damage(DamageKind::UnknownVersion { version }));
    }
    let header_size = usize::from(header_size).max(HEADER_SIZE);
    let end = end_within(offset, header_size, size, section.len())
        .ok_or_else(|| truncated("fat binary"))?;
    let mut at = offset + header_size;
    while at < end {
        let (entry, next) = parse_entry(section, at, end)?;
        entries.push(entry);
        at = next;
    }
    Ok(end)
}

fn parse_entry(section: &[u8], at: usize, end: usize) -> Result<(Entry, usize), Damage> {
    let truncated = |what| Damage {
        offset: at,
        what: DamageKind::Truncated { what },
    };
    let container = &section[..end];
    if end - at < ENTRY_HEADER_MINIMUM {
        return Err(truncated("entry header"));
    }
    let kind = u16_at(container, at).ok_or_else(|| truncated("entry header"))?;
    let header_size = u32_at(container, at + 4).ok_or_else(|| truncated("entry header"))?;
    let payload_size = u64_at(container, at + 8).ok_or_else(|| truncated("entry header"))?;
    let minor = u16_at(container, at + 24).ok_or_else(|| truncated("entry header"))?;
    let major = u16_at(container, at + 26).ok_or_else(|| truncated("entry header"))?;
    let arch = u32_at(container, at + 28).ok_or_else(|| truncated("entry header"))?;
    let flags = u64_at(container, at + 40).ok_or_else(|| truncated("entry header"))?;
    let header_bytes = usize::try_from(header_size).unwrap_or(usize::MAX);
    if header_bytes < ENTRY_HEADER_MINIMUM {
        return Err(Damage {
            offset: at,
            what: DamageKind::SmallEntryHeader { size: header_size },
        });
    }
    let next = end_within(at, header_bytes, payload_size, end).ok_or_else(|| truncated("entry"))?;
    let kind = match kind {
        KIND_PTX => EntryKind::Ptx,
        KIND_CUBIN => EntryKind::Cubin,
        other => EntryKind::Other(other),
    };
    let variant = if flags & FLAG_ARCHITECTURE_SPECIFIC != 0 {
        Variant::ArchitectureSpecific
    } else if flags & FLAG_FAMILY != 0 {
        Variant::Family
    } else {
        Variant::Portable
    };
    let compression = if flags & FLAG_COMPRESSED_ZSTD != 0 {
        Compression::Zstd
    } else if flags & FLAG_COMPRESSED != 0 {
        Compression::Lz4
    } else {
        Compression::None
    };
    let entry = Entry {
        kind,
        arch,
        variant,
        code_version: (major, minor),
        compression,
    };
    Ok((entry, next))
}
