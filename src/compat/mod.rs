//! The bundled compatibility matrix and the verdicts computed from it (filled in by the doctor work).

pub mod version;

pub use version::{ComputeCapability, DriverVersion};
