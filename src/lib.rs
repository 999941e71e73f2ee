//! envctl: GPU deep-learning environments that are identical on every machine of a team.
//!
//! Gather, then judge: adapters (`engine`, `gpu`, `host`) fill the plain structs of
//! `facts`, the pure core (`profile`, `compat`, `checks`, `container_plan`, `monitor`) decides, `ops` composes them for
//! the commands, `ui` alone writes to the terminal, `commands` parse, call and render.
//! `context` alone reads the process environment. ARCHITECTURE.md has the whole picture.

pub mod cli;
pub mod commands;
pub mod complete;
pub mod context;
pub use envctl_engine as engine;
pub mod error;
pub mod exit;
// The floor of the layers is a crate of its own, so no fact can name a layer above it;
// re-exported under its old path so `crate::facts::…` reads as before.
pub use envctl_facts as facts;
// The pure core (profile, compat, checks, container_plan, export, nvcheck, monitor, lock, policy and
// the text, unit, time and file helpers they share) is a crate that cannot name an adapter,
// ops, the context or the terminal; re-exported under the old paths.
pub use envctl_core::{
    checks, compat, container_plan, export, files, lock, monitor, nvcheck, policy, profile, secret,
    suggest, text, time, units, untrusted,
};
pub use envctl_gpu as gpu;
pub use envctl_host as host;
pub use envctl_host::interrupt;
pub mod ops;
pub mod registry;
pub mod ui;
