//! The one writer of stdout and stderr. Colour follows `--color`, `NO_COLOR` and whether
//! the stream is a terminal; `-q` silences talk, never data or errors.

use std::io::{self, Write};

use console::Style;
use serde::Serialize;

use super::text::shown;
use crate::error::Error;

/// The JSON schema version every `--json` document carries.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// Owns stdout and stderr for the whole run.
#[derive(Debug)]
pub struct Printer {
    stdout_color: bool,
    stderr_color: bool,
    verbosity: Verbosity,
}

/// Where [`StreamWriter`]'s thread says how a write went.
type Written = tokio::sync::oneshot::Sender<io::Result<()>>;

/// Hands data to [`Printer::stream_writer`]'s thread. When the process ends while the
/// thread is blocked in a write, it ends with it: Rust's exit only tries stdout's lock.
#[derive(Debug)]
pub struct StreamWriter {
    lines: std::sync::mpsc::Sender<(String, Written)>,
}

impl StreamWriter {
    /// Queues `text` (one or more lines, a newline is added) for stdout; the receiver
    /// answers once it is written, or with why it was not.
    pub fn write(&self, text: String) -> tokio::sync::oneshot::Receiver<io::Result<()>> {
        let (done, receiver) = tokio::sync::oneshot::channel();
        // A writer thread that ended drops `done`: the receiver then says so.
        let _queued = self.lines.send((text, done));
        receiver
    }
}

/// A `--json` document: `schema_version` first, then the command's own fields.
#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    schema_version: u32,
    #[serde(flatten)]
    body: &'a T,
}

impl Printer {
    pub fn new(color: ColorChoice, verbosity: Verbosity) -> Self {
        let (stdout_color, stderr_color) = match color {
            ColorChoice::Always => (true, true),
            ColorChoice::Never => (false, false),
            // console reads NO_COLOR, CLICOLOR(_FORCE) and whether the stream is a TTY.
            ColorChoice::Auto => (console::colors_enabled(), console::colors_enabled_stderr()),
        };
        Printer {
            stdout_color,
            stderr_color,
            verbosity,
        }
    }

    /// Whether `-q` silenced talk.
    pub fn is_quiet(&self) -> bool {
        self.verbosity == Verbosity::Quiet
    }

    /// Data for stdout, a line.
    pub fn data(&self, text: &str) -> Result<(), Error> {
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{text}")?;
        stdout.flush()?;
        Ok(())
    }

    /// A writer of data lines on a thread of its own, for a stream (`stats` into a pipe)
    /// whose reader may stop reading: the caller waits for each line with whatever else
    /// it waits for (a signal), where a write on its own thread would block it, signals
    /// and all, for as long as the pipe stays full.
    pub fn stream_writer(&self) -> io::Result<StreamWriter> {
        let (sender, receiver) = std::sync::mpsc::channel::<(String, Written)>();
        std::thread::Builder::new()
            .name("envctl-stdout".into())
            .spawn(move || {
                for (text, done) in receiver {
                    let written = {
                        let mut stdout = io::stdout().lock();
                        writeln!(stdout, "{text}").and_then(|()| stdout.flush())
                    };
                    if done.send(written).is_err() {
                        break;
                    }
                }
            })?;
        Ok(StreamWriter { lines: sender })
    }

    /// Raw bytes for stdout (a container's output), flushed at once.
    pub fn stdout_bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(bytes)?;
        stdout.flush()
    }

    /// Raw bytes for stderr (a container's error output), flushed at once.
    pub fn stderr_bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stderr = io::stderr().lock();
        stderr.write_all(bytes)?;
        stderr.flush()
    }

    /// One JSON document on stdout, with `schema_version`.
    pub fn json<T: Serialize>(&self, body: &T) -> Result<(), Error> {
        self.document(body, true)
    }

    /// One JSON document on one line, for streams (`logs -f --json`): JSON lines, each with
    /// `schema_version`.
    pub fn json_line<T: Serialize>(&self, body: &T) -> Result<(), Error> {
        self.document(body, false)
    }

    fn document<T: Serialize>(&self, body: &T, pretty: bool) -> Result<(), Error> {
        let document = Document {
            schema_version: SCHEMA_VERSION,
            body,
        };
        let text = if pretty {
            serde_json::to_string_pretty(&document)
        } else {
            serde_json::to_string(&document)
        }
        .map_err(|error| Error::Output(io::Error::other(error)))?;
        self.data(&text)
    }

    /// Talk on stderr (progress, confirmations); silent with `-q`. Talk often quotes
    /// outside text (names, daemon answers): it is shown escaped and capped.
    pub fn info(&self, text: &str) {
        if self.verbosity > Verbosity::Quiet {
            self.stderr_line(&shown(text));
        }
    }

    /// Detail on stderr, only with `-v`.
    pub fn detail(&self, text: &str) {
        if self.verbosity >= Verbosity::Verbose {
            self.stderr_line(&self.style_stderr(Style::new().dim(), &shown(text)));
        }
    }

    /// `warning: …` on stderr, silent with `-q`.
    pub fn warn(&self, text: &str) {
        if self.verbosity > Verbosity::Quiet {
            let label = self.style_stderr(Style::new().yellow().bold(), "warning");
            self.stderr_line(&format!("{label}: {}", shown(text)));
        }
    }

    /// An error with its causes and hint, after any per-line diagnostics it carries.
    pub fn error(&self, error: &Error) {
        super::report::write_error(self, error);
    }

    pub(super) fn stderr_line(&self, text: &str) {
        // Nothing sensible is left to do when stderr itself is gone.
        let _ = writeln!(io::stderr().lock(), "{text}");
    }

    pub(super) fn style_stderr(&self, style: Style, text: &str) -> String {
        style
            .force_styling(self.stderr_color)
            .apply_to(text)
            .to_string()
    }

    pub fn style_stdout(&self, style: Style, text: &str) -> String {
        style
            .force_styling(self.stdout_color)
            .apply_to(text)
            .to_string()
    }

    /// The terminal width of stdout, when it is a terminal.
    pub fn stdout_width(&self) -> Option<usize> {
        console::Term::stdout()
            .size_checked()
            .map(|(_, columns)| usize::from(columns))
    }
}
