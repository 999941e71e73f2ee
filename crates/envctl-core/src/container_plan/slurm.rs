//! Inside a Slurm job, the allocation is the law (issue 29): pure rules over a create body
//! and the job's facts (`facts::slurm`).
//!
//! - [`confine`] (no NVML needed): the job's labels; memory and CPUs default to the job's
//!   when the profile sets none, and a profile asking for more fails; `gpus = "all"`
//!   becomes the allocation's count; a count or list above the allocation fails naming
//!   both; GPUs asked in a job without GPUs fail. Over the body and the typed [`Gpus`].
//! - [`allocated_gpus`]: Slurm's GPU indices → NVML's GPUs, by the device node's minor
//!   number (`/dev/nvidiaN`, the `File=` list of `gres.conf`), else by NVML index.
//! - [`within_allocation`]: GPUs named by the profile must be the job's; a count under
//!   `placement = "first"` is pinned to the allocation's first GPUs. Placement chooses a
//!   count among the allocated GPUs only (`ops::slurm::for_placement`).

use crate::container_plan::CreateBody;
use crate::container_plan::gpus::Gpus;
use crate::facts::gpu::GpuDevice;
use crate::facts::slurm::{AllocatedGpu, GpuAllocation, MatchedBy, SlurmJob};

/// The Slurm job a container was made in: `envctl down --rm --slurm-job ID` finds it by it.
pub const SLURM_JOB_LABEL: &str = "envctl.slurm-job";
/// The step (`batch`, or the number of an `srun` step).
pub const SLURM_STEP_LABEL: &str = "envctl.slurm-step";

/// Why a body cannot run inside this job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlurmError {
    #[error(
        "profile `{profile}` asks for {asked} GPU(s), but Slurm job {job} was allocated {allocated} on this node ({variable}={ids})"
    )]
    MoreGpusThanAllocated {
        profile: String,
        job: String,
        asked: usize,
        allocated: usize,
        variable: String,
        ids: String,
    },
    #[error(
        "profile `{profile}` asks for GPUs, but Slurm job {job} has none on this node (neither SLURM_STEP_GPUS nor SLURM_JOB_GPUS is set)"
    )]
    NoGpusAllocated { profile: String, job: String },
    #[error("Slurm job {job}: {variable}=`{value}` is not a list of GPU indices")]
    UnreadableAllocation {
        job: String,
        variable: String,
        value: String,
    },
    #[error(
        "profile `{profile}` asks for {asked} of memory, but Slurm job {job} was allocated {allocated} on this node ({from})"
    )]
    MoreMemoryThanAllocated {
        profile: String,
        job: String,
        asked: String,
        allocated: String,
        from: String,
    },
    #[error(
        "profile `{profile}` asks for {asked} CPUs, but Slurm job {job} was allocated {allocated} ({from})"
    )]
    MoreCpusThanAllocated {
        profile: String,
        job: String,
        asked: String,
        allocated: u32,
        from: String,
    },
    #[error(
        "profile `{profile}` names GPU `{gpu}`, which is not one of Slurm job {job}'s GPUs (NVML {allocated})"
    )]
    GpuOutsideAllocation {
        profile: String,
        job: String,
        gpu: String,
        allocated: String,
    },
    #[error(
        "Slurm job {job} was allocated GPU {id} ({variable}), but NVML lists no GPU with {wanted} {id}"
    )]
    AllocatedGpuUnknown {
        job: String,
        id: u32,
        variable: String,
        wanted: &'static str,
    },
    #[error(
        "inside Slurm job {job}, envctl pins the job's GPUs by UUID, but NVML could not be read: {why}"
    )]
    NoNvml { job: String, why: String },
}

impl SlurmError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            SlurmError::MoreGpusThanAllocated { asked, .. } => format!(
                "ask Slurm for them (`sbatch --gres=gpu:{asked}` or `srun --gpus={asked}`), or lower `gpus` (`--gpus N`, `\"all\"` means the job's)"
            ),
            SlurmError::NoGpusAllocated { .. } => "ask Slurm for GPUs (`--gres=gpu:N`); in an `salloc` shell, run envctl under `srun`, where Slurm names the step's GPUs".into(),
            SlurmError::UnreadableAllocation { .. } => {
                "envctl reads Slurm's GPU indices (`0,1`); check the job's environment (`env | grep SLURM_`)".into()
            }
            SlurmError::MoreMemoryThanAllocated { asked, .. } => format!(
                "ask Slurm for more (`--mem={asked}`), or lower the profile's `memory` (leave it out to take the job's)"
            ),
            SlurmError::MoreCpusThanAllocated { asked, .. } => format!(
                "ask Slurm for more (`--cpus-per-task={asked}`), or lower the profile's `cpus` (leave it out to take the job's)"
            ),
            SlurmError::GpuOutsideAllocation { .. } => {
                "inside a job use `gpus = N` or `\"all\"` (the job's GPUs), or name only the job's GPUs".into()
            }
            SlurmError::AllocatedGpuUnknown { .. } => {
                "check gres.conf's `File=` list against `nvidia-smi -q | grep -i minor`".into()
            }
            SlurmError::NoNvml { .. } => "`envctl doctor` says why NVML cannot be read".into(),
        }
    }
}

/// The allocated ids as Slurm wrote them (`2,3`).
fn ids_text(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The job's labels, memory and CPUs on `body`, and `gpus` checked against the
/// allocation (`"all"` becomes the allocation's count; the body's `--gpus` request follows).
/// `profile` is for messages.
pub fn confine(
    body: &CreateBody,
    gpus: &Gpus,
    job: &SlurmJob,
    profile: &str,
) -> Result<(CreateBody, Gpus), SlurmError> {
    let mut body = body.clone();
    body.labels
        .insert(SLURM_JOB_LABEL.to_string(), job.job_id.clone());
    if let Some(step) = &job.step_id {
        body.labels
            .insert(SLURM_STEP_LABEL.to_string(), step.clone());
    }
    confine_memory(&mut body, job, profile)?;
    confine_cpus(&mut body, job, profile)?;
    let confined = confine_gpus(gpus, job, profile)?;
    if confined != *gpus {
        body.host_config.device_requests = confined.docker_requests();
    }
    Ok((body, confined))
}

/// The job's memory as the body's limit where it sets none; a limit above it is refused.
fn confine_memory(body: &mut CreateBody, job: &SlurmJob, profile: &str) -> Result<(), SlurmError> {
    let Some(memory) = &job.memory else {
        return Ok(());
    };
    let allocated = i64::try_from(memory.bytes).unwrap_or(i64::MAX);
    match body.host_config.memory {
        None => body.host_config.memory = Some(allocated),
        Some(asked) if asked > allocated => {
            return Err(SlurmError::MoreMemoryThanAllocated {
                profile: profile.to_string(),
                job: job.job_id.clone(),
                asked: mebibytes(asked),
                allocated: mebibytes(allocated),
                from: memory.from.clone(),
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// The job's CPUs as the body's limit where it sets none; a limit above them is refused.
fn confine_cpus(body: &mut CreateBody, job: &SlurmJob, profile: &str) -> Result<(), SlurmError> {
    let Some(cpus) = &job.cpus else {
        return Ok(());
    };
    let allocated = i64::from(cpus.count) * 1_000_000_000;
    match body.host_config.nano_cpus {
        None => body.host_config.nano_cpus = Some(allocated),
        Some(asked) if asked > allocated => {
            return Err(SlurmError::MoreCpusThanAllocated {
                profile: profile.to_string(),
                job: job.job_id.clone(),
                asked: format!("{}", asked as f64 / 1e9),
                allocated: cpus.count,
                from: cpus.from.clone(),
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// `gpus` within the job's allocation: `all` is the allocation's count; more than it, no
/// allocation, or one that cannot be read is refused. No GPUs asked stays none.
fn confine_gpus(gpus: &Gpus, job: &SlurmJob, profile: &str) -> Result<Gpus, SlurmError> {
    if gpus.is_none() {
        return Ok(Gpus::None);
    }
    let ids = match &job.gpus {
        GpuAllocation::Step { ids } | GpuAllocation::Job { ids } if !ids.is_empty() => ids,
        GpuAllocation::Unreadable { variable, value } => {
            return Err(SlurmError::UnreadableAllocation {
                job: job.job_id.clone(),
                variable: variable.clone(),
                value: value.clone(),
            });
        }
        _ => {
            return Err(SlurmError::NoGpusAllocated {
                profile: profile.to_string(),
                job: job.job_id.clone(),
            });
        }
    };
    let too_many = |asked: usize| SlurmError::MoreGpusThanAllocated {
        profile: profile.to_string(),
        job: job.job_id.clone(),
        asked,
        allocated: ids.len(),
        variable: job.gpus.variable().unwrap_or_default().to_string(),
        ids: ids_text(ids),
    };
    Ok(match gpus {
        // `all`: the job's GPUs, chosen by placement among the allocation.
        Gpus::All => Gpus::Count(u32::try_from(ids.len()).unwrap_or(u32::MAX)),
        Gpus::Count(asked) if *asked as usize > ids.len() => return Err(too_many(*asked as usize)),
        Gpus::Devices(named) if named.len() > ids.len() => return Err(too_many(named.len())),
        other => other.clone(),
    })
}

fn mebibytes(bytes: i64) -> String {
    format!("{}M", bytes / (1 << 20))
}

/// The allocated GPUs as NVML lists them: Slurm's index is the `N` of the `File=` list's
/// `/dev/nvidiaN`, matched to the GPU with that minor number; by NVML index only when NVML
/// gave no minor number for some GPU (then the two orders are assumed to agree).
pub fn allocated_gpus(
    job: &SlurmJob,
    ids: &[u32],
    gpus: &[GpuDevice],
) -> Result<Vec<AllocatedGpu>, SlurmError> {
    let by_minor = !gpus.is_empty() && gpus.iter().all(|gpu| gpu.minor_number.value().is_some());
    // gres.conf's files, when read, say each index's minor number exactly.
    let minors = job
        .gpu_minors
        .as_deref()
        .filter(|minors| minors.len() == ids.len());
    ids.iter()
        .enumerate()
        .map(|(position, &id)| {
            let minor = minors.map_or(id, |minors| minors[position]);
            let found = gpus.iter().find(|gpu| {
                if by_minor {
                    gpu.minor_number.value() == Some(&minor)
                } else {
                    gpu.index == id
                }
            });
            let unknown = || SlurmError::AllocatedGpuUnknown {
                job: job.job_id.clone(),
                id,
                variable: job.gpus.variable().unwrap_or_default().to_string(),
                wanted: if by_minor { "minor number" } else { "index" },
            };
            let gpu = found.ok_or_else(unknown)?;
            Ok(AllocatedGpu {
                slurm_id: id,
                index: gpu.index,
                uuid: gpu.uuid.value().cloned().ok_or_else(unknown)?,
                matched_by: match (by_minor, minors.is_some()) {
                    (true, true) => MatchedBy::GresFile,
                    (true, false) => MatchedBy::MinorNumber,
                    (false, _) => MatchedBy::Index,
                },
            })
        })
        .collect()
}

/// `gpus` checked against the allocated GPUs: each GPU named (NVML index or UUID) must be
/// one of them; with `first` (`placement = "first"`) a count is pinned to the first
/// allocated GPUs, since the daemon's "first N" are the node's, not the job's.
pub fn within_allocation(
    gpus: &Gpus,
    allocated: &[AllocatedGpu],
    first: bool,
    job: &SlurmJob,
    profile: &str,
) -> Result<Gpus, SlurmError> {
    match gpus {
        Gpus::Devices(named) => {
            for gpu in named {
                let ours = allocated
                    .iter()
                    .any(|held| held.uuid == *gpu || held.index.to_string() == *gpu);
                if !ours {
                    return Err(SlurmError::GpuOutsideAllocation {
                        profile: profile.to_string(),
                        job: job.job_id.clone(),
                        gpu: gpu.clone(),
                        allocated: allocated
                            .iter()
                            .map(|held| held.index.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    });
                }
            }
            Ok(gpus.clone())
        }
        Gpus::Count(count) if first => Ok(Gpus::Devices(
            allocated
                .iter()
                .take(*count as usize)
                .map(|held| held.uuid.clone())
                .collect(),
        )),
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu::{Fact, GpuDevice, NvmlFailure};
    use crate::facts::slurm::{JobCpus, JobMemory};

    fn job(gpus: GpuAllocation) -> SlurmJob {
        SlurmJob {
            job_id: "42".into(),
            step_id: Some("batch".into()),
            gpus,
            memory: Some(JobMemory {
                bytes: 4 << 30,
                from: "SLURM_MEM_PER_NODE=4096".into(),
            }),
            cpus: Some(JobCpus {
                count: 4,
                from: "SLURM_CPUS_PER_TASK=4".into(),
            }),
            node_list: Some("n1".into()),
            node_id: Some(0),
            nodes: Some(1),
            gpu_minors: None,
            unreadable: Vec::new(),
        }
    }

    fn body() -> CreateBody {
        serde_json::from_value(serde_json::json!({
            "Image": "busybox:latest",
            "Cmd": [], "Labels": {},
            "HostConfig": {"RestartPolicy": {"Name": "no", "MaximumRetryCount": 0}},
        }))
        .unwrap()
    }

    fn devices(ids: &[&str]) -> Gpus {
        Gpus::Devices(ids.iter().map(|id| (*id).to_string()).collect())
    }

    fn gpu(index: u32, minor: Option<u32>) -> GpuDevice {
        let mut gpu = GpuDevice::unreachable(index, NvmlFailure::invalid_value("test"));
        gpu.uuid = Fact::Value(format!("GPU-{index}"));
        gpu.minor_number = match minor {
            Some(minor) => Fact::Value(minor),
            None => Fact::Error(NvmlFailure::invalid_value("no minor")),
        };
        gpu
    }

    #[test]
    fn all_means_the_allocation_and_more_than_it_fails_naming_both() {
        let allocation = GpuAllocation::Job { ids: vec![2, 3] };
        let (confined, gpus) = confine(&body(), &Gpus::All, &job(allocation.clone()), "p").unwrap();
        assert_eq!(gpus, Gpus::Count(2));
        assert_eq!(confined.host_config.device_requests[0].count, 2);
        assert_eq!(confined.labels[SLURM_JOB_LABEL], "42");
        assert_eq!(confined.labels[SLURM_STEP_LABEL], "batch");
        let refused = confine(&body(), &Gpus::Count(3), &job(allocation.clone()), "p").unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("asks for 3 GPU")
                && said.contains("allocated 2")
                && said.contains("SLURM_JOB_GPUS=2,3"),
            "{said}"
        );
        assert!(confine(&body(), &Gpus::Count(2), &job(allocation.clone()), "p").is_ok());
        assert!(confine(&body(), &devices(&["0", "1", "2"]), &job(allocation), "p").is_err());
    }

    #[test]
    fn gpus_in_a_job_without_gpus_fail_and_unreadable_ones_are_named() {
        assert!(matches!(
            confine(&body(), &Gpus::Count(1), &job(GpuAllocation::None), "p"),
            Err(SlurmError::NoGpusAllocated { .. })
        ));
        let unreadable = GpuAllocation::Unreadable {
            variable: "SLURM_JOB_GPUS".into(),
            value: "x".into(),
        };
        assert!(matches!(
            confine(&body(), &Gpus::Count(1), &job(unreadable), "p"),
            Err(SlurmError::UnreadableAllocation { .. })
        ));
    }

    #[test]
    fn memory_and_cpus_default_to_the_job_and_more_fails() {
        let none = GpuAllocation::None;
        let (confined, _) = confine(&body(), &Gpus::None, &job(none.clone()), "p").unwrap();
        assert_eq!(confined.host_config.memory, Some(4 << 30));
        assert_eq!(confined.host_config.nano_cpus, Some(4_000_000_000));
        let mut within = body();
        within.host_config.memory = Some(1 << 30);
        within.host_config.nano_cpus = Some(2_000_000_000);
        let (confined, _) = confine(&within, &Gpus::None, &job(none.clone()), "p").unwrap();
        assert_eq!(confined.host_config.memory, Some(1 << 30));
        assert_eq!(confined.host_config.nano_cpus, Some(2_000_000_000));
        let mut greedy = body();
        greedy.host_config.memory = Some(8 << 30);
        let said = confine(&greedy, &Gpus::None, &job(none.clone()), "p")
            .unwrap_err()
            .to_string();
        assert!(said.contains("8192M") && said.contains("4096M"), "{said}");
        let mut cpus = body();
        cpus.host_config.nano_cpus = Some(6_000_000_000);
        assert!(matches!(
            confine(&cpus, &Gpus::None, &job(none), "p"),
            Err(SlurmError::MoreCpusThanAllocated { allocated: 4, .. })
        ));
    }

    #[test]
    fn slurm_indices_are_matched_by_minor_number_else_by_index() {
        let allocation = GpuAllocation::Job { ids: vec![2, 3] };
        let job = job(allocation);
        // NVML index i has device node /dev/nvidia(3 - i).
        let gpus: Vec<GpuDevice> = (0..4).map(|index| gpu(index, Some(3 - index))).collect();
        let allocated = allocated_gpus(&job, &[2, 3], &gpus).unwrap();
        assert_eq!(
            allocated.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            vec![1, 0]
        );
        assert_eq!(allocated[0].matched_by, MatchedBy::MinorNumber);
        let without: Vec<GpuDevice> = (0..4).map(|index| gpu(index, None)).collect();
        let allocated = allocated_gpus(&job, &[2, 3], &without).unwrap();
        assert_eq!(
            allocated
                .iter()
                .map(|gpu| gpu.uuid.as_str())
                .collect::<Vec<_>>(),
            vec!["GPU-2", "GPU-3"]
        );
        assert!(matches!(
            allocated_gpus(&job, &[7], &gpus),
            Err(SlurmError::AllocatedGpuUnknown { id: 7, .. })
        ));
        // gres.conf says which device each index is: `File=…/nvidia[4-7]` on this node.
        let listed = SlurmJob {
            gpu_minors: Some(vec![3, 2]),
            ..job.clone()
        };
        let allocated = allocated_gpus(&listed, &[2, 3], &gpus).unwrap();
        assert_eq!(
            allocated.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(allocated[0].matched_by, MatchedBy::GresFile);
    }

    #[test]
    fn named_gpus_must_be_the_jobs_and_first_pins_the_allocation() {
        let job = job(GpuAllocation::Job { ids: vec![2, 3] });
        let gpus: Vec<GpuDevice> = (0..4).map(|index| gpu(index, Some(index))).collect();
        let allocated = allocated_gpus(&job, &[2, 3], &gpus).unwrap();
        assert!(within_allocation(&devices(&["GPU-3"]), &allocated, false, &job, "p").is_ok());
        assert!(within_allocation(&devices(&["2"]), &allocated, false, &job, "p").is_ok());
        let outside = within_allocation(&devices(&["0"]), &allocated, false, &job, "p")
            .unwrap_err()
            .to_string();
        assert!(
            outside.contains("`0`") && outside.contains("NVML 2,3"),
            "{outside}"
        );
        assert_eq!(
            within_allocation(&Gpus::Count(1), &allocated, true, &job, "p").unwrap(),
            devices(&["GPU-2"])
        );
        assert_eq!(
            within_allocation(&Gpus::Count(1), &allocated, false, &job, "p").unwrap(),
            Gpus::Count(1)
        );
    }
}
