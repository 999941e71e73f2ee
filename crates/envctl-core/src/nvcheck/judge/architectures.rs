//! The Architectures section: the matrix's `gpu.torch-arch` verdict for each GPU torch
//! sees, held against the build's own arch list.

use super::{Expectations, HostDriver, TORCH_ARCH_MATRIX, View};
use crate::checks::{Finding, Status};
use crate::compat::{
    ComputeCapability, DriverVersion, GPU_TORCH_ARCH, Reach, Target, gpu_label, gpu_vs_torch, reach,
};
use crate::nvcheck::report::TorchFacts;
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
    let build = Build::of(torch, view, expectations);
    let groups = CapabilityGroup::all(&gpus);
    let distinct: Vec<ComputeCapability> = groups.iter().map(|group| group.capability).collect();
    for group in &groups {
        let matrix_verdict = build.version.as_ref().map(|version| {
            gpu_vs_torch(
                expectations.matrix,
                crate::compat::Platform::this_binary(),
                group.capability,
                version,
                build.cuda,
                build.driver.as_ref(),
                expectations.candidates,
            )
        });
        let Some(targets) = &build.targets else {
            // No arch list from torch (an error, or a build that lists none): the matrix alone.
            if let Some(verdict) = matrix_verdict {
                findings.push(
                    group
                        .facts(verdict)
                        .with_fact("arch_list_error", torch.arch_list_error.as_deref()),
                );
            }
            continue;
        };
        let real = arch_list_verdict(
            view,
            expectations,
            &build,
            group,
            targets,
            &distinct,
            matrix_verdict.as_ref(),
        );
        findings.extend(cross_checked(
            expectations,
            &build,
            group,
            targets,
            real,
            matrix_verdict,
        ));
    }
}

/// The torch build as its report gives it, read once for every GPU.
struct Build<'t> {
    torch: &'t TorchFacts,
    /// `torch.__version__` as printed, `?` when unknown.
    version_text: String,
    version: Option<TorchVersion>,
    cuda: Option<CudaVersion>,
    /// The driver inside, else the host's.
    driver: Option<DriverVersion>,
    /// `torch.cuda.get_arch_list()`, `None` when torch gave no list (or an empty one).
    targets: Option<Vec<Target>>,
}

impl<'t> Build<'t> {
    /// The facts of `torch` that the verdicts use, parsed.
    fn of(torch: &'t TorchFacts, view: &View<'_>, expectations: &Expectations<'_>) -> Self {
        Build {
            torch,
            version_text: torch.version.clone().unwrap_or_else(|| "?".into()),
            version: torch
                .version
                .as_deref()
                .and_then(|text| text.parse::<TorchVersion>().ok()),
            cuda: torch
                .cuda
                .as_deref()
                .and_then(|text| text.parse::<CudaVersion>().ok()),
            driver: inside_or_host_driver(view, expectations),
            targets: torch
                .arch_list
                .as_ref()
                .filter(|list| !list.is_empty())
                .map(|list| list.iter().filter_map(|arch| arch.parse().ok()).collect()),
        }
    }
}

/// The GPUs that share one compute capability, judged together.
#[derive(Debug, PartialEq)]
struct CapabilityGroup<'g> {
    capability: ComputeCapability,
    indices: Vec<u32>,
    names: Vec<&'g str>,
}

impl<'g> CapabilityGroup<'g> {
    /// One group per distinct capability of `gpus` (index, capability, name), in the order
    /// each first appears.
    fn all(gpus: &'g [(u32, ComputeCapability, Option<String>)]) -> Vec<Self> {
        let mut groups: Vec<CapabilityGroup<'g>> = Vec::new();
        for (index, capability, name) in gpus {
            let group = match groups
                .iter_mut()
                .position(|group| group.capability == *capability)
            {
                Some(position) => &mut groups[position],
                None => {
                    groups.push(CapabilityGroup {
                        capability: *capability,
                        indices: Vec::new(),
                        names: Vec::new(),
                    });
                    let last = groups.len() - 1;
                    &mut groups[last]
                }
            };
            group.indices.push(*index);
            group.names.extend(name.as_deref());
        }
        groups
    }

    /// `finding` with the group's GPUs as facts.
    fn facts(&self, finding: Finding) -> Finding {
        finding
            .with_fact("gpu_indices", &self.indices)
            .with_fact("gpu_names", &self.names)
            .with_fact("capability", self.capability)
    }
}

/// The verdict of the build's own arch list (`targets`) on one group of GPUs: machine code
/// for it passes, PTX only passes where its kernels ran, nothing that runs there fails.
fn arch_list_verdict(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    build: &Build<'_>,
    group: &CapabilityGroup<'_>,
    targets: &[Target],
    distinct: &[ComputeCapability],
    matrix_verdict: Option<&Finding>,
) -> Finding {
    let capability = group.capability;
    let version_text = &build.version_text;
    let sm = capability.sm();
    let gpu = gpu_label(expectations.matrix, capability);
    match reach(capability, targets) {
        Reach::Cubin(target) if target.capability == capability => Finding::pass(
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
                .filter(|device| group.indices.contains(&device.index))
                .all(|device| device.elementwise.as_ref().is_some_and(|check| check.ok));
            if kernels_ran && !view.devices.is_empty() {
                Finding::pass(GPU_TORCH_ARCH, format!("{jit}, and its kernels ran"))
            } else {
                Finding::warn(
                    GPU_TORCH_ARCH,
                    format!("{jit}, which needs a driver at least as new as CUDA {}", build.torch.cuda.as_deref().unwrap_or("?")),
                )
                .with_hint("check that the compute checks below ran; a build with machine code for this GPU starts faster")
            }
        }
        Reach::Missing(_) => {
            let alternative = matrix_verdict
                .filter(|verdict| verdict.status == Status::Fail)
                .and_then(|verdict| verdict.hint.clone())
                .or_else(|| working_candidate(expectations, distinct, build.driver.as_ref()))
                .unwrap_or_else(|| {
                    format!("use an image whose torch lists {sm} (or a lower sm_{}x) in torch.cuda.get_arch_list()", capability.major)
                });
            Finding::fail(
                GPU_TORCH_ARCH,
                format!(
                    "{sm} is not compatible with the current PyTorch installation: torch {version_text} has kernels only for {}, none of which runs on {gpu}",
                    arch_names(targets).join(" ")
                ),
            )
            .with_hint(format!(
                "this image's torch {version_text} has no kernels for {sm}: {alternative}"
            ))
        }
    }
}

/// The arch list as torch writes it: `sm_80`, `compute_90`.
fn arch_names(targets: &[Target]) -> Vec<String> {
    targets.iter().map(ToString::to_string).collect()
}

/// The arch list's verdict (`real`) with its facts (and torch's own warning for the
/// GPU, when it printed one), then a `gpu.torch-arch-matrix` warning when the matrix's
/// verdict says the opposite (one passes, the other fails).
fn cross_checked(
    expectations: &Expectations<'_>,
    build: &Build<'_>,
    group: &CapabilityGroup<'_>,
    targets: &[Target],
    real: Finding,
    matrix_verdict: Option<Finding>,
) -> Vec<Finding> {
    let sm = group.capability.sm();
    let list = arch_names(targets);
    let mut real = group.facts(real).with_fact("arch_list", &list);
    let torch_warning = build
        .torch
        .warnings
        .iter()
        .find(|warning| warning.contains(&format!("{sm} is not compatible")));
    if let Some(warning) = torch_warning {
        real = real.with_fact("torch_warning", warning);
    }
    let Some(verdict) = matrix_verdict else {
        return vec![real];
    };
    let disagree = matches!(
        (real.status, verdict.status),
        (Status::Pass, Status::Fail) | (Status::Fail, Status::Pass)
    );
    real = real.with_fact(
        "matrix_verdict",
        serde_json::json!({"status": verdict.status, "message": verdict.message}),
    );
    let mut findings = vec![real];
    if disagree {
        findings.push(
            group
                .facts(Finding::warn(
                    TORCH_ARCH_MATRIX,
                    format!(
                        "{} says otherwise for {sm}: {}",
                        expectations.matrix.describe(),
                        verdict.message
                    ),
                ))
                .with_hint("the build's own arch list decides; a user matrix file ($XDG_CONFIG_HOME/envctl/matrix.toml) can correct the row so `envctl doctor` agrees")
                .with_fact("arch_list", &list),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_grouped_by_capability_in_the_order_they_first_appear() {
        let hopper = ComputeCapability::new(9, 0);
        let ampere = ComputeCapability::new(8, 6);
        let gpus = vec![
            (0, hopper, Some("NVIDIA H100".to_string())),
            (1, ampere, None),
            (2, hopper, Some("NVIDIA H100".to_string())),
        ];
        let groups = CapabilityGroup::all(&gpus);
        assert_eq!(
            groups,
            vec![
                CapabilityGroup {
                    capability: hopper,
                    indices: vec![0, 2],
                    names: vec!["NVIDIA H100", "NVIDIA H100"],
                },
                CapabilityGroup {
                    capability: ampere,
                    indices: vec![1],
                    names: Vec::new(),
                },
            ]
        );
    }

    #[test]
    fn the_arch_list_is_written_as_torch_writes_it() {
        let targets: Vec<Target> = ["sm_80", "sm_90", "compute_90"]
            .iter()
            .map(|arch| arch.parse().unwrap())
            .collect();
        assert_eq!(arch_names(&targets), ["sm_80", "sm_90", "compute_90"]);
    }
}
