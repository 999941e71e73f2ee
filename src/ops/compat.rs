//! `envctl compat`'s verdicts: doctor's compatibility rules (`compat`) for a host
//! described on the command line, one report per GPU. The command parses the
//! description; this judges it.

use serde::Serialize;

use crate::checks::{Finding, Status, worst};
use crate::compat::{self, ComputeCapability, DriverVersion};
use crate::profile::model::{CudaVersion, TorchVersion};

#[derive(Debug, Serialize)]
pub struct GpuReport {
    pub name: String,
    pub compute_capability: ComputeCapability,
    /// Data-center part (by model name, or `--datacenter`): true; a GeForce or TITAN card:
    /// false; unknown (a bare `--cc` without `--datacenter`, another model): null.
    pub datacenter: Option<bool>,
    /// The matrix's model rows the capability was read from (for `--gpu NAME`; several when
    /// the name fits several models of one capability), each with its status and source, so
    /// a derived capability is told as derived. Empty for `--cc`.
    pub capability_rows: Vec<CapabilityRow>,
    pub verdict: &'static str,
    pub findings: Vec<Finding>,
}

/// One `[[gpu]]` row as `compat` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct CapabilityRow {
    pub name: String,
    pub status: compat::RowStatus,
    pub source: String,
}

#[derive(Debug, Serialize)]
pub struct CompatReport {
    pub verdict: &'static str,
    pub driver: String,
    /// The platform whose torch wheels are judged (`--platform`; a GPU found only on
    /// aarch64 hosts is judged by the aarch64 wheel whatever it says).
    pub platform: compat::Platform,
    pub cuda: Option<CudaVersion>,
    /// Where `cuda` came from: `--image-cuda`, `torch` (its `+cuXYZ`), `profile`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_from: Option<&'static str>,
    pub torch: Option<TorchVersion>,
    pub gpus: Vec<GpuReport>,
    pub findings: Vec<Finding>,
}

/// The CUDA release and torch build being checked, and how the report titles them.
pub struct DescribedStack {
    pub cuda: Option<CudaVersion>,
    pub cuda_from: Option<&'static str>,
    pub torch: Option<TorchVersion>,
    pub label: String,
}

/// A GPU of the described host.
pub struct DescribedGpu {
    pub name: String,
    pub capability: ComputeCapability,
    /// As in [`GpuReport`].
    pub datacenter: Option<bool>,
    /// As in [`GpuReport`].
    pub capability_rows: Vec<CapabilityRow>,
}

/// The stack of `resolved`'s `[stack]`: its CUDA, else the CUDA its torch build names;
/// `None` when it has no `[stack]` to check.
pub fn profile_stack(resolved: &crate::profile::ResolvedProfile) -> Option<DescribedStack> {
    let stack = resolved.profile.stack.clone();
    if stack.cuda.is_none() && stack.torch.is_none() {
        return None;
    }
    let (cuda, cuda_from) = match stack.cuda {
        Some(cuda) => (Some(cuda), Some("profile")),
        None => match stack.torch.as_ref().map(compat::torch_cuda).transpose() {
            Ok(Some(Some(cuda))) => (Some(cuda), Some("torch")),
            _ => (None, None),
        },
    };
    Some(DescribedStack {
        cuda,
        cuda_from,
        torch: stack.torch,
        label: format!("profile {}", resolved.profile.name),
    })
}

/// Every GPU's verdicts on `driver` for `stack` on `platform`, and the worst of them.
pub fn report(
    matrix: &compat::Matrix,
    driver: DriverVersion,
    stack: &DescribedStack,
    platform: compat::Platform,
    gpus: Vec<DescribedGpu>,
) -> (CompatReport, Status) {
    let bundled = crate::ops::doctor::bundled_candidates();
    let candidates = crate::ops::doctor::torch_candidates(&bundled);
    let reports: Vec<GpuReport> = gpus
        .into_iter()
        .map(
            |DescribedGpu {
                 name,
                 capability,
                 datacenter,
                 capability_rows,
             }| {
                let mut findings = Vec::new();
                findings.extend(compat::driver_vs_architecture(matrix, &driver, capability));
                if let Some(cuda) = stack.cuda {
                    findings.push(compat::driver_vs_cuda(
                        matrix,
                        &driver,
                        cuda,
                        datacenter == Some(true),
                    ));
                    findings.extend(compat::forward_compatibility(
                        matrix, &driver, cuda, datacenter,
                    ));
                    findings.push(compat::cuda_vs_gpu(matrix, cuda, capability));
                }
                if let Some(torch) = &stack.torch {
                    findings.push(compat::gpu_vs_torch(
                        matrix,
                        Some(platform),
                        capability,
                        torch,
                        stack.cuda,
                        Some(&driver),
                        &candidates,
                    ));
                }
                GpuReport {
                    verdict: worst(&findings).verdict(),
                    name,
                    compute_capability: capability,
                    datacenter,
                    capability_rows,
                    findings,
                }
            },
        )
        .collect();
    let status = reports
        .iter()
        .map(|gpu| worst(&gpu.findings))
        .max()
        .unwrap_or(Status::Pass);
    let report = CompatReport {
        verdict: status.verdict(),
        driver: driver.to_string(),
        platform,
        cuda: stack.cuda,
        cuda_from: stack.cuda_from,
        torch: stack.torch.clone(),
        gpus: reports,
        findings: Vec::new(),
    };
    (report, status)
}
