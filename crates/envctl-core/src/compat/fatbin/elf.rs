//! Just enough of ELF to find the sections that hold CUDA fat binaries in a shared object's
//! bytes: the file header, the section header table and the section-name string table.
//! Every offset and size is checked against the bytes before it is used; a field that
//! points outside them is an [`ElfError`], never a panic.

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
        length: usize,
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

fn read<const N: usize>(
    bytes: &[u8],
    offset: u64,
    what: &'static str,
) -> Result<[u8; N], ElfError> {
    let truncated = || ElfError::Truncated {
        what,
        offset,
        length: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| truncated())?;
    let end = start.checked_add(N).ok_or_else(truncated)?;
    let slice = bytes.get(start..end).ok_or_else(truncated)?;
    let mut out = [0; N];
    out.copy_from_slice(slice);
    Ok(out)
}

fn u16_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u16, ElfError> {
    read::<2>(bytes, offset, what).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u32, ElfError> {
    read::<4>(bytes, offset, what).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u64, ElfError> {
    read::<8>(bytes, offset, what).map(u64::from_le_bytes)
}

fn slice<'a>(
    bytes: &'a [u8],
    offset: u64,
    size: u64,
    what: &'static str,
) -> Result<&'a [u8], ElfError> {
    let truncated = || ElfError::Truncated {
        what,
        offset,
        length: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| truncated())?;
    let size = usize::try_from(size).map_err(|_| truncated())?;
    let end = start.checked_add(size).ok_or_else(truncated)?;
    bytes.get(start..end).ok_or_else(truncated)
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

fn header_at(bytes: &[u8], table: u64, index: u64) -> Result<Header, ElfError> {
    let what = "section header";
    let at = index
        .checked_mul(SECTION_HEADER_SIZE as u64)
        .and_then(|relative| table.checked_add(relative))
        .ok_or(ElfError::Truncated {
            what,
            offset: table,
            length: bytes.len(),
        })?;
    // Read the whole header first, so a header cut short is one error at its start.
    slice(bytes, at, SECTION_HEADER_SIZE as u64, what)?;
    Ok(Header {
        name: u32_at(bytes, at, what)?,
        kind: u32_at(bytes, at + 4, what)?,
        offset: u64_at(bytes, at + 24, what)?,
        size: u64_at(bytes, at + 32, what)?,
        link: u32_at(bytes, at + 40, what)?,
    })
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

/// The fat-binary sections of an ELF shared object, in file order; none when it has none
/// (a library without CUDA code). A section without bytes in the file is skipped.
pub fn fatbin_sections(bytes: &[u8]) -> Result<Vec<SectionBytes<'_>>, ElfError> {
    if !is_elf(bytes) {
        return Err(ElfError::NotElf);
    }
    let identity = read::<2>(bytes, 4, "identification")?;
    if identity != [2, 1] {
        return Err(ElfError::UnsupportedLayout {
            class: identity[0],
            data: identity[1],
        });
    }
    let table = u64_at(bytes, 0x28, "file header")?;
    let entry_size = u16_at(bytes, 0x3a, "file header")?;
    let mut count = u64::from(u16_at(bytes, 0x3c, "file header")?);
    let names_index = u16_at(bytes, 0x3e, "file header")?;
    if table == 0 {
        return Ok(Vec::new());
    }
    if usize::from(entry_size) != SECTION_HEADER_SIZE {
        return Err(ElfError::BadSectionHeaderSize(entry_size));
    }
    // Extended numbering: 0 sections in the header means the count is section 0's size,
    // and SHN_XINDEX means the name table's index is section 0's link.
    let first = header_at(bytes, table, 0)?;
    if count == 0 {
        count = first.size;
    }
    let names_index = if names_index == SECTION_INDEX_EXTENDED {
        first.link
    } else {
        u32::from(names_index)
    };
    // Every header must lie in the file: a count that does not is a damaged file, and
    // checking it first bounds the loop below by the file's size.
    let table_size = count
        .checked_mul(SECTION_HEADER_SIZE as u64)
        .ok_or(ElfError::Truncated {
            what: "section header table",
            offset: table,
            length: bytes.len(),
        })?;
    slice(bytes, table, table_size, "section header table")?;
    if u64::from(names_index) >= count {
        return Err(ElfError::BadNameTable {
            index: names_index,
            count,
        });
    }
    let names_header = header_at(bytes, table, u64::from(names_index))?;
    let names = slice(
        bytes,
        names_header.offset,
        names_header.size,
        "section-name table",
    )?;
    let mut found = Vec::new();
    for index in 0..count {
        let header = header_at(bytes, table, index)?;
        let Some(name) = wanted_name(names, header.name) else {
            continue;
        };
        if header.kind == SECTION_NO_BITS {
            continue;
        }
        found.push(SectionBytes {
            name,
            offset: header.offset,
            bytes: slice(bytes, header.offset, header.size, "fat-binary section")?,
        });
    }
    Ok(found)
}
