//! envctl: GPU deep-learning environments that are identical on every machine of a team.
//!
//! Gather, then judge: adapters (`engine`, `gpu`, `host`) fill the plain structs of
//! `facts`, the pure core (`profile`, `compat`, `checks`, `spec`, `monitor`) decides, `ops` composes them for
//! the commands, `ui` alone writes to the terminal, `commands` parse, call and render.
//! `context` alone reads the process environment. ARCHITECTURE.md has the whole picture.

pub mod checks;
pub mod cli;
pub mod commands;
pub mod compat;
pub mod complete;
pub mod context;
pub mod engine;
pub mod error;
pub mod exit;
pub mod export;
// The floor of the layers is a crate of its own, so no fact can name a layer above it;
// re-exported under its old path so `crate::facts::…` reads as before.
pub use envctl_facts as facts;
pub mod files;
pub mod gpu;
pub mod host;
pub mod interrupt;
pub mod lock;
pub mod monitor;
pub mod nvcheck;
pub mod ops;
pub mod policy;
pub mod profile;
pub mod registry;
pub mod secret;
pub mod spec;
pub mod suggest;
pub mod time;
pub mod ui;
pub mod units;
pub mod untrusted;
