//! The Passthrough section: whether the GPUs reached the container: `/dev/nvidia*`,
//! `nvidia-smi` inside, the driver seen inside against the host's, the visible-devices
//! variables, and the number of GPUs against what the profile asked for.

use super::{
    DEVICES, DRIVER_MATCH, Expectations, GPU_COUNT, GivenGpus, GpuSource, HostDriver, NVIDIA_SMI,
    VISIBLE_DEVICES, View, exec_hint, plural, recreate_hint,
};
use crate::checks::Finding;
use crate::compat::DriverVersion;
use crate::nvcheck::report::ShellFacts;
use crate::nvcheck::values::{SmiGpu, first_line};
use crate::profile::model::GpuRequest;

/// GPU passthrough: device files, nvidia-smi, the driver, the visible devices, the count.
pub(super) fn passthrough(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let Some(shell) = view.shell else {
        return;
    };
    devices(view, shell, expectations, findings);
    findings.push(nvidia_smi(view, shell, expectations));
    driver_match(view, expectations, findings);
    visible_devices(view, expectations, findings);
    findings.extend(gpu_count(view, expectations));
}

fn devices(
    view: &View<'_>,
    shell: &ShellFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let names: Vec<&str> = shell
        .devices
        .iter()
        .map(|device| device.name.as_str())
        .collect();
    let gpus = view.gpu_device_files();
    if gpus.is_empty() {
        let message = if names.is_empty() {
            "no NVIDIA device files (/dev/nvidia0, /dev/nvidiactl…) in the container: it has no GPU access".to_string()
        } else {
            format!(
                "no GPU device file (/dev/nvidia0…) in the container, only {}: it has no GPU",
                names.join(", ")
            )
        };
        let hidden = view
            .variable("NVIDIA_VISIBLE_DEVICES")
            .filter(|value| matches!(value.trim(), "void" | "none" | ""));
        let hint = match hidden {
            Some(value) => format!(
                "NVIDIA_VISIBLE_DEVICES={value:?} tells the NVIDIA runtime to pass no GPU: remove it from the image or profile and {}",
                recreate_hint(expectations)
            ),
            None => no_gpu_explained(expectations),
        };
        findings.push(
            Finding::fail(DEVICES, message)
                .with_hint(hint)
                .with_fact("device_files", &names),
        );
        return;
    }
    if !names.contains(&"nvidia-uvm") {
        findings.push(
            Finding::warn(
                DEVICES,
                format!(
                    "{} but no /dev/nvidia-uvm: CUDA fails to start (CUDA_ERROR_UNKNOWN) without the nvidia_uvm kernel module",
                    plural(gpus.len(), "GPU device file")
                ),
            )
            .with_hint(format!(
                "load it on the host (`sudo modprobe nvidia-uvm`, or `sudo nvidia-modprobe -u -c=0`), then {}",
                recreate_hint(expectations)
            ))
            .with_fact("device_files", &names),
        );
        return;
    }
    findings.push(
        Finding::pass(
            DEVICES,
            format!(
                "device files for {}: {}",
                plural(gpus.len(), "GPU"),
                names
                    .iter()
                    .map(|name| format!("/dev/{name}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        )
        .with_fact("device_files", &names),
    );
}

/// `gpu.nvidia-smi`: whether nvidia-smi is in the container, answers in time, succeeds
/// and lists GPUs.
fn nvidia_smi(view: &View<'_>, shell: &ShellFacts, expectations: &Expectations<'_>) -> Finding {
    let Some(run) = &shell.nvidia_smi else {
        let capabilities = view
            .variable("NVIDIA_DRIVER_CAPABILITIES")
            .map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
        return Finding::warn(NVIDIA_SMI, "nvidia-smi is not in the container")
            .with_hint(format!(
                "the NVIDIA runtime mounts it when the container gets GPUs and NVIDIA_DRIVER_CAPABILITIES includes `utility` (here: {capabilities}); `compute,utility` is what CUDA images set"
            ));
    };
    let output = format!(
        "{}\n{}",
        run.stdout.as_deref().unwrap_or(""),
        run.stderr.as_deref().unwrap_or("")
    );
    if run.timed_out {
        return Finding::fail(
            NVIDIA_SMI,
            format!(
                "nvidia-smi did not answer within {} s",
                run.limit_seconds.unwrap_or_default()
            ),
        )
        .with_hint("a GPU may be in a bad state: run `nvidia-smi` on the host and look for Xid errors in `dmesg`")
        .with_fact("output", output.trim());
    }
    if run.exit_status != Some(0) {
        let code = run
            .exit_status
            .map_or_else(|| "?".to_string(), |code| code.to_string());
        return Finding::fail(
            NVIDIA_SMI,
            format!(
                "nvidia-smi failed (exit code {code}): {}",
                first_line(&output)
            ),
        )
        .with_hint(smi_failure_hint(&output, expectations))
        .with_fact("output", output.trim());
    }
    let gpus = view.smi_gpus.clone().unwrap_or_default();
    if gpus.is_empty() {
        return Finding::warn(NVIDIA_SMI, "nvidia-smi ran but listed no GPU")
            .with_hint(format!(
                "see its output: `{}`",
                exec_hint(expectations, "nvidia-smi")
            ))
            .with_fact("output", output.trim());
    }
    let driver = view
        .inside_driver()
        .map_or_else(String::new, |driver| format!(", driver {driver}"));
    Finding::pass(
        NVIDIA_SMI,
        format!("nvidia-smi sees {}{driver}", models_text(&gpus)),
    )
    .with_fact("gpus", &gpus)
}

/// What a failed nvidia-smi's `output` points at: GPU access lost after a daemon reload,
/// a driver upgraded without a reboot, or no driver at all; else where to see it whole.
fn smi_failure_hint(output: &str, expectations: &Expectations<'_>) -> String {
    if output.contains("Failed to initialize NVML: Unknown Error") {
        format!(
            "the container lost its GPU access, typically after `systemctl daemon-reload` with the systemd cgroup driver: restart the container ({}); to stop it happening, run `sudo nvidia-ctk system create-dev-char-symlinks --create-all` on the host or switch to CDI",
            recreate_hint(expectations)
        )
    } else if output.contains("Driver/library version mismatch") {
        "the host's NVIDIA kernel module and its libraries differ (a driver upgrade without a reboot): reboot the host or reload the nvidia modules, then recreate the container".to_string()
    } else if output.contains("couldn't communicate with the NVIDIA driver") {
        "the NVIDIA driver is not loaded or not reachable: check `nvidia-smi` on the host and `envctl doctor`".to_string()
    } else {
        format!(
            "see its full output: `{}`",
            exec_hint(expectations, "nvidia-smi")
        )
    }
}

/// `2 × NVIDIA H100 80GB HBM3`, `NVIDIA GeForce RTX 5090`, `1 × A, 1 × B`.
fn models_text(gpus: &[SmiGpu]) -> String {
    let mut models: Vec<(String, usize)> = Vec::new();
    for gpu in gpus {
        let name = gpu.name.clone().unwrap_or_else(|| "an unnamed GPU".into());
        match models.iter_mut().find(|(model, _)| *model == name) {
            Some((_, count)) => *count += 1,
            None => models.push((name, 1)),
        }
    }
    if let [(name, 1)] = models.as_slice() {
        return name.clone();
    }
    models
        .iter()
        .map(|(name, count)| format!("{count} × {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn driver_match(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let Some(inside) = view.inside_driver() else {
        return;
    };
    match &expectations.host {
        HostDriver::Unknown { reason } => findings.push(
            Finding::info(
                DRIVER_MATCH,
                format!("driver {inside} inside; the host's driver is unknown ({reason}), so they are not compared"),
            )
            .with_fact("inside", inside),
        ),
        HostDriver::Remote { endpoint } => findings.push(
            Finding::info(
                DRIVER_MATCH,
                format!("driver {inside} inside; the daemon at {endpoint} is on another machine, so it is not compared with this machine's"),
            )
            .with_fact("inside", inside),
        ),
        HostDriver::Known { version, .. } => {
            let same = match (
                inside.parse::<DriverVersion>(),
                version.parse::<DriverVersion>(),
            ) {
                (Ok(inside), Ok(host)) => inside == host,
                _ => inside.trim() == version.trim(),
            };
            let finding = if same {
                Finding::pass(
                    DRIVER_MATCH,
                    format!("the driver inside is the host's ({version})"),
                )
            } else {
                Finding::fail(
                    DRIVER_MATCH,
                    format!("the container sees driver {inside}, but the host runs {version}"),
                )
                .with_hint(format!(
                    "either the image ships its own NVIDIA driver libraries (an image must not install driver packages: the runtime mounts the host's), or the host's driver changed after the container started: {}",
                    recreate_hint(expectations)
                ))
            };
            findings.push(
                finding
                    .with_fact("inside", inside)
                    .with_fact("host", version),
            );
        }
    }
}

fn visible_devices(view: &View<'_>, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    const NAMES: [&str; 2] = ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"];
    let shown = |name: &str| match view.variable(name) {
        Some(value) => format!("{name}={value}"),
        None => format!("{name} unset"),
    };
    let facts = |finding: Finding| {
        NAMES.iter().fold(finding, |finding, name| {
            finding.with_fact(name, view.variable(name))
        })
    };
    let mut problems = Vec::new();
    for name in NAMES {
        if let Some(wanted) = expectations.environment.get(name)
            && view.variable(name) != Some(wanted.as_str())
        {
            problems.push(
                Finding::warn(
                    VISIBLE_DEVICES,
                    format!(
                        "{} inside, but the profile sets {name}={wanted}",
                        shown(name)
                    ),
                )
                .with_hint(format!(
                    "the container predates the profile's value: {}",
                    recreate_hint(expectations)
                )),
            );
        }
    }
    if let Some(value) = view.variable("CUDA_VISIBLE_DEVICES")
        && matches!(value.trim(), "" | "-1" | "none" | "NoDevFiles")
    {
        problems.push(
            Finding::warn(
                VISIBLE_DEVICES,
                format!("CUDA_VISIBLE_DEVICES={value:?} hides every GPU from CUDA"),
            )
            .with_hint("unset it, or list the GPUs to use (`CUDA_VISIBLE_DEVICES=0,1`)"),
        );
    }
    if problems.is_empty() {
        findings.push(facts(Finding::info(
            VISIBLE_DEVICES,
            format!(
                "{}, {}",
                shown("NVIDIA_VISIBLE_DEVICES"),
                shown("CUDA_VISIBLE_DEVICES")
            ),
        )));
    } else {
        findings.extend(problems.into_iter().map(facts));
    }
}

/// Why a container has no GPU, from the facts: what it was really given (its device
/// requests and CDI devices), what its profile asks, the host's NVML and the daemon's
/// cgroup driver and runtimes. Never the profile's request alone: a profile without GPUs
/// on a host without a driver is not told to ask for `gpus = "all"`, which `up` refuses
/// there, and a container started without GPUs is not told it lost them.
pub fn no_gpu_explained(expectations: &Expectations<'_>) -> String {
    let request = expectations.gpus.as_ref().map(|expected| &expected.request);
    let profile = expectations.profile.as_deref();
    let up = |flag: &str| match profile {
        Some(name) => format!("`envctl up {name}{flag}`"),
        None => "create it again with GPUs (`docker run --gpus all`)".to_string(),
    };
    // What this host's NVML says: the reason there can be no GPU, or how many there are.
    let host_gpus: Result<Option<u32>, String> = match &expectations.host {
        HostDriver::Known { gpu_count, .. } => Ok(*gpu_count),
        HostDriver::Unknown { reason } => {
            Err(format!("this host has no usable NVIDIA driver ({reason})"))
        }
        // The daemon's host is another machine: its GPUs are not known from here.
        HostDriver::Remote { .. } => Ok(None),
    };
    let no_gpu_here = match &host_gpus {
        Err(reason) => Some(reason.clone()),
        Ok(Some(0)) => Some("NVML on this host lists no GPU".to_string()),
        Ok(_) => None,
    };
    let given_nothing = match &expectations.given {
        GivenGpus::Nothing => true,
        GivenGpus::Gpus(given) => return given_but_missing(given, no_gpu_here, expectations),
        // Not read: a container asked for no GPU was given none (`up` gives what is asked).
        GivenGpus::Unknown => !request.is_some_and(GpuRequest::wants_gpus),
    };
    if given_nothing {
        let created = "the container was created without GPUs (no device request, no CDI device)";
        match (request, &no_gpu_here) {
            (Some(GpuRequest::None) | None, Some(reason)) => format!(
                "{created}, as {} asks, and {reason}: there is no GPU to give it here; nvidia-check means something on a GPU host (`envctl doctor` there)",
                profile.map_or("it".to_string(), |name| format!("profile `{name}`"))
            ),
            (Some(GpuRequest::None), None) => match profile {
                Some(name) => format!(
                    "{created}: profile `{name}` asks for no GPU; set `gpus = \"all\"` in it and run `envctl up {name} --recreate`"
                ),
                None => {
                    format!("{created}: create it again with GPUs (`docker run --gpus all`)")
                }
            },
            (None, None) => format!(
                "{created}: create it from a profile with `gpus = \"all\"` (`envctl up PROFILE`), and see `envctl doctor` for the host's NVIDIA runtime"
            ),
            (Some(GpuRequest::Optional), Some(reason)) => format!(
                "{created}: `gpus = \"optional\"` met no GPU, because {reason}; on a host with GPUs, {} gives it them",
                up(" --recreate")
            ),
            (Some(GpuRequest::Optional), None) => format!(
                "{created}: `gpus = \"optional\"` met no GPU when it was made (the driver or GPUs were missing then); {} gives it the GPUs this host has now",
                up(" --recreate")
            ),
            (Some(_), Some(reason)) => format!(
                "{created}, though its profile asks for GPUs, and {reason}: `envctl doctor` says what the host lacks"
            ),
            (Some(request), None) => format!(
                "{created}, though its profile asks for gpus = {request} (the profile changed since, or another tool made it): {} creates it with them",
                up(" --recreate")
            ),
        }
    } else {
        // What it was given is unknown, and its profile asks for GPUs.
        format!(
            "the container has no GPU though gpus = {} is asked: `envctl doctor` checks the host's driver and runtime, then {}",
            request.map_or("?".to_string(), ToString::to_string),
            recreate_hint(expectations)
        )
    }
}

/// Whether the daemon is known to have no `nvidia` runtime registered.
fn no_runtime(expectations: &Expectations<'_>) -> bool {
    expectations
        .daemon
        .runtimes
        .as_ref()
        .is_some_and(|runtimes| !runtimes.iter().any(|runtime| runtime == "nvidia"))
}

/// A container given GPUs (`given`) that has no device file: the host's driver, then the
/// daemon's cgroup driver and runtimes say why.
fn given_but_missing(
    given: &str,
    no_gpu_here: Option<String>,
    expectations: &Expectations<'_>,
) -> String {
    if let Some(reason) = no_gpu_here {
        return format!(
            "the container was given GPUs ({given}) but {reason}: `envctl doctor` says what the host lacks"
        );
    }
    match expectations.daemon.cgroup_driver.as_deref() {
        Some("systemd") => format!(
            "the container was given GPUs ({given}) but has no device files: GPU access is lost after `systemctl daemon-reload` with the daemon's systemd cgroup driver; restart the container ({}), and to stop it happening run `sudo nvidia-ctk system create-dev-char-symlinks --create-all` or switch to CDI",
            recreate_hint(expectations)
        ),
        driver => {
            // Only a fact to look at: Docker's `--gpus` also works through the NVIDIA hook,
            // and CDI needs no runtime, so no runtime alone is not the reason.
            let runtime = if no_runtime(expectations) {
                " (the daemon lists no `nvidia` runtime)".to_string()
            } else {
                String::new()
            };
            let driver = driver.map_or_else(String::new, |driver| {
                format!(" (cgroup driver {driver}, so not a `systemctl daemon-reload`)")
            });
            format!(
                "the container was given GPUs ({given}) but the runtime passed no device file{runtime}{driver}: `envctl doctor` checks the NVIDIA runtime, CDI specs and hook, then {}",
                recreate_hint(expectations)
            )
        }
    }
}

/// Why the container sees fewer GPUs than asked: what it was given says whether it ever
/// had them; only a container given them can have lost them.
fn fewer_gpus_explained(visible: usize, expectations: &Expectations<'_>) -> String {
    match &expectations.given {
        GivenGpus::Nothing => no_gpu_explained(expectations),
        GivenGpus::Gpus(given) => {
            let lost = match expectations.daemon.cgroup_driver.as_deref() {
                Some("systemd") => "lost (after `systemctl daemon-reload` with the systemd cgroup driver)",
                _ => "lost",
            };
            format!(
                "the container was given {given} and sees {visible}: a GPU may be {lost} or taken by MIG (`nvidia-smi` on the host, `envctl doctor`), or CUDA_VISIBLE_DEVICES hides some; if the profile asks for more than it was given, {}",
                recreate_hint(expectations)
            )
        }
        GivenGpus::Unknown => "a GPU of the host may be lost or taken by MIG: check `nvidia-smi` on the host and `envctl doctor`; CUDA_VISIBLE_DEVICES can hide GPUs too".to_string(),
    }
}

/// The number of GPUs a request means on this host; None when it cannot be known.
fn expected_count(request: &GpuRequest, host: &HostDriver) -> Option<usize> {
    let host_count = match host {
        HostDriver::Known { gpu_count, .. } => gpu_count.map(|count| count as usize),
        _ => None,
    };
    match request {
        GpuRequest::None => Some(0),
        GpuRequest::All => host_count,
        GpuRequest::Optional => host_count,
        GpuRequest::Count(count) => Some(*count as usize),
        GpuRequest::Devices(devices) => Some(devices.len()),
    }
}

/// `gpu.count`: the GPUs visible against what the profile (or the container's request,
/// or a Slurm job) asks for.
fn gpu_count(view: &View<'_>, expectations: &Expectations<'_>) -> Option<Finding> {
    let (visible, counted_by) = view.visible_gpus()?;
    let Some(expected) = &expectations.gpus else {
        return (visible > 0).then(|| {
            Finding::info(
                GPU_COUNT,
                format!(
                    "{} visible (counted by {counted_by}); the container has no profile to compare with",
                    plural(visible, "GPU")
                ),
            )
            .with_fact("visible", visible)
        });
    };
    let asker = asker(&expected.source);
    let facts = |finding: Finding| {
        finding
            .with_fact("visible", visible)
            .with_fact("counted_by", counted_by)
            .with_fact("request", &expected.request)
    };
    Some(facts(match expected_count(&expected.request, &expectations.host) {
        Some(0) if visible == 0 => Finding::info(
            GPU_COUNT,
            format!("{asker} asks for no GPU, and none is visible"),
        ),
        Some(wanted) if visible < wanted => Finding::fail(
            GPU_COUNT,
            format!(
                "the container sees {visible} of the {wanted} GPUs {asker} asks for (gpus = {})",
                expected.request
            ),
        )
        .with_fact("expected", wanted)
        .with_hint(fewer_gpus_explained(visible, expectations)),
        Some(wanted) if visible > wanted => Finding::warn(
            GPU_COUNT,
            format!(
                "the container sees {} but {asker} asks for {wanted} (gpus = {})",
                plural(visible, "GPU"),
                expected.request
            ),
        )
        .with_fact("expected", wanted)
        .with_hint(format!(
            "the image or the runtime exposes more than asked (NVIDIA_VISIBLE_DEVICES?); {}",
            recreate_hint(expectations)
        )),
        Some(wanted) => Finding::pass(
            GPU_COUNT,
            format!(
                "{} visible, as {asker} asks (gpus = {})",
                plural(visible, "GPU"),
                expected.request
            ),
        )
        .with_fact("expected", wanted),
        None if visible == 0 => Finding::fail(
            GPU_COUNT,
            format!(
                "{asker} asks for GPUs (gpus = {}), but none is visible",
                expected.request
            ),
        )
        .with_hint(no_gpu_explained(expectations)),
        None => Finding::pass(
            GPU_COUNT,
            format!(
                "{} visible ({asker} asks for gpus = {}; the host's count is unknown)",
                plural(visible, "GPU"),
                expected.request
            ),
        ),
    }))
}

/// Who asks for the GPUs, in words: the profile, the container's request, a Slurm job.
fn asker(source: &GpuSource) -> String {
    match source {
        GpuSource::Profile { name } => format!("profile `{name}`"),
        GpuSource::Container => "the container's device request".to_string(),
        GpuSource::SlurmJob { job } => format!("Slurm job {job}'s allocation"),
    }
}
