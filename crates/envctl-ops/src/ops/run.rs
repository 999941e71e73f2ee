//! `envctl run PROFILE [-- CMD…]`: the foreground form of `up` (issue 29), as `docker run`
//! without `-d`, `srun` and `torchrun` users expect. The profile is resolved as `up`
//! resolves it, inside a Slurm job confined to the allocation (`ops::slurm`), and made and
//! started by `ops::up::up` (preflight, placement under the host's lock, create, verify,
//! start) with the command as the container's main process under docker-init. Its output
//! is followed until it ends; then, or at the first SIGTERM, SIGINT or SIGHUP, the
//! container is stopped within `--stop-timeout` and removed. What `run` makes never
//! outlives it, except when it is SIGKILLed: the `envctl.slurm-job` label lets an
//! `Epilog=` script sweep those (`envctl down --rm --slurm-job ID`).

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;

use crate::container_plan::{self, Overrides};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::OutputStream;
use crate::ops::up::{
    Outcome, Plan, PullPolicy, RunState, UpOptions, UpReport, UpRequest, clean_up, up,
};

/// The grace period `run` gives the command at its end by default: well within Slurm's
/// `KillWait` (30 s by default), so the removal is done before Slurm's SIGKILL.
pub const DEFAULT_STOP_TIMEOUT_SECONDS: u32 = 10;

/// What `envctl run` was asked: the arguments as clap parses them (`commands::run`'s
/// `RunArgs` adds the stop's grace period), read here as they are.
#[derive(Debug, Clone, clap::Args)]
pub struct RunRequest {
    /// A profile name or path
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profile: String,
    /// The command and its arguments (after the profile, as `docker run IMAGE CMD…`; or
    /// after `--`)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
    /// Container name (default: envctl-PROFILE-run-RANDOM, or -jobID-RANDOM in a Slurm job)
    #[arg(long)]
    pub name: Option<String>,
    /// When to pull the image
    #[arg(long, value_enum, default_value_t = PullPolicy::Missing)]
    pub pull: PullPolicy,
    /// Start even when doctor's checks fail
    #[arg(long)]
    pub force: bool,
    /// Fail unless envctl.lock pins this profile's current image
    #[arg(long)]
    pub locked: bool,
    /// Set an environment variable (KEY=VALUE, or KEY to take it from this shell)
    #[arg(short, long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Mount SOURCE:TARGET[:ro]
    #[arg(long, value_name = "SPEC")]
    pub volume: Vec<String>,
    /// GPUs instead of the profile's: all, none, a count (placed on free GPUs), or device=0,1
    #[arg(long, value_name = "SPEC")]
    pub gpus: Option<String>,
    /// A ulimit instead of the profile's, docker syntax (NAME=SOFT[:HARD], -1 unlimited):
    /// `--ulimit memlock=65536` where the daemon may not raise the bundled `memlock = -1`
    #[arg(long, value_name = "NAME=SOFT[:HARD]")]
    pub ulimit: Vec<String>,
    /// Give a profile envctl did not make (./envctl/, ENVCTL_PROFILE_PATH, a path) the
    /// root-equivalent settings it asks for (host mounts, SYS_ADMIN, host network, …)
    #[arg(long)]
    pub trust: bool,
}

/// `envctl run`: plans and makes the container (as `up`, with the command as its main
/// process), follows its output into `on_output`, then stops and removes it within
/// `stop_timeout` seconds. One set of handlers from the first instant: a signal before
/// anything is made ends `run` at once, one while the container is made removes what was
/// made, one while it runs stops and removes it. The exit code: the command's, 141 when
/// envctl's output was closed, or 129/130/143 after SIGHUP, SIGINT or SIGTERM.
pub async fn run(
    request: &RunRequest,
    stop_timeout: u32,
    context: &Context,
    on_output: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    input: Option<impl tokio::io::AsyncRead + Unpin + Send + 'static>,
) -> Result<u8, Error> {
    // One set of handlers from the first instant: a signal before anything is made
    // ends `run` at once, one while the container is made removes what was made, one
    // while it runs stops and removes it.
    let mut signals = EndingSignals::install();
    // The client waits as long as the stop may rightly take.
    let engine = context
        .engine_with_deadline(crate::ops::down::stop_deadline(stop_timeout))
        .await?;
    let report = match make(&engine, request, input.is_some(), &mut signals, context).await? {
        ControlFlow::Continue(report) => report,
        ControlFlow::Break(code) => return Ok(code),
    };
    let short_id: String = report.id.chars().take(12).collect();
    context.printer.info(&format!(
        "running {} ({short_id}); it is removed when the command ends",
        report.container
    ));
    // Attached once it runs: a command that reads before the attach waits for the input,
    // which the daemon holds open (`OpenStdin`), so nothing is lost.
    let _forwarding = match input {
        Some(input) => match engine.attach_stdin(&report.id).await {
            Ok(writer) => Some(tokio::spawn(pass_on(input, writer))),
            Err(error) => {
                tear_down(
                    &engine,
                    &report.id,
                    &report.container,
                    stop_timeout,
                    &mut signals,
                    context,
                )
                .await?;
                return Err(error.into());
            }
        },
        None => None,
    };
    follow_to_the_end(
        &engine,
        &report,
        stop_timeout,
        on_output,
        &mut signals,
        context,
    )
    .await
}

/// Plans `request` and makes its container as `up` does, never meeting one that exists
/// (`reads_input`: its stdin is opened for what is passed on). A signal ends it at once
/// before anything is made, and removes what was made after: `Break` with its code.
async fn make(
    engine: &Engine,
    request: &RunRequest,
    reads_input: bool,
    signals: &mut EndingSignals,
    context: &Context,
) -> Result<ControlFlow<u8, UpReport>, Error> {
    let mut plan = tokio::select! {
        plan = plan(engine, request, context) => plan?,
        code = signals.next() => return Ok(ControlFlow::Break(code)),
    };
    // As `docker run -i`: the command reads what is passed on, and its stdin closes at
    // the end of it.
    if reads_input {
        plan.body.open_stdin = true;
        plan.body.stdin_once = true;
    }
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
        made = up(engine, &plan, &options, context, &state) => made,
        code = signals.next() => {
            clean_up(engine, &state, context).await;
            context.printer.warn("interrupted before the command started: nothing is left");
            return Ok(ControlFlow::Break(code));
        }
    };
    let report = match made {
        Ok(report) => report,
        Err(error) => {
            clean_up(engine, &state, context).await;
            return Err(error);
        }
    };
    if !matches!(report.status, Outcome::Created | Outcome::Recreated) {
        return Err(Error::Internal(format!(
            "`run` met container `{}` instead of making it",
            report.container
        )));
    }
    Ok(ControlFlow::Continue(report))
}

/// Follows the command's output into `on_output` until it ends, then stops and removes
/// its container: the command's code, or 141 when envctl's output was closed. A signal
/// first stops and removes it while the command's last words still reach the terminal;
/// the signal's code is then `run`'s.
async fn follow_to_the_end(
    engine: &Engine,
    report: &UpReport,
    stop_timeout: u32,
    on_output: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    signals: &mut EndingSignals,
    context: &Context,
) -> Result<u8, Error> {
    let follow = follow(engine, &report.id, on_output);
    tokio::pin!(follow);
    let followed = tokio::select! {
        code = &mut follow => Ok(code),
        code = signals.next() => Err(code),
    };
    let ended = match followed {
        Ok(Ok(Followed::Ended(code))) => Ok(code),
        // The reader of envctl's output went away: as the docker CLI, 141 (SIGPIPE).
        Ok(Ok(Followed::OutputClosed)) => {
            Ok(u8::try_from(crate::engine::exec::OUTPUT_CLOSED).unwrap_or(141))
        }
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
                tear_down(
                    engine,
                    &report.id,
                    &report.container,
                    stop_timeout,
                    signals,
                    context,
                )
            );
            removed?;
            return Ok(signalled);
        }
    };
    tear_down(
        engine,
        &report.id,
        &report.container,
        stop_timeout,
        signals,
        context,
    )
    .await?;
    ended
}

/// Copies `input` into the container's stdin, then closes it. The command may end before
/// it read everything: what is left is dropped, as `docker run -i` drops it.
async fn pass_on(
    mut input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    mut writer: crate::engine::attach::ContainerInput,
) {
    let _ = tokio::io::copy(&mut input, &mut writer).await;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut writer).await;
}

/// The signal a shell's exit code 129, 130 or 143 stands for.
fn signal_name(code: u8) -> &'static str {
    match code {
        129 => "SIGHUP",
        130 => "SIGINT",
        _ => "SIGTERM",
    }
}

/// The plan `up` carries out for `run`: `ops::up::plan` (the profile resolved as `up`
/// resolves it, inside a Slurm job confined to it), with the command as the main process,
/// docker-init as PID 1 (it passes `docker stop`'s SIGTERM on to the command), and a name
/// of its own.
pub async fn plan(engine: &Engine, request: &RunRequest, context: &Context) -> Result<Plan, Error> {
    let mut overrides = Overrides::parse(&request.env, &[], &request.volume, &|key| {
        context.environment.variable(key)
    })?;
    if let Some(spec) = &request.gpus {
        overrides.gpus = Some(Overrides::parse_gpus(spec)?);
    }
    for spec in &request.ulimit {
        overrides.ulimits.push(Overrides::parse_ulimit(spec)?);
    }
    let job = crate::ops::slurm::job(context).map(|job| job.job_id);
    // Named below after the profile as resolved (`./x.toml`, `/abs/x.toml` and a name
    // found on ENVCTL_PROFILE_PATH are all profile `x`), never after the word typed.
    let name = request
        .name
        .clone()
        .unwrap_or_else(|| run_name("unnamed", job.as_deref()));
    let mut plan = crate::ops::up::plan(
        Ok(engine.clone()),
        UpRequest {
            profile: request.profile.clone(),
            overrides,
            locked: request.locked,
            name: Some(name),
            dry_run: false,
            trust: crate::ops::trust::Consent::of(
                request.trust,
                &crate::ops::trust::run_words(request),
                context,
            ),
            force: request.force,
        },
        context,
    )
    .await?;
    if request.name.is_none() {
        plan.name = run_name(&plan.resolved.profile.name, job.as_deref());
    }
    plan.body.cmd = main_command(&request.command, &plan.body.cmd);
    // docker-init as PID 1: `docker stop`'s SIGTERM reaches the command, and what it
    // leaves behind is reaped.
    plan.body.host_config.init = Some(true);
    Ok(plan)
}

/// The container's main command: the one given, else the profile's own; a profile without
/// one (its body keeps the container up with `sleep infinity`) runs the image's `CMD`,
/// as `docker run IMAGE` does.
pub fn main_command(given: &[String], profile: &[String]) -> Vec<String> {
    if !given.is_empty() {
        return given.to_vec();
    }
    if profile == container_plan::KEEP_ALIVE_COMMAND {
        return Vec::new();
    }
    profile.to_vec()
}

/// A name no other run takes: `envctl-<profile>-run-<random>`, with the Slurm job when in
/// one (`envctl-<profile>-job42-<random>`), so `docker ps` tells whose job it serves.
pub fn run_name(profile: &str, job: Option<&str>) -> String {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let base = container_plan::container_name(profile);
    let job: Option<String> = job.map(|job| {
        job.chars()
            .filter(|character| character.is_ascii_alphanumeric() || "_.-".contains(*character))
            .collect()
    });
    match job {
        Some(job) if !job.is_empty() => format!("{base}-job{job}-{:08x}", random as u32),
        _ => format!("{base}-run-{:08x}", random as u32),
    }
}

/// How following a container's output ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// Its main process ended with this code (255 for one that is no process's code,
    /// never 0).
    Ended(u8),
    /// envctl's own output was closed by its reader (`… | head -1`): the command still
    /// runs, and is stopped like at a signal.
    OutputClosed,
}

/// Follows the container's output until its main process ends, or until `on_output`
/// finds its reader gone.
pub async fn follow(
    engine: &Engine,
    id: &str,
    mut on_output: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
) -> Result<Followed, Error> {
    let mut closed = false;
    engine
        .logs(id, true, "all", |stream, bytes| {
            let written = on_output(stream, bytes);
            closed |= written
                .as_ref()
                .is_err_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe);
            written
        })
        .await?;
    if closed {
        return Ok(Followed::OutputClosed);
    }
    // The log ends when the container stops; its code is read once it is recorded.
    for _ in 0..50 {
        match engine.inspect_container(id).await? {
            Some(details) if !details.running => {
                return Ok(Followed::Ended(
                    details
                        .exit_code
                        .and_then(|code| u8::try_from(code).ok())
                        .unwrap_or(255),
                ));
            }
            Some(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            None => {
                return Err(Error::TargetNotFound {
                    target: id.to_string(),
                    hint: "the container was removed while it ran (another `envctl down --rm` or `docker rm -f`)".into(),
                });
            }
        }
    }
    Err(Error::Internal(format!(
        "the log of container {id} ended but the container still runs"
    )))
}

/// Stops the container within `stop_timeout_seconds` (SIGTERM to the command through
/// docker-init, then SIGKILL) and removes it with its anonymous volumes. A second signal
/// meanwhile removes it at once (`docker rm -f`).
pub async fn tear_down(
    engine: &Engine,
    id: &str,
    name: &str,
    stop_timeout_seconds: u32,
    signals: &mut EndingSignals,
    context: &Context,
) -> Result<(), Error> {
    let timeout = i32::try_from(stop_timeout_seconds).unwrap_or(i32::MAX);
    let stopped = tokio::select! {
        stopped = engine.stop_container(id, timeout) => stopped.map_err(Error::from),
        code = signals.next() => {
            context.printer.warn(&format!(
                "signal again ({code}): removing {name} at once"
            ));
            Ok(())
        }
    };
    let removed = engine
        .remove_container(id, true, true)
        .await
        .map_err(Error::from);
    match (stopped, removed) {
        (_, Ok(())) => Ok(()),
        (Err(error), Err(_)) | (Ok(()), Err(error)) => Err(error),
    }
}

/// SIGINT, SIGTERM and SIGHUP (Slurm's `scancel` sends SIGTERM; a closed terminal or ssh
/// session, SIGHUP), listened to from `run`'s start to its end by one set of handlers: a
/// listener made after a signal arrived would take that same signal for a second one.
pub struct EndingSignals {
    streams: Option<[tokio::signal::unix::Signal; 3]>,
}

impl EndingSignals {
    /// Installs the handlers; without them (an error of the runtime) no signal is seen.
    pub fn install() -> EndingSignals {
        use tokio::signal::unix::{SignalKind, signal};
        let streams = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(interrupt), Ok(terminate), Ok(hangup)) => Some([interrupt, terminate, hangup]),
            _ => None,
        };
        EndingSignals { streams }
    }

    /// The next of the three, as the exit code a shell reports: 130, 143 or 129.
    pub async fn next(&mut self) -> u8 {
        let Some([interrupt, terminate, hangup]) = self.streams.as_mut() else {
            return std::future::pending::<u8>().await;
        };
        let code = tokio::select! {
            _ = interrupt.recv() => 130,
            _ = terminate.recv() => 143,
            _ = hangup.recv() => 129,
        };
        crate::interrupt::note(code);
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_string()).collect()
    }

    #[test]
    fn the_given_command_wins_then_the_profiles_then_the_images() {
        assert_eq!(
            main_command(&words(&["python", "train.py"]), &words(&["jupyter"])),
            words(&["python", "train.py"])
        );
        assert_eq!(main_command(&[], &words(&["jupyter"])), words(&["jupyter"]));
        assert_eq!(
            main_command(&[], &words(&["sleep", "infinity"])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn run_names_are_docker_names_and_say_the_job() {
        let named = run_name("pytorch", Some("42"));
        assert!(named.starts_with("envctl-pytorch-job42-"), "{named}");
        assert!(run_name("pytorch", Some("4;2 x")).starts_with("envctl-pytorch-job42x-"));
        assert!(run_name("pytorch", None).starts_with("envctl-pytorch-run-"));
        assert_ne!(run_name("p", None), run_name("p", None));
    }
}
