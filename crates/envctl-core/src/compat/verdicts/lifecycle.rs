//! `driver.forward-compatibility` and `driver.branch-lifecycle`: what NVIDIA's forward
//! compatibility offers below a CUDA family's floor, and a data-center driver branch against
//! its end of life.

use super::{
    DATACENTER_DRIVERS, DRIVER_BRANCH_LIFECYCLE, DRIVER_FORWARD_COMPATIBILITY, with_matrix,
};
use crate::checks::{Finding, Status};
use crate::compat::matrix::Matrix;
use crate::compat::values::is_year_month;
use crate::compat::version::DriverVersion;
use crate::profile::model::CudaVersion;

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
