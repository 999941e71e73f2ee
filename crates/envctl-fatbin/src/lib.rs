//! The CUDA code a shared object carries, read from its fat binaries, and the tar archives
//! an image arrives in: pure functions over bytes the caller hands over (no daemon, no
//! `cuobjdump`, no file system beyond a reader the caller opened). Shared by envctl (its
//! image scan and `gpu.library-arch` verdicts, in `envctl::compat::fatbin`) and its xtask
//! (the measured compatibility matrix), so that both read one layout one way.
//!
//! Modules:
//! - [`elf`] — the `.nv_fatbin` and `__nv_relfatbin` sections of an ELF64 file, in memory or
//!   read in place.
//! - [`container`] — the fat-binary containers in a section and their entries' headers (the
//!   layout is in its doc); damage is kept, never guessed past.
//! - [`ptx_isa`] — which CUDA release introduced each PTX ISA version (what a driver can
//!   JIT).
//! - [`tar`] — a streaming tar reader (ustar, GNU long names, pax paths).
//! - `fixture` (tests, and the `fixture` feature) — builds synthetic fat binaries, ELF files
//!   and tar archives: the inverse of the readers.
//!
//! What an entry is ([`Entry`]) is told in this crate's own words (kind, architecture
//! number, `a`/`f` variant, code version, compression); naming it as a compiler target and
//! judging it against a GPU is the caller's.

pub mod container;
pub mod elf;
pub mod ptx_isa;
pub mod tar;

#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use ptx_isa::PtxIsa;

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
    /// The PTX ISA version of a PTX entry.
    pub fn ptx_isa(&self) -> Option<PtxIsa> {
        (self.kind == EntryKind::Ptx).then(|| PtxIsa {
            major: u32::from(self.code_version.0),
            minor: u32::from(self.code_version.1),
        })
    }

    /// Whether the architecture number is a compute capability (10 to 999: sm_10 to
    /// sm_999); anything else is named by no compiler target.
    pub fn has_capability(&self) -> bool {
        (10..1000).contains(&self.arch)
    }
}
