//! GPU placement for `up`: a count of GPUs ([`Gpus::Count`]) becomes N free GPUs pinned
//! by UUID ([`Gpus::Devices`]), chosen under the host-wide lock (`host::gpu_lock`) from
//! the engine's holders (`Engine::gpu_holders`) and NVML's facts, by the pure
//! `spec::placement::choose`. `placement = "first"` keeps Docker's choice. Placement
//! reads and gives the typed GPUs, never a request body; the engine's form of the request
//! is written after it (`spec::gpus::render`).

use std::path::Path;

use serde::Serialize;

use std::collections::BTreeMap;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::GpuAssignment;
use crate::facts::gpu::GpuFacts;
use crate::host::gpu_lock::{self, GpuLock};
use crate::profile::model::GpuPlacement;
use crate::spec::gpus::Gpus;
use crate::spec::placement::{self, ChosenGpu, GpuOccupancy};
use crate::spec::{CreateBody, GPUS_LABEL};

/// What placement decided, for `up`'s messages and the dry run's JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlacementReport {
    pub placement: Chooser,
    /// The GPUs pinned, when envctl chose them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<ChosenGpu>,
    pub reason: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// Who chose the GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Chooser {
    /// envctl: the least used free GPUs.
    Free,
    /// The daemon: the first N (`placement = "first"`, or no NVML to choose with).
    First,
    /// The profile or `--gpus`, which named the GPUs or asked for all.
    Given,
}

/// The GPUs decided for a container, and the lock that must be held until it exists.
pub struct Placed {
    pub gpus: Gpus,
    pub report: Option<PlacementReport>,
    pub lock: Option<GpuLock>,
}

impl Placed {
    /// `gpus` as they are, for a container that exists already.
    pub fn unplaced(gpus: &Gpus) -> Placed {
        Placed {
            gpus: gpus.clone(),
            report: None,
            lock: None,
        }
    }
}

/// Whether [`place`] will take the host-wide lock for these GPUs: a count, `free`
/// placement, and NVML facts to choose from.
pub fn locks(gpus: &Gpus, policy: GpuPlacement, gpu: &GpuFacts) -> bool {
    gpus.count().is_some() && policy != GpuPlacement::First && gpu.loaded().is_some()
}

/// `body` with its GPUs named in [`GPUS_LABEL`], so other `up`s see them in the list.
pub fn labelled(mut body: CreateBody, gpus: &Gpus) -> CreateBody {
    if let Some(assignment) = gpus.assignment() {
        body.labels.insert(
            GPUS_LABEL.to_string(),
            crate::engine::occupancy::label_value(&assignment),
        );
    }
    body
}

/// The GPUs of this host per NVML with their holders; `Err` says why NVML had none.
fn rows(
    gpu: &GpuFacts,
    holders: &[crate::facts::occupancy::GpuHolder],
) -> Result<Vec<GpuOccupancy>, String> {
    Ok(placement::occupancy(gpu.listed_gpus()?, holders).0)
}

/// Places `gpus`. With a count and `free` placement it takes the host-wide lock
/// (held in [`Placed::lock`] until the caller has created the container), reads the
/// holders and pins the least used free GPUs; without NVML it leaves the choice to the
/// daemon and says so. `lock_path` is `None` for a dry run, which changes nothing.
///
/// `gate`: the host policy, when its per-user GPU rule applies. Its count of what the
/// user holds is taken from the same holders, under the same lock, whatever the form of
/// the request: N concurrent `up`s can never together pass the limit. With the gate comes
/// the body it judges (the policy reads the whole request: memory, ports, environment).
pub async fn place(
    engine: &Engine,
    gpus: &Gpus,
    policy: GpuPlacement,
    gpu: &GpuFacts,
    lock_path: Option<&Path>,
    gate: Option<(&crate::ops::policy::PolicyGate<'_>, &CreateBody)>,
    context: &Context,
) -> Result<Placed, Error> {
    // slurm (issue 29): inside a job, only the job's GPUs are candidates (`ops::slurm`).
    let confined = crate::ops::slurm::for_placement(gpus, gpu, policy, context)?;
    let (gpus, gpu) = (&confined.0, &confined.1);
    // slurm: end
    let count = gpus.count();
    let chooses = count.is_some() && policy != GpuPlacement::First && rows(gpu, &[]).is_ok();
    let counts = chooses || gate.is_some();
    let lock = match lock_path {
        Some(path) if counts => Some(take_lock(path, context).await?),
        _ => None,
    };
    let holders = if counts {
        holders(engine, context).await?
    } else {
        Vec::new()
    };
    if let Some((gate, body)) = gate {
        gate.enforce(body, Some(gpu), Some(&holders), context)?;
    }
    let Some(count) = count else {
        let report = (!gpus.is_none()).then(|| PlacementReport {
            placement: Chooser::Given,
            gpus: Vec::new(),
            reason: "the profile names its GPUs (or asks for all of them)".into(),
            skipped: Vec::new(),
        });
        return Ok(Placed {
            gpus: gpus.clone(),
            report,
            lock,
        });
    };
    // Docker's own choice, and why it is left to the daemon.
    let first = |reason: String, lock: Option<GpuLock>| Placed {
        gpus: gpus.clone(),
        report: Some(PlacementReport {
            placement: Chooser::First,
            gpus: Vec::new(),
            reason,
            skipped: Vec::new(),
        }),
        lock,
    };
    let gpus_word = if count == 1 { "GPU" } else { "GPUs" };
    if policy == GpuPlacement::First {
        return Ok(first(
            format!("`placement = \"first\"`: the daemon gives the first {count} {gpus_word}"),
            lock,
        ));
    }
    if let Err(why) = rows(gpu, &[]) {
        return Ok(first(
            format!(
                "NVML could not be read ({why}), so envctl cannot tell which GPUs are free: the daemon gives the first {count} {gpus_word}"
            ),
            lock,
        ));
    }
    let rows = rows(gpu, &holders).map_err(Error::Internal)?;
    match placement::choose(count, &rows, policy == GpuPlacement::Idle) {
        Ok(choice) => Ok(Placed {
            gpus: Gpus::Devices(choice.gpus.iter().map(|gpu| gpu.uuid.clone()).collect()),
            report: Some(PlacementReport {
                placement: Chooser::Free,
                gpus: choice.gpus,
                reason: choice.reason,
                skipped: choice.skipped,
            }),
            lock,
        }),
        Err(no_room) => Err(Error::NoFreeGpus {
            summary: no_room.to_string(),
            held: no_room.held,
            skipped: no_room.skipped,
        }),
    }
}

/// Takes the host-wide placement lock at `path` (waiting on a thread of its own, which
/// gives up at the first signal), and says so when the wait passes a second.
async fn take_lock(path: &Path, context: &Context) -> Result<GpuLock, Error> {
    let shown = path.display().to_string();
    let path = path.to_path_buf();
    let mut task = tokio::task::spawn_blocking(move || gpu_lock::acquire(&path));
    let taken = tokio::select! {
        taken = &mut task => taken,
        () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {
            context.printer.info(&format!(
                "waiting for the GPU placement lock {shown} (another `up` is placing; at most {} s)",
                gpu_lock::WAIT.as_secs()
            ));
            task.await
        }
    }
    .map_err(|error| Error::Internal(format!("the GPU lock task failed: {error}")))?;
    taken.map_err(|error| Error::GpuLock {
        hint: error.hint(),
        source: error,
    })
}

/// After the create: the chosen GPUs must be held by this container alone. Another tool
/// that created a container on them meanwhile (outside envctl's lock) is named.
pub async fn recheck(
    engine: &Engine,
    id: &str,
    report: &PlacementReport,
    gpu: &GpuFacts,
    context: &Context,
) -> Result<(), Error> {
    if report.gpus.is_empty() {
        return Ok(());
    }
    let Some(nvml) = gpu.loaded() else {
        return Ok(());
    };
    let others = others_than(engine, id, context).await?;
    let chosen: Vec<u32> = report.gpus.iter().map(|gpu| gpu.index).collect();
    let shared = placement::shared_with(&nvml.gpus, &others, &chosen);
    if shared.is_empty() {
        Ok(())
    } else {
        Err(Error::GpusTakenMeanwhile { shared })
    }
}

/// The GPU holders on `engine` but the container `id`.
async fn others_than(
    engine: &Engine,
    id: &str,
    context: &Context,
) -> Result<Vec<crate::facts::occupancy::GpuHolder>, Error> {
    let mut holders = holders(engine, context).await?;
    holders.retain(|holder| holder.id != id);
    Ok(holders)
}

/// The requests of other tools' containers, kept between runs in
/// `$XDG_CACHE_HOME/envctl/gpu-requests.json` (per engine endpoint, by container id): a
/// container's `DeviceRequests` never change after its create, so each is inspected once,
/// not at every `up`. Ids no longer listed are dropped at each write.
#[derive(Debug, Default, serde::Deserialize, Serialize)]
struct RequestCache {
    engines: BTreeMap<String, BTreeMap<String, Option<GpuAssignment>>>,
}

/// The containers holding GPUs on `engine`, reading and updating the [`RequestCache`]. A
/// cache that cannot be read is read as empty, and one that cannot be written is said
/// once: either way the holders are the engine's, only found more slowly.
pub async fn holders(
    engine: &Engine,
    context: &Context,
) -> Result<Vec<crate::facts::occupancy::GpuHolder>, Error> {
    Ok(holders_read(engine, context).await?.holders)
}

/// [`holders`], with the rest of what the same list said (`HoldersRead`).
pub async fn holders_read(
    engine: &Engine,
    context: &Context,
) -> Result<crate::engine::occupancy::HoldersRead, Error> {
    let path = context
        .environment
        .cache_home()
        .map(|folder| folder.join("envctl").join("gpu-requests.json"));
    // Through the one reader for found files (`untrusted`): a FIFO, a link or a huge
    // file planted there is refused at once, never waited on while the lock is held.
    let mut cache = match path
        .as_deref()
        .map(|path| crate::untrusted::read_json::<RequestCache>(path, 16 << 20))
    {
        None | Some(Ok(None)) => RequestCache::default(),
        Some(Ok(Some(cache))) => cache,
        Some(Err(why)) => {
            // Only envctl writes it: the next write replaces what cannot be read.
            context.printer.warn(&format!(
                "ignoring the GPU request cache {}: {why}",
                path.as_deref()
                    .map_or_else(String::new, |path| path.display().to_string())
            ));
            RequestCache::default()
        }
    };
    let endpoint = engine.endpoint().to_string();
    let known = cache.engines.remove(&endpoint).unwrap_or_default();
    let read = engine.gpu_holders_known(&known).await?;
    if let Some(path) = path
        && read.requests != known
    {
        cache.engines.insert(endpoint, read.requests.clone());
        let written = serde_json::to_vec(&cache)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                if let Some(folder) = path.parent() {
                    std::fs::create_dir_all(folder)?;
                }
                crate::files::write_atomically(&path, &bytes, crate::files::Existing::Replace)
                    .map_err(std::io::Error::other)
            });
        if let Err(error) = written {
            context.printer.warn(&format!(
                "could not keep the GPU requests of other containers in {}: {error} (placement inspects them again next time)",
                path.display()
            ));
        }
    }
    Ok(read)
}

/// Before a stopped container is started again: the GPUs its label pins must not be held
/// by another container now. A container without pinned GPUs (a count, `all`) passes.
pub async fn still_free(
    engine: &Engine,
    existing: &crate::facts::container::ContainerDetails,
    gpu: &GpuFacts,
    profile: &str,
    context: &Context,
) -> Result<(), Error> {
    let Some(GpuAssignment::Devices(pinned)) = existing
        .labels
        .get(GPUS_LABEL)
        .and_then(|label| crate::engine::occupancy::parse_label(label))
    else {
        return Ok(());
    };
    let Some(nvml) = gpu.loaded() else {
        return Ok(());
    };
    let others = others_than(engine, &existing.id, context).await?;
    let pinned = placement::indexes_of(&GpuAssignment::Devices(pinned), &nvml.gpus);
    let shared = placement::shared_with(&nvml.gpus, &others, &pinned);
    if shared.is_empty() {
        return Ok(());
    }
    Err(Error::PinnedGpusTaken {
        name: existing.name.clone(),
        profile: profile.to_string(),
        shared,
    })
}

/// GPU process PIDs → the name of the running container each is in (by its cgroup, as
/// `stats` attributes them), with what could not be read. A process that ended between
/// NVML's answer and the read is simply gone.
pub fn process_owners(
    gpus: &[crate::facts::gpu::GpuDevice],
    running: &[(String, String)],
) -> (BTreeMap<u32, String>, Vec<String>) {
    let pids: std::collections::BTreeSet<u32> = gpus
        .iter()
        .filter_map(|gpu| gpu.processes.value())
        .flatten()
        .map(|process| process.pid)
        .collect();
    let (by_id, unread) = crate::host::cgroup::process_containers(Path::new("/proc"), pids, |id| {
        running.iter().any(|(running, _)| running == id)
    });
    let owners = by_id
        .into_iter()
        .filter_map(|(pid, id)| {
            let (_, name) = running.iter().find(|(running, _)| *running == id)?;
            Some((pid, name.clone()))
        })
        .collect();
    let unreadable = unread
        .into_iter()
        .map(|(pid, error)| {
            format!("cannot tell the container of GPU process {pid}: /proc/{pid}/cgroup: {error}")
        })
        .collect();
    (owners, unreadable)
}
