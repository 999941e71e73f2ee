//! The compatibility matrix a command uses: the bundled one, overlaid with
//! `$XDG_CONFIG_HOME/envctl/matrix.toml` and `--matrix FILE`, each read as a file envctl
//! did not write (`crate::untrusted`).

use std::path::{Path, PathBuf};

use crate::compat::Matrix;
use crate::error::Error;
use crate::profile::file::{MAXIMUM_PROFILE_BYTES, decode_profile_bytes};
use crate::untrusted::Named;

/// The bundled matrix with the user's file (when there is one) and `--matrix` laid over it.
/// `config_home` is `$XDG_CONFIG_HOME` (or `~/.config`), from the context's environment.
pub fn load_matrix(explicit: Option<&Path>, config_home: Option<&Path>) -> Result<Matrix, Error> {
    let mut matrix = Matrix::bundled().clone();
    let user_file = config_home.map(|directory| directory.join("envctl").join("matrix.toml"));
    // The user's file is found where envctl looks (it may not be there, or may not lie
    // there: a link out of the folder is refused); `--matrix` is read where it was typed.
    let files: Vec<(PathBuf, Named)> = user_file
        .map(|path| (path, Named::Found))
        .into_iter()
        .chain(explicit.map(|path| (path.to_path_buf(), Named::ByTheUser)))
        .collect();
    for (path, named) in files {
        let shown = path.display().to_string();
        let refused = |message: String| crate::compat::MatrixError {
            path: shown.clone(),
            problems: vec![crate::profile::diagnostic::file_diagnostic(
                &shown,
                message,
                Some(format!(
                    "check the path given to `--matrix` (or {})",
                    user_matrix_path(config_home)
                )),
            )],
        };
        let bytes = match crate::untrusted::read(&path, MAXIMUM_PROFILE_BYTES, named) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if named == Named::Found => continue,
            Ok(None) => {
                return Err(
                    refused("cannot read the matrix file: it does not exist".into()).into(),
                );
            }
            Err(error) => {
                return Err(refused(format!(
                    "cannot read the matrix file: {}",
                    crate::error::error_chain(&error)
                ))
                .into());
            }
        };
        let text = decode_profile_bytes(bytes, &shown).map_err(|diagnostic| {
            crate::compat::MatrixError {
                path: shown.clone(),
                problems: vec![diagnostic],
            }
        })?;
        matrix = matrix.overlay(Matrix::parse(&text, &shown)?);
    }
    Ok(matrix)
}

fn user_matrix_path(config_home: Option<&Path>) -> String {
    config_home
        .map(|directory| {
            directory
                .join("envctl")
                .join("matrix.toml")
                .display()
                .to_string()
        })
        .unwrap_or_else(|| "$XDG_CONFIG_HOME/envctl/matrix.toml".into())
}
