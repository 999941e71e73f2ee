//! `envctl stats`' application layer: it drives the adapters (`engine`, `gpu::sample`,
//! `host::cgroup`) and hands plain data to the pure core in `monitor/`. `sampler` takes one
//! snapshot, `follow` runs the interval loop, `reconnect` keeps trying a lost daemon,
//! `serve` answers Prometheus scrapes and the dashboard, `hosts` takes one snapshot of
//! several daemons at once (`stats --hosts --once`), `team` follows them live (`stats
//! --hosts`). Nothing here reads the process environment or
//! writes to the terminal: `commands::stats` passes the settings in, `ui::live` shows.

pub mod follow;
pub mod hosts;
pub mod reconnect;
pub mod recording;
pub mod sampler;
pub mod serve;
pub mod team;

use crate::engine::EngineError;
use crate::monitor::FailureKind;

/// The stats failure kind of an Engine API error (here, not in `monitor`, so the pure
/// core never imports the adapter's error type).
pub fn failure_kind(error: &EngineError) -> FailureKind {
    match error {
        EngineError::SocketMissing { .. } => FailureKind::SocketMissing,
        EngineError::PermissionDenied { .. } => FailureKind::PermissionDenied,
        EngineError::ConnectionRefused { .. } => FailureKind::ConnectionRefused,
        EngineError::Timeout { .. }
        | EngineError::StoppedAnswering { .. }
        | EngineError::NeverConnected { .. } => FailureKind::Timeout,
        EngineError::UnsupportedHost { .. }
        | EngineError::SshEndpoint { .. }
        | EngineError::Choice(_) => FailureKind::UnsupportedHost,
        EngineError::Daemon { .. }
        | EngineError::StartRefused { .. }
        | EngineError::BadAnswer { .. }
        | EngineError::MalformedAnswer { .. } => FailureKind::DaemonError,
        EngineError::Pull { .. } => FailureKind::PullFailed,
        EngineError::ImageMissing { .. } => FailureKind::ImageMissing,
        EngineError::NameConflict { .. } => FailureKind::NameConflict,
        EngineError::InvalidBody { .. } => FailureKind::InvalidBody,
        EngineError::Output { .. } => FailureKind::Output,
        EngineError::TooManyOpenFiles { .. } => FailureKind::TooManyOpenFiles,
        EngineError::Other { .. }
        | EngineError::NotASocket { .. }
        | EngineError::InvalidReference { .. }
        | EngineError::ExitCodeUnknown { .. }
        | EngineError::TlsFiles { .. }
        | EngineError::TlsMismatch { .. }
        | EngineError::TlsHandshake { .. }
        | EngineError::Ssh { .. } => FailureKind::Other,
    }
}

/// What `stats` follows: the daemon, the containers chosen and the GPUs read beside them.
/// The engine stays inside ops: the command samples or follows through the methods below.
pub struct Prepared {
    engine: crate::engine::Engine,
    pub selection: sampler::Selection,
    pub gpus: sampler::Gpus,
}

impl Prepared {
    /// `stats --once`: one snapshot of the chosen containers and GPUs
    /// ([`sampler::snapshot_once`]).
    pub async fn snapshot_once(
        &self,
        source: sampler::CounterSource,
        interval: std::time::Duration,
        clock: crate::context::Clock,
    ) -> Result<crate::monitor::Snapshot, EngineError> {
        sampler::snapshot_once(
            &self.engine,
            &self.selection,
            &self.gpus,
            source,
            interval,
            clock,
        )
        .await
    }

    /// The live loop over the chosen containers ([`follow::follow`]) until `stop`.
    pub async fn follow<S>(
        self,
        options: &follow::FollowOptions,
        outputs: follow::Outputs<'_>,
        view: &mut dyn follow::FollowView,
        stop: impl std::future::Future<Output = S>,
    ) -> Result<follow::Ended<S>, crate::error::Error> {
        follow::follow(
            &self.engine,
            &self.gpus,
            self.selection,
            options,
            outputs,
            view,
            stop,
        )
        .await
    }
}

/// Connects, chooses the containers (`targets`: each must exist, as `docker stats` has
/// it; else envctl's, or every running one without `only_envctl`, of `owner` when given)
/// and opens this machine's GPUs when the daemon runs on it; another machine's are
/// unknown here (`envctl stats` there reads them).
pub async fn prepare(
    targets: &[String],
    only_envctl: bool,
    owner: Option<crate::facts::user::User>,
    context: &crate::context::Context,
) -> Result<Prepared, crate::error::Error> {
    let engine = context.engine().await?;
    let opening = sampler::Gpus::open(
        context.environment.nvml_library(),
        Some((
            context.environment.gpu_lock_path(),
            context.environment.clock(),
        )),
        crate::ops::placement::fatal_xids_in_force(None, context)?,
    );
    let (selection, here) = tokio::join!(
        select(&engine, targets, only_envctl, owner.as_ref(), context),
        engine.on_this_host()
    );
    let selection = selection?;
    let gpus = if here {
        opening.await
    } else {
        sampler::Gpus::Elsewhere
    };
    Ok(Prepared {
        engine,
        selection,
        gpus,
    })
}

/// The named targets (each must exist: a name that matches nothing stops the command, as
/// `docker stats` does), or envctl's or all running containers.
async fn select(
    engine: &crate::engine::Engine,
    targets: &[String],
    only_envctl: bool,
    owner: Option<&crate::facts::user::User>,
    context: &crate::context::Context,
) -> Result<sampler::Selection, crate::error::Error> {
    if targets.is_empty() {
        return Ok(sampler::Selection {
            targets: sampler::list_targets(engine, only_envctl, None, owner).await?,
            fixed: None,
            failures: Vec::new(),
        });
    }
    let found = futures_util::future::join_all(
        targets
            .iter()
            .map(|target| crate::ops::target::find_container(engine, context, target)),
    )
    .await;
    // A name that matches nothing is a usage mistake: stop, as `docker stats` does.
    let found = found
        .into_iter()
        .collect::<Result<Vec<_>, crate::error::Error>>()?;
    Ok(sampler::Selection::named(
        targets.iter().map(String::as_str).zip(found),
    ))
}

/// The name the metrics of `stats --serve` carry as `Hostname`: `NODE_NAME` where set (a
/// pod's node, as DCGM exporter takes it), else this host's.
pub fn metrics_hostname(context: &crate::context::Context) -> std::io::Result<String> {
    match context.environment.node_name() {
        Some(name) => Ok(name.to_string()),
        None => crate::host::hostname(),
    }
}
