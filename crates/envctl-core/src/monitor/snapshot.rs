//! One moment of `envctl stats`: a row per container and a row per GPU, the diagnoses of
//! the window ending here, and what could not be read. The same structs are printed as
//! the table, written as `--json`, recorded, served to Prometheus and read back by `stats
//! report`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::diagnosis::Diagnosis;
pub use super::failure::Failure;
use super::usage::ContainerUsage;
use crate::facts::container::GpuAssignment;
use crate::facts::gpu::NvmlFailure;
use crate::facts::gpu_sample::{GpuReadings, GpuSample, throttle_reason_names};

/// Everything sampled at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Seconds since the Unix epoch, when the sample was taken.
    pub time: f64,
    pub containers: Vec<ContainerRow>,
    pub gpus: Vec<GpuRow>,
    #[serde(default)]
    pub diagnoses: Vec<Diagnosis>,
    /// Samples that failed: a container whose stats the daemon refused, NVML that would
    /// not load, a process whose cgroup could not be read.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// Followed containers that stopped during the run, with how they ended (the OOM
    /// killer, an exit code), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<EndedContainer>,
}

/// A container that stopped while it was followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndedContainer {
    pub id: String,
    pub name: String,
    pub profile: Option<String>,
    /// When it was seen stopped (seconds since the Unix epoch).
    pub time: f64,
    /// The daemon's state word: `exited`, `dead`.
    pub status: String,
    pub exit_code: Option<i64>,
    /// The kernel's OOM killer ended it (`State.OOMKilled`); none when the daemon did not say.
    pub oom_killed: Option<bool>,
}

impl EndedContainer {
    /// The most followed containers' ends a snapshot carries: the newest are kept.
    pub const KEPT: usize = 20;

    /// How it ended, in words: `killed by the OOM killer (exit 137)`, `exited with code 1`.
    pub fn sentence(&self) -> String {
        if self.oom_killed == Some(true) {
            return Self::oom_sentence(self.exit_code);
        }
        match self.exit_code {
            Some(code) => format!("{} with code {code}", self.status),
            None => self.status.clone(),
        }
    }

    /// `killed by the OOM killer (exit 137)`.
    pub fn oom_sentence(exit_code: Option<i64>) -> String {
        match exit_code {
            Some(code) => format!("killed by the OOM killer (exit {code})"),
            None => "killed by the OOM killer".into(),
        }
    }

    pub fn out_of_memory(&self) -> bool {
        self.oom_killed == Some(true)
    }

    /// Every end in `snapshots`, once each, oldest first: a JSON-lines recording repeats
    /// the run's ends in every later snapshot, a CSV one names each at the sample it was
    /// seen. An end is its container and its time (a container restarted and stopped
    /// again ends twice).
    pub fn all_in(snapshots: &[Snapshot]) -> Vec<EndedContainer> {
        let mut seen = BTreeSet::new();
        let mut ends: Vec<EndedContainer> = snapshots
            .iter()
            .flat_map(|snapshot| &snapshot.ended)
            .filter(|end| seen.insert((end.id.clone(), end.time.to_bits())))
            .cloned()
            .collect();
        ends.sort_by(|left, right| left.time.total_cmp(&right.time));
        ends
    }
}

/// One container. `None` is "could not be read", never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerRow {
    /// The full container id.
    pub id: String,
    pub name: String,
    /// The `envctl.profile` label; none for containers envctl did not create.
    pub profile: Option<String>,
    /// 100 % is one core (the docker CLI's scale).
    pub cpu_percent: Option<f64>,
    /// Without reclaimable page cache.
    pub memory_bytes: Option<u64>,
    pub memory_limit_bytes: Option<u64>,
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
    pub block_read_bytes: Option<u64>,
    pub block_write_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// GPU memory held by the container's processes on all GPUs; none when NVML could not
    /// be read, nor the process list of a GPU it may use, nor the memory of one of its
    /// processes; 0 when all were and the container holds none.
    pub gpu_memory_bytes: Option<u64>,
    /// The cores it may use (`--cpus`, quota, cpuset, else the host's).
    #[serde(default)]
    pub cpu_limit_cores: Option<f64>,
    /// GPUs it runs processes on or was given, by NVML index.
    #[serde(default)]
    pub gpus: Vec<u32>,
    /// Issue 43: why it lost its GPUs (its device rules deny NVIDIA's nodes); none when
    /// they allow them or could not be read (cgroup v2, another machine's daemon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_nodes_denied: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuRow {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    /// SM (kernel) utilisation, percent.
    pub utilization_percent: Option<f64>,
    /// Memory-controller utilisation, percent.
    #[serde(default)]
    pub memory_utilization_percent: Option<f64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub temperature_c: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    #[serde(default)]
    pub sm_clock_mhz: Option<u32>,
    #[serde(default)]
    pub memory_clock_mhz: Option<u32>,
    /// Why clocks are held down now: `sw_power_cap`, `hw_thermal_slowdown`, …
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    /// The same as NVML's bit mask (what DCGM exports).
    #[serde(default)]
    pub throttle_reasons_mask: Option<u64>,
    #[serde(default)]
    pub processes: Vec<ProcessRow>,
    /// Queries that failed for another reason than "not supported on this GPU".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<NvmlFailure>,
    /// The GPU's health (issue 43); none in records written before envctl read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<GpuHealthRow>,
}

/// One GPU's health at the sample: its state with the reasons, and the counters NVML
/// gave (none where the GPU does not offer them: unknown, never zero).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHealthRow {
    pub state: crate::checks::health::HealthState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    #[serde(default)]
    pub ecc_volatile: Option<crate::facts::gpu::EccCounts>,
    #[serde(default)]
    pub ecc_aggregate: Option<crate::facts::gpu::EccCounts>,
    #[serde(default)]
    pub retired_pages: Option<crate::facts::gpu::RetiredPages>,
    #[serde(default)]
    pub remapped_rows: Option<crate::facts::gpu::RemappedRows>,
    /// The Xids seen on the GPU since `stats` started, with their counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xids: Vec<crate::facts::gpu_sample::XidCount>,
}

impl GpuHealthRow {
    /// The health row of one sample, judged with `fatal_xids` (the list in force: the host
    /// policy's `gpus.fatal_xids`, else NVIDIA's) over the Xids seen since `stats` started
    /// (a fatal one keeps the GPU fatal until envctl restarts); none when NVML answered no
    /// health query and the GPU is not lost, so an unread GPU is never reported healthy.
    pub fn of(sample: &GpuSample, fatal_xids: &[u32]) -> Option<GpuHealthRow> {
        let health = &sample.health;
        let lost = sample
            .failures
            .iter()
            .chain(
                [
                    health.persistence_mode.failure(),
                    health.ecc_enabled.failure(),
                    health.ecc_volatile.failure(),
                    health.ecc_aggregate.failure(),
                    health.retired_pages.failure(),
                    health.retired_pages_pending.failure(),
                    health.remapped_rows.failure(),
                ]
                .into_iter()
                .flatten(),
            )
            .find(|failure| failure.kind == crate::facts::gpu::FailureKind::GpuLost);
        let xids: Vec<u32> = sample
            .xids
            .iter()
            .filter_map(|count| u32::try_from(count.xid).ok())
            .collect();
        let verdict =
            crate::checks::health::classify_health(sample.index, health, lost, &xids, fatal_xids);
        let row = GpuHealthRow {
            state: verdict.state,
            reasons: verdict.reasons,
            ecc_volatile: health.ecc_volatile.value().copied(),
            ecc_aggregate: health.ecc_aggregate.value().copied(),
            retired_pages: health.retired_pages.value().copied(),
            remapped_rows: health.remapped_rows.value().copied(),
            xids: sample.xids.clone(),
        };
        let read_nothing = row.ecc_volatile.is_none()
            && row.ecc_aggregate.is_none()
            && row.retired_pages.is_none()
            && row.remapped_rows.is_none()
            && health.retired_pages_pending.value().is_none()
            && row.xids.is_empty();
        if row.state == crate::checks::health::HealthState::Ok && read_nothing {
            None
        } else {
            Some(row)
        }
    }
}

/// A compute process on a GPU and the container it belongs to, when it is in one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Host PID.
    pub pid: u32,
    pub used_memory_bytes: Option<u64>,
    /// The container's name.
    pub container: Option<String>,
}

/// One container as the sampler saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerInput {
    pub id: String,
    pub name: String,
    pub profile: Option<String>,
    /// None when its stats could not be read (the failure is listed separately).
    pub usage: Option<ContainerUsage>,
    pub cpu_limit_cores: Option<f64>,
    pub gpu_request: Option<GpuAssignment>,
    /// Issue 43: why it can no longer open NVIDIA's device nodes, when its device rules
    /// were read and deny them (`host::gpu_health::gpu_nodes_denied`).
    pub gpu_nodes_denied: Option<String>,
}

/// Puts a moment together. `process_containers` maps GPU process PIDs to full container
/// ids (from their cgroups); `gpus` is none when NVML is not available; `fatal_xids` are
/// the Xids that mark a GPU failed (`ops::placement::fatal_xids_in_force`, issue 43).
pub fn assemble(
    time: f64,
    containers: Vec<ContainerInput>,
    gpus: Option<&GpuReadings>,
    process_containers: &BTreeMap<u32, String>,
    failures: Vec<Failure>,
    fatal_xids: &[u32],
) -> Snapshot {
    let names: BTreeMap<&str, &str> = containers
        .iter()
        .map(|container| (container.id.as_str(), container.name.as_str()))
        .collect();
    let samples: &[GpuSample] = gpus.map_or(&[], |readings| readings.gpus.as_slice());
    let gpu_rows: Vec<GpuRow> = samples
        .iter()
        .map(|sample| gpu_row(sample, &names, process_containers, fatal_xids))
        .collect();
    let gpu_use = GpuUse {
        samples,
        process_containers,
        nvml_answered: gpus.is_some_and(|readings| readings.failure.is_none()),
        unlisted: samples
            .iter()
            .filter(|gpu| gpu.processes.is_none())
            .collect(),
    };
    let container_rows = containers
        .into_iter()
        .map(|container| gpu_use.container_row(container))
        .collect();
    Snapshot {
        time,
        containers: container_rows,
        gpus: gpu_rows,
        diagnoses: Vec::new(),
        failures,
        ended: Vec::new(),
    }
}

/// One GPU's row: its readings, each of its processes with the container it runs in (by
/// `names`, from `process_containers`), the failures worth showing, and its health.
fn gpu_row(
    sample: &GpuSample,
    names: &BTreeMap<&str, &str>,
    process_containers: &BTreeMap<u32, String>,
    fatal_xids: &[u32],
) -> GpuRow {
    GpuRow {
        index: sample.index,
        name: sample.name.clone(),
        uuid: sample.uuid.clone(),
        utilization_percent: sample.utilization_percent.map(f64::from),
        memory_utilization_percent: sample.memory_utilization_percent.map(f64::from),
        memory_used_bytes: sample.memory_used_bytes,
        memory_total_bytes: sample.memory_total_bytes,
        temperature_c: sample.temperature_c.map(f64::from),
        power_w: sample.power_w,
        power_limit_w: sample.power_limit_w,
        sm_clock_mhz: sample.sm_clock_mhz,
        memory_clock_mhz: sample.memory_clock_mhz,
        throttle_reasons: sample
            .throttle_reasons_mask
            .map(throttle_reason_names)
            .unwrap_or_default(),
        throttle_reasons_mask: sample.throttle_reasons_mask,
        processes: sample
            .processes
            .iter()
            .flatten()
            .map(|process| ProcessRow {
                pid: process.pid,
                used_memory_bytes: process.used_memory_bytes,
                container: process_containers
                    .get(&process.pid)
                    .and_then(|id| names.get(id.as_str()))
                    .map(|name| name.to_string()),
            })
            .collect(),
        failures: sample
            .failures
            .iter()
            .filter(|failure| !crate::facts::gpu_sample::is_not_supported(failure))
            .cloned()
            .collect(),
        health: GpuHealthRow::of(sample, fatal_xids),
    }
}

/// What the GPUs tell of the containers on them, read once for every container.
struct GpuUse<'s> {
    samples: &'s [GpuSample],
    /// GPU process PIDs to full container ids.
    process_containers: &'s BTreeMap<u32, String>,
    /// NVML listed the GPUs (a container's GPU memory is unknown otherwise).
    nvml_answered: bool,
    /// The GPUs whose processes could not be listed.
    unlisted: Vec<&'s GpuSample>,
}

impl GpuUse<'_> {
    /// One container's row: its usage, the GPUs it holds or runs on, and the GPU memory
    /// its processes use (unknown when a GPU that may hide some of them was not listed).
    fn container_row(&self, container: ContainerInput) -> ContainerRow {
        // None as soon as one of its processes holds an amount NVML does not give.
        let mut gpu_memory = Some(0_u64);
        let mut runs_on_a_gpu = false;
        let mut indices = BTreeSet::new();
        for gpu in self.samples {
            for process in gpu.processes.iter().flatten() {
                if self.process_containers.get(&process.pid) == Some(&container.id) {
                    gpu_memory = gpu_memory
                        .zip(process.used_memory_bytes)
                        .map(|(sum, bytes)| sum.saturating_add(bytes));
                    runs_on_a_gpu = true;
                    indices.insert(gpu.index);
                }
            }
            if assigned(
                container.gpu_request.as_ref(),
                gpu.index,
                gpu.uuid.as_deref(),
            ) {
                indices.insert(gpu.index);
            }
        }
        // A GPU whose processes could not be listed may hide some of this container's.
        let hidden = self
            .unlisted
            .iter()
            .any(|gpu| may_use(container.gpu_request.as_ref(), gpu, runs_on_a_gpu));
        let gpu_memory = gpu_memory.filter(|_| self.nvml_answered && !hidden);
        let usage = container.usage;
        ContainerRow {
            id: container.id,
            name: container.name,
            profile: container.profile,
            cpu_percent: usage.and_then(|usage| usage.cpu_percent),
            memory_bytes: usage.and_then(|usage| usage.memory_bytes),
            memory_limit_bytes: usage.and_then(|usage| usage.memory_limit_bytes),
            net_rx_bytes: usage.and_then(|usage| usage.net_rx_bytes),
            net_tx_bytes: usage.and_then(|usage| usage.net_tx_bytes),
            block_read_bytes: usage.map(|usage| usage.block_read_bytes),
            block_write_bytes: usage.map(|usage| usage.block_write_bytes),
            pids: usage.and_then(|usage| usage.pids),
            gpu_memory_bytes: gpu_memory,
            cpu_limit_cores: container.cpu_limit_cores,
            gpus: indices.into_iter().collect(),
            gpu_nodes_denied: container.gpu_nodes_denied,
        }
    }
}

/// Whether a container may run processes on `gpu`: its request names it or all GPUs; a
/// bare count leaves the runtime's pick unknown, so any GPU may be one of its; without a
/// request, a container seen on some GPU reached it another way (the runtime's
/// `NVIDIA_VISIBLE_DEVICES`), so it may be on any other too.
fn may_use(request: Option<&GpuAssignment>, gpu: &GpuSample, runs_on_a_gpu: bool) -> bool {
    match request {
        Some(GpuAssignment::Count(count)) => *count > 0,
        // A sample carries no minor numbers: like a count, any GPU may be the node's.
        Some(GpuAssignment::Nodes(minors)) => !minors.is_empty(),
        None => runs_on_a_gpu,
        Some(_) => assigned(request, gpu.index, gpu.uuid.as_deref()),
    }
}

/// Whether a GPU request names this GPU: `all`, its index or its UUID. A bare count
/// (`--gpus 2`) does not say which GPUs the runtime picked.
fn assigned(request: Option<&GpuAssignment>, index: u32, uuid: Option<&str>) -> bool {
    match request {
        Some(GpuAssignment::All) => true,
        Some(GpuAssignment::Devices(devices)) => devices
            .iter()
            .any(|device| device.parse::<u32>() == Ok(index) || Some(device.as_str()) == uuid),
        Some(GpuAssignment::Count(_) | GpuAssignment::Nodes(_)) | None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu_sample::{GpuProcess, GpuSample};

    fn container(id: &str, name: &str, request: Option<GpuAssignment>) -> ContainerInput {
        ContainerInput {
            gpu_nodes_denied: None,
            id: id.into(),
            name: name.into(),
            profile: Some("pytorch".into()),
            usage: Some(ContainerUsage {
                cpu_percent: Some(12.5),
                memory_bytes: Some(1 << 20),
                ..ContainerUsage::default()
            }),
            cpu_limit_cores: Some(2.0),
            gpu_request: request,
        }
    }

    fn gpu(index: u32, processes: &[(u32, u64)]) -> GpuSample {
        GpuSample {
            index,
            uuid: Some(format!("GPU-{index}")),
            utilization_percent: Some(40),
            throttle_reasons_mask: Some(0x4),
            processes: Some(
                processes
                    .iter()
                    .map(|(pid, bytes)| GpuProcess {
                        pid: *pid,
                        used_memory_bytes: Some(*bytes),
                    })
                    .collect(),
            ),
            ..GpuSample::default()
        }
    }

    #[test]
    fn gpu_memory_is_summed_per_container_over_gpus() {
        let readings = GpuReadings {
            gpus: vec![
                gpu(0, &[(10, 100), (11, 1000)]),
                gpu(1, &[(12, 10), (99, 5)]),
            ],
            failure: None,
        };
        let owners: BTreeMap<u32, String> =
            [(10, "a".into()), (12, "a".into()), (11, "b".into())].into();
        let snapshot = assemble(
            1.0,
            vec![
                container("a", "alpha", None),
                container("b", "beta", None),
                container(
                    "c",
                    "gamma",
                    Some(GpuAssignment::Devices(vec!["GPU-1".into()])),
                ),
            ],
            Some(&readings),
            &owners,
            Vec::new(),
            &crate::checks::health::DEFAULT_FATAL_XIDS,
        );
        let rows = &snapshot.containers;
        assert_eq!(rows[0].gpu_memory_bytes, Some(110));
        assert_eq!(rows[0].gpus, vec![0, 1]);
        assert_eq!(rows[1].gpu_memory_bytes, Some(1000));
        assert_eq!(rows[2].gpu_memory_bytes, Some(0));
        assert_eq!(rows[2].gpus, vec![1], "assigned by UUID, no process yet");
        assert_eq!(
            snapshot.gpus[0].processes[1].container.as_deref(),
            Some("beta")
        );
        assert_eq!(
            snapshot.gpus[1].processes[1].container, None,
            "pid 99 is on the host"
        );
        assert_eq!(snapshot.gpus[0].throttle_reasons, vec!["sw_power_cap"]);
    }

    #[test]
    fn without_nvml_gpu_memory_is_unknown_not_zero() {
        let snapshot = assemble(
            1.0,
            vec![container("a", "alpha", None)],
            None,
            &BTreeMap::new(),
            Vec::new(),
            &crate::checks::health::DEFAULT_FATAL_XIDS,
        );
        assert_eq!(snapshot.containers[0].gpu_memory_bytes, None);
        assert!(snapshot.gpus.is_empty());
    }

    fn failing(
        mut sample: GpuSample,
        kind: crate::facts::gpu::FailureKind,
        function: &str,
    ) -> GpuSample {
        sample
            .failures
            .push(NvmlFailure::new(kind, "no answer").in_function(function));
        sample
    }

    /// A GPU whose process list NVML could not give, as `gpu::sample` records it.
    fn unlisted(
        sample: GpuSample,
        kind: crate::facts::gpu::FailureKind,
        function: &str,
    ) -> GpuSample {
        GpuSample {
            processes: None,
            ..failing(sample, kind, function)
        }
    }

    #[test]
    fn an_unlisted_gpu_leaves_its_containers_gpu_memory_unknown() {
        use crate::facts::gpu::FailureKind;
        // GPU 1's process list could not be read; GPU 0's was.
        let readings = GpuReadings {
            gpus: vec![
                gpu(0, &[(10, 100), (11, 1000)]),
                unlisted(
                    gpu(1, &[]),
                    FailureKind::Unknown,
                    "nvmlDeviceGetComputeRunningProcesses_v3",
                ),
            ],
            failure: None,
        };
        let owners: BTreeMap<u32, String> = [(10, "a".into()), (11, "e".into())].into();
        let snapshot = assemble(
            1.0,
            vec![
                container(
                    "a",
                    "on-0-given-1",
                    Some(GpuAssignment::Devices(vec!["1".into()])),
                ),
                container(
                    "b",
                    "given-0",
                    Some(GpuAssignment::Devices(vec!["GPU-0".into()])),
                ),
                container("c", "given-a-count", Some(GpuAssignment::Count(1))),
                container("d", "no-gpus", None),
                container("e", "on-0-unrequested", None),
                container("f", "given-all", Some(GpuAssignment::All)),
            ],
            Some(&readings),
            &owners,
            Vec::new(),
            &crate::checks::health::DEFAULT_FATAL_XIDS,
        );
        let memory: Vec<Option<u64>> = snapshot
            .containers
            .iter()
            .map(|row| row.gpu_memory_bytes)
            .collect();
        assert_eq!(
            memory,
            vec![None, Some(0), None, Some(0), None, None],
            "{:#?}",
            snapshot.containers
        );
        assert_eq!(snapshot.containers[0].gpus, vec![0, 1]);
        assert_eq!(
            snapshot.gpus[1].failures.len(),
            1,
            "the row names the cause"
        );
    }

    #[test]
    fn a_process_list_not_supported_or_a_lost_device_is_unknown_too() {
        use crate::facts::gpu::FailureKind;
        for (kind, function) in [
            (
                FailureKind::NotSupported,
                "nvmlDeviceGetComputeRunningProcesses_v3",
            ),
            (FailureKind::GpuLost, "nvmlDeviceGetHandleByIndex_v2"),
        ] {
            let readings = GpuReadings {
                gpus: vec![unlisted(gpu(0, &[]), kind, function)],
                failure: None,
            };
            let snapshot = assemble(
                1.0,
                vec![container("a", "alpha", Some(GpuAssignment::All))],
                Some(&readings),
                &BTreeMap::new(),
                Vec::new(),
                &crate::checks::health::DEFAULT_FATAL_XIDS,
            );
            assert_eq!(snapshot.containers[0].gpu_memory_bytes, None, "{function}");
        }
        // Another query failing says nothing about the processes.
        let readings = GpuReadings {
            gpus: vec![failing(
                gpu(0, &[]),
                FailureKind::NotSupported,
                "nvmlDeviceGetPowerUsage",
            )],
            failure: None,
        };
        let snapshot = assemble(
            1.0,
            vec![container("a", "alpha", Some(GpuAssignment::All))],
            Some(&readings),
            &BTreeMap::new(),
            Vec::new(),
            &crate::checks::health::DEFAULT_FATAL_XIDS,
        );
        assert_eq!(snapshot.containers[0].gpu_memory_bytes, Some(0));
    }

    #[test]
    fn a_process_with_unavailable_memory_makes_its_container_unknown() {
        let mut first = gpu(0, &[(10, 100), (11, 1000)]);
        first
            .processes
            .get_or_insert_with(Vec::new)
            .push(GpuProcess {
                pid: 12,
                used_memory_bytes: None,
            });
        let readings = GpuReadings {
            gpus: vec![first, gpu(1, &[(13, 7)])],
            failure: None,
        };
        let owners: BTreeMap<u32, String> = [
            (10, "a".into()),
            (12, "a".into()),
            (13, "a".into()),
            (11, "b".into()),
        ]
        .into();
        let snapshot = assemble(
            1.0,
            vec![container("a", "alpha", None), container("b", "beta", None)],
            Some(&readings),
            &owners,
            Vec::new(),
            &crate::checks::health::DEFAULT_FATAL_XIDS,
        );
        assert_eq!(snapshot.containers[0].gpu_memory_bytes, None);
        assert_eq!(snapshot.containers[0].gpus, vec![0, 1]);
        assert_eq!(snapshot.containers[1].gpu_memory_bytes, Some(1000));
        assert_eq!(snapshot.gpus[0].processes[2].used_memory_bytes, None);
        // Unknown is left out of the exposition, never exported as 0.
        let text = crate::monitor::prometheus::exposition(&snapshot, Some("host"), "host");
        let exported: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("envctl_container_gpu_memory_bytes{"))
            .collect();
        assert_eq!(exported.len(), 1, "{exported:?}");
        assert!(exported[0].contains("container=\"beta\""), "{exported:?}");
    }
}
