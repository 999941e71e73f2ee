//! The compatibility matrix a command uses: the bundled one, overlaid with
//! `$XDG_CONFIG_HOME/envctl/matrix.toml` and `--matrix FILE`; and `--matrix-info`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Context;
use crate::compat::Matrix;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ui::table::print_table;

/// The bundled matrix with the user's file (when there is one) and `--matrix` laid over it.
pub fn load_matrix(explicit: Option<&Path>) -> Result<Matrix, Error> {
    let mut matrix = Matrix::bundled().clone();
    let user_file = super::user_config_directory()
        .map(|directory| directory.join("envctl").join("matrix.toml"));
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
                    user_matrix_path()
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

fn user_matrix_path() -> String {
    super::user_config_directory()
        .map(|directory| {
            directory
                .join("envctl")
                .join("matrix.toml")
                .display()
                .to_string()
        })
        .unwrap_or_else(|| "$XDG_CONFIG_HOME/envctl/matrix.toml".into())
}

/// `--matrix-info`: date, row counts per table, and every source.
pub fn print_info(matrix: &Matrix, context: &Context) -> Result<ExitStatus, Error> {
    let info = matrix.info();
    if context.json {
        #[derive(Serialize)]
        struct Info<'a> {
            matrix: &'a crate::compat::MatrixInfo,
        }
        context.printer.json(&Info { matrix: &info })?;
        return Ok(ExitStatus::Success);
    }
    context.printer.data(&format!(
        "compatibility matrix, sources read {}",
        info.date.as_deref().unwrap_or("(no date)")
    ))?;
    if let Some(description) = &info.description {
        context.printer.data(description)?;
    }
    context
        .printer
        .data(&format!("files: {}", info.origins.join(", ")))?;
    context.printer.data("")?;
    let rows: Vec<Vec<String>> = info
        .tables
        .iter()
        .map(|table| vec![table.table.to_string(), table.rows.to_string()])
        .collect();
    print_table(&context.printer, &["TABLE", "ROWS"], &rows)?;
    if info.unverified_rows > 0 {
        context.printer.data(&format!(
            "{} UNVERIFIED rows are kept but never used by a verdict",
            info.unverified_rows
        ))?;
    }
    context.printer.data("")?;
    context.printer.data("sources:")?;
    for source in &info.sources {
        context.printer.data(&format!("  - {source}"))?;
    }
    Ok(ExitStatus::Success)
}
