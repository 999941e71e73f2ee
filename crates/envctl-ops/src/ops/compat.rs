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
    /// The platform whose torch wheel was judged for this GPU: `--platform`, or aarch64 for
    /// a GPU found only in aarch64 hosts (GH200, GB200, GB300, GB10, Thor).
    pub platform: compat::Platform,
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
    /// `--mig`: MIG is enabled on the GPUs, so their MIG driver floors apply.
    pub mig: bool,
    pub gpus: Vec<GpuReport>,
    /// Findings about the host rather than one GPU: the driver branch's lifecycle.
    pub findings: Vec<Finding>,
}

/// What `compat` is told about the host besides its GPUs and stack.
pub struct DescribedHost {
    pub driver: DriverVersion,
    /// `--platform`.
    pub platform: compat::Platform,
    /// `--mig`.
    pub mig: bool,
    /// Today, `YYYY-MM-DD`, for the branch lifecycle.
    pub today: String,
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

/// Every GPU's verdicts on the host's driver for `stack`, the host's own findings, and the
/// worst of them.
pub fn report(
    matrix: &compat::Matrix,
    host: &DescribedHost,
    stack: &DescribedStack,
    gpus: Vec<DescribedGpu>,
) -> (CompatReport, Status) {
    let bundled = crate::ops::doctor::bundled_candidates();
    let candidates = crate::ops::doctor::torch_candidates(&bundled);
    let driver = &host.driver;
    // Branch lifecycles are NVIDIA's data-center schedule, as in `doctor`: said when a GPU
    // is a data-center part.
    let host_findings: Vec<Finding> = if gpus.iter().any(|gpu| gpu.datacenter == Some(true)) {
        compat::driver_branch_lifecycle(matrix, driver, &host.today)
            .into_iter()
            .collect()
    } else {
        Vec::new()
    };
    let reports: Vec<GpuReport> = gpus
        .into_iter()
        .map(|gpu| gpu_report(matrix, host, stack, gpu, &candidates))
        .collect();
    let status = reports
        .iter()
        .map(|gpu| worst(&gpu.findings))
        .chain(std::iter::once(worst(&host_findings)))
        .max()
        .unwrap_or(Status::Pass);
    let report = CompatReport {
        verdict: status.verdict(),
        driver: driver.to_string(),
        platform: host.platform,
        cuda: stack.cuda,
        cuda_from: stack.cuda_from,
        torch: stack.torch.clone(),
        mig: host.mig,
        gpus: reports,
        findings: host_findings,
    };
    (report, status)
}

/// One GPU's verdicts. A GPU whose models are found only in aarch64 hosts (the Grace
/// superchips, GB10, Thor) is judged by the aarch64 wheel whatever `--platform` says, and
/// the torch verdict says so.
fn gpu_report(
    matrix: &compat::Matrix,
    host: &DescribedHost,
    stack: &DescribedStack,
    gpu: DescribedGpu,
    candidates: &[compat::TorchCandidate<'_>],
) -> GpuReport {
    let DescribedGpu {
        name,
        capability,
        datacenter,
        capability_rows,
    } = gpu;
    let driver = &host.driver;
    let models: Vec<String> = capability_rows.iter().map(|row| row.name.clone()).collect();
    let aarch64_only = matrix.models_host(&models) == Some(compat::GpuHost::Aarch64)
        || matrix.gpu_host(capability) == Some(compat::GpuHost::Aarch64);
    let platform = if aarch64_only {
        compat::Platform::Aarch64
    } else {
        host.platform
    };
    let mut findings = Vec::new();
    findings.extend(compat::driver_vs_architecture(matrix, driver, capability));
    findings.extend(compat::driver_vs_gpu_model(
        matrix,
        driver,
        &models,
        Some(host.mig),
    ));
    if let Some(cuda) = stack.cuda {
        let pinned =
            compat::pinned_runtime(matrix, Some(platform), stack.torch.as_ref(), Some(cuda));
        findings.push(compat::driver_vs_cuda_of(
            matrix,
            driver,
            cuda,
            datacenter == Some(true),
            pinned,
        ));
        findings.extend(compat::forward_compatibility(
            matrix, driver, cuda, datacenter,
        ));
        findings.push(compat::cuda_vs_gpu(matrix, cuda, capability));
    }
    if let Some(torch) = &stack.torch {
        let mut finding = compat::gpu_vs_torch(
            matrix,
            Some(platform),
            capability,
            torch,
            stack.cuda,
            Some(driver),
            candidates,
        );
        if aarch64_only && host.platform != compat::Platform::Aarch64 {
            finding.message.push_str(&format!(
                "; {name} is found only in aarch64 hosts (an Arm host such as a Grace superchip), so its torch is the aarch64 wheel, not the {} one that `--platform` names",
                host.platform
            ));
            finding = finding.with_fact("platform_from", "gpu");
        }
        findings.push(finding);
    }
    GpuReport {
        verdict: worst(&findings).verdict(),
        name,
        compute_capability: capability,
        datacenter,
        capability_rows,
        platform,
        findings,
    }
}
