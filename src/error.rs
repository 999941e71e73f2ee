//! The top-level error: each subsystem's error, its exit status and its hint.

use thiserror::Error;

use crate::engine::EngineError;
use crate::exit::ExitStatus;
use crate::profile::{Diagnostic, ProfileError};

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Matrix(#[from] crate::compat::MatrixError),
    #[error("cannot read `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no container or profile named `{target}`")]
    TargetNotFound { target: String, hint: String },
    #[error("`{target}` matches several containers: {}", containers.join(", "))]
    TargetAmbiguous { target: String, containers: Vec<String> },
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write to standard output")]
    Output(#[source] std::io::Error),
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
}

impl Error {
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Profile(ProfileError::AlreadyExists { .. } | ProfileError::Write { .. }) => {
                ExitStatus::Failure
            }
            Error::Profile(_) | Error::Usage { .. } => ExitStatus::Error,
            Error::Output(_) => ExitStatus::Failure,
            Error::Engine(_) | Error::TargetNotFound { .. } | Error::TargetAmbiguous { .. } => ExitStatus::Failure,
            Error::Runtime(_) | Error::Matrix(_) | Error::Read { .. } => ExitStatus::Error,
        }
    }

    /// A command to run or a change to make.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Profile(error) => error.hint(),
            Error::Output(_) | Error::Runtime(_) => None,
            Error::Matrix(_) => Some("fix the file, or leave it out to use the bundled matrix only".into()),
            Error::Read { .. } => Some("check the path and its permissions".into()),
            Error::Usage { hint, .. } => hint.clone(),
            Error::Engine(error) => error.hint(),
            Error::TargetNotFound { hint, .. } => Some(hint.clone()),
            Error::TargetAmbiguous { .. } => Some("name the container instead (`envctl ps` lists them)".into()),
        }
    }

    /// Per-line problems to show before the error itself.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Profile(error) => error.diagnostics(),
            Error::Matrix(error) => &error.problems,
            _ => &[],
        }
    }

    /// Whether this is stdout closed by the reader (`envctl … | head`): not worth a word.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(error) if error.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Output(error)
    }
}
