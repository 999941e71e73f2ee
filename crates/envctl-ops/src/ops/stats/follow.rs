//! The live loop behind `envctl stats` without `--once`: a snapshot every interval until
//! the caller's stop (a key, a signal) or `--count`, each recorded, published to the
//! metrics server and handed to the caller's view.
//!
//! Containers this host can read directly are read from their cgroup files every
//! interval, keeping the previous reading for CPU %; the others are followed with one
//! stats stream each, in parallel, whose frames carry the daemon's previous reading. The
//! container list is refreshed every [`RELIST_EVERY`]; when the daemon goes away the GPUs
//! and the cgroup files go on being read while `reconnect` tries to reach it again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::reconnect::{self, LostDaemon};
use super::sampler::{
    self, CounterSource, Gpus, PROC_ROOT, Selection, Target, container_failure, input,
    list_targets, process_owners,
};
use super::serve::StatsServer;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::facts::container::{ContainerDetails, ContainerResources, ContainerSample};
use crate::host::cgroup::{self, LocalContainer};
use crate::monitor::Window;
use crate::monitor::failure::{Failure, FailureKind, FailureSubject};
use crate::monitor::snapshot::{ContainerInput, EndedContainer, Snapshot, assemble};
use crate::monitor::usage::container_usage;
use crate::ops::stats::recording::Recorder;

/// How often the live view lists containers again, to pick up new ones.
pub const RELIST_EVERY: Duration = Duration::from_secs(5);

/// How long the live view waits for the container list before counting the daemon lost:
/// a hung daemon must not stop the GPU readings.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the loop waits for the inspect of a container that stopped.
const ENDED_TIMEOUT: Duration = Duration::from_secs(2);

/// How the loop runs.
pub struct FollowOptions {
    /// Time between samples.
    pub interval: Duration,
    /// Stop after this many samples.
    pub count: Option<u64>,
    /// Every running container, not only envctl's (when no targets are named).
    pub all: bool,
    /// envctl's containers of this user only (the default of `stats`); none with
    /// `--all-users` or `--all`.
    pub owner: Option<crate::facts::user::User>,
    pub source: CounterSource,
    /// The host's name, for the Prometheus labels.
    pub hostname: Option<String>,
    /// Where each snapshot's time comes from (the context's clock).
    pub clock: crate::context::Clock,
}

/// Where every snapshot is kept or published besides the view.
#[derive(Default)]
pub struct Outputs<'a> {
    /// `--record`: each snapshot appended; a failed append ends the loop with its error.
    pub recorder: Option<&'a mut Recorder>,
    /// `--serve`: each snapshot is what the next requests get, and joins the history.
    pub server: Option<&'a StatsServer>,
}

/// The daemon whose state changed, as a view says it: its address, what it is (`Docker
/// daemon`, `Podman service`) and, when lost, why.
pub struct DaemonState {
    pub endpoint: String,
    pub daemon: &'static str,
    /// The error's whole chain, when the daemon was lost.
    pub error: Option<String>,
}

/// Where the loop's results go: what the daemon's state changes say, and each snapshot.
pub trait FollowView {
    /// The daemon stopped answering the container list; the loop keeps sampling and
    /// tries again on the `reconnect` schedule.
    fn daemon_lost(&mut self, lost: &DaemonState);
    /// The lost daemon answers again; its containers are listed at once.
    fn daemon_back(&mut self, back: &DaemonState);
    /// Sample number `taken` (from 1); an error ends the loop with it.
    fn show(&mut self, snapshot: &Snapshot, taken: u64) -> Result<(), Error>;
    /// A write [`FollowView::show`] left to another thread (stdout into a pipe): the loop
    /// waits for it together with its stop, so that a reader that stopped reading never
    /// keeps a signal from ending the loop.
    fn pending_write(&mut self) -> Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
        None
    }
}

/// Why the loop ended, when it was not an error.
pub enum Ended<S> {
    /// The caller's stop future finished with this.
    Stopped(S),
    /// `--count` samples were taken.
    Counted,
}

/// Follows `selection` until `stop` finishes or `options.count` samples are taken.
/// `stop` is polled only between intervals' work, as a signal or key read waits for it.
/// Each interval: the daemon watched ([`watch_daemon`]), a sample taken ([`sample`]),
/// then handed to every output ([`deliver`]).
pub async fn follow<S>(
    engine: &Engine,
    gpus: &Gpus,
    selection: Selection,
    options: &FollowOptions,
    mut outputs: Outputs<'_>,
    view: &mut dyn FollowView,
    stop: impl Future<Output = S>,
) -> Result<Ended<S>, Error> {
    let mut following = Following {
        engine,
        source: options.source,
        shared: Arc::new(Mutex::new(HashMap::new())),
        followed: BTreeMap::new(),
        stopped: Vec::new(),
        host_memory: cgroup::read_host_memory(Path::new(PROC_ROOT)).ok(),
    };
    let mut standing_failures = selection.failures;
    standing_failures.extend(following.refresh(selection.targets).await);
    let fixed = selection.fixed;
    let mut window = Window::for_interval(options.interval.as_secs_f64());
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + options.interval,
        options.interval,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut watch = DaemonWatch {
        last_listing: Instant::now(),
        lost: None,
    };
    let mut taken = 0_u64;
    let mut ended: Vec<EndedContainer> = Vec::new();
    let mut stop = std::pin::pin!(stop);
    let outcome = loop {
        tokio::select! {
            _ = ticker.tick() => {}
            stopped = &mut stop => break Ok(Ended::Stopped(stopped)),
        }
        let mut failures = standing_failures.clone();
        failures
            .extend(watch_daemon(&mut following, &mut watch, fixed.as_ref(), options, view).await);
        let snapshot = sample(
            &mut following,
            gpus,
            watch.lost.is_none(),
            &mut ended,
            failures,
            options.clock,
            &mut window,
        )
        .await;
        taken += 1;
        if let Err(error) = deliver(&snapshot, taken, &mut outputs, options, engine, view) {
            break Err(error);
        }
        if let Some(pending) = view.pending_write() {
            let written = tokio::select! {
                written = pending => written,
                stopped = &mut stop => break Ok(Ended::Stopped(stopped)),
            };
            if let Err(error) = written_to_stdout(written) {
                break Err(error);
            }
        }
        if options.count.is_some_and(|count| taken >= count) {
            break Ok(Ended::Counted);
        }
    };
    following.stop();
    drop(watch);
    outcome
}

/// The daemon as the loop sees it between samples: when its containers were last listed,
/// and, while it is lost, the schedule it is asked again on.
struct DaemonWatch {
    last_listing: Instant,
    lost: Option<LostDaemon>,
}

/// Before a sample: asks a lost daemon again and, every [`RELIST_EVERY`] (at once when it
/// came back), lists the containers again, following new ones; each change of the
/// daemon's state is said to `view`. The failures this adds to the sample: the lost
/// daemon's, or why the list failed.
async fn watch_daemon(
    following: &mut Following<'_>,
    watch: &mut DaemonWatch,
    fixed: Option<&BTreeSet<String>>,
    options: &FollowOptions,
    view: &mut dyn FollowView,
) -> Vec<Failure> {
    let engine = following.engine;
    let mut failures = Vec::new();
    let mut relist = watch.last_listing.elapsed() >= RELIST_EVERY;
    if let Some(daemon) = &mut watch.lost {
        if daemon.answered(engine).await {
            watch.lost = None;
            let at = engine.at();
            view.daemon_back(&DaemonState {
                endpoint: at.to_string(),
                daemon: at.daemon(),
                error: None,
            });
            relist = true;
        } else {
            failures.push(daemon.failure().clone());
            relist = false;
        }
    }
    if !relist {
        return failures;
    }
    watch.last_listing = Instant::now();
    let listed = tokio::time::timeout(
        LIST_TIMEOUT,
        // Named targets are kept whoever made them; only the default selection is limited
        // to envctl's containers.
        list_targets(
            engine,
            !options.all && fixed.is_none(),
            fixed,
            options.owner.as_ref().filter(|_| fixed.is_none()),
        ),
    )
    .await
    .unwrap_or_else(|_| {
        Err(EngineError::Timeout {
            endpoint: engine.at(),
            seconds: LIST_TIMEOUT.as_secs(),
        })
    });
    match listed {
        Ok(current) => failures.extend(following.refresh(current).await),
        Err(error) if reconnect::daemon_is_lost(&error) => {
            let at = engine.at();
            view.daemon_lost(&DaemonState {
                endpoint: at.to_string(),
                daemon: at.daemon(),
                error: Some(crate::error::error_chain(&error)),
            });
            let daemon = LostDaemon::new(&error);
            failures.push(daemon.failure().clone());
            watch.lost = Some(daemon);
        }
        Err(error) => failures.push(reconnect::daemon_failure(&error)),
    }
    failures
}

/// One sample: the followed containers and the GPUs read, the containers seen stopped
/// asked how they ended (only while the daemon answers: else their inspect would only
/// time out, so they wait), the GPU processes' owners found, and the whole assembled with
/// `failures` and judged over `window`. `ended` keeps the last ended containers across
/// samples.
async fn sample(
    following: &mut Following<'_>,
    gpus: &Gpus,
    daemon_answers: bool,
    ended: &mut Vec<EndedContainer>,
    mut failures: Vec<Failure>,
    clock: crate::context::Clock,
    window: &mut Window,
) -> Snapshot {
    let ((inputs, read_failures), (readings, gpu_failure)) = (following.read(), gpus.read().await);
    failures.extend(read_failures);
    failures.extend(gpu_failure);
    // While the daemon is away, the stopped wait: their inspect would only time out.
    if daemon_answers {
        let (found, inspect_failures, still_running) =
            inspect_stopped(following.engine, following.take_stopped()).await;
        ended.extend(found);
        following.ask_again(still_running);
        failures.extend(inspect_failures);
        let excess = ended.len().saturating_sub(EndedContainer::KEPT);
        ended.drain(..excess);
    }
    let known: BTreeSet<String> = following.followed.keys().cloned().collect();
    let (owners, owner_failures) = process_owners(readings.as_ref(), &known);
    failures.extend(owner_failures);
    let mut snapshot = assemble(
        sampler::now(clock),
        inputs,
        readings.as_ref(),
        &owners,
        failures,
        gpus.fatal_xids(),
    );
    let time = snapshot.time;
    snapshot.ended = ended
        .iter_mut()
        .map(|end| {
            // Seen stopped at this sample: its time is the sample's.
            if end.time.is_nan() {
                end.time = time;
            }
            end.clone()
        })
        .collect();
    window.push(&snapshot);
    snapshot.diagnoses = window.diagnose();
    snapshot
}

/// Hands sample number `taken` to every output in turn: the recording (`--record`), the
/// metrics server (`--serve`), then the view. The first error ends the loop.
fn deliver(
    snapshot: &Snapshot,
    taken: u64,
    outputs: &mut Outputs<'_>,
    options: &FollowOptions,
    engine: &Engine,
    view: &mut dyn FollowView,
) -> Result<(), Error> {
    if let Some(recorder) = &mut outputs.recorder {
        recorder.append(snapshot)?;
    }
    if let Some(server) = outputs.server {
        server.publish(
            snapshot,
            options.hostname.as_deref(),
            &engine.at().to_string(),
        );
    }
    view.show(snapshot, taken)
}

/// What the view's stdout writer thread answered ([`FollowView::pending_write`]), as the
/// loop's result: a failed write, or a thread that ended without answering, ends it.
fn written_to_stdout(
    written: Result<std::io::Result<()>, tokio::sync::oneshot::error::RecvError>,
) -> Result<(), Error> {
    match written {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(Error::Output(error)),
        Err(_) => Err(Error::Internal("the stdout writer thread ended".into())),
    }
}

/// How each of `stopped` ended, as its inspect says (a container removed meanwhile has
/// nothing to say); the time is left NaN for the sample to fill in. Those the inspect
/// still calls running come back third: the engine writes a container's end a moment
/// after its cgroup is gone (seen under load), and one asked too early must be asked
/// again, or its end (an OOM kill) is never said.
async fn inspect_stopped(
    engine: &Engine,
    stopped: Vec<Target>,
) -> (Vec<EndedContainer>, Vec<Failure>, Vec<Target>) {
    let answers =
        crate::engine::each_bounded(stopped.iter().map(|target| {
            tokio::time::timeout(ENDED_TIMEOUT, engine.inspect_container(&target.id))
        }))
        .await
        .into_iter()
        .map(Result::ok)
        .collect();
    sort_inspected(&engine.at(), stopped, answers)
}

/// The inspect answers of [`inspect_stopped`] sorted out; `None` is an inspect that took
/// longer than [`ENDED_TIMEOUT`].
fn sort_inspected(
    endpoint: &crate::engine::Endpoint,
    stopped: Vec<Target>,
    answers: Vec<Option<Result<Option<ContainerDetails>, EngineError>>>,
) -> (Vec<EndedContainer>, Vec<Failure>, Vec<Target>) {
    let mut found = Vec::new();
    let mut failures = Vec::new();
    let mut still_running = Vec::new();
    for (target, answer) in stopped.into_iter().zip(answers) {
        match answer {
            Some(Ok(Some(details))) => {
                match sampler::ended(&details, target.profile.clone(), f64::NAN) {
                    Some(end) => found.push(end),
                    None => still_running.push(target),
                }
            }
            // Removed meanwhile (`--rm`): it has nothing to say.
            Some(Ok(None)) => {}
            Some(Err(error)) => failures.push(container_failure(&target, &error)),
            None => failures.push(container_failure(
                &target,
                &EngineError::Timeout {
                    endpoint: endpoint.clone(),
                    seconds: ENDED_TIMEOUT.as_secs(),
                },
            )),
        }
    }
    (found, failures, still_running)
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
    source: CounterSource,
    shared: Shared,
    followed: BTreeMap<String, Followed>,
    /// Followed containers seen stopped since the last [`Following::take_stopped`].
    stopped: Vec<Target>,
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
                self.stopped.push(entry.target);
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
        let resources = crate::engine::each_bounded(
            fresh
                .iter()
                .map(|target| self.engine.container_resources(&target.id)),
        )
        .await;
        let located = sampler::locate_local(&fresh, &resources, self.source);
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
                                subject: FailureSubject::Container(entry.target.name.clone()),
                                kind: FailureKind::CgroupUnreadable,
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
            if let Some(entry) = self.followed.remove(&id) {
                self.stopped.push(entry.target);
            }
        }
        inputs.sort_by(|first, second| first.name.cmp(&second.name));
        (inputs, failures)
    }

    /// The containers seen stopped since the last call.
    fn take_stopped(&mut self) -> Vec<Target> {
        std::mem::take(&mut self.stopped)
    }

    /// Asks about `targets` again at the next sample, unless one is followed again (the
    /// listing found it running: then it did not end).
    fn ask_again(&mut self, targets: Vec<Target>) {
        self.stopped.extend(
            targets
                .into_iter()
                .filter(|target| !self.followed.contains_key(&target.id)),
        );
    }

    fn stop(&self) {
        for entry in self.followed.values() {
            entry.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str) -> Target {
        Target {
            id: id.into(),
            name: format!("box-{id}"),
            profile: Some("p".into()),
        }
    }

    fn details(id: &str, running: bool) -> ContainerDetails {
        ContainerDetails {
            id: id.into(),
            name: format!("box-{id}"),
            image: "busybox".into(),
            running,
            status: if running { "running" } else { "exited" }.into(),
            exit_code: (!running).then_some(137),
            oom_killed: Some(!running),
            started_at: None,
            labels: BTreeMap::new(),
            gpus: None,
            volumes: Vec::new(),
        }
    }

    /// A container whose cgroup is gone but whose inspect still says running (the engine
    /// writes the end a moment later) is asked again, not forgotten; an ended one is said,
    /// a removed one says nothing, and an inspect that timed out is a failure.
    #[test]
    fn an_inspect_that_still_says_running_is_asked_again() {
        let endpoint = crate::engine::Endpoint::unidentified("unix:///run/docker.sock");
        let (found, failures, again) = sort_inspected(
            &endpoint,
            vec![target("a"), target("b"), target("c"), target("d")],
            vec![
                Some(Ok(Some(details("a", true)))),
                Some(Ok(Some(details("b", false)))),
                Some(Ok(None)),
                None,
            ],
        );
        assert_eq!(
            again
                .iter()
                .map(|target| target.id.as_str())
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "b");
        assert_eq!(found[0].oom_killed, Some(true));
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].kind, FailureKind::Timeout);
    }
}
