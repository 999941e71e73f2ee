//! The compatibility matrix a command uses: the bundled one, overlaid with
//! `$XDG_CONFIG_HOME/envctl/matrix.toml` and `--matrix FILE`.

use std::path::{Path, PathBuf};

use crate::compat::Matrix;
use crate::error::Error;

/// The bundled matrix with the user's file (when there is one) and `--matrix` laid over it.
/// `config_home` is `$XDG_CONFIG_HOME` (or `~/.config`), from the context's environment.
pub fn load_matrix(explicit: Option<&Path>, config_home: Option<&Path>) -> Result<Matrix, Error> {
    let mut matrix = Matrix::bundled().clone();
    let user_file = config_home.map(|directory| directory.join("envctl").join("matrix.toml"));
    let files: Vec<PathBuf> = user_file
        .filter(|path| path.is_file())
        .into_iter()
        .chain(explicit.map(Path::to_path_buf))
        .collect();
    for path in files {
        let shown = path.display().to_string();
        let text =
            crate::profile::file::read_profile_text(&path, &shown).map_err(|mut diagnostic| {
                // The file reader speaks of profiles; this file is a matrix.
                diagnostic.message = diagnostic.message.replace("the profile", "the matrix file");
                diagnostic.hint = Some(format!(
                    "check the path given to `--matrix` (or {})",
                    user_matrix_path(config_home)
                ));
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
