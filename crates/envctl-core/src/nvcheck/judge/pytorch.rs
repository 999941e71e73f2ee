//! The PyTorch section: the interpreter, `import torch`, the image's torch against the
//! profile's `[stack]`, its CUDA build, cuDNN, `torch.cuda.is_available()` and the GPUs
//! torch sees.

use super::architectures::inside_or_host_driver;
use super::{
    Expectations, PYTHON, TORCH_CUDA_AVAILABLE, TORCH_CUDA_BUILD, TORCH_CUDNN, TORCH_DEVICES,
    TORCH_IMPORT, TORCH_STACK, View, exec_hint, plural,
};
use crate::checks::Finding;
use crate::compat::{ComputeCapability, gpu_vs_torch};
use crate::nvcheck::report::{DeviceFacts, PythonFacts, TorchFacts};
use crate::nvcheck::values::{cudnn_version, first_line, last_line};
use crate::profile::model::TorchVersion;
use crate::units::{binary_limit, index_ranges};

/// Whether the profile promises PyTorch: then its absence is a failure, else a warning.
fn torch_expected(expectations: &Expectations<'_>) -> bool {
    expectations.stack_torch.is_some()
}

/// The newest bundled PyTorch profile whose image tag is confirmed: a suggestion must be
/// an image that exists.
fn a_profile_with_torch(expectations: &Expectations<'_>) -> String {
    let confirmed = expectations
        .candidates
        .iter()
        .find(|candidate| !crate::profile::bundled::TAG_UNCONFIRMED.contains(&candidate.profile));
    match confirmed {
        Some(candidate) => format!(
            "use an image with Python and PyTorch, such as profile `{}` (`envctl profiles list` shows all)",
            candidate.profile
        ),
        None => "use an image with Python and PyTorch".to_string(),
    }
}

/// Python and PyTorch: the interpreter, the import, versions, CUDA, cuDNN, devices.
pub(super) fn pytorch(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let Some(python) = view.python else {
        findings.extend(no_python_report(view, expectations));
        return;
    };
    let path = interpreter(view, python, findings);
    let Some(torch) = view.torch else {
        return;
    };
    match torch_import(torch, path, expectations) {
        Ok(imported) => findings.push(imported),
        Err(failed) => {
            findings.push(failed);
            return;
        }
    }
    stack_match(torch, expectations, findings);
    let Some(cuda) = cuda_build(view, torch, expectations, findings) else {
        return;
    };
    cudnn(torch, findings);
    if !cuda_available(view, torch, &cuda, expectations, findings) {
        return;
    }
    torch_devices(view, torch, expectations, findings);
}

/// A finding of something missing that the profile may promise: a failure when it
/// promises PyTorch, else a warning.
fn missing(id: &str, message: String, expectations: &Expectations<'_>) -> Finding {
    if torch_expected(expectations) {
        Finding::fail(id, message)
    } else {
        Finding::warn(id, message)
    }
}

/// Why the Python half printed no report: no interpreter in the container, or one that
/// stopped first (with its last words). Nothing when it ran out of time, which the run's
/// own findings tell.
fn no_python_report(view: &View<'_>, expectations: &Expectations<'_>) -> Option<Finding> {
    let no_interpreter = match view.shell {
        Some(shell) => shell.python.is_none(),
        None => view.raw.run.shell_missing,
    };
    if no_interpreter && !view.raw.run.timed_out {
        return Some(
            missing(
                PYTHON,
                "no python3 or python in the container: PyTorch, the architectures and the compute checks cannot be checked".to_string(),
                expectations,
            )
            .with_hint(a_profile_with_torch(expectations)),
        );
    }
    let python_run = view.raw.python_run.as_ref().filter(|run| !run.timed_out)?;
    let path = python_run.path.as_deref().unwrap_or("python");
    let stderr = python_run.stderr.as_deref().unwrap_or("");
    let said = match last_line(stderr) {
        "" => String::new(),
        line => format!(": {line}"),
    };
    let code = python_run
        .exit_status
        .map_or_else(|| "?".to_string(), |code| code.to_string());
    Some(
        Finding::fail(
            PYTHON,
            format!("{path} stopped (exit code {code}) before it printed its report{said}"),
        )
        .with_hint(format!(
            "see the whole error: `{}`",
            exec_hint(
                expectations,
                &format!("{path} -c 'import torch; print(torch.cuda.is_available())'")
            )
        ))
        .with_fact("stderr", stderr),
    )
}

/// The interpreter that ran the Python half, and a warning for each probe of it that
/// failed; its path, for the commands hints name.
fn interpreter<'v>(
    view: &'v View<'_>,
    python: &'v PythonFacts,
    findings: &mut Vec<Finding>,
) -> &'v str {
    let interpreter = python.python.as_ref();
    let version = interpreter
        .and_then(|interpreter| interpreter.version.as_deref())
        .unwrap_or("of unknown version");
    let path = interpreter
        .and_then(|interpreter| interpreter.executable.as_deref())
        .or(view.python_path())
        .unwrap_or("python");
    findings.push(
        Finding::pass(PYTHON, format!("Python {version} ({path})"))
            .with_fact("python", interpreter),
    );
    for error in &python.errors {
        findings.push(Finding::warn(
            PYTHON,
            format!(
                "the probe `{}` failed: {}",
                error.probe,
                first_line(&error.error)
            ),
        ));
    }
    path
}

/// `import torch` under the interpreter at `path`: `Ok` with the version it imported,
/// `Err` when torch is not installed or fails to import (the checks after it stop).
fn torch_import(
    torch: &TorchFacts,
    path: &str,
    expectations: &Expectations<'_>,
) -> Result<Finding, Finding> {
    if !torch.found {
        return Err(missing(
            TORCH_IMPORT,
            format!("torch is not installed for {path}"),
            expectations,
        )
        .with_hint(a_profile_with_torch(expectations)));
    }
    if let Some(error) = &torch.import_error {
        return Err(Finding::fail(
            TORCH_IMPORT,
            format!("`import torch` failed: {}", first_line(error)),
        )
        .with_hint(format!(
            "see the whole traceback: `{}`",
            exec_hint(expectations, &format!("{path} -c 'import torch'"))
        ))
        .with_fact("traceback", torch.import_traceback.as_deref()));
    }
    let torch_text = torch.version.as_deref().unwrap_or("of unknown version");
    Ok(Finding::pass(TORCH_IMPORT, format!("torch {torch_text}"))
        .with_fact("import_seconds", torch.import_seconds))
}

fn stack_match(torch: &TorchFacts, expectations: &Expectations<'_>, findings: &mut Vec<Finding>) {
    let (Some(stated), Some(actual)) = (
        &expectations.stack_torch,
        torch
            .version
            .as_deref()
            .and_then(|text| text.parse::<TorchVersion>().ok()),
    ) else {
        return;
    };
    let same = stated.version == actual.version
        && (stated.variant.is_none() || stated.variant == actual.variant);
    if !same {
        let profile = expectations.profile.as_deref().unwrap_or("the profile");
        findings.push(
            Finding::warn(
                TORCH_STACK,
                format!("the image has torch {actual}, but {profile}'s [stack] says {stated}"),
            )
            .with_hint(format!(
                "write torch = \"{actual}\" under [stack] in {profile}, so `envctl doctor` judges the build the image really has"
            )),
        );
    }
}

/// `torch.version.cuda`: Some(version text) for a CUDA build.
fn cuda_build(
    view: &View<'_>,
    torch: &TorchFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) -> Option<String> {
    let version = torch.version.as_deref().unwrap_or("?");
    if let Some(cuda) = &torch.cuda {
        findings.push(Finding::pass(
            TORCH_CUDA_BUILD,
            format!("torch {version} is built with CUDA {cuda}"),
        ));
        return Some(cuda.clone());
    }
    if let Some(hip) = &torch.hip {
        findings.push(
            Finding::fail(
                TORCH_CUDA_BUILD,
                format!("torch {version} is a ROCm (HIP {hip}) build: it cannot use NVIDIA GPUs"),
            )
            .with_hint(a_profile_with_torch(expectations)),
        );
        return None;
    }
    // The matrix's verdict for a CPU build names the profiles and builds that would work.
    let alternative = torch
        .version
        .as_deref()
        .and_then(|text| text.split('+').next())
        .and_then(|release| format!("{release}+cpu").parse::<TorchVersion>().ok())
        .and_then(|cpu_build| {
            let capability = view
                .capabilities()
                .first()
                .map(|(_, capability, _)| *capability)?;
            let driver = inside_or_host_driver(view, expectations);
            gpu_vs_torch(
                expectations.matrix,
                crate::compat::Platform::this_binary(),
                capability,
                &cpu_build,
                None,
                driver.as_ref(),
                expectations.candidates,
            )
            .hint
        });
    let hint = alternative.unwrap_or_else(|| {
        "install a CUDA build of torch (e.g. `pip install torch --index-url https://download.pytorch.org/whl/cu128`), or use an image that has one".to_string()
    });
    findings.push(
        Finding::fail(
            TORCH_CUDA_BUILD,
            format!("torch {version} is a CPU-only build (torch.version.cuda is None): it cannot use the GPU"),
        )
        .with_hint(hint),
    );
    None
}

fn cudnn(torch: &TorchFacts, findings: &mut Vec<Finding>) {
    match (torch.cudnn_version, torch.cudnn_available, &torch.cudnn_error) {
        (Some(number), _, _) => findings.push(
            Finding::pass(TORCH_CUDNN, format!("cuDNN {}", cudnn_version(number)))
                .with_fact("cudnn_version", number),
        ),
        (None, _, Some(error)) => findings.push(Finding::warn(
            TORCH_CUDNN,
            format!("cuDNN could not be asked: {}", first_line(error)),
        )),
        (None, _, None) => findings.push(
            Finding::warn(
                TORCH_CUDNN,
                "cuDNN is not available to torch: convolutions and RNNs run on slower fallbacks",
            )
            .with_hint("use a `-cudnn9-` image, or install the cuDNN wheel torch expects (`pip install nvidia-cudnn-cu12`)"),
        ),
    }
}

/// `torch.cuda.is_available()`: true when CUDA works in torch.
fn cuda_available(
    view: &View<'_>,
    torch: &TorchFacts,
    cuda: &str,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) -> bool {
    if torch.cuda_available == Some(true) {
        findings.push(Finding::pass(
            TORCH_CUDA_AVAILABLE,
            "torch.cuda.is_available() is True",
        ));
        return true;
    }
    let said: Vec<&str> = torch
        .warnings
        .iter()
        .map(String::as_str)
        .chain(torch.cuda_available_error.as_deref())
        .collect();
    let reason = said
        .iter()
        .map(|text| first_line(text))
        .find(|line| !line.is_empty())
        .map_or_else(String::new, |line| format!(": {line}"));
    let all = said.join("\n");
    let hint = if all.contains("too old") {
        format!(
            "the host's driver is too old for torch's CUDA {cuda}: upgrade the driver, or use an image built for an older CUDA (`envctl doctor` names what this driver runs)"
        )
    } else if view.gpu_device_files().is_empty() {
        "the container has no GPU device files: see GPU passthrough above".to_string()
    } else if view
        .variable("CUDA_VISIBLE_DEVICES")
        .is_some_and(|value| matches!(value.trim(), "" | "-1" | "none"))
    {
        "CUDA_VISIBLE_DEVICES hides every GPU: unset it".to_string()
    } else {
        format!(
            "see CUDA's own error: `{}`",
            exec_hint(expectations, "python3 -c 'import torch; torch.cuda.init()'")
        )
    };
    findings.push(
        Finding::fail(
            TORCH_CUDA_AVAILABLE,
            format!("torch.cuda.is_available() is False{reason}"),
        )
        .with_hint(hint)
        .with_fact("warnings", &torch.warnings),
    );
    false
}

/// torch's GPU count against nvidia-smi's, then one line per kind of GPU torch found.
///
/// An unknown count (`torch.cuda.device_count()` raised) is a finding of its own, not the
/// length of the device list: that list is empty then, and "torch sees 0 GPUs" would pass
/// a container whose torch cannot count its GPUs.
fn torch_devices(
    view: &View<'_>,
    torch: &TorchFacts,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    findings.push(device_count(view, torch, expectations));
    findings.extend(device_lines(view));
}

/// `torch.cuda.device_count()` against nvidia-smi's count: unknown fails where the
/// profile asks for GPUs; a difference is explained by `CUDA_VISIBLE_DEVICES` or warns.
fn device_count(view: &View<'_>, torch: &TorchFacts, expectations: &Expectations<'_>) -> Finding {
    let smi = view.smi_gpus.as_ref().map(Vec::len);
    match (torch.device_count.map(|count| count as usize), smi) {
        (None, _) => {
            let said = torch
                .device_count_error
                .as_deref()
                .map(first_line)
                .filter(|line| !line.is_empty())
                .map_or_else(
                    || " gave no count".to_string(),
                    |line| format!(" failed: {line}"),
                );
            let message =
                format!("torch.cuda.device_count(){said}, so torch's GPU count is unknown");
            // Asked for GPUs, torch that cannot count them is broken; otherwise it only
            // leaves the count unchecked.
            let asked = expectations
                .gpus
                .as_ref()
                .is_some_and(|expected| expected.request.wants_gpus());
            let finding = if asked {
                Finding::fail(TORCH_DEVICES, message)
            } else {
                Finding::warn(TORCH_DEVICES, message)
            };
            finding
                .with_hint(format!(
                    "see CUDA's own error: `{}`",
                    exec_hint(
                        expectations,
                        "python3 -c 'import torch; print(torch.cuda.device_count())'"
                    )
                ))
                .with_fact("device_count_error", torch.device_count_error.as_deref())
        }
        (Some(count), Some(smi)) if smi != count => {
            let selected = view.variable("CUDA_VISIBLE_DEVICES");
            let message = format!("torch sees {}, nvidia-smi {smi}", plural(count, "GPU"));
            match selected {
                Some(value) => Finding::info(
                    TORCH_DEVICES,
                    format!("{message} (CUDA_VISIBLE_DEVICES={value} selects them)"),
                ),
                None => Finding::warn(TORCH_DEVICES, message).with_hint(
                    "a GPU nvidia-smi lists failed to initialise in CUDA: look for Xid errors in the host's `dmesg`",
                ),
            }
        }
        (Some(count), _) => Finding::pass(
            TORCH_DEVICES,
            format!("torch sees {}", plural(count, "GPU")),
        ),
    }
}

/// One line per kind of GPU torch found (model, capability and memory: eight identical
/// GPUs make one line), after a failure for each GPU torch could not open.
fn device_lines(view: &View<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut groups: Vec<(Vec<u32>, String)> = Vec::new();
    for device in view.devices {
        if let Some(error) = &device.error {
            findings.push(Finding::fail(
                TORCH_DEVICES,
                format!("GPU {}: {}", device.index, first_line(error)),
            ));
            continue;
        }
        let description = describe_device(device);
        match groups.iter_mut().find(|(_, text)| *text == description) {
            Some((indices, _)) => indices.push(device.index),
            None => groups.push((vec![device.index], description)),
        }
    }
    for (indices, description) in groups {
        findings.push(
            Finding::info(
                TORCH_DEVICES,
                format!("GPU {}: {description}", index_ranges(&indices)),
            )
            .with_fact("gpu_indices", &indices),
        );
    }
    findings
}

/// A GPU as its line names it: `NVIDIA H100, sm_90 (compute capability 9.0), 79.6 GiB`.
fn describe_device(device: &DeviceFacts) -> String {
    let name = device.name.as_deref().unwrap_or("unnamed GPU");
    let capability = match device.capability.as_deref() {
        Some([major, minor]) => {
            let capability = ComputeCapability::new(*major, *minor);
            format!(", {} (compute capability {capability})", capability.sm())
        }
        _ => String::new(),
    };
    let memory = device
        .total_memory_bytes
        .map_or_else(String::new, |bytes| format!(", {}", binary_limit(bytes)));
    format!("{name}{capability}{memory}")
}
