//! Inside a Slurm job (issue 29): the job read once from the context (`host::slurm`), and
//! the pure rules of `spec::slurm` applied where `up` and `run` form their body and where
//! placement forms its list of candidate GPUs. Outside a job every function here hands
//! back what it was given.

use crate::context::Context;
use crate::error::Error;
use crate::facts::gpu::{GpuFacts, LoadOutcome};
use crate::facts::slurm::{AllocatedGpu, SlurmJob};
use crate::profile::model::GpuPlacement;
use crate::spec::CreateBody;
use crate::spec::slurm::{self, SlurmError};

/// The Slurm job envctl runs in, when `SLURM_JOB_ID` is set.
pub fn job(context: &Context) -> Option<SlurmJob> {
    crate::host::slurm::job(&context.environment.slurm())
}

/// The bodies `up` or `run` will create, inside a job: the job's labels, memory and CPUs,
/// and its GPU count (`spec::slurm::confine`). `gpus = "optional"` (a `without_gpus`
/// body) in a job without GPUs runs without them, as on a host without GPUs.
pub fn shape(
    body: CreateBody,
    without_gpus: Option<CreateBody>,
    profile: &str,
    context: &Context,
) -> Result<(CreateBody, Option<CreateBody>), Error> {
    let Some(job) = job(context) else {
        return Ok((body, without_gpus));
    };
    let without_gpus = without_gpus
        .map(|without| slurm::confine(&without, &job, profile))
        .transpose()?;
    match slurm::confine(&body, &job, profile) {
        Ok(body) => Ok((body, without_gpus)),
        Err(SlurmError::NoGpusAllocated { .. }) if without_gpus.is_some() => {
            context.printer.warn(&format!(
                "`gpus = \"optional\"`: Slurm job {} has no GPU on this node, so the container runs without GPUs",
                job.job_id
            ));
            let without = without_gpus.clone().unwrap_or(body);
            Ok((without, without_gpus))
        }
        Err(error) => Err(error.into()),
    }
}

/// `up`'s default container name inside a job: `NAME-jobID`, so a job never meets (and
/// starts, or reports running) a container another job left, pinned to that job's GPUs.
/// Outside a job, `name` as it is.
pub fn per_job_name(name: String, context: &Context) -> String {
    match job(context) {
        Some(job) => {
            let id: String = job
                .job_id
                .chars()
                .filter(|character| character.is_ascii_alphanumeric() || "_.-".contains(*character))
                .collect();
            if id.is_empty() {
                name
            } else {
                format!("{name}-job{id}")
            }
        }
        None => name,
    }
}

/// The job's GPUs as NVML lists them, when in a job that has GPUs.
pub fn allocated(job: &SlurmJob, gpu: &GpuFacts) -> Result<Option<Vec<AllocatedGpu>>, Error> {
    let Some(ids) = job.gpus.ids() else {
        return Ok(None);
    };
    let listed = gpu.listed_gpus().map_err(|why| SlurmError::NoNvml {
        job: job.job_id.clone(),
        why,
    })?;
    Ok(Some(slurm::allocated_gpus(job, ids, listed)?))
}

/// For placement: inside a job, the body checked against the job's GPUs and the GPU facts
/// narrowed to them, so a count is chosen among the job's GPUs only and `"all"` (already
/// the job's count, by [`shape`]) takes exactly them. Outside a job, both as given.
pub fn for_placement(
    body: &CreateBody,
    gpu: &GpuFacts,
    policy: GpuPlacement,
    context: &Context,
) -> Result<(CreateBody, GpuFacts), Error> {
    let job = match job(context) {
        Some(job) if !body.host_config.device_requests.is_empty() => job,
        _ => return Ok((body.clone(), gpu.clone())),
    };
    let profile = body
        .labels
        .get(crate::spec::PROFILE_LABEL)
        .cloned()
        .unwrap_or_default();
    // A body that `shape` did not see (an `up` of an older caller) is confined here too.
    let body = slurm::confine(body, &job, &profile)?;
    let Some(allocated) = allocated(&job, gpu)? else {
        return Ok((body, gpu.clone()));
    };
    let body = slurm::within_allocation(
        &body,
        &allocated,
        policy == GpuPlacement::First,
        &job,
        &profile,
    )?;
    let mut narrowed = gpu.clone();
    if let LoadOutcome::Loaded(facts) = &mut narrowed.nvml {
        facts
            .gpus
            .retain(|device| allocated.iter().any(|held| held.index == device.index));
    }
    Ok((body, narrowed))
}
