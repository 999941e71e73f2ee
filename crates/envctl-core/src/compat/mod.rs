//! The compatibility matrix and the verdicts computed from it: pure data and pure
//! functions, no I/O beyond parsing text the caller hands over.
//!
//! Files:
//! - `matrix.toml` — the bundled data, embedded with `include_str!`: only rows of
//!   compat-facts whose status is verified, secondary or derived, each with its `source`,
//!   `status` and the date it was `read`.
//! - `matrix` — the row types, [`Matrix::bundled`], [`Matrix::overlay`], [`Matrix::info`] and
//!   the lookups (which skip `UNVERIFIED` rows a user file may carry).
//! - `parse` — [`Matrix::parse`] for the bundled file and user files
//!   (`$XDG_CONFIG_HOME/envctl/matrix.toml`, `--matrix FILE`), with every problem at its
//!   file:line:column in a [`MatrixError`].
//! - `reach` — the architecture-reach rule (compat-facts §2c): how a GPU runs a build's
//!   `sm_`/`compute_` targets (cubin, PTX JIT, or not at all and why); doctor's verdicts and
//!   nvidia-check both use it.
//! - `models` — GPU model names (NVML's and typed ones) → compute capability.
//! - `verdicts` — the findings below.
//! - `values` — targets (`sm_90a`), torch releases, CUDA wheel variants, row status.
//! - `version` — driver versions and compute capabilities.
//!
//! Verdicts are per GPU: on a mixed host the caller asks once per GPU (or uses
//! [`gpus_vs_torch`]). Every finding carries the facts it compared — the versions, the
//! matrix rows with their `source`, `status` and `read` date, and the matrix's date — and a
//! verdict resting on a `secondary` or `derived` row says so at the end of its message
//! ([`RowStatus::caveat`]); one whose row a user file marks `UNVERIFIED` names that row.
//!
//! Torch builds are keyed by platform ([`Platform`]: the x86_64 and aarch64 wheels of a
//! release are different builds); the torch verdicts take the host's platform and say which
//! wheel they judged. `[[gpu]] runs_on` marks GPUs found only in aarch64 hosts (judged by the
//! aarch64 wheel) and Jetson GPUs under L4T (no PyPI wheel applies: said, not judged);
//! `compat` also reads it by model name ([`Matrix::models_host`]: GH200, GB200 and GB300
//! share their capability with x86_64 parts). A target NVIDIA renamed (`sm_101` → `sm_110`)
//! reaches nothing: its cubins are code for the capability the GPU reported under the older
//! driver. Rows read from a build script where no wheel can be measured are
//! `verified (file)`, and the verdicts resting on them say so.
//!
//! Finding ids:
//! - `driver.cuda` ([`driver_vs_cuda`]) — the host driver vs the CUDA release of an image or
//!   wheel. Pass: at or above the release's minimum driver. Warn: below it but at or above
//!   the family's minor-version-compatibility floor (PTX JIT of newer PTX and newer
//!   features are lost), or the release is not in the matrix. Fail: below the family floor
//!   (CUDA 11 ≥ 450.80.02, 12 ≥ 525, 13 ≥ 580), with the `cuda-compat-X-Y` package in the
//!   hint for data-center GPUs.
//! - `gpu.cuda-arch` ([`cuda_vs_gpu`]) — a GPU vs what a CUDA toolkit compiles for. Pass: a
//!   target for it, or for a lower minor of its major. Warn: the GPU is newer than every
//!   target (PTX only), or the release is not in the matrix. Fail: the toolkit dropped the
//!   GPU (CUDA 13 and sm_70).
//! - `gpu.torch-arch` ([`gpu_vs_torch`], [`gpus_vs_torch`]) — a GPU vs the kernels of a torch
//!   build. Pass: machine code for it (or a lower minor of its major), or PTX with a driver
//!   new enough to JIT it. Warn: unknown release or variant, CPU-only or pre-release build,
//!   PTX with an unknown driver, or a release without a variant whose builds disagree; a
//!   library of the wheel (`library_gaps`: linalg's MAGMA kernels from sm_80 up in the cu13x
//!   wheels) without code for the GPU; a Jetson GPU; an unknown platform; PyPI's aarch64
//!   CPU wheel (up to 2.10).
//!   Fail: `sm_XY is not compatible with the current PyTorch installation`, with a hint
//!   naming the first candidate profile that works and the torch build to install.
//! - `driver.branch-lifecycle` ([`driver_branch_lifecycle`]) — a data-center driver branch
//!   vs its end of life. Pass: supported; warn: ended.
//! - `driver.architecture` ([`driver_vs_architecture`]) — a driver branch vs the GPU's
//!   architecture. Fail: the branch is older than the minimum driver of the first CUDA
//!   release for the GPU (R550 and Blackwell, whose 12.8 needs R570), or newer than the
//!   architecture's last branch (R590 and Volta); pass otherwise; none when the matrix knows
//!   neither.
//! - `driver.gpu-model` ([`driver_vs_gpu_model`]) — a driver vs the GPU model's own floors
//!   (`[[gpu_driver_floor]]`, compat-facts §8): the per-SKU minimum (HGX B200 ≥ 570.133.20)
//!   fails below it; the MIG minimum of NVIDIA's MIG guide (H200 ≥ 550.90.07) fails below it
//!   with MIG enabled, warns with MIG's state unknown, and is said in the pass with MIG off.
//! - `driver.forward-compatibility` ([`forward_compatibility`]) — only where `driver.cuda`
//!   fails below the family floor: info naming the `cuda-compat-X-Y` package on a
//!   data-center GPU, or saying it does not apply on others. Never a pass: whether the
//!   image carries the package, and which branches each package supports, are unknown.

pub mod fatbin;
mod matrix;
mod models;
mod parse;
mod reach;
mod values;
mod verdicts;
pub mod version;

#[cfg(test)]
mod failure_table_tests;
#[cfg(test)]
mod test_values;

pub use matrix::{
    ArchitectureRow, BUNDLED_PATH, BUNDLED_TEXT, BranchLifecycleRow, CudaDriverRow, CudaFamilyRow,
    CudaTargetsRow, DriverBranchRow, ForwardCompatibility, GpuDriverFloorRow, GpuHost, GpuRow,
    LateVariant, LibraryGap, Matrix, MatrixInfo, MatrixMeta, Row, TableRows, TargetRenameRow,
    TorchBuildRow, TorchReleaseRow,
};
pub use models::{model_capability, nearest_models, normalise_name, other_vendor};
pub use parse::{MatrixError, TABLE_NAMES};
pub use reach::{Mismatch, Reach, Refusal, Via, reach, target_reach};
pub use values::{
    CudaVariant, Platform, RowStatus, Target, TargetKind, TargetSuffix, TorchRelease, torch_cuda,
};
pub use verdicts::{
    DRIVER_ARCHITECTURE, DRIVER_BRANCH_LIFECYCLE, DRIVER_CUDA, DRIVER_FORWARD_COMPATIBILITY,
    DRIVER_GPU_MODEL, GPU_CUDA_ARCH, GPU_TORCH_ARCH, TorchCandidate, cuda_vs_gpu,
    driver_branch_lifecycle, driver_vs_architecture, driver_vs_cuda, driver_vs_cuda_of,
    driver_vs_gpu_model, forward_compatibility, gpu_label, gpu_vs_torch, gpus_vs_torch,
    native_cuda_for_driver, pinned_runtime,
};
pub use version::{ComputeCapability, DriverVersion};
