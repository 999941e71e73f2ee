//! Rendering errors (`error:` / `caused by:` / `hint:`) and profile diagnostics with the
//! offending source line underlined.

use console::Style;

use super::printer::Printer;
use super::text::{SHOWN_LIMIT, is_terminal_control, shown};
use crate::error::Error;
use crate::profile::Diagnostic;

/// Writes `error` to stderr: its diagnostics, `error:` with its message, its details,
/// `caused by:` for each cause, and its hint.
pub fn write_error(printer: &Printer, error: &Error) {
    for diagnostic in error.diagnostics() {
        write_diagnostic(printer, diagnostic);
    }
    let label = printer.style_stderr(Style::new().red().bold(), "error");
    printer.stderr_line(&format!("{label}: {}", shown(&error.to_string())));
    write_details(printer, error);
    write_causes(printer, error);
    if let Some(hint) = error.hint() {
        let label = printer.style_stderr(Style::new().cyan().bold(), "hint");
        printer.stderr_line(&format!("  {label}: {}", shown(&hint.to_string())));
    }
}

/// The lines an error of some kinds carries under its message: the failed checks, the
/// settings, the changes, the GPUs held, the policy's violations, the hosts.
fn write_details(printer: &Printer, error: &Error) {
    match error {
        Error::Preflight { findings, .. } => {
            for finding in findings {
                printer.stderr_line(&format!(
                    "  {} {}",
                    printer.style_stderr(Style::new().red().bold(), "✗"),
                    shown(&finding.message)
                ));
                if let Some(cause) = finding.cause() {
                    printer.stderr_line(&format!("      caused by: {}", shown(cause)));
                }
                if let Some(hint) = &finding.hint {
                    printer.stderr_line(&format!("      hint: {}", shown(hint)));
                }
            }
        }
        Error::TrustRequired { settings, .. } => {
            for setting in settings {
                printer.stderr_line(&format!("  {}", shown(setting)));
            }
        }
        Error::ProfileChanged {
            changes,
            made_from,
            profile,
            ..
        } => {
            if let Some(file) = made_from {
                printer.stderr_line(&format!(
                    "  made from: {} (not the `{}` this folder names; the changes are that one's)",
                    shown(file),
                    shown(profile)
                ));
            }
            for change in changes {
                printer.stderr_line(&format!("  changed: {}", shown(&change.to_string())));
            }
        }
        Error::NoFreeGpus { held, skipped, .. } => {
            for line in held {
                printer.stderr_line(&format!("  held: {}", shown(line)));
            }
            for line in skipped {
                printer.stderr_line(&format!("  skipped: {}", shown(line)));
            }
        }
        Error::GpusTakenMeanwhile { shared } | Error::PinnedGpusTaken { shared, .. } => {
            for line in shared {
                printer.stderr_line(&format!("  also on: {}", shown(line)));
            }
        }
        // `policy.toml:3: limits.max_gpus_per_container = 2: the container asks for 4 GPUs`
        Error::PolicyRefused {
            path, violations, ..
        } => {
            for violation in violations {
                printer.stderr_line(&format!(
                    "  caused by: {}",
                    shown(&format!(
                        "{path}:{}: {} = {}: {}",
                        violation.line, violation.rule, violation.limit, violation.message
                    ))
                ));
            }
        }
        Error::NoRoomOnHosts { hosts, .. } => {
            for (host, reason) in hosts {
                printer.stderr_line(&format!("  {}: {}", shown(host), shown(reason)));
            }
        }
        Error::NotGiven { missing, .. } => {
            for setting in missing {
                printer.stderr_line(&format!("  not given: {}", shown(setting)));
            }
        }
        _ => {}
    }
}

/// The error's chain of causes, each once.
fn write_causes(printer: &Printer, error: &Error) {
    let mut source = std::error::Error::source(error);
    let mut previous = error.to_string();
    while let Some(cause) = source {
        // Some causes repeat their own source in their message (hyper does): say it once.
        let text = cause.to_string();
        if !previous.contains(&text) {
            printer.stderr_line(&format!("  caused by: {}", shown(&text)));
        }
        previous = text;
        source = cause.source();
    }
}

/// A profile's line as the diagnostic quotes it: tabs as spaces, anything a terminal would
/// act on as `�` (one column each, unlike an escape), cut after [`SHOWN_LIMIT`] bytes.
fn source_line_shown(line: &str) -> String {
    let mut shown = String::with_capacity(line.len().min(SHOWN_LIMIT) + 3);
    for character in line.chars() {
        if shown.len() + character.len_utf8() > SHOWN_LIMIT {
            shown.push('…');
            break;
        }
        shown.push(match character {
            '\t' => ' ',
            character if is_terminal_control(character) => '\u{fffd}',
            character => character,
        });
    }
    shown
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
    let message = printer.style_stderr(Style::new().bold(), &shown(&diagnostic.message));
    printer.stderr_line(&format!("{label}: {message}"));
    let gutter = diagnostic.line.to_string().len();
    let blue = |text: &str| printer.style_stderr(Style::new().blue().bold(), text);
    printer.stderr_line(&format!(
        "{}{} {}:{}:{}",
        " ".repeat(gutter),
        blue("-->"),
        shown(&diagnostic.path.to_string()),
        diagnostic.line,
        diagnostic.column
    ));
    if let Some(source_line) = &diagnostic.source_line {
        // One column per character, so the carets below stay under the place they mark.
        let line = source_line_shown(source_line);
        printer.stderr_line(&format!("{} {}", " ".repeat(gutter), blue("|")));
        printer.stderr_line(&format!(
            "{} {} {line}",
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
            "{} {} hint: {}",
            " ".repeat(gutter),
            blue("="),
            shown(&hint.to_string())
        ));
    }
    printer.stderr_line("");
}
