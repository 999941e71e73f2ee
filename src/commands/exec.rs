//! `envctl exec TARGET -- CMD…`, `envctl exec TARGET NAME [-- ARGS…]` (a command of the
//! profile's `[commands]`) and `envctl shell TARGET`: the command runs in the running
//! container and its exit code becomes envctl's.

use super::target::find_container;
use super::{Context, runtime};
use crate::engine::Engine;
use crate::engine::containers::ContainerDetails;
use crate::engine::exec::ExecRequest;
use crate::engine::logs::OutputStream;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::spec::PROFILE_LABEL;
use crate::ui::terminal;

pub struct ExecArguments {
    pub target: String,
    /// A `[commands]` name, or `nvidia-check`.
    pub name: Option<String>,
    /// After `--`: the command itself, or arguments appended to a named command.
    pub arguments: Vec<String>,
    pub tty: bool,
    pub user: Option<String>,
    pub workdir: Option<String>,
    pub env: Vec<String>,
    pub nvidia_check: super::nvidia_check::NvidiaCheckOptions,
}

pub fn run(arguments: ExecArguments, context: &Context) -> Result<ExitStatus, Error> {
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let engine = context.engine().await?;
        let container = running_container(&engine, context, &arguments.target).await?;
        if arguments.name.as_deref() == Some("nvidia-check") {
            return super::nvidia_check::run(&engine, &container, &arguments.nvidia_check, context)
                .await;
        }
        let command = match &arguments.name {
            None if arguments.arguments.is_empty() => {
                return Err(Error::Usage {
                    message: "no command to run".into(),
                    hint: Some(format!(
                        "`envctl exec {} -- CMD ARGS…`, or a name from the profile's [commands]",
                        arguments.target
                    )),
                });
            }
            None => arguments.arguments.clone(),
            Some(name) => {
                let mut command = named_command(context, &container, name)?;
                command.extend(arguments.arguments.iter().cloned());
                command
            }
        };
        let request = ExecRequest {
            command,
            env: arguments.env.clone(),
            user: arguments.user.clone(),
            working_directory: arguments.workdir.clone(),
            tty: arguments.tty,
            attach_stdin: arguments.tty || !terminal::stdin_is_terminal(),
        };
        // Like `docker exec`: a signal ends envctl (130/143); the command in the container
        // is not envctl's to kill. With a TTY, Ctrl-C travels to the command as a key.
        let code = tokio::select! {
            code = run_exec(&engine, &container.id, &request, context) => code?,
            signal = super::termination_signal() => return Ok(ExitStatus::External(signal)),
        };
        Ok(ExitStatus::External(
            u8::try_from(code.clamp(0, 255)).unwrap_or(255),
        ))
    });
    // A read of the terminal may still be blocked in tokio's stdin thread: do not wait for
    // it (it would hold envctl open until the next key press).
    runtime.shutdown_background();
    result
}

/// `envctl shell TARGET`: bash when the image has it, else sh, on a TTY.
pub fn shell(target: &str, user: Option<String>, context: &Context) -> Result<ExitStatus, Error> {
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let engine = context.engine().await?;
        let container = running_container(&engine, context, target).await?;
        let request = ExecRequest {
            // `exec` replaces sh with bash when there is one, so the exit code is bash's.
            command: vec![
                "sh".into(),
                "-c".into(),
                "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi".into(),
            ],
            user,
            tty: terminal::stdin_is_terminal(),
            attach_stdin: true,
            ..ExecRequest::default()
        };
        // Like `docker exec`: a signal ends envctl (130/143); the command in the container
        // is not envctl's to kill. With a TTY, Ctrl-C travels to the command as a key.
        let code = tokio::select! {
            code = run_exec(&engine, &container.id, &request, context) => code?,
            signal = super::termination_signal() => return Ok(ExitStatus::External(signal)),
        };
        Ok(ExitStatus::External(
            u8::try_from(code.clamp(0, 255)).unwrap_or(255),
        ))
    });
    // A read of the terminal may still be blocked in tokio's stdin thread: do not wait for
    // it (it would hold envctl open until the next key press).
    runtime.shutdown_background();
    result
}

/// Finds the target's container and insists it runs.
pub async fn running_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    let container = find_container(engine, context, target).await?;
    if !container.running {
        let profile = container
            .labels
            .get(PROFILE_LABEL)
            .cloned()
            .unwrap_or_else(|| target.to_string());
        return Err(Error::TargetNotFound {
            target: target.to_string(),
            hint: format!(
                "container `{}` is {}: start it with `envctl up {profile}`",
                container.name, container.status
            ),
        });
    }
    Ok(container)
}

fn named_command(
    context: &Context,
    container: &ContainerDetails,
    name: &str,
) -> Result<Vec<String>, Error> {
    let profile = container
        .labels
        .get(PROFILE_LABEL)
        .ok_or_else(|| Error::Usage {
            message: format!(
                "container `{}` has no envctl profile, so it has no named commands",
                container.name
            ),
            hint: Some(format!(
                "run a command with `envctl exec {} -- {name} …`",
                container.name
            )),
        })?;
    let resolved = context.search_path.resolve(profile)?;
    resolved.profile.commands.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = resolved
            .profile
            .commands
            .keys()
            .map(String::as_str)
            .collect();
        Error::Usage {
            message: format!("profile `{profile}` has no command `{name}`"),
            hint: Some(if known.is_empty() {
                format!(
                    "add it under [commands] in {}, or run `envctl exec {} -- {name} …`",
                    resolved.file, container.name
                )
            } else {
                format!(
                    "its commands: {} (or run any command after `--`)",
                    known.join(", ")
                )
            }),
        }
    })
}

/// Runs the exec with stdin, TTY raw mode and resizes wired to this terminal.
async fn run_exec(
    engine: &Engine,
    container: &str,
    request: &ExecRequest,
    context: &Context,
) -> Result<i64, Error> {
    let stdin: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> = request
        .attach_stdin
        .then(|| Box::new(tokio::io::stdin()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
    let (sizes, _raw_mode, resize_task) = if request.tty {
        let (sender, receiver) = tokio::sync::watch::channel(terminal::size());
        // SIGWINCH: the terminal was resized; tell the exec.
        let task = tokio::spawn(async move {
            if let Ok(mut window_changes) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
            {
                while window_changes.recv().await.is_some() {
                    if sender.send(terminal::size()).is_err() {
                        break;
                    }
                }
            }
        });
        (
            Some(receiver),
            Some(terminal::RawMode::enable()),
            Some(task),
        )
    } else {
        (None, None, None)
    };
    let result = engine
        .exec(
            container,
            request,
            stdin,
            sizes,
            |stream, bytes| match stream {
                OutputStream::Stdout => context.printer.stdout_bytes(bytes),
                OutputStream::Stderr => context.printer.stderr_bytes(bytes),
            },
        )
        .await;
    if let Some(task) = resize_task {
        task.abort();
    }
    Ok(result?)
}
