//! Plain aligned tables for stdout, cut to the terminal width when there is one.

use console::Style;

use super::printer::Printer;
use super::text::shown;
use crate::error::Error;

/// Prints `rows` under `headers`, columns padded to their widest cell. The last column
/// is cut with `…` to fit a terminal.
pub fn print_table(printer: &Printer, headers: &[&str], rows: &[Vec<String>]) -> Result<(), Error> {
    for line in table_lines(printer, headers, rows, printer.stdout_width()) {
        printer.data(&line)?;
    }
    Ok(())
}

/// The lines [`print_table`] prints, cut to `limit` columns when given (the live screen's
/// width, which draws them itself).
pub fn table_lines(
    printer: &Printer,
    headers: &[&str],
    rows: &[Vec<String>],
    limit: Option<usize>,
) -> Vec<String> {
    let columns = headers.len();
    // Cells quote outside text (container names, images, daemon states): escaped, capped.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| shown(cell).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = headers
        .iter()
        .map(|header| console::measure_text_width(header))
        .collect();
    for row in &rows {
        for (index, cell) in row.iter().enumerate().take(columns) {
            widths[index] = widths[index].max(console::measure_text_width(cell));
        }
    }
    let format_row = |cells: &[String]| {
        let mut line = String::new();
        for (index, cell) in cells.iter().enumerate().take(columns) {
            if index + 1 == columns {
                line.push_str(cell);
            } else {
                line.push_str(&console::pad_str(
                    cell,
                    widths[index],
                    console::Alignment::Left,
                    None,
                ));
                line.push_str("  ");
            }
        }
        let line = line.trim_end().to_string();
        match limit {
            Some(width) => console::truncate_str(&line, width, "…").into_owned(),
            None => line,
        }
    };
    let header_cells: Vec<String> = headers.iter().map(|header| header.to_string()).collect();
    let mut lines = vec![printer.style_stdout(Style::new().bold(), &format_row(&header_cells))];
    lines.extend(rows.iter().map(|row| format_row(row)));
    lines
}
