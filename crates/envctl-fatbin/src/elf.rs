//! Just enough of ELF to find the sections that hold CUDA fat binaries in a shared object:
//! the file header, the section header table and the section-name string table, from bytes
//! in memory ([`fatbin_sections`]) or from a file read in place ([`read_fatbin_sections`]),
//! both through one walk. Every offset and size is checked against the file's length
//! before it is used; a field that points outside it is an [`ElfError`], never a panic.

use std::io::{self, Read, Seek, SeekFrom};

use thiserror::Error;

/// The sections nvcc writes fat binaries into: `.nv_fatbin` for whole-program code, and
/// `__nv_relfatbin` for relocatable device code (`-rdc`), which the runtime also loads.
pub const FATBIN_SECTIONS: [&str; 2] = [".nv_fatbin", "__nv_relfatbin"];

const SECTION_HEADER_SIZE: usize = 64;
/// `SHT_NOBITS`: a section with no bytes in the file (`.bss`).
const SECTION_NO_BITS: u32 = 8;
/// `SHN_XINDEX`: the section-name table's index is in section 0's `sh_link`.
const SECTION_INDEX_EXTENDED: u16 = 0xffff;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ElfError {
    #[error("not an ELF file (no \\x7fELF at its start)")]
    NotElf,
    #[error(
        "an ELF file of class {class} and byte order {data}; only 64-bit little-endian files (x86_64, aarch64) are read"
    )]
    UnsupportedLayout { class: u8, data: u8 },
    #[error("the ELF {what} at offset {offset:#x} runs past the end of the {length}-byte file")]
    Truncated {
        what: &'static str,
        offset: u64,
        length: u64,
    },
    #[error("section header entries of {0} bytes; ELF64 has 64")]
    BadSectionHeaderSize(u16),
    #[error("the section-name table's index {index} is beyond the file's {count} sections")]
    BadNameTable { index: u32, count: u64 },
}

/// One section's bytes, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionBytes<'a> {
    pub name: &'static str,
    /// Where the section starts in the file.
    pub offset: u64,
    pub bytes: &'a [u8],
}

/// A section this reader wants, placed in the file but not yet read.
struct Located {
    name: &'static str,
    offset: u64,
    size: u64,
}

fn truncated(what: &'static str, offset: u64, length: u64) -> ElfError {
    ElfError::Truncated {
        what,
        offset,
        length,
    }
}

/// Checks that `size` bytes at `offset` lie inside a file of `length` bytes.
fn within(offset: u64, size: u64, length: u64, what: &'static str) -> Result<(), ElfError> {
    match offset.checked_add(size) {
        Some(end) if end <= length => Ok(()),
        _ => Err(truncated(what, offset, length)),
    }
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Whether `bytes` start like an ELF file (the scan reads only those).
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// One section header's fields that matter here.
struct Header {
    name: u32,
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

/// The header at `index` of the section header table's bytes (which the caller read
/// whole, so every index below its count is inside them).
fn header_at(table: &[u8], index: usize) -> Header {
    let at = index * SECTION_HEADER_SIZE;
    Header {
        name: u32_at(table, at),
        kind: u32_at(table, at + 4),
        offset: u64_at(table, at + 24),
        size: u64_at(table, at + 32),
        link: u32_at(table, at + 40),
    }
}

/// The name at `offset` of the section-name table, when it is one this reader looks for.
fn wanted_name(names: &[u8], offset: u32) -> Option<&'static str> {
    let rest = names.get(usize::try_from(offset).ok()?..)?;
    let end = rest.iter().position(|byte| *byte == 0)?;
    let name = &rest[..end];
    FATBIN_SECTIONS
        .into_iter()
        .find(|wanted| wanted.as_bytes() == name)
}

/// Finds the fat-binary sections of a file of `length` bytes, reading only its header, its
/// section header table and its section-name table through `read` (offset, size, what),
/// which is called only for ranges already checked to lie inside the file. The one walk
/// behind [`fatbin_sections`] (bytes in memory) and [`read_fatbin_sections`] (a file).
fn locate<E: From<ElfError>>(
    length: u64,
    mut read: impl FnMut(u64, u64) -> Result<Vec<u8>, E>,
) -> Result<Vec<Located>, E> {
    check_identity(length, &mut read)?;
    within(0, 64, length, "file header")?;
    let file_header = read(0, 64)?;
    let table = u64_at(&file_header, 0x28);
    let entry_size = u16_at(&file_header, 0x3a);
    let mut count = u64::from(u16_at(&file_header, 0x3c));
    let names_index = u16_at(&file_header, 0x3e);
    if table == 0 {
        return Ok(Vec::new());
    }
    if usize::from(entry_size) != SECTION_HEADER_SIZE {
        return Err(ElfError::BadSectionHeaderSize(entry_size).into());
    }
    // Extended numbering: 0 sections in the header means the count is section 0's size,
    // and SHN_XINDEX means the name table's index is section 0's link.
    within(table, SECTION_HEADER_SIZE as u64, length, "section header")?;
    let first = header_at(&read(table, SECTION_HEADER_SIZE as u64)?, 0);
    if count == 0 {
        count = first.size;
    }
    let names_index = if names_index == SECTION_INDEX_EXTENDED {
        first.link
    } else {
        u32::from(names_index)
    };
    // Every header must lie in the file: a count that does not is a damaged file, and
    // checking it first bounds the table read below by the file's size.
    let table_size = count
        .checked_mul(SECTION_HEADER_SIZE as u64)
        .ok_or_else(|| truncated("section header table", table, length))?;
    within(table, table_size, length, "section header table")?;
    if u64::from(names_index) >= count {
        return Err(ElfError::BadNameTable {
            index: names_index,
            count,
        }
        .into());
    }
    let headers = read(table, table_size)?;
    let count = headers.len() / SECTION_HEADER_SIZE;
    let names_header = header_at(&headers, names_index as usize);
    within(
        names_header.offset,
        names_header.size,
        length,
        "section-name table",
    )?;
    let names = read(names_header.offset, names_header.size)?;
    located_sections(&headers, count, &names, length).map_err(E::from)
}

/// Checks that the file is ELF, 64-bit and little-endian.
fn check_identity<E: From<ElfError>>(
    length: u64,
    read: &mut impl FnMut(u64, u64) -> Result<Vec<u8>, E>,
) -> Result<(), E> {
    if length < 4 || !is_elf(&read(0, 4)?) {
        return Err(ElfError::NotElf.into());
    }
    within(4, 2, length, "identification")?;
    let identity = read(4, 2)?;
    if identity != [2, 1] {
        return Err(ElfError::UnsupportedLayout {
            class: identity[0],
            data: identity[1],
        }
        .into());
    }
    Ok(())
}

/// The fat-binary sections among the `count` section `headers` (named in `names`), each
/// checked to lie in the file; sections without bytes in the file are left out.
fn located_sections(
    headers: &[u8],
    count: usize,
    names: &[u8],
    length: u64,
) -> Result<Vec<Located>, ElfError> {
    let mut found = Vec::new();
    for index in 0..count {
        let header = header_at(headers, index);
        let Some(name) = wanted_name(names, header.name) else {
            continue;
        };
        if header.kind == SECTION_NO_BITS {
            continue;
        }
        within(header.offset, header.size, length, "fat-binary section")?;
        found.push(Located {
            name,
            offset: header.offset,
            size: header.size,
        });
    }
    Ok(found)
}

/// `bytes[offset..offset + size]`, for a range [`locate`] checked.
fn slice(bytes: &[u8], offset: u64, size: u64) -> Result<&[u8], ElfError> {
    let length = bytes.len() as u64;
    let start = usize::try_from(offset).map_err(|_| truncated("range", offset, length))?;
    let size = usize::try_from(size).map_err(|_| truncated("range", offset, length))?;
    start
        .checked_add(size)
        .and_then(|end| bytes.get(start..end))
        .ok_or_else(|| truncated("range", offset, length))
}

/// The fat-binary sections of an ELF shared object held in memory, in file order; none when
/// it has none (a library without CUDA code). A section without bytes in the file is
/// skipped.
pub fn fatbin_sections(bytes: &[u8]) -> Result<Vec<SectionBytes<'_>>, ElfError> {
    let located = locate(bytes.len() as u64, |offset, size| {
        slice(bytes, offset, size).map(<[u8]>::to_vec)
    })?;
    located
        .into_iter()
        .map(|section| {
            Ok(SectionBytes {
                name: section.name,
                offset: section.offset,
                bytes: slice(bytes, section.offset, section.size)?,
            })
        })
        .collect()
}

/// Reading a file's sections: the file is not one this reader takes, or reading it failed.
#[derive(Debug, Error)]
pub enum ElfFileError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("reading the ELF file")]
    Io(#[from] io::Error),
}

/// One fat-binary section read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSection {
    pub name: &'static str,
    /// Where the section starts in the file.
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// The fat-binary sections of an ELF file read through `Read + Seek`, as
/// [`fatbin_sections`] finds them: only the headers, the name table and those sections are
/// read, so a 1 GB `libtorch_cuda.so` is never held whole.
pub fn read_fatbin_sections<R: Read + Seek>(
    file: &mut R,
) -> Result<Vec<OwnedSection>, ElfFileError> {
    let length = file.seek(SeekFrom::End(0))?;
    let mut read = |offset: u64, size: u64| -> Result<Vec<u8>, ElfFileError> {
        let size = usize::try_from(size).map_err(|_| truncated("range", offset, length))?;
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = vec![0; size];
        file.read_exact(&mut bytes)?;
        Ok(bytes)
    };
    let located = locate(length, &mut read)?;
    located
        .into_iter()
        .map(|section| {
            Ok(OwnedSection {
                name: section.name,
                offset: section.offset,
                bytes: read(section.offset, section.size)?,
            })
        })
        .collect()
}
