//! `envctl stats`: container CPU, memory, I/O and GPU memory next to GPU utilisation,
//! memory, temperature, power and throttling — live, once, as JSON, recorded, or served
//! to Prometheus and a browser — with the diagnoses the window of samples supports.
//!
//! This file reads the arguments (and the two environment variables that steer the
//! sampling), resolves named targets, and shows what `monitor` gives back through
//! `ui::live`. How it samples without costing the daemon is `ops::stats::sampler`'s (one
//! snapshot, `--once`'s two readings [`ONCE_GAP`] apart) and `ops::stats::follow`'s (the live
//! loop, the container list refreshed every [`RELIST_EVERY`]); `ops::stats::reconnect`
//! keeps trying a lost daemon, `ops::stats::serve` answers Prometheus and the dashboard
//! (`--window` of history), `monitor::report`
//! draws a recording. `ENVCTL_STATS_SOURCE=api` forces the Engine API path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::monitor::history::History;
use crate::monitor::record;
use crate::monitor::report::{self, ReportFormat};
use crate::monitor::{Snapshot, duration};
use crate::ops::stats::Prepared;
use crate::ops::stats::follow::DaemonState;
use crate::ops::stats::follow::{Ended, FollowOptions, FollowView, Outputs};
use crate::ops::stats::reconnect::{RECONNECT_CAP, RECONNECT_FIRST};
use crate::ops::stats::recording::{self, Recorder};
use crate::ops::stats::sampler::{CounterSource, Gpus};
use crate::ops::stats::serve::{self, StatsServer};
use crate::ui::live::{self, LiveScreen};

pub use crate::ops::stats::follow::RELIST_EVERY;
pub use crate::ops::stats::sampler::ONCE_GAP;

/// Where `--serve` listens when given no address (dcgm-exporter's port).
pub const DEFAULT_SERVE_ADDRESS: &str = serve::DEFAULT_ADDRESS;

#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  envctl stats                      live table of envctl's containers and the GPUs (q quits)\n  envctl stats --all --once --json  one snapshot of every container, as JSON\n  envctl stats train --record run.csv\n  envctl stats report run.csv -o run.html\n  envctl stats --serve              dashboard at http://127.0.0.1:9400/, metrics at /metrics"
)]
pub struct StatsArgs {
    #[command(subcommand)]
    pub command: Option<StatsCommand>,
    /// Profiles or containers (default: envctl's running containers)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::targets))]
    pub targets: Vec<String>,
    /// Every running container, not only envctl's
    #[arg(short, long, conflicts_with = "targets")]
    pub all: bool,
    /// envctl's containers of every user (default: your own)
    #[arg(long, conflicts_with = "targets")]
    pub all_users: bool,
    /// One snapshot, then exit
    #[arg(long, conflicts_with = "serve")]
    pub once: bool,
    /// Time between samples: seconds, or with a unit (500ms, 2s, 1m)
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration::parse_interval)]
    pub interval: Duration,
    /// Stop after N samples
    #[arg(long, value_name = "N", conflicts_with = "once", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Append every sample to FILE: CSV (.csv) or JSON lines (.jsonl)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Serve the live dashboard and Prometheus metrics at ADDR [default: 127.0.0.1:9400]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_SERVE_ADDRESS)]
    pub serve: Option<String>,
    /// The span of history the dashboard of `--serve` shows: 10m, 1h, 90s
    #[arg(long, value_name = "DURATION", default_value = "10m", requires = "serve", value_parser = duration::parse_window)]
    pub window: Duration,
    /// A name `--serve` answers requests addressed to, besides IP addresses and localhost
    /// (the `Host` a browser or Prometheus sends: `gpu-node-3.example`); repeatable
    #[arg(long, value_name = "NAME", requires = "serve")]
    pub serve_host: Vec<String>,
    /// Several daemons in one view, live (or one snapshot with --once), each followed on
    /// its own: names of the team file's [hosts], docker CLI context names or URLs,
    /// comma-separated, or @team for every host of the team file; an unreachable one is a
    /// row saying why
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOSTS",
        conflicts_with_all = ["targets", "record"]
    )]
    pub hosts: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum StatsCommand {
    /// Draw a recording's time series: CPU, memory, GPU utilisation, GPU memory, temperature
    Report {
        /// A file written by `envctl stats --record` (.csv or .jsonl)
        file: PathBuf,
        /// Where to write the drawing: .svg, or .html with a summary and the diagnoses;
        /// `-` writes the SVG to stdout
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Replace OUT when it exists
        #[arg(long)]
        force: bool,
    },
}

pub fn run(arguments: StatsArgs, context: &Context) -> Result<ExitStatus, Error> {
    if let Some(StatsCommand::Report {
        file,
        output,
        force,
    }) = &arguments.command
    {
        return report(file, output, *force, context);
    }
    if !arguments.hosts.is_empty() {
        return run_hosts(&arguments, context);
    }
    let mut recorder = match &arguments.record {
        Some(path) => Some(Recorder::open(path)?),
        None => None,
    };
    let source = if context.environment.stats_from_api_only() {
        CounterSource::ApiOnly
    } else {
        CounterSource::Nearest
    };
    runtime()?.block_on(async {
        let prepared = crate::ops::stats::prepare(
            &arguments.targets,
            !arguments.all,
            own_only(&arguments, context),
            context,
        )
        .await?;
        if arguments.once {
            let snapshot = prepared
                .snapshot_once(source, arguments.interval, context.environment.clock())
                .await?;
            if let Some(recorder) = &mut recorder {
                recorder.append(&snapshot)?;
            }
            if context.json {
                context.printer.json(&snapshot)?;
            } else {
                live::print_snapshot(&context.printer, &snapshot)?;
            }
            return Ok(ExitStatus::Success);
        }
        run_live(prepared, context, &arguments, source, recorder).await
    })
}

/// `stats --hosts … --once`: every host's snapshot at once, one table with a HOST column
/// (JSON: a `host` field on each row, and what each host answered); a host that cannot be
/// sampled is a row saying why, never a failed command.
fn run_hosts(arguments: &StatsArgs, context: &Context) -> Result<ExitStatus, Error> {
    use crate::ops::stats::hosts as stats_hosts;
    let hosts = crate::ops::hosts::named(context, &arguments.hosts)?;
    let source = if context.environment.stats_from_api_only() {
        CounterSource::ApiOnly
    } else {
        CounterSource::Nearest
    };
    let choice = stats_hosts::Choice {
        only_envctl: !arguments.all,
        owner: own_only(arguments, context),
    };
    if !arguments.once {
        return runtime()?.block_on(run_team(&hosts, choice, source, arguments, context));
    }
    let fatal_xids = crate::ops::placement::fatal_xids_in_force(None, context)?;
    let answers = runtime()?.block_on(async {
        // This machine's NVML, once, for the hosts whose daemon runs on it (known only
        // once each answers).
        let local_gpus = Gpus::open(
            context.environment.nvml_library(),
            Some((
                context.environment.gpu_lock_path(),
                context.environment.clock(),
            )),
            fatal_xids,
        )
        .await;
        stats_hosts::snapshot_hosts(
            &hosts,
            super::REQUEST_TIMEOUT,
            &choice,
            &local_gpus,
            source,
            arguments.interval,
            context.environment.clock(),
        )
        .await
    });
    let sampled = hosts_view::of(answers, context.environment.clock());
    if context.json {
        context.printer.json(&sampled)?;
    } else {
        hosts_view::print(&context.printer, &sampled)?;
    }
    Ok(ExitStatus::Success)
}

/// `stats --hosts …` live: every host followed on its own (`ops::stats::team`), the team
/// shown every interval on the screen, as plain tables or JSON lines, and with `--serve`
/// on the dashboard and `/metrics`; until `q`, Ctrl-C, SIGTERM or `--count`.
async fn run_team(
    hosts: &[crate::ops::hosts::Host],
    choice: crate::ops::stats::hosts::Choice,
    source: CounterSource,
    arguments: &StatsArgs,
    context: &Context,
) -> Result<ExitStatus, Error> {
    use crate::ops::stats::team::{self, TeamOptions};
    let local_gpus = Gpus::open(
        context.environment.nvml_library(),
        Some((
            context.environment.gpu_lock_path(),
            context.environment.clock(),
        )),
        crate::ops::placement::fatal_xids_in_force(None, context)?,
    )
    .await;
    let mut stops = Stops::listen();
    let server = start_server(arguments, context)?;
    let mut view = make_view(context, arguments, server.is_some())?;
    stops.read_quit(&view);
    if let View::Live(screen, ..) = &mut view {
        let header = live::header(0, 0, arguments.interval, context.environment.now());
        screen
            .draw(&header, &[format!("asking {} hosts…", hosts.len())])
            .map_err(Error::Output)?;
    }
    let options = TeamOptions {
        interval: arguments.interval,
        count: arguments.count,
        choice,
        source,
        timeout: super::REQUEST_TIMEOUT,
        deadline: team::deadline_for(arguments.interval),
        // A daemon of this machine is labelled with this machine's name; one that cannot
        // be read leaves its `Hostname` out.
        hostname: crate::ops::stats::metrics_hostname(context).ok(),
        clock: context.environment.clock(),
    };
    let outcome = team::follow_team(
        hosts,
        &local_gpus,
        &options,
        server.as_ref(),
        &mut view,
        stops.first(),
    )
    .await;
    finish(outcome, view, server)
}

impl crate::ops::stats::team::TeamView for View<'_> {
    fn show(
        &mut self,
        team: &crate::monitor::team::HostsSnapshot,
        taken: u64,
    ) -> Result<(), Error> {
        match self {
            View::Live(screen, context, interval, _) => {
                let lines = hosts_view::lines(&context.printer, team, Some(live::screen_width()));
                let header = live::header(
                    taken,
                    team.containers.len(),
                    *interval,
                    context.environment.now(),
                );
                screen.draw(&header, &lines).map_err(Error::Output)
            }
            View::Lines(context, stream) => {
                let mut lines = hosts_view::lines(&context.printer, team, None);
                lines.push(String::new());
                stream.write(lines.join("\n"));
                Ok(())
            }
            View::JsonLines(_, stream) => {
                stream.write(team.json_line().trim_end().to_string());
                Ok(())
            }
            View::Quiet(_) => Ok(()),
        }
    }

    fn pending_write(&mut self) -> Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
        match self {
            View::Lines(_, stream) | View::JsonLines(_, stream) => stream.pending.take(),
            View::Live(..) | View::Quiet(_) => None,
        }
    }
}

/// Whose containers `stats` shows without targets: the user's own, unless `--all-users`
/// or `--all` (every running container) asks for more.
fn own_only(arguments: &StatsArgs, context: &Context) -> Option<crate::facts::user::User> {
    // The identity of the chosen daemon; over several (`--hosts`), the user without one:
    // each host gives it the identity its own transport proves (`stats::hosts::owner_on`).
    (!arguments.all && !arguments.all_users).then(|| {
        if !arguments.hosts.is_empty() {
            context.user.clone()
        } else {
            context.me().clone()
        }
    })
}

/// What each interval's snapshot goes to.
enum View<'a> {
    /// The screen, the context, the interval, and the last minute for the sparklines.
    Live(LiveScreen, &'a Context, Duration, Box<History>),
    Lines(&'a Context, Stream),
    JsonLines(&'a Context, Stream),
    Quiet(&'a Context),
}

/// The lines of a [`View::Lines`] or [`View::JsonLines`] go through a writer thread, and
/// the loop waits for the one in flight (`FollowView::pending_write`).
struct Stream {
    writer: crate::ui::printer::StreamWriter,
    pending: Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>>,
}

impl Stream {
    fn new(context: &Context) -> Result<Stream, Error> {
        Ok(Stream {
            writer: context.printer.stream_writer().map_err(Error::Output)?,
            pending: None,
        })
    }

    fn write(&mut self, text: String) {
        self.pending = Some(self.writer.write(text));
    }
}

impl View<'_> {
    fn context(&self) -> &Context {
        match self {
            View::Live(_, context, _, _)
            | View::Lines(context, _)
            | View::JsonLines(context, _)
            | View::Quiet(context) => context,
        }
    }
}

impl FollowView for View<'_> {
    fn daemon_lost(&mut self, lost: &DaemonState) {
        // The live screen shows the daemon's state in its failure lines; stderr would
        // tear it.
        if !matches!(self, View::Live(..)) {
            self.context().printer.warn(&format!(
                "lost the {} at `{}`: {}; GPU readings go on, reconnecting every {} ms to {} s",
                lost.daemon,
                lost.endpoint,
                lost.error.as_deref().unwrap_or("it stopped answering"),
                RECONNECT_FIRST.as_millis(),
                RECONNECT_CAP.as_secs()
            ));
        }
    }

    fn daemon_back(&mut self, back: &DaemonState) {
        if !matches!(self, View::Live(..)) {
            self.context().printer.info(&format!(
                "the {} at `{}` answers again; following its containers",
                back.daemon, back.endpoint
            ));
        }
    }

    fn show(&mut self, snapshot: &Snapshot, taken: u64) -> Result<(), Error> {
        match self {
            View::Live(screen, context, interval, history) => {
                let style =
                    |style: console::Style, text: &str| context.printer.style_stdout(style, text);
                let columns = live::screen_width();
                history.push(snapshot);
                let mut lines =
                    live::snapshot_lines_with(snapshot, Some(history), Some(columns), &style);
                let failures = live::failure_lines(snapshot, Some(columns), &style);
                if !failures.is_empty() {
                    lines.push(String::new());
                    lines.extend(failures);
                }
                let header = live::header(
                    taken,
                    snapshot.containers.len(),
                    *interval,
                    context.environment.now(),
                );
                screen.draw(&header, &lines).map_err(Error::Output)
            }
            View::Lines(context, stream) => {
                let mut lines = live::snapshot_text(&context.printer, snapshot);
                lines.push(String::new());
                stream.write(lines.join("\n"));
                live::say_failures(&context.printer, snapshot);
                Ok(())
            }
            View::JsonLines(_, stream) => {
                stream.write(record::json_line(snapshot).trim_end().to_string());
                Ok(())
            }
            View::Quiet(_) => Ok(()),
        }
    }

    fn pending_write(&mut self) -> Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
        match self {
            View::Lines(_, stream) | View::JsonLines(_, stream) => stream.pending.take(),
            View::Live(..) | View::Quiet(_) => None,
        }
    }
}

/// The live view, JSON lines or plain snapshots, until `q`, Ctrl-C, SIGTERM or `--count`.
async fn run_live(
    prepared: Prepared,
    context: &Context,
    arguments: &StatsArgs,
    source: CounterSource,
    mut recorder: Option<Recorder>,
) -> Result<ExitStatus, Error> {
    let selection = &prepared.selection;
    // Before the terminal changes: a signal from here on ends the loop, which restores it.
    let mut stops = Stops::listen();
    let server = start_server(arguments, context)?;
    let mut view = make_view(context, arguments, server.is_some())?;
    stops.read_quit(&view);
    if let View::Live(screen, ..) = &mut view {
        let header = live::header(
            0,
            selection.targets.len(),
            arguments.interval,
            context.environment.now(),
        );
        screen
            .draw(&header, &["waiting for the first samples…".to_string()])
            .map_err(Error::Output)?;
    }
    let options = FollowOptions {
        interval: arguments.interval,
        count: arguments.count,
        all: arguments.all,
        owner: own_only(arguments, context),
        source,
        // The host's name labels the metrics: `NODE_NAME` where set (a pod's node, as
        // DCGM exporter takes it), else this host's; one that cannot be read is said and
        // left out of them.
        hostname: match crate::ops::stats::metrics_hostname(context) {
            Ok(name) => Some(name),
            Err(error) => {
                if arguments.serve.is_some() {
                    context.printer.warn(&format!(
                        "the host's name could not be read ({error}): the metrics carry no `Hostname` label"
                    ));
                }
                None
            }
        },
        clock: context.environment.clock(),
    };
    let outcome = prepared
        .follow(
            &options,
            Outputs {
                recorder: recorder.as_mut(),
                server: server.as_ref(),
            },
            &mut view,
            stops.first(),
        )
        .await;
    finish(outcome, view, server)
}

/// The end of a live loop (one host's or the team's): the screen goes before anything is
/// printed, so messages land on the real terminal; then the server stops. A reader that
/// closed the pipe (`stats | head`) ended it, which is no failure.
fn finish(
    outcome: Result<Ended<ExitStatus>, Error>,
    view: View<'_>,
    server: Option<StatsServer>,
) -> Result<ExitStatus, Error> {
    drop(view);
    if let Some(server) = server {
        server.stop();
    }
    match outcome {
        Ok(Ended::Stopped(status)) => Ok(status),
        Ok(Ended::Counted) => Ok(ExitStatus::Success),
        Err(error) if error.is_broken_pipe() => Ok(ExitStatus::Success),
        Err(error) => Err(error),
    }
}

/// What ends a live loop: SIGINT, SIGTERM, or `q` on a screen that reads keys.
struct Stops {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
    quit: Option<tokio::sync::mpsc::UnboundedReceiver<()>>,
}

impl Stops {
    /// Listens for the signals from now on.
    fn listen() -> Stops {
        Stops {
            interrupt: listen(tokio::signal::unix::SignalKind::interrupt()),
            terminate: listen(tokio::signal::unix::SignalKind::terminate()),
            quit: None,
        }
    }

    /// `q` ends it too where `view` is a screen that reads keys.
    fn read_quit(&mut self, view: &View<'_>) {
        if let View::Live(screen, ..) = view
            && screen.reads_keys()
        {
            self.quit = Some(live::spawn_quit_reader());
        }
    }

    /// The first of them, as the exit status.
    async fn first(mut self) -> ExitStatus {
        tokio::select! {
            // Like any command a signal ends: 130 and 143, as a shell reports them.
            _ = wait(&mut self.interrupt) => ExitStatus::External(130),
            _ = wait(&mut self.terminate) => ExitStatus::External(143),
            _ = wait_quit(&mut self.quit) => ExitStatus::Success,
        }
    }
}

/// `--serve`'s server, started and said on stderr (with the warning for an address off
/// this machine); none without `--serve`.
fn start_server(arguments: &StatsArgs, context: &Context) -> Result<Option<StatsServer>, Error> {
    let server = match &arguments.serve {
        Some(address) => Some(StatsServer::start(
            address,
            arguments.window,
            arguments.interval,
            &arguments.serve_host,
        )?),
        None => None,
    };
    if let Some(server) = &server {
        if !is_loopback_address(server.address()) {
            // The server has no authentication: on the network, anyone who reaches the port
            // reads it. Said on stderr, however the rest is rendered.
            context.printer.warn(&format!(
                "the dashboard, /metrics and /api/v1 at http://{} answer without authentication on the network: anyone who reaches this address sees the containers' names, images, users, GPUs and usage; serve on 127.0.0.1 and reach it through `ssh -L`",
                crate::ui::text::shown(server.address())
            ));
        }
        context.printer.info(&format!(
            "serving Prometheus metrics at http://{}/metrics",
            server.address()
        ));
        if arguments.hosts.is_empty() {
            context.printer.info(&format!(
                "dashboard at http://{}/ (the last {})",
                server.address(),
                duration::humanize_span(crate::monitor::history::span_kept(
                    arguments.window,
                    arguments.interval
                ))
            ));
        } else {
            // A team's page shows every host's rows as they stand, not one daemon's curves.
            context.printer.info(&format!(
                "dashboard at http://{}/ (every host, a row each)",
                server.address()
            ));
        }
    }
    Ok(server)
}

/// Where each interval's result goes: the live screen on a terminal, JSON lines with
/// `--json`, plain tables into a pipe, nothing but the server with `--serve` into a pipe.
fn make_view<'a>(
    context: &'a Context,
    arguments: &StatsArgs,
    serving: bool,
) -> Result<View<'a>, Error> {
    Ok(if context.json {
        View::JsonLines(context, Stream::new(context)?)
    } else if crate::ui::terminal::stdout_is_terminal() {
        View::Live(
            LiveScreen::enter().map_err(Error::Output)?,
            context,
            arguments.interval,
            Box::new(History::new(
                Duration::from_secs_f64(crate::ui::sparkline::SPAN_SECONDS),
                arguments.interval,
            )),
        )
    } else if serving {
        View::Quiet(context)
    } else {
        View::Lines(context, Stream::new(context)?)
    })
}

async fn wait_quit(quit: &mut Option<tokio::sync::mpsc::UnboundedReceiver<()>>) {
    match quit {
        Some(receiver) => {
            if receiver.recv().await.is_none() {
                // The key reader ended without a quit (stdin closed): wait for a signal.
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Listens for a signal from now on, for the whole loop: a listener made afresh at each
/// interval would miss a signal that came while the interval's work ran. Without a
/// SIGTERM handler the terminal would stay in raw mode after `kill`; if one cannot be
/// installed, `q` still works and the signal keeps its default effect.
fn listen(kind: tokio::signal::unix::SignalKind) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).ok()
}

async fn wait(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// `stats report FILE -o OUT`.
fn report(file: &Path, output: &Path, force: bool, context: &Context) -> Result<ExitStatus, Error> {
    let recording = recording::read_recording(file)?;
    for (line, why) in &recording.skipped {
        context
            .printer
            .warn(&format!("{}:{line}: skipped: {why}", file.display()));
    }
    let to_stdout = output.as_os_str() == "-";
    let format = if to_stdout {
        Some(ReportFormat::Svg)
    } else {
        ReportFormat::from_path(output)
    };
    let Some(format) = format else {
        return Err(Error::Usage {
            message: format!("`{}` is neither .svg nor .html", output.display()),
            hint: Some("name the output `….svg` or `….html`".into()),
        });
    };
    let drawn = report::draw(&recording, file, format)?;
    if to_stdout {
        context.printer.data(drawn.trim_end_matches('\n'))?;
        return Ok(ExitStatus::Success);
    }
    recording::write_report(output, &drawn, force)?;
    context.printer.info(&format!(
        "wrote {} ({} samples from {})",
        output.display(),
        recording.snapshots.len(),
        file.display()
    ));
    Ok(ExitStatus::Success)
}

/// Whether `--serve`'s bound address (`127.0.0.1:9400`, `[::1]:9400`, `localhost:9400`)
/// is reachable from this machine only.
fn is_loopback_address(address: &str) -> bool {
    match address.parse::<std::net::SocketAddr>() {
        Ok(bound) => bound.ip().is_loopback(),
        Err(_) => address
            .rsplit_once(':')
            .is_some_and(|(host, _)| host.eq_ignore_ascii_case("localhost")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_and_the_printer_agree_on_the_schema_version() {
        assert_eq!(
            crate::monitor::SCHEMA_VERSION,
            crate::ui::printer::SCHEMA_VERSION
        );
    }

    #[test]
    fn errors_keep_their_causes_on_one_line() {
        let error = crate::monitor::record::RecordError::Open {
            path: PathBuf::from("/x/run.csv"),
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied"),
        };
        assert_eq!(
            crate::error::error_chain(&error),
            "cannot open the recording `/x/run.csv`: permission denied"
        );
    }
}

/// What `stats --hosts` shows: the JSON document (`monitor::team`) and the tables.
mod hosts_view {
    use crate::error::Error;
    use crate::monitor::snapshot::{ContainerRow, GpuRow};
    use crate::monitor::team::{GpuSource, HostState, Hosted, HostsSnapshot};
    use crate::monitor::{FailureKind, FailureSubject, Snapshot};
    use crate::ops::hosts::Answer;
    use crate::ui::printer::Printer;
    use crate::ui::table::table_lines;
    use crate::units::{binary_compact, decimal_compact};

    /// `--once`'s answers as one team view: a host that could not be sampled is a row
    /// saying why.
    pub fn of(
        answers: Vec<Answer<(Snapshot, bool)>>,
        clock: crate::context::Clock,
    ) -> HostsSnapshot {
        let mut sampled = HostsSnapshot::new(crate::ops::stats::sampler::now(clock));
        for answer in answers {
            let endpoint = answer.host.endpoint().to_string();
            match answer.result {
                Ok((snapshot, here)) => {
                    sampled.push_sampled(&answer.host.name, &endpoint, None, snapshot, here);
                }
                Err(error) => sampled.push_unreachable(
                    &answer.host.name,
                    &endpoint,
                    crate::ops::stats::team::unreachable(&error),
                ),
            }
        }
        sampled
    }

    use crate::ui::live::{UNKNOWN, or_unknown, pair};

    const CONTAINER_HEADERS: [&str; 10] = [
        "HOST",
        "CONTAINER",
        "PROFILE",
        "CPU %",
        "MEM USAGE / LIMIT",
        "MEM %",
        "GPU MEM",
        "NET I/O",
        "BLOCK I/O",
        "PIDS",
    ];

    const GPU_HEADERS: [&str; 7] = ["HOST", "GPU", "NAME", "UTIL", "MEMORY", "TEMP", "POWER"];

    fn container_cells(host: &str, row: &ContainerRow) -> Vec<String> {
        vec![
            host.to_string(),
            row.name.clone(),
            row.profile.clone().unwrap_or_else(|| UNKNOWN.into()),
            or_unknown(row.cpu_percent, |cpu| format!("{cpu:.1}%")),
            pair(row.memory_bytes, row.memory_limit_bytes, binary_compact),
            match (row.memory_bytes, row.memory_limit_bytes) {
                (Some(used), Some(limit)) if limit > 0 => {
                    format!("{:.1}%", used as f64 / limit as f64 * 100.0)
                }
                _ => UNKNOWN.into(),
            },
            or_unknown(row.gpu_memory_bytes, binary_compact),
            pair(row.net_rx_bytes, row.net_tx_bytes, decimal_compact),
            pair(row.block_read_bytes, row.block_write_bytes, decimal_compact),
            or_unknown(row.pids, |pids| pids.to_string()),
        ]
    }

    fn gpu_cells(host: &str, row: &GpuRow) -> Vec<String> {
        vec![
            host.to_string(),
            row.index.to_string(),
            row.name.clone().unwrap_or_else(|| UNKNOWN.into()),
            or_unknown(row.utilization_percent, |util| format!("{util:.0}%")),
            pair(
                row.memory_used_bytes,
                row.memory_total_bytes,
                binary_compact,
            ),
            or_unknown(row.temperature_c, |temperature| {
                format!("{temperature:.0}°C")
            }),
            pair_watts(row.power_w, row.power_limit_w),
        ]
    }

    fn pair_watts(power: Option<f64>, limit: Option<f64>) -> String {
        match (power, limit) {
            (None, None) => UNKNOWN.to_string(),
            _ => format!(
                "{} / {}",
                or_unknown(power, |watts| format!("{watts:.0}W")),
                or_unknown(limit, |watts| format!("{watts:.0}W"))
            ),
        }
    }

    /// A row for a host with nothing else to show: `what` in the second column.
    fn host_line(host: &str, what: String, width: usize) -> Vec<String> {
        let mut line = vec![host.to_string(), what];
        line.resize(width, UNKNOWN.to_string());
        line
    }

    /// The row of a host with no container rows: why.
    fn why_empty(state: &HostState) -> String {
        match (&state.error, state.waiting) {
            (Some(error), _) => format!("unreachable: {error}"),
            (None, true) => "waiting for its first answer".to_string(),
            (None, false) => "no running containers".to_string(),
        }
    }

    /// The containers' table (a host with none, or unreachable, is a row saying so and
    /// why, with the error's causes), the GPUs' (this machine's GPUs under each host on
    /// this machine; another machine's GPUs a row saying they are not read here) and the
    /// diagnoses, as lines cut to `width` when given.
    pub fn lines(printer: &Printer, sampled: &HostsSnapshot, width: Option<usize>) -> Vec<String> {
        let mut rows = Vec::new();
        for state in &sampled.hosts {
            let mine: Vec<&Hosted<ContainerRow>> = sampled
                .containers
                .iter()
                .filter(|row| row.host == state.host)
                .collect();
            if mine.is_empty() || !state.reachable {
                rows.push(host_line(
                    &state.host,
                    why_empty(state),
                    CONTAINER_HEADERS.len(),
                ));
            }
            rows.extend(mine.iter().map(|row| container_cells(&row.host, &row.row)));
        }
        let mut lines = table_lines(printer, &CONTAINER_HEADERS, &rows, width);
        let mut gpu_rows = Vec::new();
        for state in sampled.hosts.iter().filter(|state| state.time.is_some()) {
            match state.gpus {
                GpuSource::ThisMachine => gpu_rows.extend(
                    sampled
                        .gpus
                        .iter()
                        .filter(|row| row.host == state.host)
                        .map(|row| gpu_cells(&row.host, &row.row)),
                ),
                GpuSource::Unknown => gpu_rows.push(host_line(
                    &state.host,
                    "? (another machine: `envctl stats` there reads its GPUs)".to_string(),
                    GPU_HEADERS.len(),
                )),
            }
        }
        if !gpu_rows.is_empty() {
            lines.push(String::new());
            lines.extend(table_lines(printer, &GPU_HEADERS, &gpu_rows, width));
        }
        let mut diagnoses = Vec::new();
        for state in &sampled.hosts {
            for diagnosis in &state.diagnoses {
                diagnoses.push(format!(
                    "{} {} {} on {}: {}",
                    match diagnosis.severity {
                        crate::monitor::diagnosis::Severity::Warning => "!",
                        crate::monitor::diagnosis::Severity::Info => "i",
                    },
                    diagnosis.id,
                    crate::ui::text::shown(&diagnosis.subject),
                    crate::ui::text::shown(&state.host),
                    diagnosis.message
                ));
                diagnoses.push(format!("    hint: {}", diagnosis.hint));
            }
        }
        if !diagnoses.is_empty() {
            lines.push(String::new());
            lines.extend(diagnoses);
        }
        lines
    }

    /// [`lines`] on stdout, then on stderr each host's failures and why an unreachable
    /// host could not be sampled.
    pub fn print(printer: &Printer, sampled: &HostsSnapshot) -> Result<(), Error> {
        for line in lines(printer, sampled, printer.stdout_width()) {
            printer.data(&line)?;
        }
        let elsewhere: Vec<&str> = sampled
            .hosts
            .iter()
            .filter(|state| state.reachable && state.gpus == GpuSource::Unknown)
            .map(|state| state.host.as_str())
            .collect();
        if !elsewhere.is_empty() {
            printer.info(&format!(
                "GPUs not read for {}: NVML is read on this machine only, so another machine's GPUs and its containers' GPU memory are unknown here (`envctl stats` there shows them)",
                elsewhere
                    .iter()
                    .map(|host| format!("`{}`", crate::ui::text::shown(host)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for state in &sampled.hosts {
            for failure in &state.failures {
                let text = format!("{}: {}: {}", state.host, failure.subject, failure.message);
                if failure.subject == FailureSubject::Nvml
                    && failure.kind == FailureKind::LibraryNotFound
                {
                    printer.info(crate::ui::live::NO_NVML);
                    printer.detail(&text);
                } else {
                    printer.warn(&text);
                }
            }
            if !state.reachable {
                printer.warn(&crate::ui::text::host_failed(
                    &state.host,
                    &state.endpoint,
                    "sampled",
                    state.hint.as_deref(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod serve_address_tests {
    #[test]
    fn only_loopback_addresses_keep_the_dashboard_off_the_network() {
        for address in [
            "127.0.0.1:9400",
            "[::1]:9400",
            "localhost:9400",
            "127.8.0.1:1",
        ] {
            assert!(super::is_loopback_address(address), "{address}");
        }
        for address in [
            "0.0.0.0:9400",
            "[::]:9400",
            "192.168.1.5:9400",
            "gpu-1:9400",
        ] {
            assert!(!super::is_loopback_address(address), "{address}");
        }
    }
}
