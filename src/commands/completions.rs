//! `envctl completions SHELL`: the completion script, generated from the clap definition.

use clap::CommandFactory;

use super::Context;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::Error;
use crate::exit::ExitStatus;

pub fn run(arguments: &CompletionsArgs, context: &Context) -> Result<ExitStatus, Error> {
    context.printer.data(script(arguments.shell).trim_end())?;
    Ok(ExitStatus::Success)
}

/// The script for one shell, as committed under `completions/`.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "envctl", &mut buffer);
    String::from_utf8_lossy(&buffer).into_owned()
}
