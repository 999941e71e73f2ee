//! The torch builds a verdict weighs: the profiles a hint may suggest, the kernels a build
//! row has for a GPU, whether a build runs on a driver, and the alternatives a failed
//! verdict names.

use super::driver_cuda::driver_vs_cuda;
use crate::checks::Status;
use crate::compat::matrix::{CudaDriverRow, Matrix, TorchBuildRow};
use crate::compat::reach::{Reach, reach};
use crate::compat::values::{CudaVariant, Platform, Target, TorchRelease};
use crate::compat::version::{ComputeCapability, DriverVersion};
use crate::profile::model::{CudaVersion, TorchVersion};

/// A bundled or team profile that could run instead, for hints: its name, torch and CUDA.
#[derive(Debug, Clone, Copy)]
pub struct TorchCandidate<'a> {
    pub profile: &'a str,
    pub torch: &'a TorchVersion,
    pub cuda: CudaVersion,
}

impl<'a> TorchCandidate<'a> {
    pub fn new(profile: &'a str, torch: &'a TorchVersion, cuda: CudaVersion) -> Self {
        TorchCandidate {
            profile,
            torch,
            cuda,
        }
    }
}

/// How a torch build's code reaches a GPU: its machine code and PTX, renamed as the matrix
/// says, through the one architecture-reach rule.
pub(super) fn kernels(
    matrix: &Matrix,
    build: &TorchBuildRow,
    capability: ComputeCapability,
) -> Reach {
    // A renamed target (sm_101) is code for the capability the GPU reported under an older
    // driver, not for the one it has now (see `ToolkitReach::Renamed`): it reaches nothing.
    let targets: Vec<Target> = build
        .targets
        .iter()
        .chain(build.ptx.iter())
        .filter(|target| matrix.renamed(**target) == **target)
        .copied()
        .collect();
    reach(capability, &targets)
}

/// The status of one build on one GPU: machine code passes; PTX passes only with a driver
/// at least the build's CUDA release minimum (warn when the driver is unknown).
pub(super) fn build_status(
    matrix: &Matrix,
    build: &TorchBuildRow,
    capability: ComputeCapability,
    driver: Option<&DriverVersion>,
) -> Status {
    match kernels(matrix, build, capability) {
        Reach::Cubin(_) => Status::Pass,
        Reach::Missing(_) => Status::Fail,
        Reach::Ptx(_) => {
            let minimum = matrix
                .runtime_row(build)
                .row
                .and_then(CudaDriverRow::minimum);
            match (driver, minimum) {
                (Some(driver), Some(minimum)) if *driver >= minimum => Status::Pass,
                (Some(_), Some(_)) => Status::Fail,
                _ => Status::Warn,
            }
        }
    }
}

/// A driver below the minimum of the CUDA runtime a build's wheel pins.
pub(super) struct PinnedFloor {
    pub(super) status: Status,
    pub(super) message: String,
    pub(super) hint: String,
}

/// Whether `driver` meets the minimum of `build`'s CUDA release (what `driver.cuda` judges
/// and says it meets) but not that of the later update the wheel pins
/// ([`Matrix::runtime_row`]): then the pinned runtime runs only through minor-version
/// compatibility, a warning naming the pin it rests on. `None` without a known pin, when the
/// driver meets it, or when it is below the release's own minimum (`driver.cuda` says that).
pub(super) fn below_pinned_runtime(
    matrix: &Matrix,
    build: &TorchBuildRow,
    driver: &DriverVersion,
) -> Option<PinnedFloor> {
    let runtime = matrix.runtime_row(build);
    runtime.pin?;
    let row = runtime.row?;
    let minimum = row.minimum()?;
    let release = matrix.cuda_release(build.variant.cuda())?;
    let release_minimum = release.minimum()?;
    if *driver >= minimum || *driver < release_minimum {
        return None;
    }
    let needed = row.minimum_text();
    Some(PinnedFloor {
        status: Status::Warn,
        message: format!(
            "driver {driver} meets CUDA {}'s minimum {} but not {needed}, the minimum of {}{}: it runs that runtime only through CUDA {}.x minor-version compatibility (no PTX JIT of newer PTX, no features that need a newer driver)",
            build.variant.cuda(),
            release.minimum_text(),
            runtime.described(row.cuda),
            row.status.caveat(),
            row.cuda.major
        ),
        hint: format!("upgrade the driver to {needed} or newer"),
    })
}

/// Whether a build runs on every GPU and its CUDA on the driver (when known).
fn build_works(
    matrix: &Matrix,
    build: &TorchBuildRow,
    capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
) -> bool {
    capabilities
        .iter()
        .all(|capability| build_status(matrix, build, *capability, driver) == Status::Pass)
        && driver.is_none_or(|driver| {
            driver_vs_cuda(matrix, driver, build.variant.cuda(), false).status != Status::Fail
        })
}

/// The build of a release to suggest: one that works, preferring a CUDA the driver runs
/// in full, then the newest CUDA.
fn best_build<'m>(
    matrix: &'m Matrix,
    release: TorchRelease,
    platform: Platform,
    capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
) -> Option<&'m TorchBuildRow> {
    matrix
        .torch_builds(release, platform)
        .into_iter()
        .filter(|build| build_works(matrix, build, capabilities, driver))
        .max_by_key(|build| {
            let full = driver.is_none_or(|driver| {
                driver_vs_cuda(matrix, driver, build.variant.cuda(), false).status == Status::Pass
                    && below_pinned_runtime(matrix, build, driver).is_none()
            });
            (full, build.variant.cuda())
        })
}

fn candidate_build<'m>(
    matrix: &'m Matrix,
    candidate: &TorchCandidate<'_>,
    platform: Platform,
) -> Option<&'m TorchBuildRow> {
    if !candidate.torch.version.pre.is_empty() {
        return None;
    }
    let variant = match candidate.torch.variant.as_deref() {
        Some(variant) => variant.parse::<CudaVariant>().ok()?,
        None => CudaVariant::for_cuda(candidate.cuda),
    };
    matrix.torch_build(TorchRelease::of(candidate.torch), &variant, platform)
}

pub(super) fn release_text(torch: &TorchVersion) -> String {
    let version = &torch.version;
    format!("{}.{}.{}", version.major, version.minor, version.patch)
}

/// What to run instead: the first candidate profile that works on every GPU, and the torch
/// build (same release first, then the nearest newer, then the nearest older release).
fn alternatives(
    matrix: &Matrix,
    torch: &TorchVersion,
    platform: Platform,
    capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Option<String> {
    let mut options = Vec::new();
    if let Some(candidate) = candidates.iter().find(|candidate| {
        candidate_build(matrix, candidate, platform)
            .is_some_and(|build| build_works(matrix, build, capabilities, driver))
    }) {
        options.push(format!(
            "use profile `{}` (torch {}, CUDA {})",
            candidate.profile, candidate.torch, candidate.cuda
        ));
    }
    let release = TorchRelease::of(torch);
    if let Some(build) = best_build(matrix, release, platform, capabilities, driver) {
        let version = release_text(torch);
        options.push(format!(
            "install torch {version}+{variant}: pip install torch=={version} --index-url https://download.pytorch.org/whl/{variant}",
            variant = build.variant
        ));
    } else {
        let releases = matrix.torch_releases_with_builds(platform);
        let newer = releases.iter().filter(|other| **other > release);
        let older = releases.iter().filter(|other| **other < release).rev();
        let other = newer
            .chain(older)
            .find_map(|other| best_build(matrix, *other, platform, capabilities, driver));
        if let Some(build) = other {
            options.push(format!(
                "install a torch {release} build for {variant}: pip install 'torch=={release}.*' --index-url https://download.pytorch.org/whl/{variant}",
                release = build.torch,
                variant = build.variant
            ));
        }
    }
    if options.is_empty() {
        None
    } else {
        Some(options.join("; or "))
    }
}

pub(super) fn alternatives_hint(
    matrix: &Matrix,
    torch: &TorchVersion,
    platform: Platform,
    capability: ComputeCapability,
    all_capabilities: &[ComputeCapability],
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Option<String> {
    alternatives(
        matrix,
        torch,
        platform,
        all_capabilities,
        driver,
        candidates,
    )
    .or_else(|| {
        if all_capabilities.len() > 1 {
            alternatives(matrix, torch, platform, &[capability], driver, candidates).map(|hint| {
                format!("{hint} (no build in the matrix runs on every GPU of this host)")
            })
        } else {
            None
        }
    })
}

pub(super) fn targets_text(build: &TorchBuildRow) -> String {
    let targets: Vec<String> = build.targets.iter().map(ToString::to_string).collect();
    let ptx = match build.ptx {
        Some(ptx) => format!("{ptx} PTX"),
        None => "no PTX".to_string(),
    };
    format!("{} ({ptx})", targets.join(" "))
}
