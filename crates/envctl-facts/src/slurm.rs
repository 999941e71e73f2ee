//! What a Slurm job gave this process (issue 29): the job and step, the GPUs, memory and
//! CPUs of its allocation on this node, and where it runs. Filled by `host::slurm` from the
//! variables Slurm sets (read through `context::Environment`), judged by `container_plan::slurm`.
//!
//! Inside a job the allocation is the law: its GPUs are the ones Slurm names in
//! `SLURM_STEP_GPUS` (under `srun`) or `SLURM_JOB_GPUS` (under `sbatch`), host indices in
//! the order of `gres.conf`'s `File=` list. `CUDA_VISIBLE_DEVICES` is never read: with
//! `ConstrainDevices=yes` Slurm renumbers it from 0 in every job.

use serde::Serialize;

/// A Slurm job this process runs in (`SLURM_JOB_ID` is set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlurmJob {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_STEP_ID` under `srun`; `batch` in a batch script (`ENVIRONMENT=BATCH`, no
    /// step id); none in an `salloc` shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// The GPUs allocated to this step or job on this node.
    pub gpus: GpuAllocation,
    /// The memory allocated on this node, when Slurm said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<JobMemory>,
    /// The CPUs allocated to one task, when Slurm said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<JobCpus>,
    /// `SLURM_JOB_NODELIST` as Slurm wrote it (`n[1-2]`: `scontrol show hostnames` expands it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_list: Option<String>,
    /// `SLURM_NODEID`: this node's place in the job's node list, from 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<u32>,
    /// `SLURM_NNODES`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// The device minor numbers of the job's GPUs (`/dev/nvidia<minor>`), read from this
    /// node's `File=` list in gres.conf: Slurm's indices are positions in that list. None
    /// when gres.conf could not be read or does not list them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_minors: Option<Vec<u32>>,
    /// Values Slurm set that could not be read (`SLURM_MEM_PER_NODE=lots`): named, never
    /// replaced by a guess.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableVariable>,
}

/// Where the job's GPUs come from, and which.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum GpuAllocation {
    /// `SLURM_STEP_GPUS` (a step started by `srun`).
    Step { ids: Vec<u32> },
    /// `SLURM_JOB_GPUS` (the batch script of `sbatch`).
    Job { ids: Vec<u32> },
    /// Neither is set: the job has no GPU on this node, or it is an `salloc` shell, where
    /// Slurm says nothing about GPUs.
    None,
    /// The variable is set but is not a list of indices.
    Unreadable { variable: String, value: String },
}

impl GpuAllocation {
    /// The allocated GPU indices, when Slurm named them.
    pub fn ids(&self) -> Option<&[u32]> {
        match self {
            GpuAllocation::Step { ids } | GpuAllocation::Job { ids } => Some(ids),
            GpuAllocation::None | GpuAllocation::Unreadable { .. } => None,
        }
    }

    /// The variable the GPUs were read from.
    pub fn variable(&self) -> Option<&str> {
        match self {
            GpuAllocation::Step { .. } => Some("SLURM_STEP_GPUS"),
            GpuAllocation::Job { .. } => Some("SLURM_JOB_GPUS"),
            GpuAllocation::Unreadable { variable, .. } => Some(variable),
            GpuAllocation::None => None,
        }
    }
}

/// The memory a job may use on this node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobMemory {
    pub bytes: u64,
    /// How Slurm said it: `SLURM_MEM_PER_NODE`, or `SLURM_MEM_PER_CPU × SLURM_CPUS_ON_NODE`.
    pub from: String,
}

/// The CPUs a job's task may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobCpus {
    pub count: u32,
    /// `SLURM_CPUS_PER_TASK`, else `SLURM_CPUS_ON_NODE`.
    pub from: String,
}

/// A variable Slurm set whose value envctl cannot read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadableVariable {
    pub variable: String,
    pub value: String,
}

/// One allocated GPU as NVML knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllocatedGpu {
    /// Slurm's index (`SLURM_JOB_GPUS`).
    pub slurm_id: u32,
    /// NVML's index.
    pub index: u32,
    pub uuid: String,
    /// How the two were matched.
    pub matched_by: MatchedBy,
}

/// How a Slurm GPU index was matched to an NVML GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// gres.conf's `File=` list for this node: Slurm's index is a position in it, and the
    /// file there is `/dev/nvidia<minor>`.
    GresFile,
    /// Without gres.conf: Slurm's index read as N of `/dev/nvidiaN`, which holds for the
    /// usual `File=/dev/nvidia[0-N]` in order.
    MinorNumber,
    /// NVML's index, where NVML gave no minor numbers.
    Index,
}

/// The variables of a Slurm job, each unset or empty as `None`: `context::Environment`
/// (the only reader of the environment) fills them, `host::slurm` turns them into a
/// [`SlurmJob`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmVariables {
    pub job_id: Option<String>,
    pub step_id: Option<String>,
    /// `ENVIRONMENT=BATCH`: Slurm's mark of a batch script, which has no `SLURM_STEP_ID`.
    pub batch: bool,
    pub job_gpus: Option<String>,
    pub step_gpus: Option<String>,
    /// MiB.
    pub mem_per_node: Option<String>,
    /// MiB.
    pub mem_per_cpu: Option<String>,
    pub cpus_per_task: Option<String>,
    pub cpus_on_node: Option<String>,
    pub job_node_list: Option<String>,
    pub node_id: Option<String>,
    pub nodes: Option<String>,
    /// `SLURMD_NODENAME`: this node's name in slurm.conf (whose `gres.conf` lines apply).
    pub node_name: Option<String>,
    /// `SLURM_CONF`: the cluster's slurm.conf, beside which `gres.conf` lies.
    pub conf: Option<String>,
}

impl SlurmVariables {
    /// The variables as `lookup` gives them by name (the context's snapshot of the
    /// environment; a table in tests), each empty value as unset. `CUDA_VISIBLE_DEVICES`
    /// is left out on purpose: Slurm renumbers it per job, so it never says which host
    /// GPUs a job holds.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> SlurmVariables {
        let text = |name: &str| lookup(name).filter(|value| !value.is_empty());
        SlurmVariables {
            job_id: text("SLURM_JOB_ID"),
            step_id: text("SLURM_STEP_ID"),
            batch: lookup("ENVIRONMENT").as_deref() == Some("BATCH"),
            job_gpus: text("SLURM_JOB_GPUS"),
            step_gpus: text("SLURM_STEP_GPUS"),
            mem_per_node: text("SLURM_MEM_PER_NODE"),
            mem_per_cpu: text("SLURM_MEM_PER_CPU"),
            cpus_per_task: text("SLURM_CPUS_PER_TASK"),
            cpus_on_node: text("SLURM_CPUS_ON_NODE"),
            job_node_list: text("SLURM_JOB_NODELIST"),
            node_name: text("SLURMD_NODENAME"),
            conf: text("SLURM_CONF"),
            node_id: text("SLURM_NODEID"),
            nodes: text("SLURM_NNODES"),
        }
    }
}
