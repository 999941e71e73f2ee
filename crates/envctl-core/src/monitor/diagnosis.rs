//! Diagnosis: pure rules over a window of snapshots that name a likely cause, with the
//! numbers that show it and what to change.
//!
//! | id | fires when | window |
//! |---|---|---|
//! | `input-bound` | a container's CPU is near its limit (or one core is saturated) while its GPUs stay below [`INPUT_BOUND_GPU_BELOW_PERCENT`] | sustained |
//! | `host-memory-growing` | a container's memory grows steadily, fits a line, and has not levelled off; or the OOM killer ended it (then with the curve up to it, however short) | [`LEAK_MIN_SECONDS`]; any for the OOM killer |
//! | `gpu-memory-near-full` | a GPU's memory is at least [`GPU_MEMORY_FULL_FRACTION`] used | latest sample |
//! | `gpu-uneven-load` | one container's GPUs differ by [`UNEVEN_SPREAD_POINTS`] or more in mean utilisation | sustained |
//! | `gpu-thermal-throttle` | thermal or hardware slowdown in at least [`THROTTLE_MIN_FRACTION`] of the samples | any |
//! | `gpu-power-throttle` | the power cap (or an external power brake) holds the clocks down as often | any |
//! | `gpu-idle` | a container's GPUs stay at or below [`IDLE_GPU_AT_MOST_PERCENT`] while it runs | sustained |
//!
//! "Sustained" means at least [`SUSTAINED_MIN_SAMPLES`] samples, with the condition true in
//! at least [`SUSTAINED_FRACTION`] of them: one slow batch or one checkpoint write is not a
//! diagnosis. So `--once` (one snapshot) can only show the rules that read a single moment.
//! Utilisation is in percent, CPU on the docker CLI's scale (100 % = one core).

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::snapshot::{ContainerRow, EndedContainer, GpuRow, Snapshot};
use crate::units::binary_spaced;

/// The fewest samples a sustained rule looks at.
pub const SUSTAINED_MIN_SAMPLES: usize = 5;
/// The share of the window a sustained condition must hold in.
pub const SUSTAINED_FRACTION: f64 = 0.8;
/// "Near its limit": CPU at or above this share of the cores the container may use.
pub const INPUT_BOUND_CPU_OF_LIMIT: f64 = 0.9;
/// "One core saturated": a container allowed at least two cores whose CPU sits in this
/// band is, most likely, one busy thread — a DataLoader with `num_workers=0`.
pub const ONE_CORE_BAND_PERCENT: (f64, f64) = (90.0, 110.0);
/// GPUs below this mean utilisation are starved when the CPU is the bottleneck.
pub const INPUT_BOUND_GPU_BELOW_PERCENT: f64 = 50.0;
/// The fewest samples, and the shortest span, over which memory growth counts as steady.
pub const LEAK_MIN_SAMPLES: usize = 10;
pub const LEAK_MIN_SECONDS: f64 = 60.0;
/// Growth over the window must reach both this many bytes and this share of the start.
pub const LEAK_MIN_GROWTH_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
pub const LEAK_MIN_GROWTH_FRACTION: f64 = 0.10;
/// How well the memory must follow a straight line (coefficient of determination, r²).
pub const LEAK_MIN_FIT: f64 = 0.9;
/// No plateau: the slope over the last third of the window is still at least this share
/// of the slope over the whole window.
pub const LEAK_PLATEAU_RATIO: f64 = 0.5;
/// GPU memory this full leaves no room for the next allocation.
pub const GPU_MEMORY_FULL_FRACTION: f64 = 0.95;
/// Spread, in percentage points, between a container's busiest and idlest GPU.
pub const UNEVEN_SPREAD_POINTS: f64 = 30.0;
/// Share of the samples with a throttle reason before it is reported.
pub const THROTTLE_MIN_FRACTION: f64 = 0.5;
/// A GPU at or below this utilisation is idle.
pub const IDLE_GPU_AT_MOST_PERCENT: f64 = 5.0;
/// The span of samples the live view keeps for the rules.
pub const WINDOW_SECONDS: f64 = 120.0;

/// `nvmlClocksThrottleReasons` bits the thermal and power rules read.
const THERMAL_REASONS: &[&str] = &["sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"];
const POWER_REASONS: &[&str] = &["sw_power_cap", "hw_power_brake_slowdown"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Info,
}

/// A named likely cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Stable: `input-bound`, `host-memory-growing`, …
    pub id: String,
    pub severity: Severity,
    /// The container's name, or `gpu N`.
    pub subject: String,
    /// What was seen, with its numbers.
    pub message: String,
    /// The same numbers, named, for machines.
    pub evidence: BTreeMap<String, f64>,
    /// What to change.
    pub hint: String,
}

/// The recent snapshots, oldest first, bounded by a number of samples.
#[derive(Debug, Clone)]
pub struct Window {
    snapshots: VecDeque<Snapshot>,
    capacity: usize,
}

impl Window {
    /// A window holding [`WINDOW_SECONDS`] of samples taken every `interval_seconds`.
    pub fn for_interval(interval_seconds: f64) -> Window {
        let samples = (WINDOW_SECONDS / interval_seconds.max(0.01)).ceil();
        // Never fewer than the sustained rules need, nor absurdly many for tiny intervals.
        let capacity = (samples as usize).clamp(SUSTAINED_MIN_SAMPLES.max(LEAK_MIN_SAMPLES), 1200);
        Window {
            snapshots: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Adds the newest snapshot (its own diagnoses are not kept) and forgets the oldest.
    pub fn push(&mut self, snapshot: &Snapshot) {
        if self.snapshots.len() == self.capacity {
            self.snapshots.pop_front();
        }
        let mut kept = snapshot.clone();
        kept.diagnoses.clear();
        self.snapshots.push_back(kept);
    }

    /// How many snapshots the window holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.snapshots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Every rule over the snapshots held now.
    pub fn diagnose(&mut self) -> Vec<Diagnosis> {
        diagnose(self.snapshots.make_contiguous())
    }
}

/// Every rule over `window` (oldest first), warnings first.
pub fn diagnose(window: &[Snapshot]) -> Vec<Diagnosis> {
    let Some(latest) = window.last() else {
        return Vec::new();
    };
    let mut diagnoses = Vec::new();
    for container in &latest.containers {
        let series = container_series(window, &container.id);
        let input_bound = input_bound(container, &series);
        let bound = input_bound.is_some();
        diagnoses.extend(input_bound);
        diagnoses.extend(memory_growing(container, &series));
        diagnoses.extend(uneven_load(container, &series));
        if !bound {
            diagnoses.extend(gpu_idle(container, &series));
        }
        diagnoses.extend(lost_gpus(container));
    }
    for ended in latest.ended.iter().filter(|ended| ended.out_of_memory()) {
        let series = container_series(window, &ended.id);
        // Once its last sample has left the window, so has the diagnosis.
        if !series.is_empty() {
            diagnoses.push(out_of_memory(ended, &series));
        }
    }
    for gpu in &latest.gpus {
        let series = gpu_series(window, gpu.index);
        diagnoses.extend(memory_near_full(gpu));
        diagnoses.extend(throttled(gpu, &series, Throttle::Thermal));
        diagnoses.extend(throttled(gpu, &series, Throttle::Power));
        diagnoses.extend(unhealthy(gpu, latest));
    }
    diagnoses.sort_by(|first, second| {
        (first.severity, &first.subject, &first.id).cmp(&(
            second.severity,
            &second.subject,
            &second.id,
        ))
    });
    diagnoses
}

/// The OOM killer's diagnosis of `ended` over a whole recording (`stats report`): the
/// rule the live view applies, over its container's samples in the [`WINDOW_SECONDS`] up
/// to the end; none when the OOM killer did not end it or no sample of it falls there.
pub fn out_of_memory_in(snapshots: &[Snapshot], ended: &EndedContainer) -> Option<Diagnosis> {
    if !ended.out_of_memory() {
        return None;
    }
    let series: Vec<Moment<'_>> = container_series(snapshots, &ended.id)
        .into_iter()
        .filter(|moment| moment.time <= ended.time && moment.time >= ended.time - WINDOW_SECONDS)
        .collect();
    (!series.is_empty()).then(|| out_of_memory(ended, &series))
}

/// One container's rows with the GPU rows of the same moments.
struct Moment<'a> {
    time: f64,
    row: &'a ContainerRow,
    gpus: &'a [GpuRow],
}

fn container_series<'a>(window: &'a [Snapshot], id: &str) -> Vec<Moment<'a>> {
    window
        .iter()
        .filter_map(|snapshot| {
            let row = snapshot.containers.iter().find(|row| row.id == id)?;
            Some(Moment {
                time: snapshot.time,
                row,
                gpus: &snapshot.gpus,
            })
        })
        .collect()
}

fn gpu_series(window: &[Snapshot], index: u32) -> Vec<&GpuRow> {
    window
        .iter()
        .filter_map(|snapshot| snapshot.gpus.iter().find(|gpu| gpu.index == index))
        .collect()
}

/// The utilisation of each of `indices` at one moment; none when any is unknown.
fn utilizations(gpus: &[GpuRow], indices: &[u32]) -> Option<Vec<f64>> {
    indices
        .iter()
        .map(|index| {
            gpus.iter()
                .find(|gpu| gpu.index == *index)
                .and_then(|gpu| gpu.utilization_percent)
        })
        .collect()
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn sustained(hits: usize, samples: usize) -> bool {
    samples >= SUSTAINED_MIN_SAMPLES && hits as f64 >= SUSTAINED_FRACTION * samples as f64
}

fn gpu_list(indices: &[u32]) -> String {
    let names: Vec<String> = indices.iter().map(u32::to_string).collect();
    format!(
        "GPU{} {}",
        if indices.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

fn input_bound(container: &ContainerRow, series: &[Moment<'_>]) -> Option<Diagnosis> {
    if container.gpus.is_empty() {
        return None;
    }
    let mut samples = 0;
    let mut near_limit_hits = 0;
    let mut one_core_hits = 0;
    let (mut cpu_values, mut gpu_values, mut limits) = (Vec::new(), Vec::new(), Vec::new());
    for moment in series {
        let (Some(cpu), Some(limit_cores), Some(utilization)) = (
            moment.row.cpu_percent,
            moment.row.cpu_limit_cores,
            utilizations(moment.gpus, &container.gpus),
        ) else {
            continue;
        };
        samples += 1;
        let gpu_mean = mean(&utilization);
        cpu_values.push(cpu);
        gpu_values.push(gpu_mean);
        limits.push(limit_cores * 100.0);
        if gpu_mean >= INPUT_BOUND_GPU_BELOW_PERCENT {
            continue;
        }
        if cpu >= INPUT_BOUND_CPU_OF_LIMIT * limit_cores * 100.0 {
            near_limit_hits += 1;
        } else if limit_cores >= 2.0
            && (ONE_CORE_BAND_PERCENT.0..=ONE_CORE_BAND_PERCENT.1).contains(&cpu)
        {
            one_core_hits += 1;
        }
    }
    if !sustained(near_limit_hits + one_core_hits, samples) {
        return None;
    }
    let (cpu_mean, gpu_mean, limit_percent) = (mean(&cpu_values), mean(&gpu_values), mean(&limits));
    let gpus = gpu_list(&container.gpus);
    let one_core = one_core_hits > near_limit_hits;
    let (message, hint) = if one_core {
        (
            format!(
                "one core is saturated (CPU {cpu_mean:.0}% of a {limit_percent:.0}% limit) while {gpus} average {gpu_mean:.0}% busy, in {} of {samples} samples",
                near_limit_hits + one_core_hits
            ),
            "the GPUs wait for data loaded by a single thread, likely a DataLoader with `num_workers=0`: set `num_workers` to the cores the container has (minus one), with `pin_memory=True` and `persistent_workers=True`".to_string(),
        )
    } else {
        (
            format!(
                "CPU at {cpu_mean:.0}% of its {limit_percent:.0}% limit while {gpus} average {gpu_mean:.0}% busy, in {} of {samples} samples",
                near_limit_hits + one_core_hits
            ),
            "the GPUs wait for the CPU: raise DataLoader `num_workers` and set `pin_memory=True`, move decoding and augmentation to the GPU (DALI, torchvision v2 on tensors), or raise `cpus` in the profile".to_string(),
        )
    };
    Some(Diagnosis {
        id: "input-bound".into(),
        severity: Severity::Warning,
        subject: container.name.clone(),
        message,
        evidence: BTreeMap::from([
            ("cpu_percent_mean".into(), round(cpu_mean)),
            ("cpu_limit_percent".into(), round(limit_percent)),
            ("gpu_utilization_percent_mean".into(), round(gpu_mean)),
            ("samples".into(), samples as f64),
            (
                "samples_matching".into(),
                (near_limit_hits + one_core_hits) as f64,
            ),
        ]),
        hint,
    })
}

/// Least-squares line through `points`: (slope, r²).
fn linear_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let count = points.len() as f64;
    let mean_x = points.iter().map(|point| point.0).sum::<f64>() / count;
    let mean_y = points.iter().map(|point| point.1).sum::<f64>() / count;
    let (mut covariance, mut variance_x, mut variance_y) = (0.0, 0.0, 0.0);
    for (x, y) in points {
        covariance += (x - mean_x) * (y - mean_y);
        variance_x += (x - mean_x).powi(2);
        variance_y += (y - mean_y).powi(2);
    }
    if variance_x == 0.0 {
        return None;
    }
    let slope = covariance / variance_x;
    let fit = if variance_y == 0.0 {
        0.0
    } else {
        covariance.powi(2) / (variance_x * variance_y)
    };
    Some((slope, fit))
}

fn memory_growing(container: &ContainerRow, series: &[Moment<'_>]) -> Option<Diagnosis> {
    let points: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|moment| Some((moment.time, moment.row.memory_bytes? as f64)))
        .collect();
    let (first, last) = (points.first()?, points.last()?);
    let seconds = last.0 - first.0;
    if points.len() < LEAK_MIN_SAMPLES || seconds < LEAK_MIN_SECONDS {
        return None;
    }
    let (slope, fit) = linear_fit(&points)?;
    let growth = slope * seconds;
    if slope <= 0.0
        || growth < LEAK_MIN_GROWTH_BYTES
        || growth < LEAK_MIN_GROWTH_FRACTION * first.1
        || fit < LEAK_MIN_FIT
    {
        return None;
    }
    let tail = &points[points.len() - points.len() / 3..];
    let (tail_slope, _) = linear_fit(tail)?;
    if tail_slope < LEAK_PLATEAU_RATIO * slope {
        return None;
    }
    let per_minute = slope * 60.0;
    let mut message = format!(
        "memory grew steadily from {} to {} in {seconds:.0} s (+{}/min, r² {fit:.2}) without levelling off",
        binary_spaced(first.1),
        binary_spaced(last.1),
        binary_spaced(per_minute)
    );
    let mut evidence = BTreeMap::from([
        ("start_bytes".into(), first.1.round()),
        ("end_bytes".into(), last.1.round()),
        ("growth_bytes_per_minute".into(), per_minute.round()),
        ("fit_r2".into(), (fit * 1000.0).round() / 1000.0),
        ("seconds".into(), seconds.round()),
    ]);
    if let Some(limit) = container.memory_limit_bytes {
        let remaining = limit as f64 - last.1;
        if remaining > 0.0 {
            let minutes = remaining / per_minute;
            let _ = write!(
                message,
                "; at this rate it reaches its {} limit in {minutes:.0} min",
                binary_spaced(limit as f64)
            );
            evidence.insert("minutes_to_limit".into(), minutes.round());
        }
    }
    Some(Diagnosis {
        id: "host-memory-growing".into(),
        severity: Severity::Warning,
        subject: container.name.clone(),
        message,
        evidence,
        hint: "a likely leak: a tensor kept with its autograd graph (`total_loss += loss`) keeps every step alive; accumulate `loss.item()` or `loss.detach()`, and do not keep outputs in lists across steps".into(),
    })
}

/// The OOM killer ended a container: the memory it reached, against its limit, and how
/// fast it grew up to it.
fn out_of_memory(ended: &EndedContainer, series: &[Moment<'_>]) -> Diagnosis {
    let points: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|moment| Some((moment.time, moment.row.memory_bytes? as f64)))
        .collect();
    let limit = series
        .iter()
        .rev()
        .find_map(|moment| moment.row.memory_limit_bytes);
    let mut message = ended.sentence();
    let mut evidence = BTreeMap::from([("oom_killed".into(), 1.0)]);
    if let Some(code) = ended.exit_code {
        evidence.insert("exit_code".into(), code as f64);
    }
    if let Some(limit) = limit {
        let _ = write!(message, " at its {} limit", binary_spaced(limit as f64));
        evidence.insert("memory_limit_bytes".into(), limit as f64);
    }
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        let seconds = last.0 - first.0;
        let _ = write!(
            message,
            "; its memory was {} at the last sample",
            binary_spaced(last.1)
        );
        evidence.insert("end_bytes".into(), last.1.round());
        evidence.insert("start_bytes".into(), first.1.round());
        evidence.insert("seconds".into(), seconds.round());
        if let Some((slope, _)) = linear_fit(&points).filter(|(slope, _)| *slope > 0.0) {
            let _ = write!(
                message,
                ", grown from {} in {seconds:.0} s (+{}/min)",
                binary_spaced(first.1),
                binary_spaced(slope * 60.0)
            );
            evidence.insert("growth_bytes_per_minute".into(), (slope * 60.0).round());
        }
    }
    Diagnosis {
        id: "host-memory-growing".into(),
        severity: Severity::Warning,
        subject: ended.name.clone(),
        message,
        evidence,
        hint: "it needed more memory than its limit allows: raise `memory` in the profile if the job needs it, or find what grows (a tensor kept with its autograd graph, outputs kept in a list, a DataLoader with too many workers each holding a copy of the data set)".into(),
    }
}

fn uneven_load(container: &ContainerRow, series: &[Moment<'_>]) -> Option<Diagnosis> {
    if container.gpus.len() < 2 {
        return None;
    }
    let rows: Vec<Vec<f64>> = series
        .iter()
        .filter_map(|moment| utilizations(moment.gpus, &container.gpus))
        .collect();
    if rows.len() < SUSTAINED_MIN_SAMPLES {
        return None;
    }
    let means: Vec<f64> = (0..container.gpus.len())
        .map(|column| mean(&rows.iter().map(|row| row[column]).collect::<Vec<_>>()))
        .collect();
    let (busiest, idlest) = extremes(&means)?;
    let spread = means[busiest] - means[idlest];
    if spread < UNEVEN_SPREAD_POINTS {
        return None;
    }
    let mut evidence: BTreeMap<String, f64> = container
        .gpus
        .iter()
        .zip(&means)
        .map(|(index, value)| {
            (
                format!("gpu_{index}_utilization_percent_mean"),
                round(*value),
            )
        })
        .collect();
    evidence.insert("spread_points".into(), round(spread));
    evidence.insert("samples".into(), rows.len() as f64);
    Some(Diagnosis {
        id: "gpu-uneven-load".into(),
        severity: Severity::Warning,
        subject: container.name.clone(),
        message: format!(
            "GPU {} averages {:.0}% busy but GPU {} only {:.0}% ({spread:.0} points apart over {} samples)",
            container.gpus[busiest],
            means[busiest],
            container.gpus[idlest],
            means[idlest],
            rows.len()
        ),
        evidence,
        hint: "`nn.DataParallel` gathers outputs and computes the loss on GPU 0: use DistributedDataParallel (`torchrun --nproc-per-node N`); otherwise check that every rank uses its own `cuda:LOCAL_RANK` and gets an equal share of each batch".into(),
    })
}

fn extremes(values: &[f64]) -> Option<(usize, usize)> {
    let busiest =
        (0..values.len()).max_by(|first, second| values[*first].total_cmp(&values[*second]))?;
    let idlest =
        (0..values.len()).min_by(|first, second| values[*first].total_cmp(&values[*second]))?;
    Some((busiest, idlest))
}

fn gpu_idle(container: &ContainerRow, series: &[Moment<'_>]) -> Option<Diagnosis> {
    if container.gpus.is_empty() {
        return None;
    }
    let busiest: Vec<f64> = series
        .iter()
        .filter_map(|moment| utilizations(moment.gpus, &container.gpus))
        .map(|values| values.into_iter().fold(0.0, f64::max))
        .collect();
    let hits = busiest
        .iter()
        .filter(|value| **value <= IDLE_GPU_AT_MOST_PERCENT)
        .count();
    if !sustained(hits, busiest.len()) {
        return None;
    }
    let seconds = match (series.first(), series.last()) {
        (Some(first), Some(last)) => last.time - first.time,
        _ => 0.0,
    };
    let held = container.gpu_memory_bytes.filter(|bytes| *bytes > 0);
    let gpus = gpu_list(&container.gpus);
    let (message, hint) = match held {
        Some(held) => (
            format!(
                "{gpus} at most {:.0}% busy for {seconds:.0} s while the container holds {} of GPU memory",
                busiest.iter().copied().fold(0.0, f64::max),
                binary_spaced(held as f64)
            ),
            "a process holds GPU memory but computes nothing: a stalled job (a collective waiting for a lost rank, a blocked data pipeline), a finished notebook kernel, or a debugger stop; look at its stack (`py-spy dump --pid PID`) or free the memory".to_string(),
        ),
        None => (
            format!(
                "{gpus} at most {:.0}% busy for {seconds:.0} s while the container runs, and it holds no GPU memory",
                busiest.iter().copied().fold(0.0, f64::max)
            ),
            "the container was given GPUs it does not use: check that CUDA works inside it (`envctl exec TARGET nvidia-check`) and that the code moves the model and batches to `cuda`".to_string(),
        ),
    };
    let mut evidence = BTreeMap::from([
        (
            "gpu_utilization_percent_max".into(),
            round(busiest.iter().copied().fold(0.0, f64::max)),
        ),
        ("samples".into(), busiest.len() as f64),
        ("seconds".into(), seconds.round()),
    ]);
    if let Some(held) = held {
        evidence.insert("gpu_memory_bytes".into(), held as f64);
    }
    Some(Diagnosis {
        id: "gpu-idle".into(),
        severity: Severity::Warning,
        subject: container.name.clone(),
        message,
        evidence,
        hint,
    })
}

fn memory_near_full(gpu: &GpuRow) -> Option<Diagnosis> {
    let (used, total) = (
        gpu.memory_used_bytes?,
        gpu.memory_total_bytes.filter(|total| *total > 0)?,
    );
    let fraction = used as f64 / total as f64;
    if fraction < GPU_MEMORY_FULL_FRACTION {
        return None;
    }
    // Who holds it: per container, then host processes. A holder's amount is unknown
    // (None) as soon as NVML gives no memory for one of its processes: a partial sum would
    // understate it, and a 0 would say it holds nothing.
    let mut holders: BTreeMap<String, Option<u64>> = BTreeMap::new();
    for process in &gpu.processes {
        let owner = process
            .container
            .clone()
            .unwrap_or_else(|| format!("pid {}", process.pid));
        let held = holders.entry(owner).or_insert(Some(0));
        *held = held
            .zip(process.used_memory_bytes)
            .map(|(sum, bytes)| sum.saturating_add(bytes));
    }
    let mut holders: Vec<(String, Option<u64>)> = holders.into_iter().collect();
    // Largest known amounts first; holders of an unknown amount come after them (in name
    // order), since nothing says how they rank, and ranking them as 0 would be a guess.
    holders.sort_by_key(|(_, held)| (held.is_none(), std::cmp::Reverse(*held)));
    let mut message = format!(
        "GPU {} memory {} of {} used ({:.0}%)",
        gpu.index,
        binary_spaced(used as f64),
        binary_spaced(total as f64),
        fraction * 100.0
    );
    if !holders.is_empty() {
        let named: Vec<String> = holders
            .iter()
            .take(3)
            .map(|(owner, held)| match held {
                Some(held) => format!("{owner} {}", binary_spaced(*held as f64)),
                None => format!("{owner} an unknown amount"),
            })
            .collect();
        let _ = write!(message, ", held by {}", named.join(", "));
    }
    Some(Diagnosis {
        id: "gpu-memory-near-full".into(),
        severity: Severity::Warning,
        subject: format!("gpu {}", gpu.index),
        message,
        evidence: BTreeMap::from([
            ("memory_used_bytes".into(), used as f64),
            ("memory_total_bytes".into(), total as f64),
            ("used_fraction".into(), (fraction * 1000.0).round() / 1000.0),
        ]),
        hint: "the next allocation may fail with `CUDA out of memory`: lower the batch size, use bf16 autocast or activation checkpointing; for fragmentation set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch's cache keeps freed memory reserved, so a running job can sit near full on purpose)".into(),
    })
}

#[derive(Clone, Copy)]
enum Throttle {
    Thermal,
    Power,
}

/// A GPU whose clocks were held down for `kind`'s reasons in at least
/// [`THROTTLE_MIN_FRACTION`] of the samples (`series`) that read its throttle reasons.
fn throttled(gpu: &GpuRow, series: &[&GpuRow], kind: Throttle) -> Option<Diagnosis> {
    let reasons = match kind {
        Throttle::Thermal => THERMAL_REASONS,
        Throttle::Power => POWER_REASONS,
    };
    let throttling = Throttling::of(series, reasons)?;
    let mut evidence = BTreeMap::from([
        ("samples".into(), throttling.known.len() as f64),
        ("samples_throttled".into(), throttling.hits.len() as f64),
    ]);
    let words = match kind {
        Throttle::Thermal => thermal_words(gpu, &throttling, &mut evidence),
        Throttle::Power => power_words(gpu, &throttling, &mut evidence),
    };
    Some(Diagnosis {
        id: words.id.into(),
        severity: words.severity,
        subject: format!("gpu {}", gpu.index),
        message: words.message,
        evidence,
        hint: words.hint,
    })
}

/// The samples of one GPU as a throttle diagnosis counts them.
struct Throttling<'r> {
    /// The samples that read its throttle reasons.
    known: Vec<&'r GpuRow>,
    /// Those of them held down for one of the reasons looked for.
    hits: Vec<&'r GpuRow>,
    /// The reasons looked for that were seen, sorted.
    seen: Vec<&'r str>,
}

impl<'r> Throttling<'r> {
    /// The throttling of `series` for `reasons`; `None` below [`THROTTLE_MIN_FRACTION`] of
    /// the known samples (or with none known).
    fn of(series: &[&'r GpuRow], reasons: &[&str]) -> Option<Self> {
        let known: Vec<&GpuRow> = series
            .iter()
            .copied()
            .filter(|row| row.throttle_reasons_mask.is_some())
            .collect();
        let hits: Vec<&GpuRow> = known
            .iter()
            .copied()
            .filter(|row| {
                row.throttle_reasons
                    .iter()
                    .any(|reason| reasons.contains(&reason.as_str()))
            })
            .collect();
        if known.is_empty() || (hits.len() as f64) < THROTTLE_MIN_FRACTION * known.len() as f64 {
            return None;
        }
        let mut seen: Vec<&str> = hits
            .iter()
            .flat_map(|row| row.throttle_reasons.iter())
            .map(String::as_str)
            .filter(|reason| reasons.contains(reason))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        Some(Throttling { known, hits, seen })
    }
}

/// What a throttle diagnosis says: its id, severity, message and hint.
struct ThrottleWords {
    id: &'static str,
    severity: Severity,
    message: String,
    hint: String,
}

/// Thermal throttling, with the hottest temperature read where there is one.
fn thermal_words(
    gpu: &GpuRow,
    throttling: &Throttling<'_>,
    evidence: &mut BTreeMap<String, f64>,
) -> ThrottleWords {
    let (known, hits) = (&throttling.known, &throttling.hits);
    let hottest = known
        .iter()
        .filter_map(|row| row.temperature_c)
        .fold(f64::NAN, f64::max);
    let mut message = format!(
        "GPU {} clocks held down by {} {}",
        gpu.index,
        throttling.seen.join(", "),
        how_often(hits.len(), known.len())
    );
    if hottest.is_finite() {
        let up_to = if known.len() == 1 { "" } else { "up to " };
        let _ = write!(message, "; {up_to}{hottest:.0} °C");
        evidence.insert("temperature_c_max".into(), hottest);
    }
    ThrottleWords {
        id: "gpu-thermal-throttle",
        severity: Severity::Warning,
        message,
        hint: "check cooling: fans, airflow, dust, the room's inlet temperature (`nvidia-smi -q -d TEMPERATURE,PERFORMANCE`); `hw_slowdown` without heat points at the power supply".to_string(),
    }
}

/// Power throttling, with the mean draw against the limit; a warning when an external
/// power brake cut it, information otherwise (expected under full load).
fn power_words(
    gpu: &GpuRow,
    throttling: &Throttling<'_>,
    evidence: &mut BTreeMap<String, f64>,
) -> ThrottleWords {
    let (known, hits) = (&throttling.known, &throttling.hits);
    let brake = throttling.seen.contains(&"hw_power_brake_slowdown");
    let draws: Vec<f64> = hits.iter().filter_map(|row| row.power_w).collect();
    let mut message = format!(
        "GPU {} is power-limited ({}) {}",
        gpu.index,
        throttling.seen.join(", "),
        how_often(hits.len(), known.len())
    );
    if let (false, Some(limit)) = (draws.is_empty(), gpu.power_limit_w) {
        let _ = write!(message, ": {:.0} W of its {limit:.0} W limit", mean(&draws));
        evidence.insert("power_w_mean".into(), round(mean(&draws)));
        evidence.insert("power_limit_w".into(), limit);
    }
    ThrottleWords {
        id: "gpu-power-throttle",
        severity: if brake {
            Severity::Warning
        } else {
            Severity::Info
        },
        message,
        hint: if brake {
            "an external signal (power supply, chassis) cut the GPU's power: check the PSU and the system's event log".to_string()
        } else {
            "expected under full load; if the limit was lowered (`nvidia-smi -q -d POWER` shows the default), raise it with `sudo nvidia-smi -pl WATTS`".to_string()
        },
    }
}

/// Issue 43: a GPU whose health is fatal or lost (a warning) or warn (information), naming
/// the running containers on it (given it, or with processes on it): their work is at
/// risk, or already gone.
fn unhealthy(gpu: &GpuRow, latest: &Snapshot) -> Option<Diagnosis> {
    use crate::checks::health::HealthState;
    let health = gpu.health.as_ref()?;
    let severity = match health.state {
        HealthState::Ok => return None,
        HealthState::Warn => Severity::Info,
        HealthState::Fatal | HealthState::Lost => Severity::Warning,
    };
    // Every state but `ok` has its fix; a state without one is no diagnosis.
    let hint = crate::checks::health::fix(gpu.index, health.state)?;
    let mut on_it: Vec<&str> = latest
        .containers
        .iter()
        .filter(|container| container.gpus.contains(&gpu.index))
        .map(|container| container.name.as_str())
        .chain(
            gpu.processes
                .iter()
                .filter_map(|process| process.container.as_deref()),
        )
        .collect();
    on_it.sort_unstable();
    on_it.dedup();
    let mut message = format!(
        "GPU {} is {}: {}",
        gpu.index,
        health.state.word(),
        health.reasons.join("; ")
    );
    if !on_it.is_empty() {
        let _ = write!(message, "; running on it: {}", on_it.join(", "));
    }
    let mut evidence = BTreeMap::new();
    evidence.insert("health".into(), f64::from(health.state.gauge()));
    Some(Diagnosis {
        id: "gpu-unhealthy".into(),
        severity,
        subject: format!("gpu {}", gpu.index),
        message,
        evidence,
        hint,
    })
}

/// Issue 43: a running container that lost its GPUs from inside: its device rules no
/// longer allow NVIDIA's nodes, so its NVML and CUDA calls fail ("NVML: Unknown Error")
/// while the host's answer. The known cause is a systemd reload on a host whose engine
/// uses the systemd cgroup driver (NVIDIA's notice on `systemctl daemon-reload`,
/// NVIDIA/nvidia-container-toolkit#48).
fn lost_gpus(container: &ContainerRow) -> Option<Diagnosis> {
    let why = container.gpu_nodes_denied.as_ref()?;
    let gpus: Vec<String> = container.gpus.iter().map(u32::to_string).collect();
    let mut evidence = BTreeMap::new();
    evidence.insert("gpus".into(), gpus.len() as f64);
    Some(Diagnosis {
        id: "gpu-access-lost".into(),
        severity: Severity::Warning,
        subject: container.name.clone(),
        message: format!(
            "{} lost its GPU{}{}: {why}, so its NVML and CUDA calls fail (\"NVML: Unknown Error\") while the host's answer; the known cause is `systemctl daemon-reload` (or another systemd reload) on a host whose container engine uses the systemd cgroup driver (NVIDIA's notice on it)",
            container.name,
            if gpus.len() == 1 { "" } else { "s" },
            if gpus.is_empty() {
                String::new()
            } else {
                format!(" {}", gpus.join(","))
            }
        ),
        evidence,
        hint: format!(
            "`docker restart {}` gives the GPUs back; to keep it from happening, give GPUs through CDI (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, then `--device nvidia.com/gpu=N`) or make the /dev/char links the rules name (`sudo nvidia-ctk system create-dev-char-symlinks --create-all`)",
            container.name
        ),
    })
}

/// `now` for a single snapshot (`--once`), else `in 6 of 10 samples`.
fn how_often(hits: usize, samples: usize) -> String {
    if samples == 1 {
        "now".into()
    } else {
        format!("in {hits} of {samples} samples")
    }
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}
