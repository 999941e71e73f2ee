//! What the live view does while the daemon is away: which errors mean it is lost, the
//! failure line each snapshot carries meanwhile, and the retry schedule (a ping
//! [`RECONNECT_FIRST`] after the loss, then at doubling intervals up to
//! [`RECONNECT_CAP`]), run in the background so the GPUs and the cgroup files go on
//! being read.

use std::time::{Duration, Instant};

use crate::engine::{Engine, EngineError};
use crate::error::error_chain;
use crate::monitor::failure::{Failure, FailureSubject};

/// The first wait before asking a lost daemon again; each failed try doubles it up to
/// [`RECONNECT_CAP`].
pub const RECONNECT_FIRST: Duration = Duration::from_millis(500);

/// The longest wait between two tries to reach a lost daemon.
pub const RECONNECT_CAP: Duration = Duration::from_secs(5);

/// Whether `error` says the daemon cannot be reached, rather than that it answered.
pub fn daemon_is_lost(error: &EngineError) -> bool {
    super::failure_kind(error).means_daemon_lost()
}

/// The daemon's answer to a question about all containers, as a failure of the daemon.
pub fn daemon_failure(error: &EngineError) -> Failure {
    Failure {
        subject: FailureSubject::Daemon,
        kind: super::failure_kind(error),
        message: error_chain(error),
    }
}

/// A daemon the live view lost: pinged in the background on the schedule above.
pub struct LostDaemon {
    failure: Failure,
    delay: Duration,
    next_try: Instant,
    probe: Option<tokio::task::JoinHandle<Result<(), EngineError>>>,
}

impl LostDaemon {
    pub fn new(error: &EngineError) -> LostDaemon {
        LostDaemon {
            failure: LostDaemon::failure_of(error),
            delay: RECONNECT_FIRST,
            next_try: Instant::now() + RECONNECT_FIRST,
            probe: None,
        }
    }

    /// The failure each snapshot carries while the daemon is away.
    pub fn failure(&self) -> &Failure {
        &self.failure
    }

    /// The line the live view and each snapshot carry while the daemon is away: the cause
    /// in envctl's words (the endpoint included, without the HTTP client's layers, which
    /// would push it off a terminal line) and that envctl keeps trying.
    fn failure_of(error: &EngineError) -> Failure {
        Failure {
            subject: FailureSubject::Daemon,
            kind: super::failure_kind(error),
            message: format!(
                "lost: {error}; reconnecting every {} ms to {} s",
                RECONNECT_FIRST.as_millis(),
                RECONNECT_CAP.as_secs()
            ),
        }
    }

    /// `true` once a ping got an answer; otherwise starts the next ping when it is due.
    /// Never waits for the daemon.
    pub async fn answered(&mut self, engine: &Engine) -> bool {
        if self
            .probe
            .as_ref()
            .is_some_and(tokio::task::JoinHandle::is_finished)
            && let Some(probe) = self.probe.take()
        {
            match probe.await {
                Ok(Ok(())) => return true,
                Ok(Err(error)) => self.failure = LostDaemon::failure_of(&error),
                Err(_) => {}
            }
            self.delay = (self.delay * 2).min(RECONNECT_CAP);
            self.next_try = Instant::now() + self.delay;
        }
        if self.probe.is_none() && Instant::now() >= self.next_try {
            let engine = engine.clone();
            self.probe = Some(tokio::spawn(async move { engine.ping().await }));
        }
        false
    }
}

impl Drop for LostDaemon {
    fn drop(&mut self) {
        if let Some(probe) = &self.probe {
            probe.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_daemon_out_of_reach_counts_as_lost() {
        let endpoint = || crate::engine::Endpoint::unidentified("unix:///run/docker.sock");
        assert!(daemon_is_lost(&EngineError::Timeout {
            endpoint: endpoint(),
            seconds: 10
        }));
        assert!(!daemon_is_lost(&EngineError::UnsupportedHost {
            endpoint: endpoint()
        }));
    }

    #[test]
    fn the_lost_line_names_the_schedule() {
        let error = EngineError::Timeout {
            endpoint: crate::engine::Endpoint::unidentified("unix:///run/docker.sock"),
            seconds: 10,
        };
        let daemon = LostDaemon::new(&error);
        assert_eq!(daemon.failure().subject, FailureSubject::Daemon);
        assert_eq!(daemon.failure().kind, crate::monitor::FailureKind::Timeout);
        assert!(
            daemon
                .failure()
                .message
                .ends_with("; reconnecting every 500 ms to 5 s"),
            "{}",
            daemon.failure().message
        );
    }
}
