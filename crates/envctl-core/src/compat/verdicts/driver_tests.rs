//! Unit tests of the driver verdicts: `driver.cuda` (with forward compatibility and the
//! pinned runtime's floor), UNVERIFIED rows, the toolkits' targets, the branch lifecycle and
//! the architecture floors.

use super::{
    DRIVER_ARCHITECTURE, DRIVER_BRANCH_LIFECYCLE, DRIVER_CUDA, GPU_CUDA_ARCH, cuda_vs_gpu,
    driver_branch_lifecycle, driver_vs_architecture, driver_vs_cuda, forward_compatibility,
    gpu_vs_torch, native_cuda_for_driver,
};
use crate::checks::{Finding, Status};
use crate::compat::matrix::Matrix;
use crate::compat::test_values::{capability, cuda, driver, matrix, torch};
use crate::compat::values::{Platform, RowStatus};
use crate::compat::version::ComputeCapability;

fn driver_status(driver_text: &str, cuda_text: &str) -> Status {
    driver_vs_cuda(matrix(), &driver(driver_text), cuda(cuda_text), false).status
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

/// A user matrix whose rows are all UNVERIFIED, each replacing a bundled row by its key.
const UNVERIFIED_ROWS: &str = r#"
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
"#;

/// UNVERIFIED rows in a user matrix are parsed and never drive a verdict.
#[test]
fn unverified_rows_drive_no_verdict() {
    let user = Matrix::parse(UNVERIFIED_ROWS, "user.toml").unwrap();
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
    crate::compat::models::model_capability(matrix, name)
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
    let check = |toolkit: &str, gpu: &str| cuda_vs_gpu(matrix(), cuda(toolkit), capability(gpu));
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
fn branch_lifecycle_as_of_a_date() {
    let check = |text: &str, as_of: &str| driver_branch_lifecycle(matrix(), &driver(text), as_of);
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
}

/// Issue 32: where the driver meets the release's minimum but not the pinned runtime's,
/// the torch verdict names the pinned runtime and asks for its floor.
#[test]
fn a_driver_below_the_pinned_runtime_is_told_its_floor() {
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
