//! `doctor --matrix-info`: the matrix's date, row counts per table, and every source.

use serde::Serialize;

use crate::compat::Matrix;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ui::Printer;
use crate::ui::table::print_table;

/// `--matrix-info`: date, row counts per table, and every source.
pub fn print_info(matrix: &Matrix, printer: &Printer, json: bool) -> Result<ExitStatus, Error> {
    let info = matrix.info();
    if json {
        #[derive(Serialize)]
        struct Info<'a> {
            matrix: &'a crate::compat::MatrixInfo,
        }
        printer.json(&Info { matrix: &info })?;
        return Ok(ExitStatus::Success);
    }
    printer.data(&format!(
        "compatibility matrix, sources read {}",
        info.date.as_deref().unwrap_or("(no date)")
    ))?;
    if let Some(description) = &info.description {
        printer.data(description)?;
    }
    printer.data(&format!("files: {}", info.origins.join(", ")))?;
    printer.data("")?;
    let rows: Vec<Vec<String>> = info
        .tables
        .iter()
        .map(|table| vec![table.table.to_string(), table.rows.to_string()])
        .collect();
    print_table(printer, &["TABLE", "ROWS"], &rows)?;
    let said = |counts: Vec<String>| counts.join(", ");
    printer.data(&format!(
        "rows by status: {} (verdicts on verified (file), secondary and derived rows say so)",
        said(
            info.rows_by_status
                .iter()
                .map(|(status, rows)| format!("{rows} {status}"))
                .collect()
        )
    ))?;
    printer.data(&format!(
        "torch builds by platform: {}",
        said(
            info.torch_builds_by_platform
                .iter()
                .map(|(platform, rows)| format!("{rows} {platform}"))
                .collect()
        )
    ))?;
    if info.unverified_rows > 0 {
        printer.data(&format!(
            "{} UNVERIFIED rows are kept but never used by a verdict",
            info.unverified_rows
        ))?;
    }
    printer.data("")?;
    printer.data("sources:")?;
    for source in &info.sources {
        printer.data(&format!("  - {source}"))?;
    }
    Ok(ExitStatus::Success)
}
