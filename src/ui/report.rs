//! Rendering errors (`error:` / `caused by:` / `hint:`) and profile diagnostics with the
//! offending source line underlined.

use console::Style;

use super::printer::Printer;
use crate::error::Error;
use crate::profile::Diagnostic;

pub fn write_error(printer: &Printer, error: &Error) {
    for diagnostic in error.diagnostics() {
        write_diagnostic(printer, diagnostic);
    }
    let label = printer.style_stderr(Style::new().red().bold(), "error");
    printer.stderr_line(&format!("{label}: {error}"));
    match error {
        Error::Preflight { findings, .. } => {
            for finding in findings {
                printer.stderr_line(&format!(
                    "  {} {}",
                    printer.style_stderr(Style::new().red().bold(), "✗"),
                    finding.message
                ));
                if let Some(hint) = &finding.hint {
                    printer.stderr_line(&format!("      hint: {hint}"));
                }
            }
        }
        Error::ProfileChanged { changes, .. } => {
            for change in changes {
                printer.stderr_line(&format!("  changed: {change}"));
            }
        }
        _ => {}
    }
    let mut source = std::error::Error::source(error);
    let mut previous = error.to_string();
    while let Some(cause) = source {
        // Some causes repeat their own source in their message (hyper does): say it once.
        let text = cause.to_string();
        if !previous.contains(&text) {
            printer.stderr_line(&format!("  caused by: {text}"));
        }
        previous = text;
        source = cause.source();
    }
    if let Some(hint) = error.hint() {
        let label = printer.style_stderr(Style::new().cyan().bold(), "hint");
        printer.stderr_line(&format!("  {label}: {hint}"));
    }
}

/// ```text
/// error: unknown key `memroy`
///   --> envctl/team.toml:3:1
///    |
///  3 | memroy = "16g"
///    | ^^^^^^
///    = hint: did you mean `memory`?
/// ```
pub fn write_diagnostic(printer: &Printer, diagnostic: &Diagnostic) {
    let label = printer.style_stderr(Style::new().red().bold(), "error");
    let message = printer.style_stderr(Style::new().bold(), &diagnostic.message);
    printer.stderr_line(&format!("{label}: {message}"));
    let gutter = diagnostic.line.to_string().len();
    let blue = |text: &str| printer.style_stderr(Style::new().blue().bold(), text);
    printer.stderr_line(&format!(
        "{}{} {}:{}:{}",
        " ".repeat(gutter),
        blue("-->"),
        diagnostic.path,
        diagnostic.line,
        diagnostic.column
    ));
    if let Some(source_line) = &diagnostic.source_line {
        let shown: String = source_line
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        printer.stderr_line(&format!("{} {}", " ".repeat(gutter), blue("|")));
        printer.stderr_line(&format!(
            "{} {} {shown}",
            blue(&diagnostic.line.to_string()),
            blue("|")
        ));
        let carets = printer.style_stderr(Style::new().red().bold(), &"^".repeat(diagnostic.width));
        printer.stderr_line(&format!(
            "{} {} {}{carets}",
            " ".repeat(gutter),
            blue("|"),
            " ".repeat(diagnostic.column - 1)
        ));
    }
    if let Some(hint) = &diagnostic.hint {
        printer.stderr_line(&format!(
            "{} {} hint: {hint}",
            " ".repeat(gutter),
            blue("=")
        ));
    }
    printer.stderr_line("");
}
