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
use crate::ui::terminal;

/// `envctl run`'s arguments, as clap parses them: the request `ops::run` reads, and the
/// grace period of the stop at its end.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RunRequest,
    /// Pass a terminal's input on to the command too (a pipe or file always is), as
    /// `docker run -i`
    #[arg(short, long)]
    pub interactive: bool,
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
        interactive,
    } = arguments;
    let printer = &context.printer;
    // What reaches the command's stdin: a pipe or a file always (`echo … | envctl run P
    // sh`), a terminal with `-i`; never /dev/null or another device (a Slurm batch step's
    // stdin), which docker's `run` without `-i` would not pass either.
    let input = (interactive || terminal::stdin_is_pipe_or_file()).then(tokio::io::stdin);
    let runtime = runtime()?;
    let code = runtime.block_on(run::run(
        &request,
        stop_timeout,
        context,
        |stream, bytes| match stream {
            OutputStream::Stdout => printer.stdout_bytes(bytes),
            OutputStream::Stderr => printer.stderr_bytes(bytes),
        },
        input,
    ));
    // A read of stdin may still be blocked in tokio's stdin thread (a pipe whose writer
    // is still open): do not wait for it.
    runtime.shutdown_background();
    Ok(ExitStatus::External(code?))
}
