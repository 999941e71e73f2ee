//! What can go wrong talking to the Docker daemon, each cause named with its fix.

use thiserror::Error;

/// A failure reaching or using the daemon. `endpoint` is the socket or host envctl tried.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error("the Docker socket `{path}` does not exist")]
    SocketMissing { path: String },
    #[error("permission denied on the Docker socket `{endpoint}`")]
    PermissionDenied {
        endpoint: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("nothing answers at `{endpoint}` (connection refused)")]
    ConnectionRefused {
        endpoint: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("the Docker daemon at `{endpoint}` did not answer within {seconds} s")]
    Timeout { endpoint: String, seconds: u64 },
    #[error("`DOCKER_HOST={endpoint}` uses a scheme envctl does not support")]
    UnsupportedHost { endpoint: String },
    #[error("the Docker daemon at `{endpoint}` answered {status}: {message}")]
    Daemon {
        endpoint: String,
        status: u16,
        message: String,
    },
    #[error("cannot pull `{image}` from {registry}: {message}")]
    Pull {
        image: String,
        registry: String,
        failure: super::pull::PullFailure,
        message: String,
    },
    #[error("cannot write the container's output")]
    Output {
        #[source]
        source: std::io::Error,
    },
    #[error("the image `{image}` is not present locally")]
    ImageMissing { image: String },
    #[error("the container name `{name}` is already in use")]
    NameConflict { name: String, message: String },
    #[error("envctl built an invalid request: {message}")]
    InvalidBody { message: String },
    #[error("cannot talk to the Docker daemon at `{endpoint}`")]
    Other {
        endpoint: String,
        #[source]
        source: bollard::errors::Error,
    },
}

impl EngineError {
    /// Sorts a bollard error into a named cause, walking its sources for the I/O error.
    pub fn classify(endpoint: &str, error: bollard::errors::Error, timeout_seconds: u64) -> Self {
        use bollard::errors::Error as Bollard;
        let endpoint = endpoint.to_string();
        match error {
            Bollard::SocketNotFoundError(path) => EngineError::SocketMissing { path },
            Bollard::RequestTimeoutError => EngineError::Timeout {
                endpoint,
                seconds: timeout_seconds,
            },
            Bollard::UnsupportedURISchemeError { .. } => EngineError::UnsupportedHost { endpoint },
            Bollard::DockerResponseServerError {
                status_code,
                message,
            } => EngineError::Daemon {
                endpoint,
                status: status_code,
                message,
            },
            other => match io_error_kind(&other) {
                Some(std::io::ErrorKind::PermissionDenied) => EngineError::PermissionDenied {
                    endpoint,
                    source: other,
                },
                // The socket file went away after envctl connected once (the daemon
                // stopped and removed it): the same cause as a socket missing at start.
                Some(std::io::ErrorKind::NotFound) if endpoint.starts_with("unix://") => {
                    EngineError::SocketMissing {
                        path: endpoint.trim_start_matches("unix://").to_string(),
                    }
                }
                Some(std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => {
                    EngineError::ConnectionRefused {
                        endpoint,
                        source: other,
                    }
                }
                _ => EngineError::Other {
                    endpoint,
                    source: other,
                },
            },
        }
    }

    /// The fix: a command to run or a variable to set.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            EngineError::SocketMissing { .. } => {
                "start Docker (`sudo systemctl start docker`), or point DOCKER_HOST at your daemon (rootless: unix://$XDG_RUNTIME_DIR/docker.sock)".into()
            }
            EngineError::PermissionDenied { .. } => {
                "add yourself to the `docker` group (`sudo usermod -aG docker $USER`, then log in again), or use rootless Docker".into()
            }
            EngineError::ConnectionRefused { .. } => {
                "the socket or port exists but no daemon listens: restart Docker (`sudo systemctl restart docker`) or check DOCKER_HOST".into()
            }
            EngineError::Timeout { .. } => {
                "the daemon is overloaded or hung: check `systemctl status docker` and `journalctl -u docker`".into()
            }
            EngineError::UnsupportedHost { .. } => {
                "use unix:///path/to/docker.sock or tcp://HOST:PORT".into()
            }
            EngineError::Pull { failure, image, registry, .. } => match failure {
                super::pull::PullFailure::NotFound => format!("check the image name and tag; list the tags the registry has for `{image}`, or fix `image` in the profile"),
                super::pull::PullFailure::Unauthorized => format!("log in first: `docker login {registry}`"),
                super::pull::PullFailure::Unreachable => format!("{registry} cannot be reached: check the network, a proxy, or pull on a connected machine and `docker save`/`docker load` the image"),
                super::pull::PullFailure::Stalled => format!("{registry} accepts connections but sends nothing: check the registry or a proxy in between, then retry (ENVCTL_PULL_STALL_SECONDS sets how long envctl waits)"),
                super::pull::PullFailure::Other => return None,
            },
            EngineError::ImageMissing { image } => {
                format!("pull it first: `docker pull {image}` (or `envctl up --pull missing`)")
            }
            EngineError::NameConflict { name, .. } => {
                format!("remove it with `docker rm -f {name}`, or choose another name with `--name`")
            }
            EngineError::Output { .. } => return None,
            EngineError::InvalidBody { .. } => {
                "this is a bug in envctl: please report it with `envctl up --dry-run --json` output".into()
            }
            EngineError::Daemon { .. } | EngineError::Other { .. } => return None,
        })
    }

    /// A short stable name for the cause, for JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::SocketMissing { .. } => "socket-missing",
            EngineError::PermissionDenied { .. } => "permission-denied",
            EngineError::ConnectionRefused { .. } => "connection-refused",
            EngineError::Timeout { .. } => "timeout",
            EngineError::UnsupportedHost { .. } => "unsupported-host",
            EngineError::Daemon { .. } => "daemon-error",
            EngineError::Pull { .. } => "pull-failed",
            EngineError::ImageMissing { .. } => "image-missing",
            EngineError::NameConflict { .. } => "name-conflict",
            EngineError::InvalidBody { .. } => "invalid-body",
            EngineError::Output { .. } => "output",
            EngineError::Other { .. } => "other",
        }
    }
}

fn io_error_kind(error: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        // bollard's `IOError` is transparent: its `source()` skips the I/O error itself.
        if let Some(bollard::errors::Error::IOError { err }) =
            error.downcast_ref::<bollard::errors::Error>()
        {
            return Some(err.kind());
        }
        current = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> bollard::errors::Error {
        bollard::errors::Error::IOError {
            err: std::io::Error::new(kind, "os error"),
        }
    }

    #[test]
    fn a_unix_socket_that_vanished_is_named_missing() {
        let error = EngineError::classify(
            "unix:///run/docker.sock",
            io(std::io::ErrorKind::NotFound),
            3,
        );
        assert!(
            matches!(&error, EngineError::SocketMissing { path } if path == "/run/docker.sock"),
            "{error:?}"
        );
        assert_eq!(error.kind(), "socket-missing");
    }

    #[test]
    fn refused_and_forbidden_keep_their_own_causes() {
        let refused = EngineError::classify(
            "unix:///run/docker.sock",
            io(std::io::ErrorKind::ConnectionRefused),
            3,
        );
        assert_eq!(refused.kind(), "connection-refused");
        let forbidden = EngineError::classify(
            "unix:///run/docker.sock",
            io(std::io::ErrorKind::PermissionDenied),
            3,
        );
        assert_eq!(forbidden.kind(), "permission-denied");
        let tcp =
            EngineError::classify("tcp://127.0.0.1:2375", io(std::io::ErrorKind::NotFound), 3);
        assert_eq!(tcp.kind(), "connection-refused");
    }
}
