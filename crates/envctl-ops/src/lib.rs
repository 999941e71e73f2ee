//! envctl's application layer: the operations (`ops`: gather facts, build a plan, apply it),
//! the [`context::Context`] every operation runs in (the one reader of the process
//! environment), the errors they return (`error`), the registry client (`registry`), the
//! printer and renderers that alone write to the terminal (`ui`), and the shell
//! completions (`complete`).
//!
//! This is the one crate that names the adapters (`engine`, `gpu`, `host`): they are
//! re-exported here inside the crate only, so the binary above (cli, commands) can name
//! neither them nor a function that hands one out. ARCHITECTURE.md has the crate graph.

pub mod complete;
pub mod context;
pub mod error;
pub mod exit;
pub mod ops;
pub mod registry;
pub mod ui;

// The adapters, under the paths the operations have always used; `pub(crate)` so no crate
// above this one can reach them through it.
pub(crate) use envctl_engine as engine;
pub(crate) use envctl_gpu as gpu;
pub(crate) use envctl_host as host;
pub(crate) use envctl_host::interrupt;

// The floor and the pure core, under their old paths (`crate::facts::…`, `crate::profile::…`).
pub use envctl_core::{
    checks, compat, container_plan, export, files, lock, monitor, nvcheck, policy, profile, secret,
    suggest, text, time, units, untrusted,
};
pub use envctl_facts as facts;
