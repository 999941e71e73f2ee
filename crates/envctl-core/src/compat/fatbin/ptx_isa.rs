//! PTX ISA versions and the CUDA release that introduced each: a driver JIT-compiles PTX
//! only up to the ISA version of the CUDA release it supports natively, and fails
//! ("the provided PTX was compiled with an unsupported toolchain") above it.
//!
//! Source: NVIDIA's PTX ISA document, "Release Notes" table of PTX ISA versions and the
//! CUDA release of each (read 2026-12). A version not in the table is unknown, never
//! assumed old enough.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::profile::model::CudaVersion;

/// A PTX ISA version: `.version 8.8` in a PTX file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PtxIsa {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for PtxIsa {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

/// A (major, minor) pair.
type Pair = (u32, u32);

/// (PTX ISA, the CUDA release that introduced it).
const TABLE: &[(Pair, Pair)] = &[
    ((6, 0), (9, 0)),
    ((6, 1), (9, 1)),
    ((6, 2), (9, 2)),
    ((6, 3), (10, 0)),
    ((6, 4), (10, 1)),
    ((6, 5), (10, 2)),
    ((7, 0), (11, 0)),
    ((7, 1), (11, 1)),
    ((7, 2), (11, 2)),
    ((7, 3), (11, 3)),
    ((7, 4), (11, 4)),
    ((7, 5), (11, 5)),
    ((7, 6), (11, 6)),
    ((7, 7), (11, 7)),
    ((7, 8), (11, 8)),
    ((8, 0), (12, 0)),
    ((8, 1), (12, 1)),
    ((8, 2), (12, 2)),
    ((8, 3), (12, 3)),
    ((8, 4), (12, 4)),
    ((8, 5), (12, 5)),
    ((8, 6), (12, 7)),
    ((8, 7), (12, 8)),
    ((8, 8), (12, 9)),
    ((9, 0), (13, 0)),
    ((9, 1), (13, 1)),
];

/// The CUDA release that introduced `isa`; none for a version the table does not hold.
pub fn cuda_of_ptx_isa(isa: PtxIsa) -> Option<CudaVersion> {
    TABLE
        .iter()
        .find(|(version, _)| *version == (isa.major, isa.minor))
        .map(|(_, (major, minor))| CudaVersion {
            major: *major,
            minor: *minor,
        })
}
