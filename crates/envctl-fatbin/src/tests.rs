//! The readers on synthetic fat binaries, ELF files and tar archives: the edge cases real
//! libraries rarely show (several containers, damage at every length, odd ELF headers).

use std::io::Cursor;

use crate::container::{DamageKind, parse_section};
use crate::elf::{ElfError, ElfFileError, fatbin_sections, read_fatbin_sections};
use crate::fixture::{FixtureEntry, container, elf, tar};
use crate::ptx_isa::cuda_release_of_ptx_isa;
use crate::tar::{EntryType, TarReader};
use crate::{Compression, EntryKind, PtxIsa, Variant};

#[test]
fn entries_keep_their_container_kind_variant_and_compression() {
    let mut section = container(&[
        FixtureEntry::cubin(80),
        FixtureEntry::cubin(90).specific(),
        FixtureEntry::ptx(120, (8, 7)),
    ]);
    let second_at = section.len() + 8;
    section.extend_from_slice(&[0; 8]);
    section.extend(container(&[FixtureEntry::cubin(100).family().zstd()]));
    let parsed = parse_section(&section);
    assert!(parsed.damage.is_none());
    assert_eq!(parsed.containers.len(), 2);
    assert_eq!(parsed.containers[0].offset, 0);
    assert_eq!(parsed.containers[1].offset, second_at);
    assert_eq!(parsed.containers[0].entries.len(), 3);
    let second = parsed.containers[1].entries[0];
    assert_eq!(
        (second.kind, second.arch, second.variant, second.compression),
        (EntryKind::Cubin, 100, Variant::Family, Compression::Zstd)
    );
    let ptx = parsed.containers[0].entries[2];
    assert_eq!(ptx.ptx_isa(), Some(PtxIsa { major: 8, minor: 7 }));
    assert_eq!(ptx.compression, Compression::Lz4);
    assert_eq!(
        parsed.containers[0].entries[1].variant,
        Variant::ArchitectureSpecific
    );
    assert_eq!(parsed.entries().count(), 4);
}

#[test]
fn a_damaged_container_keeps_the_entries_read_before_the_damage() {
    let whole = container(&[FixtureEntry::cubin(80), FixtureEntry::cubin(90)]);
    // The second entry's header claims 8 bytes: the first entry is kept, as partial.
    let second = 16 + 64 + FixtureEntry::cubin(80).payload.len();
    let mut damaged = whole.clone();
    damaged[second + 4..second + 8].copy_from_slice(&8u32.to_le_bytes());
    let parsed = parse_section(&damaged);
    assert!(parsed.containers.is_empty());
    assert_eq!(parsed.partial.len(), 1);
    assert_eq!(parsed.partial[0].arch, 80);
    let damage = parsed.damage.unwrap();
    assert_eq!(damage.offset, second);
    assert_eq!(damage.what, DamageKind::SmallEntryHeader { size: 8 });
    // A cut container is damage at its start, before any entry is read.
    let parsed = parse_section(&whole[..whole.len() - 12]);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::Truncated { what: "fat binary" })
    );
    for cut in 0..whole.len() {
        let parsed = parse_section(&whole[..cut]);
        assert!(parsed.entries().count() <= 2, "cut at {cut}");
        if parsed.containers.is_empty() && whole[..cut].iter().any(|byte| *byte != 0) {
            assert!(parsed.damage.is_some(), "cut at {cut}");
        }
    }
}

#[test]
fn unknown_kinds_and_architectures_are_kept_as_written() {
    let mut odd = FixtureEntry::cubin(80);
    odd.kind = 7;
    let mut no_arch = FixtureEntry::cubin(0);
    no_arch.arch = 5000;
    let parsed = parse_section(&container(&[odd, no_arch]));
    let entries: Vec<_> = parsed.entries().collect();
    assert_eq!(entries[0].kind, EntryKind::Other(7));
    assert!(entries[0].has_capability());
    assert!(!entries[1].has_capability());
}

#[test]
fn wrong_magic_keeps_what_came_before_and_says_where() {
    let mut section = container(&[FixtureEntry::cubin(80)]);
    let at = section.len();
    section.extend_from_slice(b"garbage, not a container");
    let parsed = parse_section(&section);
    assert_eq!(parsed.containers.len(), 1);
    assert_eq!(parsed.entries().count(), 1);
    let damage = parsed.damage.unwrap();
    assert_eq!(damage.offset, at);
    assert_eq!(
        damage.what,
        DamageKind::BadMagic {
            found: u32::from_le_bytes(*b"garb")
        }
    );
    assert!(damage.to_string().contains("0xba55ed50"));
}

#[test]
fn sizes_that_overflow_are_damage() {
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let parsed = parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::Truncated { what: "fat binary" })
    );
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let parsed = parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::Truncated { what: "entry" })
    );
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
    let parsed = parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::SmallEntryHeader { size: 8 })
    );
}

#[test]
fn ptx_isa_versions_map_to_the_cuda_release_that_introduced_them() {
    let cuda = |major, minor| {
        cuda_release_of_ptx_isa(PtxIsa { major, minor })
            .map(|(major, minor)| format!("{major}.{minor}"))
    };
    assert_eq!(cuda(8, 8).as_deref(), Some("12.9"));
    assert_eq!(cuda(7, 8).as_deref(), Some("11.8"));
    assert_eq!(cuda(9, 0).as_deref(), Some("13.0"));
    assert_eq!(cuda(9, 9), None);
}

#[test]
fn elf_sections_in_memory_and_from_a_file_agree() {
    let loaded = container(&[FixtureEntry::cubin(80)]);
    let relocatable = container(&[FixtureEntry::cubin(90)]);
    let file = elf(&[
        (".text", b"host code"),
        (".nv_fatbin", &loaded),
        ("__nv_relfatbin", &relocatable),
    ]);
    let in_memory = fatbin_sections(&file).unwrap();
    let from_file = read_fatbin_sections(&mut Cursor::new(&file)).unwrap();
    assert_eq!(in_memory.len(), 2);
    assert_eq!(from_file.len(), 2);
    for (memory, read) in in_memory.iter().zip(&from_file) {
        assert_eq!((memory.name, memory.offset), (read.name, read.offset));
        assert_eq!(memory.bytes, read.bytes.as_slice());
    }
    assert_eq!(in_memory[0].bytes, loaded.as_slice());
    assert_eq!(in_memory[1].name, "__nv_relfatbin");
    let host_only = elf(&[(".text", b"host code only")]);
    assert!(fatbin_sections(&host_only).unwrap().is_empty());
    assert!(
        read_fatbin_sections(&mut Cursor::new(&host_only))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn elf_errors_name_what_is_wrong_in_memory_and_from_a_file() {
    let both = |bytes: &[u8]| {
        let memory = fatbin_sections(bytes).map(|_| ());
        let file = match read_fatbin_sections(&mut Cursor::new(bytes)) {
            Ok(_) => Ok(()),
            Err(ElfFileError::Elf(error)) => Err(error),
            Err(ElfFileError::Io(error)) => panic!("an I/O error on bytes in memory: {error}"),
        };
        assert_eq!(memory, file);
        memory
    };
    assert_eq!(both(b"MZ not elf"), Err(ElfError::NotElf));
    assert_eq!(both(b"\x7fEL"), Err(ElfError::NotElf));
    let good = elf(&[(".nv_fatbin", &container(&[FixtureEntry::cubin(80)]))]);
    let mut file = good.clone();
    file[4] = 1;
    assert_eq!(
        both(&file),
        Err(ElfError::UnsupportedLayout { class: 1, data: 1 })
    );
    let mut file = good.clone();
    file[0x3e..0x40].copy_from_slice(&40u16.to_le_bytes());
    assert!(matches!(
        both(&file),
        Err(ElfError::BadNameTable { index: 40, .. })
    ));
    let mut file = good.clone();
    file[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(both(&file), Err(ElfError::Truncated { .. })));
    let mut file = good.clone();
    file[0x3a..0x3c].copy_from_slice(&40u16.to_le_bytes());
    assert_eq!(both(&file), Err(ElfError::BadSectionHeaderSize(40)));
    // Every cut of the file: an error or fewer sections, the same both ways, never a panic.
    for cut in 0..good.len() {
        let _ = both(&good[..cut]);
    }
}

#[test]
fn tar_entries_are_read_in_order_with_long_names() {
    let long = format!("{}/libcuda_kernels.so", "deep/".repeat(30));
    let archive = tar(&[("a.txt", b"first"), (&long, b"second")]);
    let mut reader = TarReader::new(archive.as_slice());
    let first = reader.next_entry().unwrap().unwrap();
    assert_eq!(
        (first.path.as_str(), first.size, first.kind),
        ("a.txt", 5, EntryType::File)
    );
    let second = reader.next_entry().unwrap().unwrap();
    assert_eq!(second.path, long);
    assert!(reader.next_entry().unwrap().is_none());
}
