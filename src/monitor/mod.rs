//! `envctl stats`' pure core: usage formulas over a container's counters, snapshots that
//! put containers and GPUs side by side, diagnosis rules over a window of snapshots, and
//! the formats snapshots leave in (recordings, Prometheus text, charts).
//!
//! Nothing here talks to the daemon, NVML or the terminal: `engine::stats`,
//! `gpu::sample` and `host::cgroup` gather, `commands::stats` wires, `ui::live` shows.

pub mod chart;
pub mod diagnosis;
pub mod prometheus;
pub mod record;
pub mod snapshot;
pub mod usage;

#[cfg(test)]
mod diagnosis_tests;

pub use diagnosis::{Diagnosis, Severity, Window};
pub use snapshot::{ContainerInput, ContainerRow, Failure, GpuRow, ProcessRow, Snapshot};

/// The `schema_version` of every JSON document and JSON line `envctl stats` writes; the
/// same number as `ui::printer::SCHEMA_VERSION` (a test in `commands::stats` holds them
/// together, since the core may not import `ui`).
pub const SCHEMA_VERSION: u32 = 1;
