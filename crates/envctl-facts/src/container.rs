//! What the daemon (or the container's cgroup files) says about containers: as listed, as
//! inspected, their limits and GPU request, their counters at one moment, and which
//! stream a chunk of their output came from. Plain serde data filled by
//! `engine::containers`, `engine::stats`, `engine::logs` and `host::cgroup`; the formulas
//! over the counters (CPU %, memory without page cache) live in the pure `monitor::usage`.
//!
//! The constructors that read bollard's types (`engine::stats::container_sample`,
//! `engine::stats::gpu_assignment`) live in the engine adapter: this crate cannot name
//! bollard.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One container as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerSummary {
    pub id: String,
    pub name: String,
    pub image: String,
    pub image_id: String,
    /// `running`, `exited`, `created`, …
    pub state: String,
    /// Docker's words: `Up 3 minutes`, `Exited (0) 2 hours ago`.
    pub status: String,
    pub created: i64,
    pub labels: BTreeMap<String, String>,
    /// `127.0.0.1:8888->8888/tcp`.
    pub ports: Vec<String>,
    /// The host ports it publishes, for the free-port check before `up` creates.
    pub published: Vec<PublishedPort>,
}

/// One host port a container publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedPort {
    /// `0.0.0.0`, `::`, `127.0.0.1`…; empty when the daemon names none.
    pub host_ip: String,
    pub host_port: u16,
    /// `tcp`, `udp`, `sctp`.
    pub protocol: String,
    /// The container's port behind it; `None` where the daemon did not say.
    #[serde(default)]
    pub container_port: Option<u16>,
}

/// One container as inspected: what `up`, `exec` and `down` decide on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerDetails {
    pub id: String,
    pub name: String,
    pub image: String,
    pub running: bool,
    pub status: String,
    pub exit_code: Option<i64>,
    /// The kernel's OOM killer ended it (`State.OOMKilled`); none when the daemon did not say.
    #[serde(default)]
    pub oom_killed: Option<bool>,
    pub started_at: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// GPUs the container asked for, as `all`, a count or device ids.
    pub gpus: Option<String>,
    /// Named volumes mounted into it (never host folders).
    pub volumes: Vec<String>,
}

/// One container's counters at one moment, as the daemon read them from its cgroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerSample {
    /// The full container id.
    pub id: String,
    /// The name without Docker's leading `/`.
    pub name: String,
    /// When the daemon read the counters (RFC 3339, the daemon's clock).
    pub read: Option<String>,
    pub cpu: CpuCounters,
    /// The daemon's own previous reading (`precpu_stats`); none in a one-shot sample and
    /// in a stream's first frame, where the daemon sends it empty.
    pub previous_cpu: Option<CpuCounters>,
    pub memory: MemoryCounters,
    /// Per interface, e.g. `eth0`.
    pub networks: BTreeMap<String, NetworkCounters>,
    /// `blkio_stats.io_service_bytes_recursive`: bytes per device and operation.
    pub block_io: Vec<BlockIoEntry>,
    /// Processes and threads in the container's cgroup.
    pub pids: Option<u64>,
}

/// Cumulative CPU time, in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuCounters {
    /// CPU time the container used since it started.
    pub total_usage: Option<u64>,
    /// CPU time the whole host used since boot (all CPUs together).
    pub system_usage: Option<u64>,
    /// CPUs online on the host; the docker CLI's scale has 100 % per CPU.
    pub online_cpus: Option<u32>,
    /// Entries in `percpu_usage` (cgroup v1 only): the fallback for `online_cpus`.
    pub percpu_count: Option<u32>,
    /// CFS periods with a quota (`--cpus`), and how many of them ran out of it.
    pub periods: Option<u64>,
    pub throttled_periods: Option<u64>,
}

/// Memory in bytes, with the cgroup's own breakdown (keys differ between v1 and v2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryCounters {
    /// Everything charged to the cgroup, page cache included.
    pub usage: Option<u64>,
    /// The limit; the host's RAM when the container has none.
    pub limit: Option<u64>,
    /// `memory.stat`: `total_inactive_file` (v1), `inactive_file` (v1 and v2), …
    pub stats: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkCounters {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockIoEntry {
    /// `Read`, `Write`, `Sync`, `Total` … (v1) or `read`, `write` (v2).
    pub operation: String,
    pub bytes: u64,
}

/// What the container may use, from its `HostConfig`, and its GPU request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerResources {
    /// `--cpus` (`NanoCpus`).
    pub nano_cpus: Option<i64>,
    /// `--cpu-quota` / `--cpu-period`, in microseconds.
    pub cpu_quota: Option<i64>,
    pub cpu_period: Option<i64>,
    /// `--cpuset-cpus`, e.g. `0-3,8`.
    pub cpuset_cpus: Option<String>,
    /// The GPUs asked for through a `gpu` device request.
    pub gpus: Option<GpuAssignment>,
    /// The host PID of the container's first process.
    pub pid: Option<i64>,
}

/// A container's GPU request as the daemon stored it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuAssignment {
    All,
    /// `--gpus N`: the NVIDIA hook picks which.
    Count(i64),
    /// Indices or `GPU-…` UUIDs.
    Devices(Vec<String>),
    /// GPU device nodes given to the container itself, by minor number: `/dev/nvidia3` is
    /// 3. Another tool's `--device /dev/nvidia3`, or a CDI device once Podman resolved it
    /// (its inspect keeps the nodes, not the name).
    Nodes(Vec<u32>),
}

/// What NVIDIA's driver names a GPU's device node: `/dev/nvidia` and the GPU's minor number
/// (NVML, `nvmlDeviceGetMinorNumber`). `/dev/nvidiactl`, `/dev/nvidia-uvm` and the like are
/// the driver's own nodes, not a GPU.
pub const NVIDIA_NODE_PREFIX: &str = "/dev/nvidia";

/// The minor number of a GPU's device node path (`/dev/nvidia3` → 3); `None` for any
/// other path.
pub fn gpu_node_minor(path: &str) -> Option<u32> {
    let digits = path.strip_prefix(NVIDIA_NODE_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl std::fmt::Display for GpuAssignment {
    /// `all`, `2`, `0,1`: as `ps` shows it.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuAssignment::All => formatter.write_str("all"),
            GpuAssignment::Count(count) => write!(formatter, "{count}"),
            GpuAssignment::Devices(devices) => formatter.write_str(&devices.join(",")),
            GpuAssignment::Nodes(minors) => {
                let nodes: Vec<String> = minors
                    .iter()
                    .map(|minor| format!("{NVIDIA_NODE_PREFIX}{minor}"))
                    .collect();
                formatter.write_str(&nodes.join(","))
            }
        }
    }
}

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}
