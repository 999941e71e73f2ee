//! doctor inside a Slurm job (issue 29): which job, which GPUs the job was allocated and
//! which of NVML's GPUs they are (`slurm.job`), and that a Docker container runs outside
//! the job's cgroup, with what envctl does about it (`slurm.cgroup`).

use crate::checks::{Area, Finding};
use crate::facts::slurm::{AllocatedGpu, GpuAllocation, SlurmJob};

/// The findings for `job` (none outside a job). `allocated`: the job's GPUs matched to
/// NVML's (`container_plan::slurm::allocated_gpus`), or why they could not be.
pub fn job(
    job: Option<&SlurmJob>,
    allocated: Option<Result<Vec<AllocatedGpu>, String>>,
) -> Vec<Finding> {
    let Some(job) = job else {
        return Vec::new();
    };
    vec![
        job_gpus(job, allocated)
            .with_fact("job", &job.job_id)
            .with_fact("allocation", &job.gpus)
            .in_area(Area::Nvidia),
        outside_the_cgroup(job).in_area(Area::Docker),
    ]
}

/// `slurm.job`: the job (its step, nodes and limits) and its GPUs, matched to NVML's
/// (`allocated`) or why they could not be.
fn job_gpus(job: &SlurmJob, allocated: Option<Result<Vec<AllocatedGpu>, String>>) -> Finding {
    let step = job
        .step_id
        .as_deref()
        .map_or_else(String::new, |step| format!(", step {step}"));
    let node = job
        .node_list
        .as_deref()
        .map_or_else(String::new, |nodes| format!(" on {nodes}"));
    let limits = job_limits(job);
    let heading = format!("inside Slurm job {}{step}{node}", job.job_id);
    // The GPUs the job was given and the variable that named them (the arms below that
    // use it are those of a readable allocation).
    let listed = match (job.gpus.ids(), job.gpus.variable()) {
        (Some(listed), Some(variable)) => format!("GPUs {} ({variable})", ids(listed)),
        _ => String::new(),
    };
    match (&job.gpus, allocated) {
        (GpuAllocation::Unreadable { variable, value }, _) => Finding::fail(
            "slurm.job",
            format!("{heading}: {variable}=`{value}` is not a list of GPU indices{limits}"),
        )
        .with_hint("envctl reads Slurm's GPU indices (`0,1`): check the job's environment (`env | grep SLURM_`)"),
        (GpuAllocation::None, _) => Finding::info(
            "slurm.job",
            format!("{heading}: Slurm names no GPU for it (no SLURM_STEP_GPUS or SLURM_JOB_GPUS), so a profile that asks for GPUs is refused{limits}"),
        )
        .with_hint("ask Slurm for GPUs (`--gres=gpu:N`); in an `salloc` shell, run envctl under `srun`"),
        (_, Some(Ok(gpus))) => Finding::info(
            "slurm.job",
            format!(
                "{heading}: {listed} are NVML's {}{limits}; envctl pins containers to these and no others",
                gpus.iter()
                    .map(|gpu| format!("{} ({})", gpu.index, gpu.uuid))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        )
        .with_fact("gpus", &gpus),
        (_, Some(Err(why))) => Finding::fail(
            "slurm.job",
            format!(
                "{heading}: {listed} cannot be matched to NVML's: {why}{limits}"
            ),
        )
        .with_hint("compare gres.conf's `File=` list with `nvidia-smi -q | grep -i minor`"),
        (_, None) => Finding::info(
            "slurm.job",
            format!("{heading}: {listed}{limits}"),
        ),
    }
}

/// The job's memory and CPU limits as the heading ends with them (`; memory 8192 MiB
/// (SLURM_MEM_PER_NODE), 4 CPUs (SLURM_CPUS_ON_NODE)`); empty without any.
fn job_limits(job: &SlurmJob) -> String {
    let mut limits = Vec::new();
    if let Some(memory) = &job.memory {
        limits.push(format!(
            "memory {} MiB ({})",
            memory.bytes >> 20,
            memory.from
        ));
    }
    if let Some(cpus) = &job.cpus {
        limits.push(format!("{} CPUs ({})", cpus.count, cpus.from));
    }
    if limits.is_empty() {
        String::new()
    } else {
        format!("; {}", limits.join(", "))
    }
}

/// `slurm.cgroup`: a Docker container runs outside the job's cgroup, and what envctl
/// does about it.
fn outside_the_cgroup(job: &SlurmJob) -> Finding {
    Finding::warn(
        "slurm.cgroup",
        format!(
            "a Docker container runs outside job {}'s cgroup: Slurm's memory, CPU and device limits and its accounting do not follow it, and Slurm never kills it",
            job.job_id
        ),
    )
    .with_hint(format!(
        "envctl gives its containers the job's GPUs, memory and CPUs and labels them `envctl.slurm-job={id}`; `envctl run` (under `srun`, or `exec`ed as a batch script's last line) removes its container when the job ends; an Epilog running `envctl down --rm --slurm-job \"$SLURM_JOB_ID\"` sweeps what a killed run left (docs/clusters.md)",
        id = job.job_id
    ))
}

fn ids(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::facts::slurm::MatchedBy;

    fn job(gpus: GpuAllocation) -> SlurmJob {
        SlurmJob {
            job_id: "42".into(),
            step_id: Some("0".into()),
            gpus,
            memory: None,
            cpus: None,
            node_list: Some("n1".into()),
            node_id: Some(0),
            nodes: Some(1),
            gpu_minors: None,
            unreadable: Vec::new(),
        }
    }

    #[test]
    fn outside_a_job_nothing_is_said() {
        assert!(super::job(None, None).is_empty());
    }

    #[test]
    fn the_heading_ends_with_the_jobs_limits() {
        let mut job = job(GpuAllocation::None);
        assert_eq!(job_limits(&job), "");
        job.memory = Some(crate::facts::slurm::JobMemory {
            bytes: 8 << 30,
            from: "SLURM_MEM_PER_NODE".into(),
        });
        job.cpus = Some(crate::facts::slurm::JobCpus {
            count: 4,
            from: "SLURM_CPUS_PER_TASK".into(),
        });
        assert_eq!(
            job_limits(&job),
            "; memory 8192 MiB (SLURM_MEM_PER_NODE), 4 CPUs (SLURM_CPUS_PER_TASK)"
        );
    }

    #[test]
    fn a_job_names_its_gpus_and_warns_of_the_cgroup() {
        let allocated = vec![AllocatedGpu {
            slurm_id: 2,
            index: 1,
            uuid: "GPU-b".into(),
            matched_by: MatchedBy::MinorNumber,
        }];
        let said = super::job(
            Some(&job(GpuAllocation::Step { ids: vec![2] })),
            Some(Ok(allocated)),
        );
        assert_eq!(said[0].status, Status::Info);
        assert!(
            said[0].message.contains("job 42, step 0 on n1")
                && said[0]
                    .message
                    .contains("GPUs 2 (SLURM_STEP_GPUS) are NVML's 1 (GPU-b)"),
            "{}",
            said[0].message
        );
        assert_eq!(said[1].id, "slurm.cgroup");
        assert_eq!(said[1].status, Status::Warn);
        assert!(
            said[1]
                .hint
                .as_deref()
                .unwrap()
                .contains("envctl down --rm --slurm-job")
        );
    }

    #[test]
    fn unmatched_or_unreadable_gpus_fail() {
        let unmatched = super::job(
            Some(&job(GpuAllocation::Job { ids: vec![7] })),
            Some(Err("no GPU with minor number 7".into())),
        );
        assert_eq!(unmatched[0].status, Status::Fail);
        let unreadable = super::job(
            Some(&job(GpuAllocation::Unreadable {
                variable: "SLURM_JOB_GPUS".into(),
                value: "x".into(),
            })),
            None,
        );
        assert_eq!(unreadable[0].status, Status::Fail);
    }
}
