//! The top-level error: each subsystem's error, its exit status and its hint.

use thiserror::Error;

use crate::exit::ExitStatus;
use crate::profile::{Diagnostic, ProfileError};

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] ProfileError),
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
        }
    }

    /// A command to run or a change to make.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Profile(error) => error.hint(),
            Error::Output(_) => None,
            Error::Usage { hint, .. } => hint.clone(),
        }
    }

    /// Per-line problems to show before the error itself.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Profile(error) => error.diagnostics(),
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
