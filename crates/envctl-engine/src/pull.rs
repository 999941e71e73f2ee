//! Pulling an image with per-layer progress. The daemon's events become plain
//! `PullEvent`s (`envctl_facts::engine`) handed to a callback, so `ui/` draws them and tests
//! read them.

use bollard::query_parameters::CreateImageOptionsBuilder;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::{Engine, EngineError};
use envctl_facts::engine::PullEvent;

/// Why a pull failed, named so the user knows whether to fix the name, log in or wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullFailure {
    NotFound,
    Unauthorized,
    Unreachable,
    /// The registry (or the daemon) stopped making progress: no event for a long while.
    Stalled,
    Other,
}

/// A pull that sends no progress event for this long is given up: the registry accepts
/// connections but does not answer. Layers report progress every second or so while they
/// download and extract, so two minutes of silence is not a slow network.
pub const PULL_STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Sorts a registry error message (the daemon passes the registry's words through).
pub fn classify_pull_message(message: &str) -> PullFailure {
    let lower = message.to_ascii_lowercase();
    if lower.contains("not found")
        || lower.contains("manifest unknown")
        || lower.contains("does not exist")
    {
        PullFailure::NotFound
    } else if lower.contains("unauthorized")
        || lower.contains("authentication required")
        || lower.contains("auth credentials")
        || lower.contains("denied")
    {
        PullFailure::Unauthorized
    } else if lower.contains("connection refused")
        || lower.contains("no such host")
        || lower.contains("i/o timeout")
        || lower.contains("timeout")
        || lower.contains("network is unreachable")
        || lower.contains("tls handshake")
    {
        PullFailure::Unreachable
    } else {
        PullFailure::Other
    }
}

impl Engine {
    /// Pulls `image` (`name:tag`, `name@digest`; a caller adds `:latest` when the reference
    /// has neither, since a bare name would pull every tag). Each event goes to `on_event`.
    /// A pull silent for `stall` is given up ([`PULL_STALL_TIMEOUT`] unless the user's
    /// `ENVCTL_PULL_STALL_SECONDS` says otherwise).
    pub async fn pull_image(
        &self,
        image: &str,
        registry: &str,
        stall: std::time::Duration,
        mut on_event: impl FnMut(&PullEvent),
    ) -> Result<(), EngineError> {
        let options = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let mut stream = self.docker.create_image(Some(options), None, None);
        loop {
            let Ok(next) = tokio::time::timeout(stall, stream.next()).await else {
                return Err(EngineError::Pull {
                    engine: self.known_kind(),
                    image: image.to_string(),
                    registry: registry.to_string(),
                    failure: PullFailure::Stalled,
                    message: format!("no progress for {} s", stall.as_secs()),
                });
            };
            let Some(event) = next else { break };
            match event {
                Ok(info) => on_event(&PullEvent {
                    layer: info.id.filter(|_| {
                        !info
                            .status
                            .as_deref()
                            .unwrap_or_default()
                            .starts_with("Pulling from")
                    }),
                    status: info.status.unwrap_or_default(),
                    current: info
                        .progress_detail
                        .as_ref()
                        .and_then(|detail| detail.current)
                        .and_then(|value| u64::try_from(value).ok()),
                    total: info
                        .progress_detail
                        .as_ref()
                        .and_then(|detail| detail.total)
                        .and_then(|value| u64::try_from(value).ok()),
                }),
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    return Err(EngineError::Pull {
                        engine: self.known_kind(),
                        image: image.to_string(),
                        registry: registry.to_string(),
                        failure: classify_pull_message(&error),
                        message: error,
                    });
                }
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code,
                    message,
                }) if status_code != 409 => {
                    return Err(EngineError::Pull {
                        engine: self.known_kind(),
                        image: image.to_string(),
                        registry: registry.to_string(),
                        failure: classify_pull_message(&message),
                        message,
                    });
                }
                Err(error) => return Err(self.classify(error)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_registry_messages() {
        assert_eq!(
            classify_pull_message(
                "manifest for x:nope not found: manifest unknown: manifest unknown"
            ),
            PullFailure::NotFound
        );
        assert_eq!(
            classify_pull_message(
                "Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused"
            ),
            PullFailure::Unreachable
        );
        assert_eq!(
            classify_pull_message(
                "pull access denied for x, repository does not exist or may require 'docker login'"
            ),
            PullFailure::NotFound
        );
        assert_eq!(
            classify_pull_message("unauthorized: authentication required"),
            PullFailure::Unauthorized
        );
        assert_eq!(
            classify_pull_message(
                "Head \"http://127.0.0.1:5000/v2/x/manifests/1\": no basic auth credentials"
            ),
            PullFailure::Unauthorized
        );
        assert_eq!(classify_pull_message("something else"), PullFailure::Other);
    }
}
