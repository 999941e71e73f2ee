//! Inside a Slurm job (issue 29): the job read once from the context (`host::slurm`), and
//! the pure rules of `container_plan::slurm` applied where `up` and `run` form their body and where
//! placement forms its list of candidate GPUs. Outside a job every function here hands
//! back what it was given.

use crate::container_plan::CreateBody;
use crate::container_plan::gpus::Gpus;
use crate::container_plan::slurm::{self, SlurmError};
use crate::context::Context;
use crate::error::Error;
use crate::facts::gpu::{GpuFacts, LoadOutcome};
use crate::facts::slurm::{AllocatedGpu, SlurmJob};
use crate::profile::model::GpuPlacement;

/// The Slurm job envctl runs in, when `SLURM_JOB_ID` is set.
pub fn job(context: &Context) -> Option<SlurmJob> {
    crate::host::slurm::job(&context.environment.slurm())
}

/// The body and GPUs `up` or `run` will create, inside a job: the job's labels, memory
/// and CPUs, and its GPU count (`container_plan::slurm::confine`). `optional` (a profile that
/// asked `gpus = "optional"`) in a job without GPUs runs without them, as on a host
/// without GPUs.
///
/// With NVML's facts (`gpu`, gathered for a plan that asks for GPUs), GPUs the profile
/// names are checked to be the job's here, where the profile's name is known.
pub fn shape(
    body: CreateBody,
    gpus: Gpus,
    optional: bool,
    gpu: Option<&GpuFacts>,
    profile: &str,
    context: &Context,
) -> Result<(CreateBody, Gpus), Error> {
    let Some(job) = job(context) else {
        return Ok((body, gpus));
    };
    match slurm::confine(&body, &gpus, &job, profile) {
        Ok((body, gpus)) => {
            if let (Gpus::Devices(_), Some(gpu)) = (&gpus, gpu)
                && let Some(allocated) = allocated(&job, gpu)?
            {
                slurm::within_allocation(&gpus, &allocated, false, &job, profile)?;
            }
            Ok((body, gpus))
        }
        Err(SlurmError::NoGpusAllocated { .. }) if optional => {
            context.printer.warn(&format!(
                "`gpus = \"optional\"`: Slurm job {} has no GPU on this node, so the container runs without GPUs",
                job.job_id
            ));
            let mut without = body;
            without.host_config.device_requests.clear();
            Ok(slurm::confine(&without, &Gpus::None, &job, profile)?)
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

/// For placement: inside a job, the GPUs checked against the job's and the GPU facts
/// narrowed to them, so a count is chosen among the job's GPUs only and `"all"` (already
/// the job's count, by [`shape`]) takes exactly them. Outside a job, both as given.
pub fn for_placement(
    gpus: &Gpus,
    gpu: &GpuFacts,
    policy: GpuPlacement,
    context: &Context,
) -> Result<(Gpus, GpuFacts), Error> {
    // The plan (`shape`) names the profile in its refusals; placement does not know it.
    let profile = "?";
    let job = match job(context) {
        Some(job) if !gpus.is_none() => job,
        _ => return Ok((gpus.clone(), gpu.clone())),
    };
    let Some(allocated) = allocated(&job, gpu)? else {
        return Err(SlurmError::NoGpusAllocated {
            profile: profile.to_string(),
            job: job.job_id.clone(),
        }
        .into());
    };
    if let Gpus::All = gpus {
        // A plan `shape` did not see: the job's GPUs, all of them.
        return Ok((
            Gpus::Devices(allocated.iter().map(|held| held.uuid.clone()).collect()),
            gpu.clone(),
        ));
    }
    let gpus = slurm::within_allocation(
        gpus,
        &allocated,
        policy == GpuPlacement::First,
        &job,
        profile,
    )?;
    let mut narrowed = gpu.clone();
    if let LoadOutcome::Loaded(facts) = &mut narrowed.nvml {
        facts
            .gpus
            .retain(|device| allocated.iter().any(|held| held.index == device.index));
    }
    Ok((gpus, narrowed))
}
