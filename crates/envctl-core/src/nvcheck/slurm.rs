//! nvidia-check inside a Slurm job, run here (`envctl nvidia-check`, issue 29): torch must
//! see exactly the GPUs the job was allocated, and nvidia-smi none outside them. Finding
//! `slurm.gpus` in the GPU passthrough section.

use serde::Serialize;

use super::{Area, RawReport, smi_gpus};
use crate::checks::Finding;

/// The finding's id.
pub const SLURM_GPUS: &str = "slurm.gpus";

/// What the job was allocated on this node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobGpus {
    pub job_id: String,
    /// `SLURM_STEP_GPUS` or `SLURM_JOB_GPUS`.
    pub variable: String,
    /// Slurm's indices.
    pub ids: Vec<u32>,
    /// Their UUIDs as NVML names them, when NVML could be read here.
    pub uuids: Option<Vec<String>>,
}

/// Judges what torch and nvidia-smi saw against the job's allocation.
pub fn judge_allocation(raw: &RawReport, job: &JobGpus) -> Vec<Finding> {
    let allocated = job.ids.len();
    let ids: Vec<String> = job.ids.iter().map(u32::to_string).collect();
    let said = format!(
        "Slurm job {} was allocated {allocated} GPU(s) here ({}={})",
        job.job_id,
        job.variable,
        ids.join(",")
    );
    let mut findings = Vec::new();
    let torch = raw.python.as_ref().and_then(|python| python.torch.as_ref());
    match torch.map(|torch| torch.device_count) {
        Some(Some(count)) if count as usize == allocated => findings.push(Finding::pass(
            SLURM_GPUS,
            format!("torch sees exactly the job's {allocated} GPU(s): {said}"),
        )),
        Some(Some(count)) => findings.push(
            Finding::fail(
                SLURM_GPUS,
                format!("torch sees {count} GPU(s), but {said}"),
            )
            .with_hint(
                "something narrows or widens the GPUs (CUDA_VISIBLE_DEVICES set by hand, a container given other GPUs): `env | grep -E 'CUDA|NVIDIA|SLURM'`",
            ),
        ),
        Some(None) => findings.push(
            Finding::fail(
                SLURM_GPUS,
                format!("torch could not count its GPUs, so it cannot be told to see the job's: {said}"),
            )
            .with_hint("`python3 -c 'import torch; print(torch.cuda.device_count())'` shows CUDA's error"),
        ),
        None => findings.push(Finding::info(
            SLURM_GPUS,
            format!("{said}; torch is not here, so what torch sees was not checked"),
        )),
    }
    // nvidia-smi lists what the job's devices cgroup lets it open: never a GPU of another job.
    let smi = raw
        .shell
        .as_ref()
        .and_then(|shell| shell.nvidia_smi.as_ref())
        .filter(|run| run.exit_status == Some(0) && !run.timed_out)
        .map(|run| smi_gpus(&run.query, run.stdout.as_deref().unwrap_or("")));
    if let (Some(smi), Some(uuids)) = (smi, &job.uuids) {
        let outside: Vec<String> = smi
            .iter()
            .filter_map(|gpu| gpu.uuid.clone())
            .filter(|uuid| !uuids.contains(uuid))
            .collect();
        if !outside.is_empty() {
            findings.push(
                Finding::fail(
                    SLURM_GPUS,
                    format!(
                        "nvidia-smi sees GPU(s) outside the allocation: {} ({said})",
                        outside.join(", ")
                    ),
                )
                .with_hint("the node does not confine devices (`ConstrainDevices=yes` in cgroup.conf): the job can open other jobs' GPUs"),
            );
        }
    }
    findings
        .into_iter()
        .map(|finding| {
            finding
                .with_fact("job", &job.job_id)
                .with_fact("allocated", &job.ids)
                .in_area(Area::Passthrough)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvcheck::{PythonFacts, TorchFacts};

    fn raw(count: Option<u32>) -> RawReport {
        RawReport {
            python: Some(PythonFacts {
                torch: Some(TorchFacts {
                    found: true,
                    device_count: count,
                    ..TorchFacts::default()
                }),
                ..PythonFacts::default()
            }),
            ..RawReport::default()
        }
    }

    fn job() -> JobGpus {
        JobGpus {
            job_id: "42".into(),
            variable: "SLURM_JOB_GPUS".into(),
            ids: vec![2, 3],
            uuids: None,
        }
    }

    #[test]
    fn torch_must_see_exactly_the_allocation() {
        let exactly = judge_allocation(&raw(Some(2)), &job());
        assert_eq!(exactly[0].status, crate::checks::Status::Pass);
        let more = judge_allocation(&raw(Some(4)), &job());
        assert_eq!(more[0].status, crate::checks::Status::Fail);
        assert!(
            more[0].message.contains("SLURM_JOB_GPUS=2,3"),
            "{}",
            more[0].message
        );
        let unknown = judge_allocation(&raw(None), &job());
        assert_eq!(unknown[0].status, crate::checks::Status::Fail);
        let no_torch = judge_allocation(&RawReport::default(), &job());
        assert_eq!(no_torch[0].status, crate::checks::Status::Info);
    }
}
