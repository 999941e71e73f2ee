//! The entry point: parse the command line, run the command, render an error, exit.
//! The only place that exits.

use std::process::ExitCode;

use clap::Parser;

use envctl::cli::Cli;
use envctl::commands;
use envctl::context::{Context, Environment};
use envctl::exit::ExitStatus;
use envctl::ui::{Printer, Verbosity};

mod standard_streams;

fn main() -> ExitCode {
    // `COMPLETE=SHELL envctl -- WORDS…`: a shell asking for completions (the scripts of
    // `envctl completions SHELL`). Answers and exits; otherwise does nothing.
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command)
        .var(commands::completions::COMPLETE_VARIABLE)
        .complete();
    let arguments: Vec<String> = std::env::args_os()
        .map(|word| word.to_string_lossy().into_owned())
        .collect();
    let cli = match parse(&arguments) {
        Ok(cli) => cli,
        Err(status) => return status.into(),
    };
    let verbosity = if cli.global.quiet {
        Verbosity::Quiet
    } else if cli.global.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let environment = Environment::from_process();
    let context = Context {
        printer: Printer::new(cli.global.color, verbosity),
        json: cli.global.json,
        search_path: environment.search_path(),
        environment,
        host_flag: cli.global.host.clone(),
        context_flag: cli.global.context.clone(),
        user: envctl::context::current_user(),
        other_user: cli.global.other_user,
        chosen_daemon: std::sync::OnceLock::new(),
        me: std::sync::OnceLock::new(),
        me_on_chosen: std::sync::OnceLock::new(),
    };
    if standard_streams::stdout_was_closed() {
        // Whatever the command printed would be lost, and the exit code would claim it
        // was shown: refuse before doing anything.
        let error = envctl::error::Error::Output(std::io::Error::other(
            "standard output is closed (`>&-`): nothing envctl prints could be read",
        ));
        context.printer.error(&error);
        return error.exit_status().into();
    }
    let status = match commands::run(cli, &context) {
        Ok(status) => status,
        Err(error) if error.is_broken_pipe() => ExitStatus::Success,
        Err(error) => {
            context.printer.error(&error);
            error.exit_status()
        }
    };
    status.into()
}

/// The unknown `word` clap refused where a subcommand goes, answered from the level it
/// was typed at: the words before it are followed down the command tree (`envctl
/// profiles lst` is a typo of `profiles list`, not of `profiles`).
fn unknown_subcommand(
    arguments: &[String],
    root: &clap::Command,
    word: &str,
) -> Option<envctl::suggest::Meant> {
    let mut level = root;
    let mut parent: Vec<&str> = Vec::new();
    for (index, typed) in arguments.iter().enumerate().skip(1) {
        if typed == word && !parent.is_empty() {
            let known: Vec<&str> = level
                .get_subcommands()
                .map(clap::Command::get_name)
                .collect();
            return envctl::suggest::unknown_subcommand_of(arguments, index, &parent, &known);
        }
        match level.find_subcommand(typed) {
            Some(deeper) if deeper.has_subcommands() => {
                parent.push(deeper.get_name());
                level = deeper;
            }
            // A leaf command: the word is no subcommand of it.
            Some(_) => break,
            None => {}
        }
    }
    let known: Vec<&str> = root
        .get_subcommands()
        .map(clap::Command::get_name)
        .collect();
    envctl::suggest::unknown_subcommand(arguments, &known)
}

/// The command line, or the exit status after saying why it is refused. What clap would
/// answer with a tip that leads nowhere ("use '-- -x'", no suggestion for `run`) is said
/// with a command that works (`envctl::suggest`); help, version and clap's other errors
/// are clap's own.
fn parse(arguments: &[String]) -> Result<Cli, ExitStatus> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let refuse = |meant: envctl::suggest::Meant| {
        let error = envctl::error::Error::Usage {
            message: meant.message,
            hint: Some(meant.hint),
        };
        Printer::new(envctl::ui::ColorChoice::Auto, Verbosity::Normal).error(&error);
        error.exit_status()
    };
    if let Some(meant) = envctl::suggest::misread_command_line(arguments) {
        return Err(refuse(meant));
    }
    let error = match Cli::try_parse_from(arguments) {
        Ok(cli) => return Ok(cli),
        Err(error) => error,
    };
    let value = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        Some(ContextValue::Strings(texts)) => texts.first().cloned(),
        _ => None,
    };
    let meant = match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let command = <Cli as clap::CommandFactory>::command();
            match value(ContextKind::InvalidSubcommand) {
                Some(word) => unknown_subcommand(arguments, &command, &word),
                None => None,
            }
        }
        ErrorKind::UnknownArgument => value(ContextKind::InvalidArg).map(|flag| {
            let suggested = value(ContextKind::SuggestedArg);
            envctl::suggest::unknown_flag(arguments, &flag, suggested.as_deref())
        }),
        _ => None,
    };
    match meant {
        Some(meant) => Err(refuse(meant)),
        None => error.exit(),
    }
}
