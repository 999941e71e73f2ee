//! `exec`'s and `shell`'s work with the engine, below the terminal the command wires:
//! the connection ([`Session`], which the command holds without seeing the engine), which
//! running container an exec command line means ([`resolve`], over the command's
//! own word grammar), the command run there ([`Exec`]: attached to the streams the
//! command hands it, or detached), its exit code once its process ended, and a signal
//! passed on to that process.

use crate::container_plan::shell_quote;
use crate::context::Context;
use crate::engine::Engine;
use crate::engine::exec::ExecRequest;
use crate::error::Error;
use crate::facts::container::{ContainerDetails, OutputStream};
use crate::ops::target::{
    Lookup, NVIDIA_CHECK, Purpose, command_names, ensure_running, look_up, nearest_name,
    nothing_error, obvious_container,
};

/// The exit code a shell gives a command it cannot find.
pub const COMMAND_NOT_FOUND: i64 = crate::engine::exec::COMMAND_NOT_FOUND;

/// The exit code when envctl's own output was closed by its reader (`… | head -1`), as a
/// shell reports a program SIGPIPE ended.
pub const OUTPUT_CLOSED: i64 = crate::engine::exec::OUTPUT_CLOSED;

/// The container and the request an `exec` command line means, and where the request's
/// words begin in `words` (1 after a TARGET, else 0): the rule of the module doc,
/// documented in `envctl exec --help` and ARCHITECTURE.md ("TARGET"). The words after
/// TARGET are read by `interpret` (exec's own grammar: the words, the names of the
/// profile's `[commands]`, the TARGET as hints show it); `is_bare_command` tells a
/// request that is a command written without `--` (which a word near a name refuses).
pub async fn resolve<R>(
    engine: &Engine,
    context: &Context,
    words: &[String],
    interpret: impl Fn(&[String], &[String], &str) -> Result<R, Error>,
    is_bare_command: impl Fn(&R) -> bool,
) -> Result<(ContainerDetails, R, usize), Error> {
    let Some(first) = words.first() else {
        let container = obvious_running(engine, context).await?;
        let request = interpret(&[], &[], &container.name)?;
        return Ok((container, request, 0));
    };
    let lookup = match look_up(engine, context, first).await {
        // `./run.sh` or `/bin/ls` is read as a profile path first; a file that is not a
        // profile is the command.
        Err(Error::Profile(_)) if first.contains('/') && !first.ends_with(".toml") => {
            Lookup::Nothing { prefix_of: None }
        }
        other => other?,
    };
    match lookup {
        Lookup::Container(container) => {
            let container = ensure_running(engine, *container)?;
            let names = command_names(context, &container);
            let request = interpret(&words[1..], &names, &container.name)?;
            return Ok((container, request, 1));
        }
        // The start of an id is meant as a container, never as a command.
        Lookup::Nothing {
            prefix_of: Some(name),
        } => return Err(nothing_error(engine, context, first, Some(&name), &[]).await),
        Lookup::Nothing { prefix_of: None } => {}
    }
    let shown: Vec<String> = words.iter().map(|word| shell_quote(word)).collect();
    let rest = shown.join(" ");
    let purpose = Purpose {
        command: "exec",
        rest: &rest,
        // nvidia-check is plainly a command: say only that no TARGET was given.
        word: (first != NVIDIA_CHECK).then_some(first.as_str()),
    };
    match obvious_container(engine, context, purpose).await {
        Ok(container) => {
            let container = ensure_running(engine, container)?;
            let names = command_names(context, &container);
            let request = interpret(words, &names, &container.name)?;
            if is_bare_command(&request) {
                refuse_target_typo(engine, context, words, &names, &container).await?;
            }
            Ok((container, request, 0))
        }
        Err(error) if first == NVIDIA_CHECK => Err(error),
        // No obvious container to hold the command: a typo of a TARGET is the likelier
        // mistake when one is near.
        Err(error) => match nearest_name(engine, context, first, &[]).await? {
            Some(near) => Err(Error::TargetNotFound {
                target: first.clone(),
                hint: format!("did you mean `{near}`?"),
            }),
            None => Err(error),
        },
    }
}

/// Refuses a command written without `--` (`words`, meant for the obvious `container`)
/// whose first word reads as a TARGET: `WORD -- CMD` is the form of a TARGET (or of a
/// NAME), so a word that names neither is a TARGET not found, never a command for
/// whichever container is the obvious one; and a word near a profile, a container or a
/// command (`names`) is a typo, never a command to run in whatever container happens to
/// be the obvious one.
async fn refuse_target_typo(
    engine: &Engine,
    context: &Context,
    words: &[String],
    names: &[String],
    container: &ContainerDetails,
) -> Result<(), Error> {
    let first = &words[0];
    if words.get(1).is_some_and(|word| word == "--") {
        return Err(nothing_error(engine, context, first, None, &[]).await);
    }
    if let Some(near) = nearest_name(engine, context, first, names).await? {
        return Err(Error::TargetNotFound {
            target: first.clone(),
            hint: format!(
                "did you mean `{near}`? (to run `{first}` itself in {}: `{}`)",
                container.name,
                replaced_with_target(words, &container.name)
            ),
        });
    }
    Ok(())
}

/// The obvious container, running, for an `exec` given no word at all.
async fn obvious_running(engine: &Engine, context: &Context) -> Result<ContainerDetails, Error> {
    let purpose = Purpose {
        command: "exec",
        rest: "CMD",
        word: None,
    };
    let container = obvious_container(engine, context, purpose).await?;
    ensure_running(engine, container)
}

/// The exec command line with TARGET put in front of `words`.
fn replaced_with_target(words: &[String], target: &str) -> String {
    let mut line = vec![
        "envctl".to_string(),
        "exec".to_string(),
        shell_quote(target),
    ];
    line.extend(words.iter().map(|word| shell_quote(word)));
    line.join(" ")
}

/// The daemon an `exec` or `shell` talks to, connected once by [`Session::open`]: it
/// resolves the TARGET, runs nvidia-check and starts the command there, so the command
/// layer wires the terminal without ever holding the engine.
pub struct Session {
    engine: Engine,
}

impl Session {
    /// Connects to the daemon the user chose, checked with a ping so an unreachable one
    /// is named at once (`Context::engine`).
    pub async fn open(context: &Context) -> Result<Session, Error> {
        Ok(Session {
            engine: context.engine().await?,
        })
    }

    /// [`resolve`] on this daemon: the container, the request and where its words begin.
    pub async fn resolve<R>(
        &self,
        context: &Context,
        words: &[String],
        interpret: impl Fn(&[String], &[String], &str) -> Result<R, Error>,
        is_bare_command: impl Fn(&R) -> bool,
    ) -> Result<(ContainerDetails, R, usize), Error> {
        resolve(&self.engine, context, words, interpret, is_bare_command).await
    }

    /// `shell`'s container: the running one `target` names, else the obvious one (which
    /// must run too).
    pub async fn shell_container(
        &self,
        context: &Context,
        target: Option<&str>,
    ) -> Result<ContainerDetails, Error> {
        let engine = &self.engine;
        match target {
            Some(target) => crate::ops::target::running_container(engine, context, target).await,
            None => {
                let purpose = Purpose {
                    command: "shell",
                    rest: "",
                    word: None,
                };
                ensure_running(engine, obvious_container(engine, context, purpose).await?)
            }
        }
    }

    /// nvidia-check in `container` (`ops::nvidia_check::check`), handed to `render`.
    pub async fn nvidia_check<T>(
        &self,
        container: &ContainerDetails,
        options: &crate::ops::nvidia_check::NvidiaCheckOptions,
        context: &Context,
        render: impl FnOnce(crate::ops::nvidia_check::Checked<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        crate::ops::nvidia_check::check(&self.engine, container, options, context, render).await
    }

    /// `command` in the container with this id, through this connection ([`Exec::new`]).
    pub fn exec(&self, container: &str, command: Command) -> Exec {
        Exec::new(&self.engine, container, command)
    }
}

/// What to run in the container, and how, as exec's and shell's flags say.
#[derive(Debug, Clone, Default)]
pub struct Command {
    pub command: Vec<String>,
    /// `KEY=VALUE`.
    pub env: Vec<String>,
    pub user: Option<String>,
    pub working_directory: Option<String>,
    pub tty: bool,
    pub attach_stdin: bool,
}

/// One command run in one running container.
pub struct Exec {
    engine: Engine,
    container: String,
    request: ExecRequest,
}

impl Exec {
    /// `command` in the container with this id, through `engine`'s connection.
    pub fn new(engine: &Engine, container: &str, command: Command) -> Exec {
        let Command {
            command,
            env,
            user,
            working_directory,
            tty,
            attach_stdin,
        } = command;
        Exec {
            engine: engine.clone(),
            container: container.to_string(),
            request: ExecRequest {
                command,
                env,
                user,
                working_directory,
                tty,
                attach_stdin,
                ..ExecRequest::default()
            },
        }
    }

    pub fn command(&self) -> &[String] {
        &self.request.command
    }

    pub fn tty(&self) -> bool {
        self.request.tty
    }

    pub fn attaches_stdin(&self) -> bool {
        self.request.attach_stdin
    }

    /// Starts it detached (`docker exec -d`: no shell of the image); the exec's id.
    pub async fn detached(&self) -> Result<String, Error> {
        Ok(self
            .engine
            .exec_detached(&self.container, &self.request)
            .await?)
    }

    /// Runs it attached and returns its exit code: `stdin` copied to it, `sizes` the
    /// terminal's (rows, columns) for a TTY, every chunk of output to `on_output` on the
    /// stream it came on (`Engine::exec`).
    pub async fn attached(
        &self,
        stdin: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>,
        sizes: Option<tokio::sync::watch::Receiver<(u16, u16)>>,
        on_output: impl AsyncFnMut(OutputStream, Vec<u8>) -> std::io::Result<()>,
    ) -> Result<i64, Error> {
        Ok(self
            .engine
            .exec(&self.container, &self.request, stdin, sizes, on_output)
            .await?)
    }

    /// The exit code once its process has ended, asked every 100 ms.
    pub async fn ended(&self) -> Result<i64, Error> {
        let Some(exec_id) = self.request.exec_id.get() else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            if let Some(code) = self.engine.exec_ended(exec_id).await? {
                return Ok(code);
            }
        }
    }

    /// Passes SIGINT (130) or SIGTERM (143) on to the exec's process, the way a terminal
    /// passes Ctrl-C to the program in front. The daemon reports the process's PID on its
    /// host; `/proc/PID/status` gives its PID in the container (so only with a local daemon),
    /// and the container's `kill` delivers the signal. Whether it was passed on.
    pub async fn pass_on(&self, signal: u8, context: &Context) -> bool {
        let (engine, container, request) = (&self.engine, self.container.as_str(), &self.request);
        let name = if signal == 130 { "INT" } else { "TERM" };
        let cannot = |why: String| {
            context.printer.warn(&format!(
                "SIG{name} not passed on to the command ({why}): it goes on in the container"
            ));
            false
        };
        // A process id the daemon gives is its machine's: on another machine's daemon (a
        // forwarded socket too) it names some process of this one.
        match engine.daemon_host().await {
            Ok(host) if host.elsewhere().is_none() => {}
            Ok(host) => {
                return cannot(format!(
                    "the daemon at `{}` runs on {}, not on this host",
                    engine.endpoint(),
                    host.elsewhere().unwrap_or("another machine")
                ));
            }
            Err(error) => {
                return cannot(format!(
                    "whether the daemon at `{}` runs on this host is unknown: {error}",
                    engine.endpoint()
                ));
            }
        }
        let Some(exec_id) = request.exec_id.get() else {
            return cannot("it had not started".into());
        };
        let host_pid = match engine.exec_host_pid(exec_id).await {
            Ok(Some(pid)) => pid,
            Ok(None) => return cannot("it is no longer running".into()),
            Err(error) => return cannot(error.to_string()),
        };
        let Some(pid) = crate::host::process::namespace_pid(std::path::Path::new("/"), host_pid)
        else {
            return cannot(format!(
                "/proc/{host_pid}/status does not say its PID in the container"
            ));
        };
        match engine.signal_in_container(container, pid, name).await {
            Ok(()) => {
                context.printer.info(&format!(
                    "passed SIG{name} on to the command; waiting for it to end"
                ));
                true
            }
            Err(error) => cannot(error.to_string()),
        }
    }
}
