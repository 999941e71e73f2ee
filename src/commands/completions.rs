//! `envctl completions SHELL`: the script that registers envctl's completions with a
//! shell. It asks envctl itself at each TAB (`COMPLETE=SHELL envctl -- WORDS…`, handled
//! in `main` by clap_complete), so `envctl up <TAB>` offers the profiles envctl finds in
//! that folder and `envctl exec <TAB>` the running containers too — what a script
//! generated once could not know.

use clap_complete::env::EnvCompleter;

use super::Context;
use crate::cli::CompletionsArgs;
use crate::error::Error;
use crate::exit::ExitStatus;

pub fn run(arguments: &CompletionsArgs, context: &Context) -> Result<ExitStatus, Error> {
    context.printer.data(script(arguments.shell).trim_end())?;
    Ok(ExitStatus::Success)
}

/// The environment variable that turns envctl into its own completer.
pub const COMPLETE_VARIABLE: &str = "COMPLETE";

/// The registration script for one shell, as committed under `completions/`: it calls
/// `envctl` from `PATH` while completing.
pub fn script(shell: clap_complete::Shell) -> String {
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &clap_complete::env::Bash,
        clap_complete::Shell::Elvish => &clap_complete::env::Elvish,
        clap_complete::Shell::Fish => &clap_complete::env::Fish,
        clap_complete::Shell::PowerShell => &clap_complete::env::Powershell,
        // clap_complete::Shell is non-exhaustive; zsh is the last it knows today.
        _ => &clap_complete::env::Zsh,
    };
    let mut buffer = Vec::new();
    // Writing to a Vec cannot fail.
    let _ =
        completer.write_registration(COMPLETE_VARIABLE, "envctl", "envctl", "envctl", &mut buffer);
    String::from_utf8_lossy(&buffer).into_owned()
}
