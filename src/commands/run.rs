//! `envctl run PROFILE [-- CMD…]`: `ops::run` plans it, `ops::up::up` makes and starts the
//! container, its output is followed here (stdout to stdout, stderr to stderr, as the
//! command wrote it), and at the command's end or at the first SIGTERM, SIGINT or SIGHUP
//! the container is stopped within `--stop-timeout` and removed. The exit code is the
//! command's, or 129/130/143 after a signal.

use std::cell::RefCell;
use std::rc::Rc;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::container::OutputStream;
use crate::ops::run::{self, RunRequest};
use crate::ops::up::{Outcome, RunState, UpOptions, clean_up, up};

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
    let runtime = runtime()?;
    runtime.block_on(async {
        // One set of handlers from the first instant: a signal before anything is made
        // ends `run` at once, one while the container is made removes what was made, one
        // while it runs stops and removes it.
        let mut signals = run::EndingSignals::install();
        // The client waits as long as the stop may rightly take.
        let engine = context
            .engine_with_deadline(crate::ops::down::stop_deadline(stop_timeout))
            .await?;
        let plan = tokio::select! {
            plan = run::plan(&engine, &request, context) => plan?,
            code = signals.next() => return Ok(ExitStatus::External(code)),
        };
        if engine.inspect_container(&plan.name).await?.is_some() {
            return Err(Error::Usage {
                message: format!("container `{}` exists already", plan.name),
                hint: Some(
                    "`envctl run` makes a container of its own and removes it at the end: leave out `--name`, or remove that one first (`envctl down --rm NAME`)".into(),
                ),
            });
        }
        let options = UpOptions {
            pull: request.pull,
            force: request.force,
            recreate: false,
        };
        let state = Rc::new(RefCell::new(RunState::default()));
        let made = tokio::select! {
            made = up(&engine, &plan, &options, context, &state) => made,
            code = signals.next() => {
                clean_up(&engine, &state, context).await;
                context.printer.warn("interrupted before the command started: nothing is left");
                return Ok(ExitStatus::External(code));
            }
        };
        let report = match made {
            Ok(report) => report,
            Err(error) => {
                clean_up(&engine, &state, context).await;
                return Err(error);
            }
        };
        if !matches!(report.status, Outcome::Created | Outcome::Recreated) {
            return Err(Error::Internal(format!(
                "`run` met container `{}` instead of making it",
                report.container
            )));
        }
        let short_id: String = report.id.chars().take(12).collect();
        context.printer.info(&format!(
            "running {} ({short_id}); it is removed when the command ends",
            report.container
        ));
        let printer = &context.printer;
        let follow = run::follow(&engine, &report.id, |stream, bytes| match stream {
            OutputStream::Stdout => printer.stdout_bytes(bytes),
            OutputStream::Stderr => printer.stderr_bytes(bytes),
        });
        tokio::pin!(follow);
        let followed = tokio::select! {
            code = &mut follow => Ok(code),
            code = signals.next() => Err(code),
        };
        let ended = match followed {
            Ok(Ok(run::Followed::Ended(code))) => Ok(ExitStatus::External(code)),
            // The reader of envctl's output went away: as the docker CLI, 141 (SIGPIPE).
            Ok(Ok(run::Followed::OutputClosed)) => Ok(ExitStatus::External(
                u8::try_from(crate::engine::exec::OUTPUT_CLOSED).unwrap_or(141),
            )),
            Ok(Err(error)) => Err(error),
            Err(signalled) => {
                context.printer.info(&format!(
                    "{}: stopping {} (at most {stop_timeout} s) and removing it",
                    signal_name(signalled),
                    report.container
                ));
                // The command's last words (a trap's message) still reach the terminal
                // while it stops; what the follow says once it is removed is moot.
                let last_words = std::time::Duration::from_secs(u64::from(stop_timeout) + 5);
                let (_, removed) = tokio::join!(
                    tokio::time::timeout(last_words, follow),
                    run::tear_down(
                        &engine,
                        &report.id,
                        &report.container,
                        stop_timeout,
                        &mut signals,
                        context,
                    )
                );
                removed?;
                return Ok(ExitStatus::External(signalled));
            }
        };
        run::tear_down(
            &engine,
            &report.id,
            &report.container,
            stop_timeout,
            &mut signals,
            context,
        )
        .await?;
        ended
    })
}

fn signal_name(code: u8) -> &'static str {
    match code {
        129 => "SIGHUP",
        130 => "SIGINT",
        _ => "SIGTERM",
    }
}
