//! One snapshot from the sources: the Engine API (which containers run, their limits
//! and main PID, their stats where nothing better is at hand), the cgroup files this host
//! can read directly (`host::cgroup`), and NVML (`gpu::sample`), put together by
//! [`assemble`]. Also the `--once` snapshot itself, and the GPU-process → container map.
//!
//! Engine 20.10 answers every stats request on its one-second collector tick, one-shot
//! included: only the first request to reach an idle collector is answered at once, a
//! second reading waits up to a second, and each reading costs dockerd and a containerd
//! shim a round trip. So for a container whose cgroup this host can read (a local
//! daemon), envctl reads the very files the daemon reads: in parallel, in microseconds,
//! at no cost to the daemon.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::context::Clock;

use crate::container_plan::PROFILE_LABEL;
use crate::engine::{Engine, EngineError};
use crate::error::error_chain;
use crate::facts::container::{ContainerDetails, ContainerResources, ContainerSample};
use crate::facts::gpu::LoadOutcome;
use crate::facts::gpu_sample::{GpuReadings, GpuUnavailable};
use crate::gpu::sample::GpuSampler;
use crate::host::cgroup::{self, LocalContainer};
use crate::monitor::Window;
use crate::monitor::failure::{Failure, FailureKind, FailureSubject};
use crate::monitor::snapshot::{ContainerInput, Snapshot, assemble};
use crate::monitor::usage::{ContainerUsage, container_usage, cpu_limit_cores};

/// The gap between `--once`'s two CPU readings. The host's CPU time advances in 10 ms
/// ticks per CPU, so 150 ms on a 2-CPU host is 30 ticks (CPU % within about 3 % of
/// itself), while the whole snapshot stays far under the 2 s `docker stats --no-stream`
/// takes.
pub const ONCE_GAP: Duration = Duration::from_millis(150);

/// The host's `/proc`: envctl reads GPU processes' cgroups and CPU counters there.
pub(super) const PROC_ROOT: &str = "/proc";

/// Where containers' counters are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterSource {
    /// The cgroup files for every container this host can read directly, the Engine API
    /// for the others.
    Nearest,
    /// The Engine API for every container, as for a remote daemon, even when its cgroup
    /// is readable here (to compare, and to test that path).
    ApiOnly,
}

/// NVML opened, or why not; or not this machine's to read.
pub enum Gpus {
    /// NVML, and the Xids that mark a GPU failed on this host (the policy's, read once
    /// when `stats` starts: `ops::placement::fatal_xids_in_force`).
    Open(Arc<GpuSampler>, Arc<[u32]>),
    Unavailable(GpuUnavailable),
    /// The daemon is on another machine (`stats --hosts`): its GPUs are not in this
    /// machine's NVML, so none are read and its containers' GPU memory stays unknown,
    /// never this machine's.
    Elsewhere,
}

impl Gpus {
    /// Starts opening NVML from `library` (else the driver's) on a blocking thread at
    /// once, so that the caller can list containers meanwhile; the future gives the result.
    ///
    /// `health`: the GPU placement lock of this host, beside which each Xid the watcher
    /// sees is recorded for every `up` (`host::gpu_health`, issue 43), and the clock that
    /// dates them. `fatal_xids`: the Xids that mark a GPU failed, as placement judges them
    /// (`ops::placement::fatal_xids_in_force`), so the view and the metrics agree with `up`.
    pub fn open(
        library: Option<PathBuf>,
        health: Option<(PathBuf, crate::context::Clock)>,
        fatal_xids: Vec<u32>,
    ) -> impl Future<Output = Gpus> {
        let recorder = health.map(|(lock, clock)| xid_recorder(lock, clock));
        let opening =
            tokio::task::spawn_blocking(move || GpuSampler::open(library.as_deref(), recorder));
        async move {
            match opening.await {
                Ok(Ok(sampler)) => Gpus::Open(Arc::new(sampler), fatal_xids.into()),
                Ok(Err(unavailable)) => Gpus::Unavailable(unavailable),
                Err(error) => Gpus::Unavailable(GpuUnavailable {
                    library: String::new(),
                    outcome: LoadOutcome::Unknown {
                        message: format!("the thread loading NVML failed: {error}"),
                    },
                }),
            }
        }
    }

    /// The Xids that mark a GPU failed in its readings. None where no GPU is read here
    /// (NVML unavailable, another machine's daemon): there is then nothing to judge.
    pub fn fatal_xids(&self) -> &[u32] {
        match self {
            Gpus::Open(_, fatal_xids) => fatal_xids,
            Gpus::Unavailable(_) | Gpus::Elsewhere => &[],
        }
    }

    /// One reading of every GPU (on a blocking thread), or the failure that says why there
    /// are none.
    pub async fn read(&self) -> (Option<GpuReadings>, Option<Failure>) {
        match self {
            Gpus::Open(sampler, _) => {
                let sampler = Arc::clone(sampler);
                match tokio::task::spawn_blocking(move || sampler.sample()).await {
                    Ok(readings) => {
                        let failure = readings.failure.as_ref().map(|failure| Failure {
                            subject: FailureSubject::Nvml,
                            kind: failure.kind,
                            message: failure.message.clone(),
                        });
                        (Some(readings), failure)
                    }
                    Err(error) => (
                        None,
                        Some(Failure {
                            subject: FailureSubject::Nvml,
                            kind: FailureKind::Unknown,
                            message: format!("the thread reading the GPUs failed: {error}"),
                        }),
                    ),
                }
            }
            Gpus::Unavailable(unavailable) => (None, Some(unavailable_failure(unavailable))),
            Gpus::Elsewhere => (None, None),
        }
    }
}

/// Records each Xid beside the placement lock `lock`, as of this boot (read once; a
/// boot that cannot be told records nothing, and says why at each Xid).
fn xid_recorder(lock: PathBuf, clock: crate::context::Clock) -> crate::gpu::sample::XidRecorder {
    use crate::host::gpu_health;
    let boot = gpu_health::boot_id().map_err(|error| crate::error::error_chain(&error));
    Box::new(move |uuid: &str, index: u32, xid: u32| {
        let boot = boot.as_ref().map_err(Clone::clone)?;
        gpu_health::update(&lock, boot, |record| {
            record.add_xid(uuid, index, xid, gpu_health::milliseconds(clock.now()));
        })
        .map_err(|error| crate::error::error_chain(&error))
    })
}

/// Why there are no GPU readings. `GpuSampler::open` fails only with a failed load; a
/// "loaded" outcome here would be a contradiction, named as such rather than guessed.
fn unavailable_failure(unavailable: &GpuUnavailable) -> Failure {
    match (
        FailureKind::of_load(&unavailable.outcome),
        unavailable.outcome.failure_message(),
    ) {
        (Some(kind), Some(message)) => Failure {
            subject: FailureSubject::Nvml,
            kind,
            message: message.to_string(),
        },
        _ => Failure {
            subject: FailureSubject::Nvml,
            kind: FailureKind::Unknown,
            message: format!(
                "NVML from `{}` loaded, yet no sampler was made",
                unavailable.library
            ),
        },
    }
}

/// A container to sample.
#[derive(Debug, Clone)]
pub struct Target {
    pub id: String,
    pub name: String,
    pub profile: Option<String>,
}

/// The containers asked for, and the ones named that cannot be sampled.
pub struct Selection {
    pub targets: Vec<Target>,
    /// Full ids of named targets; none when the selection is "envctl's" or `--all`, which
    /// the live view lists again as containers come and go.
    pub fixed: Option<BTreeSet<String>>,
    pub failures: Vec<Failure>,
}

impl Selection {
    /// The containers named on the command line, as the daemon described them (`name`
    /// as typed, each found): the running ones once each, a failure for each other one.
    pub fn named<'a>(found: impl IntoIterator<Item = (&'a str, ContainerDetails)>) -> Selection {
        let mut targets: Vec<Target> = Vec::new();
        let mut failures = Vec::new();
        for (name, details) in found {
            if !details.running {
                let message = match ended_by(&details) {
                    Some(why) => format!("`{name}` is {}: {why}", details.status),
                    None => format!("`{name}` is {}", details.status),
                };
                failures.push(Failure {
                    subject: FailureSubject::Container(details.name),
                    kind: FailureKind::NotRunning,
                    message,
                });
                continue;
            }
            if targets.iter().any(|target| target.id == details.id) {
                continue;
            }
            targets.push(Target {
                profile: details.labels.get(PROFILE_LABEL).cloned(),
                id: details.id,
                name: details.name,
            });
        }
        Selection {
            fixed: Some(targets.iter().map(|target| target.id.clone()).collect()),
            targets,
            failures,
        }
    }
}

/// Why a stopped container ended, when the OOM killer did it.
fn ended_by(details: &ContainerDetails) -> Option<String> {
    (details.oom_killed == Some(true))
        .then(|| crate::monitor::snapshot::EndedContainer::oom_sentence(details.exit_code))
}

/// What became of a followed container that stopped, as its inspect says; none while it
/// runs or when it is gone (removed with `--rm`, say).
pub fn ended(
    details: &ContainerDetails,
    profile: Option<String>,
    time: f64,
) -> Option<crate::monitor::snapshot::EndedContainer> {
    (!details.running).then(|| crate::monitor::snapshot::EndedContainer {
        id: details.id.clone(),
        name: details.name.clone(),
        profile,
        time,
        status: details.status.clone(),
        exit_code: details.exit_code,
        oom_killed: details.oom_killed,
    })
}

/// Running containers: envctl's (`only_envctl`) or all, or of `among` only; with `owner`,
/// envctl's of that user only (`container_plan::ownership`).
pub async fn list_targets(
    engine: &Engine,
    only_envctl: bool,
    among: Option<&BTreeSet<String>>,
    owner: Option<&crate::facts::user::User>,
) -> Result<Vec<Target>, EngineError> {
    Ok(engine
        .list_containers(false, only_envctl)
        .await?
        .into_iter()
        .filter(|container| among.is_none_or(|ids| ids.contains(&container.id)))
        .filter(|container| {
            // Not another user's: the user's own, or one that names no owner.
            owner.is_none_or(|owner| {
                matches!(
                    crate::container_plan::ownership::belonging(&container.labels, owner),
                    crate::container_plan::ownership::Belonging::Mine
                        | crate::container_plan::ownership::Belonging::Unowned
                )
            })
        })
        .map(|container| Target {
            profile: container.labels.get(PROFILE_LABEL).cloned(),
            id: container.id,
            name: container.name,
        })
        .collect())
}

/// `--once`'s snapshot with the diagnoses one sample supports, for a window of samples
/// `interval` apart. A container the daemon could not be asked about because the daemon
/// went away is not a partial answer: then the snapshot is the daemon's error, naming
/// the endpoint.
pub async fn snapshot_once(
    engine: &Engine,
    selection: &Selection,
    gpus: &Gpus,
    source: CounterSource,
    interval: Duration,
    clock: Clock,
) -> Result<Snapshot, EngineError> {
    let mut snapshot = once(engine, selection, gpus, source, clock).await;
    let lost = snapshot.failures.iter().any(|failure| {
        matches!(failure.subject, FailureSubject::Container(_)) && failure.kind.means_daemon_lost()
    });
    if lost {
        engine.ping().await?;
    }
    let mut window = Window::for_interval(interval.as_secs_f64());
    window.push(&snapshot);
    snapshot.diagnoses = window.diagnose();
    Ok(snapshot)
}

/// `--once`: every container's inspect data (limits, GPU request, main PID) in
/// parallel; then, for the containers this host can read directly, their cgroup counters
/// twice, [`ONCE_GAP`] apart, and for the others two one-shot readings through the API;
/// the GPUs are read meanwhile.
///
/// Only containers of a remote daemon (or another PID namespace) wait for the daemon's
/// collector ticks.
async fn once(
    engine: &Engine,
    selection: &Selection,
    gpus: &Gpus,
    source: CounterSource,
    clock: Clock,
) -> Snapshot {
    let targets = &selection.targets;
    let gather = async {
        let resources = crate::engine::each_bounded(
            targets
                .iter()
                .map(|target| engine.container_resources(&target.id)),
        )
        .await;
        let located = locate_local(targets, &resources, source);
        let remote: Vec<usize> = (0..targets.len())
            .filter(|&position| located[position].is_none())
            .collect();
        let local = read_local_twice(&located);
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
    let inputs = inputs_of(targets, readings, resources, &mut failures);
    let known: BTreeSet<String> = targets.iter().map(|target| target.id.clone()).collect();
    let (owners, owner_failures) = process_owners(gpu_readings.as_ref(), &known);
    failures.extend(owner_failures);
    assemble(
        now(clock),
        inputs,
        gpu_readings.as_ref(),
        &owners,
        failures,
        gpus.fatal_xids(),
    )
}

/// The usage of the containers this host reads directly (`located`), from two readings
/// of their counters [`ONCE_GAP`] apart; `None` where either reading failed.
async fn read_local_twice(located: &[Option<LocalContainer>]) -> Vec<Option<ContainerUsage>> {
    let proc_root = Path::new(PROC_ROOT);
    // Without it the limit of an unlimited container stays the kernel's "no
    // limit" number; the daemon answers the same then.
    let host_memory = cgroup::read_host_memory(proc_root).ok();
    let before = read_local(located, host_memory);
    tokio::time::sleep(ONCE_GAP).await;
    let after = read_local(located, host_memory);
    before
        .into_iter()
        .zip(after)
        .map(|pair| match pair {
            (Some(Ok(before)), Some(Ok(after))) => Some(container_usage(&after, Some(&before.cpu))),
            _ => None,
        })
        .collect()
}

/// Each target's input to the snapshot, from its usage reading (by position) and its
/// inspect data; what could not be read goes to `failures`, usages first.
fn inputs_of(
    targets: &[Target],
    readings: Vec<(usize, Result<ContainerUsage, EngineError>)>,
    resources: Vec<Result<Option<ContainerResources>, EngineError>>,
    failures: &mut Vec<Failure>,
) -> Vec<ContainerInput> {
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
    inputs
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
        crate::engine::each_bounded(
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
pub(super) fn locate_local(
    targets: &[Target],
    resources: &[Result<Option<ContainerResources>, EngineError>],
    source: CounterSource,
) -> Vec<Option<LocalContainer>> {
    let proc_root = Path::new(PROC_ROOT);
    let api_only = source == CounterSource::ApiOnly;
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

/// The assembler's input for one container.
pub(super) fn input(
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
        // Issue 43: a container given GPUs whose device rules lost NVIDIA's nodes.
        gpu_nodes_denied: resources
            .filter(|resources| resources.gpus.is_some())
            .and_then(|resources| u32::try_from(resources.pid?).ok())
            .and_then(|pid| {
                crate::host::gpu_health::gpu_nodes_denied(Path::new(PROC_ROOT), &target.id, pid)
            }),
    }
}

/// The daemon's answer about one container, as a failure of that container.
pub(super) fn container_failure(target: &Target, error: &EngineError) -> Failure {
    Failure {
        subject: FailureSubject::Container(target.name.clone()),
        kind: super::failure_kind(error),
        message: error_chain(error),
    }
}

/// GPU process PIDs → the full id of the container (among `known`) each belongs to.
/// A process that ended between NVML's answer and the read is simply gone; any other
/// failure to read its cgroup is reported.
pub(super) fn process_owners(
    readings: Option<&GpuReadings>,
    known: &BTreeSet<String>,
) -> (BTreeMap<u32, String>, Vec<Failure>) {
    let pids: BTreeSet<u32> = readings
        .iter()
        .flat_map(|readings| &readings.gpus)
        .flat_map(|gpu| gpu.processes.iter().flatten())
        .map(|process| process.pid)
        .collect();
    let (owners, unread) =
        cgroup::process_containers(Path::new(PROC_ROOT), pids, |id| known.contains(id));
    let failures = unread
        .into_iter()
        .map(|(pid, error)| Failure {
            subject: FailureSubject::Process(pid),
            kind: FailureKind::CgroupUnreadable,
            message: format!("cannot read /proc/{pid}/cgroup: {error}"),
        })
        .collect();
    (owners, failures)
}

/// Seconds since the Unix epoch by `clock` (the context's), with their fraction: the
/// `time` of a snapshot.
pub fn now(clock: Clock) -> f64 {
    crate::time::unix_seconds(clock.now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_requests_are_kept_for_the_rules() {
        use crate::facts::container::GpuAssignment;
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

    #[test]
    fn named_targets_run_once_each_and_the_stopped_ones_are_failures() {
        let details = |id: &str, name: &str, running: bool| ContainerDetails {
            id: id.into(),
            name: name.into(),
            image: "busybox".into(),
            running,
            status: if running { "running" } else { "exited" }.into(),
            exit_code: None,
            oom_killed: None,
            started_at: None,
            labels: [(PROFILE_LABEL.to_string(), "train".to_string())].into(),
            gpus: None,
            volumes: Vec::new(),
        };
        let selection = Selection::named([
            ("train", details("a1", "train", true)),
            ("a1", details("a1", "train", true)),
            ("old", details("b2", "old", false)),
        ]);
        assert_eq!(selection.targets.len(), 1);
        assert_eq!(selection.targets[0].profile.as_deref(), Some("train"));
        assert_eq!(selection.fixed, Some(["a1".to_string()].into()));
        assert_eq!(
            selection.failures,
            vec![Failure {
                subject: FailureSubject::Container("old".into()),
                kind: FailureKind::NotRunning,
                message: "`old` is exited".into(),
            }]
        );
    }
}
