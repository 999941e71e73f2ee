//! GPU placement on a shared host: which GPUs each container holds (occupancy), and which
//! N GPUs a `gpus = N` profile gets. Pure: the GPUs come from NVML's facts and the holders
//! from the engine (`facts::occupancy`).
//!
//! Docker alone turns `--gpus 2` into "the first two GPUs" every time (moby: `Count > 0`
//! takes the first N indexes, and the NVIDIA runtime does the same), so every container
//! of a team lands on GPUs 0 and 1. Placement picks GPUs that no container holds, the
//! least used first, and pins them by UUID (`DeviceIDs`), which stays true when GPUs are
//! renumbered.
//!
//! A holder's request is resolved the way the daemon resolves it: `all` is every GPU, a
//! count N the first N indexes, an index or a `GPU-…` UUID that GPU. A `MIG-…` instance
//! belongs to a GPU that this view cannot name, so it is reported as unmapped rather
//! than guessed.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::container::GpuAssignment;
use crate::facts::gpu::GpuDevice;
use crate::facts::gpu::{
    CudaDriverVersion, Fact, FailureKind, NvmlFacts, NvmlFailure, SeenBy, SeenOnServer,
};
use crate::facts::occupancy::GpuHolder;
use crate::facts::smi::ServerGpus;
use crate::facts::versions::ComputeCapability;

/// One GPU and who holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuOccupancy {
    pub index: u32,
    /// `None` when NVML could not read it (then the GPU cannot be pinned).
    pub uuid: Option<String>,
    /// Containers whose request resolves to this GPU, by name.
    pub holders: Vec<HolderName>,
    /// Compute processes NVML sees on it, each with the container it runs in where that
    /// is known; `None` when NVML could not list them.
    pub processes: Option<Vec<OccupyingProcess>>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    /// No container holds it.
    pub free: bool,
    /// Free, yet in use: compute processes of no container that holds it (another user's
    /// script on the host), or more than [`BUSY_MEMORY_BYTES`] of its memory. Placement
    /// takes such a GPU only when no idle one is left, and says so; `placement = "idle"`
    /// never does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<String>,
    /// What NVML could not read about it, which keeps it out of placement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    /// Why its health keeps it out of placement, with how to clear it
    /// (`checks::health::keep_out`): NVML says it failed, or a fatal Xid was recorded on
    /// it and not cleared since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_out: Option<String>,
}

impl GpuOccupancy {
    /// `GPU 0: train (running, alice), bob-eval (created)`: who holds it and, for envctl's
    /// containers, whose they are (the owner to ask), for messages.
    pub fn held_by(&self) -> String {
        let names: Vec<String> = self
            .holders
            .iter()
            .map(|holder| match &holder.user {
                Some(user) => format!("{} ({}, {user})", holder.name, holder.state),
                None => format!("{} ({})", holder.name, holder.state),
            })
            .collect();
        format!("GPU {}: {}", self.index, names.join(", "))
    }
}

/// GPU memory in use above which a GPU no container holds is busy: the driver's own use
/// of an idle GPU stays well under it, a framework's context (~300–500 MiB) too.
pub const BUSY_MEMORY_BYTES: u64 = 1 << 30;

/// Why a GPU that no container holds is in use anyway: its processes (PID, container,
/// memory) or its memory; `None` when it is idle, or what NVML could not read says
/// nothing (unread facts keep it out of placement on their own).
fn busy_reason(processes: Option<&[OccupyingProcess]>, memory_used: Option<u64>) -> Option<String> {
    let gib = |bytes: u64| format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30));
    if let Some(processes) = processes.filter(|processes| !processes.is_empty()) {
        let named: Vec<String> = processes
            .iter()
            .map(|process| {
                let mut said = format!("PID {}", process.pid);
                if let Some(user) = &process.user {
                    said.push_str(&format!(" of {user}"));
                }
                match &process.container {
                    Some(container) => said.push_str(&format!(" in {container}")),
                    None => said.push_str(" in no container"),
                }
                if let Some(bytes) = process.used_memory_bytes {
                    said.push_str(&format!(", {}", gib(bytes)));
                }
                said
            })
            .collect();
        return Some(format!(
            "{} compute process{} that no container holding it runs: {}",
            processes.len(),
            if processes.len() == 1 { "" } else { "es" },
            named.join("; ")
        ));
    }
    match memory_used {
        Some(used) if used > BUSY_MEMORY_BYTES => Some(format!(
            "{} of its memory is in use by no container holding it",
            gib(used)
        )),
        _ => None,
    }
}

/// A compute process on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OccupyingProcess {
    pub pid: u32,
    pub used_memory_bytes: Option<u64>,
    /// The running container whose cgroup the process is in; `None` when it is in none
    /// the engine lists as running (the host's own, another engine's, or one that ended).
    pub container: Option<String>,
    /// Who runs it (the login name of its real uid, or the number), where `/proc` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// A holder as occupancy names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HolderName {
    pub name: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// Every GPU of `gpus` with its holders, in index order, and the device names of
/// holders that match no GPU here (a `MIG-…` instance, a UUID of another host).
pub fn occupancy(gpus: &[GpuDevice], holders: &[GpuHolder]) -> (Vec<GpuOccupancy>, Vec<String>) {
    occupancy_with_owners(gpus, holders, &BTreeMap::new())
}

/// [`occupancy`], naming the container of each process found in `owners` (PID → name).
pub fn occupancy_with_owners(
    gpus: &[GpuDevice],
    holders: &[GpuHolder],
    owners: &BTreeMap<u32, String>,
) -> (Vec<GpuOccupancy>, Vec<String>) {
    occupancy_with_processes(gpus, holders, owners, &BTreeMap::new())
}

/// [`occupancy_with_owners`], naming the user of each process found in `users` (PID →
/// name).
pub fn occupancy_with_processes(
    gpus: &[GpuDevice],
    holders: &[GpuHolder],
    owners: &BTreeMap<u32, String>,
    users: &BTreeMap<u32, String>,
) -> (Vec<GpuOccupancy>, Vec<String>) {
    let mut indexes: Vec<u32> = gpus.iter().map(|gpu| gpu.index).collect();
    indexes.sort_unstable();
    let mut unmapped = Vec::new();
    let mut held: Vec<(u32, &GpuHolder)> = Vec::new();
    for holder in holders {
        let (on, missing) = resolve(&holder.gpus, gpus, &indexes);
        held.extend(on.into_iter().map(|index| (index, holder)));
        unmapped.extend(
            missing
                .into_iter()
                .map(|name| format!("{name} ({})", holder.name)),
        );
    }
    let mut rows: Vec<GpuOccupancy> = gpus
        .iter()
        .map(|gpu| {
            let holders: Vec<HolderName> = held
                .iter()
                .filter(|(index, _)| *index == gpu.index)
                .map(|(_, holder)| HolderName {
                    name: holder.name.clone(),
                    state: holder.state.clone(),
                    profile: holder.profile.clone(),
                    user: holder.user.clone(),
                })
                .collect();
            let mut unreadable = Vec::new();
            let mut note = |what: &str, failure: Option<&crate::facts::gpu::NvmlFailure>| {
                if let Some(failure) = failure {
                    unreadable.push(format!("{what}: {}", failure.message));
                }
            };
            note("uuid", gpu.uuid.failure());
            note("memory", gpu.memory.failure());
            note("processes", gpu.processes.failure());
            let processes: Option<Vec<OccupyingProcess>> = gpu.processes.value().map(|processes| {
                processes
                    .iter()
                    .map(|process| OccupyingProcess {
                        pid: process.pid,
                        used_memory_bytes: process.used_memory_bytes,
                        container: owners.get(&process.pid).cloned(),
                        user: users.get(&process.pid).cloned(),
                    })
                    .collect()
            });
            let memory_used_bytes = gpu.memory.value().map(|memory| memory.used_bytes);
            let free = holders.is_empty();
            GpuOccupancy {
                index: gpu.index,
                uuid: gpu.uuid.value().cloned(),
                free,
                busy: if free {
                    busy_reason(processes.as_deref(), memory_used_bytes)
                } else {
                    None
                },
                holders,
                processes,
                memory_used_bytes,
                memory_total_bytes: gpu.memory.value().map(|memory| memory.total_bytes),
                unreadable,
                kept_out: None,
            }
        })
        .collect();
    rows.sort_by_key(|row| row.index);
    (rows, unmapped)
}

/// The indexes a request takes on a host whose GPUs are `gpus` (sorted `indexes`), and
/// the names in it that match none of them.
fn resolve(
    request: &GpuAssignment,
    gpus: &[GpuDevice],
    indexes: &[u32],
) -> (Vec<u32>, Vec<String>) {
    match request {
        GpuAssignment::All => (indexes.to_vec(), Vec::new()),
        GpuAssignment::Count(count) if *count < 0 => (indexes.to_vec(), Vec::new()),
        GpuAssignment::Count(count) => (
            indexes
                .iter()
                .take(usize::try_from(*count).unwrap_or(usize::MAX))
                .copied()
                .collect(),
            Vec::new(),
        ),
        GpuAssignment::Devices(names) => {
            let (on, missing) = matched(
                names
                    .iter()
                    .filter(|name| *name != "all")
                    .map(|name| (name.clone(), device(name, gpus, indexes))),
            );
            // `all` among the names takes every GPU; the others are still checked.
            if names.iter().any(|name| name == "all") {
                (indexes.to_vec(), missing)
            } else {
                (on, missing)
            }
        }
        // A node names its GPU by minor number; one NVML cannot match (or whose minor
        // it could not read) is listed as unmapped, never guessed.
        GpuAssignment::Nodes(minors) => matched(minors.iter().map(|minor| {
            let index = gpus
                .iter()
                .find(|gpu| gpu.minor_number.value() == Some(minor))
                .map(|gpu| gpu.index);
            (
                format!("{}{minor}", crate::facts::container::NVIDIA_NODE_PREFIX),
                index,
            )
        })),
    }
}

/// Whether `text` has the shape of an NVML GPU UUID: `GPU-` and 8-4-4-4-12 hex digits.
pub fn is_gpu_uuid(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("GPU-") else {
        return false;
    };
    let groups: Vec<&str> = rest.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, length)| {
            group.len() == length && group.bytes().all(|byte| byte.is_ascii_hexdigit())
        })
}

/// The GPU an index or a `GPU-…` UUID names, by index; `None` when none here has it.
fn device(name: &str, gpus: &[GpuDevice], indexes: &[u32]) -> Option<u32> {
    match name.parse::<u32>() {
        Ok(index) => indexes.contains(&index).then_some(index),
        Err(_) => gpus
            .iter()
            .find(|gpu| {
                gpu.uuid
                    .value()
                    .is_some_and(|uuid| uuid.eq_ignore_ascii_case(name))
            })
            .map(|gpu| gpu.index),
    }
}

/// Names paired with the GPU each names: the indexes found (sorted, each once) and the
/// names that found none.
fn matched(names: impl Iterator<Item = (String, Option<u32>)>) -> (Vec<u32>, Vec<String>) {
    let mut on = Vec::new();
    let mut missing = Vec::new();
    for (name, index) in names {
        match index {
            Some(index) => on.push(index),
            None => missing.push(name),
        }
    }
    on.sort_unstable();
    on.dedup();
    (on, missing)
}

/// The GPUs of `gpus` that `request` takes, by index.
pub fn indexes_of(request: &GpuAssignment, gpus: &[GpuDevice]) -> Vec<u32> {
    let mut indexes: Vec<u32> = gpus.iter().map(|gpu| gpu.index).collect();
    indexes.sort_unstable();
    resolve(request, gpus, &indexes).0
}

/// Which of the GPUs `wanted` (indexes) `holders` hold, one `GPU 3: NAME (state)` line
/// each: the GPUs a container would share with them.
pub fn shared_with(gpus: &[GpuDevice], holders: &[GpuHolder], wanted: &[u32]) -> Vec<String> {
    occupancy(gpus, holders)
        .0
        .iter()
        .filter(|row| wanted.contains(&row.index) && !row.free)
        .map(GpuOccupancy::held_by)
        .collect()
}

/// How many GPUs `holders` hold between them: on this host's `gpus` (NVML's), the GPUs
/// their requests resolve to, each counted once; without them, a count or a list by its
/// length. `Err` says why it cannot be told (`all` where NVML cannot say how many).
pub fn gpus_held(gpus: Option<&[GpuDevice]>, holders: &[GpuHolder]) -> Result<u32, String> {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if let Some(gpus) = gpus {
        let (rows, _) = occupancy(gpus, holders);
        return Ok(count(rows.iter().filter(|row| !row.free).count()));
    }
    let mut held = 0_u32;
    for holder in holders {
        held = held.saturating_add(match &holder.gpus {
            GpuAssignment::Count(n) if *n >= 0 => u32::try_from(*n).unwrap_or(u32::MAX),
            GpuAssignment::Devices(devices) if !devices.iter().any(|name| name == "all") => {
                count(devices.len())
            }
            GpuAssignment::Nodes(minors) => count(minors.len()),
            _ => {
                return Err(format!(
                    "`{}` holds all GPUs, and NVML cannot say how many this host has",
                    holder.name
                ));
            }
        });
    }
    Ok(held)
}

/// The GPUs placement picked for a count, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// `(index, uuid)`, in index order.
    pub gpus: Vec<ChosenGpu>,
    /// For people: `GPUs 2 and 5: no container holds them, least used of 6 free`.
    pub reason: String,
    /// GPUs left out because NVML could not read them, with what failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChosenGpu {
    pub index: u32,
    pub uuid: String,
}

/// Why no placement was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRoom {
    pub wanted: u32,
    /// Free GPUs that could be pinned.
    pub free: Vec<u32>,
    /// `GPU 0: alice-pytorch (running)` for each held GPU.
    pub held: Vec<String>,
    pub skipped: Vec<String>,
}

impl std::fmt::Display for NoRoom {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} GPU{} asked for, {} free",
            self.wanted,
            if self.wanted == 1 { "" } else { "s" },
            self.free.len()
        )
    }
}

/// Picks `count` GPUs no container holds: idle ones before busy ones, then the least used
/// (GPU memory in use, then compute processes), ties broken by index. A GPU kept out for
/// its health ([`GpuOccupancy::kept_out`]) is never picked, and said. A GPU whose UUID,
/// memory or processes NVML could not read is never picked, and [`Choice::skipped`] says
/// so; a busy one is picked only when no idle one is left (and then said in `skipped`),
/// never with `idle_only`.
pub fn choose(count: u32, rows: &[GpuOccupancy], idle_only: bool) -> Result<Choice, NoRoom> {
    let skipped: Vec<String> = rows
        .iter()
        .filter(|row| row.free && !row.unreadable.is_empty())
        .map(|row| {
            format!(
                "GPU {}: NVML could not read its {}",
                row.index,
                row.unreadable.join("; ")
            )
        })
        .collect();
    let mut skipped = skipped;
    // A GPU that failed is never given, free or not, and said with how to clear it.
    skipped.extend(
        rows.iter()
            .filter(|row| row.unreadable.is_empty())
            .filter_map(|row| row.kept_out.clone()),
    );
    let mut free: Vec<&GpuOccupancy> = rows
        .iter()
        .filter(|row| row.free && row.unreadable.is_empty() && row.uuid.is_some())
        .filter(|row| row.kept_out.is_none())
        .filter(|row| !idle_only || row.busy.is_none())
        .collect();
    if idle_only {
        skipped.extend(rows.iter().filter_map(|row| {
            let busy = row.busy.as_ref()?;
            Some(format!(
                "GPU {} is busy (`placement = \"idle\"`): {busy}",
                row.index
            ))
        }));
    }
    free.sort_by_key(|row| {
        (
            row.busy.is_some(),
            row.memory_used_bytes.unwrap_or(u64::MAX),
            row.processes.as_ref().map_or(usize::MAX, Vec::len),
            row.index,
        )
    });
    let wanted = usize::try_from(count).unwrap_or(usize::MAX);
    if free.len() < wanted {
        return Err(NoRoom {
            wanted: count,
            free: free.iter().map(|row| row.index).collect(),
            held: rows
                .iter()
                .filter(|row| !row.free)
                .map(GpuOccupancy::held_by)
                .collect(),
            skipped,
        });
    }
    let free_count = free.len();
    // A busy GPU that had to be taken is said: it is shared with whatever runs there.
    skipped.extend(free.iter().take(wanted).filter_map(|row| {
        let busy = row.busy.as_ref()?;
        Some(format!(
            "GPU {} is busy but no idle GPU is left, so it is shared: {busy}",
            row.index
        ))
    }));
    // Every free row has a UUID (rows without one were left out above).
    let mut gpus: Vec<ChosenGpu> = free
        .into_iter()
        .filter_map(|row| {
            Some(ChosenGpu {
                index: row.index,
                uuid: row.uuid.clone()?,
            })
        })
        .take(wanted)
        .collect();
    gpus.sort_by_key(|gpu| gpu.index);
    let reason = format!(
        "{} {}: no container holds {}; the least used of {free_count} free (GPU memory in use, then processes, then index)",
        if gpus.len() == 1 { "GPU" } else { "GPUs" },
        list(
            &gpus
                .iter()
                .map(|gpu| gpu.index.to_string())
                .collect::<Vec<_>>()
        ),
        if gpus.len() == 1 { "it" } else { "them" },
    );
    Ok(Choice {
        gpus,
        reason,
        skipped,
    })
}

/// A stored GPU request as `ps` shows it (`all`, `2`, `0,1`, `GPU-…`), with each UUID
/// of a GPU here replaced by its index: a placed container names its GPUs by UUID.
pub fn by_index(shown: &str, gpus: &[GpuDevice]) -> String {
    shown
        .split(',')
        .map(|name| {
            gpus.iter()
                .find(|gpu| {
                    gpu.uuid
                        .value()
                        .is_some_and(|uuid| uuid.eq_ignore_ascii_case(name))
                })
                .map_or_else(|| name.to_string(), |gpu| gpu.index.to_string())
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `0`, `0 and 1`, `0, 1 and 5`.
pub fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A host's GPUs as a daemon keeps them for clients on other machines
/// (`engine::daemon_placement`): each GPU's index and UUID, written as `0=GPU-…,1=GPU-…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRecord {
    pub gpus: Vec<(u32, String)>,
}

impl GpuRecord {
    /// The record of NVML's GPUs; `None` when a UUID could not be read (a record that
    /// leaves a GPU out would have it taken as absent).
    pub fn of(gpus: &[GpuDevice]) -> Option<GpuRecord> {
        let gpus = gpus
            .iter()
            .map(|gpu| Some((gpu.index, gpu.uuid.value()?.clone())))
            .collect::<Option<Vec<_>>>()?;
        (!gpus.is_empty()).then_some(GpuRecord { gpus })
    }

    /// The label's text.
    pub fn written(&self) -> String {
        self.gpus
            .iter()
            .map(|(index, uuid)| format!("{index}={uuid}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads the label's text, believing nothing of it: an entry that is not
    /// `INDEX=GPU-UUID` (NVML's shape, `GPU-` and 8-4-4-4-12 hex digits), an index named
    /// twice or a UUID named twice is named. A record listing one GPU under eight indexes
    /// would otherwise have three 2-GPU containers placed on one GPU.
    pub fn parse(text: &str) -> Result<GpuRecord, String> {
        let mut gpus: Vec<(u32, String)> = Vec::new();
        let shown = |entry: &str| format!("{:?}", entry.chars().take(80).collect::<String>());
        for entry in text.split(',') {
            let Some((index, uuid)) = entry.split_once('=').and_then(|(index, uuid)| {
                Some((index.trim().parse::<u32>().ok()?, uuid.trim().to_string()))
            }) else {
                return Err(format!("{} is not `INDEX=GPU-UUID`", shown(entry)));
            };
            if !is_gpu_uuid(&uuid) {
                return Err(format!(
                    "{} is not a GPU UUID as NVML gives them (`GPU-` and 32 hex digits, 8-4-4-4-12)",
                    shown(&uuid)
                ));
            }
            if gpus.iter().any(|(known, _)| *known == index) {
                return Err(format!("it names GPU index {index} twice"));
            }
            if let Some((first, _)) = gpus
                .iter()
                .find(|(_, known)| known.eq_ignore_ascii_case(&uuid))
            {
                return Err(format!(
                    "it gives GPUs {first} and {index} the same UUID {}",
                    shown(&uuid)
                ));
            }
            gpus.push((index, uuid));
        }
        gpus.sort_unstable();
        Ok(GpuRecord { gpus })
    }

    /// Whether the record was written for the daemon it was read from: the host it names
    /// (`recorded_on`) must be the daemon's own name (`/info`'s `Name`). A record copied
    /// from another daemon, or one naming no host, describes GPUs this daemon may not have.
    pub fn tied_to(recorded_on: Option<&str>, daemon: &str) -> Result<(), String> {
        match recorded_on {
            Some(host) if host == daemon => Ok(()),
            Some(host) => Err(format!(
                "it was written on {:?}, but the daemon's host is {daemon:?}",
                host.chars().take(80).collect::<String>()
            )),
            None => Err("it names no host it was written on".into()),
        }
    }
    /// The GPUs of the record with their `holders`, for [`choose`]: what is in use on a
    /// GPU of another machine (memory, processes) cannot be read from here, so placement
    /// weighs the containers that hold each GPU only.
    pub fn occupancy(&self, holders: &[GpuHolder]) -> Vec<GpuOccupancy> {
        fn unseen<T>() -> crate::facts::gpu::Fact<T> {
            crate::facts::gpu::Fact::Error(crate::facts::gpu::NvmlFailure::new(
                crate::facts::gpu::FailureKind::Other,
                "a GPU of another machine",
            ))
        }
        let devices: Vec<GpuDevice> = self
            .gpus
            .iter()
            .map(|(index, uuid)| GpuDevice {
                index: *index,
                name: unseen(),
                uuid: crate::facts::gpu::Fact::Value(uuid.clone()),
                pci_bus_id: unseen(),
                compute_capability: unseen(),
                memory: unseen(),
                mig_mode: unseen(),
                power_limit_watts: unseen(),
                processes: unseen(),
                minor_number: unseen(),
                health: Default::default(),
            })
            .collect();
        let (mut rows, _) = occupancy(&devices, holders);
        for row in &mut rows {
            // Unknown by nature here, not unreadable: the GPU stays a candidate.
            row.unreadable.clear();
        }
        rows
    }
}

/// How long the facts of a daemon's GPU record are believed before a client learns them
/// again: an hour. What it keeps (GPUs, models, driver, CUDA) changes with a driver
/// upgrade or a GPU swap, both of which restart the server, so an hour bounds how long a
/// changed server is misjudged while a team running doctor all day pays one probe an
/// hour per server. A record whose GPUs no longer match what the daemon's containers hold
/// is learnt again at once ([`RecordDetails::stale`]).
pub const RECORD_FRESH_SECONDS: i64 = 3600;

/// One GPU's model as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedModel {
    pub name: Option<String>,
    pub compute_capability: Option<ComputeCapability>,
    pub memory_total_mib: Option<u64>,
}

/// What the record keeps beside its GPUs' indexes and UUIDs (labels `envctl.gpu-record.*`
/// of the volume, by suffix): `driver`, `cuda`, `taken` (Unix seconds), `by` (`probe` or
/// `nvml`), and `gpu.N` = `CC;MIB;NAME` per GPU. A record written before these were kept
/// has none of them, and is read all the same.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordDetails {
    pub driver: Option<String>,
    pub cuda: Option<CudaDriverVersion>,
    pub models: BTreeMap<u32, RecordedModel>,
    pub taken_at: Option<i64>,
    pub by: Option<SeenBy>,
}

/// Outside text kept in a label or read from one: printable, at most 128 characters.
fn label_text(text: &str) -> String {
    text.trim()
        .chars()
        .filter(|character| !character.is_control())
        .take(128)
        .collect()
}

impl RecordDetails {
    /// The labels' suffixes and values.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        if let Some(driver) = &self.driver {
            labels.insert("driver".to_string(), label_text(driver));
        }
        if let Some(cuda) = self.cuda {
            labels.insert("cuda".to_string(), cuda.to_string());
        }
        if let Some(taken_at) = self.taken_at {
            labels.insert("taken".to_string(), taken_at.to_string());
        }
        if let Some(by) = self.by {
            labels.insert("by".to_string(), by.as_str().to_string());
        }
        for (index, model) in &self.models {
            let cc = model
                .compute_capability
                .map_or_else(String::new, |cc| format!("{}.{}", cc.major, cc.minor));
            let mib = model
                .memory_total_mib
                .map_or_else(String::new, |mib| mib.to_string());
            let name = model.name.as_deref().map(label_text).unwrap_or_default();
            labels.insert(format!("gpu.{index}"), format!("{cc};{mib};{name}"));
        }
        labels
    }

    /// Reads the labels (by suffix), believing nothing: a value that does not read is
    /// named, and a model of a GPU the record does not list is refused.
    pub fn parse(labels: &BTreeMap<String, String>, record: &GpuRecord) -> Result<Self, String> {
        let shown = |text: &str| format!("{:?}", text.chars().take(80).collect::<String>());
        let mut details = RecordDetails::default();
        for (key, value) in labels {
            match key.as_str() {
                "driver" => {
                    if value.is_empty() || !value.chars().all(|c| c.is_ascii_digit() || c == '.') {
                        return Err(format!(
                            "its driver {} is not a driver version",
                            shown(value)
                        ));
                    }
                    details.driver = Some(value.clone());
                }
                "cuda" => {
                    details.cuda =
                        Some(value.parse().map_err(|_| {
                            format!("its CUDA version {} is not one", shown(value))
                        })?);
                }
                "taken" => {
                    details.taken_at = Some(value.parse().map_err(|_| {
                        format!("its time {} is not a number of seconds", shown(value))
                    })?);
                }
                "by" => {
                    details.by = Some(match value.as_str() {
                        "probe" => SeenBy::Probe,
                        "nvml" => SeenBy::Nvml,
                        _ => {
                            return Err(format!(
                                "its source {} is not probe or nvml",
                                shown(value)
                            ));
                        }
                    });
                }
                other => {
                    let Some(index) = other.strip_prefix("gpu.") else {
                        continue;
                    };
                    let index: u32 = index
                        .parse()
                        .map_err(|_| format!("{} names no GPU index", shown(other)))?;
                    if !record.gpus.iter().any(|(known, _)| *known == index) {
                        return Err(format!("it describes GPU {index}, which it does not list"));
                    }
                    let mut parts = value.splitn(3, ';');
                    let (cc, mib, name) = (
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default(),
                    );
                    let model = RecordedModel {
                        compute_capability: (!cc.is_empty())
                            .then(|| cc.parse::<ComputeCapability>())
                            .transpose()
                            .map_err(|_| {
                                format!("GPU {index}'s compute capability {} is not one", shown(cc))
                            })?,
                        memory_total_mib: (!mib.is_empty())
                            .then(|| mib.parse::<u64>())
                            .transpose()
                            .map_err(|_| {
                                format!("GPU {index}'s memory {} is not a number", shown(mib))
                            })?,
                        name: (!name.is_empty()).then(|| label_text(name)),
                    };
                    details.models.insert(index, model);
                }
            }
        }
        Ok(details)
    }

    /// Why the record must be learnt again at `now` (Unix seconds), if it must: it keeps
    /// no time or driver (written before envctl kept them), it is older than
    /// [`RECORD_FRESH_SECONDS`], its time is in the future (a clock or a forgery), or a
    /// container holds a GPU UUID it does not list (`held_uuids`: the GPUs changed).
    pub fn stale(&self, record: &GpuRecord, now: i64, held_uuids: &[String]) -> Option<String> {
        let Some(taken_at) = self.taken_at else {
            return Some("it keeps no time (written before envctl kept one)".into());
        };
        if self.driver.is_none() {
            return Some("it keeps no driver version".into());
        }
        let age = now - taken_at;
        if age < -60 {
            return Some(format!("it says it was written {} s from now", -age));
        }
        if age > RECORD_FRESH_SECONDS {
            return Some(format!("it is {} min old", age / 60));
        }
        held_uuids
            .iter()
            .find(|uuid| {
                !record
                    .gpus
                    .iter()
                    .any(|(_, known)| known.eq_ignore_ascii_case(uuid))
            })
            .map(|uuid| {
                format!("a container holds {uuid}, which it does not list (the GPUs changed)")
            })
    }

    /// The details of NVML's facts on the daemon's own machine, at `now`.
    pub fn of_nvml(facts: &crate::facts::gpu::NvmlFacts, now: i64) -> Self {
        RecordDetails {
            driver: facts.driver_version.value().cloned(),
            cuda: facts.cuda_driver_version.value().copied(),
            models: facts
                .gpus
                .iter()
                .map(|gpu| {
                    (
                        gpu.index,
                        RecordedModel {
                            name: gpu.name.value().cloned(),
                            compute_capability: gpu.compute_capability.value().copied(),
                            memory_total_mib: gpu
                                .memory
                                .value()
                                .map(|memory| memory.total_bytes >> 20),
                        },
                    )
                })
                .collect(),
            taken_at: Some(now),
            by: Some(SeenBy::Nvml),
        }
    }
}

/// The record and its details of what a probe learnt at `now`; `None` when a UUID is not
/// NVML's shape (a record must never be written from a doubtful answer).
pub fn record_of_probe(gpus: &ServerGpus, now: i64) -> Option<(GpuRecord, RecordDetails)> {
    if gpus.gpus.is_empty() || !gpus.gpus.iter().all(|gpu| is_gpu_uuid(&gpu.uuid)) {
        return None;
    }
    let record = GpuRecord {
        gpus: gpus
            .gpus
            .iter()
            .map(|gpu| (gpu.index, gpu.uuid.clone()))
            .collect(),
    };
    let details = RecordDetails {
        driver: gpus.driver.clone(),
        cuda: gpus.cuda,
        models: gpus
            .gpus
            .iter()
            .map(|gpu| {
                (
                    gpu.index,
                    RecordedModel {
                        name: gpu.name.clone(),
                        compute_capability: gpu.compute_capability,
                        memory_total_mib: gpu.memory_total_mib,
                    },
                )
            })
            .collect(),
        taken_at: Some(now),
        by: Some(SeenBy::Probe),
    };
    Some((record, details))
}

/// The record's GPUs as doctor judges them (NVML's shape): what it does not keep is unknown.
pub fn seen_from_record(record: &GpuRecord, details: &RecordDetails) -> SeenOnServer {
    let unknown = |what: &str| {
        NvmlFailure::new(
            FailureKind::Other,
            format!("the daemon's GPU record does not keep {what}"),
        )
    };
    let gpus = record
        .gpus
        .iter()
        .map(|(index, uuid)| {
            let model = details.models.get(index);
            GpuDevice {
                index: *index,
                name: match model.and_then(|model| model.name.clone()) {
                    Some(name) => Fact::Value(name),
                    None => Fact::Error(unknown("its name")),
                },
                uuid: Fact::Value(uuid.clone()),
                pci_bus_id: Fact::Error(unknown("the PCI bus id")),
                compute_capability: match model.and_then(|model| model.compute_capability) {
                    Some(cc) => Fact::Value(cc),
                    None => Fact::Error(unknown("the compute capability")),
                },
                memory: Fact::Error(unknown("memory in use")),
                mig_mode: Fact::Error(unknown("the MIG mode")),
                power_limit_watts: Fact::Error(unknown("the power limit")),
                processes: Fact::Error(unknown("processes")),
                minor_number: Fact::Error(unknown("the device minor number")),
                health: crate::facts::gpu::GpuHealth::all_failing(unknown("the GPU's health")),
            }
        })
        .collect::<Vec<_>>();
    SeenOnServer {
        facts: NvmlFacts {
            driver_version: match &details.driver {
                Some(driver) => Fact::Value(driver.clone()),
                None => Fact::Error(unknown("the driver version")),
            },
            cuda_driver_version: match details.cuda {
                Some(cuda) => Fact::Value(cuda),
                None => Fact::Error(unknown("the CUDA version")),
            },
            nvml_version: Fact::Error(unknown("the NVML version")),
            device_count: Fact::Value(u32::try_from(gpus.len()).unwrap_or(u32::MAX)),
            gpus,
            shutdown_failure: None,
        },
        // Before envctl kept its source, only NVML on the server wrote a record.
        by: details.by.unwrap_or(SeenBy::Nvml),
        taken_at: details.taken_at,
        from_record: true,
    }
}

/// What a probe learnt, as doctor judges it.
pub fn seen_from_probe(gpus: &ServerGpus, now: i64) -> SeenOnServer {
    SeenOnServer {
        facts: gpus.nvml_facts(),
        by: SeenBy::Probe,
        taken_at: Some(now),
        from_record: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu::{Fact, FailureKind, GpuMemory, NvmlFailure};
    use crate::facts::gpu_sample::GpuProcess;

    fn gpu(index: u32, used_mib: u64, processes: usize) -> GpuDevice {
        GpuDevice {
            index,
            name: Fact::Value("NVIDIA H100 80GB HBM3".into()),
            uuid: Fact::Value(format!("GPU-{index}0000000-0000-0000-0000-000000000000")),
            pci_bus_id: Fact::Value(String::new()),
            compute_capability: Fact::Value("9.0".parse().unwrap()),
            memory: Fact::Value(GpuMemory {
                total_bytes: 80 << 30,
                used_bytes: used_mib << 20,
                reserved_bytes: 0,
                free_bytes: (80 << 30) - (used_mib << 20),
            }),
            mig_mode: Fact::Error(NvmlFailure::new(FailureKind::NotSupported, "no")),
            power_limit_watts: Fact::Value(700.0),
            processes: Fact::Value(
                (0..processes)
                    .map(|pid| GpuProcess {
                        pid: 100 + u32::try_from(pid).unwrap(),
                        used_memory_bytes: Some(1 << 20),
                    })
                    .collect(),
            ),
            // Not the index: a node names the GPU by its minor number.
            health: Default::default(),
            minor_number: Fact::Value(index + 10),
        }
    }

    fn eight() -> Vec<GpuDevice> {
        (0..8).map(|index| gpu(index, 0, 0)).collect()
    }

    fn holder(name: &str, gpus: GpuAssignment) -> GpuHolder {
        GpuHolder {
            id: format!("{name}-id"),
            name: name.into(),
            state: "running".into(),
            profile: None,
            user: None,
            uid: None,
            identity: None,
            gpus,
        }
    }

    fn chosen(count: u32, gpus: &[GpuDevice], holders: &[GpuHolder]) -> Vec<u32> {
        let (rows, _) = occupancy(gpus, holders);
        choose(count, &rows, false)
            .unwrap()
            .gpus
            .iter()
            .map(|gpu| gpu.index)
            .collect()
    }

    #[test]
    fn busy_gpus_come_last_are_said_and_idle_placement_refuses_them() {
        // GPUs 0–5 run a process no container holds; 6 has 20 GiB in use; 7 is idle.
        let mut gpus: Vec<GpuDevice> = (0..6).map(|index| gpu(index, 10, 1)).collect();
        gpus.push(gpu(6, 20 << 10, 0));
        gpus.push(gpu(7, 10, 0));
        let (rows, _) = occupancy(&gpus, &[]);
        assert!(
            rows[0]
                .busy
                .as_deref()
                .unwrap()
                .contains("PID 100 in no container")
        );
        assert!(
            rows[6]
                .busy
                .as_deref()
                .unwrap()
                .contains("20.0 GiB of its memory")
        );
        assert!(rows[7].busy.is_none() && rows.iter().all(|row| row.free));
        let one = choose(1, &rows, false).unwrap();
        assert_eq!(one.gpus[0].index, 7);
        assert!(one.skipped.is_empty(), "{:?}", one.skipped);
        let two = choose(2, &rows, false).unwrap();
        let picked: Vec<u32> = two.gpus.iter().map(|gpu| gpu.index).collect();
        assert_eq!(picked, [0, 7]);
        assert_eq!(two.skipped.len(), 1, "{:?}", two.skipped);
        assert!(two.skipped[0].starts_with("GPU 0 is busy but no idle GPU is left"));
        let refused = choose(2, &rows, true).unwrap_err();
        assert_eq!(refused.free, [7]);
        assert_eq!(refused.skipped.len(), 7);
        // A GPU a container holds is never "busy": its processes are the holder's.
        let holders = [holder("train", GpuAssignment::Devices(vec!["0".into()]))];
        let (rows, _) = occupancy(&gpus, &holders);
        assert!(!rows[0].free && rows[0].busy.is_none());
    }

    #[test]
    fn an_idle_host_gives_the_first_gpus() {
        assert_eq!(chosen(2, &eight(), &[]), [0, 1]);
    }

    #[test]
    fn counts_resolve_as_the_daemon_resolves_them() {
        // `--gpus 2` holds GPUs 0 and 1; `device=3` and a UUID hold those GPUs.
        let holders = [
            holder("count", GpuAssignment::Count(2)),
            holder("index", GpuAssignment::Devices(vec!["3".into()])),
            holder(
                "uuid",
                GpuAssignment::Devices(vec!["gpu-50000000-0000-0000-0000-000000000000".into()]),
            ),
        ];
        assert_eq!(chosen(3, &eight(), &holders), [2, 4, 6]);
        let (rows, unmapped) = occupancy(&eight(), &holders);
        assert!(unmapped.is_empty());
        assert_eq!(rows[5].holders[0].name, "uuid");
        assert!(!rows[0].free && !rows[1].free && rows[2].free);
    }

    #[test]
    fn all_holds_every_gpu_and_there_is_no_room() {
        let holders = [holder("everything", GpuAssignment::All)];
        let (rows, _) = occupancy(&eight(), &holders);
        let refused = choose(1, &rows, false).unwrap_err();
        assert_eq!(refused.free, Vec::<u32>::new());
        assert_eq!(refused.held.len(), 8);
        assert_eq!(refused.held[0], "GPU 0: everything (running)");
        assert_eq!(refused.to_string(), "1 GPU asked for, 0 free");
        // A CDI `all` holds every GPU too.
        let cdi = [holder("cdi", GpuAssignment::Devices(vec!["all".into()]))];
        let (rows, _) = occupancy(&eight(), &cdi);
        assert!(rows.iter().all(|row| !row.free));
    }

    #[test]
    fn the_least_used_free_gpus_win_and_ties_go_by_index() {
        let mut gpus = eight();
        gpus[0] = gpu(0, 40_000, 1); // a process outside any container
        gpus[1] = gpu(1, 0, 2);
        gpus[2] = gpu(2, 10, 0);
        assert_eq!(chosen(2, &gpus, &[]), [3, 4]);
        // GPUs 0 and 1 run processes no container holds: busy, so after every idle one
        // (issue 28), however little memory they use.
        assert_eq!(chosen(6, &gpus, &[]), [2, 3, 4, 5, 6, 7]);
        assert_eq!(chosen(7, &gpus, &[]), [1, 2, 3, 4, 5, 6, 7]);
        let (rows, _) = occupancy(&gpus, &[]);
        let choice = choose(2, &rows, false).unwrap();
        assert_eq!(
            choice.reason,
            "GPUs 3 and 4: no container holds them; the least used of 8 free (GPU memory in use, then processes, then index)"
        );
        assert_eq!(
            choice.gpus[0].uuid,
            "GPU-30000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn a_gpu_nvml_cannot_read_is_never_picked_and_is_named() {
        let mut gpus = eight();
        gpus[0].memory = Fact::Error(NvmlFailure::new(FailureKind::Unknown, "Unknown Error"));
        gpus[1].uuid = Fact::Error(NvmlFailure::new(FailureKind::GpuLost, "GPU is lost"));
        let (rows, _) = occupancy(&gpus, &[]);
        let choice = choose(2, &rows, false).unwrap();
        assert_eq!(
            choice.gpus.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(
            choice.skipped,
            [
                "GPU 0: NVML could not read its memory: Unknown Error",
                "GPU 1: NVML could not read its uuid: GPU is lost"
            ]
        );
        let refused = choose(7, &rows, false).unwrap_err();
        assert_eq!(refused.free.len(), 6);
        assert_eq!(refused.skipped.len(), 2);
    }

    #[test]
    fn processes_name_their_container_where_it_is_known() {
        let mut gpus = eight();
        gpus[3] = gpu(3, 2048, 2);
        let owners = BTreeMap::from([(100, "alice-train".to_string())]);
        let (rows, _) = occupancy_with_owners(&gpus, &[], &owners);
        let processes = rows[3].processes.as_ref().unwrap();
        assert_eq!(processes[0].container.as_deref(), Some("alice-train"));
        assert_eq!(processes[1].container, None);
        // A process is busy-ness, not a hold: the GPU stays free of containers.
        assert!(rows[3].free);
    }

    #[test]
    fn names_of_no_gpu_here_are_unmapped_not_guessed() {
        let holders = [holder(
            "mig",
            GpuAssignment::Devices(vec!["MIG-1111".into(), "9".into(), "2".into()]),
        )];
        let (rows, unmapped) = occupancy(&eight(), &holders);
        assert_eq!(unmapped, ["MIG-1111 (mig)", "9 (mig)"]);
        assert!(!rows[2].free);
        assert_eq!(rows.iter().filter(|row| !row.free).count(), 1);
    }

    /// A device node names its GPU by minor number (here index + 10), never by index; a
    /// minor no GPU has, or one NVML could not read, is unmapped.
    #[test]
    fn device_nodes_hold_the_gpu_of_their_minor_number() {
        let mut gpus = eight();
        gpus[5].minor_number = Fact::Error(NvmlFailure::new(FailureKind::Other, "no"));
        let holders = [holder("nodes", GpuAssignment::Nodes(vec![3, 12, 15]))];
        let (rows, unmapped) = occupancy(&gpus, &holders);
        assert_eq!(unmapped, ["/dev/nvidia3 (nodes)", "/dev/nvidia15 (nodes)"]);
        let held: Vec<u32> = rows
            .iter()
            .filter(|row| !row.free)
            .map(|row| row.index)
            .collect();
        assert_eq!(held, [2]);
        assert_eq!(gpus_held(None, &holders), Ok(3));
    }

    #[test]
    fn ps_shows_uuids_of_gpus_here_by_index() {
        let gpus = eight();
        assert_eq!(
            by_index(
                "GPU-20000000-0000-0000-0000-000000000000,GPU-50000000-0000-0000-0000-000000000000",
                &gpus
            ),
            "2,5"
        );
        assert_eq!(by_index("all", &gpus), "all");
        assert_eq!(by_index("GPU-elsewhere,3", &gpus), "GPU-elsewhere,3");
    }

    #[test]
    fn a_pinned_container_shares_only_the_gpus_others_hold() {
        let pinned = indexes_of(
            &GpuAssignment::Devices(vec![
                "GPU-30000000-0000-0000-0000-000000000000".into(),
                "5".into(),
            ]),
            &eight(),
        );
        assert_eq!(pinned, [3, 5]);
        let others = [holder(
            "squatter",
            GpuAssignment::Devices(vec!["5".into(), "6".into()]),
        )];
        assert_eq!(
            shared_with(&eight(), &others, &pinned),
            ["GPU 5: squatter (running)"]
        );
        assert!(shared_with(&eight(), &[], &pinned).is_empty());
    }

    #[test]
    fn gpus_held_are_counted_once_or_said_unknown() {
        let holders = [
            holder("two", GpuAssignment::Count(2)),
            holder(
                "overlap",
                GpuAssignment::Devices(vec!["1".into(), "5".into()]),
            ),
        ];
        assert_eq!(gpus_held(Some(&eight()), &holders), Ok(3));
        assert_eq!(gpus_held(None, &holders), Ok(4));
        let everything = [holder("all", GpuAssignment::All)];
        assert_eq!(gpus_held(Some(&eight()), &everything), Ok(8));
        assert!(
            gpus_held(None, &everything)
                .unwrap_err()
                .contains("`all` holds all GPUs")
        );
        assert!(gpus_held(None, &[holder("minus", GpuAssignment::Count(-1))]).is_err());
    }

    #[test]
    fn lists_read_as_english() {
        assert_eq!(list(&["0".into()]), "0");
        assert_eq!(list(&["0".into(), "1".into()]), "0 and 1");
        assert_eq!(list(&["0".into(), "1".into(), "5".into()]), "0, 1 and 5");
    }

    #[test]
    fn a_gpu_record_round_trips_and_places_by_its_holders_only() {
        let gpus: Vec<GpuDevice> = (0..4).map(|index| gpu(index, 0, 0)).collect();
        let record = GpuRecord::of(&gpus).unwrap();
        let written = record.written();
        assert_eq!(GpuRecord::parse(&written).unwrap(), record);
        // A holder of GPU 0 by UUID and one of the first two by count: 2 and 3 are free.
        let uuid = gpus[0].uuid.value().unwrap().clone();
        let holders = [
            holder("a", GpuAssignment::Devices(vec![uuid])),
            holder("b", GpuAssignment::Count(2)),
        ];
        let rows = record.occupancy(&holders);
        let picked = choose(2, &rows, false).unwrap();
        assert_eq!(
            picked.gpus.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(choose(3, &rows, false).is_err());
        // What is not the record's form is named, never read as no GPU.
        for bad in ["", "0=GPU-a,0=GPU-b", "x=GPU-a", "0=notauuid", "0"] {
            assert!(GpuRecord::parse(bad).is_err(), "{bad:?}");
        }
        // Forgeries of a record in the right form: one UUID under several indexes, an
        // index twice, a UUID that is a shell command, one of the wrong length.
        let uuid = "GPU-5d5b4f7a-2c1e-4b8e-9a57-0c3f1e2d4a01";
        let other = "GPU-5d5b4f7a-2c1e-4b8e-9a57-0c3f1e2d4a02";
        for (forged, why) in [
            (format!("0={uuid},1={uuid}"), "the same UUID"),
            (
                format!("0={uuid},1=GPU-{}", uuid["GPU-".len()..].to_uppercase()),
                "the same UUID",
            ),
            (format!("0={uuid},0={other}"), "index 0 twice"),
            ("0=GPU-$(id)".to_string(), "not a GPU UUID"),
            (format!("0={uuid}0"), "not a GPU UUID"),
            (format!("0={uuid}\nerror: x"), "not a GPU UUID"),
        ] {
            let error = GpuRecord::parse(&forged).unwrap_err();
            assert!(error.contains(why), "{forged:?}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
        assert!(GpuRecord::tied_to(Some("vm"), "vm").is_ok());
        assert!(
            GpuRecord::tied_to(Some("other"), "vm")
                .unwrap_err()
                .contains("\"other\"")
        );
        assert!(GpuRecord::tied_to(None, "vm").is_err());
        // A GPU whose UUID NVML could not read leaves no record at all.
        let mut unread = gpus.clone();
        unread[1].uuid = Fact::Error(NvmlFailure::new(FailureKind::Unknown, "no"));
        assert_eq!(GpuRecord::of(&unread), None);
    }

    fn probed() -> ServerGpus {
        crate::facts::smi::ServerGpus {
            driver: Some("550.54.15".into()),
            cuda: Some("12.4".parse().unwrap()),
            gpus: (0..2)
                .map(|index| crate::facts::smi::SmiGpu {
                    index,
                    uuid: format!("GPU-{index}0000000-0000-0000-0000-000000000000"),
                    name: Some("NVIDIA A100-SXM4-80GB".into()),
                    compute_capability: Some(ComputeCapability::new(8, 0)),
                    memory_total_mib: Some(81920),
                    memory_used_mib: Some(0),
                })
                .collect(),
            processes: Vec::new(),
        }
    }

    #[test]
    fn record_details_are_written_and_read_back() {
        let (record, details) = record_of_probe(&probed(), 1_000).unwrap();
        let read = RecordDetails::parse(&details.labels(), &record).unwrap();
        assert_eq!(read, details);
        let seen = seen_from_record(&record, &read);
        assert_eq!(
            seen.facts.driver_version.value().map(String::as_str),
            Some("550.54.15")
        );
        assert_eq!(seen.facts.gpus.len(), 2);
        assert!(seen.from_record);
    }

    #[test]
    fn an_older_record_without_details_is_read_and_stale() {
        let record = GpuRecord::parse("0=GPU-00000000-0000-0000-0000-000000000000").unwrap();
        let details = RecordDetails::parse(&BTreeMap::new(), &record).unwrap();
        assert_eq!(details, RecordDetails::default());
        assert!(details.stale(&record, 1_000, &[]).is_some());
    }

    #[test]
    fn a_record_is_stale_with_age_a_future_time_or_changed_gpus() {
        let (record, details) = record_of_probe(&probed(), 10_000).unwrap();
        assert_eq!(
            details.stale(&record, 10_000 + RECORD_FRESH_SECONDS, &[]),
            None
        );
        assert!(
            details
                .stale(&record, 10_001 + RECORD_FRESH_SECONDS, &[])
                .is_some()
        );
        assert!(details.stale(&record, 9_000, &[]).is_some());
        let held = ["GPU-90000000-0000-0000-0000-000000000000".to_string()];
        assert!(details.stale(&record, 10_000, &held).is_some());
        let known = ["GPU-10000000-0000-0000-0000-000000000000".to_string()];
        assert_eq!(details.stale(&record, 10_000, &known), None);
    }

    #[test]
    fn record_details_are_not_believed_blindly() {
        let (record, _) = record_of_probe(&probed(), 1).unwrap();
        for (key, value) in [
            ("driver", "550; rm -rf"),
            ("cuda", "twelve"),
            ("taken", "soon"),
            ("by", "someone"),
            ("gpu.7", "8.0;1;A100"),
            ("gpu.0", "x.y;1;A100"),
            ("gpu.0", "8.0;lots;A100"),
        ] {
            let labels = BTreeMap::from([(key.to_string(), value.to_string())]);
            assert!(
                RecordDetails::parse(&labels, &record).is_err(),
                "{key}={value}"
            );
        }
    }

    #[test]
    fn a_probe_with_a_doubtful_uuid_writes_no_record() {
        let mut gpus = probed();
        gpus.gpus[1].uuid = "GPU-short".into();
        assert!(record_of_probe(&gpus, 1).is_none());
    }

    /// Issue 43: a GPU kept out for its health is never chosen, even when it is the least
    /// used, and the reason (with how to clear it) is in `skipped` and in the refusal.
    #[test]
    fn a_gpu_kept_out_for_its_health_is_never_chosen_and_said() {
        let row = |index: u32, kept_out: Option<&str>| GpuOccupancy {
            index,
            uuid: Some(format!("GPU-{index}")),
            holders: Vec::new(),
            processes: Some(Vec::new()),
            memory_used_bytes: Some(if index == 2 { 0 } else { 1 << 20 }),
            memory_total_bytes: Some(80 << 30),
            free: true,
            busy: None,
            unreadable: Vec::new(),
            kept_out: kept_out.map(str::to_string),
        };
        let rows = vec![
            row(0, None),
            row(1, None),
            row(2, Some("GPU 2 is kept out (fatal): Xid 79")),
        ];
        let choice = choose(2, &rows, false).unwrap();
        let chosen: Vec<u32> = choice.gpus.iter().map(|gpu| gpu.index).collect();
        assert_eq!(chosen, vec![0, 1]);
        assert!(
            choice.skipped.iter().any(|said| said.contains("Xid 79")),
            "{choice:?}"
        );
        let refused = choose(3, &rows, false).unwrap_err();
        assert_eq!(refused.free, vec![0, 1]);
        assert!(
            refused
                .skipped
                .iter()
                .any(|said| said.contains("GPU 2 is kept out"))
        );
    }
}
