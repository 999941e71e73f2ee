//! The GPU code a CUDA shared object carries, read from its fat binaries, and whether a GPU
//! can run it — pure functions over bytes the caller hands over (no daemon, no NVML, no
//! `cuobjdump`).
//!
//! Files:
//! - `elf` — the `.nv_fatbin` and `__nv_relfatbin` sections of an ELF64 file.
//! - `container` — the fat-binary containers in a section and their entries' headers (the
//!   layout is in its doc); damage is kept, never guessed past.
//! - `verdict` — [`judge`]: a library's lists against a GPU's compute capability and the
//!   driver's CUDA release: machine code runs, PTX is JIT-compiled, or "no kernel image is
//!   available for execution on the device", naming the library, its package and the fix.
//! - `image` — [`scan_archive`]: every shared object of an image archive (`docker save`'s
//!   tar of layer tars), in one streaming pass, with whiteouts and the package each came
//!   from (`*.dist-info/RECORD`); `tar` — the streaming tar reader it uses.
//! - `ptx_isa` — which CUDA release introduced each PTX ISA version (what a driver can JIT).
//! - `fixture` (tests) — builds synthetic fat binaries and ELF files; `tests` reads them;
//!   `verdict_tests` judges the image × GPU cases of `tests/corpus/fatbin/verdicts.toml`.
//!
//! What is read ([`LibraryCode`]): per section, the containers and each entry's kind
//! (SASS cubin or PTX), architecture and `a`/`f` variant, the PTX ISA version of a PTX
//! entry, and whether the payload is compressed. The lists it gives ([`LibraryCode::sass`],
//! [`LibraryCode::ptx`]) are what `cuobjdump --list-elf` and `--list-ptx` print, one
//! target each, checked library by library against real wheels (tests/corpus/fatbin).
//!
//! Only `.nv_fatbin` is what the CUDA runtime loads: `__nv_relfatbin` holds the
//! relocatable device code a `-rdc` build kept as input to its device link, whose result
//! is in `.nv_fatbin`. It is read and listed ([`LibraryCode::sass_all`], as
//! `cuobjdump -all` does) but never judged: bitsandbytes 0.50.2's CUDA 12.8 library carries
//! `compute_120` PTX there and none in `.nv_fatbin`, so counting it would promise a JIT
//! the runtime never attempts.

mod container;
mod elf;
mod image;
mod ptx_isa;
mod tar;
mod verdict;

#[cfg(test)]
pub mod fixture;
#[cfg(test)]
mod image_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use container::{Damage, DamageKind};
pub use elf::{ElfError, FATBIN_SECTIONS, is_elf};
pub use image::{
    IMAGE_LIBRARIES_SCHEMA, ImageLibraries, ImageLibrary, ImageScan, ImageScanError,
    ScannedLibrary, UnreadLibrary, is_shared_object, scan_archive,
};
pub use ptx_isa::{PtxIsa, cuda_of_ptx_isa};
pub use tar::TarError;
pub use verdict::{
    GPU_LIBRARY_ARCH, Library, LibraryVerdict, image_findings, judge, judge_summary,
    library_finding,
};

use super::values::{Target, TargetKind, TargetSuffix};
use super::version::ComputeCapability;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Ptx,
    /// Machine code (SASS) in an ELF "cubin".
    Cubin,
    /// A kind this reader does not know; kept so that it is counted, never judged.
    Other(u16),
}

/// The architecture's suffix: none, `a` (this capability only) or `f` (its family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    Portable,
    ArchitectureSpecific,
    Family,
}

/// How a payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    None,
    /// CUDA 11–12's `--compress` (an LZ4 variant).
    Lz4,
    /// CUDA 12.8+'s `--compress-mode`.
    Zstd,
}

/// One entry's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// As written: 90 for sm_90.
    pub arch: u32,
    pub variant: Variant,
    /// (major, minor): the PTX ISA version of a PTX entry; the cubin ABI of a cubin.
    pub code_version: (u16, u16),
    pub compression: Compression,
}

impl Entry {
    /// The compiler target (`sm_90a`, `compute_120`); none for an unknown kind or an
    /// architecture number that is not a compute capability.
    pub fn target(&self) -> Option<Target> {
        let kind = match self.kind {
            EntryKind::Cubin => TargetKind::Real,
            EntryKind::Ptx => TargetKind::Virtual,
            EntryKind::Other(_) => return None,
        };
        if !(10..1000).contains(&self.arch) {
            return None;
        }
        let suffix = match self.variant {
            Variant::Portable => TargetSuffix::Portable,
            Variant::ArchitectureSpecific => TargetSuffix::ArchitectureSpecific,
            Variant::Family => TargetSuffix::Family,
        };
        Some(Target {
            kind,
            capability: ComputeCapability::new(self.arch / 10, self.arch % 10),
            suffix,
        })
    }

    /// The PTX ISA version of a PTX entry.
    pub fn ptx_isa(&self) -> Option<PtxIsa> {
        (self.kind == EntryKind::Ptx).then(|| PtxIsa {
            major: u32::from(self.code_version.0),
            minor: u32::from(self.code_version.1),
        })
    }
}

/// The section the CUDA runtime loads fat binaries from.
pub const LOADED_SECTION: &str = ".nv_fatbin";

/// One fat-binary section of a library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionCode {
    pub name: &'static str,
    pub containers: usize,
    pub entries: Vec<Entry>,
    /// Where reading stopped early, if it did.
    pub damage: Option<Damage>,
}

/// The GPU code of one shared object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LibraryCode {
    pub sections: Vec<SectionCode>,
}

/// One PTX target with the newest PTX ISA version any of its entries carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtxTarget {
    pub target: Target,
    pub isa: PtxIsa,
}

impl fmt::Display for PtxTarget {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} (PTX ISA {})", self.target, self.isa)
    }
}

/// What the verdicts read of a library: its loaded lists and whether they are complete.
/// Small and plain, so that a scan can be cached per image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibrarySummary {
    pub sass: Vec<Target>,
    pub ptx: Vec<PtxTarget>,
    /// Whether the runtime finds any fat binary to load.
    pub has_gpu_code: bool,
    /// Why the lists may be incomplete (damage, entries envctl cannot name).
    pub incomplete: Option<String>,
}

/// Orders targets by capability, then portable < `a` < `f` (sm_90 < sm_90a < sm_100).
fn order(target: &Target) -> (ComputeCapability, u8) {
    let suffix = match target.suffix {
        TargetSuffix::Portable => 0,
        TargetSuffix::ArchitectureSpecific => 1,
        TargetSuffix::Family => 2,
    };
    (target.capability, suffix)
}

/// Reads the fat binaries of an ELF shared object. A file without fat-binary sections is
/// a library without GPU code (an empty [`LibraryCode`]); a file that is not a readable
/// ELF64 file is an [`ElfError`].
pub fn read_library(bytes: &[u8]) -> Result<LibraryCode, ElfError> {
    let sections = elf::fatbin_sections(bytes)?
        .into_iter()
        .map(|section| {
            let parsed = container::parse_section(section.bytes);
            SectionCode {
                name: section.name,
                containers: parsed.containers,
                entries: parsed.entries,
                damage: parsed.damage,
            }
        })
        .collect();
    Ok(LibraryCode { sections })
}

impl LibraryCode {
    /// Whether the library carries any fat binary at all.
    /// Whether the library carries GPU code the runtime loads.
    pub fn has_gpu_code(&self) -> bool {
        self.loaded()
            .any(|section| section.containers > 0 || section.damage.is_some())
    }

    fn loaded(&self) -> impl Iterator<Item = &SectionCode> {
        self.sections
            .iter()
            .filter(|section| section.name == LOADED_SECTION)
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.loaded().flat_map(|section| &section.entries)
    }

    fn all_entries(&self) -> impl Iterator<Item = &Entry> {
        self.sections.iter().flat_map(|section| &section.entries)
    }

    /// The distinct machine-code targets the runtime loads, lowest first
    /// (`cuobjdump --list-elf`).
    pub fn sass(&self) -> Vec<Target> {
        sass_of(self.entries())
    }

    /// The same over every section, `__nv_relfatbin` included (`cuobjdump -all --list-elf`).
    pub fn sass_all(&self) -> Vec<Target> {
        sass_of(self.all_entries())
    }

    /// The distinct PTX targets the runtime loads, lowest first, each with the newest PTX
    /// ISA version among its entries (`cuobjdump --list-ptx`).
    pub fn ptx(&self) -> Vec<PtxTarget> {
        ptx_of(self.entries())
    }

    /// The same over every section (`cuobjdump -all --list-ptx`).
    pub fn ptx_all(&self) -> Vec<PtxTarget> {
        ptx_of(self.all_entries())
    }

    /// Entries this reader could not name (an unknown kind, an architecture number that is
    /// no compute capability): counted, so that a verdict can say its lists are incomplete.
    pub fn unnamed_entries(&self) -> usize {
        self.entries()
            .filter(|entry| entry.target().is_none())
            .count()
    }

    /// The first damage found in the loaded section.
    pub fn damage(&self) -> Option<(&'static str, &Damage)> {
        self.loaded()
            .find_map(|section| section.damage.as_ref().map(|damage| (section.name, damage)))
    }

    /// What the verdicts read of it.
    pub fn summary(&self) -> LibrarySummary {
        let unnamed = self.unnamed_entries();
        let incomplete = match self.damage() {
            Some((section, damage)) => Some(format!("its {section} section is damaged {damage}")),
            None if unnamed > 0 => Some(format!(
                "{unnamed} of its entries are of a kind or architecture envctl cannot name"
            )),
            None => None,
        };
        LibrarySummary {
            sass: self.sass(),
            ptx: self.ptx(),
            has_gpu_code: self.has_gpu_code(),
            incomplete,
        }
    }

    /// Whether payloads are compressed (as `cuobjdump` would have to decompress them).
    pub fn compressed_entries(&self) -> usize {
        self.all_entries()
            .filter(|entry| entry.compression != Compression::None)
            .count()
    }
}

fn sass_of<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<Target> {
    let mut targets: Vec<Target> = entries
        .filter(|entry| entry.kind == EntryKind::Cubin)
        .filter_map(Entry::target)
        .collect();
    targets.sort_by_key(order);
    targets.dedup();
    targets
}

fn ptx_of<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<PtxTarget> {
    let mut targets: Vec<PtxTarget> = Vec::new();
    for entry in entries {
        let (Some(target), Some(isa)) = (entry.target(), entry.ptx_isa()) else {
            continue;
        };
        match targets.iter_mut().find(|known| known.target == target) {
            Some(known) => known.isa = known.isa.max(isa),
            None => targets.push(PtxTarget { target, isa }),
        }
    }
    targets.sort_by_key(|ptx| order(&ptx.target));
    targets
}
