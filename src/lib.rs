//! envctl: GPU deep-learning environments that are identical on every machine of a team.
//!
//! Gather, then judge: adapters (`envctl-engine`, `envctl-gpu`, `envctl-host`) fill the plain
//! structs of `facts`, the pure core (`profile`, `compat`, `checks`, `container_plan`,
//! `monitor`) decides, `ops` (the `envctl-ops` crate, with the `context`, the errors and the
//! `ui`) composes them for the commands, and this crate's `commands` parse, call ops and
//! render. This crate depends on no adapter crate, so a command cannot name one.
//! ARCHITECTURE.md has the whole picture.

// Every command returns the application crate's `Error`, which is over clippy's 128 bytes.
// The lint never fired while that type was this crate's own (clippy measures it only from
// another crate); the size is the same, each command returns one error once, on its way
// out, so nothing is copied in a loop.
#![allow(clippy::result_large_err)]

pub mod cli;
pub mod commands;

// The application layer, under the paths the commands have always used.
pub use envctl_ops::{complete, context, error, exit, ops, ui};
// The floor and the pure core, under their old paths.
pub use envctl_core::{
    checks, compat, container_plan, export, files, lock, monitor, nvcheck, policy, profile, secret,
    suggest, text, time, units, untrusted,
};
pub use envctl_facts as facts;
