//! `envctl exec [TARGET] CMD ARGS…` (docker exec's grammar), `envctl exec [TARGET] NAME
//! [ARGS…]` (a command of the profile's `[commands]`, or nvidia-check), `envctl exec
//! [TARGET] -- CMD…` and `envctl shell [TARGET]`: the command runs in the running container
//! and its exit code becomes envctl's.
//!
//! Which words are which (`ops::exec::resolve`, documented once in `envctl exec --help`):
//! envctl's flags come before the words, and clap hands every word from the first on as it
//! is (`exec C ls -la` gives `ls` its `-la`). The first word is TARGET when it names a
//! container or a profile (`ops::target::look_up`), else the words are for the obvious
//! container (`ops::target::obvious_container`) — except before `--`, the place of a
//! TARGET or NAME, where a word that names neither is a TARGET not found. The word after
//! TARGET is a NAME when the container's profile names it (or it is nvidia-check), else the
//! command itself; `--` before it makes it the command whatever the profile names
//! ([`interpret`], the grammar `ops::exec::resolve` is handed). `ops::exec::Session`
//! connects to the daemon and resolves the words; the command runs through
//! `ops::exec::Exec`, which this file wires to the terminal (stdin, raw mode, resizes, the
//! output streams).

use super::{Context, runtime};
use crate::container_plan::shell_quote;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::{ContainerDetails, OutputStream};
use crate::ops::exec::{Command as ExecCommand, Exec, Session};
use crate::ops::target::{NVIDIA_CHECK, command_names, named_command};
use crate::ui::printer::{ColorChoice, Printer, Verbosity};
use crate::ui::terminal;

/// `envctl exec`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// TARGET (optional), then the command or a NAME and its arguments, as in the usage
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "WORDS",
        add = clap_complete::ArgValueCandidates::new(crate::complete::targets)
    )]
    pub words: Vec<String>,
    /// Keep stdin attached (a pipe or file always is; with -i a terminal is too)
    #[arg(short, long)]
    pub interactive: bool,
    /// Allocate a terminal (for interactive programs)
    #[arg(short, long)]
    pub tty: bool,
    /// Start the command detached and return at once (as docker exec -d)
    #[arg(short, long, conflicts_with_all = ["interactive", "tty"])]
    pub detach: bool,
    /// Run as this user (name, uid or uid:gid)
    #[arg(short, long)]
    pub user: Option<String>,
    /// Run in this folder in the container
    #[arg(short, long)]
    pub workdir: Option<String>,
    /// Set an environment variable
    #[arg(short, long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// nvidia-check: skip the timed matmul and the copy bandwidth
    #[arg(long)]
    pub quick: bool,
    /// nvidia-check: give up after this many seconds (default 120, at most a day)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: Option<u64>,
}

/// nvidia-check's time limit when `--timeout` is not given.
const NVIDIA_CHECK_TIMEOUT_SECONDS: u64 = 120;

/// nvidia-check's longest `--timeout`: a day.
const NVIDIA_CHECK_TIMEOUT_LIMIT: u64 = 86_400;

/// nvidia-check's options, from before TARGET or after its name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    pub quick: bool,
    pub timeout: Option<u64>,
    /// `--json` after the name: as `envctl nvidia-check --json`, one document on stdout.
    pub json: bool,
}

/// What the words after TARGET ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    /// No word at all.
    Nothing,
    /// nvidia-check, with the options written after its name.
    NvidiaCheck(CheckOptions),
    /// A name of the profile's `[commands]`, and the words appended to it.
    Named {
        name: String,
        arguments: Vec<String>,
    },
    /// The command itself. `plainly`: written after `--`, so never a named command.
    Literal { command: Vec<String>, plainly: bool },
}

/// Whether `word` is one of exec's flags or envctl's global ones (`-u`, `--user=x`, `-it`),
/// as people write them after TARGET by mistake (`exec C -t sh`), and whether it takes the
/// next word as its value. Read from the command line's own definition (`crate::cli`).
fn exec_flag(word: &str) -> Option<bool> {
    let root = <crate::cli::Cli as clap::CommandFactory>::command();
    let exec = root.find_subcommand("exec")?;
    let arguments: Vec<&clap::Arg> = exec.get_arguments().chain(root.get_arguments()).collect();
    let takes_value = |argument: &clap::Arg| argument.get_action().takes_values();
    if let Some(long) = word.strip_prefix("--") {
        let (name, attached) = match long.split_once('=') {
            Some((name, _)) => (name, true),
            None => (long, false),
        };
        return arguments
            .iter()
            .find(|argument| argument.get_long() == Some(name))
            .map(|argument| takes_value(argument) && !attached);
    }
    // `-it`: every letter a short flag; the last one may take the next word.
    let shorts = word.strip_prefix('-').filter(|shorts| !shorts.is_empty())?;
    let mut last = None;
    for letter in shorts.chars() {
        last = Some(
            arguments
                .iter()
                .find(|argument| argument.get_short() == Some(letter))?,
        );
    }
    last.map(|argument| takes_value(argument))
}

/// Reads nvidia-check's options written after its name: `--quick`, `--timeout SECONDS`
/// (or `--timeout=SECONDS`), 1 … 86400 as before TARGET. Anything else is refused, with
/// the command that works. `target`: the TARGET as the hints show it.
pub fn nvidia_check_options(words: &[String], target: &str) -> Result<CheckOptions, Error> {
    let usage = |message: String| Error::Usage {
        message,
        hint: Some(format!(
            "`envctl exec {target} nvidia-check [--quick] [--timeout SECONDS] [--json]`"
        )),
    };
    let mut options = CheckOptions::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "--quick" => {
                options.quick = true;
                continue;
            }
            // nvidia-check's own options are --quick, --timeout and --json
            // (`envctl nvidia-check --json`): the same after its name in a container.
            "--json" => {
                options.json = true;
                continue;
            }
            "--" => {
                return Err(usage(
                    "nvidia-check takes no command or arguments after `--`".into(),
                ));
            }
            "--timeout" => words.next().map(String::as_str),
            other => match other.strip_prefix("--timeout=") {
                Some(value) => Some(value),
                None if exec_flag(other).is_some() => {
                    let moved = format!("envctl exec {} {target} nvidia-check", shell_quote(other));
                    return Err(Error::Usage {
                        message: format!(
                            "`{other}` after nvidia-check is not one of its options (--quick, --timeout, --json)"
                        ),
                        hint: Some(format!("envctl's flags go before TARGET: `{moved}`")),
                    });
                }
                None => {
                    return Err(usage(format!(
                        "nvidia-check takes no command or arguments (`{other}`)"
                    )));
                }
            },
        };
        let Some(value) = value else {
            return Err(usage("`--timeout` needs a number of seconds".into()));
        };
        match value.parse::<u64>() {
            Ok(seconds) if (1..=NVIDIA_CHECK_TIMEOUT_LIMIT).contains(&seconds) => {
                options.timeout = Some(seconds);
            }
            _ => {
                return Err(usage(format!(
                    "`--timeout {value}`: give whole seconds from 1 to {NVIDIA_CHECK_TIMEOUT_LIMIT}"
                )));
            }
        }
    }
    Ok(options)
}

/// What `rest` (the words after TARGET) asks for, given the names of the container
/// profile's `[commands]`. `target`: as the hints show it.
fn interpret(rest: &[String], names: &[String], target: &str) -> Result<Request, Error> {
    let Some((first, after)) = rest.split_first() else {
        return Ok(Request::Nothing);
    };
    if first == "--" {
        return Ok(if after.is_empty() {
            Request::Nothing
        } else {
            Request::Literal {
                command: after.to_vec(),
                plainly: true,
            }
        });
    }
    if first == NVIDIA_CHECK {
        return Ok(Request::NvidiaCheck(nvidia_check_options(after, target)?));
    }
    if names.iter().any(|name| name == first) {
        // `train -- --epochs 3` and `train --epochs 3` say the same.
        let arguments = match after.split_first() {
            Some((separator, words)) if separator == "--" => words.to_vec(),
            _ => after.to_vec(),
        };
        return Ok(Request::Named {
            name: first.clone(),
            arguments,
        });
    }
    if first.starts_with('-') {
        return Err(flag_after_target(rest, target));
    }
    Ok(Request::Literal {
        command: rest.to_vec(),
        plainly: false,
    })
}

/// `exec C -t sh`: a flag where the command should be. envctl's flags go before TARGET,
/// as docker's do; the hint is the command with the flag (and its value) moved there.
fn flag_after_target(rest: &[String], target: &str) -> Error {
    let flag = rest.first().map(String::as_str).unwrap_or_default();
    let Some(takes_value) = exec_flag(flag) else {
        return Error::Usage {
            message: format!("`{flag}` is not a command to run, nor one of exec's flags"),
            hint: Some("`envctl exec --help` lists exec's flags; they go before TARGET".into()),
        };
    };
    let moved = if takes_value { 2 } else { 1 }.min(rest.len());
    let mut line = vec!["envctl".to_string(), "exec".to_string()];
    // A secret `-e KEY=VALUE` is repeated as `-e KEY="$KEY"` (the value from the shell).
    let is_env = matches!(flag, "-e" | "--env");
    line.extend(rest[..moved].iter().enumerate().map(|(index, word)| {
        match word.strip_prefix("--env=") {
            Some(value) => format!("--env={}", crate::secret::env_argument_shown(value)),
            None if is_env && index == 1 => crate::secret::env_argument_shown(word),
            None => shell_quote(word),
        }
    }));
    line.push(shell_quote(target));
    let command = &rest[moved..];
    if command.is_empty() {
        line.push("CMD".into());
    } else {
        line.extend(command.iter().map(|word| shell_quote(word)));
    }
    Error::Usage {
        message: format!(
            "`{flag}` comes after TARGET, where the command goes: exec's flags go before TARGET"
        ),
        hint: Some(format!("`{}`", line.join(" "))),
    }
}

/// Refuses flags that would be silently ignored: nvidia-check runs its own script, so it
/// takes no `-i/-t/-d/-u/-w/-e`; `--quick` and `--timeout` mean nothing elsewhere.
/// `target`: the TARGET as the hints show it.
fn check_flags(
    arguments: &ExecArgs,
    request: &Request,
    target: &str,
    json: bool,
) -> Result<(), Error> {
    let usage = |message: String, hint: String| Error::Usage {
        message,
        hint: Some(hint),
    };
    if let Request::NvidiaCheck(_) = request {
        let ignored: Vec<&str> = [
            (arguments.interactive, "--interactive"),
            (arguments.tty, "--tty"),
            (arguments.detach, "--detach"),
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
            format!("`envctl exec --quick {target} nvidia-check`, or drop the flag"),
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

/// What the command line says plainly, refused before the daemon is asked: nvidia-check's
/// options after `TARGET nvidia-check`, flags that do not apply to it, and a flag of
/// exec's written after TARGET in the old `TARGET --flag -- CMD` form.
fn check_plainly(arguments: &ExecArgs, json: bool) -> Result<(), Error> {
    let words = &arguments.words;
    let target = words.first().map(String::as_str).unwrap_or("TARGET");
    match words.get(1).map(String::as_str) {
        Some(NVIDIA_CHECK) => {
            let request = Request::NvidiaCheck(nvidia_check_options(&words[2..], target)?);
            check_flags(arguments, &request, target, json)
        }
        Some(flag) if exec_flag(flag).is_some() && words[2..].iter().any(|word| word == "--") => {
            Err(flag_after_target(&words[1..], target))
        }
        _ => Ok(()),
    }
}

pub fn run(arguments: ExecArgs, context: &Context) -> Result<ExitStatus, Error> {
    check_plainly(&arguments, context.json)?;
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let session = Session::open(context).await?;
        let (container, request, start) = session
            .resolve(context, &arguments.words, interpret, |request| {
                matches!(request, Request::Literal { plainly: false, .. })
            })
            .await?;
        check_flags(&arguments, &request, &container.name, context.json)?;
        // As `docker exec -it`: a terminal fed from stdin needs a terminal there. Without
        // this the command waited on input that never came (`-it … </dev/null` hung).
        // `-t` alone (stdin a pipe or file, not a terminal) runs, as docker's does.
        if arguments.tty
            && arguments.interactive
            && !terminal::stdin_is_terminal()
            && !matches!(request, Request::NvidiaCheck(_))
        {
            return Err(not_a_terminal(&arguments.words[start..], &container.name));
        }
        let (command, hints) = match request {
            Request::NvidiaCheck(after) => {
                return nvidia_check(&session, &container, &arguments, after, context).await;
            }
            Request::Nothing => return Err(no_command(&container, context)),
            Request::Named { name, arguments } => named(name, arguments, &container, context)?,
            Request::Literal { command, plainly } => literal(command, plainly, &container, context),
        };
        let exec = session.exec(
            &container.id,
            ExecCommand {
                command,
                env: arguments.env.clone(),
                user: arguments.user.clone(),
                working_directory: arguments.workdir.clone(),
                tty: arguments.tty,
                attach_stdin: !arguments.detach
                    && (arguments.interactive || arguments.tty || !terminal::stdin_is_terminal()),
            },
        );
        // `-d`: a detached exec through the engine (no shell of the image), which ends
        // envctl at once with the command going on and its output discarded.
        if arguments.detach {
            let exec_id = exec.detached().await?;
            context.printer.detail(&format!(
                "started `{}` detached in {} (exec {exec_id})",
                shown_line(exec.command()),
                container.name
            ));
            return Ok(ExitStatus::Success);
        }
        let ran = Ran {
            words: &arguments.words,
            start,
            container: &container.name,
            hints: &hints,
        };
        run_attached(&exec, &ran, context).await
    });
    // A read of the terminal may still be blocked in tokio's stdin thread: do not wait for
    // it (it would hold envctl open until the next key press).
    runtime.shutdown_background();
    result
}

/// `exec TARGET nvidia-check`: the check run in `container` with the options given before
/// TARGET and after the name (those after win), rendered as `envctl nvidia-check` would.
async fn nvidia_check(
    session: &Session,
    container: &ContainerDetails,
    arguments: &ExecArgs,
    after: CheckOptions,
    context: &Context,
) -> Result<ExitStatus, Error> {
    let options = super::nvidia_check::NvidiaCheckOptions {
        quick: arguments.quick || after.quick,
        timeout_seconds: after
            .timeout
            .or(arguments.timeout)
            .unwrap_or(NVIDIA_CHECK_TIMEOUT_SECONDS),
    };
    session
        .nvidia_check(container, &options, context, |checked| {
            super::nvidia_check::render_as(&checked, context, context.json || after.json)
        })
        .await
}

/// What explains a command the container has no program for (the shell's 127).
#[derive(Default)]
struct NotFoundHints {
    /// A name of the profile's `[commands]` near the word typed as the command.
    near_name: Option<String>,
    /// A named command and the program it runs: when that program is missing, the word
    /// the user typed (`python`) is not the one the runtime names (`python3`).
    named_as: Option<(String, String)>,
}

/// No command at all after TARGET: refused with the names of the profile's `[commands]`.
fn no_command(container: &ContainerDetails, context: &Context) -> Error {
    Error::Usage {
        message: "no command to run".into(),
        hint: Some(format!(
            "`envctl exec {} CMD ARGS…`, or a name from the profile's [commands] ({})",
            shell_quote(&container.name),
            command_names(context, container).join(", ")
        )),
    }
}

/// The command line of `name`, a command of the profile's `[commands]`, with `arguments`
/// after it, said in detail.
fn named(
    name: String,
    arguments: Vec<String>,
    container: &ContainerDetails,
    context: &Context,
) -> Result<(Vec<String>, NotFoundHints), Error> {
    let mut command = named_command(context, container, &name)?;
    let hints = NotFoundHints {
        named_as: command
            .first()
            .map(|program| (name.clone(), program.clone())),
        ..NotFoundHints::default()
    };
    context.printer.detail(&format!(
        "`{name}` is a command of the profile's [commands]: running `{}`",
        shown_line(&command)
    ));
    command.extend(arguments);
    Ok((command, hints))
}

/// A command run as written, said in detail; unless written after `--` (`plainly`), with
/// the name of the profile's `[commands]` near its first word, for a hint if it is
/// missing.
fn literal(
    command: Vec<String>,
    plainly: bool,
    container: &ContainerDetails,
    context: &Context,
) -> (Vec<String>, NotFoundHints) {
    let names = command_names(context, container);
    let mut hints = NotFoundHints::default();
    if plainly {
        context
            .printer
            .detail(&format!("running `{}` (after `--`)", shown_line(&command)));
    } else {
        context.printer.detail(&format!(
            "`{}` is not a command of the profile's [commands] ({}): running it as the command",
            command[0],
            names.join(", ")
        ));
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        hints.near_name = crate::suggest::did_you_mean(&command[0], &known)
            .filter(|near| *near != command[0])
            .map(str::to_string);
    }
    (command, hints)
}

/// What an attached exec needs to say about itself: the words typed (the request's from
/// `start`), the container's name and what explains a missing program.
struct Ran<'a> {
    words: &'a [String],
    start: usize,
    container: &'a str,
    hints: &'a NotFoundHints,
}

/// Runs `exec` attached until its code. With a TTY, Ctrl-C travels to the command as a
/// key. Without one, SIGINT/SIGTERM is passed on to the command, whose exit then ends
/// envctl with its code; a second signal ends envctl at once (130/143), as `docker exec`
/// does on the first.
async fn run_attached(exec: &Exec, ran: &Ran<'_>, context: &Context) -> Result<ExitStatus, Error> {
    let attached = run_exec(exec);
    tokio::pin!(attached);
    let code = if exec.tty() {
        tokio::select! {
            code = &mut attached => code?,
            signal = super::termination_signal() => return Ok(ExitStatus::External(signal)),
        }
    } else {
        let signal = tokio::select! {
            code = &mut attached => {
                let code = code?;
                if code == crate::ops::exec::COMMAND_NOT_FOUND {
                    hint_not_found(ran, context);
                }
                return Ok(exit_status(code));
            }
            signal = super::termination_signal() => signal,
        };
        if !exec.pass_on(signal, context).await {
            return Ok(ExitStatus::External(signal));
        }
        tokio::select! {
            code = &mut attached => code?,
            // The command ended, but its last output may be stuck behind a reader that
            // does not read: a moment to pass it on, then its code.
            ended = exec.ended() => {
                let code = ended?;
                match tokio::time::timeout(OUTPUT_DRAIN, &mut attached).await {
                    Ok(result) => result?,
                    Err(_) => code,
                }
            }
            signal = super::termination_signal() => {
                context.printer.warn(&format!(
                    "the command goes on in {} (a second signal ends only envctl)",
                    ran.container
                ));
                return Ok(ExitStatus::External(signal));
            }
        }
    };
    Ok(exit_status(code))
}

/// The container has no program the command names (the shell's 127): the name of the
/// profile's `[commands]` near the word typed, and for a named command, that its program
/// is what is missing and how to run the word itself.
fn hint_not_found(ran: &Ran<'_>, context: &Context) {
    if let Some(near) = ran.hints.near_name.as_deref() {
        context.printer.info(&format!(
            "hint: did you mean `{near}`, a command of the profile? `{}`",
            replaced(ran.words, ran.start, near)
        ));
    }
    if let Some((name, program)) = &ran.hints.named_as {
        context.printer.info(&format!(
            "hint: `{name}` is the profile's [commands] entry, which runs `{}`: the image in {} has no such program; `envctl exec {} -- {name} …` runs `{name}` itself",
            crate::ui::text::shown(program),
            ran.container,
            shell_quote(ran.container),
        ));
    }
}

/// The exec command line with the word at `index` replaced by `word`: `exec C helo`
/// becomes `envctl exec C hello`.
fn replaced(words: &[String], index: usize, word: &str) -> String {
    let mut line = vec!["envctl".to_string(), "exec".to_string()];
    line.extend(
        words
            .iter()
            .enumerate()
            .map(|(at, original)| shell_quote(if at == index { word } else { original })),
    );
    line.join(" ")
}

/// A command as one shell line, for what envctl says it runs.
fn shown_line(command: &[String]) -> String {
    command
        .iter()
        .map(|word| shell_quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `envctl shell`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct ShellArgs {
    /// A container name or id (12+ hex digits), else a profile name or path; left out:
    /// the obvious container (see `envctl exec --help`)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::targets))]
    pub target: Option<String>,
    /// Run as this user
    #[arg(short, long)]
    pub user: Option<String>,
}

/// `envctl shell [TARGET]`: bash when the image has it, else sh, on a TTY.
pub fn shell(arguments: ShellArgs, context: &Context) -> Result<ExitStatus, Error> {
    let ShellArgs { target, user } = arguments;
    let target = target.as_deref();
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let session = Session::open(context).await?;
        let container = session.shell_container(context, target).await?;
        // As `docker exec -it`: a shell needs a terminal to talk to. Said once the
        // container is known, so the hint names it.
        if !terminal::stdin_is_terminal() {
            return Err(Error::Usage {
                message: "the input device is not a TTY: `shell` is an interactive session".into(),
                hint: Some(format!(
                    "to run commands from a pipe or file: `envctl exec {} sh`",
                    shell_quote(&container.name)
                )),
            });
        }
        let exec = session.exec(
            &container.id,
            ExecCommand {
                // `exec` replaces sh with bash when there is one, so the exit code is bash's.
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi".into(),
                ],
                user,
                tty: true,
                attach_stdin: true,
                ..ExecCommand::default()
            },
        );
        // Like `docker exec`: a signal ends envctl (130/143); the command in the container
        // is not envctl's to kill. With a TTY, Ctrl-C travels to the command as a key.
        let code = tokio::select! {
            code = run_exec(&exec) => code?,
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

/// The exit status envctl passes on for the command's `code`: 0 … 255 as it is; any other
/// (an engine's -1 for a process it lost track of) is 255, as `docker exec` exits with
/// (Go's `os.Exit(-1)`), never 0.
fn exit_status(code: i64) -> ExitStatus {
    ExitStatus::External(u8::try_from(code).unwrap_or(255))
}

/// `exec -it` without a terminal on stdin: refused before anything runs, with the same
/// command without `-t` (stdin stays attached: a pipe or file always is).
fn not_a_terminal(command: &[String], container: &str) -> Error {
    let words: Vec<String> = command.iter().map(|word| shell_quote(word)).collect();
    Error::Usage {
        message: "the input device is not a TTY: `-i` with `-t` needs a terminal on stdin".into(),
        hint: Some(format!(
            "without a terminal, leave out `-t`: `envctl exec {} {}`",
            shell_quote(container),
            words.join(" ")
        )),
    }
}

/// Runs the exec with stdin, TTY raw mode and resizes wired to this terminal.
async fn run_exec(exec: &Exec) -> Result<i64, Error> {
    let stdin: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> = exec
        .attaches_stdin()
        .then(|| Box::new(tokio::io::stdin()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
    let (sizes, _raw_mode, resize_task) = if exec.tty() {
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
    let result = exec
        .attached(stdin, sizes, async |stream, bytes: Vec<u8>| {
            // The writer stopped (its error is read below): stop reading.
            sender
                .send((stream, bytes))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        })
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
            Ok(crate::ops::exec::OUTPUT_CLOSED)
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

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    fn arguments(words_given: &[&str]) -> ExecArgs {
        ExecArgs {
            words: words(words_given),
            interactive: false,
            tty: false,
            detach: false,
            user: None,
            workdir: None,
            env: Vec::new(),
            quick: false,
            timeout: None,
        }
    }

    fn refusal(arguments: &ExecArgs, request: &Request) -> String {
        match check_flags(arguments, request, "pytorch-2.8", false) {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    fn usage(result: Result<impl std::fmt::Debug, Error>) -> (String, String) {
        match result {
            Err(Error::Usage { message, hint }) => (message, hint.unwrap_or_default()),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    const CHECK: Request = Request::NvidiaCheck(CheckOptions {
        quick: false,
        timeout: None,
        json: false,
    });

    #[test]
    fn nvidia_check_refuses_what_it_would_ignore() {
        let mut with_flags = arguments(&[]);
        with_flags.tty = true;
        assert_eq!(
            refusal(&with_flags, &CHECK),
            "`--tty` does not apply to nvidia-check"
        );
        with_flags.user = Some("root".into());
        with_flags.env = vec!["A=1".into()];
        assert_eq!(
            refusal(&with_flags, &CHECK),
            "`--tty`, `--user` and `--env` do not apply to nvidia-check"
        );
        let mut fine = arguments(&[]);
        fine.quick = true;
        fine.timeout = Some(30);
        assert!(check_flags(&fine, &CHECK, "pytorch-2.8", false).is_ok());
        // Before the daemon is asked: `TARGET nvidia-check -- ls` and its options.
        assert_eq!(
            usage(check_plainly(
                &arguments(&["x", "nvidia-check", "--", "ls"]),
                false
            ))
            .0,
            "nvidia-check takes no command or arguments after `--`"
        );
        let mut tty = arguments(&["x", "nvidia-check"]);
        tty.tty = true;
        assert!(check_plainly(&tty, false).is_err());
    }

    #[test]
    fn nvidia_check_options_after_its_name() {
        let read = |after: &[&str]| nvidia_check_options(&words(after), "c");
        assert_eq!(read(&[]).unwrap(), CheckOptions::default());
        assert_eq!(
            read(&["--quick", "--timeout", "30"]).unwrap(),
            CheckOptions {
                quick: true,
                timeout: Some(30),
                json: false
            }
        );
        assert_eq!(read(&["--timeout=5"]).unwrap().timeout, Some(5));
        for refused in [
            &["--timeout", "0"][..],
            &["--timeout", "86401"],
            &["--timeout", "18446744073709551616"],
            &["--timeout"],
            &["ls"],
        ] {
            assert!(read(refused).is_err(), "{refused:?}");
        }
        // envctl's own flag after the name: the hint moves it before TARGET.
        // nvidia-check's own `--json` is taken after its name (issue 40).
        assert!(read(&["--json", "--quick"]).unwrap().json);
        let (message, hint) = usage(read(&["--user", "root"]));
        assert!(message.contains("`--user` after nvidia-check"), "{message}");
        assert_eq!(
            hint,
            "envctl's flags go before TARGET: `envctl exec --user c nvidia-check`"
        );
    }

    #[test]
    fn check_flags_elsewhere_are_refused() {
        let literal = Request::Literal {
            command: words(&["ls"]),
            plainly: false,
        };
        let mut quick = arguments(&[]);
        quick.quick = true;
        assert_eq!(
            refusal(&quick, &literal),
            "`--quick` belongs only to nvidia-check"
        );
        quick.timeout = Some(5);
        assert_eq!(
            refusal(&quick, &literal),
            "`--quick` and `--timeout` belong only to nvidia-check"
        );
        let named = Request::Named {
            name: "train".into(),
            arguments: words(&["--epochs", "3"]),
        };
        let mut tty = arguments(&[]);
        tty.tty = true;
        assert!(
            check_flags(&tty, &named, "pytorch-2.8", false).is_ok(),
            "a named command takes -t"
        );
        // Issue 15, item 11: --json is refused for a command, taken by nvidia-check.
        assert!(
            check_flags(&tty, &named, "pytorch-2.8", true)
                .is_err_and(|error| error.to_string().contains("--json is not available"))
        );
        assert!(check_flags(&arguments(&[]), &CHECK, "pytorch-2.8", true).is_ok());
        // The old `TARGET --quick -- CMD`: refused before the daemon, the flag moved.
        let (_, hint) = usage(check_plainly(
            &arguments(&["x", "--quick", "--", "ls"]),
            false,
        ));
        assert_eq!(hint, "`envctl exec --quick x -- ls`");
    }

    /// Issue 31: docker's grammar. The word after TARGET is a NAME only when the profile
    /// names it; any other word is the command, its flags its own.
    #[test]
    fn words_after_target_are_a_name_or_the_command() {
        let names = words(&["nvidia-check", "train", "versions"]);
        let read = |rest: &[&str]| interpret(&words(rest), &names, "c");
        assert_eq!(read(&[]).unwrap(), Request::Nothing);
        assert_eq!(read(&["--"]).unwrap(), Request::Nothing);
        assert_eq!(
            read(&["ls", "-la"]).unwrap(),
            Request::Literal {
                command: words(&["ls", "-la"]),
                plainly: false
            }
        );
        assert_eq!(
            read(&["sh", "-c", "echo hi"]).unwrap(),
            Request::Literal {
                command: words(&["sh", "-c", "echo hi"]),
                plainly: false
            }
        );
        for rest in [
            &["train", "--epochs", "3"][..],
            &["train", "--", "--epochs", "3"],
        ] {
            assert_eq!(
                read(rest).unwrap(),
                Request::Named {
                    name: "train".into(),
                    arguments: words(&["--epochs", "3"])
                },
                "{rest:?}"
            );
        }
        // `--` makes it the command, whatever the profile names.
        assert_eq!(
            read(&["--", "train", "-x"]).unwrap(),
            Request::Literal {
                command: words(&["train", "-x"]),
                plainly: true
            }
        );
        assert_eq!(
            read(&["nvidia-check", "--quick"]).unwrap(),
            Request::NvidiaCheck(CheckOptions {
                quick: true,
                timeout: None,
                json: false
            })
        );
        // A flag of exec's where the command goes: moved before TARGET, with its value.
        let (message, hint) = usage(read(&["-u", "root", "id", "-u"]));
        assert!(message.contains("`-u` comes after TARGET"), "{message}");
        assert_eq!(hint, "`envctl exec -u root c id -u`");
        assert_eq!(usage(read(&["-t"])).1, "`envctl exec -t c CMD`");
        assert!(
            usage(read(&["--frobnicate"]))
                .1
                .contains("envctl exec --help")
        );
    }

    #[test]
    fn exec_flags_are_read_from_the_command_line_definition() {
        assert_eq!(exec_flag("-t"), Some(false));
        assert_eq!(exec_flag("-it"), Some(false));
        assert_eq!(exec_flag("-u"), Some(true));
        assert_eq!(exec_flag("-tu"), Some(true));
        assert_eq!(exec_flag("--user"), Some(true));
        assert_eq!(exec_flag("--user=root"), Some(false));
        assert_eq!(exec_flag("--json"), Some(false));
        assert_eq!(exec_flag("-v"), Some(false));
        assert_eq!(exec_flag("--color"), Some(true));
        assert_eq!(exec_flag("-la"), None);
        assert_eq!(exec_flag("--frobnicate"), None);
        assert_eq!(exec_flag("-"), None);
    }

    #[test]
    fn a_replaced_word_keeps_the_others_quoted() {
        assert_eq!(
            replaced(&words(&["c", "helo", "x y"]), 1, "hello"),
            "envctl exec c hello 'x y'"
        );
    }

    /// Issue 31: docker's habits parse, and every word after the first is the command's.
    #[test]
    fn docker_habits_parse() {
        use crate::cli::{Cli, Command};
        use clap::Parser;
        let parse = |line: &[&str]| match Cli::try_parse_from(line) {
            Ok(Cli {
                command: Command::Exec(arguments),
                ..
            }) => (
                arguments.words,
                arguments.interactive,
                arguments.tty,
                arguments.detach,
            ),
            other => panic!("{line:?}: {other:?}"),
        };
        assert_eq!(
            parse(&["envctl", "exec", "-it", "c", "--", "sh"]),
            (words(&["c", "--", "sh"]), true, true, false)
        );
        assert_eq!(
            parse(&["envctl", "exec", "c", "ls", "-la", "-t", "--json"]).0,
            words(&["c", "ls", "-la", "-t", "--json"])
        );
        assert_eq!(
            parse(&["envctl", "exec", "-d", "c", "sleep", "9"]),
            (words(&["c", "sleep", "9"]), false, false, true)
        );
        assert_eq!(
            parse(&["envctl", "exec", "--", "python", "-u", "x.py"]).0,
            words(&["python", "-u", "x.py"])
        );
        assert_eq!(
            parse(&["envctl", "exec", "c", "train", "--", "--epochs", "3"]).0,
            words(&["c", "train", "--", "--epochs", "3"])
        );
        let Ok(Cli {
            command: Command::Exec(ExecArgs {
                user, workdir, env, ..
            }),
            ..
        }) = Cli::try_parse_from([
            "envctl", "exec", "-u", "1000", "-w", "/w", "-e", "A=1", "c", "id",
        ])
        else {
            panic!("-u -w -e");
        };
        assert_eq!(
            (user.as_deref(), workdir.as_deref(), env),
            (Some("1000"), Some("/w"), words(&["A=1"]))
        );
    }
}
