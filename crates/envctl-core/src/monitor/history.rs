//! The recent past of `envctl stats`: a ring of compact points (a container's CPU and
//! memory, a GPU's utilisation, memory, temperature and power) bounded by a window, the
//! curves the dashboard of `--serve` draws and the sparklines of the live table.
//!
//! Memory is bounded twice: at most `window / interval` points, each with the numbers of
//! the containers and GPUs of its moment only; a container's name and profile are held
//! once, shared by its points, and forgotten with its last point.
//!
//! [`History::document`] gives the points after a sequence number as columns (one array
//! a value, aligned with `times`; `null` where a value was unknown or the container was
//! not there), the answer of `/api/v1/history`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::failure::FailureSubject;
use super::snapshot::Snapshot;

/// The span the dashboard shows when `--window` is not given.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(600);

/// The most points a history holds, whatever window and interval ask for: a day of
/// samples at 2 s, some megabytes at 50 containers.
pub const MAXIMUM_POINTS: usize = 43_200;

/// Who a container is, shared by all its points.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ContainerName {
    id: String,
    name: String,
    profile: Option<String>,
}

/// A container's numbers at one moment.
#[derive(Debug, Clone, PartialEq)]
struct ContainerPoint {
    who: Arc<ContainerName>,
    cpu_percent: Option<f64>,
    memory_bytes: Option<u64>,
    memory_limit_bytes: Option<u64>,
    gpu_memory_bytes: Option<u64>,
}

/// A GPU's numbers at one moment.
#[derive(Debug, Clone, PartialEq)]
struct GpuPoint {
    index: u32,
    utilization_percent: Option<f64>,
    memory_used_bytes: Option<u64>,
    memory_total_bytes: Option<u64>,
    temperature_c: Option<f64>,
    power_w: Option<f64>,
    power_limit_w: Option<f64>,
}

/// One moment.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    sequence: u64,
    time: f64,
    /// The daemon did not answer at this moment: the curves show a marked gap.
    daemon_lost: bool,
    containers: Vec<ContainerPoint>,
    gpus: Vec<GpuPoint>,
}

/// The last `capacity` moments, oldest first.
#[derive(Debug, Clone)]
pub struct History {
    capacity: usize,
    interval_seconds: f64,
    points: VecDeque<Point>,
    /// Each container id's shared name and how many points hold it.
    names: HashMap<String, (Arc<ContainerName>, usize)>,
    /// GPU names by index, as NVML last gave them.
    gpu_names: BTreeMap<u32, Option<String>>,
    next_sequence: u64,
}

/// How many points a history of `window` at `interval` keeps: at most [`MAXIMUM_POINTS`].
fn capacity(window: Duration, interval: Duration) -> usize {
    let points = (window.as_secs_f64() / interval.as_secs_f64().max(0.001)).ceil();
    if points.is_finite() {
        (points as usize).clamp(2, MAXIMUM_POINTS)
    } else {
        MAXIMUM_POINTS
    }
}

/// The span a history of `window` at `interval` really keeps: `window`, or less where
/// [`MAXIMUM_POINTS`] points do not cover it (`--window 24h` at 1 s keeps 12 h), so that
/// what is said about it is what is kept.
pub fn span_kept(window: Duration, interval: Duration) -> Duration {
    let points = u32::try_from(capacity(window, interval)).unwrap_or(u32::MAX);
    window.min(interval.saturating_mul(points))
}

impl History {
    /// A history of `window` at one point every `interval`: `window / interval` points,
    /// rounded up, at least 2 and at most [`MAXIMUM_POINTS`].
    pub fn new(window: Duration, interval: Duration) -> History {
        let capacity = capacity(window, interval);
        History {
            capacity,
            interval_seconds: interval.as_secs_f64(),
            points: VecDeque::with_capacity(capacity),
            names: HashMap::new(),
            gpu_names: BTreeMap::new(),
            next_sequence: 1,
        }
    }

    /// How many points it holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The sequence number of the newest point; 0 before the first.
    pub fn last_sequence(&self) -> u64 {
        self.next_sequence - 1
    }

    /// Adds the moment `snapshot` shows and forgets the oldest past the capacity.
    pub fn push(&mut self, snapshot: &Snapshot) {
        if self.points.len() == self.capacity
            && let Some(oldest) = self.points.pop_front()
        {
            for container in oldest.containers {
                let id = &container.who.id;
                if let Some((_, held)) = self.names.get_mut(id) {
                    *held -= 1;
                    if *held == 0 {
                        self.names.remove(id);
                    }
                }
            }
        }
        let containers = snapshot
            .containers
            .iter()
            .map(|row| {
                let who = ContainerName {
                    id: row.id.clone(),
                    name: row.name.clone(),
                    profile: row.profile.clone(),
                };
                let entry = self
                    .names
                    .entry(row.id.clone())
                    .or_insert_with(|| (Arc::new(who.clone()), 0));
                // A container renamed keeps its id: its newest name is shown.
                if *entry.0 != who {
                    entry.0 = Arc::new(who);
                }
                entry.1 += 1;
                ContainerPoint {
                    who: Arc::clone(&entry.0),
                    cpu_percent: row.cpu_percent,
                    memory_bytes: row.memory_bytes,
                    memory_limit_bytes: row.memory_limit_bytes,
                    gpu_memory_bytes: row.gpu_memory_bytes,
                }
            })
            .collect();
        let gpus = snapshot
            .gpus
            .iter()
            .map(|row| {
                self.gpu_names.insert(row.index, row.name.clone());
                GpuPoint {
                    index: row.index,
                    utilization_percent: row.utilization_percent,
                    memory_used_bytes: row.memory_used_bytes,
                    memory_total_bytes: row.memory_total_bytes,
                    temperature_c: row.temperature_c,
                    power_w: row.power_w,
                    power_limit_w: row.power_limit_w,
                }
            })
            .collect();
        self.points.push_back(Point {
            sequence: self.next_sequence,
            time: snapshot.time,
            daemon_lost: snapshot
                .failures
                .iter()
                .any(|failure| failure.subject == FailureSubject::Daemon),
            containers,
            gpus,
        });
        self.next_sequence += 1;
    }

    /// The points after sequence number `since` (0: all), as columns.
    pub fn document(&self, since: u64, window: Duration) -> HistoryDocument {
        let points: Vec<&Point> = self
            .points
            .iter()
            .filter(|point| point.sequence > since)
            .collect();
        let mut containers: BTreeMap<&str, ContainerSeries> = BTreeMap::new();
        let mut gpus: BTreeMap<u32, GpuSeries> = BTreeMap::new();
        for (position, point) in points.iter().enumerate() {
            for container in &point.containers {
                let series = containers
                    .entry(container.who.id.as_str())
                    .or_insert_with(|| ContainerSeries::empty(&container.who, points.len()));
                // The newest name wins, as in `push`.
                series.name.clone_from(&container.who.name);
                series.profile.clone_from(&container.who.profile);
                series.cpu_percent[position] = container.cpu_percent;
                series.memory_bytes[position] = container.memory_bytes;
                series.memory_limit_bytes[position] = container.memory_limit_bytes;
                series.gpu_memory_bytes[position] = container.gpu_memory_bytes;
            }
            for gpu in &point.gpus {
                let series = gpus.entry(gpu.index).or_insert_with(|| GpuSeries {
                    index: gpu.index,
                    name: self.gpu_names.get(&gpu.index).cloned().flatten(),
                    utilization_percent: vec![None; points.len()],
                    memory_used_bytes: vec![None; points.len()],
                    memory_total_bytes: vec![None; points.len()],
                    temperature_c: vec![None; points.len()],
                    power_w: vec![None; points.len()],
                    power_limit_w: vec![None; points.len()],
                });
                series.utilization_percent[position] = gpu.utilization_percent;
                series.memory_used_bytes[position] = gpu.memory_used_bytes;
                series.memory_total_bytes[position] = gpu.memory_total_bytes;
                series.temperature_c[position] = gpu.temperature_c;
                series.power_w[position] = gpu.power_w;
                series.power_limit_w[position] = gpu.power_limit_w;
            }
        }
        let mut containers: Vec<ContainerSeries> = containers.into_values().collect();
        containers
            .sort_by(|first, second| (&first.name, &first.id).cmp(&(&second.name, &second.id)));
        HistoryDocument {
            schema_version: super::SCHEMA_VERSION,
            interval_seconds: self.interval_seconds,
            window_seconds: window.as_secs_f64(),
            last_sequence: self.last_sequence(),
            sequences: points.iter().map(|point| point.sequence).collect(),
            times: points.iter().map(|point| point.time).collect(),
            daemon_lost: points.iter().map(|point| point.daemon_lost).collect(),
            containers,
            gpus: gpus.into_values().collect(),
        }
    }

    /// One container's values of the points no older than `seconds` before the newest,
    /// oldest first (`None` where unknown or absent): what a sparkline draws.
    pub fn container_recent(
        &self,
        id: &str,
        seconds: f64,
        value: fn(&ContainerValues) -> Option<f64>,
    ) -> Vec<Option<f64>> {
        self.recent(seconds)
            .map(|point| {
                point
                    .containers
                    .iter()
                    .find(|container| container.who.id == id)
                    .and_then(|container| {
                        value(&ContainerValues {
                            cpu_percent: container.cpu_percent,
                            memory_bytes: container.memory_bytes,
                            memory_limit_bytes: container.memory_limit_bytes,
                        })
                    })
            })
            .collect()
    }

    /// One GPU's values of the recent points, as [`History::container_recent`].
    pub fn gpu_recent(
        &self,
        index: u32,
        seconds: f64,
        value: fn(&GpuValues) -> Option<f64>,
    ) -> Vec<Option<f64>> {
        self.recent(seconds)
            .map(|point| {
                point
                    .gpus
                    .iter()
                    .find(|gpu| gpu.index == index)
                    .and_then(|gpu| {
                        value(&GpuValues {
                            utilization_percent: gpu.utilization_percent,
                            memory_used_bytes: gpu.memory_used_bytes,
                            memory_total_bytes: gpu.memory_total_bytes,
                        })
                    })
            })
            .collect()
    }

    fn recent(&self, seconds: f64) -> impl Iterator<Item = &Point> {
        let newest = self.points.back().map_or(0.0, |point| point.time);
        self.points
            .iter()
            .filter(move |point| point.time >= newest - seconds)
    }
}

/// What a sparkline of a container may read.
pub struct ContainerValues {
    pub cpu_percent: Option<f64>,
    pub memory_bytes: Option<u64>,
    pub memory_limit_bytes: Option<u64>,
}

/// What a sparkline of a GPU may read.
pub struct GpuValues {
    pub utilization_percent: Option<f64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
}

/// `/api/v1/history`: the points after `since`, as columns aligned with `times`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryDocument {
    pub schema_version: u32,
    pub interval_seconds: f64,
    pub window_seconds: f64,
    /// The newest point's sequence number: the `since` of the next request.
    pub last_sequence: u64,
    pub sequences: Vec<u64>,
    /// Seconds since the Unix epoch.
    pub times: Vec<f64>,
    /// The daemon was away at that moment.
    pub daemon_lost: Vec<bool>,
    pub containers: Vec<ContainerSeries>,
    pub gpus: Vec<GpuSeries>,
}

/// One container's columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContainerSeries {
    pub id: String,
    pub name: String,
    pub profile: Option<String>,
    pub cpu_percent: Vec<Option<f64>>,
    pub memory_bytes: Vec<Option<u64>>,
    pub memory_limit_bytes: Vec<Option<u64>>,
    /// Held by its processes on all GPUs, where NVML's processes map to it.
    pub gpu_memory_bytes: Vec<Option<u64>>,
}

impl ContainerSeries {
    fn empty(who: &ContainerName, points: usize) -> ContainerSeries {
        ContainerSeries {
            id: who.id.clone(),
            name: who.name.clone(),
            profile: who.profile.clone(),
            cpu_percent: vec![None; points],
            memory_bytes: vec![None; points],
            memory_limit_bytes: vec![None; points],
            gpu_memory_bytes: vec![None; points],
        }
    }
}

/// One GPU's columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSeries {
    pub index: u32,
    pub name: Option<String>,
    pub utilization_percent: Vec<Option<f64>>,
    pub memory_used_bytes: Vec<Option<u64>>,
    pub memory_total_bytes: Vec<Option<u64>>,
    pub temperature_c: Vec<Option<f64>>,
    pub power_w: Vec<Option<f64>>,
    pub power_limit_w: Vec<Option<f64>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_kept_is_what_the_points_cover() {
        let second = Duration::from_secs(1);
        assert_eq!(
            span_kept(Duration::from_secs(24 * 3600), second),
            Duration::from_secs(12 * 3600)
        );
        assert_eq!(
            span_kept(Duration::from_secs(600), second),
            Duration::from_secs(600)
        );
        assert_eq!(
            span_kept(Duration::from_secs(24 * 3600), Duration::from_secs(2)),
            Duration::from_secs(24 * 3600)
        );
    }
    use crate::monitor::failure::{Failure, FailureKind};
    use crate::monitor::snapshot::{ContainerRow, GpuRow};

    fn row(id: &str, cpu: f64, memory: u64) -> ContainerRow {
        ContainerRow {
            id: id.into(),
            name: format!("name-{id}"),
            profile: Some("pytorch".into()),
            cpu_percent: Some(cpu),
            memory_bytes: Some(memory),
            memory_limit_bytes: Some(1 << 30),
            ..ContainerRow::default()
        }
    }

    fn gpu(index: u32, utilization: f64) -> GpuRow {
        GpuRow {
            index,
            name: Some("NVIDIA H100".into()),
            utilization_percent: Some(utilization),
            memory_used_bytes: Some(1 << 20),
            memory_total_bytes: Some(80 << 30),
            temperature_c: Some(40.0),
            power_w: Some(100.0),
            power_limit_w: Some(700.0),
            ..GpuRow::default()
        }
    }

    fn at(time: f64, containers: Vec<ContainerRow>, gpus: Vec<GpuRow>) -> Snapshot {
        Snapshot {
            time,
            containers,
            gpus,
            ..Snapshot::default()
        }
    }

    #[test]
    fn the_capacity_is_the_window_over_the_interval() {
        let history = History::new(DEFAULT_WINDOW, Duration::from_secs(1));
        assert_eq!(history.capacity(), 600);
        let history = History::new(Duration::from_secs(10), Duration::from_millis(300));
        assert_eq!(history.capacity(), 34);
        let history = History::new(Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(history.capacity(), 2);
        let history = History::new(Duration::from_secs(86_400 * 30), Duration::from_millis(100));
        assert_eq!(history.capacity(), MAXIMUM_POINTS);
    }

    #[test]
    fn it_forgets_the_oldest_points_and_the_names_only_they_held() {
        let mut history = History::new(Duration::from_secs(3), Duration::from_secs(1));
        history.push(&at(1.0, vec![row("a", 1.0, 10), row("b", 2.0, 20)], vec![]));
        history.push(&at(2.0, vec![row("a", 3.0, 30)], vec![]));
        history.push(&at(3.0, vec![row("a", 5.0, 50)], vec![]));
        assert_eq!(history.names.len(), 2);
        history.push(&at(4.0, vec![row("a", 7.0, 70)], vec![]));
        assert_eq!(history.len(), 3);
        assert_eq!(history.names.len(), 1, "b's only point is gone");
        assert_eq!(history.names["a"].1, 3);
        for time in 5..1000 {
            history.push(&at(f64::from(time), vec![row("a", 1.0, 1)], vec![]));
        }
        assert_eq!(history.len(), 3, "bounded");
        assert_eq!(history.last_sequence(), 999);
        let document = history.document(0, Duration::from_secs(3));
        assert_eq!(document.times, vec![997.0, 998.0, 999.0]);
        assert_eq!(document.sequences, vec![997, 998, 999]);
    }

    #[test]
    fn columns_align_with_times_and_absent_containers_are_null() {
        let mut history = History::new(DEFAULT_WINDOW, Duration::from_secs(1));
        history.push(&at(1.0, vec![row("a", 1.0, 10)], vec![gpu(0, 50.0)]));
        history.push(&at(
            2.0,
            vec![row("a", 2.0, 20), row("b", 9.0, 90)],
            vec![gpu(0, 60.0)],
        ));
        let mut unknown = row("a", 0.0, 0);
        unknown.cpu_percent = None;
        history.push(&at(3.0, vec![unknown], vec![gpu(0, 70.0), gpu(1, 5.0)]));
        let document = history.document(0, DEFAULT_WINDOW);
        assert_eq!(document.times, vec![1.0, 2.0, 3.0]);
        assert_eq!(document.containers.len(), 2);
        let a = &document.containers[0];
        assert_eq!(a.name, "name-a");
        assert_eq!(a.cpu_percent, vec![Some(1.0), Some(2.0), None]);
        assert_eq!(a.memory_bytes, vec![Some(10), Some(20), Some(0)]);
        let b = &document.containers[1];
        assert_eq!(b.cpu_percent, vec![None, Some(9.0), None]);
        assert_eq!(document.gpus.len(), 2);
        assert_eq!(
            document.gpus[0].utilization_percent,
            vec![Some(50.0), Some(60.0), Some(70.0)]
        );
        assert_eq!(
            document.gpus[1].utilization_percent,
            vec![None, None, Some(5.0)]
        );
        assert_eq!(document.gpus[1].name.as_deref(), Some("NVIDIA H100"));
        // Only what came after `since`.
        let later = history.document(2, DEFAULT_WINDOW);
        assert_eq!(later.times, vec![3.0]);
        assert_eq!(later.containers.len(), 1);
        assert_eq!(later.last_sequence, 3);
        let nothing = history.document(3, DEFAULT_WINDOW);
        assert!(nothing.times.is_empty() && nothing.containers.is_empty());
        assert_eq!(nothing.last_sequence, 3);
    }

    #[test]
    fn a_lost_daemon_marks_its_points() {
        let mut history = History::new(DEFAULT_WINDOW, Duration::from_secs(1));
        history.push(&at(1.0, vec![row("a", 1.0, 10)], vec![]));
        let mut lost = at(2.0, vec![], vec![gpu(0, 1.0)]);
        lost.failures.push(Failure {
            subject: FailureSubject::Daemon,
            kind: FailureKind::ConnectionRefused,
            message: "refused".into(),
        });
        history.push(&lost);
        history.push(&at(3.0, vec![row("a", 3.0, 30)], vec![]));
        let document = history.document(0, DEFAULT_WINDOW);
        assert_eq!(document.daemon_lost, vec![false, true, false]);
        assert_eq!(
            document.containers[0].cpu_percent,
            vec![Some(1.0), None, Some(3.0)],
            "a gap, then it resumes"
        );
    }

    #[test]
    fn recent_values_cover_the_last_seconds() {
        let mut history = History::new(DEFAULT_WINDOW, Duration::from_secs(1));
        for time in 0..100 {
            history.push(&at(
                f64::from(time),
                vec![row("a", f64::from(time), 0)],
                vec![gpu(0, f64::from(time))],
            ));
        }
        let cpu = history.container_recent("a", 60.0, |values| values.cpu_percent);
        assert_eq!(cpu.len(), 61);
        assert_eq!(cpu.first(), Some(&Some(39.0)));
        assert_eq!(cpu.last(), Some(&Some(99.0)));
        let missing = history.container_recent("z", 60.0, |values| values.cpu_percent);
        assert!(missing.iter().all(Option::is_none));
        let utilization = history.gpu_recent(0, 10.0, |values| values.utilization_percent);
        assert_eq!(utilization.len(), 11);
    }

    #[test]
    fn the_document_is_json_with_nulls_for_unknowns() {
        let mut history = History::new(DEFAULT_WINDOW, Duration::from_secs(2));
        let mut unknown = row("a", 0.0, 0);
        unknown.memory_bytes = None;
        history.push(&at(1.0, vec![unknown], vec![]));
        let text = serde_json::to_string(&history.document(0, DEFAULT_WINDOW)).unwrap();
        assert!(text.contains("\"schema_version\":1"), "{text}");
        assert!(text.contains("\"interval_seconds\":2.0"), "{text}");
        assert!(text.contains("\"window_seconds\":600.0"), "{text}");
        assert!(text.contains("\"memory_bytes\":[null]"), "{text}");
    }
}
