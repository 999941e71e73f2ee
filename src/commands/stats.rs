//! `envctl stats`: container CPU, memory, I/O and GPU memory next to GPU utilisation,
//! memory, temperature, power and throttling — live, once, as JSON, recorded, or served
//! to Prometheus — with the diagnoses the window of samples supports.
//!
//! How it samples without costing the daemon:
//! - Engine 20.10 answers every stats request on its one-second collector tick, one-shot
//!   included: only the first request to reach an idle collector is answered at once, a
//!   second reading waits up to a second, and each reading costs dockerd and a containerd
//!   shim a round trip. So for a container whose cgroup this host can read (a local
//!   daemon), envctl reads the very files the daemon reads (`host::cgroup`): in parallel,
//!   in microseconds, at no cost to the daemon. The daemon is still asked what only it
//!   knows: which containers run, their limits and main PID (one inspect each, in
//!   parallel).
//! - `--once` reads those counters twice, [`ONCE_GAP`] apart, and computes the docker
//!   CLI's CPU % over its own two readings; containers it cannot read directly (a remote
//!   daemon, another PID namespace) get two one-shot API readings, a tick apart.
//! - The live view reads the counters every interval, keeping the previous reading for
//!   CPU %; containers it cannot read directly are followed with one stats stream each,
//!   in parallel, whose frames carry the daemon's previous reading. The container list is
//!   refreshed every [`RELIST_EVERY`]. `ENVCTL_STATS_SOURCE=api` forces the API path.
//! - NVML stays open and is read on a blocking thread every interval; each GPU process's
//!   PID is mapped to its container through `/proc/PID/cgroup` (`host::cgroup`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Context, runtime};
use crate::engine::stats::{ContainerResources, ContainerSample};
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::error::error_chain;
use crate::exit::ExitStatus;
use crate::gpu::LoadOutcome;
use crate::gpu::sample::{GpuReadings, GpuSampler, GpuUnavailable};
use crate::host::cgroup::{self, LocalContainer};
use crate::monitor::record::Recorder;
use crate::monitor::snapshot::{ContainerInput, assemble};
use crate::monitor::usage::{ContainerUsage, container_usage, cpu_limit_cores};
use crate::monitor::{Failure, Snapshot, Window, chart, prometheus, record};
use crate::spec::PROFILE_LABEL;
use crate::ui::live::{self, LiveScreen};

/// The gap between `--once`'s two CPU readings. The host's CPU time advances in 10 ms
/// ticks per CPU, so 150 ms on a 2-CPU host is 30 ticks (CPU % within about 3 % of
/// itself), while the whole snapshot stays far under the 2 s `docker stats --no-stream`
/// takes.
pub const ONCE_GAP: Duration = Duration::from_millis(150);

/// The host's `/proc`: envctl reads GPU processes' cgroups and CPU counters there.
const PROC_ROOT: &str = "/proc";

/// `ENVCTL_STATS_SOURCE=api` reads every container through the Engine API, as for a
/// remote daemon, even when its cgroup is readable here (to compare, and to test that path).
pub const SOURCE_VARIABLE: &str = "ENVCTL_STATS_SOURCE";

/// How often the live view lists containers again, to pick up new ones.
pub const RELIST_EVERY: Duration = Duration::from_secs(5);

/// Where `--serve` listens when given no address (dcgm-exporter's port).
pub const DEFAULT_SERVE_ADDRESS: &str = "127.0.0.1:9400";

/// The first wait before asking a lost daemon again; each failed try doubles it up to
/// [`RECONNECT_CAP`].
pub const RECONNECT_FIRST: Duration = Duration::from_millis(500);

/// The longest wait between two tries to reach a lost daemon.
pub const RECONNECT_CAP: Duration = Duration::from_secs(5);

/// How long the live view waits for the container list before counting the daemon lost:
/// a hung daemon must not stop the GPU readings.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest interval accepted: the daemon itself samples streams once a second, and
/// NVML's utilisation counters cover about 1/6 s to 1 s.
const MINIMUM_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  envctl stats                      live table of envctl's containers and the GPUs (q quits)\n  envctl stats --all --once --json  one snapshot of every container, as JSON\n  envctl stats train --record run.csv\n  envctl stats report run.csv -o run.html\n  envctl stats --serve              Prometheus metrics at http://127.0.0.1:9400/metrics"
)]
pub struct StatsArgs {
    #[command(subcommand)]
    pub command: Option<StatsCommand>,
    /// Profiles or containers (default: envctl's running containers)
    pub targets: Vec<String>,
    /// Every running container, not only envctl's
    #[arg(short, long, conflicts_with = "targets")]
    pub all: bool,
    /// One snapshot, then exit
    #[arg(long, conflicts_with = "serve")]
    pub once: bool,
    /// Time between samples: seconds, or with a unit (500ms, 2s, 1m)
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Stop after N samples
    #[arg(long, value_name = "N", conflicts_with = "once", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Append every sample to FILE: CSV (.csv) or JSON lines (.jsonl)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Serve Prometheus metrics at ADDR [default: 127.0.0.1:9400]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_SERVE_ADDRESS)]
    pub serve: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum StatsCommand {
    /// Draw a recording's time series: CPU, memory, GPU utilisation, GPU memory, temperature
    Report {
        /// A file written by `envctl stats --record` (.csv or .jsonl)
        file: PathBuf,
        /// Where to write the drawing: .svg, or .html with a summary and the diagnoses
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
}

/// `1`, `0.5`, `500ms`, `2s`, `1m`.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(number) = text.strip_suffix("ms") {
        (number, 0.001)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix('m') {
        (number, 60.0)
    } else {
        (text, 1.0)
    };
    let seconds = number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("`{text}` is not a duration like 1, 0.5, 500ms or 2s"))?
        * scale;
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` is not a duration like 1, 0.5, 500ms or 2s"))?;
    if duration < MINIMUM_INTERVAL {
        return Err(format!(
            "`{text}` is shorter than {} ms, faster than anything can be sampled",
            MINIMUM_INTERVAL.as_millis()
        ));
    }
    Ok(duration)
}

pub fn run(arguments: StatsArgs, context: &Context) -> Result<ExitStatus, Error> {
    if let Some(StatsCommand::Report { file, output }) = &arguments.command {
        return report(file, output, context);
    }
    let mut recorder = match &arguments.record {
        Some(path) => Some(Recorder::open(path)?),
        None => None,
    };
    runtime()?.block_on(async {
        let engine = context.engine().await?;
        let library = std::env::var_os(crate::gpu::LIBRARY_VARIABLE).map(PathBuf::from);
        let opening = tokio::task::spawn_blocking(move || GpuSampler::open(library.as_deref()));
        let selection = select_containers(&engine, context, &arguments).await?;
        let gpus = match opening.await {
            Ok(Ok(sampler)) => Gpus::Open(Arc::new(sampler)),
            Ok(Err(unavailable)) => Gpus::Unavailable(unavailable),
            Err(error) => Gpus::Unavailable(GpuUnavailable {
                library: String::new(),
                outcome: LoadOutcome::Unknown {
                    message: format!("the thread loading NVML failed: {error}"),
                },
            }),
        };
        if arguments.once {
            let mut snapshot = once(&engine, &selection, &gpus).await;
            // A container the daemon could not be asked about because the daemon went
            // away is not a partial answer: the snapshot is an error, naming the endpoint.
            let lost = snapshot.failures.iter().any(|failure| {
                failure.subject.starts_with("container ")
                    && LOST_KINDS.contains(&failure.kind.as_str())
            });
            if lost {
                engine.ping().await?;
            }
            let mut window = Window::for_interval(arguments.interval.as_secs_f64());
            window.push(&snapshot);
            snapshot.diagnoses = window.diagnose();
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
        follow(&engine, context, &arguments, selection, &gpus, recorder).await
    })
}

/// NVML opened, or why not.
enum Gpus {
    Open(Arc<GpuSampler>),
    Unavailable(GpuUnavailable),
}

impl Gpus {
    /// One reading of every GPU (on a blocking thread), or the failure that says why there
    /// are none.
    async fn read(&self) -> (Option<GpuReadings>, Option<Failure>) {
        match self {
            Gpus::Open(sampler) => {
                let sampler = Arc::clone(sampler);
                match tokio::task::spawn_blocking(move || sampler.sample()).await {
                    Ok(readings) => {
                        let failure = readings.failure.as_ref().map(|failure| Failure {
                            subject: "nvml".into(),
                            kind: kind_name(&failure.kind),
                            message: failure.message.clone(),
                        });
                        (Some(readings), failure)
                    }
                    Err(error) => (
                        None,
                        Some(Failure {
                            subject: "nvml".into(),
                            kind: "unknown".into(),
                            message: format!("the thread reading the GPUs failed: {error}"),
                        }),
                    ),
                }
            }
            Gpus::Unavailable(unavailable) => (
                None,
                Some(Failure {
                    subject: "nvml".into(),
                    kind: outcome_kind(&unavailable.outcome).into(),
                    message: unavailable
                        .outcome
                        .failure_message()
                        .unwrap_or_default()
                        .to_string(),
                }),
            ),
        }
    }
}

fn kind_name(kind: &crate::gpu::FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.as_str().map(String::from))
        .unwrap_or_else(|| format!("{kind:?}"))
}

fn outcome_kind(outcome: &LoadOutcome) -> &'static str {
    match outcome {
        LoadOutcome::Loaded(_) => "loaded",
        LoadOutcome::LibraryNotFound { .. } => "library_not_found",
        LoadOutcome::DriverNotLoaded { .. } => "driver_not_loaded",
        LoadOutcome::VersionMismatch { .. } => "version_mismatch",
        LoadOutcome::NoPermission { .. } => "no_permission",
        LoadOutcome::SymbolMissing { .. } => "symbol_missing",
        LoadOutcome::Unknown { .. } => "unknown",
    }
}

/// A container to sample.
#[derive(Debug, Clone)]
struct Target {
    id: String,
    name: String,
    profile: Option<String>,
}

/// The containers asked for, and the ones named that cannot be sampled.
struct Selection {
    targets: Vec<Target>,
    /// Full ids of named targets; none when the selection is "envctl's" or `--all`, which
    /// the live view lists again as containers come and go.
    fixed: Option<BTreeSet<String>>,
    failures: Vec<Failure>,
}

async fn select_containers(
    engine: &Engine,
    context: &Context,
    arguments: &StatsArgs,
) -> Result<Selection, Error> {
    if arguments.targets.is_empty() {
        return Ok(Selection {
            targets: list_targets(engine, !arguments.all, None).await?,
            fixed: None,
            failures: Vec::new(),
        });
    }
    let found = futures_util::future::join_all(
        arguments
            .targets
            .iter()
            .map(|target| crate::ops::target::find_container(engine, context, target)),
    )
    .await;
    let mut targets = Vec::new();
    let mut failures = Vec::new();
    for (name, details) in arguments.targets.iter().zip(found) {
        // A name that matches nothing is a usage mistake: stop, as `docker stats` does.
        let details = details?;
        if !details.running {
            failures.push(Failure {
                subject: format!("container {}", details.name),
                kind: "not-running".into(),
                message: format!("`{name}` is {}", details.status),
            });
            continue;
        }
        if targets
            .iter()
            .any(|target: &Target| target.id == details.id)
        {
            continue;
        }
        targets.push(Target {
            profile: details.labels.get(PROFILE_LABEL).cloned(),
            id: details.id,
            name: details.name,
        });
    }
    Ok(Selection {
        fixed: Some(targets.iter().map(|target| target.id.clone()).collect()),
        targets,
        failures,
    })
}

/// Running containers: envctl's (`only_envctl`) or all, or of `among` only.
async fn list_targets(
    engine: &Engine,
    only_envctl: bool,
    among: Option<&BTreeSet<String>>,
) -> Result<Vec<Target>, EngineError> {
    Ok(engine
        .list_containers(false, only_envctl)
        .await?
        .into_iter()
        .filter(|container| among.is_none_or(|ids| ids.contains(&container.id)))
        .map(|container| Target {
            profile: container.labels.get(PROFILE_LABEL).cloned(),
            id: container.id,
            name: container.name,
        })
        .collect())
}

/// `--once`: every container's inspect data (limits, GPU request, main PID) in
/// parallel; then, for the containers this host can read directly, their cgroup counters
/// twice, [`ONCE_GAP`] apart, and for the others two one-shot readings through the API;
/// the GPUs are read meanwhile.
///
/// Engine 20.10 answers every stats request on its one-second collector tick, one-shot
/// included: only the first request to reach an idle collector is answered at once, and a
/// second reading costs up to a second. Reading the cgroup files the daemon itself reads
/// costs it nothing and takes microseconds, so only containers of a remote daemon (or
/// another PID namespace) wait for its ticks.
async fn once(engine: &Engine, selection: &Selection, gpus: &Gpus) -> Snapshot {
    let targets = &selection.targets;
    let gather = async {
        let resources = futures_util::future::join_all(
            targets
                .iter()
                .map(|target| engine.container_resources(&target.id)),
        )
        .await;
        let located = locate_local(targets, &resources);
        let remote: Vec<usize> = (0..targets.len())
            .filter(|&position| located[position].is_none())
            .collect();
        let local = async {
            let proc_root = Path::new(PROC_ROOT);
            // Without it the limit of an unlimited container stays the kernel's "no
            // limit" number; the daemon answers the same then.
            let host_memory = cgroup::read_host_memory(proc_root).ok();
            let before = read_local(&located, host_memory);
            tokio::time::sleep(ONCE_GAP).await;
            let after = read_local(&located, host_memory);
            before
                .into_iter()
                .zip(after)
                .map(|pair| match pair {
                    (Some(Ok(before)), Some(Ok(after))) => {
                        Some(container_usage(&after, Some(&before.cpu)))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let (mut readings, local) =
            futures_util::future::join(daemon_usage(engine, targets, &remote), local).await;
        // A container whose files vanished (it stopped) or could not be read is left to
        // the daemon, whose answer names the cause.
        let failed: Vec<usize> = located
            .iter()
            .enumerate()
            .filter(|(position, located)| located.is_some() && local[*position].is_none())
            .map(|(position, _)| position)
            .collect();
        readings.extend(daemon_usage(engine, targets, &failed).await);
        for (position, usage) in local.into_iter().enumerate() {
            if let Some(usage) = usage {
                readings.push((position, Ok(usage)));
            }
        }
        readings.sort_by_key(|(position, _)| *position);
        (resources, readings)
    };
    let ((resources, readings), (gpu_readings, gpu_failure)) =
        futures_util::future::join(gather, gpus.read()).await;
    let mut failures = selection.failures.clone();
    failures.extend(gpu_failure);
    let mut usages: Vec<Option<ContainerUsage>> = vec![None; targets.len()];
    for (position, reading) in readings {
        match reading {
            Ok(usage) => usages[position] = Some(usage),
            Err(error) => failures.push(container_failure(&targets[position], &error)),
        }
    }
    let mut inputs = Vec::new();
    for ((target, usage), resources) in targets.iter().zip(usages).zip(resources) {
        let resources = match resources {
            Ok(resources) => resources,
            Err(error) => {
                failures.push(container_failure(target, &error));
                None
            }
        };
        inputs.push(input(target, usage, resources.as_ref()));
    }
    let known: BTreeSet<String> = targets.iter().map(|target| target.id.clone()).collect();
    let (owners, owner_failures) = process_owners(gpu_readings.as_ref(), &known);
    failures.extend(owner_failures);
    assemble(now(), inputs, gpu_readings.as_ref(), &owners, failures)
}

/// Two one-shot readings through the API for the containers at `positions`: CPU % over
/// the daemon's own two samples, a collector tick apart.
async fn daemon_usage(
    engine: &Engine,
    targets: &[Target],
    positions: &[usize],
) -> Vec<(usize, Result<ContainerUsage, EngineError>)> {
    if positions.is_empty() {
        return Vec::new();
    }
    let round = || {
        futures_util::future::join_all(
            positions
                .iter()
                .map(|&position| engine.container_stats_once(&targets[position].id)),
        )
    };
    let first = round().await;
    let second = round().await;
    positions
        .iter()
        .zip(first.into_iter().zip(second))
        .map(|(&position, (first, second))| {
            let usage = first
                .and_then(|first| second.map(|second| container_usage(&second, Some(&first.cpu))));
            (position, usage)
        })
        .collect()
}

/// The containers this host can read directly, through each one's main PID. The fast path
/// is optional: whatever cannot be found here (a remote daemon, another PID or cgroup
/// namespace, a container that just stopped) goes through the API instead, whose answer
/// names any real problem, so these lookups' errors are not kept.
fn locate_local(
    targets: &[Target],
    resources: &[Result<Option<ContainerResources>, EngineError>],
) -> Vec<Option<LocalContainer>> {
    let proc_root = Path::new(PROC_ROOT);
    let api_only = std::env::var(SOURCE_VARIABLE).is_ok_and(|source| source == "api");
    let Ok(mounts) = cgroup::read_mounts(proc_root)
        .map_err(|_| ())
        .and_then(|mounts| if api_only { Err(()) } else { Ok(mounts) })
    else {
        return vec![None; targets.len()];
    };
    targets
        .iter()
        .zip(resources)
        .map(|(target, resources)| {
            let pid = resources.as_ref().ok()?.as_ref()?.pid?;
            let pid = u32::try_from(pid).ok()?;
            cgroup::locate_container(proc_root, &mounts, &target.id, pid).ok()?
        })
        .collect()
}

/// Reads every local container's counters with one reading of the host's CPU time
/// (procfs and cgroupfs reads take microseconds, so they run on the async thread).
fn read_local(
    located: &[Option<LocalContainer>],
    host_memory: Option<u64>,
) -> Vec<Option<Result<ContainerSample, std::io::Error>>> {
    let proc_root = Path::new(PROC_ROOT);
    let system = cgroup::read_system_cpu(proc_root);
    located
        .iter()
        .map(|local| {
            let local = local.as_ref()?;
            Some(match &system {
                Ok(system) => local.read(proc_root, host_memory, *system),
                Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
            })
        })
        .collect()
}

fn input(
    target: &Target,
    usage: Option<ContainerUsage>,
    resources: Option<&ContainerResources>,
) -> ContainerInput {
    ContainerInput {
        id: target.id.clone(),
        name: target.name.clone(),
        profile: target.profile.clone(),
        cpu_limit_cores: usage.and_then(|usage| cpu_limit_cores(resources, usage.online_cpus)),
        usage,
        gpu_request: resources.and_then(|resources| resources.gpus.clone()),
    }
}

fn container_failure(target: &Target, error: &EngineError) -> Failure {
    Failure {
        subject: format!("container {}", target.name),
        kind: error.kind().into(),
        message: error_chain(error),
    }
}

/// GPU process PIDs → the full id of the container (among `known`) each belongs to.
/// A process that ended between NVML's answer and the read is simply gone; any other
/// failure to read its cgroup is reported.
fn process_owners(
    readings: Option<&GpuReadings>,
    known: &BTreeSet<String>,
) -> (BTreeMap<u32, String>, Vec<Failure>) {
    let mut owners = BTreeMap::new();
    let mut failures = Vec::new();
    let pids: BTreeSet<u32> = readings
        .iter()
        .flat_map(|readings| &readings.gpus)
        .flat_map(|gpu| gpu.processes.iter().flatten())
        .map(|process| process.pid)
        .collect();
    for pid in pids {
        match cgroup::read_process_cgroup(Path::new(PROC_ROOT), pid) {
            Ok(text) => {
                let candidates = cgroup::container_id_candidates(&text);
                if let Some(id) = cgroup::pick_container(&candidates, |id| known.contains(id)) {
                    owners.insert(pid, id);
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => failures.push(Failure {
                subject: format!("pid {pid}"),
                kind: "cgroup-unreadable".into(),
                message: format!("cannot read /proc/{pid}/cgroup: {error}"),
            }),
        }
    }
    (owners, failures)
}

fn now() -> f64 {
    crate::time::unix_seconds_now()
}

/// The latest a container's stream said.
#[derive(Default)]
struct Latest {
    sample: Option<ContainerSample>,
    failure: Option<Failure>,
    /// The stream ended: the container stopped, or the connection failed.
    ended: bool,
}

type Shared = Arc<Mutex<HashMap<String, Latest>>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, HashMap<String, Latest>> {
    // A panicking stream task cannot leave the map half-written (every write is one
    // assignment), so a poisoned lock is still good.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a followed container's numbers come from.
enum Source {
    /// Its cgroup files, read every interval; the previous reading gives CPU %.
    Local {
        container: LocalContainer,
        previous: Option<Box<ContainerSample>>,
    },
    /// The daemon's stats stream (a remote daemon, another PID namespace).
    Stream(tokio::task::JoinHandle<()>),
}

/// A followed container.
struct Followed {
    target: Target,
    resources: Option<ContainerResources>,
    source: Source,
}

impl Followed {
    fn stop(&self) {
        if let Source::Stream(task) = &self.source {
            task.abort();
        }
    }
}

fn start_stream(engine: &Engine, target: &Target, shared: &Shared) -> tokio::task::JoinHandle<()> {
    lock(shared).insert(target.id.clone(), Latest::default());
    let engine = engine.clone();
    let shared = Arc::clone(shared);
    let target = target.clone();
    tokio::spawn(async move {
        engine
            .follow_container_stats(&target.id, |frame| {
                let mut map = lock(&shared);
                let Some(latest) = map.get_mut(&target.id) else {
                    return false;
                };
                match frame {
                    Ok(sample) => {
                        latest.sample = Some(sample);
                        latest.failure = None;
                    }
                    Err(error) => latest.failure = Some(container_failure(&target, &error)),
                }
                true
            })
            .await;
        if let Some(latest) = lock(&shared).get_mut(&target.id) {
            latest.ended = true;
        }
    })
}

/// What the live loop keeps between intervals.
struct Following<'a> {
    engine: &'a Engine,
    shared: Shared,
    followed: BTreeMap<String, Followed>,
    /// The host's memory: the limit the daemon reports for unlimited containers.
    host_memory: Option<u64>,
}

impl Following<'_> {
    /// Follows the containers in `current` that are not followed yet (or whose stream
    /// ended), and stops following the others. New ones are inspected in parallel; those
    /// this host can read directly are read from their cgroup, the rest streamed.
    async fn refresh(&mut self, current: Vec<Target>) -> Vec<Failure> {
        let wanted: BTreeSet<String> = current.iter().map(|target| target.id.clone()).collect();
        let gone: Vec<String> = self
            .followed
            .keys()
            .filter(|id| !wanted.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            if let Some(entry) = self.followed.remove(&id) {
                entry.stop();
            }
            lock(&self.shared).remove(&id);
        }
        let fresh: Vec<Target> = current
            .into_iter()
            .filter(|target| {
                let ended = lock(&self.shared)
                    .get(&target.id)
                    .is_some_and(|latest| latest.ended);
                ended || !self.followed.contains_key(&target.id)
            })
            .collect();
        let resources = futures_util::future::join_all(
            fresh
                .iter()
                .map(|target| self.engine.container_resources(&target.id)),
        )
        .await;
        let located = locate_local(&fresh, &resources);
        let proc_root = Path::new(PROC_ROOT);
        let system = cgroup::read_system_cpu(proc_root);
        let mut failures = Vec::new();
        for ((target, resources), local) in fresh.into_iter().zip(resources).zip(located) {
            if let Some(entry) = self.followed.remove(&target.id) {
                entry.stop();
            }
            let resources = match resources {
                Ok(resources) => resources,
                Err(error) => {
                    failures.push(container_failure(&target, &error));
                    None
                }
            };
            let source = match (local, &system) {
                (Some(container), Ok(system)) => {
                    // A first reading now, so the first interval already shows CPU %.
                    let previous = container
                        .read(proc_root, self.host_memory, *system)
                        .ok()
                        .map(Box::new);
                    Source::Local {
                        container,
                        previous,
                    }
                }
                _ => Source::Stream(start_stream(self.engine, &target, &self.shared)),
            };
            self.followed.insert(
                target.id.clone(),
                Followed {
                    target,
                    resources,
                    source,
                },
            );
        }
        failures
    }

    /// Every followed container's usage now, and the failures to show.
    fn read(&mut self) -> (Vec<ContainerInput>, Vec<Failure>) {
        let proc_root = Path::new(PROC_ROOT);
        let system = cgroup::read_system_cpu(proc_root);
        let mut inputs = Vec::new();
        let mut failures = Vec::new();
        let mut stopped = Vec::new();
        let map = lock(&self.shared);
        for (id, entry) in &mut self.followed {
            let usage = match &mut entry.source {
                Source::Local {
                    container,
                    previous,
                } => {
                    let sample = system.as_ref().map_err(|error| {
                        std::io::Error::new(
                            error.kind(),
                            format!("cannot read /proc/stat: {error}"),
                        )
                    });
                    match sample
                        .and_then(|system| container.read(proc_root, self.host_memory, *system))
                    {
                        Ok(sample) => {
                            let usage = container_usage(
                                &sample,
                                previous.as_ref().map(|previous| &previous.cpu),
                            );
                            *previous = Some(Box::new(sample));
                            Some(usage)
                        }
                        // The container stopped: its cgroup is gone. The next listing
                        // drops it; until then it is left out.
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                            stopped.push(id.clone());
                            continue;
                        }
                        Err(error) => {
                            failures.push(Failure {
                                subject: format!("container {}", entry.target.name),
                                kind: "cgroup-unreadable".into(),
                                message: error.to_string(),
                            });
                            None
                        }
                    }
                }
                Source::Stream(_) => {
                    let Some(latest) = map.get(id) else { continue };
                    failures.extend(latest.failure.clone());
                    if latest.sample.is_none() && latest.ended {
                        continue;
                    }
                    // A stream that failed or ended (the daemon went away) has no current
                    // numbers: unknown, not its last frame shown as if it were now. The
                    // next listing starts a new stream.
                    if latest.failure.is_some() || latest.ended {
                        None
                    } else {
                        latest
                            .sample
                            .as_ref()
                            .map(|sample| container_usage(sample, None))
                    }
                }
            };
            inputs.push(input(&entry.target, usage, entry.resources.as_ref()));
        }
        drop(map);
        for id in stopped {
            self.followed.remove(&id);
        }
        inputs.sort_by(|first, second| first.name.cmp(&second.name));
        (inputs, failures)
    }

    fn stop(&self) {
        for entry in self.followed.values() {
            entry.stop();
        }
    }
}

/// What each interval's snapshot goes to.
enum View {
    Live(LiveScreen),
    Lines,
    JsonLines,
    Quiet,
}

/// The failure kinds that say the daemon itself is gone (not that it answered "no").
const LOST_KINDS: [&str; 4] = ["socket-missing", "connection-refused", "timeout", "other"];

/// Whether `error` says the daemon cannot be reached, rather than that it answered.
fn daemon_is_lost(error: &EngineError) -> bool {
    LOST_KINDS.contains(&error.kind())
}

fn daemon_failure(error: &EngineError) -> Failure {
    Failure {
        subject: "daemon".into(),
        kind: error.kind().into(),
        message: error_chain(error),
    }
}

/// A daemon the live view lost: pinged in the background, [`RECONNECT_FIRST`] after the
/// loss and then at doubling intervals up to [`RECONNECT_CAP`], while the GPUs and the
/// cgroup files go on being read.
struct LostDaemon {
    failure: Failure,
    delay: Duration,
    next_try: Instant,
    probe: Option<tokio::task::JoinHandle<Result<(), EngineError>>>,
}

impl LostDaemon {
    fn new(error: &EngineError) -> LostDaemon {
        LostDaemon {
            failure: LostDaemon::failure(error),
            delay: RECONNECT_FIRST,
            next_try: Instant::now() + RECONNECT_FIRST,
            probe: None,
        }
    }

    /// The line the live view and each snapshot carry while the daemon is away: the cause
    /// in envctl's words (the endpoint included, without the HTTP client's layers, which
    /// would push it off a terminal line) and that envctl keeps trying.
    fn failure(error: &EngineError) -> Failure {
        Failure {
            subject: "daemon".into(),
            kind: error.kind().into(),
            message: format!(
                "lost: {error}; reconnecting every {} ms to {} s",
                RECONNECT_FIRST.as_millis(),
                RECONNECT_CAP.as_secs()
            ),
        }
    }

    /// `true` once a ping got an answer; otherwise starts the next ping when it is due.
    /// Never waits for the daemon.
    async fn answered(&mut self, engine: &Engine) -> bool {
        if self
            .probe
            .as_ref()
            .is_some_and(tokio::task::JoinHandle::is_finished)
            && let Some(probe) = self.probe.take()
        {
            match probe.await {
                Ok(Ok(())) => return true,
                Ok(Err(error)) => self.failure = LostDaemon::failure(&error),
                Err(_) => {}
            }
            self.delay = (self.delay * 2).min(RECONNECT_CAP);
            self.next_try = Instant::now() + self.delay;
        }
        if self.probe.is_none() && Instant::now() >= self.next_try {
            let engine = engine.clone();
            self.probe = Some(tokio::spawn(async move { engine.ping().await }));
        }
        false
    }
}

impl Drop for LostDaemon {
    fn drop(&mut self) {
        if let Some(probe) = &self.probe {
            probe.abort();
        }
    }
}

/// The live view, JSON lines or plain snapshots, until `q`, Ctrl-C, SIGTERM or `--count`.
async fn follow(
    engine: &Engine,
    context: &Context,
    arguments: &StatsArgs,
    selection: Selection,
    gpus: &Gpus,
    mut recorder: Option<Recorder>,
) -> Result<ExitStatus, Error> {
    // Before the terminal changes: a signal from here on ends the loop, which restores it.
    let mut interrupt = listen(tokio::signal::unix::SignalKind::interrupt());
    let mut terminate = listen(tokio::signal::unix::SignalKind::terminate());
    let server = match &arguments.serve {
        Some(address) => Some(MetricsServer::start(address)?),
        None => None,
    };
    if let Some(server) = &server {
        context.printer.info(&format!(
            "serving Prometheus metrics at http://{}/metrics",
            server.address
        ));
    }
    let mut view = if context.json {
        View::JsonLines
    } else if crate::ui::terminal::stdout_is_terminal() {
        View::Live(LiveScreen::enter().map_err(Error::Output)?)
    } else if server.is_some() {
        View::Quiet
    } else {
        View::Lines
    };
    let mut quit = match &view {
        View::Live(screen) if screen.reads_keys() => Some(live::spawn_quit_reader()),
        _ => None,
    };
    if let View::Live(screen) = &mut view {
        let header = live_header(0, selection.targets.len(), arguments.interval);
        screen
            .draw(&header, &["waiting for the first samples…".to_string()])
            .map_err(Error::Output)?;
    }
    let mut following = Following {
        engine,
        shared: Arc::new(Mutex::new(HashMap::new())),
        followed: BTreeMap::new(),
        host_memory: cgroup::read_host_memory(Path::new(PROC_ROOT)).ok(),
    };
    let mut standing_failures = selection.failures;
    standing_failures.extend(following.refresh(selection.targets).await);
    let fixed = selection.fixed;
    let mut window = Window::for_interval(arguments.interval.as_secs_f64());
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + arguments.interval,
        arguments.interval,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_listing = Instant::now();
    let mut lost: Option<LostDaemon> = None;
    let mut taken = 0_u64;
    let hostname = hostname();
    let outcome = loop {
        tokio::select! {
            _ = ticker.tick() => {}
            // Like any command a signal ends: 130 and 143, as a shell reports them.
            _ = wait(&mut interrupt) => break Ok(ExitStatus::External(130)),
            _ = wait(&mut terminate) => break Ok(ExitStatus::External(143)),
            _ = wait_quit(&mut quit) => break Ok(ExitStatus::Success),
        }
        let mut failures = standing_failures.clone();
        let mut relist = last_listing.elapsed() >= RELIST_EVERY;
        if let Some(daemon) = &mut lost {
            if daemon.answered(engine).await {
                lost = None;
                // The live screen shows the daemon's state in its failure lines; stderr
                // would tear it.
                let on_screen = matches!(view, View::Live(_));
                if !on_screen {
                    context.printer.info(&format!(
                        "the Docker daemon at `{}` answers again; following its containers",
                        engine.endpoint()
                    ));
                }
                relist = true;
            } else {
                failures.push(daemon.failure.clone());
                relist = false;
            }
        }
        if relist {
            last_listing = Instant::now();
            let listed = tokio::time::timeout(
                LIST_TIMEOUT,
                // Named targets are kept whoever made them; only the default selection
                // is limited to envctl's containers.
                list_targets(engine, !arguments.all && fixed.is_none(), fixed.as_ref()),
            )
            .await
            .unwrap_or_else(|_| {
                Err(EngineError::Timeout {
                    endpoint: engine.endpoint().to_string(),
                    seconds: LIST_TIMEOUT.as_secs(),
                })
            });
            match listed {
                Ok(current) => failures.extend(following.refresh(current).await),
                Err(error) if daemon_is_lost(&error) => {
                    if !matches!(view, View::Live(_)) {
                        context.printer.warn(&format!(
                        "lost the Docker daemon at `{}`: {}; GPU readings go on, reconnecting every {} ms to {} s",
                        engine.endpoint(),
                        error_chain(&error),
                        RECONNECT_FIRST.as_millis(),
                        RECONNECT_CAP.as_secs()
                    ));
                    }
                    let daemon = LostDaemon::new(&error);
                    failures.push(daemon.failure.clone());
                    lost = Some(daemon);
                }
                Err(error) => failures.push(daemon_failure(&error)),
            }
        }
        let ((inputs, read_failures), (readings, gpu_failure)) =
            (following.read(), gpus.read().await);
        failures.extend(read_failures);
        failures.extend(gpu_failure);
        let known: BTreeSet<String> = following.followed.keys().cloned().collect();
        let (owners, owner_failures) = process_owners(readings.as_ref(), &known);
        failures.extend(owner_failures);
        let mut snapshot = assemble(now(), inputs, readings.as_ref(), &owners, failures);
        window.push(&snapshot);
        snapshot.diagnoses = window.diagnose();
        taken += 1;
        if let Some(recorder) = &mut recorder
            && let Err(error) = recorder.append(&snapshot)
        {
            break Err(error.into());
        }
        if let Some(server) = &server {
            server.publish(prometheus::exposition(&snapshot, &hostname));
        }
        let shown = match &mut view {
            View::Live(screen) => {
                let style =
                    |style: console::Style, text: &str| context.printer.style_stdout(style, text);
                let columns = live::screen_width();
                let mut lines = live::snapshot_lines(&snapshot, Some(columns), &style);
                let failures = live::failure_lines(&snapshot, Some(columns), &style);
                if !failures.is_empty() {
                    lines.push(String::new());
                    lines.extend(failures);
                }
                screen
                    .draw(
                        &live_header(taken, snapshot.containers.len(), arguments.interval),
                        &lines,
                    )
                    .map_err(Error::Output)
            }
            View::Lines => live::print_snapshot(&context.printer, &snapshot)
                .and_then(|()| context.printer.data("")),
            View::JsonLines => context
                .printer
                .data(record::json_line(&snapshot).trim_end()),
            View::Quiet => Ok(()),
        };
        if let Err(error) = shown {
            break Err(error);
        }
        if arguments.count.is_some_and(|count| taken >= count) {
            break Ok(ExitStatus::Success);
        }
    };
    following.stop();
    drop(lost);
    // The screen goes before anything is printed, so messages land on the real terminal.
    drop(view);
    if let Some(server) = server {
        server.stop();
    }
    if matches!(outcome, Err(ref error) if error.is_broken_pipe()) {
        return Ok(ExitStatus::Success);
    }
    outcome
}

fn live_header(taken: u64, containers: usize, interval: Duration) -> String {
    format!(
        "envctl stats · {containers} container{} · every {} · {} UTC · sample {taken} · q quits",
        if containers == 1 { "" } else { "s" },
        humanize(interval),
        crate::time::time_of_day_utc_now()
    )
}

fn humanize(interval: Duration) -> String {
    if interval.subsec_millis() == 0 {
        format!("{} s", interval.as_secs())
    } else {
        format!("{} ms", interval.as_millis())
    }
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

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// `--serve`: the latest exposition on `/metrics`, answered from a thread of its own.
struct MetricsServer {
    server: Arc<tiny_http::Server>,
    latest: Arc<Mutex<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
    address: String,
}

impl MetricsServer {
    fn start(address: &str) -> Result<MetricsServer, Error> {
        let server = tiny_http::Server::http(address).map_err(|source| Error::Serve {
            address: address.to_string(),
            source,
        })?;
        let bound = server
            .server_addr()
            .to_ip()
            .map_or_else(|| address.to_string(), |socket| socket.to_string());
        let server = Arc::new(server);
        let latest = Arc::new(Mutex::new(String::new()));
        let thread = {
            let server = Arc::clone(&server);
            let latest = Arc::clone(&latest);
            std::thread::Builder::new()
                .name("envctl-metrics".into())
                .spawn(move || serve(&server, &latest))
                .map_err(Error::Output)?
        };
        Ok(MetricsServer {
            server,
            latest,
            thread: Some(thread),
            address: bound,
        })
    }

    fn publish(&self, text: String) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = text;
    }

    fn stop(mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(server: &tiny_http::Server, latest: &Mutex<String>) {
    // Constant ASCII headers always parse; the early return only keeps this total.
    let (Ok(exposition), Ok(text)) = (
        tiny_http::Header::from_bytes(
            &b"Content-Type"[..],
            &b"text/plain; version=0.0.4; charset=utf-8"[..],
        ),
        tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"text/plain; charset=utf-8"[..]),
    ) else {
        return;
    };
    for request in server.incoming_requests() {
        let path = request
            .url()
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string();
        let response = match path.as_str() {
            "/metrics" => {
                let body = latest
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                tiny_http::Response::from_string(body).with_header(exposition.clone())
            }
            "/" => {
                tiny_http::Response::from_string("envctl stats: Prometheus metrics at /metrics\n")
                    .with_header(text.clone())
            }
            _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
        };
        // A scraper that hung up is its own problem; the next scrape gets an answer.
        let _ = request.respond(response);
    }
}

/// `stats report FILE -o OUT`.
fn report(file: &Path, output: &Path, context: &Context) -> Result<ExitStatus, Error> {
    let recording = record::read_recording(file)?;
    for (line, why) in &recording.skipped {
        context
            .printer
            .warn(&format!("{}:{line}: skipped: {why}", file.display()));
    }
    let extension = output
        .extension()
        .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
    let drawn = match extension.as_deref() {
        Some("svg") => chart::svg(&recording.snapshots),
        Some("html" | "htm") => chart::html(&recording.snapshots, &file.display().to_string()),
        _ => {
            return Err(Error::Usage {
                message: format!("`{}` is neither .svg nor .html", output.display()),
                hint: Some("name the output `….svg` or `….html`".into()),
            });
        }
    }?;
    std::fs::write(output, drawn).map_err(|source| Error::Write {
        path: output.display().to_string(),
        source,
    })?;
    context.printer.info(&format!(
        "wrote {} ({} samples from {})",
        output.display(),
        recording.snapshots.len(),
        file.display()
    ));
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_take_seconds_or_units() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_interval("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_interval("10ms").unwrap_err().contains("shorter"));
        assert!(parse_interval("fast").is_err());
        assert!(parse_interval("-1").is_err());
    }

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
            error_chain(&error),
            "cannot open the recording `/x/run.csv`: permission denied"
        );
    }

    #[test]
    fn gpu_requests_are_kept_for_the_rules() {
        use crate::engine::stats::GpuAssignment;
        let target = Target {
            id: "a".into(),
            name: "b".into(),
            profile: None,
        };
        let resources = ContainerResources {
            gpus: Some(GpuAssignment::All),
            nano_cpus: Some(2_000_000_000),
            ..ContainerResources::default()
        };
        let usage = crate::monitor::usage::ContainerUsage {
            online_cpus: Some(8),
            ..Default::default()
        };
        let built = input(&target, Some(usage), Some(&resources));
        assert_eq!(built.gpu_request, Some(GpuAssignment::All));
        assert_eq!(built.cpu_limit_cores, Some(2.0));
    }
}
