//! The verdicts: pure functions from a [`Matrix`] and the versions being compared to
//! [`Finding`]s, each with the facts it compared (versions, the matrix rows with their
//! sources) and a concrete hint. The finding ids are listed in the module docs of `compat`.

use std::cmp::Reverse;

use super::matrix::{
    CudaDriverRow, CudaTargetsRow, GpuDriverFloorRow, GpuHost, Matrix, Row, TorchBuildRow,
};
use super::reach::{Reach, reach};
use super::values::{CudaVariant, Platform, RowStatus, Target, TorchRelease, is_year_month};
use super::version::{ComputeCapability, DriverVersion};
use crate::checks::{Finding, Status};
use crate::profile::model::{CudaVersion, TorchVersion};

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

/// Checks that `driver` can run code built with CUDA `cuda` (compat-facts §1a, §1b, §6c).
///
/// Pass at or above the release's minimum driver; warn when only the family's
/// minor-version compatibility holds (no PTX JIT of newer PTX, no newer features); fail
/// below the family floor (CUDA 12 needs ≥ 525, CUDA 13 ≥ 580), naming the
/// forward-compatibility package when `datacenter` (the GPU is a data-center part); warn
/// when the release is not in the matrix and the family floor is met.
pub fn driver_vs_cuda(
    matrix: &Matrix,
    driver: &DriverVersion,
    cuda: CudaVersion,
    datacenter: bool,
) -> Finding {
    driver_vs_cuda_of(matrix, driver, cuda, datacenter, None)
}

/// The `[[cuda_driver]]` row of the CUDA runtime a torch wheel pins (2.15.0: cuda-toolkit
/// 13.2.2, CUDA 13.2 Update 2), where the matrix knows the build and its pin: the floor a
/// driver must meet for that wheel, which can be above its CUDA release's GA minimum.
/// `None` for an unknown platform, build or pin.
pub fn pinned_runtime<'m>(
    matrix: &'m Matrix,
    platform: Option<Platform>,
    torch: Option<&TorchVersion>,
    cuda: Option<CudaVersion>,
) -> Option<&'m CudaDriverRow> {
    let torch = torch?;
    let variant = match torch.variant.as_deref() {
        Some(variant) => variant.parse::<CudaVariant>().ok()?,
        None => CudaVariant::for_cuda(cuda?),
    };
    let build = matrix.torch_build(TorchRelease::of(torch), &variant, platform?)?;
    let runtime = matrix.runtime_row(build);
    runtime.pin?;
    runtime.row
}

/// [`driver_vs_cuda`] for an image whose torch wheel pins a later runtime (`pinned`, from
/// [`pinned_runtime`]): where the driver falls short, the message names the pinned
/// runtime's floor and the hint asks for it, not for the GA minimum the pin is above (an
/// upgrade to 595.45.04 would still fall short of 2.15.0's 595.71.05).
pub fn driver_vs_cuda_of(
    matrix: &Matrix,
    driver: &DriverVersion,
    cuda: CudaVersion,
    datacenter: bool,
    pinned: Option<&CudaDriverRow>,
) -> Finding {
    let release = matrix.cuda_release(cuda);
    let family = matrix.cuda_family(cuda.major);
    let minimum = release.and_then(CudaDriverRow::minimum);
    let facts = |finding: Finding| {
        let mut finding = with_matrix(finding, matrix)
            .with_fact("driver", driver.to_string())
            .with_fact("cuda", cuda)
            .with_fact("datacenter_gpu", datacenter);
        if let Some(release) = release {
            finding = finding.with_fact("release_row", release);
        }
        if let Some(family) = family {
            finding = finding.with_fact("family_row", family);
        }
        finding
    };
    let below_family = family.is_some_and(|family| *driver < family.linux_minimum_driver);

    if let (Some(release), Some(minimum)) = (release, &minimum) {
        let caveat = release.status.caveat();
        let facts = |finding: Finding| {
            let mut finding = facts(finding);
            finding.message.push_str(caveat);
            finding
        };
        if driver >= minimum {
            let message = match &release.linux_minimum_driver {
                Some(stated) => {
                    format!("driver {driver} meets CUDA {cuda}'s minimum driver {stated}")
                }
                None => format!(
                    "driver {driver} is on branch R{} or newer, which CUDA {cuda} needs",
                    minimum.branch()
                ),
            };
            return facts(Finding::pass(DRIVER_CUDA, message));
        }
        let needed = release.minimum_text();
        // The torch wheel's pinned runtime, where its floor is above the release's.
        let pinned = pinned.filter(|row| row.minimum().is_some_and(|floor| floor > *minimum));
        let (upgrade_to, pinned_text) = match pinned {
            Some(row) => (
                row.minimum_text(),
                format!(
                    "; the torch wheel pins CUDA {}, whose minimum is {}{}",
                    row.release,
                    row.minimum_text(),
                    row.status.caveat()
                ),
            ),
            None => (needed.clone(), String::new()),
        };
        let facts = |finding: Finding| match pinned {
            Some(row) => facts(finding).with_fact("runtime_row", row),
            None => facts(finding),
        };
        if let Some(family) = family.filter(|_| !below_family) {
            let message = format!(
                "driver {driver} is older than CUDA {cuda}'s minimum {needed}: CUDA {cuda} runs only through CUDA {}.x minor-version compatibility (driver {} or newer), which loses PTX JIT of code built by CUDA {cuda} (cudaErrorUnsupportedPtxVersion) and features that need a newer driver{pinned_text}",
                cuda.major, family.linux_minimum_driver
            );
            let hint = format!(
                "upgrade the driver to {upgrade_to} or newer for full CUDA {cuda} support; see {MINOR_VERSION_DOCUMENTATION}"
            );
            return facts(Finding::warn(DRIVER_CUDA, message).with_hint(hint));
        }
        let message = match family {
            Some(family) => format!(
                "driver {driver} is too old for CUDA {cuda}: it needs {needed} or newer, and at least {} for CUDA {}.x minor-version compatibility",
                family.linux_minimum_driver, cuda.major
            ),
            None => format!(
                "driver {driver} is too old for CUDA {cuda}: it needs {needed} or newer (CUDA {}.x has no minor-version compatibility)",
                cuda.major
            ),
        };
        let message = format!("{message}{pinned_text}");
        let hint = too_old_hint(matrix, driver, cuda, &upgrade_to, datacenter);
        return facts(Finding::fail(DRIVER_CUDA, message).with_hint(hint));
    }

    let dropped = dropped_rows(&matrix.cuda_driver, &format!("{cuda} update 0"));
    match family {
        Some(family) if below_family => {
            let floor = family.linux_minimum_driver.to_string();
            let message = format!(
                "driver {driver} is too old for CUDA {cuda}: CUDA {cuda} is not in {}{dropped}, but every CUDA {}.x release needs driver {floor} or newer (minor-version compatibility)",
                matrix.describe(),
                cuda.major
            );
            let hint = too_old_hint(matrix, driver, cuda, &floor, datacenter);
            facts(Finding::fail(DRIVER_CUDA, message).with_hint(hint))
        }
        Some(family) => {
            let message = format!(
                "CUDA {cuda} is not in {}{dropped}, so its minimum driver is unknown; driver {driver} meets the CUDA {}.x minor-version floor {}, so CUDA {cuda} code runs, at worst without PTX JIT of newer PTX and newer features",
                matrix.describe(),
                cuda.major,
                family.linux_minimum_driver
            );
            facts(Finding::warn(DRIVER_CUDA, message).with_hint(unknown_release_hint(cuda)))
        }
        None => {
            let message = format!(
                "CUDA {cuda} is not in {}{dropped}: its minimum driver is unknown",
                matrix.describe()
            );
            facts(Finding::warn(DRIVER_CUDA, message).with_hint(unknown_release_hint(cuda)))
        }
    }
}

fn unknown_release_hint(cuda: CudaVersion) -> String {
    format!(
        "look up CUDA {cuda}'s minimum driver in NVIDIA's release notes ({RELEASE_NOTES}) and add a `[[cuda_driver]]` row to {USER_MATRIX}"
    )
}

fn too_old_hint(
    matrix: &Matrix,
    driver: &DriverVersion,
    cuda: CudaVersion,
    needed: &str,
    datacenter: bool,
) -> String {
    let mut options = Vec::new();
    if datacenter && let Some(forward) = matrix.forward_compatibility() {
        options.push(format!(
            "install the forward-compatibility package {} in the image (data-center GPUs only; {})",
            forward.package_for(cuda),
            forward.documentation
        ));
    }
    options.push(format!("upgrade the driver to {needed} or newer"));
    if let Some(native) = native_cuda_for_driver(matrix, driver) {
        options.push(format!(
            "use an image built for CUDA {native} or older, which driver {driver} runs natively"
        ));
    }
    let mut hint = options.join("; or ");
    if !datacenter && matrix.forward_compatibility().is_some() {
        hint.push_str(
            " (the cuda-compat forward-compatibility package works only on data-center GPUs)",
        );
    }
    hint
}

/// The newest CUDA release `driver` runs natively (compat-facts §6a): its branch's row,
/// checked against that release's minimum driver; for a branch not in the table (or a
/// driver below its release's minimum), the newest release in the matrix whose minimum
/// driver it meets. `None` when it meets none.
pub fn native_cuda_for_driver(matrix: &Matrix, driver: &DriverVersion) -> Option<CudaVersion> {
    if let Some(row) = matrix.driver_branch(driver.branch()) {
        let meets = matrix
            .cuda_release(row.native_cuda)
            .and_then(CudaDriverRow::minimum)
            .is_none_or(|minimum| *driver >= minimum);
        if meets {
            return Some(row.native_cuda);
        }
    }
    matrix
        .cuda_releases()
        .into_iter()
        .filter(|row| row.minimum().is_some_and(|minimum| *driver >= minimum))
        .map(|row| row.cuda)
        .max()
}

/// How a CUDA toolkit's compile targets reach a GPU (what it can compile for, not what a
/// build runs: that is [`super::reach`]).
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
        let message = format!(
            "CUDA {cuda} is not in {}'s compile-target table{}, so whether it can target {gpu} is unknown",
            matrix.describe(),
            dropped_rows(&matrix.cuda_targets, &cuda.to_string())
        );
        let hint = format!(
            "`nvcc --list-gpu-arch` in a CUDA {cuda} -devel image lists its targets; add a `[[cuda_targets]]` row to {USER_MATRIX}"
        );
        return with_matrix(
            Finding::warn(GPU_CUDA_ARCH, message).with_hint(hint),
            matrix,
        )
        .with_fact("cuda", cuda)
        .with_fact("capability", capability);
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
        ToolkitReach::Newer => {
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
            facts(Finding::warn(GPU_CUDA_ARCH, message).with_hint(hint))
        }
        ToolkitReach::Renamed(old) => {
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
            let finding = facts(Finding::fail(GPU_CUDA_ARCH, message).with_hint(hint));
            match rename {
                Some(rename) => finding.with_fact("rename_row", rename),
                None => finding,
            }
        }
        ToolkitReach::Older => {
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
            facts(Finding::fail(GPU_CUDA_ARCH, message).with_hint(hint))
        }
    }
}

/// The first CUDA release that knows a GPU, with the row that says so: the architecture
/// row's `first_cuda` where that row lists the capability itself (NVIDIA's architecture
/// matrix), else the oldest compile-target row that targets it (10.3 and 12.1 first in CUDA
/// 12.9, 8.7 in 11.4).
fn first_cuda_for(
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

/// Checks that the driver's branch knows the GPU's architecture (compat-facts §1a, §2a, §2b):
/// a branch older than the minimum driver of the first CUDA release for the GPU (R550 for a
/// Blackwell RTX 5090, whose first release 12.8 needs 570.26) predates it, and a branch newer
/// than the architecture's last (R590 for Volta, whose last is R580) dropped it. Both fail:
/// the driver does not bring the GPU up. `None` when the matrix knows neither (no
/// architecture or first release for the capability).
pub fn driver_vs_architecture(
    matrix: &Matrix,
    driver: &DriverVersion,
    capability: ComputeCapability,
) -> Option<Finding> {
    let gpu = gpu_label(matrix, capability);
    let architecture = matrix.architecture_of(capability);
    let branch = driver.branch();
    let facts = |finding: Finding| {
        let mut finding = with_matrix(finding, matrix)
            .with_fact("driver", driver.to_string())
            .with_fact("capability", capability);
        if let Some(architecture) = architecture {
            finding = finding.with_fact("architecture_row", architecture);
        }
        finding
    };
    if let Some(architecture) = architecture
        && let Some(last) = architecture.last_driver_branch
        && branch > last
    {
        let message = format!(
            "driver {driver} (R{branch}) does not support {gpu}: NVIDIA's last driver branch for {} is R{last}{}",
            architecture.name,
            architecture.status.caveat()
        );
        let hint = format!(
            "use an R{last} driver, the last branch that supports {}; see {DATACENTER_DRIVERS}",
            architecture.name
        );
        return Some(facts(
            Finding::fail(DRIVER_ARCHITECTURE, message).with_hint(hint),
        ));
    }
    let (first, status, evidence) = first_cuda_for(matrix, capability)?;
    let Some((release, minimum)) = matrix
        .cuda_release(first)
        .and_then(|release| Some((release, release.minimum()?)))
    else {
        // The first release is older than every driver row (Volta's 9.0, Kepler's 6.0): a
        // driver at least the oldest row's minimum came after it, so it knows the GPU.
        let oldest = matrix
            .cuda_releases()
            .into_iter()
            .find(|row| row.cuda > first)?;
        let oldest_minimum = oldest.minimum()?;
        if *driver < oldest_minimum {
            return None;
        }
        return Some(facts(Finding::pass(
            DRIVER_ARCHITECTURE,
            format!(
                "driver {driver} (R{branch}) knows {gpu}: it is newer than CUDA {}'s minimum {oldest_minimum}, itself after CUDA {first}, the first release for it{}",
                oldest.cuda,
                status.caveat()
            ),
        )));
    };
    let caveat = if status > release.status {
        status.caveat()
    } else {
        release.status.caveat()
    };
    let facts = |finding: Finding| {
        facts(finding)
            .with_fact("first_cuda", first)
            .with_fact("first_cuda_from", evidence)
            .with_fact("release_row", release)
    };
    if branch < minimum.branch() {
        let message = format!(
            "driver {driver} (R{branch}) predates {gpu}: the first CUDA release for it, {first}, needs driver {} or newer (branch R{}), so this driver does not bring the GPU up{caveat}",
            release.minimum_text(),
            minimum.branch()
        );
        let hint = format!(
            "upgrade the driver to branch R{} or newer ({} or newer); see {RELEASE_NOTES}",
            minimum.branch(),
            release.minimum_text()
        );
        return Some(facts(
            Finding::fail(DRIVER_ARCHITECTURE, message).with_hint(hint),
        ));
    }
    Some(facts(Finding::pass(
        DRIVER_ARCHITECTURE,
        format!(
            "driver {driver} (R{branch}) knows {gpu}: it is not older than branch R{} of CUDA {first}, the first release for it{caveat}",
            minimum.branch()
        ),
    )))
}

/// Checks a driver against the floors of the GPU model itself (compat-facts §8): the
/// per-SKU minimum NVIDIA states for some parts (HGX B200: 570.133.20), and the MIG minimum
/// of NVIDIA's MIG user guide (H200: 550.90.07), which holds only with MIG enabled.
/// `models` are the `[[gpu]]` row names the GPU resolved to; `mig` is whether MIG is on
/// (`None`: unknown). Fail below a floor that applies; warn below the MIG floor when MIG's
/// state is unknown; pass otherwise, saying the MIG floor where MIG is off and the driver is
/// below it. `None` when the matrix has no floor for the model.
pub fn driver_vs_gpu_model(
    matrix: &Matrix,
    driver: &DriverVersion,
    models: &[String],
    mig: Option<bool>,
) -> Option<Finding> {
    let floors: Vec<&GpuDriverFloorRow> = matrix.gpu_driver_floors(models).collect();
    let highest = |mig_floor: bool| {
        floors
            .iter()
            .copied()
            .filter(|row| row.mig == mig_floor)
            .max_by(|one, other| one.linux_minimum_driver.cmp(&other.linux_minimum_driver))
    };
    let (own, with_mig) = (highest(false), highest(true));
    if own.is_none() && with_mig.is_none() {
        return None;
    }
    let gpu = models.join(" / ");
    let facts = |finding: Finding| {
        with_matrix(finding, matrix)
            .with_fact("driver", driver.to_string())
            .with_fact("models", models)
            .with_fact("mig", mig)
            .with_fact("floor_rows", &floors)
    };
    let below = |row: &GpuDriverFloorRow| *driver < row.linux_minimum_driver;
    let upgrade = |row: &GpuDriverFloorRow| {
        format!(
            "upgrade the driver to {} or newer",
            row.linux_minimum_driver
        )
    };
    if let Some(row) = own.filter(|row| below(row)) {
        let message = format!(
            "driver {driver} is older than {}, the lowest driver NVIDIA supports for {gpu} (a floor of this model, above its architecture's){}",
            row.linux_minimum_driver,
            row.status.caveat()
        );
        return Some(facts(
            Finding::fail(DRIVER_GPU_MODEL, message).with_hint(upgrade(row)),
        ));
    }
    if let Some(row) = with_mig.filter(|row| below(row)) {
        let floor = &row.linux_minimum_driver;
        let caveat = row.status.caveat();
        return Some(facts(match mig {
            Some(true) => Finding::fail(
                DRIVER_GPU_MODEL,
                format!(
                    "MIG is enabled on {gpu}, and driver {driver} is older than {floor}, the lowest driver NVIDIA's MIG user guide supports for MIG on it{caveat}"
                ),
            )
            .with_hint(upgrade(row)),
            Some(false) => Finding::pass(
                DRIVER_GPU_MODEL,
                format!(
                    "driver {driver} supports {gpu} with MIG disabled; MIG on it needs {floor} or newer (NVIDIA's MIG user guide){caveat}"
                ),
            ),
            None => Finding::warn(
                DRIVER_GPU_MODEL,
                format!(
                    "whether MIG is enabled on {gpu} is unknown; with MIG enabled it needs driver {floor} or newer (NVIDIA's MIG user guide), and driver {driver} is older{caveat}"
                ),
            )
            .with_hint(upgrade(row)),
        }));
    }
    let met: Vec<String> = [own, with_mig]
        .into_iter()
        .flatten()
        .map(|row| {
            let state = match (row.mig, mig) {
                (false, _) => "",
                (true, Some(true)) => ", with MIG enabled",
                (true, Some(false)) => ", which MIG would need (MIG is off)",
                (true, None) => ", which MIG needs (MIG's state is unknown)",
            };
            format!(
                "{} {}{state}{}",
                if row.mig { "MIG floor" } else { "own floor" },
                row.linux_minimum_driver,
                row.status.caveat()
            )
        })
        .collect();
    Some(facts(Finding::pass(
        DRIVER_GPU_MODEL,
        format!("driver {driver} meets {gpu}'s {}", met.join(" and ")),
    )))
}

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
fn kernels(matrix: &Matrix, build: &TorchBuildRow, capability: ComputeCapability) -> Reach {
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
fn build_status(
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
struct PinnedFloor {
    status: Status,
    message: String,
    hint: String,
}

/// Whether `driver` meets the minimum of `build`'s CUDA release (what `driver.cuda` judges
/// and says it meets) but not that of the later update the wheel pins
/// ([`Matrix::runtime_row`]): then the pinned runtime runs only through minor-version
/// compatibility, a warning naming the pin it rests on. `None` without a known pin, when the
/// driver meets it, or when it is below the release's own minimum (`driver.cuda` says that).
fn below_pinned_runtime(
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

fn release_text(torch: &TorchVersion) -> String {
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

fn alternatives_hint(
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

fn targets_text(build: &TorchBuildRow) -> String {
    let targets: Vec<String> = build.targets.iter().map(ToString::to_string).collect();
    let ptx = match build.ptx {
        Some(ptx) => format!("{ptx} PTX"),
        None => "no PTX".to_string(),
    };
    format!("{} ({ptx})", targets.join(" "))
}

/// Checks that a torch build has kernels for a GPU of `capability` (compat-facts §2c, §3b):
/// machine code runs on the same major with an equal or higher minor; PTX is JIT-compiled
/// for any higher capability, only by a driver at least the build's CUDA minimum (so
/// `driver` matters only then). Without a variant in `torch`, the variant is inferred from
/// `cuda` (`12.8` → `cu128`, recorded in the facts); without either, every build of the
/// release is checked. An unknown release or variant warns; nothing is guessed.
/// `candidates` are profiles to suggest, in order; the hint names the first that works.
///
/// `platform` is the host's (`None`: unknown): the x86_64 and aarch64 wheels of a release
/// differ, and the message names the one it judged. A GPU found only on aarch64 hosts (Thor,
/// GB10) is judged by the aarch64 wheel whatever the platform says; a Jetson GPU under L4T
/// (Orin, Xavier) by neither: the verdict says no bundled row covers it.
pub fn gpu_vs_torch(
    matrix: &Matrix,
    platform: Option<Platform>,
    capability: ComputeCapability,
    torch: &TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Finding {
    TorchQuery {
        matrix,
        platform,
        capability,
        all_capabilities: &[capability],
        torch,
        cuda,
        driver,
        candidates,
    }
    .verdict()
}

/// [`gpu_vs_torch`] for every GPU of a (possibly mixed) host: one finding per distinct
/// compute capability, with the GPU indices it covers in the `gpu_indices` fact. Hints
/// name what runs on every GPU where something does.
pub fn gpus_vs_torch(
    matrix: &Matrix,
    platform: Option<Platform>,
    capabilities: &[ComputeCapability],
    torch: &TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Vec<Finding> {
    let mut distinct: Vec<ComputeCapability> = Vec::new();
    for capability in capabilities {
        if !distinct.contains(capability) {
            distinct.push(*capability);
        }
    }
    distinct
        .iter()
        .map(|capability| {
            let indices: Vec<usize> = capabilities
                .iter()
                .enumerate()
                .filter(|(_, other)| *other == capability)
                .map(|(index, _)| index)
                .collect();
            TorchQuery {
                matrix,
                platform,
                capability: *capability,
                all_capabilities: &distinct,
                torch,
                cuda,
                driver,
                candidates,
            }
            .verdict()
            .with_fact("gpu_indices", indices)
        })
        .collect()
}

/// One torch verdict's question (issue 42: a query with named steps): a GPU of
/// `capability` among `all_capabilities` of the host, a torch build, the host's platform
/// and driver, and the profiles a hint may suggest. [`TorchQuery::verdict`] answers it.
struct TorchQuery<'a> {
    matrix: &'a Matrix,
    platform: Option<Platform>,
    capability: ComputeCapability,
    all_capabilities: &'a [ComputeCapability],
    torch: &'a TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&'a DriverVersion>,
    candidates: &'a [TorchCandidate<'a>],
}

/// What a verdict has settled so far, each step adding to the facts its findings carry:
/// the platform, then the variant (and the CUDA it was inferred from), then the build row.
#[derive(Clone, Copy)]
struct Settled<'a> {
    platform: Platform,
    variant: Option<(&'a CudaVariant, Option<CudaVersion>)>,
    build: Option<&'a TorchBuildRow>,
}

fn check_inside_the_container() -> String {
    format!("check its arch list inside the container: {ARCH_LIST_COMMAND}")
}

fn with_optional_hint(finding: Finding, hint: Option<String>) -> Finding {
    match hint {
        Some(hint) => finding.with_hint(hint),
        None => finding,
    }
}

impl<'a> TorchQuery<'a> {
    fn release(&self) -> TorchRelease {
        TorchRelease::of(self.torch)
    }

    fn gpu(&self) -> String {
        gpu_label(self.matrix, self.capability)
    }

    /// The facts every finding carries, before the platform is known.
    fn plain(&self, platform: Option<Platform>, finding: Finding) -> Finding {
        let mut finding = with_matrix(finding, self.matrix)
            .with_fact("capability", self.capability)
            .with_fact("torch", self.torch.to_string())
            .with_fact("platform", platform);
        if let Some(driver) = self.driver {
            finding = finding.with_fact("driver", driver.to_string());
        }
        finding
    }

    /// The facts of what is settled; a finding resting on a build row says how well the
    /// row is supported.
    fn facts(&self, settled: Settled<'_>, finding: Finding) -> Finding {
        let mut finding = self.plain(Some(settled.platform), finding);
        if let Some(cuda) = self.cuda {
            finding = finding.with_fact("cuda", cuda);
        }
        if let Some((variant, inferred_from)) = settled.variant {
            finding = finding.with_fact("variant", variant.as_str());
            if let Some(cuda) = inferred_from {
                finding = finding.with_fact("variant_inferred_from_cuda", cuda);
            }
        }
        if let Some(build) = settled.build {
            finding = finding.with_fact("build_row", build);
            finding.message.push_str(build.status.caveat());
        }
        finding
    }

    /// What to run instead, on `platform`.
    fn hint(&self, platform: Platform) -> Option<String> {
        alternatives_hint(
            self.matrix,
            self.torch,
            platform,
            self.capability,
            self.all_capabilities,
            self.driver,
            self.candidates,
        )
    }

    /// Step 1: the platform whose wheel applies. A GPU found only in aarch64 hosts runs the
    /// aarch64 wheel, whatever was said; a Jetson GPU under L4T runs neither PyPI wheel.
    fn verdict(&self) -> Finding {
        let release = self.release();
        let gpu_host = self.matrix.gpu_host(self.capability);
        let platform = match gpu_host {
            Some(GpuHost::Aarch64) => Some(Platform::Aarch64),
            _ => self.platform,
        };
        if gpu_host == Some(GpuHost::Jetson) && self.torch.variant.as_deref() != Some("cpu") {
            let message = format!(
                "{} is a Jetson GPU: neither PyPI wheel of torch {release} (x86_64, aarch64 SBSA) runs on Jetson under L4T, and no bundled row covers NVIDIA's Jetson builds of torch, so whether torch {} has kernels for it is unknown",
                self.gpu(),
                self.torch
            );
            let hint = format!(
                "install {JETSON_TORCH}, then check its arch list inside the container: {ARCH_LIST_COMMAND}"
            );
            return self.plain(
                platform,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(hint),
            );
        }
        let Some(platform) = platform else {
            let message = format!(
                "the host's platform is unknown, so which torch {release} wheel applies (x86_64 or aarch64, which differ) is unknown"
            );
            return self.plain(
                None,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            );
        };
        self.on_platform(Settled {
            platform,
            variant: None,
            build: None,
        })
    }

    /// Step 2: builds that are not judged by an arch list (CPU-only, pre-release, PyPI's
    /// aarch64 CPU wheel, a release without builds on the platform), then the variant.
    fn on_platform(&self, settled: Settled<'_>) -> Finding {
        let (matrix, torch, platform) = (self.matrix, self.torch, settled.platform);
        let release = self.release();
        let gpu = self.gpu();
        if torch.variant.as_deref() == Some("cpu") {
            let message = format!("torch {torch} is a CPU-only build: it cannot use {gpu}");
            return self.facts(
                settled,
                with_optional_hint(Finding::warn(GPU_TORCH_ARCH, message), self.hint(platform)),
            );
        }
        if !torch.version.pre.is_empty() {
            let message = format!(
                "torch {torch} is a pre-release or vendor build (nightly, NGC): its arch list is not in {}",
                matrix.describe()
            );
            return self.facts(
                settled,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            );
        }
        // `pip install torch==2.10.0` on aarch64 gets PyPI's CPU wheel, whatever CUDA builds
        // download.pytorch.org has: a torch named without a variant or a CUDA is that wheel.
        if platform == Platform::Aarch64
            && torch.variant.is_none()
            && self.cuda.is_none()
            && matrix
                .torch_release(release)
                .is_some_and(|row| row.pypi_aarch64_is_cpu())
        {
            let message = format!(
                "torch {torch} from PyPI on aarch64 is a CPU-only build (PyPI's aarch64 wheels are CUDA builds only from 2.11): `pip install torch=={}` on this Arm host cannot use {gpu}",
                release_text(torch)
            );
            let finding = Finding::warn(GPU_TORCH_ARCH, message);
            return self.facts(settled, with_optional_hint(finding, self.hint(platform)));
        }
        let builds = matrix.torch_builds(release, platform);
        if builds.is_empty() {
            return self.without_builds(settled);
        }
        let variant = match (torch.variant.as_deref(), self.cuda) {
            (Some(variant), _) => match variant.parse::<CudaVariant>() {
                Ok(variant) => Some((variant, None)),
                Err(_) => {
                    let message = format!(
                        "torch {torch} has the unknown variant `{variant}`; known builds of torch {release}: {}",
                        variant_names(&builds)
                    );
                    return self.facts(settled, Finding::warn(GPU_TORCH_ARCH, message));
                }
            },
            (None, Some(cuda)) => Some((CudaVariant::for_cuda(cuda), Some(cuda))),
            (None, None) => None,
        };
        let Some((variant, inferred_from)) = variant else {
            return every_build(
                matrix,
                platform,
                self.capability,
                torch,
                &builds,
                self.driver,
                || self.hint(platform),
                |finding| self.facts(settled, finding),
            );
        };
        let settled = Settled {
            variant: Some((&variant, inferred_from)),
            ..settled
        };
        let label = match inferred_from {
            Some(cuda) => {
                format!("torch {torch} ({variant}, inferred from CUDA {cuda}; {platform} wheel)")
            }
            None => format!("torch {torch} ({platform} wheel)"),
        };
        match matrix.torch_build(release, &variant, platform) {
            Some(build) => self.judge_build(
                Settled {
                    build: Some(build),
                    ..settled
                },
                build,
                &label,
            ),
            None => self.without_build(settled, &variant, &label, &builds),
        }
    }

    /// A release without builds on the platform: its arch list there is unknown.
    fn without_builds(&self, settled: Settled<'_>) -> Finding {
        let (matrix, platform) = (self.matrix, settled.platform);
        let release = self.release();
        let x86_only = platform != Platform::X86_64
            && !matrix.torch_builds(release, Platform::X86_64).is_empty();
        // A user's UNVERIFIED rows for this release and platform, which no verdict uses.
        let dropped: Vec<String> = matrix
            .torch_build
            .iter()
            .filter(|row| !row.status.usable() && row.torch == release && row.platform == platform)
            .map(|row| dropped_rows(std::slice::from_ref(row), &row.key()))
            .collect();
        let dropped = dropped.concat();
        let message = if x86_only {
            format!(
                "torch {release} has no {platform} build in {}{dropped}: its {platform} arch list is unknown (the x86_64 wheel's list does not apply: the {platform} wheels are built for other GPUs)",
                matrix.describe()
            )
        } else {
            format!(
                "torch {release} is not in {}{dropped}: its arch list is unknown",
                matrix.describe()
            )
        };
        let check = check_inside_the_container();
        let hint = match self.hint(platform) {
            Some(alternative) => format!("{check}; or {alternative}"),
            None => check,
        };
        self.facts(
            settled,
            Finding::warn(GPU_TORCH_ARCH, message).with_hint(hint),
        )
    }

    /// A variant without a build row on the platform: a late variant, a listed variant
    /// whose arch list is unknown, or no such build.
    fn without_build(
        &self,
        settled: Settled<'_>,
        variant: &CudaVariant,
        label: &str,
        builds: &[&TorchBuildRow],
    ) -> Finding {
        let (matrix, torch, platform) = (self.matrix, self.torch, settled.platform);
        let release = self.release();
        let warn = |message: String| {
            self.facts(
                settled,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            )
        };
        let key = match platform {
            Platform::X86_64 => format!("{release}+{variant}"),
            platform => format!("{release}+{variant} {platform}"),
        };
        // A variant that came with a later patch (cu129 from 2.12.1): this version either
        // has it (only its arch list is unknown) or predates it.
        if let Some(late) = matrix
            .torch_release(release)
            .and_then(|row| row.late_variant(variant))
        {
            let from: Option<TorchVersion> = late.from.parse().ok();
            let has_it = from.is_some_and(|from| torch.version >= from.version);
            return warn(if has_it {
                format!(
                    "{label}: torch {release} has {variant} builds from {}, but their arch list is not in {}",
                    late.from,
                    matrix.describe()
                )
            } else {
                format!(
                    "{label}: torch {torch} has no {variant} build: {variant} wheels of torch {release} exist only from {}, and their arch list is not in {}",
                    late.from,
                    matrix.describe()
                )
            });
        }
        // A build the release lists (cu129 of 2.11, published on download.pytorch.org)
        // exists: only its arch list is unknown. Saying it has no such build would be false.
        if matrix
            .torch_release(release)
            .is_some_and(|row| row.variants.contains(variant))
        {
            return warn(format!(
                "{label}: torch {release} has a {variant} build, but its arch list is not in {}{}",
                matrix.describe(),
                dropped_rows(&matrix.torch_build, &key)
            ));
        }
        warn(format!(
            "{label}: torch {release} has no {platform} {variant} build in {}{} (known: {})",
            matrix.describe(),
            dropped_rows(&matrix.torch_build, &key),
            variant_names(builds)
        ))
    }

    /// Step 3: the build row's kernels on this GPU.
    fn judge_build(&self, settled: Settled<'_>, build: &TorchBuildRow, label: &str) -> Finding {
        let (sm, gpu) = (self.capability.sm(), self.gpu());
        match kernels(self.matrix, build, self.capability) {
            Reach::Cubin(target) if target.capability == self.capability => self.runs(
                settled,
                build,
                target,
                format!("{label} has {target} kernels for {gpu}"),
            ),
            Reach::Cubin(target) => self.runs(
                settled,
                build,
                target,
                format!(
                    "{label} has no {sm} kernels, but its {target} kernels run on {gpu}: same major, lower minor"
                ),
            ),
            Reach::Ptx(ptx) => self.through_ptx(settled, build, ptx, label),
            Reach::Missing(_) => {
                let message = format!(
                    "{sm} is not compatible with the current PyTorch installation: {label} has kernels only for {}, none of which runs on {gpu}",
                    targets_text(build)
                );
                // Where nothing in the matrix runs here (a T4 on an Arm host), say so rather
                // than leave the failure without a way forward.
                let hint = self.hint(settled.platform).unwrap_or_else(|| {
                    format!(
                        "no {} torch build in {} has code for {sm}: a build made with {sm} in TORCH_CUDA_ARCH_LIST, or a host whose wheels carry it, is needed",
                        settled.platform,
                        self.matrix.describe()
                    )
                });
                self.facts(
                    settled,
                    Finding::fail(GPU_TORCH_ARCH, message).with_hint(hint),
                )
            }
        }
    }

    /// Machine code runs: a pass, unless a library of the wheel lacks the target (its
    /// operations have no kernels here although torch's own do) or the driver is below the
    /// runtime the wheel pins (13.2 Update 2 for 2.15.0, not the variant's GA release).
    fn runs(
        &self,
        settled: Settled<'_>,
        build: &TorchBuildRow,
        target: Target,
        message: String,
    ) -> Finding {
        let said: Vec<String> = build
            .library_gaps
            .iter()
            .filter(|gap| gap.missing.contains(&target))
            .map(|gap| {
                format!(
                    "{} ({}) has {target} in only {} of its {} fat binaries",
                    gap.library, gap.holds, gap.carried, gap.fatbins
                )
            })
            .collect();
        let mut message = message;
        let mut hints = Vec::new();
        let mut status = Status::Pass;
        if !said.is_empty() {
            message = format!(
                "{message}, but {}: those operations have no kernels for {} and fail with `no kernel image is available for execution on the device`",
                said.join("; "),
                self.gpu()
            );
            hints.push("torch.backends.cuda.preferred_linalg_library('cusolver') keeps linalg on cuSOLVER, which ships its own kernels; or use a build whose libraries carry this target".to_string());
            status = Status::Warn;
        }
        let runtime = self.matrix.runtime_row(build);
        if let Some(floor) = self
            .driver
            .and_then(|driver| below_pinned_runtime(self.matrix, build, driver))
        {
            message = format!("{message}; {}", floor.message);
            hints.push(floor.hint);
            status = status.max(floor.status);
        }
        let finding = match status {
            Status::Pass => Finding::pass(GPU_TORCH_ARCH, message),
            _ => Finding::warn(GPU_TORCH_ARCH, message).with_hint(hints.join("; or ")),
        };
        match (runtime.pin, runtime.row) {
            (Some(_), Some(row)) => self.facts(settled, finding.with_fact("runtime_row", row)),
            _ => self.facts(settled, finding),
        }
    }

    /// Only PTX reaches the GPU: a pass with a driver that can JIT it (at least the
    /// minimum of the runtime the build was made with), a failure with an older one, a
    /// warning when the driver is unknown.
    fn through_ptx(
        &self,
        settled: Settled<'_>,
        build: &TorchBuildRow,
        ptx: Target,
        label: &str,
    ) -> Finding {
        let runtime = self.matrix.runtime_row(build);
        let built_with = runtime.described(build.variant.cuda());
        let release_row = runtime.row;
        let minimum = release_row.and_then(CudaDriverRow::minimum);
        let needed = release_row.map_or_else(
            || "an unknown driver".to_string(),
            CudaDriverRow::minimum_text,
        );
        let facts = |finding: Finding| match release_row {
            Some(row) => self.facts(settled, finding).with_fact("release_row", row),
            None => self.facts(settled, finding),
        };
        let jit = format!(
            "{label} has no machine code for {}; its {ptx} PTX is JIT-compiled by the driver (slow first start)",
            self.gpu()
        );
        match (self.driver, minimum) {
            (Some(driver), Some(minimum)) if *driver >= minimum => facts(Finding::pass(
                GPU_TORCH_ARCH,
                format!(
                    "{jit}, which driver {driver} can do (it needs {needed}, the minimum of {built_with})"
                ),
            )),
            (Some(driver), Some(_)) => {
                let message = format!(
                    "{jit}, but driver {driver} is older than {needed}, the minimum of {built_with}, and cannot JIT its PTX (cudaErrorUnsupportedPtxVersion)"
                );
                let upgrade = format!("upgrade the driver to {needed} or newer");
                let hint = match self.hint(settled.platform) {
                    Some(alternative) => format!("{upgrade}; or {alternative}"),
                    None => upgrade,
                };
                facts(Finding::fail(GPU_TORCH_ARCH, message).with_hint(hint))
            }
            _ => {
                let message = format!(
                    "{jit}, which needs driver {needed} or newer (the minimum of {built_with})"
                );
                facts(Finding::warn(GPU_TORCH_ARCH, message).with_hint(format!(
                    "check with `nvidia-smi` that the driver is {needed} or newer"
                )))
            }
        }
    }
}

/// `cu126, cu128`: the variants of some builds.
fn variant_names(builds: &[&TorchBuildRow]) -> String {
    builds
        .iter()
        .map(|build| build.variant.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The verdict for a torch release without a variant: every build of it, on one GPU.
#[allow(clippy::too_many_arguments)]
fn every_build(
    matrix: &Matrix,
    platform: Platform,
    capability: ComputeCapability,
    torch: &TorchVersion,
    builds: &[&TorchBuildRow],
    driver: Option<&DriverVersion>,
    hint: impl Fn() -> Option<String>,
    base: impl Fn(Finding) -> Finding,
) -> Finding {
    let release = TorchRelease::of(torch);
    let sm = capability.sm();
    let gpu = gpu_label(matrix, capability);
    let (working, failing): (Vec<&TorchBuildRow>, Vec<&TorchBuildRow>) = builds
        .iter()
        .partition(|build| build_status(matrix, build, capability, driver) == Status::Pass);
    let names = |builds: &[&TorchBuildRow]| {
        builds
            .iter()
            .map(|build| build.variant.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rows: Vec<&TorchBuildRow> = builds.to_vec();
    // The builds whose rows are not verified, by status: ` (cu118, cu126: derived: not measured)`.
    let mut caveats = String::new();
    for status in [RowStatus::Secondary, RowStatus::Derived] {
        let resting: Vec<&TorchBuildRow> = builds
            .iter()
            .copied()
            .filter(|build| build.status == status)
            .collect();
        if !resting.is_empty() {
            caveats.push_str(&format!(
                " ({}: {}",
                names(&resting),
                status.caveat().trim_start_matches(" (")
            ));
        }
    }
    let base = |finding: Finding| {
        let mut finding = base(finding).with_fact("build_rows", &rows);
        finding.message.push_str(&caveats);
        finding
    };
    if failing.is_empty() {
        base(Finding::pass(
            GPU_TORCH_ARCH,
            format!(
                "every CUDA build of torch {release} for {platform} in {} ({}) runs on {gpu}",
                matrix.describe(),
                names(&working)
            ),
        ))
    } else if working.is_empty() {
        let message = format!(
            "{sm} is not compatible with any CUDA build of torch {release} ({}), so PyTorch would report `{sm} is not compatible with the current PyTorch installation`",
            names(&failing)
        );
        let finding = Finding::fail(GPU_TORCH_ARCH, message);
        base(match hint() {
            Some(hint) => finding.with_hint(hint),
            None => finding,
        })
    } else {
        let mut working = working;
        working.sort_by_key(|build| Reverse(build.variant.cuda()));
        let message = format!(
            "torch {torch} names no CUDA variant: its {} builds run on {gpu}, its {} builds do not",
            names(&working),
            names(&failing)
        );
        let suggestion = format!(
            "write the variant in the profile's [stack], e.g. torch = \"{}+{}\"",
            release_text(torch),
            working[0].variant
        );
        base(Finding::warn(GPU_TORCH_ARCH, message).with_hint(suggestion))
    }
}

/// What NVIDIA's forward compatibility (compat-facts §6c) offers when `driver` is below the
/// CUDA major family's floor, so `driver.cuda` fails. `datacenter`: `Some(true)` for a
/// data-center GPU, where the `cuda-compat-X-Y` package in the image is the documented way
/// to run CUDA `cuda` on an older branch; `Some(false)` for a GeForce or TITAN card, where
/// it does not apply; `None` when the kind of GPU is unknown (a bare compute capability).
/// Always [`Status::Info`], with everything in the message (info findings show no hint):
/// the image may or may not carry the package, and which older
/// branches each package supports is not in the matrix (compat-facts marks it UNVERIFIED),
/// so it never turns the failure into a pass. `None` when the driver meets the floor, the
/// family is unknown, or the matrix has no forward-compatibility table.
pub fn forward_compatibility(
    matrix: &Matrix,
    driver: &DriverVersion,
    cuda: CudaVersion,
    datacenter: Option<bool>,
) -> Option<Finding> {
    let family = matrix.cuda_family(cuda.major)?;
    let forward = matrix.forward_compatibility()?;
    if *driver >= family.linux_minimum_driver {
        return None;
    }
    let package = forward.package_for(cuda);
    let info = |message: String| Finding::new(DRIVER_FORWARD_COMPATIBILITY, Status::Info, message);
    let finding = match datacenter {
        Some(true) => info(format!(
            "forward compatibility applies on this data-center GPU: NVIDIA's {package}, installed in the image, lets CUDA {cuda} run on an older driver of a different major family; the failure above is for an image without it, and whether {package} supports branch R{} is not in the matrix ({})",
            driver.branch(),
            forward.documentation
        )),
        Some(false) => info(format!(
            "forward compatibility ({package}) does not apply: NVIDIA supports it only on {}",
            forward.supported_gpus
        )),
        None => info(format!(
            "forward compatibility ({package}) applies only on some GPUs ({}); if this GPU is one of them, pass --datacenter",
            forward.supported_gpus
        )),
    };
    Some(
        with_matrix(finding, matrix)
            .with_fact("driver", driver.to_string())
            .with_fact("cuda", cuda)
            .with_fact("datacenter_gpu", datacenter)
            .with_fact("package", package)
            .with_fact("forward_compatibility_row", forward),
    )
}

/// Checks a data-center driver branch against its end of life (compat-facts §6b) as of
/// `as_of` (`YYYY-MM-DD` or `YYYY-MM`, today's date from the caller). `None` when the
/// branch is not in the lifecycle table.
pub fn driver_branch_lifecycle(
    matrix: &Matrix,
    driver: &DriverVersion,
    as_of: &str,
) -> Option<Finding> {
    let row = matrix.branch_lifecycle(driver.branch())?;
    let month = as_of.get(..7).filter(|month| is_year_month(month));
    let designation = row
        .designation
        .as_deref()
        .map_or_else(String::new, |designation| format!(" ({designation})"));
    let ended = row.ended
        || row
            .end_of_life
            .as_deref()
            .is_some_and(|end| month.is_some_and(|month| month > end));
    let facts = |finding: Finding| {
        with_matrix(finding, matrix)
            .with_fact("driver", driver.to_string())
            .with_fact("as_of", as_of)
            .with_fact("lifecycle_row", row)
    };
    if ended {
        let when = row.end_of_life.as_deref().map_or_else(
            || "NVIDIA lists it as ended".to_string(),
            |end| format!("support ended {end}"),
        );
        let message = format!(
            "driver {driver} is on data-center branch R{}{designation}, which has reached end of life: {when}",
            row.branch
        );
        let mut supported: Vec<String> = matrix
            .branch_lifecycles()
            .filter(|other| !other.ended)
            .filter_map(|other| {
                let end = other.end_of_life.as_deref()?;
                month.is_none_or(|month| month <= end).then(|| {
                    let designation = other.designation.as_deref().unwrap_or("branch");
                    format!("R{} ({designation}, until {end})", other.branch)
                })
            })
            .collect();
        supported.sort();
        let hint = if supported.is_empty() {
            format!("move to a supported branch: {DATACENTER_DRIVERS}")
        } else {
            format!(
                "move to a supported branch: {}; see {DATACENTER_DRIVERS}",
                supported.join(", ")
            )
        };
        return Some(facts(
            Finding::warn(DRIVER_BRANCH_LIFECYCLE, message).with_hint(hint),
        ));
    }
    let until = row
        .end_of_life
        .as_deref()
        .map_or_else(String::new, |end| format!(" until {end}"));
    Some(facts(Finding::pass(
        DRIVER_BRANCH_LIFECYCLE,
        format!(
            "driver {driver} is on data-center branch R{}{designation}, supported{until}",
            row.branch
        ),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> &'static Matrix {
        Matrix::bundled()
    }

    fn capability(text: &str) -> ComputeCapability {
        text.parse().unwrap()
    }

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    fn driver(text: &str) -> DriverVersion {
        text.parse().unwrap()
    }

    fn torch(text: &str) -> TorchVersion {
        text.parse().unwrap()
    }

    fn driver_status(driver_text: &str, cuda_text: &str) -> Status {
        driver_vs_cuda(matrix(), &driver(driver_text), cuda(cuda_text), false).status
    }

    /// The bundled profiles (profiles/*.toml), in the order a caller would list them.
    fn bundled_profiles() -> Vec<(&'static str, TorchVersion, CudaVersion)> {
        [
            ("pytorch-2.7", "2.7.1+cu128", "12.8"),
            ("pytorch-2.8", "2.8.0+cu128", "12.8"),
            ("pytorch-2.8-cu126", "2.8.0+cu126", "12.6"),
            ("pytorch-2.9", "2.9.1+cu128", "12.8"),
            ("pytorch-2.10", "2.10.0+cu128", "12.8"),
            ("pytorch-2.11", "2.11.0+cu130", "13.0"),
        ]
        .into_iter()
        .map(|(name, torch_text, cuda_text)| (name, torch(torch_text), cuda(cuda_text)))
        .collect()
    }

    fn candidates<'a>(
        profiles: &'a [(&'static str, TorchVersion, CudaVersion)],
    ) -> Vec<TorchCandidate<'a>> {
        profiles
            .iter()
            .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
            .collect()
    }

    /// Forward compatibility shows only below the family floor, says which package on a
    /// data-center GPU, that it does not apply elsewhere, and never passes the driver.
    #[test]
    fn forward_compatibility_below_the_family_floor() {
        let host = driver("570.124.06");
        let check = |datacenter| {
            let finding = forward_compatibility(matrix(), &host, cuda("13.0"), datacenter).unwrap();
            assert_eq!(finding.status, Status::Info);
            assert!(
                finding.message.contains("cuda-compat-13-0"),
                "{}",
                finding.message
            );
            finding
        };
        let datacenter = check(Some(true));
        assert!(
            datacenter.message.contains("R570"),
            "{}",
            datacenter.message
        );
        assert!(datacenter.message.contains("forward-compatibility.html"));
        let consumer = check(Some(false));
        assert!(
            consumer.message.contains("does not apply"),
            "{}",
            consumer.message
        );
        assert!(
            consumer.message.contains("not GeForce"),
            "{}",
            consumer.message
        );
        let unknown = check(None);
        assert!(
            unknown.message.contains("--datacenter"),
            "{}",
            unknown.message
        );
        assert!(unknown.hint.is_none() && consumer.hint.is_none() && datacenter.hint.is_none());
        // At or above the floor (minor-version compatibility) it is beside the point.
        let dc = Some(true);
        assert!(forward_compatibility(matrix(), &driver("580"), cuda("13.2"), dc).is_none());
        assert!(forward_compatibility(matrix(), &host, cuda("12.8"), dc).is_none());
        // Before CUDA 11 there is no family row.
        assert!(forward_compatibility(matrix(), &driver("400"), cuda("10.2"), dc).is_none());
        // The driver verdict itself still fails.
        let verdict = driver_vs_cuda(matrix(), &host, cuda("13.0"), true);
        assert_eq!(verdict.status, Status::Fail);
    }

    #[test]
    fn driver_floors_on_both_sides() {
        // CUDA 12 family floor: 525.
        assert_eq!(driver_status("524.99", "12.8"), Status::Fail);
        assert_eq!(driver_status("525.60.13", "12.8"), Status::Warn);
        assert_eq!(driver_status("524.99", "12.0"), Status::Fail);
        assert_eq!(driver_status("525.60.13", "12.0"), Status::Pass);
        // CUDA 13 family floor: 580.
        assert_eq!(driver_status("579", "13.0"), Status::Fail);
        assert_eq!(driver_status("579.99.99", "13.2"), Status::Fail);
        assert_eq!(driver_status("580", "13.0"), Status::Warn);
        assert_eq!(driver_status("580", "13.2"), Status::Warn);
        assert_eq!(driver_status("580.65.06", "13.0"), Status::Pass);
        assert_eq!(driver_status("580.65.05", "13.0"), Status::Warn);
        // CUDA 11 family floor: 450.80.02.
        assert_eq!(driver_status("450.80.01", "11.8"), Status::Fail);
        assert_eq!(driver_status("450.80.02", "11.8"), Status::Warn);
        // CUDA 12.8's exact minimum.
        assert_eq!(driver_status("570.26", "12.8"), Status::Pass);
        assert_eq!(driver_status("570.25.99", "12.8"), Status::Warn);
        // 13.4 names only the branch R615.
        assert_eq!(driver_status("615.0.1", "13.4"), Status::Pass);
        assert_eq!(driver_status("610.43.02", "13.4"), Status::Warn);
        // Before CUDA 11 there is no minor-version compatibility.
        assert_eq!(driver_status("440.33", "10.2"), Status::Pass);
        assert_eq!(driver_status("440.32", "10.2"), Status::Fail);
    }

    #[test]
    fn driver_findings_explain_and_carry_facts() {
        let pass = driver_vs_cuda(matrix(), &driver("570.26"), cuda("12.8"), false);
        assert_eq!(pass.id, DRIVER_CUDA);
        assert!(pass.message.contains("570.26"));
        assert_eq!(pass.facts["driver"], "570.26");
        assert_eq!(pass.facts["cuda"], "12.8");
        assert_eq!(pass.facts["release_row"]["status"], "verified");
        assert!(
            pass.facts["release_row"]["source"]
                .as_str()
                .unwrap()
                .contains("NVIDIA")
        );
        assert_eq!(pass.facts["release_row"]["read"], "2026-11-29");
        assert_eq!(pass.facts["family_row"]["linux_minimum_driver"], "525");
        assert!(pass.hint.is_none());

        let warn = driver_vs_cuda(matrix(), &driver("550.54.15"), cuda("12.8"), false);
        assert!(
            warn.message.contains("minor-version compatibility"),
            "{}",
            warn.message
        );
        assert!(warn.message.contains("PTX JIT"), "{}", warn.message);
        let hint = warn.hint.unwrap();
        assert!(
            hint.contains("570.26") && hint.contains("https://docs.nvidia.com"),
            "{hint}"
        );

        let fail = driver_vs_cuda(matrix(), &driver("535.104.05"), cuda("13.0"), true);
        assert!(fail.message.contains("580"), "{}", fail.message);
        let hint = fail.hint.unwrap();
        assert!(hint.contains("cuda-compat-13-0"), "{hint}");
        assert!(hint.contains("580.65.06"), "{hint}");
        assert!(hint.contains("CUDA 12.2 or older"), "{hint}");
        let consumer = driver_vs_cuda(matrix(), &driver("535.104.05"), cuda("13.0"), false);
        assert!(consumer.hint.unwrap().contains("only on data-center GPUs"));
    }

    #[test]
    fn unknown_cuda_releases_warn_with_the_matrix_date() {
        let finding = driver_vs_cuda(matrix(), &driver("620.10"), cuda("13.5"), false);
        assert_eq!(finding.status, Status::Warn);
        assert!(
            finding
                .message
                .contains("not in the bundled matrix (dated 2026-12-04)"),
            "{}",
            finding.message
        );
        // Below the family floor it is a failure even so.
        let finding = driver_vs_cuda(matrix(), &driver("570.124.06"), cuda("13.5"), false);
        assert_eq!(finding.status, Status::Fail);
        // No family at all: CUDA 14.
        let finding = driver_vs_cuda(matrix(), &driver("700.1"), cuda("14.0"), false);
        assert_eq!(finding.status, Status::Warn);
        // 12.7 never existed.
        let finding = driver_vs_cuda(matrix(), &driver("565.57.01"), cuda("12.7"), false);
        assert_eq!(finding.status, Status::Warn);
    }

    /// UNVERIFIED rows in a user matrix are parsed and never drive a verdict.
    #[test]
    fn unverified_rows_drive_no_verdict() {
        let user = Matrix::parse(
            r#"
[[cuda_driver]]
cuda = "13.5"
update = 0
release = "13.5"
branch = 620
status = "UNVERIFIED"
source = "guess"

[[torch_build]]
torch = "2.6"
variant = "cu124"
targets = ["sm_120"]
status = "UNVERIFIED"
source = "guess"

[[cuda_targets]]
cuda = "13.0"
targets = ["sm_70"]
lowest = "sm_70"
highest = "sm_70"
status = "UNVERIFIED"
source = "guess"

[[gpu]]
name = "GeForce RTX 4090"
match = ["RTX 4090"]
capability = "12.0"
status = "UNVERIFIED"
source = "guess"

[[driver_branch]]
branch = 620
native_cuda = "13.5"
status = "UNVERIFIED"
source = "guess"
"#,
            "user.toml",
        )
        .unwrap();
        let merged = matrix().overlay(user);
        assert_eq!(merged.info().unverified_rows, 5);
        let release = driver_vs_cuda(&merged, &driver("620.10"), cuda("13.5"), false);
        assert_eq!(release.status, Status::Warn);
        assert!(release.message.contains("not in the compatibility matrix"));
        // The row the verdict would have rested on is named, not silently dropped.
        assert!(
            release
                .message
                .contains("its [[cuda_driver]] row 13.5 update 0 is marked UNVERIFIED"),
            "{}",
            release.message
        );
        // The replaced bundled rows are gone too: nothing usable is left for them.
        let build = gpu_vs_torch(
            &merged,
            Some(Platform::X86_64),
            capability("12.0"),
            &torch("2.6.0+cu124"),
            None,
            None,
            &[],
        );
        assert_eq!(build.status, Status::Warn, "{}", build.message);
        assert!(
            build
                .message
                .contains("its [[torch_build]] row 2.6+cu124 is marked UNVERIFIED"),
            "{}",
            build.message
        );
        let targets = cuda_vs_gpu(&merged, cuda("13.0"), capability("7.0"));
        assert_eq!(targets.status, Status::Warn);
        assert!(
            targets
                .message
                .contains("its [[cuda_targets]] row 13.0 is marked UNVERIFIED"),
            "{}",
            targets.message
        );
        assert!(model_capability_of(&merged, "RTX 4090").is_empty());
        assert_eq!(
            native_cuda_for_driver(&merged, &driver("620.10")),
            Some(cuda("13.4"))
        );
    }

    fn model_capability_of(matrix: &Matrix, name: &str) -> Vec<(String, ComputeCapability)> {
        super::super::models::model_capability(matrix, name)
    }

    #[test]
    fn native_cuda_per_driver() {
        let native = |text: &str| native_cuda_for_driver(matrix(), &driver(text));
        assert_eq!(native("550.54.15"), Some(cuda("12.4")));
        assert_eq!(native("570.124.06"), Some(cuda("12.8")));
        assert_eq!(native("580.95.05"), Some(cuda("13.0")));
        assert_eq!(native("595.45.04"), Some(cuda("13.2")));
        assert_eq!(native("615.20"), Some(cuda("13.4")));
        // Below its own release's minimum: the older release it meets.
        assert_eq!(native("570.10"), Some(cuda("12.6")));
        // R565 (not in §6a): the newest release whose minimum it meets.
        assert_eq!(native("565.57.01"), Some(cuda("12.6")));
        // R620 (UNVERIFIED 13.5): the newest release in the matrix it surely runs.
        assert_eq!(native("620.10"), Some(cuda("13.4")));
        assert_eq!(native("400.1"), None);
    }

    #[test]
    fn cuda_targets_per_gpu() {
        let check =
            |toolkit: &str, gpu: &str| cuda_vs_gpu(matrix(), cuda(toolkit), capability(gpu));
        let volta = check("13.0", "7.0");
        assert_eq!(
            (volta.id.as_str(), volta.status),
            (GPU_CUDA_ARCH, Status::Fail)
        );
        assert!(volta.message.contains("sm_70 (Volta"), "{}", volta.message);
        assert!(volta.message.contains("sm_75"), "{}", volta.message);
        assert!(
            volta
                .hint
                .as_deref()
                .unwrap()
                .contains("CUDA 12.9 or older")
        );
        assert_eq!(volta.facts["targets_row"]["status"], "verified");
        assert_eq!(check("13.0", "7.5").status, Status::Pass);
        assert_eq!(check("13.0", "7.2").status, Status::Fail);
        assert_eq!(check("12.0", "3.5").status, Status::Fail);
        assert_eq!(check("11.8", "3.5").status, Status::Pass);
        // Newer than every target: PTX only.
        let blackwell = check("12.6", "12.0");
        assert_eq!(blackwell.status, Status::Warn);
        assert!(blackwell.hint.unwrap().contains("CUDA 12.8 or newer"));
        // Same major, lower minor.
        let ada = check("11.7", "8.9");
        assert_eq!(ada.status, Status::Pass);
        assert!(ada.message.contains("sm_87"), "{}", ada.message);
        assert_eq!(check("12.8", "12.1").status, Status::Pass);
        // Rows that know only their bounds (11.1-11.3).
        assert_eq!(check("11.2", "8.6").status, Status::Pass);
        assert_eq!(check("11.2", "3.0").status, Status::Fail);
        assert_eq!(check("11.2", "9.0").status, Status::Warn);
        // Not in the matrix.
        assert_eq!(check("12.7", "8.9").status, Status::Warn);
    }

    #[test]
    fn rtx_5090_with_torch_2_6_cu124_fails_naming_a_profile_that_works() {
        let profiles = bundled_profiles();
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("12.0"),
            &torch("2.6.0+cu124"),
            Some(cuda("12.4")),
            Some(&driver("570.124.06")),
            &candidates(&profiles),
        );
        assert_eq!(
            (finding.id.as_str(), finding.status),
            (GPU_TORCH_ARCH, Status::Fail)
        );
        assert!(
            finding
                .message
                .starts_with("sm_120 is not compatible with the current PyTorch installation"),
            "{}",
            finding.message
        );
        let hint = finding.hint.unwrap();
        assert!(hint.starts_with("use profile `pytorch-2.7`"), "{hint}");
        assert!(
            hint.contains("torch==2.7.*") && hint.contains("whl/cu128"),
            "{hint}"
        );
        assert_eq!(finding.facts["build_row"]["torch"], "2.6");
        assert_eq!(finding.facts["build_row"]["status"], "verified");
    }

    #[test]
    fn gtx_1080_ti_with_a_cu128_build_fails_with_the_cu126_hint() {
        let profiles = bundled_profiles();
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("6.1"),
            &torch("2.8.0+cu128"),
            Some(cuda("12.8")),
            None,
            &candidates(&profiles),
        );
        assert_eq!(finding.status, Status::Fail);
        assert!(
            finding.message.starts_with("sm_61 is not compatible"),
            "{}",
            finding.message
        );
        let hint = finding.hint.unwrap();
        assert!(
            hint.starts_with("use profile `pytorch-2.8-cu126`"),
            "{hint}"
        );
        assert!(hint.contains("install torch 2.8.0+cu126"), "{hint}");
    }

    #[test]
    fn h100_with_torch_2_8_cu128_passes() {
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("9.0"),
            &torch("2.8.0+cu128"),
            Some(cuda("12.8")),
            Some(&driver("570.124.06")),
            &[],
        );
        assert_eq!(finding.status, Status::Pass, "{}", finding.message);
        assert!(finding.message.contains("sm_90"));
        assert!(finding.hint.is_none());
    }

    #[test]
    fn v100_with_cuda_13_fails() {
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("7.0"),
            &torch("2.11.0+cu130"),
            None,
            None,
            &[],
        );
        assert_eq!(finding.status, Status::Fail);
        assert_eq!(
            cuda_vs_gpu(matrix(), cuda("13.0"), capability("7.0")).status,
            Status::Fail
        );
    }

    #[test]
    fn missing_variants_are_inferred_from_cuda_and_said_so() {
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("6.1"),
            &torch("2.8.0"),
            Some(cuda("12.8")),
            None,
            &[],
        );
        assert_eq!(finding.status, Status::Fail);
        assert_eq!(finding.facts["variant_inferred_from_cuda"], "12.8");
        assert_eq!(finding.facts["variant"], "cu128");
        assert!(
            finding.message.contains("inferred from CUDA 12.8"),
            "{}",
            finding.message
        );

        // No variant and no CUDA: every build of the release is checked.
        let all = |gpu: &str, text: &str| {
            gpu_vs_torch(
                matrix(),
                Some(Platform::X86_64),
                capability(gpu),
                &torch(text),
                None,
                None,
                &[],
            )
        };
        assert_eq!(all("8.9", "2.8.0").status, Status::Pass);
        assert_eq!(all("12.0", "2.6.0").status, Status::Fail);
        let mixed = all("6.1", "2.8.0");
        assert_eq!(mixed.status, Status::Warn);
        assert!(mixed.message.contains("cu126"), "{}", mixed.message);
        assert!(mixed.hint.unwrap().contains("2.8.0+cu126"));
    }

    #[test]
    fn unknown_releases_and_variants_warn_without_guessing() {
        let check = |text: &str, toolkit: Option<&str>| {
            gpu_vs_torch(
                matrix(),
                Some(Platform::X86_64),
                capability("8.9"),
                &torch(text),
                toolkit.map(cuda),
                None,
                &[],
            )
        };
        let unknown_variant = check("2.8.0+cu130", None);
        assert_eq!(unknown_variant.status, Status::Warn);
        assert!(
            unknown_variant.message.contains("cu126, cu128, cu129"),
            "{}",
            unknown_variant.message
        );
        let inferred = check("2.10.0", Some("13.1"));
        assert_eq!(inferred.status, Status::Warn);
        assert!(inferred.message.contains("cu131"));
        let unknown_release = check("2.16.0+cu132", None);
        assert_eq!(unknown_release.status, Status::Warn);
        assert!(
            unknown_release
                .message
                .contains("not in the bundled matrix")
        );
        let vendor = check("2.10.0a0+b4e4ee81d3", Some("13.1"));
        assert_eq!(vendor.status, Status::Warn);
        assert!(vendor.hint.unwrap().contains("get_arch_list"));
        let cpu = check("2.8.0+cpu", None);
        assert_eq!(cpu.status, Status::Warn);
        assert!(cpu.message.contains("CPU-only"));
    }

    /// PTX reaches a GPU newer than every machine-code target only through the driver's JIT,
    /// which needs a driver at least the build's CUDA minimum. (No GPU of capability 13.0
    /// exists yet: this is the rule, not a product.)
    #[test]
    fn ptx_needs_a_new_enough_driver() {
        let future = capability("13.0");
        let build = torch("2.8.0+cu129");
        let check = |host: Option<&str>| {
            let host = host.map(driver);
            gpu_vs_torch(
                matrix(),
                Some(Platform::X86_64),
                future,
                &build,
                None,
                host.as_ref(),
                &[],
            )
        };
        assert_eq!(check(None).status, Status::Warn);
        assert_eq!(check(Some("575.51.03")).status, Status::Pass);
        let old = check(Some("570.26"));
        assert_eq!(old.status, Status::Fail);
        assert!(
            old.message.contains("cudaErrorUnsupportedPtxVersion"),
            "{}",
            old.message
        );
        assert!(old.facts.contains_key("release_row"));
        // cu128 of 2.8 has no PTX: nothing reaches 13.0.
        let none = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            future,
            &torch("2.8.0+cu128"),
            None,
            None,
            &[],
        );
        assert_eq!(none.status, Status::Fail);
    }

    /// The matrix verdict follows the one reach rule: `a` and `f` PTX JIT-compile only on
    /// their capability or family (the copy this replaced let them reach any later GPU).
    #[test]
    fn suffixed_ptx_reaches_only_its_capability_or_family() {
        let with_ptx = |ptx: &str| {
            let user = Matrix::parse(
                &format!(
                    "[[torch_build]]\ntorch = \"2.8\"\nvariant = \"cu129\"\ntargets = [\"sm_80\"]\nptx = \"{ptx}\"\nstatus = \"derived\"\nsource = \"test\"\n"
                ),
                "user.toml",
            )
            .unwrap();
            matrix().overlay(user)
        };
        let check = |matrix: &Matrix, gpu: &str| {
            gpu_vs_torch(
                matrix,
                Some(Platform::X86_64),
                capability(gpu),
                &torch("2.8.0+cu129"),
                None,
                None,
                &[],
            )
        };
        let specific = with_ptx("compute_90a");
        let on_hopper = check(&specific, "9.0");
        assert_eq!(on_hopper.status, Status::Warn, "{}", on_hopper.message);
        assert!(
            on_hopper.message.contains("compute_90a PTX"),
            "{}",
            on_hopper.message
        );
        let on_blackwell = check(&specific, "10.0");
        assert_eq!(
            on_blackwell.status,
            Status::Fail,
            "{}",
            on_blackwell.message
        );
        let family = with_ptx("compute_100f");
        let on_b300 = check(&family, "10.3");
        assert_eq!(on_b300.status, Status::Warn, "{}", on_b300.message);
        assert!(
            on_b300.message.contains("compute_100f PTX"),
            "{}",
            on_b300.message
        );
        let on_rtx_5090 = check(&family, "12.0");
        assert_eq!(on_rtx_5090.status, Status::Fail, "{}", on_rtx_5090.message);
        let portable = with_ptx("compute_80");
        let on_h100 = check(&portable, "9.0");
        assert_eq!(on_h100.status, Status::Warn, "{}", on_h100.message);
        assert!(
            on_h100.message.contains("compute_80 PTX"),
            "{}",
            on_h100.message
        );
    }

    #[test]
    fn mixed_hosts_get_one_finding_per_capability() {
        let profiles = bundled_profiles();
        let gpus = [capability("8.9"), capability("6.1"), capability("8.9")];
        let findings = gpus_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            &gpus,
            &torch("2.8.0+cu128"),
            Some(cuda("12.8")),
            None,
            &candidates(&profiles),
        );
        assert_eq!(findings.len(), 2);
        assert_eq!(findings[0].status, Status::Pass);
        assert_eq!(findings[0].facts["gpu_indices"], serde_json::json!([0, 2]));
        assert_eq!(findings[1].status, Status::Fail);
        assert_eq!(findings[1].facts["gpu_indices"], serde_json::json!([1]));
        // cu126 covers both sm_89 and sm_61.
        let hint = findings[1].hint.clone().unwrap();
        assert!(
            hint.starts_with("use profile `pytorch-2.8-cu126`"),
            "{hint}"
        );

        // RTX 5090 next to a GTX 1080 Ti: no build covers both.
        let gpus = [capability("12.0"), capability("6.1")];
        let findings = gpus_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            &gpus,
            &torch("2.8.0+cu126"),
            None,
            None,
            &candidates(&profiles),
        );
        assert_eq!(findings[0].status, Status::Fail);
        assert_eq!(findings[1].status, Status::Pass);
        let hint = findings[0].hint.clone().unwrap();
        assert!(
            hint.contains("no build in the matrix runs on every GPU"),
            "{hint}"
        );
        assert!(hint.starts_with("use profile `pytorch-2.7`"), "{hint}");
    }

    /// A candidate whose CUDA the driver cannot run is not suggested.
    #[test]
    fn candidates_respect_the_driver() {
        let profiles: Vec<(&'static str, TorchVersion, CudaVersion)> = vec![
            ("pytorch-2.11", torch("2.11.0+cu130"), cuda("13.0")),
            ("pytorch-2.10", torch("2.10.0+cu128"), cuda("12.8")),
        ];
        let finding = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("12.0"),
            &torch("2.6.0+cu126"),
            None,
            Some(&driver("570.124.06")),
            &candidates(&profiles),
        );
        let hint = finding.hint.unwrap();
        assert!(hint.starts_with("use profile `pytorch-2.10`"), "{hint}");
        let anything = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("12.0"),
            &torch("2.6.0+cu126"),
            None,
            None,
            &candidates(&profiles),
        );
        assert!(
            anything
                .hint
                .unwrap()
                .starts_with("use profile `pytorch-2.11`")
        );
    }

    #[test]
    fn branch_lifecycle_as_of_a_date() {
        let check =
            |text: &str, as_of: &str| driver_branch_lifecycle(matrix(), &driver(text), as_of);
        let supported = check("580.95.05", "2026-11-29").unwrap();
        assert_eq!(
            (supported.id.as_str(), supported.status),
            (DRIVER_BRANCH_LIFECYCLE, Status::Pass)
        );
        assert!(supported.message.contains("until 2028-06"));
        let ended = check("570.124.06", "2026-11-29").unwrap();
        assert_eq!(ended.status, Status::Warn);
        let hint = ended.hint.unwrap();
        assert!(hint.contains("R580 (LTSB, until 2028-06)"), "{hint}");
        assert!(!hint.contains("R535"), "{hint}");
        assert_eq!(
            check("570.124.06", "2026-02-10").unwrap().status,
            Status::Pass
        );
        assert_eq!(
            check("560.35.05", "2026-11-29").unwrap().status,
            Status::Warn
        );
        assert!(check("590.44.01", "2026-11-29").is_none());
        // An unreadable date only lets the dateless `ended` rows count.
        assert_eq!(check("570.124.06", "today").unwrap().status, Status::Pass);
    }

    fn architecture(driver_text: &str, gpu: &str) -> Finding {
        driver_vs_architecture(matrix(), &driver(driver_text), capability(gpu)).unwrap()
    }

    /// A driver branch older than the GPU's first CUDA release's minimum predates the GPU:
    /// a failure naming that branch (issue 32: R550 and an RTX 5090, R470 and an H100).
    #[test]
    fn a_driver_that_predates_the_gpu_fails_naming_the_first_branch() {
        let blackwell = architecture("550.54.15", "12.0");
        assert_eq!(blackwell.status, Status::Fail, "{}", blackwell.message);
        assert_eq!(blackwell.id, DRIVER_ARCHITECTURE);
        assert!(
            blackwell.message.contains("R550")
                && blackwell.message.contains("predates sm_120 (Blackwell")
                && blackwell.message.contains("12.8")
                && blackwell.message.contains("570.26")
                && blackwell.message.contains("branch R570"),
            "{}",
            blackwell.message
        );
        assert!(blackwell.hint.as_deref().unwrap().contains("R570"));
        let hopper = architecture("470.82.01", "9.0");
        assert_eq!(hopper.status, Status::Fail);
        assert!(
            hopper.message.contains("11.8") && hopper.message.contains("branch R520"),
            "{}",
            hopper.message
        );
        // Ada, also first in 11.8.
        assert_eq!(architecture("515.105.01", "8.9").status, Status::Fail);
        // At or above the first branch: the driver knows the GPU.
        let known = architecture("570.124.06", "12.0");
        assert_eq!(known.status, Status::Pass, "{}", known.message);
        assert_eq!(architecture("520.61.05", "9.0").status, Status::Pass);
        assert_eq!(architecture("535.104.05", "8.0").status, Status::Pass);
    }

    /// A capability NVIDIA's architecture matrix does not list is dated by the first toolkit
    /// that targets it: GB10's 12.1 and B300's 10.3 first appear in CUDA 12.9 (R575).
    #[test]
    fn capabilities_outside_the_architecture_matrix_use_the_first_targeting_toolkit() {
        let gb10 = architecture("570.124.06", "12.1");
        assert_eq!(gb10.status, Status::Fail, "{}", gb10.message);
        assert!(
            gb10.message.contains("12.9") && gb10.message.contains("R575"),
            "{}",
            gb10.message
        );
        assert_eq!(architecture("575.57.08", "10.3").status, Status::Pass);
        // Thor reports 11.0 only under the CUDA 13 driver (compat-facts §8): CUDA 12.8's
        // sm_101 is not its code, so 13.0 (R580) is the first release for it.
        assert_eq!(architecture("560.35.03", "11.0").status, Status::Fail);
        assert_eq!(architecture("570.26", "11.0").status, Status::Fail);
        assert_eq!(architecture("580.65.06", "11.0").status, Status::Pass);
    }

    /// A branch newer than an architecture's last one dropped it: Volta, Pascal and Maxwell
    /// end with R580, Kepler with R470.
    #[test]
    fn a_driver_past_the_architectures_last_branch_fails() {
        let volta = architecture("590.44.01", "7.0");
        assert_eq!(volta.status, Status::Fail, "{}", volta.message);
        assert!(
            volta
                .message
                .contains("last driver branch for Volta is R580"),
            "{}",
            volta.message
        );
        assert_eq!(architecture("580.95.05", "7.0").status, Status::Pass);
        assert_eq!(architecture("535.104.05", "3.7").status, Status::Fail);
        // Kepler's first toolkit (6.0) predates every driver row: R470 came after it.
        assert_eq!(architecture("470.82.01", "3.7").status, Status::Pass);
        assert!(driver_vs_architecture(matrix(), &driver("390.10"), capability("3.7")).is_none());
        assert_eq!(architecture("590.44.01", "6.1").status, Status::Fail);
    }

    /// Verdicts resting on derived or secondary rows say so in the text line.
    #[test]
    fn verdicts_say_what_their_rows_rest_on() {
        let x86 = Some(Platform::X86_64);
        let check = |text: &str| {
            gpu_vs_torch(
                matrix(),
                x86,
                capability("9.0"),
                &torch(text),
                None,
                None,
                &[],
            )
        };
        let derived = check("2.6.0+cu118");
        assert_eq!(derived.status, Status::Pass);
        assert!(
            derived.message.ends_with(" (derived: not measured)"),
            "{}",
            derived.message
        );
        let secondary = check("2.7.1+cu128");
        assert!(
            secondary.message.contains("(secondary: "),
            "{}",
            secondary.message
        );
        let measured = check("2.8.0+cu128");
        assert!(
            !measured.message.contains("derived") && !measured.message.contains("secondary"),
            "{}",
            measured.message
        );
        assert!(
            measured.message.contains("(x86_64 wheel)"),
            "{}",
            measured.message
        );
        // A release without a variant names the builds whose rows are not measured.
        let every = check("2.6.0");
        assert!(
            every
                .message
                .contains("cu118, cu126: derived: not measured"),
            "{}",
            every.message
        );
        // The driver's release row (13.3 is read through quotations) and a compile-target row.
        let quoted = driver_vs_cuda(matrix(), &driver("610.43.02"), cuda("13.3"), false);
        assert!(
            quoted.message.contains("(secondary: "),
            "{}",
            quoted.message
        );
        let targets = cuda_vs_gpu(matrix(), cuda("11.2"), capability("8.6"));
        assert!(
            targets.message.contains("(secondary: "),
            "{}",
            targets.message
        );
        assert!(
            !cuda_vs_gpu(matrix(), cuda("12.8"), capability("8.6"))
                .message
                .contains("secondary")
        );
    }

    /// The aarch64 wheels are judged by their own rows (issue 32): 2.15's has sm_110 for
    /// Thor and nothing for a T4's 7.5; up to 2.10 PyPI's aarch64 wheel is a CPU build.
    #[test]
    fn aarch64_hosts_are_judged_by_the_aarch64_wheels() {
        let arm = Some(Platform::Aarch64);
        let check = |platform, gpu: &str, text: &str| {
            gpu_vs_torch(
                matrix(),
                platform,
                capability(gpu),
                &torch(text),
                None,
                None,
                &[],
            )
        };
        // Thor exists only on aarch64 hosts: its wheel is the aarch64 one, whatever was said.
        for platform in [arm, Some(Platform::X86_64), None] {
            let thor = check(platform, "11.0", "2.15.0+cu132");
            assert_eq!(thor.status, Status::Pass, "{}", thor.message);
            assert!(
                thor.message.contains("sm_110 kernels") && thor.message.contains("(aarch64 wheel)"),
                "{}",
                thor.message
            );
        }
        let t4 = check(arm, "7.5", "2.15.0+cu132");
        assert_eq!(t4.status, Status::Fail, "{}", t4.message);
        // No aarch64 build runs on 7.5: the hint says so instead of naming none.
        assert!(
            t4.hint.as_deref().is_some_and(
                |hint| hint.starts_with("no aarch64 torch build in the bundled matrix")
            ),
            "{:?}",
            t4.hint
        );
        assert!(
            t4.message.contains("sm_80 sm_90 sm_100 sm_110 sm_120"),
            "{}",
            t4.message
        );
        // On x86_64 the T4 has torch's sm_75 kernels (its linalg library is what lacks them).
        assert_eq!(
            check(Some(Platform::X86_64), "7.5", "2.15.0+cu132").status,
            Status::Warn
        );
        // A build whose libraries were not measured (2.6's PyPI cu124) has no gap to say.
        assert_eq!(
            check(Some(Platform::X86_64), "7.5", "2.6.0+cu124").status,
            Status::Pass
        );
        // An A10G's 8.6 runs the aarch64 wheel's sm_80 code; an H100 its sm_90.
        assert_eq!(check(arm, "8.6", "2.11.0+cu130").status, Status::Pass);
        assert_eq!(check(arm, "9.0", "2.11.0").status, Status::Pass);
        // Up to 2.10, `pip install torch` on aarch64 gets a CPU build.
        let cpu = check(arm, "9.0", "2.10.0");
        assert_eq!(cpu.status, Status::Warn, "{}", cpu.message);
        assert!(cpu.message.contains("CPU-only build"), "{}", cpu.message);
        // A CUDA variant there without an aarch64 row: its list is unknown, not the x86 one.
        let unknown = check(arm, "9.0", "2.8.0+cu129");
        assert_eq!(unknown.status, Status::Warn, "{}", unknown.message);
        assert!(
            unknown
                .message
                .contains("torch 2.8 has a cu129 build, but its arch list is not in"),
            "{}",
            unknown.message
        );
        let unmeasured = check(arm, "9.0", "2.7.1");
        assert_eq!(unmeasured.status, Status::Warn);
        assert!(
            unmeasured.message.contains("has no aarch64 build"),
            "{}",
            unmeasured.message
        );
        // The build script's lists (2.8-2.10) are judged, and say they were read, not measured.
        let read = check(arm, "9.0", "2.9.1+cu128");
        assert_eq!(read.status, Status::Pass, "{}", read.message);
        assert!(
            read.message.ends_with(
                " (verified (file): read in the build script, not measured from a wheel)"
            ),
            "{}",
            read.message
        );
        // An unknown platform is said, not taken for x86_64.
        let blind = check(None, "9.0", "2.8.0+cu128");
        assert_eq!(blind.status, Status::Warn);
        assert!(
            blind.message.contains("platform is unknown"),
            "{}",
            blind.message
        );
    }

    /// Jetson GPUs under L4T run neither PyPI wheel: no bundled row covers them, and the
    /// hint names NVIDIA's Jetson builds.
    #[test]
    fn jetson_gpus_say_no_bundled_row_covers_them() {
        for gpu in ["8.7", "7.2", "6.2", "5.3"] {
            for platform in [Some(Platform::Aarch64), Some(Platform::X86_64)] {
                let finding = gpu_vs_torch(
                    matrix(),
                    platform,
                    capability(gpu),
                    &torch("2.8.0+cu128"),
                    None,
                    None,
                    &[],
                );
                assert_eq!(finding.status, Status::Warn, "{gpu}: {}", finding.message);
                assert!(
                    finding.message.contains("is a Jetson GPU")
                        && finding.message.contains("no bundled row covers"),
                    "{}",
                    finding.message
                );
                assert!(finding.hint.unwrap().contains("PyTorch for Jetson"));
            }
        }
        assert_eq!(matrix().gpu_host(capability("8.7")), Some(GpuHost::Jetson));
        assert_eq!(
            matrix().gpu_host(capability("12.1")),
            Some(GpuHost::Aarch64)
        );
        assert_eq!(matrix().gpu_host(capability("9.0")), None);
    }

    #[test]
    fn titan_x_pascal_is_6_1() {
        assert_eq!(
            model_capability_of(matrix(), "NVIDIA TITAN X (Pascal)"),
            vec![("NVIDIA TITAN X (Pascal)".to_string(), capability("6.1"))]
        );
        assert_eq!(
            model_capability_of(matrix(), "NVIDIA GeForce GTX TITAN X"),
            vec![("GeForce GTX TITAN X".to_string(), capability("5.2"))]
        );
    }

    /// Issue 32: a torch build's driver floor is the runtime its wheel pins (2.15.0 pins
    /// cuda-toolkit==13.2.2, CUDA 13.2 Update 2), not the variant's GA release.
    #[test]
    fn the_driver_floor_of_a_build_is_its_pinned_runtime() {
        use crate::compat::matrix::toolkit_release;
        assert_eq!(toolkit_release("13.2.2"), Some((cuda("13.2"), 2)));
        assert_eq!(toolkit_release("13.0.3"), Some((cuda("13.0"), 3)));
        assert_eq!(
            toolkit_release("13.4.1"),
            None,
            "13.4.1 is 13.4's GA, a build number"
        );
        assert_eq!(toolkit_release("13.2"), None);
        assert_eq!(toolkit_release("13.2.x"), None);

        let build = |release: &str, variant: &str, platform: Platform| {
            matrix()
                .torch_build(
                    release.parse().unwrap(),
                    &variant.parse().unwrap(),
                    platform,
                )
                .unwrap()
        };
        let pinned = matrix().runtime_row(build("2.15", "cu132", Platform::X86_64));
        assert_eq!(pinned.row.unwrap().release, "13.2 Update 2");
        assert_eq!((pinned.pin, pinned.exact), (Some("13.2.2"), true));
        assert_eq!(
            pinned.described(cuda("13.2")),
            "CUDA 13.2 Update 2 (the runtime the wheel pins, cuda-toolkit==13.2.2)"
        );
        // 13.0.3's own row (secondary: the runfile's name) is the floor of 2.14's wheel.
        let later = matrix().runtime_row(build("2.14", "cu130", Platform::Aarch64));
        let row = later.row.unwrap();
        assert_eq!(row.release, "13.0 Update 3");
        assert_eq!(row.status, RowStatus::Secondary);
        assert_eq!(row.linux_minimum_driver, Some(driver("580.126.20")));
        assert!(later.exact);
        assert!(
            later
                .described(cuda("13.0"))
                .contains("cuda-toolkit==13.0.3")
        );
        // A 12.x wheel pins component versions: its floor stays the GA release's.
        let unpinned = matrix().runtime_row(build("2.8", "cu128", Platform::X86_64));
        assert_eq!(unpinned.pin, None);
        assert_eq!(unpinned.row, matrix().cuda_release(cuda("12.8")));

        let verdict = |driver_text: &str| {
            gpu_vs_torch(
                matrix(),
                Some(Platform::X86_64),
                capability("9.0"),
                &torch("2.15.0+cu132"),
                None,
                Some(&driver(driver_text)),
                &[],
            )
        };
        // Above 13.2 GA's 595.45.04, below 13.2 Update 2's 595.71.05: CUDA 13.2's minimum
        // is met, the pinned runtime's is not.
        assert_eq!(driver_status("595.58.03", "13.2"), Status::Pass);
        let between = verdict("595.58.03");
        assert_eq!(between.status, Status::Warn, "{}", between.message);
        for words in [
            "CUDA 13.2 Update 2",
            "cuda-toolkit==13.2.2",
            "595.71.05",
            "minor-version compatibility",
            "meets CUDA 13.2's minimum 595.45.04",
        ] {
            assert!(
                between.message.contains(words),
                "{words}: {}",
                between.message
            );
        }
        assert_eq!(
            between.hint.as_deref(),
            Some("upgrade the driver to 595.71.05 or newer")
        );
        let met = verdict("595.71.05");
        assert_eq!(met.status, Status::Pass, "{}", met.message);
        assert!(met.facts.iter().any(|(name, _)| name == "runtime_row"));
        // Below CUDA 13.2's own minimum `driver.cuda` says so; the arch verdict does not
        // repeat it.
        assert_eq!(driver_status("590.48.01", "13.2"), Status::Warn);
        let old = verdict("590.48.01");
        assert_eq!(old.status, Status::Pass, "{}", old.message);
        assert!(!old.message.contains("cuda-toolkit"), "{}", old.message);
        // An unpinned build is judged on its arch list alone, as before.
        let unpinned = gpu_vs_torch(
            matrix(),
            Some(Platform::X86_64),
            capability("9.0"),
            &torch("2.8.0+cu128"),
            None,
            Some(&driver("570.26")),
            &[],
        );
        assert_eq!(unpinned.status, Status::Pass, "{}", unpinned.message);
    }
}
