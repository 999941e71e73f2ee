//! Just enough of ELF64 (little-endian) to find one section of a shared library by name and
//! read its bytes: the header, the section header table, the section-name string table.
//! Reads through `Read + Seek`, so a 1 GB `libtorch_cuda.so` is never held whole.

use crate::bytes::{u16_at, u32_at, u64_at};

use std::io::{self, Read, Seek, SeekFrom};

use thiserror::Error;

const SECTION_HEADER_SIZE: usize = 64;
const SECTION_NO_BITS: u32 = 8;

#[derive(Debug, Error)]
pub enum ElfError {
    #[error("not an ELF file (no \\x7fELF at its start)")]
    NotElf,
    #[error("not a 64-bit little-endian ELF file (class {class}, data {data})")]
    UnsupportedLayout { class: u8, data: u8 },
    #[error("section header entries of {0} bytes; ELF64 has 64")]
    BadSectionHeaderSize(u16),
    #[error("section-name table index {index} is beyond the {count} sections")]
    BadNameTable { index: u16, count: u16 },
    #[error("no section named {0}")]
    NoSection(String),
    #[error("section {0} has no bytes in the file (SHT_NOBITS)")]
    NoBits(String),
    #[error("section {name} is {size} bytes, more than this machine can address")]
    TooLarge { name: String, size: u64 },
    #[error("reading the ELF file")]
    Io(#[from] io::Error),
}

/// A section's place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub kind: u32,
    pub offset: u64,
    pub size: u64,
}

fn read_exactly<R: Read + Seek>(file: &mut R, offset: u64, size: u64) -> Result<Vec<u8>, ElfError> {
    let length = usize::try_from(size).map_err(|_| ElfError::TooLarge {
        name: format!("at offset {offset:#x}"),
        size,
    })?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = vec![0; length];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Every section of the file, with its name.
pub fn sections<R: Read + Seek>(file: &mut R) -> Result<Vec<Section>, ElfError> {
    let header = read_exactly(file, 0, 64)?;
    if &header[0..4] != b"\x7fELF" {
        return Err(ElfError::NotElf);
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(ElfError::UnsupportedLayout {
            class: header[4],
            data: header[5],
        });
    }
    let table_offset = u64_at(&header, 0x28);
    let entry_size = u16_at(&header, 0x3A);
    let count = u16_at(&header, 0x3C);
    let names_index = u16_at(&header, 0x3E);
    if usize::from(entry_size) != SECTION_HEADER_SIZE {
        return Err(ElfError::BadSectionHeaderSize(entry_size));
    }
    if names_index >= count {
        return Err(ElfError::BadNameTable {
            index: names_index,
            count,
        });
    }
    let table = read_exactly(
        file,
        table_offset,
        u64::from(count) * SECTION_HEADER_SIZE as u64,
    )?;
    let raw: Vec<(u32, u32, u64, u64)> = table
        .chunks_exact(SECTION_HEADER_SIZE)
        .map(|entry| {
            (
                u32_at(entry, 0),
                u32_at(entry, 4),
                u64_at(entry, 24),
                u64_at(entry, 32),
            )
        })
        .collect();
    let (_, _, names_offset, names_size) = raw[usize::from(names_index)];
    let names = read_exactly(file, names_offset, names_size)?;
    Ok(raw
        .into_iter()
        .map(|(name, kind, offset, size)| {
            let start = (name as usize).min(names.len());
            let end = names[start..]
                .iter()
                .position(|byte| *byte == 0)
                .map_or(names.len(), |length| start + length);
            Section {
                name: String::from_utf8_lossy(&names[start..end]).into_owned(),
                kind,
                offset,
                size,
            }
        })
        .collect())
}

/// The bytes of the section called `name`.
pub fn section_bytes<R: Read + Seek>(file: &mut R, name: &str) -> Result<Vec<u8>, ElfError> {
    let section = sections(file)?
        .into_iter()
        .find(|section| section.name == name)
        .ok_or_else(|| ElfError::NoSection(name.to_string()))?;
    if section.kind == SECTION_NO_BITS {
        return Err(ElfError::NoBits(name.to_string()));
    }
    read_exactly(file, section.offset, section.size)
}

/// Builds a minimal ELF64 file for tests: a null section, the named sections, and the
/// section-name table, with the section header table at the end as linkers place it.
#[cfg(test)]
pub fn fixture(named: &[(&str, &[u8])]) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut name_offsets = Vec::new();
    for (name, _) in named {
        name_offsets.push(names.len() as u32);
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    let names_name = names.len() as u32;
    names.extend_from_slice(b".shstrtab\0");

    let mut file = vec![0u8; 64];
    let mut headers = vec![[0u8; SECTION_HEADER_SIZE]];
    let mut add = |file: &mut Vec<u8>, name: u32, kind: u32, bytes: &[u8]| {
        while !file.len().is_multiple_of(8) {
            file.push(0);
        }
        let mut header = [0u8; SECTION_HEADER_SIZE];
        header[0..4].copy_from_slice(&name.to_le_bytes());
        header[4..8].copy_from_slice(&kind.to_le_bytes());
        header[24..32].copy_from_slice(&(file.len() as u64).to_le_bytes());
        header[32..40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        file.extend_from_slice(bytes);
        headers.push(header);
    };
    for ((_, bytes), name) in named.iter().zip(&name_offsets) {
        add(&mut file, *name, 1, bytes);
    }
    add(&mut file, names_name, 3, &names);
    while !file.len().is_multiple_of(8) {
        file.push(0);
    }
    let table_offset = file.len() as u64;
    for header in &headers {
        file.extend_from_slice(header);
    }
    file[0..4].copy_from_slice(b"\x7fELF");
    file[4] = 2;
    file[5] = 1;
    file[6] = 1;
    file[0x28..0x30].copy_from_slice(&table_offset.to_le_bytes());
    file[0x3A..0x3C].copy_from_slice(&(SECTION_HEADER_SIZE as u16).to_le_bytes());
    file[0x3C..0x3E].copy_from_slice(&(headers.len() as u16).to_le_bytes());
    file[0x3E..0x40].copy_from_slice(&((headers.len() - 1) as u16).to_le_bytes());
    file
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn finds_a_section_by_name() {
        let file = fixture(&[(".text", b"code"), (".nv_fatbin", b"fat bytes")]);
        let mut cursor = Cursor::new(file);
        let names: Vec<String> = sections(&mut cursor)
            .unwrap()
            .into_iter()
            .map(|section| section.name)
            .collect();
        assert_eq!(names, ["", ".text", ".nv_fatbin", ".shstrtab"]);
        assert_eq!(
            section_bytes(&mut cursor, ".nv_fatbin").unwrap(),
            b"fat bytes"
        );
    }

    #[test]
    fn a_missing_section_and_a_non_elf_file_are_errors() {
        let mut cursor = Cursor::new(fixture(&[(".text", b"code")]));
        assert!(matches!(
            section_bytes(&mut cursor, ".nv_fatbin"),
            Err(ElfError::NoSection(name)) if name == ".nv_fatbin"
        ));
        let mut not_elf = Cursor::new(vec![b'M'; 128]);
        assert!(matches!(sections(&mut not_elf), Err(ElfError::NotElf)));
        let mut short = Cursor::new(b"\x7fELF".to_vec());
        assert!(matches!(sections(&mut short), Err(ElfError::Io(_))));
    }

    #[test]
    fn a_32_bit_file_is_refused() {
        let mut file = fixture(&[(".text", b"code")]);
        file[4] = 1;
        assert!(matches!(
            sections(&mut Cursor::new(file)),
            Err(ElfError::UnsupportedLayout { class: 1, data: 1 })
        ));
    }
}
