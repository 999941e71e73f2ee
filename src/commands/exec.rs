//! `envctl exec [TARGET] -- CMD…`, `envctl exec [TARGET] NAME [-- ARGS…]` (a command of the
//! profile's `[commands]`, or nvidia-check) and `envctl shell [TARGET]`: the command runs
//! in the running container and its exit code becomes envctl's.
//!
//! Which words are which ([`resolve`]): with two words before `--`, TARGET and NAME. With
//! one, it is TARGET when it names a container or a profile (`ops::target::look_up`), else
//! a NAME of the obvious container (`ops::target::obvious_container`). With none, the
//! obvious container runs the command after `--`.

use super::{Context, runtime};
use crate::engine::Engine;
use crate::engine::exec::ExecRequest;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::ContainerDetails;
use crate::facts::container::OutputStream;
use crate::ops::target::{
    Lookup, NVIDIA_CHECK, Purpose, command_names, ensure_running, look_up, named_command,
    nearest_name, nothing_error, obvious_container, running_container,
};
use crate::ui::printer::{ColorChoice, Printer, Verbosity};
use crate::ui::terminal;

pub struct ExecArguments {
    /// Left out: the obvious container; a lone word may also be a command NAME.
    pub target: Option<String>,
    /// A `[commands]` name, or `nvidia-check`.
    pub name: Option<String>,
    /// After `--`: the command itself, or arguments appended to a named command.
    pub arguments: Vec<String>,
    pub tty: bool,
    pub user: Option<String>,
    pub workdir: Option<String>,
    pub env: Vec<String>,
    /// nvidia-check's `--quick`.
    pub quick: bool,
    /// nvidia-check's `--timeout`, when given.
    pub timeout: Option<u64>,
}

/// nvidia-check's time limit when `--timeout` is not given.
const NVIDIA_CHECK_TIMEOUT_SECONDS: u64 = 120;

/// Refuses flags that would be silently ignored: nvidia-check runs its own script, so it
/// takes no command and no `-t/-u/-w/-e`; `--quick` and `--timeout` mean nothing elsewhere.
/// `name`: the command NAME as resolved; `target`: the TARGET as the hints show it.
fn check_flags(
    arguments: &ExecArguments,
    name: Option<&str>,
    target: &str,
    json: bool,
) -> Result<(), Error> {
    let usage = |message: String, hint: String| Error::Usage {
        message,
        hint: Some(hint),
    };
    if name == Some(NVIDIA_CHECK) {
        if !arguments.arguments.is_empty() {
            return Err(usage(
                "nvidia-check takes no command or arguments after `--`".into(),
                format!("`envctl exec {target} nvidia-check [--quick] [--timeout SECONDS]`"),
            ));
        }
        let ignored: Vec<&str> = [
            (arguments.tty, "--tty"),
            (arguments.user.is_some(), "--user"),
            (arguments.workdir.is_some(), "--workdir"),
            (!arguments.env.is_empty(), "--env"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !ignored.is_empty() {
            return Err(usage(
                format!("{} not apply to nvidia-check", list(&ignored, "does", "do")),
                format!("`envctl exec {target} nvidia-check [--quick] [--timeout SECONDS]`"),
            ));
        }
        return Ok(());
    }
    // A command's output is the container's bytes, passed as they are: no document.
    if json {
        return Err(usage(
            "--json is not available for a command: exec passes the container's output as it is"
                .into(),
            format!(
                "leave out --json; `envctl --json exec {target} nvidia-check` prints a document"
            ),
        ));
    }
    let only_for_check: Vec<&str> = [
        (arguments.quick, "--quick"),
        (arguments.timeout.is_some(), "--timeout"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if !only_for_check.is_empty() {
        return Err(usage(
            format!(
                "{} only to nvidia-check",
                list(&only_for_check, "belongs", "belong")
            ),
            format!("`envctl exec {target} nvidia-check --quick`, or drop the flag"),
        ));
    }
    Ok(())
}

/// "`--a` does" or "`--a` and `--b` do".
fn list(flags: &[&str], singular: &str, plural: &str) -> String {
    let quoted: Vec<String> = flags.iter().map(|flag| format!("`{flag}`")).collect();
    match quoted.as_slice() {
        [one] => format!("{one} {singular}"),
        [first @ .., last] => format!("{} and {last} {plural}", first.join(", ")),
        [] => String::new(),
    }
}

/// The container and the command NAME (if any) an `exec` command line means: the rule of
/// the module doc, documented in README ("exec") and ARCHITECTURE.md ("TARGET").
async fn resolve(
    engine: &Engine,
    context: &Context,
    arguments: &ExecArguments,
) -> Result<(ContainerDetails, Option<String>), Error> {
    let word = match (&arguments.target, &arguments.name) {
        (Some(target), Some(name)) => {
            let container = running_container(engine, context, target).await?;
            return Ok((container, Some(name.clone())));
        }
        (None, _) => {
            let purpose = Purpose {
                command: "exec",
                rest: "-- CMD",
                word: None,
            };
            let container = obvious_container(engine, context, purpose).await?;
            return Ok((ensure_running(engine, container)?, None));
        }
        (Some(word), None) => word,
    };
    match look_up(engine, context, word).await? {
        Lookup::Container(container) => return Ok((ensure_running(engine, *container)?, None)),
        // The start of an id is meant as a container, never as a command.
        Lookup::Nothing {
            prefix_of: Some(name),
        } => return Err(nothing_error(engine, context, word, Some(&name), &[]).await),
        Lookup::Nothing { prefix_of: None } => {}
    }
    let purpose = Purpose {
        command: "exec",
        rest: word,
        // nvidia-check is plainly a command: say only that no TARGET was given.
        word: (word != NVIDIA_CHECK).then_some(word.as_str()),
    };
    match obvious_container(engine, context, purpose).await {
        Ok(container) => {
            let names = command_names(context, &container);
            if names.iter().any(|name| name == word) {
                return Ok((ensure_running(engine, container)?, Some(word.clone())));
            }
            let hint = match nearest_name(engine, context, word, &names).await? {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "nor is it a command of container `{}` (its commands: {}); `envctl ps -a` lists envctl's containers, `envctl profiles list` the profiles",
                    container.name,
                    names.join(", ")
                ),
            };
            Err(Error::TargetNotFound {
                target: word.clone(),
                hint,
            })
        }
        Err(error) if word == NVIDIA_CHECK => Err(error),
        // No obvious container to hold the command: a typo of a TARGET is the likelier
        // mistake when one is near.
        Err(error) => match nearest_name(engine, context, word, &[]).await? {
            Some(near) => Err(Error::TargetNotFound {
                target: word.clone(),
                hint: format!("did you mean `{near}`?"),
            }),
            None => Err(error),
        },
    }
}

pub fn run(arguments: ExecArguments, context: &Context) -> Result<ExitStatus, Error> {
    // What the command line says plainly is refused before the daemon is asked: the NAME
    // is nvidia-check only when written so, or when a lone `nvidia-check` turns out not to
    // be a container or profile (known only after the lookup).
    let plain_name = match (&arguments.name, arguments.target.as_deref()) {
        (Some(name), _) => Some(Some(name.as_str())),
        (None, Some(NVIDIA_CHECK)) => None,
        (None, _) => Some(None),
    };
    if let Some(name) = plain_name {
        check_flags(
            &arguments,
            name,
            arguments.target.as_deref().unwrap_or("TARGET"),
            context.json,
        )?;
    }
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let engine = context.engine().await?;
        let (container, name) = resolve(&engine, context, &arguments).await?;
        check_flags(&arguments, name.as_deref(), &container.name, context.json)?;
        if name.as_deref() == Some(NVIDIA_CHECK) {
            let options = super::nvidia_check::NvidiaCheckOptions {
                quick: arguments.quick,
                timeout_seconds: arguments.timeout.unwrap_or(NVIDIA_CHECK_TIMEOUT_SECONDS),
            };
            return super::nvidia_check::run(&engine, &container, &options, context).await;
        }
        let command = match &name {
            None if arguments.arguments.is_empty() => {
                return Err(Error::Usage {
                    message: "no command to run".into(),
                    hint: Some(format!(
                        "`envctl exec {} -- CMD ARGS…`, or a name from the profile's [commands]",
                        container.name
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
            ..ExecRequest::default()
        };
        // With a TTY, Ctrl-C travels to the command as a key. Without one, SIGINT/SIGTERM
        // is passed on to the command, whose exit then ends envctl with its code; a second
        // signal ends envctl at once (130/143), as `docker exec` does on the first.
        let exec = run_exec(&engine, &container.id, &request);
        tokio::pin!(exec);
        let code = if request.tty {
            tokio::select! {
                code = &mut exec => code?,
                signal = super::termination_signal() => return Ok(ExitStatus::External(signal)),
            }
        } else {
            let signal = tokio::select! {
                code = &mut exec => return Ok(exit_status(code?)),
                signal = super::termination_signal() => signal,
            };
            if !forward_signal(&engine, &container.id, &request, signal, context).await {
                return Ok(ExitStatus::External(signal));
            }
            tokio::select! {
                code = &mut exec => code?,
                // The command ended, but its last output may be stuck behind a reader that
                // does not read: a moment to pass it on, then its code.
                ended = command_ended(&engine, &request) => {
                    let code = ended?;
                    match tokio::time::timeout(OUTPUT_DRAIN, &mut exec).await {
                        Ok(result) => result?,
                        Err(_) => code,
                    }
                }
                signal = super::termination_signal() => {
                    context.printer.warn(&format!(
                        "the command goes on in {} (a second signal ends only envctl)",
                        container.name
                    ));
                    return Ok(ExitStatus::External(signal));
                }
            }
        };
        Ok(exit_status(code))
    });
    // A read of the terminal may still be blocked in tokio's stdin thread: do not wait for
    // it (it would hold envctl open until the next key press).
    runtime.shutdown_background();
    result
}

/// `envctl shell [TARGET]`: bash when the image has it, else sh, on a TTY.
pub fn shell(
    target: Option<&str>,
    user: Option<String>,
    context: &Context,
) -> Result<ExitStatus, Error> {
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let engine = context.engine().await?;
        let container = match target {
            Some(target) => running_container(&engine, context, target).await?,
            None => {
                let purpose = Purpose {
                    command: "shell",
                    rest: "",
                    word: None,
                };
                ensure_running(&engine, obvious_container(&engine, context, purpose).await?)?
            }
        };
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
            code = run_exec(&engine, &container.id, &request) => code?,
            signal = super::termination_signal() => return Ok(ExitStatus::External(signal)),
        };
        Ok(exit_status(code))
    });
    // A read of the terminal may still be blocked in tokio's stdin thread: do not wait for
    // it (it would hold envctl open until the next key press).
    runtime.shutdown_background();
    result
}

/// How long envctl still passes on output after a signalled command ended.
const OUTPUT_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The exit code of the exec once its process has ended, asked every 100 ms.
async fn command_ended(engine: &Engine, request: &ExecRequest) -> Result<i64, Error> {
    let Some(exec_id) = request.exec_id.get() else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if let Some(code) = engine.exec_ended(exec_id).await? {
            return Ok(code);
        }
    }
}

/// The exit status envctl passes on for the command's `code`: 0 … 255 as it is; any other
/// (an engine's -1 for a process it lost track of) is 255, as `docker exec` exits with
/// (Go's `os.Exit(-1)`), never 0.
fn exit_status(code: i64) -> ExitStatus {
    ExitStatus::External(u8::try_from(code).unwrap_or(255))
}

/// Passes SIGINT (130) or SIGTERM (143) on to the exec's process, the way a terminal
/// passes Ctrl-C to the program in front. The daemon reports the process's PID on its
/// host; `/proc/PID/status` gives its PID in the container (so only with a local daemon),
/// and the container's `kill` delivers the signal. Whether it was passed on.
async fn forward_signal(
    engine: &Engine,
    container: &str,
    request: &ExecRequest,
    signal: u8,
    context: &Context,
) -> bool {
    let name = if signal == 130 { "INT" } else { "TERM" };
    let cannot = |why: String| {
        context.printer.warn(&format!(
            "SIG{name} not passed on to the command ({why}): it goes on in the container"
        ));
        false
    };
    if !engine.endpoint().starts_with("unix://") {
        return cannot(format!(
            "the daemon at `{}` is not on this host",
            engine.endpoint()
        ));
    }
    let Some(exec_id) = request.exec_id.get() else {
        return cannot("it had not started".into());
    };
    let host_pid = match engine.exec_host_pid(exec_id).await {
        Ok(Some(pid)) => pid,
        Ok(None) => return cannot("it is no longer running".into()),
        Err(error) => return cannot(error.to_string()),
    };
    let Some(pid) = crate::host::process::namespace_pid(std::path::Path::new("/"), host_pid) else {
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

/// Runs the exec with stdin, TTY raw mode and resizes wired to this terminal.
async fn run_exec(engine: &Engine, container: &str, request: &ExecRequest) -> Result<i64, Error> {
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
    let mut writer = OutputWriter::spawn()?;
    let sender = writer.sender.clone();
    let result = engine
        .exec(
            container,
            request,
            stdin,
            sizes,
            async |stream, bytes: Vec<u8>| {
                // The writer stopped (its error is read below): stop reading.
                sender
                    .send((stream, bytes))
                    .await
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            },
        )
        .await;
    if let Some(task) = resize_task {
        task.abort();
    }
    drop(sender);
    // Everything the command wrote is on envctl's stdout/stderr before its code is.
    let written = writer.finish().await;
    let code = result?;
    match written {
        Ok(()) => Ok(code),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(crate::engine::exec::OUTPUT_CLOSED)
        }
        Err(error) => Err(Error::Output(error)),
    }
}

/// The container's output, written by a thread of its own. A write blocked on a full
/// pipe (a reader that never reads) then holds only that thread: the runtime still sees
/// SIGINT/SIGTERM and envctl ends at once, abandoning the thread with the process.
struct OutputWriter {
    sender: tokio::sync::mpsc::Sender<(OutputStream, Vec<u8>)>,
    done: tokio::sync::oneshot::Receiver<std::io::Result<()>>,
}

/// How many chunks may wait for the writer: enough to smooth bursts, few enough that a
/// blocked reader stops envctl from reading the daemon (and so holds the command back, as
/// a pipe does).
const WAITING_CHUNKS: usize = 16;

impl OutputWriter {
    fn spawn() -> Result<OutputWriter, Error> {
        let (sender, mut receiver) =
            tokio::sync::mpsc::channel::<(OutputStream, Vec<u8>)>(WAITING_CHUNKS);
        let (report, done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("exec-output".into())
            .spawn(move || {
                // Raw bytes take no colour and no verbosity: a printer of the thread's own.
                let printer = Printer::new(ColorChoice::Never, Verbosity::Normal);
                let mut result = Ok(());
                while let Some((stream, bytes)) = receiver.blocking_recv() {
                    let written = match stream {
                        OutputStream::Stdout => printer.stdout_bytes(&bytes),
                        OutputStream::Stderr => printer.stderr_bytes(&bytes),
                    };
                    if let Err(error) = written {
                        result = Err(error);
                        break;
                    }
                }
                let _ = report.send(result);
            })
            .map_err(Error::Output)?;
        Ok(OutputWriter { sender, done })
    }

    /// Waits until everything sent is written (or writing failed).
    async fn finish(&mut self) -> std::io::Result<()> {
        let (closed, _) = tokio::sync::mpsc::channel(1);
        drop(std::mem::replace(&mut self.sender, closed));
        match (&mut self.done).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::other("the output writer ended early")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command's code passes through; one no process can exit with (the engine's -1)
    /// is 255, never a success.
    #[test]
    fn exit_codes_pass_through_and_impossible_ones_are_255() {
        for (code, passed) in [
            (0, 0),
            (7, 7),
            (255, 255),
            (-1, 255),
            (-255, 255),
            (256, 255),
        ] {
            assert_eq!(exit_status(code), ExitStatus::External(passed), "{code}");
        }
    }

    fn arguments(name: Option<&str>, after: &[&str]) -> ExecArguments {
        ExecArguments {
            target: Some("pytorch-2.8".into()),
            name: name.map(str::to_string),
            arguments: after.iter().map(|part| part.to_string()).collect(),
            tty: false,
            user: None,
            workdir: None,
            env: Vec::new(),
            quick: false,
            timeout: None,
        }
    }

    fn refusal(arguments: &ExecArguments) -> String {
        match check_flags(arguments, arguments.name.as_deref(), "pytorch-2.8", false) {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn nvidia_check_refuses_what_it_would_ignore() {
        assert_eq!(
            refusal(&arguments(Some("nvidia-check"), &["ls"])),
            "nvidia-check takes no command or arguments after `--`"
        );
        let mut with_flags = arguments(Some("nvidia-check"), &[]);
        with_flags.tty = true;
        assert_eq!(
            refusal(&with_flags),
            "`--tty` does not apply to nvidia-check"
        );
        with_flags.user = Some("root".into());
        with_flags.env = vec!["A=1".into()];
        assert_eq!(
            refusal(&with_flags),
            "`--tty`, `--user` and `--env` do not apply to nvidia-check"
        );
        let mut fine = arguments(Some("nvidia-check"), &[]);
        fine.quick = true;
        fine.timeout = Some(30);
        assert!(check_flags(&fine, Some("nvidia-check"), "pytorch-2.8", false).is_ok());
    }

    #[test]
    fn check_flags_elsewhere_are_refused() {
        let mut quick = arguments(None, &["ls"]);
        quick.quick = true;
        assert_eq!(refusal(&quick), "`--quick` belongs only to nvidia-check");
        quick.timeout = Some(5);
        assert_eq!(
            refusal(&quick),
            "`--quick` and `--timeout` belong only to nvidia-check"
        );
        let mut named = arguments(Some("train"), &["--epochs", "3"]);
        named.tty = true;
        assert!(
            check_flags(&named, Some("train"), "pytorch-2.8", false).is_ok(),
            "a named command takes -t"
        );
        // Issue 15, item 11: --json is refused for a command, taken by nvidia-check.
        assert!(
            check_flags(&named, Some("train"), "pytorch-2.8", true)
                .is_err_and(|error| error.to_string().contains("--json is not available"))
        );
        assert!(
            check_flags(
                &arguments(None, &[]),
                Some("nvidia-check"),
                "pytorch-2.8",
                true
            )
            .is_ok()
        );
    }
}
