//! The Docker daemon through bollard: the only module that imports bollard. It connects,
//! and gathers the plain facts of `crate::facts` (`EngineFacts`, `ImageFacts`,
//! `ContainerSample`, …) for the pure checks.

pub mod containers;
pub mod error;
pub mod exec;
pub mod facts;
pub mod logs;
pub mod pull;
pub mod stats;

use std::time::Duration;

use bollard::Docker;

pub use error::EngineError;

/// How long `ping` waits: a daemon that does not answer this fast is named as the
/// problem (the fault tests ask for an answer within 3 s).
pub const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// The default socket when `DOCKER_HOST` is not set.
pub const DEFAULT_ENDPOINT: &str = "unix:///var/run/docker.sock";

/// A connection to one daemon, and how to name it in messages.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
    endpoint: String,
    timeout: Duration,
}

impl Engine {
    /// Connects to `DOCKER_HOST` (any scheme bollard supports) or the default socket. A
    /// missing socket fails here; a dead one on the first request.
    pub fn connect(docker_host: Option<&str>, timeout: Duration) -> Result<Engine, EngineError> {
        let endpoint = docker_host
            .filter(|host| !host.is_empty())
            .unwrap_or(DEFAULT_ENDPOINT)
            .to_string();
        let docker = Docker::connect_with_host(&endpoint)
            .map_err(|error| EngineError::classify(&endpoint, error, timeout.as_secs()))?
            .with_timeout(timeout);
        Ok(Engine {
            docker,
            endpoint,
            timeout,
        })
    }

    /// The socket or host this engine talks to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub(crate) fn classify(&self, error: bollard::errors::Error) -> EngineError {
        EngineError::classify(&self.endpoint, error, self.timeout.as_secs())
    }

    /// `GET /_ping`, bounded by [`PING_TIMEOUT`] (or the request timeout when shorter) even
    /// when the daemon accepts the connection and never answers.
    pub async fn ping(&self) -> Result<(), EngineError> {
        let limit = PING_TIMEOUT.min(self.timeout);
        match tokio::time::timeout(limit, self.docker.ping()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(self.classify(error)),
            Err(_) => Err(EngineError::Timeout {
                endpoint: self.endpoint.clone(),
                seconds: limit.as_secs(),
            }),
        }
    }
}
