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
    let cli = Cli::parse();
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
        user: envctl::host::user::current(std::path::Path::new("/")),
        other_user: cli.global.other_user,
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
