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
//!
//! The GPU record a daemon keeps for clients on other machines, which placement for such a
//! client reads in place of NVML, is in `record`; the unit tests are in `tests`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::container::GpuAssignment;
use crate::facts::gpu::GpuDevice;
use crate::facts::occupancy::GpuHolder;

mod record;
#[cfg(test)]
mod tests;

pub use record::{
    GpuRecord, RECORD_FRESH_SECONDS, RecordDetails, RecordedModel, record_of_probe,
    seen_from_probe, seen_from_record,
};

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
    let mut skipped = set_aside(rows, idle_only);
    let free = candidates(rows, idle_only);
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
    let reason = chosen_because(&gpus, free_count);
    Ok(Choice {
        gpus,
        reason,
        skipped,
    })
}

/// What keeps GPUs out of the choice, in words: free GPUs NVML could not read, GPUs kept
/// out for their health, and with `idle_only` the busy ones.
fn set_aside(rows: &[GpuOccupancy], idle_only: bool) -> Vec<String> {
    let mut skipped: Vec<String> = rows
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
    // A GPU that failed is never given, free or not, and said with how to clear it.
    skipped.extend(
        rows.iter()
            .filter(|row| row.unreadable.is_empty())
            .filter_map(|row| row.kept_out.clone()),
    );
    if idle_only {
        skipped.extend(rows.iter().filter_map(|row| {
            let busy = row.busy.as_ref()?;
            Some(format!(
                "GPU {} is busy (`placement = \"idle\"`): {busy}",
                row.index
            ))
        }));
    }
    skipped
}

/// The GPUs that may be chosen, best first: free, readable, pinnable by UUID, not kept
/// out (and idle with `idle_only`); idle before busy, then the least GPU memory in use,
/// the fewest processes, the lowest index.
fn candidates(rows: &[GpuOccupancy], idle_only: bool) -> Vec<&GpuOccupancy> {
    let mut free: Vec<&GpuOccupancy> = rows
        .iter()
        .filter(|row| row.free && row.unreadable.is_empty() && row.uuid.is_some())
        .filter(|row| row.kept_out.is_none())
        .filter(|row| !idle_only || row.busy.is_none())
        .collect();
    free.sort_by_key(|row| {
        (
            row.busy.is_some(),
            row.memory_used_bytes.unwrap_or(u64::MAX),
            row.processes.as_ref().map_or(usize::MAX, Vec::len),
            row.index,
        )
    });
    free
}

/// Why these `gpus` were chosen of the `free_count` free ones.
fn chosen_because(gpus: &[ChosenGpu], free_count: usize) -> String {
    format!(
        "{} {}: no container holds {}; the least used of {free_count} free (GPU memory in use, then processes, then index)",
        if gpus.len() == 1 { "GPU" } else { "GPUs" },
        list(
            &gpus
                .iter()
                .map(|gpu| gpu.index.to_string())
                .collect::<Vec<_>>()
        ),
        if gpus.len() == 1 { "it" } else { "them" },
    )
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
