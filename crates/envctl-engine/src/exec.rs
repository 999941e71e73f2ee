//! Running a command in a container (`docker exec`): output streamed as it comes, stdout
//! and stderr apart (or one TTY stream), stdin forwarded, TTY resizes passed on, and the
//! command's exit code returned; or started detached (`docker exec -d`).

use bollard::exec::{CreateExecOptions, ResizeExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWriteExt};

use super::{Engine, EngineError};
use envctl_facts::container::OutputStream;

/// What to run, and how.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub command: Vec<String>,
    /// `KEY=VALUE`.
    pub env: Vec<String>,
    pub user: Option<String>,
    pub working_directory: Option<String>,
    pub tty: bool,
    pub attach_stdin: bool,
    /// Set to the exec's id once the daemon made it, so that the caller can signal the
    /// process while the output streams (`exec` forwards Ctrl-C this way).
    pub exec_id: std::sync::Arc<std::sync::OnceLock<String>>,
}

/// The exit code a shell gives a command it cannot find.
pub const COMMAND_NOT_FOUND: i64 = 127;

/// The exit code when envctl's own output was closed by its reader (`… | head -1`): what
/// a shell reports for a program that SIGPIPE ended, as the `docker` CLI would be.
pub const OUTPUT_CLOSED: i64 = 141;

/// How long the daemon may take to report the exit code once the output has ended (the
/// exit event and the end of the stream race by a few milliseconds).
const EXIT_CODE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The output stream of an attached exec, as bollard gives it.
type AttachedOutput = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = Result<bollard::container::LogOutput, bollard::errors::Error>,
            > + Send,
    >,
>;

/// Which stream a chunk of output came on, and its bytes; `None` for echoed input.
fn chunk_stream(chunk: bollard::container::LogOutput) -> Option<(OutputStream, bytes::Bytes)> {
    match chunk {
        bollard::container::LogOutput::StdErr { message } => Some((OutputStream::Stderr, message)),
        bollard::container::LogOutput::StdOut { message }
        | bollard::container::LogOutput::Console { message } => {
            Some((OutputStream::Stdout, message))
        }
        bollard::container::LogOutput::StdIn { .. } => None,
    }
}

/// Copies `stdin` to the command's input, closing it at the end except on a TTY; never
/// returns.
async fn copy_stdin(
    stdin: Option<Box<dyn AsyncRead + Unpin + Send>>,
    input: &mut std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    tty: bool,
) {
    if let Some(mut stdin) = stdin {
        let _ = tokio::io::copy(&mut stdin, input).await;
        // The command sees end of input when envctl's stdin ends; a TTY has no end
        // of input (closing it would end the session while the command runs).
        if !tty {
            let _ = input.shutdown().await;
        }
    }
    std::future::pending::<()>().await
}

/// What the daemon says of an exec instance, as far as envctl needs it.
struct ExecState {
    running: bool,
    /// Whether the command's process ever started: a failed start leaves no pid.
    started: bool,
    exit_code: Option<i64>,
}

impl Engine {
    /// Runs `request` in `container` and returns its exit code. `stdin` is copied to the
    /// command (and closed at its end, except on a TTY, where the end of input would end
    /// the session); `sizes` carries the terminal's (rows, columns) for a TTY. Every chunk
    /// goes to `on_output` unchanged, on the stream the daemon sent it on: nothing is
    /// judged by what the output says.
    pub async fn exec(
        &self,
        container: &str,
        request: &ExecRequest,
        stdin: Option<Box<dyn AsyncRead + Unpin + Send>>,
        mut sizes: Option<tokio::sync::watch::Receiver<(u16, u16)>>,
        mut on_output: impl AsyncFnMut(OutputStream, Vec<u8>) -> std::io::Result<()>,
    ) -> Result<i64, EngineError> {
        let (exec_id, started) = self.create_and_start(container, request, true).await?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(EngineError::InvalidBody {
                message: "the daemon detached an attached exec".into(),
            });
        };
        // When the command could not start, the daemon writes its error onto the output
        // stream: known by the exec having no process when the first chunk comes, not by
        // what the chunk says.
        let mut start_error: Option<Vec<u8>> = None;
        let read_output = self.read_output(&exec_id, &mut output, &mut start_error, &mut on_output);
        let copy_stdin = copy_stdin(stdin, &mut input, request.tty);
        let resize = self.follow_resizes(&exec_id, sizes.as_mut());
        let output_ended = tokio::select! {
            result = read_output => result?,
            () = copy_stdin => true,
            () = resize => true,
            error = self.stopped_answering("running the command") => return Err(error),
        };
        if !output_ended {
            return Ok(OUTPUT_CLOSED);
        }
        let code = self.exit_code(&exec_id).await?;
        Ok(match start_error {
            Some(words) => start_failure_code(code, &String::from_utf8_lossy(&words)),
            None => code,
        })
    }

    /// Passes every terminal size in `sizes` on to the exec; never returns.
    async fn follow_resizes(
        &self,
        exec_id: &str,
        sizes: Option<&mut tokio::sync::watch::Receiver<(u16, u16)>>,
    ) {
        if let Some(sizes) = sizes {
            loop {
                let (rows, columns) = *sizes.borrow_and_update();
                let _ = self
                    .docker
                    .resize_exec(
                        exec_id,
                        ResizeExecOptions {
                            height: rows,
                            width: columns,
                        },
                    )
                    .await;
                if sizes.changed().await.is_err() {
                    break;
                }
            }
        }
        std::future::pending::<()>().await
    }

    /// Hands every chunk of `output` to `on_output` until the output ends (`true`) or its
    /// reader closed it (`false`). The first chunk of an exec that never started is the
    /// daemon's words: they go to stderr and are kept, capped, in `start_error`.
    async fn read_output(
        &self,
        exec_id: &str,
        output: &mut AttachedOutput,
        start_error: &mut Option<Vec<u8>>,
        on_output: &mut impl AsyncFnMut(OutputStream, Vec<u8>) -> std::io::Result<()>,
    ) -> Result<bool, EngineError> {
        let mut first = true;
        while let Some(chunk) = output.next().await {
            let Some((stream, bytes)) = chunk_stream(chunk.map_err(|error| self.classify(error))?)
            else {
                continue;
            };
            // Whether the first bytes are the daemon's words about a failed start. An
            // inspect that cannot be read (an `ExitCode` that is no integer) leaves it
            // unknown: the bytes go out as the command's output, never dropped, and the
            // exit code read at the end says what was wrong with the answer.
            if std::mem::take(&mut first)
                && self
                    .exec_state(exec_id)
                    .await
                    .is_ok_and(|state| !state.started)
            {
                *start_error = Some(Vec::new());
            }
            let stream = match start_error.as_mut() {
                Some(words) => {
                    let room = super::error::MESSAGE_CAP.saturating_sub(words.len());
                    words.extend_from_slice(&bytes[..bytes.len().min(room)]);
                    // The daemon's words, not the command's output.
                    OutputStream::Stderr
                }
                None => stream,
            };
            match on_output(stream, Vec::from(bytes)).await {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Ok(false);
                }
                Err(error) => return Err(EngineError::Output { source: error }),
            }
        }
        Ok(true)
    }

    /// Starts `request` in `container` and leaves it running (`docker exec -d`): an exec
    /// attached to nothing, started with `Detach: true`, so the daemon returns once the
    /// process has started and its output goes nowhere. No shell of the image is involved,
    /// so it works in an image without `sh`. A command that cannot start is the daemon's
    /// error (its words name the missing executable). Returns the exec's id.
    pub async fn exec_detached(
        &self,
        container: &str,
        request: &ExecRequest,
    ) -> Result<String, EngineError> {
        let (exec_id, started) = self.create_and_start(container, request, false).await?;
        match started {
            StartExecResults::Detached => Ok(exec_id),
            StartExecResults::Attached { .. } => Err(EngineError::InvalidBody {
                message: "the daemon attached a detached exec".into(),
            }),
        }
    }

    /// Creates `request`'s exec in `container` and starts it: attached to its streams (and
    /// to stdin as the request asks), or detached, attached to nothing. The one request
    /// pair behind [`Engine::exec`] and the detached exec; records the exec's id in the
    /// request before starting it.
    async fn create_and_start(
        &self,
        container: &str,
        request: &ExecRequest,
        attached: bool,
    ) -> Result<(String, StartExecResults), EngineError> {
        let container = super::reference::container(container)?;
        let options = CreateExecOptions {
            cmd: Some(request.command.clone()),
            env: (!request.env.is_empty()).then(|| request.env.clone()),
            user: request.user.clone(),
            working_dir: request.working_directory.clone(),
            tty: Some(request.tty),
            attach_stdin: Some(attached && request.attach_stdin),
            attach_stdout: Some(attached),
            attach_stderr: Some(attached),
            ..Default::default()
        };
        let created = self
            .short_answer(
                "creating an exec",
                self.docker.create_exec(container, options),
            )
            .await?;
        let exec_id = super::reference::exec(&created.id)?.to_string();
        let _ = request.exec_id.set(exec_id.clone());
        let started = self
            .short_answer(
                "starting an exec",
                self.docker.start_exec(
                    &exec_id,
                    Some(StartExecOptions {
                        detach: !attached,
                        tty: request.tty,
                        output_capacity: None,
                    }),
                ),
            )
            .await?;
        Ok((exec_id, started))
    }

    /// The exec's process as the daemon's host numbers it, while it runs.
    pub async fn exec_host_pid(&self, exec_id: &str) -> Result<Option<u32>, EngineError> {
        let exec_id = super::reference::exec(exec_id)?;
        let inspect = self
            .short_answer("inspecting an exec", self.docker.inspect_exec(exec_id))
            .await?;
        Ok(if inspect.running.unwrap_or(false) {
            inspect
                .pid
                .and_then(|pid| u32::try_from(pid).ok())
                .filter(|pid| *pid > 0)
        } else {
            None
        })
    }

    /// The exec's exit code once its process has ended; `None` while it runs. An ended
    /// exec without a code is [`EngineError::ExitCodeUnknown`], never a guess.
    pub async fn exec_ended(&self, exec_id: &str) -> Result<Option<i64>, EngineError> {
        let exec_id = super::reference::exec(exec_id)?;
        let state = self.exec_state(exec_id).await?;
        if state.running {
            return Ok(None);
        }
        self.exit_code(exec_id).await.map(Some)
    }

    /// Sends `signal` (`INT`, `TERM`) to the process `pid` — as the container numbers it —
    /// with the container's own `kill`, run as root and detached. Through the daemon, so
    /// it works for users who may not signal the daemon's processes themselves.
    pub async fn signal_in_container(
        &self,
        container: &str,
        pid: u32,
        signal: &str,
    ) -> Result<(), EngineError> {
        let container = super::reference::container(container)?;
        let options = CreateExecOptions {
            cmd: Some(vec![
                "kill".to_string(),
                "-s".to_string(),
                signal.to_string(),
                pid.to_string(),
            ]),
            user: Some("0".to_string()),
            attach_stdout: Some(false),
            attach_stderr: Some(false),
            ..Default::default()
        };
        let created = self
            .short_answer(
                "creating an exec",
                self.docker.create_exec(container, options),
            )
            .await?;
        let exec_id = super::reference::exec(&created.id)?.to_string();
        self.short_answer(
            "starting an exec",
            self.docker.start_exec(
                &exec_id,
                Some(StartExecOptions {
                    detach: true,
                    tty: false,
                    output_capacity: None,
                }),
            ),
        )
        .await?;
        Ok(())
    }

    async fn exec_state(&self, exec_id: &str) -> Result<ExecState, EngineError> {
        let inspect = self
            .short_answer("inspecting an exec", self.docker.inspect_exec(exec_id))
            .await?;
        let running = inspect.running.unwrap_or(false);
        // Docker keeps an ended exec's pid; Podman reports `Pid: 0` once it has ended, so
        // there an exit code other than the two of a failed start (126, 127) says the
        // command ran. A command that itself exits 126 or 127 before its first output is
        // read is then taken as not started on Podman: its output goes to stderr.
        let ended_as_a_command = inspect
            .exit_code
            .is_some_and(|code| code != 126 && code != COMMAND_NOT_FOUND);
        Ok(ExecState {
            running,
            started: running || inspect.pid.is_some_and(|pid| pid > 0) || ended_as_a_command,
            exit_code: inspect.exit_code,
        })
    }

    /// The command's exit code once the daemon knows it; never a guess: an exec that
    /// still runs after its output ended, or one the daemon gives no code for, is
    /// [`EngineError::ExitCodeUnknown`].
    async fn exit_code(&self, exec_id: &str) -> Result<i64, EngineError> {
        let deadline = tokio::time::Instant::now() + EXIT_CODE_WAIT;
        loop {
            let state = self.exec_state(exec_id).await?;
            if let (false, Some(code)) = (state.running, state.exit_code) {
                return Ok(code);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::ExitCodeUnknown {
                    endpoint: self.at(),
                    still_running: state.running,
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// The exit code of a command that never started. The daemon reports 126 for every
/// failed start; its error (not the command's output: there was none) says when the
/// executable does not exist, which a shell reports as 127.
fn start_failure_code(code: i64, daemon_words: &str) -> i64 {
    let missing = daemon_words.contains("executable file not found")
        || daemon_words.contains("no such file or directory");
    if code == 126 && missing {
        COMMAND_NOT_FOUND
    } else {
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failed_start_that_names_a_missing_file_becomes_127() {
        let words = "OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: \"nope\": executable file not found in $PATH: unknown";
        assert_eq!(start_failure_code(126, words), 127);
        assert_eq!(
            start_failure_code(126, "permission denied: unknown"),
            126,
            "not executable stays 126"
        );
        assert_eq!(start_failure_code(1, words), 1);
    }
}
