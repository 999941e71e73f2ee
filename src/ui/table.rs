//! Plain aligned tables for stdout, cut to the terminal width when there is one.

use console::Style;

use super::printer::Printer;
use super::text::shown;
use crate::error::Error;

/// Prints `rows` under `headers`, columns padded to their widest cell. The last column
/// is cut with `…` to fit a terminal.
pub fn print_table(printer: &Printer, headers: &[&str], rows: &[Vec<String>]) -> Result<(), Error> {
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
    let limit = printer.stdout_width();
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
    printer.data(&printer.style_stdout(Style::new().bold(), &format_row(&header_cells)))?;
    for row in &rows {
        printer.data(&format_row(row))?;
    }
    Ok(())
}
