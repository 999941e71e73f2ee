//! The plain data the adapters gather and the pure core judges: the layering rule's
//! meeting point.
//!
//! Adapters — `engine/` (the only importer of bollard), `gpu/` (the only importer of
//! nvml-wrapper) and `host/` (which reads `/proc`, `/dev`, `/sys` and runs tools) — talk to
//! the outside world and fill these structs. The pure core (`checks/`, `compat/`, `spec/`,
//! `nvcheck/`, `export/`, the judging parts of `monitor/`) reads them and imports from here,
//! never from an adapter, so a verdict can be tested on hand-written facts and a report can
//! be replayed from JSON without Docker, a driver or this machine.
//!
//! Nothing here talks to the outside world. Constructors that read an adapter's own types
//! (a bollard stats frame, an NVML handle) live in the adapter, in `impl` blocks there.
//! The serde attributes are part of envctl's JSON output and stay exactly as they are.

pub mod container;
pub mod engine;
pub mod failure;
pub mod gpu;
pub mod gpu_sample;
pub mod host;
pub mod occupancy;
pub mod slurm;
pub mod smi;
pub mod ssh;
pub mod user;
pub mod versions;
