//! `driver.cuda`: whether a driver runs code built with a CUDA release, by the release's
//! minimum and its family's minor-version compatibility, and the floor a torch wheel's
//! pinned CUDA runtime sets above its release's.

use super::{
    DRIVER_CUDA, MINOR_VERSION_DOCUMENTATION, RELEASE_NOTES, USER_MATRIX, dropped_rows, with_matrix,
};
use crate::checks::Finding;
use crate::compat::matrix::{CudaDriverRow, CudaFamilyRow, Matrix};
use crate::compat::values::{CudaVariant, Platform, TorchRelease};
use crate::compat::version::DriverVersion;
use crate::profile::model::{CudaVersion, TorchVersion};

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
    let query = DriverCudaQuery {
        matrix,
        driver,
        cuda,
        datacenter,
        release: matrix.cuda_release(cuda),
        family: matrix.cuda_family(cuda.major),
    };
    match query.release.map(|release| (release, release.minimum())) {
        Some((release, Some(minimum))) if *driver >= minimum => {
            query.meets_release(release, &minimum)
        }
        Some((release, Some(minimum))) => query.below_release(release, &minimum, pinned),
        // A row without a minimum says no more than no row.
        _ => query.unknown_release(),
    }
}

/// One `driver.cuda` question: the driver, the CUDA release and what the matrix knows of
/// the release and its family.
struct DriverCudaQuery<'q> {
    matrix: &'q Matrix,
    driver: &'q DriverVersion,
    cuda: CudaVersion,
    /// The GPU is a data-center part (the forward-compatibility package works on it).
    datacenter: bool,
    release: Option<&'q CudaDriverRow>,
    family: Option<&'q CudaFamilyRow>,
}

impl DriverCudaQuery<'_> {
    /// `finding` with the question and the rows that answered it as facts.
    fn facts(&self, finding: Finding) -> Finding {
        let mut finding = with_matrix(finding, self.matrix)
            .with_fact("driver", self.driver.to_string())
            .with_fact("cuda", self.cuda)
            .with_fact("datacenter_gpu", self.datacenter);
        if let Some(release) = self.release {
            finding = finding.with_fact("release_row", release);
        }
        if let Some(family) = self.family {
            finding = finding.with_fact("family_row", family);
        }
        finding
    }

    /// [`Self::facts`], with the caveat of the `release` row's status on the message.
    fn release_facts(&self, release: &CudaDriverRow, finding: Finding) -> Finding {
        let mut finding = self.facts(finding);
        finding.message.push_str(release.status.caveat());
        finding
    }

    /// Whether the driver is below the family's minor-version floor.
    fn below_family(&self) -> bool {
        self.family
            .is_some_and(|family| *self.driver < family.linux_minimum_driver)
    }

    /// Pass: the driver meets the release's `minimum`.
    fn meets_release(&self, release: &CudaDriverRow, minimum: &DriverVersion) -> Finding {
        let (driver, cuda) = (self.driver, self.cuda);
        let message = match &release.linux_minimum_driver {
            Some(stated) => format!("driver {driver} meets CUDA {cuda}'s minimum driver {stated}"),
            None => format!(
                "driver {driver} is on branch R{} or newer, which CUDA {cuda} needs",
                minimum.branch()
            ),
        };
        self.release_facts(release, Finding::pass(DRIVER_CUDA, message))
    }

    /// The driver is below the release's `minimum`: a warning while the family's
    /// minor-version compatibility holds, else a failure. A torch wheel's `pinned` runtime
    /// whose floor is above the release's is named, and is what the hint upgrades to.
    fn below_release(
        &self,
        release: &CudaDriverRow,
        minimum: &DriverVersion,
        pinned: Option<&CudaDriverRow>,
    ) -> Finding {
        let (driver, cuda) = (self.driver, self.cuda);
        let needed = release.minimum_text();
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
        let facts = |finding: Finding| {
            let finding = self.release_facts(release, finding);
            match pinned {
                Some(row) => finding.with_fact("runtime_row", row),
                None => finding,
            }
        };
        if let Some(family) = self.family.filter(|_| !self.below_family()) {
            let message = format!(
                "driver {driver} is older than CUDA {cuda}'s minimum {needed}: CUDA {cuda} runs only through CUDA {}.x minor-version compatibility (driver {} or newer), which loses PTX JIT of code built by CUDA {cuda} (cudaErrorUnsupportedPtxVersion) and features that need a newer driver{pinned_text}",
                cuda.major, family.linux_minimum_driver
            );
            let hint = format!(
                "upgrade the driver to {upgrade_to} or newer for full CUDA {cuda} support; see {MINOR_VERSION_DOCUMENTATION}"
            );
            return facts(Finding::warn(DRIVER_CUDA, message).with_hint(hint));
        }
        let message = match self.family {
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
        let hint = too_old_hint(self.matrix, driver, cuda, &upgrade_to, self.datacenter);
        facts(Finding::fail(DRIVER_CUDA, message).with_hint(hint))
    }

    /// The release is not in the matrix: judged by its family's minor-version floor where
    /// the matrix knows the family, else only said to be unknown.
    fn unknown_release(&self) -> Finding {
        let (matrix, driver, cuda) = (self.matrix, self.driver, self.cuda);
        let dropped = dropped_rows(&matrix.cuda_driver, &format!("{cuda} update 0"));
        match self.family {
            Some(family) if self.below_family() => {
                let floor = family.linux_minimum_driver.to_string();
                let message = format!(
                    "driver {driver} is too old for CUDA {cuda}: CUDA {cuda} is not in {}{dropped}, but every CUDA {}.x release needs driver {floor} or newer (minor-version compatibility)",
                    matrix.describe(),
                    cuda.major
                );
                let hint = too_old_hint(matrix, driver, cuda, &floor, self.datacenter);
                self.facts(Finding::fail(DRIVER_CUDA, message).with_hint(hint))
            }
            Some(family) => {
                let message = format!(
                    "CUDA {cuda} is not in {}{dropped}, so its minimum driver is unknown; driver {driver} meets the CUDA {}.x minor-version floor {}, so CUDA {cuda} code runs, at worst without PTX JIT of newer PTX and newer features",
                    matrix.describe(),
                    cuda.major,
                    family.linux_minimum_driver
                );
                self.facts(
                    Finding::warn(DRIVER_CUDA, message).with_hint(unknown_release_hint(cuda)),
                )
            }
            None => {
                let message = format!(
                    "CUDA {cuda} is not in {}{dropped}: its minimum driver is unknown",
                    matrix.describe()
                );
                self.facts(
                    Finding::warn(DRIVER_CUDA, message).with_hint(unknown_release_hint(cuda)),
                )
            }
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
