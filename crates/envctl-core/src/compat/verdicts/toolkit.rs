//! `gpu.cuda-arch`: whether a CUDA toolkit can compile for a GPU, by the compile targets
//! the matrix lists per toolkit, and how a GPU is named in verdicts.

use super::{GPU_CUDA_ARCH, RELEASE_NOTES, USER_MATRIX, dropped_rows, with_matrix};
use crate::checks::Finding;
use crate::compat::matrix::{CudaTargetsRow, Matrix, TargetRenameRow};
use crate::compat::values::{RowStatus, Target};
use crate::compat::version::ComputeCapability;
use crate::profile::model::CudaVersion;

/// How a CUDA toolkit's compile targets reach a GPU (what it can compile for, not what a
/// build runs: that is [`crate::compat::reach`]).
enum ToolkitReach {
    /// A target for exactly this capability.
    Exact(Target),
    /// Machine code of the same major and a lower minor (sm_86 on 8.9).
    SameMajor(Target),
    /// Between the lowest and highest target of a row that lists only those.
    WithinBounds,
    /// The GPU is newer than every target: only PTX reaches it.
    Newer,
    /// The GPU is older than the lowest target (or falls between targets).
    Older,
    /// Only a target NVIDIA later renamed to this capability (CUDA 12.8's `sm_101`, Jetson
    /// Thor's target under the CUDA 12 driver, where Thor reported 10.1): its cubins are not
    /// code for the capability the GPU reports now (11.0, under the CUDA 13 driver), and
    /// binary compatibility does not hold on Tegra (compat-facts §8).
    Renamed(Target),
}

impl ToolkitReach {
    fn compiles(&self) -> bool {
        matches!(
            self,
            ToolkitReach::Exact(_) | ToolkitReach::SameMajor(_) | ToolkitReach::WithinBounds
        )
    }
}

/// The targets it returns carry the toolkit's own names (CUDA 12.8's `sm_101`, which CUDA
/// 13.0 renamed `sm_110`), while the comparison uses the capability after renames.
fn toolkit_reach(
    matrix: &Matrix,
    row: &CudaTargetsRow,
    capability: ComputeCapability,
) -> ToolkitReach {
    let lowest = matrix.renamed(row.lowest);
    let highest = matrix.renamed(row.highest);
    match &row.targets {
        Some(targets) => {
            // A renamed target is code for the capability the GPU reported under the older
            // driver, not for the one it reports now: it reaches nothing, and is named only
            // when it is all the toolkit has for this GPU.
            let (renamed, targets): (Vec<Target>, Vec<Target>) = targets
                .iter()
                .partition(|target| matrix.renamed(**target) != **target);
            let targets: Vec<(Target, Target)> =
                targets.iter().map(|target| (*target, *target)).collect();
            if let Some((own, _)) = targets
                .iter()
                .find(|(_, renamed)| renamed.capability == capability)
            {
                return ToolkitReach::Exact(*own);
            }
            if let Some((own, _)) = targets
                .iter()
                .filter(|(_, renamed)| renamed.machine_code_runs_on(capability))
                .max_by_key(|(_, renamed)| renamed.capability)
            {
                return ToolkitReach::SameMajor(*own);
            }
            if let Some(old) = renamed
                .iter()
                .find(|target| matrix.renamed(**target).capability == capability)
            {
                return ToolkitReach::Renamed(*old);
            }
            let newest = targets.iter().map(|(_, renamed)| renamed.capability).max();
            if newest.is_some_and(|newest| capability > newest) {
                ToolkitReach::Newer
            } else {
                ToolkitReach::Older
            }
        }
        None => {
            if capability < lowest.capability {
                ToolkitReach::Older
            } else if capability <= highest.capability {
                ToolkitReach::WithinBounds
            } else if highest.machine_code_runs_on(capability) {
                ToolkitReach::SameMajor(row.highest)
            } else {
                ToolkitReach::Newer
            }
        }
    }
}

/// A GPU for messages: `sm_89 (Ada Lovelace, compute capability 8.9)`, without the
/// architecture when the matrix does not know it.
pub fn gpu_label(matrix: &Matrix, capability: ComputeCapability) -> String {
    match matrix.architecture_of(capability) {
        Some(architecture) => format!(
            "{} ({}, compute capability {capability})",
            capability.sm(),
            architecture.name
        ),
        None => format!("{} (compute capability {capability})", capability.sm()),
    }
}

/// Checks that CUDA `cuda` can compile for a GPU of `capability` (compat-facts §2a, §2c):
/// CUDA 13 cannot target sm_70 and below, CUDA 12 cannot target Kepler, and a GPU newer
/// than a toolkit's newest target is reached only through PTX.
pub fn cuda_vs_gpu(matrix: &Matrix, cuda: CudaVersion, capability: ComputeCapability) -> Finding {
    let gpu = gpu_label(matrix, capability);
    let Some(row) = matrix.cuda_targets(cuda) else {
        return not_in_target_table(matrix, cuda, capability, &gpu);
    };
    let facts = |finding: Finding| {
        let mut finding = with_matrix(finding, matrix)
            .with_fact("cuda", cuda)
            .with_fact("capability", capability)
            .with_fact("targets_row", row);
        finding.message.push_str(row.status.caveat());
        finding
    };
    let sm = capability.sm();
    match toolkit_reach(matrix, row, capability) {
        ToolkitReach::Exact(target) => facts(Finding::pass(
            GPU_CUDA_ARCH,
            format!("CUDA {cuda} has a {target} target for {gpu}"),
        )),
        ToolkitReach::SameMajor(target) => facts(Finding::pass(
            GPU_CUDA_ARCH,
            format!(
                "CUDA {cuda} has no {sm} target, but its {target} machine code runs on {gpu}: same major, lower minor"
            ),
        )),
        ToolkitReach::WithinBounds => facts(Finding::pass(
            GPU_CUDA_ARCH,
            format!(
                "CUDA {cuda} targets {} to {}, which spans {gpu}",
                row.lowest, row.highest
            ),
        )),
        ToolkitReach::Newer => facts(newer_than_the_toolkit(matrix, cuda, row, capability, &gpu)),
        ToolkitReach::Renamed(old) => {
            let (finding, rename) = renamed_target(matrix, cuda, old, &gpu);
            let finding = facts(finding);
            match rename {
                Some(rename) => finding.with_fact("rename_row", rename),
                None => finding,
            }
        }
        ToolkitReach::Older => facts(older_than_the_toolkit(matrix, cuda, row, capability, &gpu)),
    }
}

/// The release is not in the compile-target table: whether it targets `gpu` is unknown.
fn not_in_target_table(
    matrix: &Matrix,
    cuda: CudaVersion,
    capability: ComputeCapability,
    gpu: &str,
) -> Finding {
    let message = format!(
        "CUDA {cuda} is not in the compile-target table of {}{}, so whether it can target {gpu} is unknown",
        matrix.describe(),
        dropped_rows(&matrix.cuda_targets, &cuda.to_string())
    );
    let hint = format!(
        "`nvcc --list-gpu-arch` in a CUDA {cuda} -devel image lists its targets; add a `[[cuda_targets]]` row to {USER_MATRIX}"
    );
    with_matrix(
        Finding::warn(GPU_CUDA_ARCH, message).with_hint(hint),
        matrix,
    )
    .with_fact("cuda", cuda)
    .with_fact("capability", capability)
}

/// The GPU is newer than the newest target of CUDA `cuda` (its `row`): reached only through PTX;
/// the hint names the first release in the matrix that targets it.
fn newer_than_the_toolkit(
    matrix: &Matrix,
    cuda: CudaVersion,
    row: &CudaTargetsRow,
    capability: ComputeCapability,
    gpu: &str,
) -> Finding {
    let sm = capability.sm();
    let message = format!(
        "CUDA {cuda} cannot compile for {gpu}: its newest target is {}; code reaches this GPU only as PTX that the driver JIT-compiles, where the application ships PTX",
        row.highest
    );
    let first = matrix
        .all_cuda_targets()
        .into_iter()
        .find(|other| toolkit_reach(matrix, other, capability).compiles());
    let hint = match first {
        Some(first) => format!(
            "use an image with CUDA {} or newer, the first release in the matrix that targets {sm}",
            first.cuda
        ),
        None => format!("no CUDA release in {} targets {sm} yet", matrix.describe()),
    };
    Finding::warn(GPU_CUDA_ARCH, message).with_hint(hint)
}

/// The toolkit targets the GPU only under its old (CUDA 12 driver) name `old`, whose
/// cubins do not run where the GPU reports its new capability; with the rename row that
/// says when the new target came.
fn renamed_target<'m>(
    matrix: &'m Matrix,
    cuda: CudaVersion,
    old: Target,
    gpu: &str,
) -> (Finding, Option<&'m TargetRenameRow>) {
    let new = matrix.renamed(old);
    let rename = matrix
        .target_rename
        .iter()
        .find(|rename| rename.status.usable() && rename.old.capability == old.capability);
    let from = rename.map_or_else(
        || "a later release".to_string(),
        |rename| format!("CUDA {}", rename.from_cuda),
    );
    let message = format!(
        "CUDA {cuda} cannot target {gpu}: its {old} is the target of this GPU as the CUDA 12 driver reported it (compute capability {}), and its cubins are not {} code; the GPU reports {} only under the CUDA 13 driver, and NVIDIA supports binary compatibility only on the desktop, not on Tegra, so the GPU needs {new}, first in {from}",
        old.capability, new.capability, new.capability
    );
    let hint = format!("use an image with {from} or newer, which targets {new}");
    (
        Finding::fail(GPU_CUDA_ARCH, message).with_hint(hint),
        rename,
    )
}

/// The GPU is older than the lowest target of CUDA `cuda` (its `row`): its architecture's support
/// ended; the hint names the newest release in the matrix that still targets it.
fn older_than_the_toolkit(
    matrix: &Matrix,
    cuda: CudaVersion,
    row: &CudaTargetsRow,
    capability: ComputeCapability,
    gpu: &str,
) -> Finding {
    let sm = capability.sm();
    let mut message = format!(
        "CUDA {cuda} cannot target {gpu}: its lowest target is {}",
        row.lowest
    );
    if let Some(architecture) = matrix.architecture_of(capability)
        && let Some(last) = &architecture.last_cuda
    {
        message.push_str(&format!(
            " ({} support ends with CUDA {last})",
            architecture.name
        ));
    }
    let newest = matrix
        .all_cuda_targets()
        .into_iter()
        .rfind(|other| toolkit_reach(matrix, other, capability).compiles());
    let hint = match newest {
        Some(newest) => format!(
            "use an image with CUDA {} or older, the newest release in the matrix that targets {sm}; see \"Deprecated Architectures\" in {RELEASE_NOTES}",
            newest.through.unwrap_or(newest.cuda)
        ),
        None => format!("no CUDA release in {} targets {sm}", matrix.describe()),
    };
    Finding::fail(GPU_CUDA_ARCH, message).with_hint(hint)
}

/// The first CUDA release that knows a GPU, with the row that says so: the architecture
/// row's `first_cuda` where that row lists the capability itself (NVIDIA's architecture
/// matrix), else the oldest compile-target row that targets it (10.3 and 12.1 first in CUDA
/// 12.9, 8.7 in 11.4).
pub(super) fn first_cuda_for(
    matrix: &Matrix,
    capability: ComputeCapability,
) -> Option<(CudaVersion, RowStatus, &'static str)> {
    if let Some(architecture) = matrix.architecture_of(capability)
        && architecture.capabilities.contains(&capability)
    {
        return Some((
            architecture.first_cuda,
            architecture.status,
            "architecture_row",
        ));
    }
    matrix
        .all_cuda_targets()
        .into_iter()
        .find(|row| {
            matches!(
                toolkit_reach(matrix, row, capability),
                ToolkitReach::Exact(_) | ToolkitReach::WithinBounds
            )
        })
        .map(|row| (row.cuda, row.status, "targets_row"))
}
