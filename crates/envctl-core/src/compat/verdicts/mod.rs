//! The verdicts: pure functions from a [`Matrix`] and the versions being compared to
//! [`Finding`]s, each with the facts it compared (versions, the matrix rows with their
//! sources) and a concrete hint. The finding ids are listed in the module docs of `compat`.

mod driver_cuda;
mod driver_floors;
mod lifecycle;
mod toolkit;
mod torch;
mod torch_builds;

#[cfg(test)]
mod driver_tests;
#[cfg(test)]
mod torch_tests;

pub use driver_cuda::{driver_vs_cuda, driver_vs_cuda_of, native_cuda_for_driver, pinned_runtime};
pub use driver_floors::{driver_vs_architecture, driver_vs_gpu_model};
pub use lifecycle::{driver_branch_lifecycle, forward_compatibility};
pub use toolkit::{cuda_vs_gpu, gpu_label};
pub use torch::{gpu_vs_torch, gpus_vs_torch};
pub use torch_builds::TorchCandidate;

use super::matrix::{Matrix, Row};
use crate::checks::Finding;

/// Driver vs the CUDA release of an image or wheel.
pub const DRIVER_CUDA: &str = "driver.cuda";
/// A GPU vs what a CUDA toolkit can compile for.
pub const GPU_CUDA_ARCH: &str = "gpu.cuda-arch";
/// A GPU vs the kernels a torch build ships.
pub const GPU_TORCH_ARCH: &str = "gpu.torch-arch";
/// A data-center driver branch vs its end of life.
pub const DRIVER_BRANCH_LIFECYCLE: &str = "driver.branch-lifecycle";
/// Whether NVIDIA's forward compatibility offers a way past a driver below a CUDA major's floor.
pub const DRIVER_FORWARD_COMPATIBILITY: &str = "driver.forward-compatibility";
/// A driver branch vs the GPU's architecture: a branch older than the GPU, or one that
/// dropped it.
pub const DRIVER_ARCHITECTURE: &str = "driver.architecture";
/// A driver vs the floors of the GPU model itself: its per-SKU minimum and, with MIG
/// enabled, its MIG minimum.
pub const DRIVER_GPU_MODEL: &str = "driver.gpu-model";

const MINOR_VERSION_DOCUMENTATION: &str =
    "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html";
const RELEASE_NOTES: &str = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/";
const DATACENTER_DRIVERS: &str = "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html";
const USER_MATRIX: &str = "$XDG_CONFIG_HOME/envctl/matrix.toml";
const ARCH_LIST_COMMAND: &str = "python -c 'import torch; print(torch.cuda.get_arch_list())'";
/// NVIDIA's own PyTorch builds for Jetson (L4T), the only CUDA torch a Jetson before Thor runs.
const JETSON_TORCH: &str = "NVIDIA's PyTorch for Jetson (https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html; wheels per JetPack: https://forums.developer.nvidia.com/t/pytorch-for-jetson/72048)";

/// ` (this matrix's UNVERIFIED row KEY was not used)`: a user file's row a verdict would
/// have rested on, named where the verdict says the matrix lacks it.
fn dropped_rows<R: Row>(rows: &[R], key: &str) -> String {
    let dropped = Matrix::unverified_rows(rows, key);
    if dropped.is_empty() {
        String::new()
    } else {
        format!(
            " (its [[{}]] row {key} is marked UNVERIFIED, so no verdict uses it)",
            R::TABLE
        )
    }
}

fn with_matrix(finding: Finding, matrix: &Matrix) -> Finding {
    finding.with_fact("matrix", matrix.describe())
}
