//! Running a command in a container (`docker exec`): output streamed as it comes, stdout
//! and stderr apart (or one TTY stream), stdin forwarded, TTY resizes passed on, and the
//! command's exit code returned.

use bollard::exec::{CreateExecOptions, ResizeExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWriteExt};

use super::{Engine, EngineError};
use crate::facts::container::OutputStream;

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
}

/// The exit code a shell gives a command it cannot find.
pub const COMMAND_NOT_FOUND: i64 = 127;

impl Engine {
    /// Runs `request` in `container` and returns its exit code. `stdin` is copied to the
    /// command until it ends; `sizes` carries the terminal's (rows, columns) for a TTY.
    pub async fn exec(
        &self,
        container: &str,
        request: &ExecRequest,
        stdin: Option<Box<dyn AsyncRead + Unpin + Send>>,
        mut sizes: Option<tokio::sync::watch::Receiver<(u16, u16)>>,
        mut on_output: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    ) -> Result<i64, EngineError> {
        let options = CreateExecOptions {
            cmd: Some(request.command.clone()),
            env: (!request.env.is_empty()).then(|| request.env.clone()),
            user: request.user.clone(),
            working_dir: request.working_directory.clone(),
            tty: Some(request.tty),
            attach_stdin: Some(request.attach_stdin),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let created = self
            .docker
            .create_exec(container, options)
            .await
            .map_err(|error| self.classify(error))?;
        let started = self
            .docker
            .start_exec(
                &created.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: request.tty,
                    output_capacity: None,
                }),
            )
            .await
            .map_err(|error| self.classify(error))?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(EngineError::InvalidBody {
                message: "the daemon detached an attached exec".into(),
            });
        };
        let copy_stdin = async {
            if let Some(mut stdin) = stdin {
                // The command sees end of input when envctl's stdin ends.
                let _ = tokio::io::copy(&mut stdin, &mut input).await;
                let _ = input.shutdown().await;
            }
            std::future::pending::<()>().await
        };
        let resize = async {
            if let Some(sizes) = sizes.as_mut() {
                loop {
                    let (rows, columns) = *sizes.borrow_and_update();
                    let _ = self
                        .docker
                        .resize_exec(
                            &created.id,
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
        };
        let mut not_found = false;
        let read_output = async {
            while let Some(chunk) = output.next().await {
                let (stream, bytes) = match chunk.map_err(|error| self.classify(error))? {
                    bollard::container::LogOutput::StdErr { message } => {
                        (OutputStream::Stderr, message)
                    }
                    bollard::container::LogOutput::StdOut { message }
                    | bollard::container::LogOutput::Console { message } => {
                        (OutputStream::Stdout, message)
                    }
                    bollard::container::LogOutput::StdIn { .. } => continue,
                };
                // runc reports a missing executable on the output stream, then exits 126/127.
                const NOT_FOUND: &[u8] = b"executable file not found";
                let stream = if bytes
                    .windows(NOT_FOUND.len())
                    .any(|window| window == NOT_FOUND)
                {
                    not_found = true;
                    // The runtime's complaint is an error, whatever stream carried it.
                    OutputStream::Stderr
                } else {
                    stream
                };
                match on_output(stream, &bytes) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => break,
                    Err(error) => return Err(EngineError::Output { source: error }),
                }
            }
            Ok::<(), EngineError>(())
        };
        tokio::select! {
            result = read_output => result?,
            () = copy_stdin => {}
            () = resize => {}
        }
        let inspect = self
            .docker
            .inspect_exec(&created.id)
            .await
            .map_err(|error| self.classify(error))?;
        let code = inspect
            .exit_code
            .unwrap_or(if not_found { COMMAND_NOT_FOUND } else { 0 });
        Ok(if not_found && (code == 126 || code == 127) {
            COMMAND_NOT_FOUND
        } else {
            code
        })
    }
}
