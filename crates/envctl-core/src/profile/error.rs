//! What can go wrong finding, reading or writing profiles.

use std::path::PathBuf;

use thiserror::Error;

use super::diagnostic::Diagnostic;

#[derive(Debug, Error)]
pub enum ProfileError {
    #[error("profile `{name}` not found")]
    NotFound {
        name: String,
        looked: Vec<String>,
        suggestion: Option<String>,
    },
    #[error("profile file `{}` does not exist", path.display())]
    FileNotFound { path: PathBuf },
    #[error("invalid profile: {} in {}", plural(diagnostics.len(), "problem"), files(diagnostics))]
    Invalid { diagnostics: Vec<Diagnostic> },
    #[error("`{}` already exists", path.display())]
    AlreadyExists { path: PathBuf },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ProfileError {
    /// The per-line problems, for errors that have them.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ProfileError::Invalid { diagnostics } => diagnostics,
            _ => &[],
        }
    }

    /// A command to run or a change to make.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProfileError::NotFound {
                looked, suggestion, ..
            } => Some(match suggestion {
                Some(suggestion) => {
                    format!("did you mean `{suggestion}`? (`envctl profiles list` shows them all)")
                }
                None => format!(
                    "looked in {}; `envctl profiles list` shows the profiles envctl finds",
                    looked.join(", ")
                ),
            }),
            ProfileError::FileNotFound { .. } => {
                Some("check the path, or give a profile name without `/` and `.toml`".into())
            }
            ProfileError::Invalid { .. } => None,
            ProfileError::AlreadyExists { .. } => {
                Some("pick another name, or edit the existing file".into())
            }
            ProfileError::Write { .. } => Some("check that the folder is writable".into()),
        }
    }
}

/// `1 problem`, `2 problems` (one formatter for every message: `units::plural`).
pub use crate::units::plural;

fn files(diagnostics: &[Diagnostic]) -> String {
    let mut paths: Vec<&str> = diagnostics
        .iter()
        .map(|diagnostic| diagnostic.path.as_str())
        .collect();
    paths.dedup();
    let mut unique: Vec<&str> = Vec::new();
    for path in paths {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
        .iter()
        .map(|path| format!("`{path}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
