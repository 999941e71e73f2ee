//! The application layer: what the commands share. Each function here gathers through the
//! adapters (`engine/`, `gpu/`, `host/`), judges with the pure core, and returns values.
//! It writes no data: a long operation (`up`) says what it is doing on stderr through the
//! context's printer, as cargo's `ops` talk through its `Shell`; results are rendered by
//! `commands/` through `ui/`.
//!
//! - [`doctor`]: gather host, NVML and daemon facts, and judge them (doctor, `up`'s preflight).
//! - [`up`]: preflight, pull, create and start (idempotent, race-safe, cleaned up on signals).
//! - [`target`]: which container a TARGET argument names.
//! - [`down`]: stop (and remove) a container, or sweep those that carry a label.
//! - [`ps`]: the rows of envctl's containers on one daemon, with their drift.
//! - [`environment`]: profile + overrides + lock + host decisions → the one create body
//!   that `up`, `--dry-run` and every export read.
//! - [`exec`]: which running container an exec command line means, and the command run there.
//! - [`nvidia_check`]: the in-container CUDA check, run and judged.
//! - [`stats`]: sample, follow, reconnect, serve (the pure rules are `monitor/`).
//! - [`matrix`]: the compatibility matrix in force (bundled, user file, `--matrix`).
//! - [`policy`]: the host policy in force and its verdict on the container `up` makes.
//! - [`logs`]: the container `logs` names and its output, read as it comes.
//! - [`lock`]: the digest a profile's image tag points at, from the registry (no pull).
//! - [`trust`]: a repository profile's root-equivalent settings, refused without a yes.
//! - [`complete`]: what the shell completions ask the daemon (its running containers).

pub mod choose_host;
pub mod compat;
pub mod complete;
pub mod daemon_policy;
pub mod doctor;
pub mod down;
pub mod environment;
pub mod exec;
pub mod export;
pub mod forward;
pub mod gpu;
pub mod hosts;
pub mod image_libraries;
pub mod lock;
pub mod logs;
pub mod matrix;
pub mod nvidia_check;
pub mod outdated;
pub mod placement;
pub mod policy;
pub mod ps;
pub mod run;
pub mod server_gpus;
pub mod slurm;
pub mod stats;
pub mod target;
// The team file is read where profiles are (`profile::team`); this path stays for callers.
pub use crate::profile::team;
pub mod trust;
pub mod up;
pub mod wait;

/// How long one Engine API request may wait for its answer's headers. Long enough for
/// `docker stop`'s grace period; streams (pull, logs) are not cut by it.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

use crate::context::Context;
use crate::error::Error;

impl Context {
    /// Who runs envctl as the chosen daemon knows them: the local user with the identity
    /// its transport proves (`engine::identity`). A transport whose identity cannot be
    /// learnt gives an unproven one, saying why.
    pub fn me(&self) -> &crate::facts::user::User {
        if let Some(chosen) = self.chosen_daemon.get() {
            return self
                .me_on_chosen
                .get_or_init(|| self.me_at(Ok(chosen.clone())));
        }
        self.me
            .get_or_init(|| self.me_at(self.daemon().map_err(|error| error.to_string())))
    }

    /// [`Context::me`] for the daemon `choice` (one of several `--hosts`), not kept.
    pub fn me_at(
        &self,
        choice: Result<crate::host::docker_config::DaemonChoice, String>,
    ) -> crate::facts::user::User {
        crate::context::identified(&self.user, choice)
    }

    /// A connection to the daemon, checked with a ping so an unreachable daemon is named
    /// at once (within `engine::PING_TIMEOUT`), and identified (`/version`).
    pub(crate) async fn engine(&self) -> Result<crate::engine::Engine, Error> {
        self.engine_with_deadline(REQUEST_TIMEOUT).await
    }

    /// Like [`Context::engine`], for a request the daemon may rightly take `deadline` to
    /// answer (`docker stop` with a long grace period).
    pub(crate) async fn engine_with_deadline(
        &self,
        deadline: std::time::Duration,
    ) -> Result<crate::engine::Engine, Error> {
        let engine = self.connect(deadline)?;
        engine.ping().await?;
        // Which engine answers, so every later message and hint names it (`podman rm -f`).
        engine
            .identify_by_ping(crate::engine::PING_TIMEOUT.min(deadline))
            .await?;
        Ok(engine)
    }
}
