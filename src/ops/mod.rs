//! The application layer: what the commands share. Each function here gathers through the
//! adapters (`engine/`, `gpu/`, `host/`), judges with the pure core, and returns values;
//! it never writes to the terminal (that is `ui/`, called by `commands/`).
//!
//! - [`doctor`]: gather host, NVML and daemon facts, and judge them (doctor, `up`'s preflight).
//! - [`target`]: which container a TARGET argument names.
//! - [`environment`]: profile + overrides + lock + host decisions → the one create body
//!   that `up`, `--dry-run` and every export read.
//! - [`matrix`]: the compatibility matrix in force (bundled, user file, `--matrix`).

pub mod doctor;
pub mod environment;
pub mod matrix;
pub mod target;
