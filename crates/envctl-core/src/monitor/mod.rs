//! `envctl stats`' pure core (its application layer is `ops::stats`): usage formulas over a container's counters (`usage`), snapshots that
//! put containers and GPUs side by side (`snapshot`, with its typed `failure`s),
//! diagnosis rules over a window of snapshots (`diagnosis`), the recent past the dashboard
//! and the sparklines draw (`history`), and the formats snapshots
//! leave in (`record`, `prometheus`, `chart_model` and `chart`, `report`).
//!
//! Nothing here reads the process environment, talks to an adapter or writes to the
//! terminal: `ops::stats` gathers, `commands::stats` passes the settings in, `ui::live`
//! shows.

pub mod chart;
pub mod chart_model;
pub mod diagnosis;
pub mod duration;
pub mod failure;
pub mod history;
pub mod prometheus;
pub mod record;
pub mod report;
pub mod snapshot;
pub mod team;
pub mod usage;

/// The dashboard `stats --serve` serves: one page, its styles and script inline, nothing
/// fetched but that server's `/api/v1/…`.
pub const DASHBOARD_PAGE: &str = include_str!("dashboard/index.html");

#[cfg(test)]
mod diagnosis_tests;

pub use diagnosis::{Diagnosis, Severity, Window};
pub use failure::{Failure, FailureKind, FailureSubject};
pub use snapshot::{ContainerInput, ContainerRow, EndedContainer, GpuRow, ProcessRow, Snapshot};

/// The `schema_version` of every JSON document and JSON line `envctl stats` writes; the
/// same number as `ui::printer::SCHEMA_VERSION` (a test in `commands::stats` holds them
/// together, since the core may not import `ui`).
pub const SCHEMA_VERSION: u32 = 1;
