//! GPU placement for `up`: a count of GPUs ([`Gpus::Count`]) becomes N free GPUs pinned
//! by UUID ([`Gpus::Devices`]), chosen under the host-wide lock (`host::gpu_lock`) from
//! the engine's holders (`Engine::gpu_holders`) and NVML's facts, by the pure
//! `container_plan::placement::choose`. `placement = "first"` keeps Docker's choice. Placement
//! reads and gives the typed GPUs, never a request body; the engine's form of the request
//! is written after it (`container_plan::gpus::render`).

use std::path::Path;

use serde::Serialize;

use std::collections::BTreeMap;

use crate::container_plan::gpus::Gpus;
use crate::container_plan::placement::{self, ChosenGpu, GpuOccupancy};
use crate::container_plan::{CreateBody, GPUS_LABEL};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::GpuAssignment;
use crate::facts::gpu::GpuFacts;
use crate::host::gpu_lock::{self, GpuLock};
use crate::profile::model::GpuPlacement;

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

/// The GPUs decided for a container, and the locks that must be held until it exists.
pub struct Placed {
    pub gpus: Gpus,
    pub report: Option<PlacementReport>,
    pub lock: Held,
}

impl Placed {
    /// `gpus` as they are, for a container that exists already.
    pub fn unplaced(gpus: &Gpus) -> Placed {
        Placed {
            gpus: gpus.clone(),
            report: None,
            lock: Held::default(),
        }
    }
}

/// The placement locks an `up` holds: this host's lock file (when the daemon runs here)
/// and the daemon's own lock (`engine::daemon_placement`), which orders the `up`s of every
/// machine that reaches the daemon.
#[derive(Debug, Default)]
pub struct Held {
    file: Option<GpuLock>,
    /// The daemon lock's container id: released with [`release`], or by `up`'s clean-up.
    pub daemon: Option<String>,
}

/// What placing takes besides the GPUs: the locks and what the daemon's lock is made of.
/// A dry run places without them and changes nothing.
pub struct Locking<'a> {
    /// This host's lock file (`ENVCTL_GPU_LOCK`).
    pub file: &'a Path,
    /// The image the daemon's lock container is made from (present: pulled before placing).
    pub image: &'a str,
    /// This run's id (`RUN_LABEL`'s value), on the daemon's lock.
    pub run: &'a str,
}

/// The longest a holder of the daemon's lock works before it begins its create: reading
/// the holders, the record, choosing. A holder past it gives the lock back and creates
/// nothing ([`place`]), so that no waiter can take the lock from a holder that is about to
/// create.
const HOLD_BEFORE_CREATE: std::time::Duration = std::time::Duration::from_secs(20);

/// How long the daemon's lock may stay with the same holder before it is taken as the
/// lock of an `up` that died (killed between taking and releasing it). A live holder
/// creates within [`HOLD_BEFORE_CREATE`], and its create ends within the connection's
/// create deadline (a loaded daemon on fuse-overlayfs takes tens of seconds), plus one
/// short answer for the inspect before it: only past all of them together is the holder
/// surely dead, or its container made (and then seen by the next placement). Measured by
/// the waiter's own clock from when it first saw that lock, so the clocks of the machines
/// need not agree, and the holder has held it at least as long.
fn daemon_lock_stale(engine: &Engine) -> std::time::Duration {
    HOLD_BEFORE_CREATE
        + engine.create_deadline()
        + crate::engine::ANSWER_DEADLINE
        + std::time::Duration::from_secs(5)
}

/// Whether [`place`] will take the placement locks for these GPUs: a count, `free`
/// placement, and GPUs to choose from (NVML's here, the daemon's record for a daemon on
/// another machine).
pub fn locks(gpus: &Gpus, policy: GpuPlacement, gpu: &GpuFacts) -> bool {
    gpus.count().is_some()
        && policy != GpuPlacement::First
        && (gpu.loaded().is_some() || elsewhere(gpu).is_some())
}

/// The daemon's machine, when it is not this one (NVML was then not read).
fn elsewhere(gpu: &GpuFacts) -> Option<&str> {
    match &gpu.nvml {
        crate::facts::gpu::LoadOutcome::OnAnotherHost { host, .. } => Some(host),
        _ => None,
    }
}

/// `body` with its GPUs named in [`GPUS_LABEL`] (which names them, for messages and
/// `ps`).
pub fn labelled(mut body: CreateBody, gpus: &Gpus) -> CreateBody {
    if let Some(assignment) = gpus.assignment() {
        body.labels.insert(
            GPUS_LABEL.to_string(),
            crate::engine::occupancy::label_value(&assignment),
        );
    }
    body
}

/// Right before a create: where the image's own environment gives GPUs
/// (`NVIDIA_VISIBLE_DEVICES=all` in every CUDA image, read from the engine's image inspect)
/// and the body does not set the variable, the body sets it to what it was given (`void`
/// for no GPU; `container_plan::gpus::pin_visible_devices`). Under a default NVIDIA runtime the
/// image's value would otherwise hand the container every GPU, beside every count and
/// every policy. An image that cannot be inspected is pinned all the same.
pub async fn pin_visible_devices(engine: &Engine, body: &mut CreateBody) {
    let prefix = format!("{}=", crate::container_plan::gpus::VISIBLE_DEVICES);
    if body.env.iter().any(|pair| pair.starts_with(&prefix)) {
        return;
    }
    let gives = match engine.image_facts(&body.image).await {
        Ok(Some(image)) => image
            .env
            .get(crate::container_plan::gpus::VISIBLE_DEVICES)
            .is_some_and(|value| !matches!(value.trim(), "" | "void" | "none" | "NoDevFiles")),
        Ok(None) | Err(_) => true,
    };
    if !gives {
        return;
    }
    let gpus = match body
        .labels
        .get(GPUS_LABEL)
        .and_then(|label| crate::engine::occupancy::parse_label(label))
    {
        None => Gpus::None,
        Some(GpuAssignment::All) => Gpus::All,
        Some(GpuAssignment::Count(count)) => Gpus::Count(u32::try_from(count).unwrap_or_default()),
        Some(GpuAssignment::Devices(devices)) => Gpus::Devices(devices),
        // envctl never asks for nodes; their GPUs are the nodes', not the runtime's.
        Some(GpuAssignment::Nodes(_)) => Gpus::None,
    };
    crate::container_plan::gpus::pin_visible_devices(&mut body.env, &gpus);
}

/// The GPUs of this host per NVML with their holders; `Err` says why NVML had none.
fn rows(
    gpu: &GpuFacts,
    holders: &[crate::facts::occupancy::GpuHolder],
) -> Result<Vec<GpuOccupancy>, String> {
    Ok(placement::occupancy(gpu.listed_gpus()?, holders).0)
}

/// The Xids that mark a GPU failed under every policy in force: the union of their
/// `gpus.fatal_xids` (a site that counts an Xid as fatal is obeyed), NVIDIA's list where
/// none sets it. `policies` are the gate's where it was read, else this host's file.
pub fn fatal_xids_in_force(
    policies: Option<&[crate::policy::Policy]>,
    context: &Context,
) -> Result<Vec<u32>, Error> {
    let read;
    let policies = match policies {
        Some(policies) => policies,
        None => {
            read = crate::ops::policy::in_force(context)?;
            read.as_slice()
        }
    };
    if policies.is_empty() {
        return Ok(crate::policy::Policy::fatal_xids(None));
    }
    let mut xids: Vec<u32> = policies
        .iter()
        .flat_map(|policy| crate::policy::Policy::fatal_xids(Some(policy)))
        .collect();
    xids.sort_unstable();
    xids.dedup();
    Ok(xids)
}

/// Sets [`GpuOccupancy::kept_out`] on each GPU whose health keeps it out of placement
/// (`checks::health::keep_out`): NVML's answers now, and the fatal Xids the host's
/// watchers recorded this boot (`host::gpu_health`). Records that cannot be believed, or
/// a boot that cannot be told, are said: placement then weighs NVML's answers alone.
pub fn mark_kept_out(
    rows: &mut [GpuOccupancy],
    devices: &[crate::facts::gpu::GpuDevice],
    fatal_xids: &[u32],
    context: &Context,
) {
    let found = crate::host::gpu_health::read_all(&context.environment.gpu_lock_path());
    for why in &found.ignored {
        context.printer.warn(why);
    }
    let boot_id = match crate::host::gpu_health::boot_id() {
        Ok(boot_id) => Some(boot_id),
        Err(error) => {
            if !found.records.is_empty() {
                context.printer.warn(&format!(
                    "the recorded GPU Xids are not weighed: {}",
                    crate::error::error_chain(&error)
                ));
            }
            None
        }
    };
    for row in rows.iter_mut() {
        let Some(device) = devices.iter().find(|device| device.index == row.index) else {
            continue;
        };
        row.kept_out =
            crate::checks::health::keep_out(device, &found.records, boot_id.as_deref(), fatal_xids);
    }
}

/// Places `gpus`. With a count and `free` placement it takes the placement locks (held
/// in [`Placed::lock`] until the caller has created the container, then [`release`]d),
/// reads the holders and pins the least used free GPUs; without GPUs to choose from it
/// leaves the choice to the daemon and says so. `locking` is `None` for a dry run, which
/// changes nothing.
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
    locking: Option<Locking<'_>>,
    gate: Option<(&crate::ops::policy::PolicyGate<'_>, &CreateBody)>,
    context: &Context,
) -> Result<Placed, Error> {
    // The host's GPUs, for the daemon's record: in a Slurm job too, all of them.
    let host_gpus = gpu;
    // slurm (issue 29): inside a job, only the job's GPUs are candidates (`ops::slurm`).
    let confined = crate::ops::slurm::for_placement(gpus, gpu, policy, context)?;
    let (gpus, gpu) = (&confined.0, &confined.1);
    // slurm: end
    let chooses = locks(gpus, policy, gpu);
    let counts = chooses || gate.is_some();
    let mut held = Held::default();
    let mut taken_at = None;
    if let Some(locking) = &locking
        && counts
    {
        // This machine's lock file orders the `up`s of this machine across its engines
        // (Docker and Podman hand out the same GPUs); it says nothing of another machine.
        if elsewhere(gpu).is_none() {
            held.file = Some(take_lock(locking.file, context).await?);
        }
        held.daemon = Some(take_daemon_lock(engine, locking, context).await?);
        taken_at = Some(std::time::Instant::now());
    }
    let daemon_lock = held.daemon.clone();
    let choosing = Choosing {
        gpus,
        policy,
        gpu,
        host_gpus,
        counts,
        gate,
        image: locking.as_ref().map(|locking| locking.image),
    };
    let chosen = choose(engine, choosing, held, context).await.and_then(|placed| {
        // Past this, a waiter may take the daemon's lock as a dead holder's: give it back
        // with nothing created rather than create beside another `up`'s choice.
        match taken_at.map(|taken| taken.elapsed()) {
            Some(held) if held > HOLD_BEFORE_CREATE => Err(Error::GpuLock {
                source: gpu_lock::GpuLockError::DaemonSlow {
                    endpoint: engine.endpoint().to_string(),
                    seconds: held.as_secs(),
                },
                hint: "nothing was created; run the same `envctl up` again (a daemon this slow to answer may be overloaded: `envctl doctor`)".into(),
            }),
            _ => Ok(placed),
        }
    });
    match chosen {
        Ok(placed) => Ok(placed),
        Err(error) => {
            if let Some(id) = daemon_lock {
                release_daemon_lock(engine, &id, context).await;
            }
            Err(error)
        }
    }
}

/// What [`choose`] decides from: [`place`]'s arguments once confined to a Slurm job.
struct Choosing<'a> {
    gpus: &'a Gpus,
    policy: GpuPlacement,
    /// The GPUs that are candidates (a Slurm job's only, inside one).
    gpu: &'a GpuFacts,
    /// Every GPU of the host, for the daemon's record.
    host_gpus: &'a GpuFacts,
    counts: bool,
    gate: Option<(&'a crate::ops::policy::PolicyGate<'a>, &'a CreateBody)>,
    /// The profile's image (present on the daemon), the GPU probe's first choice.
    image: Option<&'a str>,
}

/// Why GPUs the profile gives are not placed: which of the two it does.
fn given_reason(gpus: &Gpus) -> String {
    match gpus {
        Gpus::All => "the profile asks for all GPUs".into(),
        Gpus::Devices(devices) => format!("the profile names its GPUs ({})", devices.join(", ")),
        // Placed, not given, and so not said here; named for completeness.
        Gpus::Count(count) => format!("the profile asks for {count} GPUs"),
        Gpus::None => "the profile asks for no GPU".into(),
    }
}

/// [`place`] once the locks are held.
async fn choose(
    engine: &Engine,
    choosing: Choosing<'_>,
    lock: Held,
    context: &Context,
) -> Result<Placed, Error> {
    let Choosing {
        gpus,
        policy,
        gpu,
        host_gpus,
        counts,
        gate,
        image,
    } = choosing;
    let count = gpus.count();
    let holders = if counts {
        holders(engine, context).await?
    } else {
        Vec::new()
    };
    if let Some((gate, body)) = gate {
        gate.enforce(body, Some(gpu), Some(&holders), context)?;
    }
    let Some(count) = count else {
        return given(gpus, gpu, gate, lock, context);
    };
    // Docker's own choice, and why it is left to the daemon.
    let first = |reason: String, lock: Held| Placed {
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
    let candidates = Candidates {
        gpu,
        host_gpus,
        gate,
        image,
        holders: &holders,
        count,
    };
    let rows = match candidate_rows(engine, &candidates, &lock, context).await? {
        Ok(rows) => rows,
        Err(reason) => return Ok(first(reason, lock)),
    };
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

/// `all` or named GPUs, which are not placed but given as the profile says: a failed one
/// among them is said, with its fix.
fn given(
    gpus: &Gpus,
    gpu: &GpuFacts,
    gate: Option<(&crate::ops::policy::PolicyGate<'_>, &CreateBody)>,
    lock: Held,
    context: &Context,
) -> Result<Placed, Error> {
    if let (Some(assignment), Ok(devices)) = (gpus.assignment(), gpu.listed_gpus()) {
        let wanted = placement::indexes_of(&assignment, devices);
        let mut rows = placement::occupancy(devices, &[]).0;
        let policies = gate.map(|(gate, _)| gate.policies);
        mark_kept_out(
            &mut rows,
            devices,
            &fatal_xids_in_force(policies, context)?,
            context,
        );
        for row in rows.iter().filter(|row| wanted.contains(&row.index)) {
            if let Some(why) = &row.kept_out {
                context.printer.warn(&format!(
                    "the profile asks for a GPU that failed, which its container is given all the same: {why}"
                ));
            }
        }
    }
    let report = (!gpus.is_none()).then(|| PlacementReport {
        placement: Chooser::Given,
        gpus: Vec::new(),
        reason: given_reason(gpus),
        skipped: Vec::new(),
    });
    Ok(Placed {
        gpus: gpus.clone(),
        report,
        lock,
    })
}

/// What [`candidate_rows`] reads the GPUs to choose among from.
struct Candidates<'a> {
    gpu: &'a GpuFacts,
    host_gpus: &'a GpuFacts,
    gate: Option<(&'a crate::ops::policy::PolicyGate<'a>, &'a CreateBody)>,
    image: Option<&'a str>,
    holders: &'a [crate::facts::occupancy::GpuHolder],
    /// How many GPUs are asked for, for the reasons said.
    count: u32,
}

/// The GPUs `count` are chosen among, with their holders: another machine's as its
/// daemon tells them (a dry run: its record only), else this machine's from NVML, its
/// record kept on the daemon when its lock is held and failed GPUs kept out. The inner
/// `Err` is why no GPU can be told free, so the daemon's own choice stands; another
/// machine's GPUs that cannot be learnt are refused instead, which never double-books.
async fn candidate_rows(
    engine: &Engine,
    candidates: &Candidates<'_>,
    lock: &Held,
    context: &Context,
) -> Result<Result<Vec<GpuOccupancy>, String>, Error> {
    let Candidates {
        gpu,
        host_gpus,
        gate,
        image,
        holders,
        count,
    } = *candidates;
    let gpus_word = if count == 1 { "GPU" } else { "GPUs" };
    match elsewhere(gpu) {
        // A dry run changes nothing, not even a probe container: the record only, as
        // before a probe existed.
        Some(host) if image.is_none() => Ok(recorded(engine, host, holders).await?.map_err(|why| {
            format!(
                "{why}, so a dry run cannot tell which GPUs are free (`up` probes them): the daemon would give the first {count} {gpus_word}"
            )
        })),
        Some(host) => match remote_rows(engine, host, image, holders, context).await? {
            Ok(rows) => Ok(Ok(rows)),
            // Never the daemon's own choice, which double-books: refused, saying why.
            Err((why, fix)) => Err(Error::RemoteGpusUnknown {
                host: host.to_string(),
                count,
                why,
                fix,
            }),
        },
        None => {
            if let Err(why) = rows(gpu, &[]) {
                return Ok(Err(format!(
                    "NVML could not be read ({why}), so envctl cannot tell which GPUs are free: the daemon gives the first {count} {gpus_word}"
                )));
            }
            if lock.daemon.is_some() {
                keep_record(engine, host_gpus, context).await;
            }
            let mut rows = rows(gpu, holders).map_err(Error::Internal)?;
            let fatal_xids = fatal_xids_in_force(gate.map(|(gate, _)| gate.policies), context)?;
            if let Ok(devices) = gpu.listed_gpus() {
                mark_kept_out(&mut rows, devices, &fatal_xids, context);
            }
            Ok(Ok(rows))
        }
    }
}

/// The GPUs of another machine's daemon with their holders, for choosing: a probe through
/// the daemon now (`ops::server_gpus`), so the compute processes on each GPU are the
/// server's at this moment, matched to the containers that run them by their cgroups; else
/// its record (the processes then unknown, said). A record that is not believed is
/// refused ([`recorded`]); the inner `Err` says why nothing could be learnt, and the
/// command that helps.
async fn remote_rows(
    engine: &Engine,
    host: &str,
    image: Option<&str>,
    holders: &[crate::facts::occupancy::GpuHolder],
    context: &Context,
) -> Result<Result<Vec<GpuOccupancy>, (String, Option<String>)>, Error> {
    // A forged record is refused before anything is learnt past it.
    recorded(engine, host, holders).await?.ok();
    let held_uuids: Vec<String> = holders
        .iter()
        .filter_map(|holder| match &holder.gpus {
            GpuAssignment::Devices(devices) => Some(devices.iter()),
            _ => None,
        })
        .flatten()
        .filter(|device| device.starts_with("GPU-"))
        .cloned()
        .collect();
    let images: Vec<String> = image.map(str::to_string).into_iter().collect();
    use crate::ops::server_gpus::{Need, learn};
    let learnt = match learn(engine, host, &images, &held_uuids, Need::Processes, context).await {
        Ok(learnt) => learnt,
        Err(error) => return Ok(Err((crate::error::error_chain(&error), error.hint()))),
    };
    for note in &learnt.notes {
        context.printer.warn(note);
    }
    let owners: BTreeMap<u32, String> = learnt
        .probed
        .iter()
        .flat_map(|probed| probed.processes.iter())
        .filter_map(|process| {
            let holder = holders
                .iter()
                .find(|holder| process.cgroup_ids.contains(&holder.id))?;
            Some((process.pid, holder.name.clone()))
        })
        .collect();
    let (mut rows, _) = placement::occupancy_with_owners(&learnt.seen.facts.gpus, holders, &owners);
    for row in &mut rows {
        // What the daemon cannot tell (reserved memory, health) is unknown by nature
        // here, not unreadable: the GPU stays a candidate.
        row.unreadable.clear();
    }
    match &learnt.probed {
        Some(probed) => context.printer.info(&format!(
            "placing on {host}'s GPUs as a probe through its daemon sees them ({} GPUs, {} compute process{})",
            rows.len(),
            probed.processes.len(),
            if probed.processes.len() == 1 { "" } else { "es" }
        )),
        None => context.printer.info(&format!(
            "placing on {host}'s GPUs as its daemon records them ({} GPUs; the processes on them are unknown, only its containers are weighed)",
            rows.len()
        )),
    }
    Ok(Ok(rows))
}

/// The GPUs of another machine's daemon, from the record an `up` on that machine left
/// there ([`keep_record`]), with their holders; the inner `Err` says why there are none
/// (the daemon then chooses), the outer one refuses a record that is not believed: one
/// not in NVML's form, naming a GPU or an index twice, or written for another daemon.
async fn recorded(
    engine: &Engine,
    host: &str,
    holders: &[crate::facts::occupancy::GpuHolder],
) -> Result<Result<Vec<GpuOccupancy>, String>, Error> {
    use crate::engine::daemon_placement::GpuRecordVolume;
    let (record, recorded_on) = match engine.gpu_record().await {
        Ok(GpuRecordVolume::Envctls { record, host, .. }) => (record, host),
        Ok(GpuRecordVolume::Missing) => {
            return Ok(Err(format!(
                "the GPUs of {host} cannot be seen from here and its daemon keeps no GPU record yet (an `envctl up` on {host} that places GPUs writes it)"
            )));
        }
        Ok(GpuRecordVolume::NotEnvctls) => {
            return Ok(Err(format!(
                "the GPUs of {host} cannot be seen from here, and the volume {} there is not envctl's GPU record",
                crate::engine::daemon_placement::RECORD_NAME
            )));
        }
        Err(error) => {
            return Ok(Err(format!(
                "the GPU record of the daemon on {host} could not be read ({})",
                crate::error::error_chain(&error)
            )));
        }
    };
    let believed = placement::GpuRecord::parse(&record).and_then(|record| {
        placement::GpuRecord::tied_to(recorded_on.as_deref(), host).map(|()| record)
    });
    let record =
        believed.map_err(
            |why| crate::container_plan::ownership::OwnershipError::ForgedRecord {
                host: host.to_string(),
                volume: crate::engine::daemon_placement::RECORD_NAME.to_string(),
                why,
                endpoint: engine.endpoint().to_string(),
                cli: engine.known_kind().cli(),
            },
        )?;
    Ok(Ok(record.occupancy(holders)))
}

/// Under the daemon's lock, on the daemon's own machine: the daemon's GPU record made to
/// say NVML's GPUs, for clients on other machines. A record that cannot be kept is said;
/// placement here does not depend on it.
async fn keep_record(engine: &Engine, gpu: &GpuFacts, context: &Context) {
    let Some(record) = gpu.listed_gpus().ok().and_then(placement::GpuRecord::of) else {
        return;
    };
    let written = record.written();
    use crate::engine::daemon_placement::GpuRecordVolume;
    let kept = match engine.gpu_record().await {
        // The same GPUs, with details that are fresh: nothing to write.
        Ok(GpuRecordVolume::Envctls {
            record: kept,
            details,
            ..
        }) if kept == written
            && placement::RecordDetails::parse(&details, &record).is_ok_and(|details| {
                details
                    .stale(&record, crate::ops::server_gpus::now_seconds(context), &[])
                    .is_none()
            }) =>
        {
            return;
        }
        // Someone's own volume of that name: never replaced (said, and left).
        Ok(GpuRecordVolume::NotEnvctls) => {
            context.printer.warn(&format!(
                "the volume {} on this daemon is not envctl's GPU record, so this host's GPUs are not recorded there (clients on other machines leave the choice to the daemon)",
                crate::engine::daemon_placement::RECORD_NAME
            ));
            return;
        }
        Ok(GpuRecordVolume::Envctls { .. } | GpuRecordVolume::Missing) => {
            // An unreadable host name is left out of the record, never guessed.
            let host = crate::host::hostname().ok();
            let details = match gpu.loaded() {
                Some(facts) => placement::RecordDetails::of_nvml(
                    facts,
                    crate::ops::server_gpus::now_seconds(context),
                )
                .labels(),
                None => std::collections::BTreeMap::new(),
            };
            engine
                .write_gpu_record(&written, host.as_deref(), &details)
                .await
        }
        Err(error) => Err(error),
    };
    if let Err(error) = kept {
        context.printer.warn(&format!(
            "could not keep this host's GPUs in the daemon's record (volume {}): {} (clients on other machines then leave the choice to the daemon)",
            crate::engine::daemon_placement::RECORD_NAME,
            crate::error::error_chain(&error)
        ));
    }
}

/// Takes the daemon's placement lock: tries until it is free, breaks one whose holder
/// has kept it past [`daemon_lock_stale`] (never a live holder's), gives up a while after
/// that or at the first termination signal. Waits a random 10 to 50 ms between tries, so that waiters
/// do not retry in step.
async fn take_daemon_lock(
    engine: &Engine,
    locking: &Locking<'_>,
    context: &Context,
) -> Result<String, Error> {
    use crate::engine::daemon_placement::LockTry;
    let holder = lock_holder(context);
    let started = std::time::Instant::now();
    let stale = daemon_lock_stale(engine);
    // Long enough to outlast a dead holder's lock, which is never broken sooner.
    let wait = gpu_lock::WAIT.max(stale + std::time::Duration::from_secs(10));
    let mut said = false;
    // The holder seen last and since when, by this waiter's clock.
    let mut seen: Option<(String, std::time::Instant)> = None;
    loop {
        if let Some(code) = crate::interrupt::received() {
            return Err(lock_interrupted(engine, code));
        }
        match engine
            .try_placement_lock(locking.image, locking.run, &holder)
            .await?
        {
            LockTry::Taken { id } => return Ok(id),
            LockTry::Released => continue,
            LockTry::Held { envctls: false, .. } => return Err(lock_planted(engine)),
            LockTry::Held { id, holder, .. } => {
                // A holder of this host whose process has ended (a killed `up`) holds
                // nothing: taken at once, not after the stale time a holder of another
                // machine gets.
                if let Some(ended) = holder.as_deref().filter(|holder| ended_here(holder)) {
                    context.printer.warn(&format!(
                        "the daemon's GPU placement lock is held by {ended}, a process of this host that has ended: taking it"
                    ));
                    engine.release_placement_lock(&id).await?;
                    seen = None;
                    continue;
                }
                let since = held_since(&mut seen, &id);
                if since.elapsed() >= stale {
                    context.printer.warn(&format!(
                        "the daemon's GPU placement lock has been held by {} for {} s: taking it as left by an `up` that died",
                        holder.as_deref().unwrap_or("an unnamed holder"),
                        since.elapsed().as_secs()
                    ));
                    engine.release_placement_lock(&id).await?;
                    seen = None;
                    continue;
                }
                if started.elapsed() >= wait {
                    return Err(lock_busy(engine, wait, holder.clone()));
                }
                if !said && started.elapsed() >= std::time::Duration::from_secs(1) {
                    said = true;
                    context.printer.info(&format!(
                        "waiting for the daemon's GPU placement lock (held by {}; at most {} s)",
                        holder.as_deref().unwrap_or("another `up`"),
                        wait.as_secs()
                    ));
                }
                let jitter =
                    10 + u64::from(std::process::id() ^ started.elapsed().subsec_nanos()) % 41;
                tokio::time::sleep(std::time::Duration::from_millis(jitter)).await;
            }
        }
    }
}

/// Who takes the daemon's lock, as its record names them: `user@host (pid N)`.
fn lock_holder(context: &Context) -> String {
    format!(
        "{}@{} (pid {})",
        context.user.name,
        crate::host::hostname().unwrap_or_else(|_| "?".into()),
        std::process::id()
    )
}

/// The wait for the daemon's lock ended by the termination signal `code`.
fn lock_interrupted(engine: &Engine, code: u8) -> Error {
    Error::GpuLock {
        hint: "nothing was placed or created".into(),
        source: gpu_lock::GpuLockError::DaemonInterrupted {
            endpoint: engine.endpoint().to_string(),
            code,
        },
    }
}

/// The daemon's lock name is held by something envctl did not make.
fn lock_planted(engine: &Engine) -> Error {
    Error::GpuLock {
        source: gpu_lock::GpuLockError::DaemonPlanted {
            endpoint: engine.endpoint().to_string(),
            name: crate::engine::daemon_placement::LOCK_NAME.to_string(),
        },
        hint: format!(
            "`{cli} inspect {name}` shows whose it is; once it is removed or renamed (by its owner), `up` places again",
            cli = engine.known_kind().cli(),
            name = crate::engine::daemon_placement::LOCK_NAME
        ),
    }
}

/// The daemon's lock stayed held by `holder` for the whole `wait`.
fn lock_busy(engine: &Engine, wait: std::time::Duration, holder: Option<String>) -> Error {
    Error::GpuLock {
        source: gpu_lock::GpuLockError::DaemonBusy {
            endpoint: engine.endpoint().to_string(),
            seconds: wait.as_secs(),
            holder,
        },
        hint: format!(
            "another `up` is placing on that daemon; if none is, remove the lock: `{} rm -f {}`",
            engine.known_kind().cli(),
            crate::engine::daemon_placement::LOCK_NAME
        ),
    }
}

/// Since when the lock `id` has been seen held, by this waiter's clock: from the `seen`
/// record where it is the same lock, else from now (and `seen` then names it).
fn held_since(seen: &mut Option<(String, std::time::Instant)>, id: &str) -> std::time::Instant {
    match seen {
        Some((known, since)) if *known == id => *since,
        _ => {
            let now = std::time::Instant::now();
            *seen = Some((id.to_string(), now));
            now
        }
    }
}

/// Whether `holder` (`user@host (pid N)`, as [`take_daemon_lock`] writes it) names a
/// process of this host that no longer exists. Only for this host's name: a holder's pid
/// on another machine says nothing here.
fn ended_here(holder: &str) -> bool {
    let Some((_, at)) = holder.split_once('@') else {
        return false;
    };
    let Some((host, pid)) = at.split_once(" (pid ") else {
        return false;
    };
    let Some(pid) = pid
        .strip_suffix(')')
        .and_then(|pid| pid.parse::<u32>().ok())
    else {
        return false;
    };
    crate::host::hostname().is_ok_and(|here| here == host)
        && pid != std::process::id()
        && crate::host::process::has_ended(pid)
}

/// Releases the daemon lock `id`; one that cannot be released is said (others break it
/// after [`daemon_lock_stale`]).
pub async fn release_daemon_lock(engine: &Engine, id: &str, context: &Context) {
    if let Err(error) = engine.release_placement_lock(id).await {
        context.printer.warn(&format!(
            "could not release the daemon's GPU placement lock: {} (other `up`s take it in {} s; `{} rm -f {}`)",
            crate::error::error_chain(&error),
            daemon_lock_stale(engine).as_secs(),
            engine.known_kind().cli(),
            crate::engine::daemon_placement::LOCK_NAME
        ));
    }
}

/// Releases what [`place`] took, once the container exists.
pub async fn release(engine: &Engine, held: Held, context: &Context) {
    if let Some(id) = &held.daemon {
        release_daemon_lock(engine, id, context).await;
    }
    drop(held.file);
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
/// that created a container on them meanwhile (outside envctl's lock), or an `up` that
/// placed while this one's create was slow, is named; of two `up`s that chose alike, the
/// one whose create ends second sees the other. On another machine's daemon, the GPUs
/// are its record's, as placement read them.
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
    let chosen: Vec<u32> = report.gpus.iter().map(|gpu| gpu.index).collect();
    let others = others_than(engine, id, context).await?;
    let shared: Vec<String> = if let Some(nvml) = gpu.loaded() {
        placement::shared_with(&nvml.gpus, &others, &chosen)
    } else if let Some(host) = elsewhere(gpu) {
        match recorded(engine, host, &others).await? {
            Ok(rows) => rows
                .iter()
                .filter(|row| chosen.contains(&row.index) && !row.free)
                .map(GpuOccupancy::held_by)
                .collect(),
            // Placed by the record a moment ago, gone now: nothing to compare with.
            Err(why) => {
                context.printer.warn(&format!(
                    "could not look again at the GPUs placement chose: {why}"
                ));
                Vec::new()
            }
        }
    } else {
        return Ok(());
    };
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

#[cfg(test)]
mod tests {
    use super::ended_here;

    /// A daemon lock left by a killed `up` of this host is taken at once; a live holder's,
    /// another machine's or a name that is not envctl's form never.
    #[test]
    fn a_holder_of_this_host_that_ended_is_told_apart() {
        let here = crate::host::hostname().unwrap();
        // Above the kernel's largest pid (4194304): no such process.
        assert!(ended_here(&format!("root@{here} (pid 4294967290)")));
        assert!(!ended_here(&format!("root@{here} (pid 1)")));
        assert!(!ended_here(&format!(
            "root@{here} (pid {})",
            std::process::id()
        )));
        assert!(!ended_here("root@another-machine (pid 4294967290)"));
        assert!(!ended_here("garbage"));
        assert!(!ended_here(&format!("root@{here} (pid x)")));
    }
}
