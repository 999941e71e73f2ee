//! The Architectures section: the matrix's `gpu.torch-arch` verdict for each GPU torch
//! sees, held against the build's own arch list.

use super::{Expectations, HostDriver, TORCH_ARCH_MATRIX, View};
use crate::checks::{Finding, Status};
use crate::compat::{
    ComputeCapability, DriverVersion, GPU_TORCH_ARCH, Reach, Target, gpu_label, gpu_vs_torch, reach,
};
use crate::profile::model::{CudaVersion, TorchVersion};

pub(super) fn inside_or_host_driver(
    view: &View<'_>,
    expectations: &Expectations<'_>,
) -> Option<DriverVersion> {
    view.inside_driver()
        .and_then(|text| text.parse().ok())
        .or_else(|| match &expectations.host {
            HostDriver::Known { version, .. } => version.parse().ok(),
            _ => None,
        })
}

/// The first candidate profile whose torch build the matrix finds runnable on every GPU.
fn working_candidate(
    expectations: &Expectations<'_>,
    capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
) -> Option<String> {
    expectations
        .candidates
        .iter()
        .find(|candidate| {
            capabilities.iter().all(|capability| {
                gpu_vs_torch(
                    expectations.matrix,
                    crate::compat::Platform::this_binary(),
                    *capability,
                    candidate.torch,
                    Some(candidate.cuda),
                    driver,
                    &[],
                )
                .status
                    == Status::Pass
            })
        })
        .map(|candidate| {
            format!(
                "use profile `{}` (torch {}, CUDA {})",
                candidate.profile, candidate.torch, candidate.cuda
            )
        })
}

/// `gpu.torch-arch`, per distinct compute capability: the build's real arch list against
/// each GPU, with doctor's rules and wording; the matrix's verdict as a cross-check.
pub(super) fn architectures(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let Some(torch) = view.torch else {
        return;
    };
    if torch.cuda.is_none() || torch.import_error.is_some() || !torch.found {
        return;
    }
    let gpus = view.capabilities();
    if gpus.is_empty() {
        return;
    }
    let matrix = expectations.matrix;
    let version_text = torch.version.clone().unwrap_or_else(|| "?".into());
    let version = torch
        .version
        .as_deref()
        .and_then(|text| text.parse::<TorchVersion>().ok());
    let cuda = torch
        .cuda
        .as_deref()
        .and_then(|text| text.parse::<CudaVersion>().ok());
    let driver = inside_or_host_driver(view, expectations);
    let targets: Option<Vec<Target>> = torch
        .arch_list
        .as_ref()
        .filter(|list| !list.is_empty())
        .map(|list| list.iter().filter_map(|arch| arch.parse().ok()).collect());
    let mut distinct: Vec<ComputeCapability> = Vec::new();
    for (_, capability, _) in &gpus {
        if !distinct.contains(capability) {
            distinct.push(*capability);
        }
    }
    for capability in &distinct {
        let indices: Vec<u32> = gpus
            .iter()
            .filter(|(_, other, _)| other == capability)
            .map(|(index, _, _)| *index)
            .collect();
        let names: Vec<&str> = gpus
            .iter()
            .filter(|(_, other, _)| other == capability)
            .filter_map(|(_, _, name)| name.as_deref())
            .collect();
        let matrix_verdict = version.as_ref().map(|version| {
            gpu_vs_torch(
                matrix,
                crate::compat::Platform::this_binary(),
                *capability,
                version,
                cuda,
                driver.as_ref(),
                expectations.candidates,
            )
        });
        let with_gpus = |finding: Finding| {
            finding
                .with_fact("gpu_indices", &indices)
                .with_fact("gpu_names", &names)
                .with_fact("capability", capability)
        };
        let Some(targets) = &targets else {
            // No arch list from torch (an error, or a build that lists none): the matrix alone.
            if let Some(verdict) = matrix_verdict {
                findings.push(
                    with_gpus(verdict)
                        .with_fact("arch_list_error", torch.arch_list_error.as_deref()),
                );
            }
            continue;
        };
        let sm = capability.sm();
        let gpu = gpu_label(matrix, *capability);
        let list: Vec<String> = targets.iter().map(ToString::to_string).collect();
        let real = match reach(*capability, targets) {
            Reach::Cubin(target) if target.capability == *capability => Finding::pass(
                GPU_TORCH_ARCH,
                format!("torch {version_text} has {target} kernels for {gpu}"),
            ),
            Reach::Cubin(target) => Finding::pass(
                GPU_TORCH_ARCH,
                format!(
                    "torch {version_text} has no {sm} kernels, but its {target} kernels run on {gpu}: same major, lower minor"
                ),
            ),
            Reach::Ptx(ptx) => {
                let jit = format!(
                    "torch {version_text} has no machine code for {gpu}; its {ptx} PTX is JIT-compiled by the driver (slow first start)"
                );
                let kernels_ran = view
                    .devices
                    .iter()
                    .filter(|device| indices.contains(&device.index))
                    .all(|device| device.elementwise.as_ref().is_some_and(|check| check.ok));
                if kernels_ran && !view.devices.is_empty() {
                    Finding::pass(GPU_TORCH_ARCH, format!("{jit}, and its kernels ran"))
                } else {
                    Finding::warn(
                        GPU_TORCH_ARCH,
                        format!("{jit}, which needs a driver at least as new as CUDA {}", torch.cuda.as_deref().unwrap_or("?")),
                    )
                    .with_hint("check that the compute checks below ran; a build with machine code for this GPU starts faster")
                }
            }
            Reach::Missing(_) => {
                let alternative = matrix_verdict
                    .as_ref()
                    .filter(|verdict| verdict.status == Status::Fail)
                    .and_then(|verdict| verdict.hint.clone())
                    .or_else(|| working_candidate(expectations, &distinct, driver.as_ref()))
                    .unwrap_or_else(|| {
                        format!("use an image whose torch lists {sm} (or a lower sm_{}x) in torch.cuda.get_arch_list()", capability.major)
                    });
                Finding::fail(
                    GPU_TORCH_ARCH,
                    format!(
                        "{sm} is not compatible with the current PyTorch installation: torch {version_text} has kernels only for {}, none of which runs on {gpu}",
                        list.join(" ")
                    ),
                )
                .with_hint(format!(
                    "this image's torch {version_text} has no kernels for {sm}: {alternative}"
                ))
            }
        };
        let mut real = with_gpus(real).with_fact("arch_list", &list);
        let torch_warning = torch
            .warnings
            .iter()
            .find(|warning| warning.contains(&format!("{sm} is not compatible")));
        if let Some(warning) = torch_warning {
            real = real.with_fact("torch_warning", warning);
        }
        if let Some(verdict) = matrix_verdict {
            let disagree = matches!(
                (real.status, verdict.status),
                (Status::Pass, Status::Fail) | (Status::Fail, Status::Pass)
            );
            real = real.with_fact(
                "matrix_verdict",
                serde_json::json!({"status": verdict.status, "message": verdict.message}),
            );
            findings.push(real);
            if disagree {
                findings.push(
                    with_gpus(Finding::warn(
                        TORCH_ARCH_MATRIX,
                        format!(
                            "{} says otherwise for {sm}: {}",
                            matrix.describe(),
                            verdict.message
                        ),
                    ))
                    .with_hint("the build's own arch list decides; a user matrix file ($XDG_CONFIG_HOME/envctl/matrix.toml) can correct the row so `envctl doctor` agrees")
                    .with_fact("arch_list", &list),
                );
            }
        } else {
            findings.push(real);
        }
    }
}
