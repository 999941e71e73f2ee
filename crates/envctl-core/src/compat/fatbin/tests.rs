//! The readers on synthetic fat binaries and ELF files: the edge cases real libraries
//! rarely show (PTX only, compressed entries, several containers and sections, damage).

use super::container::{self, DamageKind};
use super::fixture::{FixtureEntry, container, elf};
use super::*;

fn names(targets: &[Target]) -> Vec<String> {
    targets.iter().map(Target::to_string).collect()
}

fn ptx_names(code: &LibraryCode) -> Vec<String> {
    code.ptx().iter().map(PtxTarget::to_string).collect()
}

fn library(sections: &[(&str, &[u8])]) -> LibraryCode {
    read_library(&elf(sections)).unwrap()
}

#[test]
fn lists_sass_and_ptx_with_variants_and_isa_versions() {
    let fatbin = container(&[
        FixtureEntry::cubin(80),
        FixtureEntry::cubin(90).specific(),
        FixtureEntry::cubin(90),
        FixtureEntry::cubin(100).family().zstd(),
        FixtureEntry::ptx(120, (8, 7)),
    ]);
    let code = library(&[(".nv_fatbin", &fatbin)]);
    assert_eq!(names(&code.sass()), ["sm_80", "sm_90", "sm_90a", "sm_100f"]);
    assert_eq!(ptx_names(&code), ["compute_120 (PTX ISA 8.7)"]);
    assert_eq!(code.compressed_entries(), 2);
    assert_eq!(code.sections[0].containers, 1);
    assert!(code.damage().is_none());
}

#[test]
fn ptx_only_library_has_no_sass() {
    let fatbin = container(&[FixtureEntry::ptx(52, (7, 0)), FixtureEntry::ptx(52, (7, 8))]);
    let code = library(&[(".nv_fatbin", &fatbin)]);
    assert!(code.sass().is_empty());
    // The same target twice: one PTX target, with the newer ISA version.
    assert_eq!(ptx_names(&code), ["compute_52 (PTX ISA 7.8)"]);
    assert!(code.has_gpu_code());
}

#[test]
fn several_containers_and_both_sections_are_read() {
    let mut whole = container(&[FixtureEntry::cubin(75)]);
    whole.extend_from_slice(&[0; 16]);
    whole.extend(container(&[
        FixtureEntry::cubin(86),
        FixtureEntry::cubin(75),
    ]));
    let relocatable = container(&[FixtureEntry::cubin(89)]);
    let code = library(&[
        (".nv_fatbin", &whole),
        (".text", b"not GPU code"),
        ("__nv_relfatbin", &relocatable),
    ]);
    assert_eq!(code.sections.len(), 2);
    assert_eq!(code.sections[0].containers, 2);
    assert_eq!(code.sections[1].name, "__nv_relfatbin");
    // The runtime loads only `.nv_fatbin`; `-all` lists both, as cuobjdump does.
    assert_eq!(names(&code.sass()), ["sm_75", "sm_86"]);
    assert_eq!(names(&code.sass_all()), ["sm_75", "sm_86", "sm_89"]);
}

#[test]
fn relocatable_ptx_is_listed_but_never_judged() {
    // bitsandbytes 0.50.2's CUDA 12.8 library: compute_120 only in `__nv_relfatbin`.
    let loaded = container(&[FixtureEntry::cubin(90)]);
    let relocatable = container(&[FixtureEntry::cubin(90), FixtureEntry::ptx(120, (8, 7))]);
    let code = library(&[(".nv_fatbin", &loaded), ("__nv_relfatbin", &relocatable)]);
    assert!(code.ptx().is_empty());
    assert_eq!(code.ptx_all().len(), 1);
    let blackwell = ComputeCapability::new(12, 1);
    assert!(judge(&code, blackwell, None).fails());
    // Only relocatable code: nothing the runtime loads.
    let code = library(&[("__nv_relfatbin", &relocatable)]);
    assert_eq!(judge(&code, blackwell, None), LibraryVerdict::NoGpuCode);
}

#[test]
fn larger_entry_headers_are_skipped_whole() {
    let mut entry = FixtureEntry::cubin(120);
    entry.header_size = 112;
    let fatbin = container(&[entry, FixtureEntry::cubin(121).specific()]);
    let code = library(&[(".nv_fatbin", &fatbin)]);
    assert_eq!(names(&code.sass()), ["sm_120", "sm_121a"]);
}

#[test]
fn a_library_without_fat_binaries_has_no_gpu_code() {
    let code = library(&[(".text", b"host code only")]);
    assert_eq!(code, LibraryCode::default());
    assert!(!code.has_gpu_code());
}

#[test]
fn wrong_magic_keeps_what_came_before_and_says_where() {
    let mut section = container(&[FixtureEntry::cubin(80)]);
    let at = section.len();
    section.extend_from_slice(b"garbage, not a container");
    let parsed = container::parse_section(&section);
    assert_eq!(parsed.containers, 1);
    assert_eq!(parsed.entries.len(), 1);
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
fn truncation_at_every_length_never_panics_and_never_invents_entries() {
    let whole = container(&[
        FixtureEntry::cubin(80),
        FixtureEntry::ptx(90, (8, 4)),
        FixtureEntry::cubin(120),
    ]);
    for cut in 0..whole.len() {
        let parsed = container::parse_section(&whole[..cut]);
        assert!(parsed.entries.len() <= 3, "cut at {cut}");
        // A cut inside the container is damage (trailing padding zeros are not).
        if parsed.containers == 0 && whole[..cut].iter().any(|byte| *byte != 0) {
            assert!(parsed.damage.is_some(), "cut at {cut}");
        }
    }
    let file = elf(&[(".nv_fatbin", &whole)]);
    for cut in 0..file.len() {
        // Errors or partial lists, never a panic.
        let _ = read_library(&file[..cut]);
    }
}

#[test]
fn sizes_that_overflow_are_damage() {
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let parsed = container::parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::Truncated { what: "fat binary" })
    );
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let parsed = container::parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::Truncated { what: "entry" })
    );
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
    let parsed = container::parse_section(&section);
    assert_eq!(
        parsed.damage.map(|damage| damage.what),
        Some(DamageKind::SmallEntryHeader { size: 8 })
    );
}

#[test]
fn an_unknown_version_or_kind_stays_unknown() {
    let mut section = container(&[FixtureEntry::cubin(80)]);
    section[4..6].copy_from_slice(&2u16.to_le_bytes());
    assert_eq!(
        container::parse_section(&section)
            .damage
            .map(|damage| damage.what),
        Some(DamageKind::UnknownVersion { version: 2 })
    );
    let mut odd = FixtureEntry::cubin(80);
    odd.kind = 7;
    let mut no_arch = FixtureEntry::cubin(0);
    no_arch.arch = 5000;
    let code = library(&[(".nv_fatbin", &container(&[odd, no_arch]))]);
    assert!(code.sass().is_empty());
    assert_eq!(code.unnamed_entries(), 2);
}

#[test]
fn elf_errors_name_what_is_wrong() {
    assert_eq!(read_library(b"MZ not elf"), Err(ElfError::NotElf));
    let mut file = elf(&[(".nv_fatbin", &container(&[FixtureEntry::cubin(80)]))]);
    file[4] = 1;
    assert_eq!(
        read_library(&file),
        Err(ElfError::UnsupportedLayout { class: 1, data: 1 })
    );
    let mut file = elf(&[(".nv_fatbin", &container(&[FixtureEntry::cubin(80)]))]);
    file[0x3e..0x40].copy_from_slice(&40u16.to_le_bytes());
    assert!(matches!(
        read_library(&file),
        Err(ElfError::BadNameTable { index: 40, .. })
    ));
    let mut file = elf(&[(".nv_fatbin", &container(&[FixtureEntry::cubin(80)]))]);
    file[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        read_library(&file),
        Err(ElfError::Truncated { .. })
    ));
}

#[test]
fn ptx_isa_versions_map_to_the_cuda_release_that_introduced_them() {
    let cuda = |major, minor| cuda_of_ptx_isa(PtxIsa { major, minor }).map(|c| c.to_string());
    assert_eq!(cuda(8, 8).as_deref(), Some("12.9"));
    assert_eq!(cuda(7, 8).as_deref(), Some("11.8"));
    assert_eq!(cuda(9, 0).as_deref(), Some("13.0"));
    assert_eq!(cuda(9, 9), None);
}
