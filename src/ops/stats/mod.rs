//! `envctl stats`' application layer: it drives the adapters (`engine`, `gpu::sample`,
//! `host::cgroup`) and hands plain data to the pure core in `monitor/`. `sampler` takes one
//! snapshot, `follow` runs the interval loop, `reconnect` keeps trying a lost daemon,
//! `serve` answers Prometheus scrapes and the dashboard, `hosts` takes one snapshot of
//! several daemons at once (`stats --hosts`). Nothing here reads the process environment or
//! writes to the terminal: `commands::stats` passes the settings in, `ui::live` shows.

pub mod follow;
pub mod hosts;
pub mod reconnect;
pub mod recording;
pub mod sampler;
pub mod serve;

use crate::engine::EngineError;
use crate::monitor::FailureKind;

/// The stats failure kind of an Engine API error (here, not in `monitor`, so the pure
/// core never imports the adapter's error type).
pub fn failure_kind(error: &EngineError) -> FailureKind {
    match error {
        EngineError::SocketMissing { .. } => FailureKind::SocketMissing,
        EngineError::PermissionDenied { .. } => FailureKind::PermissionDenied,
        EngineError::ConnectionRefused { .. } => FailureKind::ConnectionRefused,
        EngineError::Timeout { .. } | EngineError::StoppedAnswering { .. } => FailureKind::Timeout,
        EngineError::UnsupportedHost { .. } | EngineError::Choice(_) => {
            FailureKind::UnsupportedHost
        }
        EngineError::Daemon { .. }
        | EngineError::StartRefused { .. }
        | EngineError::BadAnswer { .. } => FailureKind::DaemonError,
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
