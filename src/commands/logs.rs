//! `envctl logs [TARGET] [-f] [--tail N]` (no TARGET: `ops::target::obvious_container`): the container's output, stdout to stdout and
//! stderr to stderr; with `--json`, one document of lines tagged with their stream, or
//! with `-f` one JSON line per output line. The container and its output come from
//! `ops::logs`; this file only formats them.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::OutputStream;
use crate::ops::logs::ContainerOutput;

/// One line of the container's output, for `--json`.
#[derive(Debug, Serialize, PartialEq)]
struct Line {
    stream: &'static str,
    text: String,
}

/// Splits chunks into lines per stream: a chunk may end mid-line, and the other stream
/// may come in between.
#[derive(Default)]
struct Lines {
    lines: Vec<Line>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Lines {
    fn push(&mut self, stream: OutputStream, bytes: &[u8]) {
        let (name, pending) = match stream {
            OutputStream::Stdout => ("stdout", &mut self.stdout),
            OutputStream::Stderr => ("stderr", &mut self.stderr),
        };
        // Only the new bytes are searched: what was pending holds no newline, so a long
        // line costs time linear in its length.
        let mut search = pending.len();
        pending.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(offset) = pending[search..].iter().position(|byte| *byte == b'\n') {
            let end = search + offset;
            self.lines.push(Line {
                stream: name,
                // Output is the program's; invalid UTF-8 is shown, not refused.
                text: String::from_utf8_lossy(&pending[start..end]).into_owned(),
            });
            start = end + 1;
            search = start;
        }
        pending.drain(..start);
    }

    /// The complete lines so far, taken out.
    fn take(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.lines)
    }

    /// The lines, with what each stream left without a final newline.
    fn finish(mut self) -> Vec<Line> {
        for (name, pending) in [("stdout", self.stdout), ("stderr", self.stderr)] {
            if !pending.is_empty() {
                self.lines.push(Line {
                    stream: name,
                    text: String::from_utf8_lossy(&pending).into_owned(),
                });
            }
        }
        self.lines
    }
}

/// `envctl logs`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// A container name or id (12+ hex digits), else a profile name or path; left out:
    /// the obvious container (see `envctl exec --help`)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::targets))]
    pub target: Option<String>,
    /// Keep printing new output until the container stops
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines
    #[arg(long, value_name = "N")]
    pub tail: Option<u64>,
}

pub fn run(arguments: LogsArgs, context: &Context) -> Result<ExitStatus, Error> {
    let LogsArgs {
        target,
        follow,
        tail,
    } = arguments;
    let target = target.as_deref();
    let tail = tail.map_or_else(|| "all".to_string(), |lines| lines.to_string());
    runtime()?.block_on(async {
        let container = ContainerOutput::find(context, target).await?;
        if context.json && follow {
            // A stream: one JSON line per output line, as it comes.
            #[derive(Serialize)]
            struct StreamedLine<'a> {
                container: &'a str,
                #[serde(flatten)]
                line: Line,
            }
            let mut lines = Lines::default();
            let emit = |lines: Vec<Line>| -> std::io::Result<()> {
                for line in lines {
                    context
                        .printer
                        .json_line(&StreamedLine {
                            container: container.name(),
                            line,
                        })
                        .map_err(|error| std::io::Error::other(error.to_string()))?;
                }
                Ok(())
            };
            container
                .read(true, &tail, |stream, bytes| {
                    lines.push(stream, bytes);
                    emit(lines.take())
                })
                .await?;
            emit(lines.finish())?;
            return Ok(());
        }
        if context.json {
            let mut lines = Lines::default();
            container
                .read(false, &tail, |stream, bytes| {
                    lines.push(stream, bytes);
                    Ok(())
                })
                .await?;
            #[derive(Serialize)]
            struct Logs<'a> {
                container: &'a str,
                lines: Vec<Line>,
            }
            return context.printer.json(&Logs {
                container: container.name(),
                lines: lines.finish(),
            });
        }
        container
            .read(follow, &tail, |stream, bytes| match stream {
                OutputStream::Stdout => context.printer.stdout_bytes(bytes),
                OutputStream::Stderr => context.printer.stderr_bytes(bytes),
            })
            .await?;
        Ok::<_, Error>(())
    })?;
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_in_many_chunks_takes_linear_time() {
        let mut lines = Lines::default();
        let chunk = vec![b'x'; 16 * 1024];
        let started = std::time::Instant::now();
        for _ in 0..1280 {
            lines.push(OutputStream::Stdout, &chunk);
        }
        lines.push(OutputStream::Stdout, b"\n");
        let lines = lines.finish();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text.len(), 1280 * 16 * 1024);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn chunks_become_lines_per_stream() {
        let mut lines = Lines::default();
        lines.push(OutputStream::Stdout, b"out-fi");
        lines.push(OutputStream::Stderr, b"err\n");
        lines.push(OutputStream::Stdout, b"rst\nout-");
        lines.push(OutputStream::Stdout, b"\xff last");
        let text = |stream, text: &str| Line {
            stream,
            text: text.into(),
        };
        assert_eq!(
            lines.finish(),
            vec![
                text("stderr", "err"),
                text("stdout", "out-first"),
                text("stdout", "out-\u{fffd} last"),
            ]
        );
    }
}
