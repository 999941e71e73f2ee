//! Rendering findings as doctor-style sections: `✓ ! ✗ ·` lines with hints, a header per
//! section carrying its worst status, and a summary count line.

use console::Style;

use super::printer::Printer;
use super::text::shown;
use crate::checks::{Finding, Status, worst};
use crate::error::Error;

/// A titled group of findings (`Docker`, `GPU`, `Profile pytorch-2.8`).
pub struct Section {
    pub title: String,
    pub findings: Vec<Finding>,
}

fn symbol(status: Status) -> &'static str {
    match status {
        Status::Info => "·",
        Status::Pass => "✓",
        Status::Warn => "!",
        Status::Fail => "✗",
    }
}

fn style(status: Status) -> Style {
    match status {
        Status::Info => Style::new().dim(),
        Status::Pass => Style::new().green(),
        Status::Warn => Style::new().yellow().bold(),
        Status::Fail => Style::new().red().bold(),
    }
}

/// Prints each section on stdout, then the summary line. With `-q` only what needs
/// attention is printed — warnings and failures under their sections' headers — and the
/// summary still counts everything.
pub fn print_sections(printer: &Printer, sections: &[Section]) -> Result<(), Error> {
    let quiet = printer.is_quiet();
    for section in sections {
        let status = worst(&section.findings);
        let needs_attention =
            |finding: &&Finding| !quiet || matches!(finding.status, Status::Warn | Status::Fail);
        if quiet
            && !section
                .findings
                .iter()
                .any(|finding| needs_attention(&finding))
        {
            continue;
        }
        let header = printer.style_stdout(Style::new().bold(), &section.title);
        printer.data(&format!(
            "{} {header}",
            printer.style_stdout(style(status), symbol(status))
        ))?;
        for finding in section.findings.iter().filter(needs_attention) {
            let mark = printer.style_stdout(style(finding.status), symbol(finding.status));
            printer.data(&format!("  {mark} {}", shown(&finding.message)))?;
            if let Some(cause) = finding.cause()
                && matches!(finding.status, Status::Warn | Status::Fail)
            {
                printer.data(&format!("      caused by: {}", shown(cause)))?;
            }
            if let Some(hint) = &finding.hint
                && matches!(finding.status, Status::Warn | Status::Fail)
            {
                let label = printer.style_stdout(Style::new().cyan(), "hint:");
                printer.data(&format!("      {label} {}", shown(hint)))?;
            }
        }
    }
    printer.data(&summary(
        sections.iter().flat_map(|section| section.findings.iter()),
    ))?;
    Ok(())
}

/// `12 passed, 2 warnings, 1 failed`.
pub fn summary<'a>(findings: impl Iterator<Item = &'a Finding>) -> String {
    let (mut passed, mut warnings, mut failed) = (0, 0, 0);
    for finding in findings {
        match finding.status {
            Status::Pass => passed += 1,
            Status::Warn => warnings += 1,
            Status::Fail => failed += 1,
            Status::Info => {}
        }
    }
    let plural = |count: usize, word: &str| {
        if count == 1 {
            format!("1 {word}")
        } else {
            format!("{count} {word}s")
        }
    };
    format!(
        "{passed} passed, {}, {failed} failed",
        plural(warnings, "warning")
    )
}
