//! `driver.architecture` and `driver.gpu-model`: a driver branch against the GPU's
//! architecture (older than the GPU, or past the branch that dropped it) and against the
//! GPU model's own floors (per SKU, and with MIG enabled).

use super::toolkit::{first_cuda_for, gpu_label};
use super::{
    DATACENTER_DRIVERS, DRIVER_ARCHITECTURE, DRIVER_GPU_MODEL, RELEASE_NOTES, with_matrix,
};
use crate::checks::Finding;
use crate::compat::matrix::{ArchitectureRow, GpuDriverFloorRow, Matrix};
use crate::compat::values::RowStatus;
use crate::compat::version::{ComputeCapability, DriverVersion};
use crate::profile::model::CudaVersion;

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
    if let Some(dropped) =
        architecture.and_then(|architecture| past_last_branch(driver, architecture, &gpu))
    {
        return Some(facts(dropped));
    }
    let (first, status, evidence) = first_cuda_for(matrix, capability)?;
    let Some((release, minimum)) = matrix
        .cuda_release(first)
        .and_then(|release| Some((release, release.minimum()?)))
    else {
        return older_than_every_release_row(matrix, driver, first, status, &gpu).map(facts);
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

/// The driver's branch is past the last one NVIDIA ships for the GPU's `architecture`
/// (R590 for Volta, whose last is R580): it does not bring the GPU up.
fn past_last_branch(
    driver: &DriverVersion,
    architecture: &ArchitectureRow,
    gpu: &str,
) -> Option<Finding> {
    let branch = driver.branch();
    let last = architecture
        .last_driver_branch
        .filter(|last| branch > *last)?;
    let message = format!(
        "driver {driver} (R{branch}) does not support {gpu}: NVIDIA's last driver branch for {} is R{last}{}",
        architecture.name,
        architecture.status.caveat()
    );
    let hint = format!(
        "use an R{last} driver, the last branch that supports {}; see {DATACENTER_DRIVERS}",
        architecture.name
    );
    Some(Finding::fail(DRIVER_ARCHITECTURE, message).with_hint(hint))
}

/// The first release for the GPU (`first`) is older than every driver row (Volta's 9.0,
/// Kepler's 6.0): a driver at least the oldest row's minimum came after it, so it knows
/// the GPU; below that, nothing is said.
fn older_than_every_release_row(
    matrix: &Matrix,
    driver: &DriverVersion,
    first: CudaVersion,
    status: RowStatus,
    gpu: &str,
) -> Option<Finding> {
    let oldest = matrix
        .cuda_releases()
        .into_iter()
        .find(|row| row.cuda > first)?;
    let oldest_minimum = oldest.minimum()?;
    if *driver < oldest_minimum {
        return None;
    }
    Some(Finding::pass(
        DRIVER_ARCHITECTURE,
        format!(
            "driver {driver} (R{}) knows {gpu}: it is newer than CUDA {}'s minimum {oldest_minimum}, itself after CUDA {first}, the first release for it{}",
            driver.branch(),
            oldest.cuda,
            status.caveat()
        ),
    ))
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
    if let Some(row) = own.filter(|row| below(row)) {
        let message = format!(
            "driver {driver} is older than {}, the lowest driver NVIDIA supports for {gpu} (a floor of this model, above its architecture's){}",
            row.linux_minimum_driver,
            row.status.caveat()
        );
        return Some(facts(Finding::fail(DRIVER_GPU_MODEL, message).with_hint(
            format!(
                "upgrade the driver to {} or newer",
                row.linux_minimum_driver
            ),
        )));
    }
    if let Some(row) = with_mig.filter(|row| below(row)) {
        return Some(facts(below_mig_floor(driver, row, &gpu, mig)));
    }
    let met = floors_met(own, with_mig, mig);
    Some(facts(Finding::pass(
        DRIVER_GPU_MODEL,
        format!("driver {driver} meets {gpu}'s {}", met.join(" and ")),
    )))
}

/// The driver is below the MIG floor `row` of `gpu`: a failure with MIG on, a pass saying
/// the floor with MIG off, a warning when whether MIG is on is unknown.
fn below_mig_floor(
    driver: &DriverVersion,
    row: &GpuDriverFloorRow,
    gpu: &str,
    mig: Option<bool>,
) -> Finding {
    let floor = &row.linux_minimum_driver;
    let caveat = row.status.caveat();
    let upgrade = format!("upgrade the driver to {floor} or newer");
    match mig {
        Some(true) => Finding::fail(
            DRIVER_GPU_MODEL,
            format!(
                "MIG is enabled on {gpu}, and driver {driver} is older than {floor}, the lowest driver NVIDIA's MIG user guide supports for MIG on it{caveat}"
            ),
        )
        .with_hint(upgrade),
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
        .with_hint(upgrade),
    }
}

/// The floors a driver meets, in words: the model's own floor, and its MIG floor with
/// what MIG's state (`mig`) makes of it.
fn floors_met(
    own: Option<&GpuDriverFloorRow>,
    with_mig: Option<&GpuDriverFloorRow>,
    mig: Option<bool>,
) -> Vec<String> {
    [own, with_mig]
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
        .collect()
}
