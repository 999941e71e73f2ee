//! envctl: GPU deep-learning environments that are identical on every machine of a team.
//!
//! Gather, then judge: adapters fill plain structs, the pure core (`profile`) decides,
//! `ui` alone writes to the terminal, `commands` wires them per subcommand.

pub mod checks;
pub mod cli;
pub mod commands;
pub mod compat;
pub mod engine;
pub mod error;
pub mod exit;
pub mod export;
pub mod gpu;
pub mod host;
pub mod lock;
pub mod monitor;
pub mod nvcheck;
pub mod profile;
pub mod registry;
pub mod spec;
pub mod suggest;
pub mod ui;
pub mod units;
