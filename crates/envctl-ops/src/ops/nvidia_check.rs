//! nvidia-check's application layer: run the embedded scripts in the container (bounded by
//! `--timeout` and by size), read the host's NVML when the daemon is local, resolve the
//! container's profile, and judge it all with `nvcheck::judge`; then the CUDA libraries of
//! the container's image (`ops::image_libraries`, cached per image id) on the GPUs the
//! check saw inside it (`gpu.library-arch`, issue 41). The command renders it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::checks::{Finding, Status, worst};
use crate::compat::Matrix;
use crate::container_plan::PROFILE_LABEL;
use crate::context::Context;
use crate::engine::Engine;
use crate::engine::exec::{COMMAND_NOT_FOUND, ExecRequest};
use crate::error::Error;
use crate::facts::container::{ContainerDetails, OutputStream};
use crate::facts::gpu::GpuFacts;
use crate::gpu;
use crate::nvcheck::{
    self, DaemonGpuFacts, Expectations, ExpectedGpus, GivenGpus, GpuSource, HostDriver, PythonRun,
    RawReport, RunFacts,
};
use crate::ops::doctor::bundled_candidates;
use crate::ops::matrix::load_matrix;
use crate::profile::ResolvedProfile;
use crate::profile::model::GpuRequest;

/// `--quick` and `--timeout` of `envctl exec TARGET nvidia-check`.
#[derive(Debug, Clone)]
pub struct NvidiaCheckOptions {
    pub quick: bool,
    pub timeout_seconds: u64,
}

/// The most of the script's output kept: its report is a few KiB; an image that floods
/// stdout must not exhaust memory.
const OUTPUT_LIMIT: usize = 16 << 20;
/// How much of the exec's stderr is kept for the report.
const STDERR_TAIL: usize = 4096;
/// The profile's variables compared with the container's.
const COMPARED_VARIABLES: [&str; 2] = ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"];

/// What the check found, borrowed for the renderer.
pub struct Checked<'a> {
    /// The container checked; none for a check here (`envctl nvidia-check`).
    pub container: Option<&'a ContainerDetails>,
    pub matrix: &'a Matrix,
    pub expectations: &'a Expectations<'a>,
    pub facts: &'a RawReport,
    pub findings: Vec<Finding>,
    pub status: Status,
    /// The CUDA libraries of the folders `envctl nvidia-check --libraries` scanned.
    pub libraries: Option<crate::compat::fatbin::ImageLibraries>,
}

/// Runs the check in `container`, judges it against the host, the container's profile and
/// the matrix, and hands the result to `render`.
pub async fn check<T>(
    engine: &Engine,
    container: &ContainerDetails,
    options: &NvidiaCheckOptions,
    context: &Context,
    render: impl FnOnce(Checked<'_>) -> Result<T, Error>,
) -> Result<T, Error> {
    let matrix = load_matrix(None, context.environment.config_home().as_deref())?;
    let bundled = bundled_candidates();
    let candidates = crate::ops::doctor::torch_candidates(&bundled);
    let (profile, profile_note) = container_profile(container, context);

    // NVML on this machine only speaks for the daemon's machine when the daemon runs here.
    let engine_facts = engine.facts().await;
    let local = matches!(
        &engine_facts.state,
        crate::facts::engine::EngineState::Reachable(daemon) if daemon.host.elsewhere().is_none()
    );
    let host_task = local.then(|| {
        let library = context.environment.nvml_library();
        tokio::task::spawn_blocking(move || gpu::gather(library.as_deref()))
    });

    context.printer.info(&format!(
        "running nvidia-check in `{}` (at most {} s{})…",
        container.name,
        options.timeout_seconds,
        if options.quick { ", --quick" } else { "" }
    ));
    let raw = gather(
        &Runner::Container {
            engine,
            id: &container.id,
        },
        options,
    )
    .await?;
    show_stderr(&raw, context);

    let daemon = daemon_gpu_facts(engine_facts);
    let host_facts = match host_task {
        None => None,
        Some(task) => Some(task.await),
    };
    let host = seen_host_driver(host_facts.as_ref(), engine);
    let host_gpus = host_facts.as_ref().and_then(|facts| facts.as_ref().ok());
    let expectations = Expectations {
        target: container.name.clone(),
        profile: profile
            .as_ref()
            .map(|resolved| resolved.profile.name.clone()),
        host,
        gpus: expected_gpus(profile.as_ref(), container),
        stack_torch: profile
            .as_ref()
            .and_then(|resolved| resolved.profile.stack.torch.clone()),
        environment: compared_environment(profile.as_ref()),
        given: given_gpus(container),
        daemon,
        matrix: &matrix,
        candidates: &candidates,
    };
    let mut findings = nvcheck::judge(&raw, &expectations);
    if let Some(note) = profile_note {
        findings.insert(0, note);
    }
    findings.extend(image_library_findings(engine, container, &raw, host_gpus, context).await);
    let status = worst(&findings);
    render(Checked {
        container: Some(container),
        matrix: &matrix,
        expectations: &expectations,
        facts: &raw,
        findings,
        status,
        libraries: None,
    })
}

/// `envctl nvidia-check`: the same scripts run here, in envctl's own environment (a pyxis
/// or Apptainer container, a conda env, a bare-metal node), judged by the same rules
/// against this machine's NVML and, with `--profile`, the profile's expectations. Inside a
/// Slurm job with GPUs, torch must see exactly the job's GPUs (`nvcheck::slurm`).
///
/// With `libraries` (folders: a Python environment's site-packages, say), the CUDA
/// libraries installed there are read with the image scan's code and judged on the GPUs the
/// check saw (`gpu.library-arch`); tests/gpu/check.sh compares them with `cuobjdump`.
pub async fn check_here<T>(
    options: &NvidiaCheckOptions,
    profile: Option<ResolvedProfile>,
    libraries: &[std::path::PathBuf],
    context: &Context,
    render: impl FnOnce(Checked<'_>) -> Result<T, Error>,
) -> Result<T, Error> {
    let matrix = load_matrix(None, context.environment.config_home().as_deref())?;
    let bundled = bundled_candidates();
    let candidates = crate::ops::doctor::torch_candidates(&bundled);
    let library = context.environment.nvml_library();
    let host_task = tokio::task::spawn_blocking(move || gpu::gather(library.as_deref()));
    context.printer.info(&format!(
        "running nvidia-check here, without a container (at most {} s{})…",
        options.timeout_seconds,
        if options.quick { ", --quick" } else { "" }
    ));
    let raw = gather(&Runner::Here, options).await?;
    show_stderr(&raw, context);
    let facts = host_task.await.ok();
    let host = match &facts {
        Some(facts) => host_driver(facts),
        None => HostDriver::Unknown {
            reason: "the NVML probe crashed".into(),
        },
    };
    let job = crate::ops::slurm::job(context);
    let job_gpus = job
        .as_ref()
        .and_then(|job| job_gpus_of(job, facts.as_ref()));
    let gpus = expected_gpus_here(profile.as_ref(), job_gpus.as_ref());
    let expectations = Expectations {
        // Empty: the hints name the commands themselves, not `envctl exec TARGET`.
        target: String::new(),
        profile: profile
            .as_ref()
            .map(|resolved| resolved.profile.name.clone()),
        host,
        gpus,
        stack_torch: profile
            .as_ref()
            .and_then(|resolved| resolved.profile.stack.torch.clone()),
        environment: BTreeMap::new(),
        given: GivenGpus::Unknown,
        daemon: DaemonGpuFacts {
            cgroup_driver: None,
            runtimes: None,
            unknown_because: Some("the check ran here, without a container".into()),
        },
        matrix: &matrix,
        candidates: &candidates,
    };
    let mut findings = nvcheck::judge(&raw, &expectations);
    if let Some(job) = &job_gpus {
        findings.extend(nvcheck::slurm::judge_allocation(&raw, job));
    }
    let mut scanned = None;
    if !libraries.is_empty() {
        scanned = scan_libraries(libraries, &raw, facts.as_ref(), &mut findings, context);
    }
    let status = worst(&findings);
    render(Checked {
        container: None,
        matrix: &matrix,
        expectations: &expectations,
        facts: &raw,
        findings,
        status,
        libraries: scanned,
    })
}

/// Shows the check's stderr, when it wrote any, as a detail.
fn show_stderr(raw: &RawReport, context: &Context) {
    if !raw.run.stderr_tail.trim().is_empty() {
        context.printer.detail(&format!(
            "the check's stderr:\n{}",
            raw.run.stderr_tail.trim_end()
        ));
    }
}

/// The driver of the daemon's machine: this machine's NVML where the daemon runs here
/// (`host_facts` is then the probe's outcome), else the daemon's endpoint.
fn seen_host_driver(
    host_facts: Option<&Result<GpuFacts, tokio::task::JoinError>>,
    engine: &Engine,
) -> HostDriver {
    match host_facts {
        None => HostDriver::Remote {
            endpoint: engine.endpoint().to_string(),
        },
        Some(Ok(facts)) => host_driver(facts),
        Some(Err(_)) => HostDriver::Unknown {
            reason: "the NVML probe crashed".into(),
        },
    }
}

/// The profile's own values of the GPU variables compared with the container's.
fn compared_environment(profile: Option<&ResolvedProfile>) -> BTreeMap<String, String> {
    profile
        .map(|resolved| {
            resolved
                .profile
                .env
                .iter()
                .filter(|(name, _)| COMPARED_VARIABLES.contains(&name.as_str()))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The container's own device requests and CDI devices, as inspected:
/// `ContainerDetails::gpus` is none when it was given no GPU at all.
fn given_gpus(container: &ContainerDetails) -> GivenGpus {
    match &container.gpus {
        Some(gpus) => GivenGpus::Gpus(gpus.clone()),
        None => GivenGpus::Nothing,
    }
}

/// The GPUs the Slurm `job` was allocated on this node, with their UUIDs where NVML
/// (`facts`) could be read; `None` where the job names no GPU ids.
fn job_gpus_of(
    job: &crate::facts::slurm::SlurmJob,
    facts: Option<&GpuFacts>,
) -> Option<nvcheck::slurm::JobGpus> {
    let ids = job.gpus.ids()?.to_vec();
    let uuids = facts
        .and_then(|facts| crate::ops::slurm::allocated(job, facts).ok().flatten())
        .map(|allocated| allocated.into_iter().map(|gpu| gpu.uuid).collect());
    Some(nvcheck::slurm::JobGpus {
        job_id: job.job_id.clone(),
        variable: job.gpus.variable().unwrap_or_default().to_string(),
        ids,
        uuids,
    })
}

/// The GPUs a check here expects: the profile's request, else as many as the Slurm job
/// was allocated, else none.
fn expected_gpus_here(
    profile: Option<&ResolvedProfile>,
    job_gpus: Option<&nvcheck::slurm::JobGpus>,
) -> Option<ExpectedGpus> {
    match (profile, job_gpus) {
        (Some(resolved), _) => Some(ExpectedGpus {
            request: resolved.profile.gpus.clone(),
            source: GpuSource::Profile {
                name: resolved.profile.name.clone(),
            },
        }),
        (None, Some(job)) => Some(ExpectedGpus {
            request: GpuRequest::Count(u32::try_from(job.ids.len()).unwrap_or(u32::MAX)),
            source: GpuSource::SlurmJob {
                job: job.job_id.clone(),
            },
        }),
        (None, None) => None,
    }
}

/// `--libraries`: reads the CUDA libraries under the folders and adds their
/// `gpu.library-arch` findings on the GPUs the check saw; returns what was read.
fn scan_libraries(
    libraries: &[std::path::PathBuf],
    raw: &RawReport,
    facts: Option<&GpuFacts>,
    findings: &mut Vec<Finding>,
    context: &Context,
) -> Option<crate::compat::fatbin::ImageLibraries> {
    let label = libraries
        .iter()
        .map(|folder| folder.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    context
        .printer
        .info(&format!("reading the CUDA libraries under {label}…"));
    let scan = crate::ops::image_libraries::of_folders(libraries);
    let gpus = library_gpus(raw, facts);
    findings.extend(crate::ops::image_libraries::findings(
        &label,
        scan.clone()
            .map(|libraries| crate::ops::image_libraries::Found {
                libraries,
                cached: false,
                cache_problem: None,
            }),
        &gpus,
        driver_cuda(facts),
    ));
    scan.ok()
}

/// Issue 41: `gpu.library-arch` for the container's image on the GPUs that run it: read
/// through the daemon (or the cache per image id) only when some GPU's compute capability
/// is known, as `doctor` does.
async fn image_library_findings(
    engine: &Engine,
    container: &ContainerDetails,
    raw: &RawReport,
    host: Option<&GpuFacts>,
    context: &Context,
) -> Vec<Finding> {
    let gpus = library_gpus(raw, host);
    if gpus.is_empty() {
        return Vec::new();
    }
    // The id of the image the container runs (its reference may have been moved to
    // another image since): what the scan is read by and cached under.
    let image_id = engine
        .list_containers(true, false)
        .await
        .ok()
        .and_then(|listed| {
            listed
                .into_iter()
                .find(|summary| summary.id == container.id)
                .map(|summary| summary.image_id)
        })
        .filter(|id| !id.is_empty());
    context.printer.info(&format!(
        "reading the CUDA libraries of image `{}`…",
        container.image
    ));
    let found = crate::ops::image_libraries::of_reference(
        engine,
        &container.image,
        image_id.as_deref(),
        context.environment.cache_home().as_deref(),
    )
    .await;
    crate::ops::image_libraries::findings(&container.image, found, &gpus, driver_cuda(host))
}

/// The GPUs a library of the container's image will run on, each named with its compute
/// capability: the devices the check's torch saw inside the container; when it saw none
/// with a capability (no torch in the image), the host's NVML GPUs, when NVML speaks for
/// the daemon's machine.
fn library_gpus(
    raw: &RawReport,
    host: Option<&GpuFacts>,
) -> Vec<(String, crate::compat::ComputeCapability)> {
    let seen: Vec<(String, crate::compat::ComputeCapability)> = raw
        .python
        .iter()
        .flat_map(|python| &python.devices)
        .filter_map(|device| {
            let [major, minor] = device.capability.as_deref()? else {
                return None;
            };
            let name = device
                .name
                .as_ref()
                .map_or_else(String::new, |name| format!(" ({name})"));
            Some((
                format!("GPU {} in the container{name}", device.index),
                crate::compat::ComputeCapability::new(*major, *minor),
            ))
        })
        .collect();
    if !seen.is_empty() {
        return seen;
    }
    let Some(nvml) = host.and_then(GpuFacts::loaded) else {
        return Vec::new();
    };
    nvml.gpus
        .iter()
        .filter_map(|gpu| {
            let capability = *gpu.compute_capability.value()?;
            let name = gpu
                .name
                .value()
                .map_or_else(String::new, |name| format!(" ({name})"));
            Some((format!("GPU {} of the host{name}", gpu.index), capability))
        })
        .collect()
}

/// The CUDA release the host's driver supports (what it can JIT PTX up to); none when NVML
/// does not speak for the daemon's machine or did not say.
fn driver_cuda(host: Option<&GpuFacts>) -> Option<crate::profile::model::CudaVersion> {
    let nvml = host?.loaded()?;
    nvml.cuda_driver_version
        .value()
        .map(|cuda| crate::profile::model::CudaVersion {
            major: cuda.major,
            minor: cuda.minor,
        })
}

/// The daemon's cgroup driver and runtimes (`/info`), or why they are unknown.
fn daemon_gpu_facts(engine: crate::facts::engine::EngineFacts) -> DaemonGpuFacts {
    match engine.state {
        crate::facts::engine::EngineState::Reachable(facts) => DaemonGpuFacts {
            cgroup_driver: facts.cgroup_driver.clone(),
            runtimes: Some(facts.runtimes.clone()),
            unknown_because: None,
        },
        crate::facts::engine::EngineState::Unreachable { message, .. } => DaemonGpuFacts {
            cgroup_driver: None,
            runtimes: None,
            unknown_because: Some(message),
        },
    }
}

/// The container's profile, resolved from its `envctl.profile-file` or `envctl.profile`
/// label (`ops::target::container_profile`); a note when it does not resolve here.
fn container_profile(
    container: &ContainerDetails,
    context: &Context,
) -> (Option<ResolvedProfile>, Option<Finding>) {
    let Some(name) = container.labels.get(PROFILE_LABEL) else {
        return (None, None);
    };
    // The file it was made from first (`envctl.profile-file`), as named commands do.
    match crate::ops::target::container_profile(context, container)
        .unwrap_or_else(|| context.search_path.resolve(name).map_err(Error::from))
    {
        Ok(resolved) => (Some(resolved), None),
        Err(error) => (
            None,
            Some(Finding::info(
                "nvidia-check.profile",
                format!(
                    "the container's profile `{name}` does not resolve here ({error}): the GPU count is checked against the container's own request"
                ),
            )
            .in_area(crate::checks::Area::Passthrough)),
        ),
    }
}

/// The GPUs to expect: the profile's request, else the container's device request.
fn expected_gpus(
    profile: Option<&ResolvedProfile>,
    container: &ContainerDetails,
) -> Option<ExpectedGpus> {
    if let Some(resolved) = profile {
        return Some(ExpectedGpus {
            request: resolved.profile.gpus.clone(),
            source: GpuSource::Profile {
                name: resolved.profile.name.clone(),
            },
        });
    }
    // Without a profile, the device request the container was created with says what it
    // asked for; a container without one asked for no GPU.
    let request = match container.gpus.as_deref() {
        None => GpuRequest::None,
        Some("all") => GpuRequest::All,
        Some(text) => match text.parse::<u32>() {
            Ok(count) => GpuRequest::Count(count),
            Err(_) => GpuRequest::Devices(text.split(',').map(str::to_string).collect()),
        },
    };
    Some(ExpectedGpus {
        request,
        source: GpuSource::Container,
    })
}

fn host_driver(facts: &GpuFacts) -> HostDriver {
    match facts.loaded() {
        Some(nvml) => match nvml.driver_version.value() {
            Some(version) => HostDriver::Known {
                version: version.clone(),
                // Unknown when NVML could not count: never the length of an empty list.
                gpu_count: nvml.device_count.value().copied(),
            },
            None => HostDriver::Unknown {
                reason: "NVML did not give the driver version".into(),
            },
        },
        None => HostDriver::Unknown {
            reason: format!(
                "NVML from {}: {}",
                facts.library,
                facts.nvml.failure_message().unwrap_or("not loaded")
            ),
        },
    }
}

/// What one bounded exec gave back.
struct ExecOutcome {
    code: Option<i64>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
}

/// Where the check's scripts run.
enum Runner<'a> {
    /// In a container, through the engine's exec.
    Container { engine: &'a Engine, id: &'a str },
    /// Here: in envctl's own environment (`envctl nvidia-check`).
    Here,
}

/// Runs `command` where `runner` says until it ends or `deadline` passes. On timeout the
/// output so far is kept; the scripts' own watchdog stops what they started.
async fn run_step(
    runner: &Runner<'_>,
    command: Vec<String>,
    deadline: tokio::time::Instant,
) -> Result<ExecOutcome, Error> {
    match runner {
        Runner::Container { engine, id } => run_in_container(engine, id, command, deadline).await,
        Runner::Here => run_here(command, deadline).await,
    }
}

/// [`run_step`] in the container `id`, through the engine's exec, each stream kept up to
/// [`OUTPUT_LIMIT`].
async fn run_in_container(
    engine: &Engine,
    id: &str,
    command: Vec<String>,
    deadline: tokio::time::Instant,
) -> Result<ExecOutcome, Error> {
    let request = ExecRequest {
        command,
        ..ExecRequest::default()
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let result = tokio::time::timeout_at(
        deadline,
        engine.exec(id, &request, None, None, async |stream, bytes: Vec<u8>| {
            let buffer = match stream {
                OutputStream::Stdout => &mut stdout,
                OutputStream::Stderr => &mut stderr,
            };
            let room = OUTPUT_LIMIT.saturating_sub(buffer.len());
            buffer.extend_from_slice(&bytes[..bytes.len().min(room)]);
            Ok(())
        }),
    )
    .await;
    let (code, timed_out) = match result {
        Ok(Ok(code)) => (Some(code), false),
        Ok(Err(error)) => return Err(error.into()),
        Err(_) => (None, true),
    };
    Ok(ExecOutcome {
        code,
        stdout,
        stderr,
        timed_out,
    })
}

/// [`run_step`] here, in envctl's own environment (`host::here`), on a thread of its own.
async fn run_here(
    command: Vec<String>,
    deadline: tokio::time::Instant,
) -> Result<ExecOutcome, Error> {
    let until = deadline.into_std();
    let outcome = tokio::task::spawn_blocking(move || {
        crate::host::here::run_bounded(&command, until, OUTPUT_LIMIT)
    })
    .await
    .map_err(|error| Error::Internal(format!("the check's runner failed: {error}")))?
    .map_err(|source| Error::Read {
        path: "the check's shell (`sh`)".into(),
        source,
    })?;
    Ok(ExecOutcome {
        code: outcome.code,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        timed_out: outcome.timed_out,
    })
}

fn tail(bytes: &[u8], limit: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(limit);
    // Cut at a character boundary.
    let start = (start..=text.len())
        .find(|index| text.is_char_boundary(*index))
        .unwrap_or(text.len());
    text[start..].to_string()
}

/// Runs the check (the shell script; the Python half alone when the image has no `sh`)
/// and gathers its report.
async fn gather(runner: &Runner<'_>, options: &NvidiaCheckOptions) -> Result<RawReport, Error> {
    let seconds = options.timeout_seconds.max(1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    let mut raw = RawReport {
        schema_version: nvcheck::SCHEMA_VERSION,
        run: RunFacts {
            timeout_seconds: seconds,
            quick: options.quick,
            runner: Some("sh".into()),
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    // The shell script; where the image has no `sh`, the Python half alone, with each
    // interpreter in turn: one attempt after another, each through the same runner.
    let attempts = std::iter::once(None).chain(nvcheck::PYTHON_NAMES.iter().map(Some));
    for interpreter in attempts {
        let (command, budget) = match interpreter {
            None => (nvcheck::shell_command(seconds, options.quick), seconds),
            Some(interpreter) => {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    raw.run.timed_out = true;
                    break;
                }
                let budget = left.as_secs().saturating_sub(1).max(1);
                (
                    nvcheck::python_command(interpreter, budget, options.quick),
                    budget,
                )
            }
        };
        let outcome = run_step(runner, command, deadline).await?;
        let Some(interpreter) = interpreter else {
            let stdout = String::from_utf8_lossy(&outcome.stdout).into_owned();
            let shell_missing = outcome.code == Some(COMMAND_NOT_FOUND)
                && !stdout.contains(nvcheck::SHELL_MARKER)
                && String::from_utf8_lossy(&outcome.stderr).contains("not found");
            record(&mut raw, &outcome);
            if !shell_missing {
                let parsed = nvcheck::parse_output(&stdout);
                raw.shell = parsed.shell;
                raw.python_run = parsed.python_run;
                raw.python = parsed.python;
                raw.run.problems = parsed.problems;
                return Ok(raw);
            }
            raw.run.shell_missing = true;
            raw.run.runner = None;
            continue;
        };
        if outcome.code == Some(COMMAND_NOT_FOUND) && outcome.stdout.is_empty() {
            continue;
        }
        raw.run.runner = Some(interpreter.to_string());
        record(&mut raw, &outcome);
        raw.python_run = Some(PythonRun {
            path: Some(interpreter.to_string()),
            budget_seconds: Some(budget),
            exit_status: outcome.code,
            // The exec as a whole ran out of time: that is the run's timeout, not Python's.
            timed_out: false,
            stderr: Some(tail(&outcome.stderr, STDERR_TAIL)),
        });
        match nvcheck::python_document(&String::from_utf8_lossy(&outcome.stdout)) {
            Ok(python) => raw.python = python,
            Err(problem) => raw.run.problems.push(problem),
        }
        break;
    }
    Ok(raw)
}

/// Notes how an exec went in the run's facts.
fn record(raw: &mut RawReport, outcome: &ExecOutcome) {
    raw.run.exit_code = outcome.code;
    raw.run.timed_out |= outcome.timed_out;
    raw.run.stdout_bytes = outcome.stdout.len();
    raw.run.stderr_tail = tail(&outcome.stderr, STDERR_TAIL);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu::LoadOutcome;
    use crate::facts::smi::{ServerGpus, SmiGpu};
    use crate::nvcheck::{DeviceFacts, PythonFacts};

    /// A host whose NVML lists `count` H100s (sm_90) on a CUDA 12.8 driver.
    fn host_h100s(count: u32) -> GpuFacts {
        let server = ServerGpus {
            driver: Some("570.124.06".into()),
            cuda: Some("12.8".parse().unwrap()),
            gpus: (0..count)
                .map(|index| SmiGpu {
                    index,
                    uuid: format!("GPU-{index}"),
                    name: Some("NVIDIA H100 80GB HBM3".into()),
                    compute_capability: Some(crate::compat::ComputeCapability::new(9, 0)),
                    memory_total_mib: None,
                    memory_used_mib: None,
                })
                .collect(),
            processes: Vec::new(),
        };
        GpuFacts {
            library: "stand-in".into(),
            nvml: LoadOutcome::Loaded(Box::new(server.nvml_facts())),
        }
    }

    fn device(index: u32, name: &str, capability: Option<Vec<u32>>) -> DeviceFacts {
        DeviceFacts {
            index,
            name: Some(name.to_string()),
            capability,
            ..DeviceFacts::default()
        }
    }

    fn names(gpus: &[(String, crate::compat::ComputeCapability)]) -> Vec<String> {
        gpus.iter()
            .map(|(name, capability)| format!("{name}: {}", capability.sm()))
            .collect()
    }

    /// The devices torch saw in the container are the GPUs judged; one whose capability is
    /// not a pair is left out, never guessed.
    #[test]
    fn the_containers_own_devices_are_judged() {
        let raw = RawReport {
            python: Some(PythonFacts {
                devices: vec![
                    device(0, "NVIDIA GeForce RTX 5090", Some(vec![12, 0])),
                    device(1, "odd", Some(vec![9])),
                    device(2, "unknown", None),
                ],
                ..PythonFacts::default()
            }),
            ..RawReport::default()
        };
        assert_eq!(
            names(&library_gpus(&raw, None)),
            ["GPU 0 in the container (NVIDIA GeForce RTX 5090): sm_120"]
        );
    }

    /// Without torch in the image, the host's NVML GPUs are judged, when NVML speaks for
    /// the daemon's machine; without either, nothing is (and no scan is made).
    #[test]
    fn without_torch_the_hosts_gpus_are_judged() {
        let raw = RawReport::default();
        assert!(library_gpus(&raw, None).is_empty());
        let host = host_h100s(2);
        assert_eq!(
            names(&library_gpus(&raw, Some(&host))),
            [
                "GPU 0 of the host (NVIDIA H100 80GB HBM3): sm_90",
                "GPU 1 of the host (NVIDIA H100 80GB HBM3): sm_90"
            ]
        );
        assert_eq!(
            driver_cuda(Some(&host)).map(|cuda| cuda.to_string()),
            Some("12.8".to_string())
        );
        assert_eq!(driver_cuda(None), None);
    }

    /// A scan that failed is a warning naming the image and why; a scan's library that
    /// lacks the GPU's architecture fails on it.
    #[test]
    fn scan_results_become_library_arch_findings() {
        use crate::compat::fatbin::{IMAGE_LIBRARIES_SCHEMA, ImageLibraries, ScannedLibrary};
        let gpus = vec![(
            "GPU 0 in the container (NVIDIA GeForce RTX 5090)".to_string(),
            crate::compat::ComputeCapability::new(12, 0),
        )];
        let failed = crate::ops::image_libraries::findings(
            "team/train:1",
            Err("the daemon refused".into()),
            &gpus,
            None,
        );
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].status, crate::checks::Status::Warn);
        assert!(
            failed[0].message.contains("team/train:1"),
            "{}",
            failed[0].message
        );
        let code: crate::compat::fatbin::LibrarySummary =
            serde_json::from_value(serde_json::json!({
                "sass": ["sm_80", "sm_90"], "ptx": [], "has_gpu_code": true, "incomplete": null
            }))
            .unwrap();
        let found = crate::ops::image_libraries::Found {
            libraries: ImageLibraries {
                schema_version: IMAGE_LIBRARIES_SCHEMA,
                image_id: None,
                libraries: vec![ScannedLibrary {
                    path: "usr/lib/python3/site-packages/flash_attn_2_cuda.so".into(),
                    package: Some("flash_attn 2.7.4".into()),
                    code,
                }],
                unreadable: Vec::new(),
                unread_layers: Vec::new(),
                shared_objects: 1,
            },
            cached: false,
            cache_problem: None,
        };
        let judged = crate::ops::image_libraries::findings("team/train:1", Ok(found), &gpus, None);
        assert!(
            judged
                .iter()
                .any(|finding| finding.status == crate::checks::Status::Fail
                    && finding.message.contains("flash_attn_2_cuda.so")),
            "{judged:?}"
        );
    }
}
