//! GPU health (issue 43): pure verdicts over the health facts NVML gave (`facts::gpu`'s
//! [`GpuHealth`], "GPU is lost" from any query) and the Xids seen, classified by the
//! host policy's `gpus.fatal_xids` (NVIDIA's list by default).
//!
//! A GPU is `fatal` when it needs a reset or a reboot before it can be trusted again,
//! `lost` when it fell off the bus, `warn` when something deserves a look but the GPU
//! still works, and `ok` otherwise. Facts the GPU does not offer (ECC on a GeForce, row
//! remapping before Ampere) are unknown and never count as errors or as zeros.

use serde::{Deserialize, Serialize};

use super::{Area, Finding};
use crate::facts::gpu::{GpuDevice, GpuFacts, GpuHealth, NvmlFailure};
use crate::profile::model::GpuRequest;

/// Xids NVIDIA documents as fatal to the GPU (it needs a reset or a reboot): 48 double-bit
/// ECC, 64 ECC page retirement or row remap failure, 74 NVLink, 79 fallen off the bus,
/// 92 high single-bit ECC rate, 95 uncontained ECC, 119/120 GSP errors. The policy key
/// `gpus.fatal_xids` replaces the list where a site disagrees.
pub const DEFAULT_FATAL_XIDS: [u32; 8] = [48, 64, 74, 79, 92, 95, 119, 120];

/// Xids NVIDIA documents as the application's fault (13 graphics engine exception, 31 MMU
/// fault, 43 stopped the channel, 45 preemptive cleanup, 68 video decoder): the GPU is
/// sound. 94 (a contained ECC error) is disputed: the GPU keeps working, the one process is
/// killed; it is an application Xid unless the policy lists it as fatal.
pub const APPLICATION_XIDS: [u32; 6] = [13, 31, 43, 45, 68, 94];

/// How one GPU is, from best to worst (ordered: the worst of a set is its maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthState {
    Ok,
    Warn,
    Fatal,
    /// NVML answers `GPU_IS_LOST`: the GPU fell off the bus.
    Lost,
}

impl HealthState {
    /// The gauge value of `envctl_gpu_health`: 0 ok, 1 warn, 2 fatal or lost.
    pub fn gauge(self) -> u8 {
        match self {
            HealthState::Ok => 0,
            HealthState::Warn => 1,
            HealthState::Fatal | HealthState::Lost => 2,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            HealthState::Ok => "ok",
            HealthState::Warn => "warn",
            HealthState::Fatal => "fatal",
            HealthState::Lost => "lost",
        }
    }

    /// A GPU no job should be given.
    pub fn is_failed(self) -> bool {
        matches!(self, HealthState::Fatal | HealthState::Lost)
    }
}

/// How an Xid is read under the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum XidClass {
    /// The GPU needs a reset or a reboot.
    Fatal,
    /// One application's error; the GPU is sound.
    Application,
    /// Neither list names it: shown, never marking the GPU.
    Other,
}

/// Classifies `xid` by the fatal list in force (the policy's, or [`DEFAULT_FATAL_XIDS`]).
pub fn classify_xid(xid: u32, fatal_xids: &[u32]) -> XidClass {
    if fatal_xids.contains(&xid) {
        XidClass::Fatal
    } else if APPLICATION_XIDS.contains(&xid) {
        XidClass::Application
    } else {
        XidClass::Other
    }
}

/// One GPU's state and the reasons for it, each a sentence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuHealthVerdict {
    pub index: u32,
    pub state: HealthState,
    pub reasons: Vec<String>,
}

/// Judges one GPU from its facts and the Xids seen on it (none at `doctor` time: NVML keeps
/// no past Xids).
pub fn classify(gpu: &GpuDevice, xids: &[u32], fatal_xids: &[u32]) -> GpuHealthVerdict {
    classify_health(gpu.index, &gpu.health, gpu.lost(), xids, fatal_xids)
}

/// [`classify`] over the parts a `stats` sample has: the health facts, and the "GPU is
/// lost" failure of any query, when there was one.
pub fn classify_health(
    index: u32,
    health: &GpuHealth,
    lost: Option<&NvmlFailure>,
    xids: &[u32],
    fatal_xids: &[u32],
) -> GpuHealthVerdict {
    let lost = lost.map(|failure| {
        (
            HealthState::Lost,
            format!(
                "NVML says the GPU is lost (fell off the bus): {}",
                failure.message
            ),
        )
    });
    // An application's own Xid marks nothing (k8s-device-plugin#1340).
    let fatal = xids
        .iter()
        .filter(|xid| classify_xid(**xid, fatal_xids) == XidClass::Fatal)
        .map(|xid| (HealthState::Fatal, format!("Xid {xid}, fatal to the GPU")));
    let marks: Vec<(HealthState, String)> = lost
        .into_iter()
        .chain(memory_marks(health))
        .chain(fatal)
        .collect();
    GpuHealthVerdict {
        index,
        state: marks
            .iter()
            .fold(HealthState::Ok, |state, (level, _)| state.max(*level)),
        reasons: marks.into_iter().map(|(_, reason)| reason).collect(),
    }
}

/// What the GPU's memory counters say of it, each with the state it marks: a failed or
/// pending row remap, a pending page retirement (fatal with double-bit errors), and
/// uncorrectable ECC errors since the driver loaded.
fn memory_marks(health: &GpuHealth) -> Vec<(HealthState, String)> {
    let mut marks = Vec::new();
    if let Some(rows) = health.remapped_rows.value() {
        if rows.failure {
            marks.push((
                HealthState::Fatal,
                "a row remapping failed: the GPU has no spare memory rows left".into(),
            ));
        }
        if rows.pending {
            marks.push((
                HealthState::Fatal,
                format!(
                    "a row remap is pending ({} uncorrectable, {} correctable rows remapped): the bad row is in use until the GPU is reset",
                    rows.uncorrectable, rows.correctable
                ),
            ));
        }
    }
    let pages_pending = health.retired_pages_pending.value() == Some(&true);
    let aggregate_double_bit = health
        .ecc_aggregate
        .value()
        .map_or(0, |counts| counts.uncorrected);
    if pages_pending && aggregate_double_bit > 0 {
        marks.push((
            HealthState::Fatal,
            format!(
                "{aggregate_double_bit} double-bit ECC error(s) over the GPU's life and a page retirement pending: the bad page is in use until a reboot or reset"
            ),
        ));
    } else if pages_pending {
        marks.push((
            HealthState::Warn,
            "a page retirement is pending (single-bit errors): it takes effect at the next reboot or reset".into(),
        ));
    }
    if let Some(counts) = health.ecc_volatile.value()
        && counts.uncorrected > 0
    {
        marks.push((
            HealthState::Warn,
            format!(
                "{} uncorrectable ECC error(s) since the driver loaded",
                counts.uncorrected
            ),
        ));
    }
    marks
}

/// The fix for a GPU in `state`, naming its index.
pub fn fix(index: u32, state: HealthState) -> Option<String> {
    match state {
        HealthState::Ok => None,
        HealthState::Warn => Some(format!(
            "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i {index}` shows the counters; plan a reset (`nvidia-smi -r -i {index}`) when the GPU is idle"
        )),
        HealthState::Fatal => Some(format!(
            "reset the GPU (`nvidia-smi -r -i {index}`, with no process on it) or reboot; if it comes back failed, the GPU needs servicing"
        )),
        HealthState::Lost => Some(format!(
            "reset the GPU (`nvidia-smi -r -i {index}`) or reboot; `sudo dmesg | grep -i -E 'xid|NVRM'` shows why it was lost"
        )),
    }
}

/// Doctor's health findings: one per GPU NVML listed, and persistence mode off on a
/// data-center host. Nothing when NVML gave no list (`gpu.nvml` says why).
pub fn findings(gpu: &GpuFacts, fatal_xids: &[u32], datacenter_host: bool) -> Vec<Finding> {
    let Ok(gpus) = gpu.listed_gpus() else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    let mut sound = Vec::new();
    for device in gpus {
        let verdict = classify(device, &[], fatal_xids);
        if verdict.state != HealthState::Ok {
            findings.push(unhealthy(device, &verdict));
        } else if reports_health(device) {
            // A GPU that reports no health fact at all (an old record, a stand-in without
            // them) is not called healthy: nothing was read.
            sound.push(device.index.to_string());
        }
    }
    if !sound.is_empty() {
        findings.push(
            Finding::pass(
                "gpu.health",
                format!(
                    "GPU {}: healthy (not lost, no pending row remap or page retirement, no uncorrectable ECC error since the driver loaded)",
                    sound.join(", ")
                ),
            )
            .with_fact("gpus", &sound)
            .in_area(Area::Nvidia),
        );
    }
    if datacenter_host {
        findings.extend(persistence_off(gpus));
    }
    findings
}

/// `gpu.health` for a GPU whose `verdict` is not ok: a warning, since the host works on
/// with its other GPUs; a profile that needs this one fails (`profile.gpu-health`).
fn unhealthy(device: &GpuDevice, verdict: &GpuHealthVerdict) -> Finding {
    let name = device
        .uuid
        .value()
        .map_or_else(String::new, |uuid| format!(" ({uuid})"));
    let mut finding = Finding::warn(
        "gpu.health",
        format!(
            "GPU {}{name}: {}: {}",
            device.index,
            verdict.state.word(),
            verdict.reasons.join("; ")
        ),
    );
    if let Some(fix) = fix(device.index, verdict.state) {
        finding = finding.with_hint(fix);
    }
    finding
        .with_fact("index", device.index)
        .with_fact("state", verdict.state)
        .with_fact("health", &device.health)
        .in_area(Area::Nvidia)
}

/// `gpu.persistence` on a data-center host: the GPUs with persistence mode off, which
/// the driver tears down and re-initialises at each start.
fn persistence_off(gpus: &[GpuDevice]) -> Option<Finding> {
    let without_persistence: Vec<u32> = gpus
        .iter()
        .filter(|device| device.health.persistence_mode.value() == Some(&false))
        .map(|device| device.index)
        .collect();
    if without_persistence.is_empty() {
        return None;
    }
    let list: Vec<String> = without_persistence
        .iter()
        .map(ToString::to_string)
        .collect();
    Some(
        Finding::warn(
            "gpu.persistence",
            format!(
                "persistence mode is off on GPU {}: with no client holding it the driver tears the GPU down, so each `nvidia-smi` or CUDA start re-initialises it (NVIDIA's driver persistence documentation; about 1-2 s each on data-center GPUs)",
                list.join(", ")
            ),
        )
        .with_hint(
            "`sudo systemctl enable --now nvidia-persistenced` (or `sudo nvidia-smi -pm 1` until the next reboot)",
        )
        .with_fact("gpus", &without_persistence)
        .in_area(Area::Nvidia),
    )
}

/// Whether NVML answered any health query of this GPU.
fn reports_health(device: &GpuDevice) -> bool {
    let health = &device.health;
    health.ecc_enabled.value().is_some()
        || health.ecc_volatile.value().is_some()
        || health.ecc_aggregate.value().is_some()
        || health.retired_pages.value().is_some()
        || health.retired_pages_pending.value().is_some()
        || health.remapped_rows.value().is_some()
}

/// NVIDIA CDI specs whose device nodes do not match `/dev` (`crate::host::cdi`): a warning
/// naming each node and spec, with the command that writes the spec again.
pub fn stale_cdi(stale: &[crate::facts::host::StaleCdiNode]) -> Option<Finding> {
    let first = stale.first()?;
    let described: Vec<String> = stale
        .iter()
        .map(|node| match (&node.spec_number, &node.host_number) {
            (_, None) => format!("{} names {}, which does not exist", node.spec, node.node),
            (Some(spec), Some(host)) => format!(
                "{} gives {} the numbers {spec}, /dev has {host}",
                node.spec, node.node
            ),
            (None, Some(_)) => format!("{} names {}", node.spec, node.node),
        })
        .collect();
    Some(
        Finding::warn(
            "cdi.stale-spec",
            format!(
                "a CDI spec no longer matches /dev (a driver upgrade or GPU change since it was written): {}",
                described.join("; ")
            ),
        )
        .with_hint(format!(
            "write the spec again: `sudo nvidia-ctk cdi generate --output={}`",
            first.spec
        ))
        .with_fact("stale_nodes", stale)
        .in_area(Area::Nvidia),
    )
}

/// A profile that asks for every GPU, or names one by index or UUID, on a host where that
/// GPU is lost or failed: a failed check with the fix. A count is placed around the GPU,
/// so it is not judged here.
pub fn profile_finding(
    request: &GpuRequest,
    gpu: &GpuFacts,
    fatal_xids: &[u32],
) -> Option<Finding> {
    let gpus = gpu.listed_gpus().ok()?;
    let failed: Vec<(&GpuDevice, GpuHealthVerdict)> = gpus
        .iter()
        .map(|device| (device, classify(device, &[], fatal_xids)))
        .filter(|(_, verdict)| verdict.state.is_failed())
        .filter(|(device, _)| match request {
            GpuRequest::All | GpuRequest::Optional => true,
            GpuRequest::Devices(names) => names.iter().any(|name| {
                name.parse::<u32>().ok() == Some(device.index) || device.uuid.value() == Some(name)
            }),
            GpuRequest::None | GpuRequest::Count(_) => false,
        })
        .collect();
    let (first, verdict) = failed.first()?;
    let named: Vec<String> = failed
        .iter()
        .map(|(device, verdict)| format!("GPU {} is {}", device.index, verdict.state.word()))
        .collect();
    let asked = match request {
        GpuRequest::Devices(names) => format!("`gpus = {:?}`", names.join(",")),
        _ => "`gpus = \"all\"`".to_string(),
    };
    let count = "ask for a count (`gpus = N`), which placement fills from the sound GPUs";
    let hint = match fix(first.index, verdict.state) {
        Some(fix) => format!("{fix}; or {count}"),
        None => count.to_string(),
    };
    Some(
        Finding::fail(
            "profile.gpu-health",
            format!(
                "{asked} includes a GPU that cannot run a job: {}",
                named.join(", ")
            ),
        )
        .with_hint(hint)
        .with_fact(
            "failed_gpus",
            failed
                .iter()
                .map(|(device, _)| device.index)
                .collect::<Vec<_>>(),
        ),
    )
}

/// The host-wide record of the Xids the watchers saw (`host::gpu_health` keeps one file per
/// user beside the GPU placement lock): what `stats` saw while it ran, read by every `up`
/// of the host so that a GPU that failed is kept out of placement until it is cleared.
/// Each entry names its GPU by UUID (indexes change when a GPU falls off the bus) and the
/// boot it was seen in: a record of another boot says nothing about this one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthRecord {
    pub schema_version: u32,
    /// `/proc/sys/kernel/random/boot_id` when the record was written.
    pub boot_id: String,
    #[serde(default)]
    pub gpus: Vec<RecordedGpu>,
}

/// The version of [`HealthRecord`]'s form.
pub const HEALTH_RECORD_SCHEMA: u32 = 1;

/// What one user's watcher saw on one GPU, and when that user last cleared it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedGpu {
    pub uuid: String,
    /// Its index when last written, for messages only.
    pub index: u32,
    #[serde(default)]
    pub xids: Vec<RecordedXid>,
    /// When `envctl gpu clear` was last run for it (milliseconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_at_ms: Option<i64>,
}

/// One Xid on one GPU: how often, first and last seen (milliseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedXid {
    pub xid: u32,
    pub count: u64,
    pub first_at_ms: i64,
    pub last_at_ms: i64,
}

/// Most GPUs one record keeps (no host has more; a record that grew past it was not
/// written by envctl).
const RECORDED_GPUS: usize = 64;
/// Most distinct Xids kept per GPU; the oldest goes first.
const RECORDED_XIDS: usize = 32;

impl HealthRecord {
    /// An empty record of boot `boot_id`.
    pub fn new(boot_id: &str) -> HealthRecord {
        HealthRecord {
            schema_version: HEALTH_RECORD_SCHEMA,
            boot_id: boot_id.to_string(),
            gpus: Vec::new(),
        }
    }

    /// This record as of boot `boot_id`: a record of another boot starts empty (a reboot
    /// resets every GPU).
    pub fn for_boot(self, boot_id: &str) -> HealthRecord {
        if self.boot_id == boot_id && self.schema_version == HEALTH_RECORD_SCHEMA {
            self
        } else {
            HealthRecord::new(boot_id)
        }
    }

    fn gpu(&mut self, uuid: &str, index: u32) -> &mut RecordedGpu {
        let position = match self.gpus.iter().position(|gpu| gpu.uuid == uuid) {
            Some(position) => position,
            None => {
                if self.gpus.len() >= RECORDED_GPUS {
                    self.gpus.remove(0);
                }
                self.gpus.push(RecordedGpu {
                    uuid: uuid.to_string(),
                    index,
                    xids: Vec::new(),
                    cleared_at_ms: None,
                });
                self.gpus.len() - 1
            }
        };
        let gpu = &mut self.gpus[position];
        gpu.index = index;
        gpu
    }

    /// Counts Xid `xid` on the GPU `uuid` (index `index`) at `now_ms`.
    pub fn add_xid(&mut self, uuid: &str, index: u32, xid: u32, now_ms: i64) {
        let gpu = self.gpu(uuid, index);
        match gpu.xids.iter_mut().find(|seen| seen.xid == xid) {
            Some(seen) => {
                seen.count = seen.count.saturating_add(1);
                seen.last_at_ms = seen.last_at_ms.max(now_ms);
            }
            None => {
                if gpu.xids.len() >= RECORDED_XIDS {
                    gpu.xids.sort_by_key(|seen| seen.last_at_ms);
                    gpu.xids.remove(0);
                }
                gpu.xids.push(RecordedXid {
                    xid,
                    count: 1,
                    first_at_ms: now_ms,
                    last_at_ms: now_ms,
                });
            }
        }
    }

    /// Clears the GPU `uuid` at `now_ms`: every Xid seen before is forgotten here, and the
    /// time is kept, so that other users' records of the same Xids are read as cleared too.
    pub fn clear(&mut self, uuid: &str, index: u32, now_ms: i64) {
        let gpu = self.gpu(uuid, index);
        gpu.xids.retain(|seen| seen.last_at_ms > now_ms);
        gpu.cleared_at_ms = Some(gpu.cleared_at_ms.map_or(now_ms, |at| at.max(now_ms)));
    }
}

/// `2026-12-07 16:40:12 UTC` for a time in milliseconds since the epoch.
pub fn when_utc(milliseconds: i64) -> String {
    jiff::Timestamp::from_millisecond(milliseconds).map_or_else(
        |_| format!("{milliseconds} ms after 1970"),
        |at| at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

/// One user's record, as read: whose it is (for messages) and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedRecord {
    /// `uid 1000 (alice)`.
    pub owner: String,
    pub record: HealthRecord,
}

/// A fatal Xid on a GPU that no one cleared since: why the GPU is kept out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordedFailure {
    pub uuid: String,
    pub xid: u32,
    pub count: u64,
    /// When it was last seen (milliseconds since the epoch).
    pub last_at_ms: i64,
    /// Whose watcher saw it.
    pub seen_by: String,
}

/// The fatal Xids recorded on GPU `uuid` in boot `boot_id` after its latest clear (by
/// anyone), latest first. Xids are judged by `fatal_xids`, the list in force for the
/// reader: an application Xid never keeps a GPU out.
pub fn recorded_failures(
    records: &[SourcedRecord],
    boot_id: &str,
    uuid: &str,
    fatal_xids: &[u32],
) -> Vec<RecordedFailure> {
    let of_gpu = || {
        records
            .iter()
            .filter(|sourced| sourced.record.boot_id == boot_id)
            .flat_map(|sourced| {
                sourced
                    .record
                    .gpus
                    .iter()
                    .filter(|gpu| gpu.uuid.eq_ignore_ascii_case(uuid))
                    .map(move |gpu| (sourced, gpu))
            })
    };
    let cleared = of_gpu().filter_map(|(_, gpu)| gpu.cleared_at_ms).max();
    let mut failures: Vec<RecordedFailure> = of_gpu()
        .flat_map(|(sourced, gpu)| {
            gpu.xids
                .iter()
                .filter(|seen| classify_xid(seen.xid, fatal_xids) == XidClass::Fatal)
                // An Xid at the very millisecond of a clear counts as after it: a GPU
                // is never given out on a tie.
                .filter(move |seen| cleared.is_none_or(|cleared| seen.last_at_ms >= cleared))
                .map(move |seen| RecordedFailure {
                    uuid: gpu.uuid.clone(),
                    xid: seen.xid,
                    count: seen.count,
                    last_at_ms: seen.last_at_ms,
                    seen_by: sourced.owner.clone(),
                })
        })
        .collect();
    failures.sort_by(|a, b| b.last_at_ms.cmp(&a.last_at_ms).then(a.xid.cmp(&b.xid)));
    failures
}

/// Why placement keeps GPU `device` out, with how to clear it; `None` for a GPU it may
/// give. A GPU is kept out when NVML says it is fatal or lost now (a pending row remap, a
/// failed remap, double-bit errors with a page retirement pending), which only a reset or
/// reboot ends, or when a fatal Xid was recorded on it in this boot and not cleared since.
pub fn keep_out(
    device: &GpuDevice,
    records: &[SourcedRecord],
    boot_id: Option<&str>,
    fatal_xids: &[u32],
) -> Option<String> {
    let now = classify(device, &[], fatal_xids);
    let uuid = device.uuid.value();
    let recorded = match (uuid, boot_id) {
        (Some(uuid), Some(boot_id)) => recorded_failures(records, boot_id, uuid, fatal_xids),
        _ => Vec::new(),
    };
    if !now.state.is_failed() && recorded.is_empty() {
        return None;
    }
    let mut reasons = now.reasons.clone();
    reasons.extend(recorded.iter().map(|failure| {
        format!(
            "Xid {} (fatal to the GPU) seen {} time{}, last at {} by the `envctl stats` of {}",
            failure.xid,
            failure.count,
            if failure.count == 1 { "" } else { "s" },
            when_utc(failure.last_at_ms),
            failure.seen_by
        )
    }));
    let name = uuid.map_or_else(|| device.index.to_string(), Clone::clone);
    // NVML itself says it: only a reset or a reboot ends it, a clear would not help.
    let how = match fix(device.index, now.state).filter(|_| now.state.is_failed()) {
        Some(fix) => format!("{fix} (NVML reports it until then)"),
        None => format!(
            "reset the GPU (`nvidia-smi -r -i {}`) or reboot, then `envctl gpu clear {name}` (a reboot clears it by itself)",
            device.index
        ),
    };
    Some(format!(
        "GPU {} is kept out ({}): {}; {how}",
        device.index,
        if now.state.is_failed() {
            now.state.word()
        } else {
            HealthState::Fatal.word()
        },
        reasons.join("; ")
    ))
}

/// The character major of NVIDIA's device nodes (`/dev/nvidiaN`, `/dev/nvidiactl`).
pub const NVIDIA_MAJOR: u32 = 195;
/// `/dev/nvidiactl`'s minor; 254 is `/dev/nvidia-modeset`, below it the GPUs.
const NVIDIACTL_MINOR: u32 = 255;

/// Whether a cgroup v1 `devices.list` (`c 195:3 rwm`, `a *:* rwm`) lets a container read and
/// write character node `major:minor`.
fn allows(devices_list: &str, major: u32, minor: u32) -> bool {
    devices_list.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let (Some(kind), Some(number), Some(access)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return false;
        };
        let Some((rule_major, rule_minor)) = number.split_once(':') else {
            return false;
        };
        let matches = |rule: &str, wanted: u32| rule == "*" || rule.parse() == Ok(wanted);
        matches!(kind, "a" | "c")
            && matches(rule_major, major)
            && matches(rule_minor, minor)
            && access.contains('r')
            && access.contains('w')
    })
}

/// A running container that holds GPUs and whose devices cgroup no longer lets it open
/// NVIDIA's nodes (`/dev/nvidiactl`, or every `/dev/nvidiaN`): its NVML and CUDA calls fail
/// ("NVML: Unknown Error") while the host's answer. `None` when the allow-list lets it.
pub fn gpu_nodes_denied(devices_list: &str) -> Option<String> {
    let control = allows(devices_list, NVIDIA_MAJOR, NVIDIACTL_MINOR);
    let any_gpu = (0..NVIDIACTL_MINOR - 1).any(|minor| allows(devices_list, NVIDIA_MAJOR, minor));
    let denied: Vec<&str> = [
        (!control).then_some("/dev/nvidiactl (c 195:255)"),
        (!any_gpu).then_some("any GPU node (c 195:N)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!denied.is_empty()).then(|| {
        format!(
            "its devices cgroup (devices.list) no longer allows {}",
            denied.join(" nor ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu::{
        EccCounts, Fact, FailureKind, LoadOutcome, NvmlFacts, RemappedRows, RetiredPages,
    };

    fn sound_health() -> GpuHealth {
        GpuHealth {
            persistence_mode: Fact::Value(true),
            ecc_enabled: Fact::Value(true),
            ecc_volatile: Fact::Value(EccCounts {
                corrected: 0,
                uncorrected: 0,
            }),
            ecc_aggregate: Fact::Value(EccCounts {
                corrected: 3,
                uncorrected: 0,
            }),
            retired_pages: Fact::Value(RetiredPages {
                single_bit: 0,
                double_bit: 0,
            }),
            retired_pages_pending: Fact::Value(false),
            remapped_rows: Fact::Value(RemappedRows {
                correctable: 0,
                uncorrectable: 0,
                pending: false,
                failure: false,
            }),
        }
    }

    #[test]
    fn memory_counters_mark_only_what_they_say() {
        assert!(memory_marks(&sound_health()).is_empty());
        let pending = GpuHealth {
            retired_pages_pending: Fact::Value(true),
            ..sound_health()
        };
        let states: Vec<HealthState> = memory_marks(&pending)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        assert_eq!(states, [HealthState::Warn]);
        let double_bit = GpuHealth {
            ecc_aggregate: Fact::Value(EccCounts {
                corrected: 0,
                uncorrected: 2,
            }),
            ..pending
        };
        let states: Vec<HealthState> = memory_marks(&double_bit)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        assert_eq!(states, [HealthState::Fatal]);
    }

    fn gpu(index: u32, health: GpuHealth) -> GpuDevice {
        let unread = || NvmlFailure::new(FailureKind::NotSupported, "not in this test");
        let mut device = GpuDevice::unreachable(index, unread());
        device.name = Fact::Value("NVIDIA H100 80GB HBM3".into());
        device.uuid = Fact::Value(format!("GPU-{index}"));
        device.health = health;
        device
    }

    fn lost(index: u32) -> GpuDevice {
        GpuDevice::unreachable(
            index,
            NvmlFailure::new(FailureKind::GpuLost, "GPU is lost")
                .in_function("nvmlDeviceGetHandleByIndex_v2"),
        )
    }

    fn host(gpus: Vec<GpuDevice>) -> GpuFacts {
        GpuFacts {
            library: "libnvidia-ml.so.1".into(),
            nvml: LoadOutcome::Loaded(Box::new(NvmlFacts {
                driver_version: Fact::Value("570.124.06".into()),
                cuda_driver_version: Fact::Error(NvmlFailure::new(FailureKind::Other, "-")),
                nvml_version: Fact::Value("12.570.124.06".into()),
                device_count: Fact::Value(u32::try_from(gpus.len()).unwrap()),
                gpus,
                shutdown_failure: None,
            })),
        }
    }

    #[test]
    fn xids_are_fatal_application_or_other_by_the_list_in_force() {
        assert_eq!(classify_xid(79, &DEFAULT_FATAL_XIDS), XidClass::Fatal);
        assert_eq!(classify_xid(48, &DEFAULT_FATAL_XIDS), XidClass::Fatal);
        assert_eq!(classify_xid(43, &DEFAULT_FATAL_XIDS), XidClass::Application);
        assert_eq!(classify_xid(94, &DEFAULT_FATAL_XIDS), XidClass::Application);
        assert_eq!(classify_xid(62, &DEFAULT_FATAL_XIDS), XidClass::Other);
        // A site that counts 94 as fatal says so in its policy.
        assert_eq!(classify_xid(94, &[94, 79]), XidClass::Fatal);
    }

    #[test]
    fn a_sound_gpu_is_ok_and_an_application_xid_does_not_mark_it() {
        let verdict = classify(&gpu(0, sound_health()), &[43, 13], &DEFAULT_FATAL_XIDS);
        assert_eq!(verdict.state, HealthState::Ok, "{verdict:?}");
        let verdict = classify(&gpu(0, sound_health()), &[79], &DEFAULT_FATAL_XIDS);
        assert_eq!(verdict.state, HealthState::Fatal);
        assert!(verdict.reasons[0].contains("Xid 79"), "{verdict:?}");
    }

    #[test]
    fn unsupported_facts_are_unknown_not_errors() {
        let mut health =
            GpuHealth::all_failing(NvmlFailure::new(FailureKind::NotSupported, "Not Supported"));
        health.persistence_mode = Fact::Value(true);
        let verdict = classify(&gpu(0, health), &[], &DEFAULT_FATAL_XIDS);
        assert_eq!(verdict.state, HealthState::Ok);
    }

    #[test]
    fn a_pending_remap_or_a_remap_failure_is_fatal() {
        let mut health = sound_health();
        health.remapped_rows = Fact::Value(RemappedRows {
            correctable: 0,
            uncorrectable: 1,
            pending: true,
            failure: false,
        });
        assert_eq!(
            classify(&gpu(1, health.clone()), &[], &DEFAULT_FATAL_XIDS).state,
            HealthState::Fatal
        );
        health.remapped_rows = Fact::Value(RemappedRows {
            correctable: 0,
            uncorrectable: 0,
            pending: false,
            failure: true,
        });
        assert_eq!(
            classify(&gpu(1, health), &[], &DEFAULT_FATAL_XIDS).state,
            HealthState::Fatal
        );
    }

    #[test]
    fn double_bit_errors_with_pages_pending_are_fatal_pending_alone_warns() {
        let mut health = sound_health();
        health.retired_pages_pending = Fact::Value(true);
        assert_eq!(
            classify(&gpu(0, health.clone()), &[], &DEFAULT_FATAL_XIDS).state,
            HealthState::Warn
        );
        health.ecc_aggregate = Fact::Value(EccCounts {
            corrected: 0,
            uncorrected: 2,
        });
        assert_eq!(
            classify(&gpu(0, health), &[], &DEFAULT_FATAL_XIDS).state,
            HealthState::Fatal
        );
    }

    #[test]
    fn a_lost_gpu_is_lost_with_the_reset_and_dmesg_fix() {
        let verdict = classify(&lost(2), &[], &DEFAULT_FATAL_XIDS);
        assert_eq!(verdict.state, HealthState::Lost);
        assert_eq!(verdict.state.gauge(), 2);
        let fix = fix(2, verdict.state).unwrap();
        assert!(
            fix.contains("nvidia-smi -r -i 2") && fix.contains("dmesg"),
            "{fix}"
        );
    }

    #[test]
    fn all_gpus_or_a_named_failed_gpu_fails_the_profile_a_count_does_not() {
        let facts = host(vec![gpu(0, sound_health()), lost(1)]);
        let finding = profile_finding(&GpuRequest::All, &facts, &DEFAULT_FATAL_XIDS).unwrap();
        assert_eq!(finding.status, super::super::Status::Fail);
        assert!(finding.message.contains("GPU 1 is lost"), "{finding:?}");
        assert!(
            finding
                .hint
                .as_deref()
                .unwrap()
                .contains("nvidia-smi -r -i 1"),
            "{finding:?}"
        );
        let named = GpuRequest::Devices(vec!["1".into()]);
        assert!(profile_finding(&named, &facts, &DEFAULT_FATAL_XIDS).is_some());
        let other = GpuRequest::Devices(vec!["GPU-0".into()]);
        assert!(profile_finding(&other, &facts, &DEFAULT_FATAL_XIDS).is_none());
        assert!(profile_finding(&GpuRequest::Count(1), &facts, &DEFAULT_FATAL_XIDS).is_none());
    }

    #[test]
    fn stale_cdi_nodes_are_a_warning_with_the_command_that_writes_the_spec() {
        use crate::facts::host::StaleCdiNode;
        assert!(stale_cdi(&[]).is_none());
        let finding = stale_cdi(&[
            StaleCdiNode {
                spec: "/etc/cdi/nvidia.yaml".into(),
                node: "/dev/nvidia3".into(),
                spec_number: None,
                host_number: None,
            },
            StaleCdiNode {
                spec: "/etc/cdi/nvidia.yaml".into(),
                node: "/dev/nvidia0".into(),
                spec_number: Some("195:0".into()),
                host_number: Some("195:1".into()),
            },
        ])
        .unwrap();
        assert_eq!(finding.status, super::super::Status::Warn);
        assert!(
            finding
                .message
                .contains("/dev/nvidia3, which does not exist")
        );
        assert!(finding.message.contains("195:0, /dev has 195:1"));
        assert_eq!(
            finding.hint.as_deref(),
            Some(
                "write the spec again: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`"
            )
        );
    }

    #[test]
    fn persistence_off_warns_on_a_datacenter_host_only() {
        let mut health = sound_health();
        health.persistence_mode = Fact::Value(false);
        let facts = host(vec![gpu(0, health), gpu(1, sound_health())]);
        let found = findings(&facts, &DEFAULT_FATAL_XIDS, true);
        let persistence: Vec<&Finding> = found
            .iter()
            .filter(|finding| finding.id == "gpu.persistence")
            .collect();
        assert_eq!(persistence.len(), 1, "{found:?}");
        assert!(persistence[0].message.contains("GPU 0"), "{found:?}");
        assert!(
            findings(&facts, &DEFAULT_FATAL_XIDS, false)
                .iter()
                .all(|finding| finding.id != "gpu.persistence")
        );
        assert_eq!(
            found
                .iter()
                .filter(|finding| finding.id == "gpu.health")
                .count(),
            1
        );
        // Nothing read, nothing said: a GPU without health facts is not called healthy.
        let unread = host(vec![gpu(
            0,
            GpuHealth::all_failing(NvmlFailure::new(FailureKind::NotSupported, "-")),
        )]);
        assert!(findings(&unread, &DEFAULT_FATAL_XIDS, true).is_empty());
    }

    fn sourced(owner: &str, record: HealthRecord) -> SourcedRecord {
        SourcedRecord {
            owner: owner.into(),
            record,
        }
    }

    #[test]
    fn a_recorded_fatal_xid_keeps_the_gpu_out_until_cleared_by_anyone_or_a_reboot() {
        let sound = gpu(2, sound_health());
        let mut alice = HealthRecord::new("boot-1");
        alice.add_xid("GPU-2", 2, 43, 1_000);
        let records = vec![sourced("alice", alice.clone())];
        // An application Xid never keeps a GPU out.
        assert!(keep_out(&sound, &records, Some("boot-1"), &DEFAULT_FATAL_XIDS).is_none());
        alice.add_xid("GPU-2", 2, 79, 2_000);
        let records = vec![sourced("alice", alice.clone())];
        let why = keep_out(&sound, &records, Some("boot-1"), &DEFAULT_FATAL_XIDS).unwrap();
        assert!(why.contains("GPU 2 is kept out (fatal)"), "{why}");
        assert!(why.contains("Xid 79") && why.contains("alice"), "{why}");
        assert!(why.contains("envctl gpu clear GPU-2"), "{why}");
        assert!(!why.contains("Xid 43"), "{why}");
        // Another boot's record says nothing; a site that counts 79 as harmless neither.
        assert!(keep_out(&sound, &records, Some("boot-2"), &DEFAULT_FATAL_XIDS).is_none());
        assert!(keep_out(&sound, &records, Some("boot-1"), &[48]).is_none());
        // Bob's clear covers Alice's record; a later Xid marks it again.
        let mut bob = HealthRecord::new("boot-1");
        bob.clear("GPU-2", 2, 3_000);
        let mut records = vec![sourced("alice", alice.clone()), sourced("bob", bob)];
        assert!(keep_out(&sound, &records, Some("boot-1"), &DEFAULT_FATAL_XIDS).is_none());
        alice.add_xid("GPU-2", 2, 79, 4_000);
        records[0] = sourced("alice", alice);
        assert_eq!(
            recorded_failures(&records, "boot-1", "GPU-2", &DEFAULT_FATAL_XIDS)[0].count,
            2
        );
    }

    #[test]
    fn a_gpu_nvml_calls_failed_is_kept_out_with_the_reset_not_a_clear() {
        let mut health = sound_health();
        health.remapped_rows = Fact::Value(RemappedRows {
            correctable: 0,
            uncorrectable: 1,
            pending: true,
            failure: false,
        });
        let why = keep_out(&gpu(1, health), &[], None, &DEFAULT_FATAL_XIDS).unwrap();
        assert!(why.contains("row remap is pending"), "{why}");
        assert!(why.contains("nvidia-smi -r -i 1"), "{why}");
        assert!(!why.contains("gpu clear"), "{why}");
        assert!(keep_out(&gpu(1, sound_health()), &[], None, &DEFAULT_FATAL_XIDS).is_none());
    }

    #[test]
    fn a_record_keeps_its_size_bounded_and_a_clear_forgets_what_came_before() {
        let mut record = HealthRecord::new("boot");
        for xid in 0..100 {
            record.add_xid("GPU-0", 0, xid, i64::from(xid));
        }
        assert_eq!(record.gpus[0].xids.len(), RECORDED_XIDS);
        assert!(record.gpus[0].xids.iter().any(|seen| seen.xid == 99));
        record.clear("GPU-0", 0, 1_000);
        assert!(record.gpus[0].xids.is_empty());
        assert_eq!(record.gpus[0].cleared_at_ms, Some(1_000));
        assert_eq!(record.clone().for_boot("other"), HealthRecord::new("other"));
        assert_eq!(when_utc(0), "1970-01-01 00:00:00 UTC");
    }

    #[test]
    fn a_container_whose_device_rules_lost_the_nvidia_nodes_is_told_apart() {
        let given = "c 1:3 rwm\nc 195:22 rwm\nc 195:255 rwm\nc 235:* rwm\n";
        assert_eq!(gpu_nodes_denied(given), None);
        assert_eq!(gpu_nodes_denied("a *:* rwm\n"), None);
        assert_eq!(gpu_nodes_denied("c 195:* rw\n"), None);
        // After `systemctl daemon-reload` with the systemd cgroup driver: the NVIDIA rules
        // are gone, the others stay.
        let cut = gpu_nodes_denied("c 1:3 rwm\nc 136:* rwm\n").unwrap();
        assert!(
            cut.contains("/dev/nvidiactl") && cut.contains("any GPU node"),
            "{cut}"
        );
        // Read-only is no access for NVML.
        assert!(gpu_nodes_denied("c 195:* r\n").is_some());
        assert!(
            gpu_nodes_denied("c 195:255 rwm\n")
                .unwrap()
                .contains("any GPU node")
        );
        assert!(gpu_nodes_denied("garbage\n\nc x:y rwm").is_some());
    }
}
