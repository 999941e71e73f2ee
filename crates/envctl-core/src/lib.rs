//! envctl's pure core: what a profile is and says, the compatibility matrix and its
//! verdicts, doctor's checks, the container plan (`container_plan`), the exports, nvidia-check's
//! judge, the monitor's maths and formats, the lock file and the host policy — with the
//! text, unit, time and file helpers they share.
//!
//! It judges the plain facts of `envctl-facts` and names no adapter: this crate does not
//! depend on bollard or nvml-wrapper and cannot see the engine, the GPU reader, `ops`, the
//! `Context` or the terminal, so a verdict is a function of its inputs and is tested on
//! hand-written facts. The few files that read or write files (profile discovery, the
//! lock file, the policy, `files` and `untrusted` themselves) are the exceptions
//! `cargo xtask rules` lists by name.

pub use envctl_facts as facts;

pub mod checks;
pub mod compat;
pub mod container_plan;
pub mod export;
pub mod files;
pub mod lock;
pub mod monitor;
pub mod nvcheck;
pub mod policy;
pub mod profile;
pub mod secret;
pub mod suggest;
pub mod text;
pub mod time;
pub mod units;
pub mod untrusted;
