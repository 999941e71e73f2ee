//! `envctl logs TARGET [-f] [--tail N]`: the container's output, stdout to stdout and
//! stderr to stderr; with `--json`, one document of lines tagged with their stream, or
//! with `-f` one JSON line per output line.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::OutputStream;
use crate::ops::target::find_container;

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
        pending.extend_from_slice(bytes);
        while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            self.lines.push(Line {
                stream: name,
                // Output is the program's; invalid UTF-8 is shown, not refused.
                text: String::from_utf8_lossy(&line[..end]).into_owned(),
            });
        }
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

pub fn run(
    target: &str,
    follow: bool,
    tail: Option<u64>,
    context: &Context,
) -> Result<ExitStatus, Error> {
    let tail = tail.map_or_else(|| "all".to_string(), |lines| lines.to_string());
    runtime()?.block_on(async {
        let engine = context.engine().await?;
        let container = find_container(&engine, context, target).await?;
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
                            container: &container.name,
                            line,
                        })
                        .map_err(|error| std::io::Error::other(error.to_string()))?;
                }
                Ok(())
            };
            engine
                .logs(&container.id, true, &tail, |stream, bytes| {
                    lines.push(stream, bytes);
                    emit(lines.take())
                })
                .await?;
            emit(lines.finish())?;
            return Ok(());
        }
        if context.json {
            let mut lines = Lines::default();
            engine
                .logs(&container.id, false, &tail, |stream, bytes| {
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
                container: &container.name,
                lines: lines.finish(),
            });
        }
        engine
            .logs(&container.id, follow, &tail, |stream, bytes| match stream {
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
