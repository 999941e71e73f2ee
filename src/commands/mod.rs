//! One module per subcommand: each takes its arguments (one clap struct, `NameArgs`, in
//! its file), calls `crate::ops`, which gathers through the adapters and judges, and
//! renders the result through `ui`. The [`Context`] every command gets is
//! `crate::context`'s.

pub mod compat;
pub mod completions;
pub mod doctor;
pub mod doctor_hosts;
pub mod down;
pub mod exec;
pub mod export;
pub mod forward;
pub mod gpu;
pub mod lock;
pub mod logs;
pub mod nvidia_check;
pub mod outdated;
pub mod policy;
pub mod profiles;
pub mod ps;
pub mod run;
pub mod stats;
pub mod trust;
pub mod up;

use crate::cli::{Cli, Command};
use crate::error::Error;
use crate::exit::ExitStatus;

pub use crate::context::Context;

pub(crate) use crate::ops::REQUEST_TIMEOUT;

/// A single-threaded runtime for the commands that talk to the daemon; the pure commands
/// never start one.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

pub use crate::ops::wait::{Waited, termination_signal, wait_for};

/// Commands whose output is not data a JSON document could hold: `--json` is refused
/// (exit 2) rather than ignored. Every other command prints one document.
fn refuses_json(command: &Command) -> Option<&'static str> {
    match command {
        Command::Completions(_) => Some("`completions` prints a shell script"),
        Command::Shell(_) => Some("`shell` is an interactive terminal session"),
        Command::Run(_) => Some("`run` prints the command's own output"),
        _ => None,
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli, context: &Context) -> Result<ExitStatus, Error> {
    if context.json
        && let Some(why) = refuses_json(&cli.command)
    {
        return Err(Error::Usage {
            message: format!("--json is not available here: {why}"),
            hint: Some("leave out --json".into()),
        });
    }
    match cli.command {
        Command::Profiles(command) => profiles::run(command, context),
        Command::Completions(arguments) => completions::run(&arguments, context),
        Command::Ps(arguments) => ps::run(arguments, context),
        Command::Exec(arguments) => exec::run(arguments, context),
        Command::Shell(arguments) => exec::shell(arguments, context),
        Command::Export(arguments) => export::run(arguments, context),
        Command::Stats(arguments) => stats::run(arguments, context),
        Command::Lock(arguments) => lock::run(arguments, context),
        Command::Outdated(arguments) => outdated::run(arguments, context),
        Command::Up(arguments) => up::run(arguments, context),
        Command::Compat(arguments) => compat::run(arguments, context),
        Command::Doctor(arguments) if !arguments.hosts.is_empty() => {
            doctor_hosts::run(&arguments.profiles, &arguments.hosts, context)
        }
        Command::Doctor(arguments) => doctor::run(arguments, context),
        Command::Down(arguments) => down::run(arguments, context),
        Command::Run(arguments) => run::run(arguments, context),
        Command::NvidiaCheck(arguments) => nvidia_check::here(arguments, context),
        Command::Logs(arguments) => logs::run(arguments, context),
        Command::Trust(arguments) => trust::run(arguments, context),
        Command::Policy(arguments) => policy::run(arguments, context),
        Command::Forward(arguments) => forward::run(arguments, context),
        Command::Gpu(arguments) => gpu::run(arguments, context),
    }
}
