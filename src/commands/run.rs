//! `envctl run PROFILE [-- CMD…]`: `ops::run::run` plans it, makes and starts the container
//! through `ops::up::up`, follows its output (written here: stdout to stdout, stderr to
//! stderr, as the command wrote it), and at the command's end or at the first SIGTERM,
//! SIGINT or SIGHUP stops the container within `--stop-timeout` and removes it. The exit
//! code is the command's, or 129/130/143 after a signal.

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::OutputStream;
use crate::ops::run::{self, RunRequest};

/// `envctl run`'s arguments, as clap parses them: the request `ops::run` reads, and the
/// grace period of the stop at its end.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RunRequest,
    /// Seconds the command gets to end after SIGTERM before it is killed, at its end or
    /// at a signal (keep it below Slurm's KillWait)
    #[arg(long, default_value_t = run::DEFAULT_STOP_TIMEOUT_SECONDS, value_name = "SECONDS",
          value_parser = clap::value_parser!(u32).range(0..=86_400))]
    pub stop_timeout: u32,
}

pub fn run(arguments: RunArgs, context: &Context) -> Result<ExitStatus, Error> {
    let RunArgs {
        request,
        stop_timeout,
    } = arguments;
    let printer = &context.printer;
    let code = runtime()?.block_on(run::run(
        &request,
        stop_timeout,
        context,
        |stream, bytes| match stream {
            OutputStream::Stdout => printer.stdout_bytes(bytes),
            OutputStream::Stderr => printer.stderr_bytes(bytes),
        },
    ))?;
    Ok(ExitStatus::External(code))
}
