//! The compatibility matrix as data: the bundled matrix (embedded at build time, parsed
//! once), user overlays, `doctor --matrix-info` numbers, and the lookups the verdicts use.
//! Lookups skip rows whose status is `UNVERIFIED`. The row types of `matrix.toml`, one per
//! table, are in `rows` and re-exported here.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::Serialize;

use super::values::{CudaVariant, Platform, RowStatus, Target, TorchRelease};
use super::version::ComputeCapability;
use crate::profile::model::CudaVersion;

/// The text of the bundled matrix.
pub const BUNDLED_TEXT: &str = include_str!("matrix.toml");
/// How the bundled matrix is named in messages: it is in the binary, not a file on disk
/// (`crates/envctl-core/src/compat/matrix.toml` in envctl's source), like `<bundled>/NAME.toml` profiles.
pub const BUNDLED_PATH: &str = "<bundled>/matrix.toml";

mod rows;

pub use rows::{
    ArchitectureRow, BranchLifecycleRow, CudaDriverRow, CudaFamilyRow, CudaTargetsRow,
    DriverBranchRow, ForwardCompatibility, GpuDriverFloorRow, GpuHost, GpuRow, LateVariant,
    LibraryGap, MatrixMeta, Row, TargetRenameRow, TorchBuildRow, TorchReleaseRow,
};

/// The `[[cuda_driver]]` row a torch build's driver floor comes from, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeRow<'m> {
    pub row: Option<&'m CudaDriverRow>,
    /// The pin it rests on (`13.2.2`), when the wheel's pin was used.
    pub pin: Option<&'m str>,
    /// Whether `row` is the pinned release itself (not an earlier update standing in).
    pub exact: bool,
}

impl RuntimeRow<'_> {
    /// What a message says of the floor: `CUDA 13.2 Update 2 (the runtime the wheel pins,
    /// cuda-toolkit==13.2.2)`, or `CUDA 13.2`'s GA release.
    pub fn described(&self, cuda: CudaVersion) -> String {
        match (self.row, self.pin) {
            (Some(row), Some(pin)) if self.exact => format!(
                "CUDA {} (the runtime the wheel pins, cuda-toolkit=={pin})",
                row.release
            ),
            (Some(row), Some(pin)) => format!(
                "CUDA {} (the wheel pins cuda-toolkit=={pin}, whose own row is not in the matrix; its floor is at least this one)",
                row.release
            ),
            _ => format!("CUDA {cuda}"),
        }
    }
}

/// The release a `cuda-toolkit` pin names: `13.2.2` is CUDA 13.2 Update 2 (NVIDIA's
/// archive names its notes `13.2.2`). From 13.4 the third number is a build number
/// (13.4.1 is 13.4's GA), so those pins name no update here.
pub fn toolkit_release(pin: &str) -> Option<(CudaVersion, u32)> {
    let mut parts = pin.split('.');
    let (major, minor, third) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let cuda: CudaVersion = format!("{major}.{minor}").parse().ok()?;
    let update: u32 = third.parse().ok()?;
    let numbered_by_update = major
        .parse::<u32>()
        .ok()
        .zip(minor.parse::<u32>().ok())
        .is_some_and(|version| version < (13, 4));
    numbered_by_update.then_some((cuda, update))
}

/// The whole matrix: every table, plus where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Matrix {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<MatrixMeta>,
    pub cuda_driver: Vec<CudaDriverRow>,
    pub cuda_family: Vec<CudaFamilyRow>,
    pub cuda_targets: Vec<CudaTargetsRow>,
    pub target_rename: Vec<TargetRenameRow>,
    pub torch_release: Vec<TorchReleaseRow>,
    pub torch_build: Vec<TorchBuildRow>,
    pub gpu: Vec<GpuRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu_driver_floor: Vec<GpuDriverFloorRow>,
    pub architecture: Vec<ArchitectureRow>,
    pub driver_branch: Vec<DriverBranchRow>,
    pub branch_lifecycle: Vec<BranchLifecycleRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_compatibility: Option<ForwardCompatibility>,
    /// The files the matrix was built from, in order: `crates/envctl-core/src/compat/matrix.toml` for the
    /// bundled one, then each overlay's path.
    pub origins: Vec<String>,
}

/// The numbers `envctl doctor --matrix-info` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatrixInfo {
    /// The date the sources were read.
    pub date: Option<String>,
    pub description: Option<String>,
    /// Rows per table, in file order.
    pub tables: Vec<TableRows>,
    /// Rows marked `UNVERIFIED` (parsed, never used by a verdict).
    pub unverified_rows: usize,
    /// Rows per status (`verified`, `secondary`, `derived`, `UNVERIFIED`), every table.
    pub rows_by_status: std::collections::BTreeMap<RowStatus, usize>,
    /// `[[torch_build]]` rows per platform.
    pub torch_builds_by_platform: std::collections::BTreeMap<Platform, usize>,
    /// Every distinct `source`, sorted.
    pub sources: Vec<String>,
    /// The files the matrix was built from, bundled first.
    pub origins: Vec<String>,
}

/// One table's row count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableRows {
    pub table: &'static str,
    pub rows: usize,
}

fn usable<R: Row>(rows: &[R]) -> impl Iterator<Item = &R> {
    rows.iter().filter(|row| row.status().usable())
}

fn merge<R: Row>(base: &mut Vec<R>, user: Vec<R>) {
    for row in user {
        let key = row.key();
        match base.iter_mut().find(|existing| existing.key() == key) {
            Some(existing) => *existing = row,
            None => base.push(row),
        }
    }
}

impl Matrix {
    /// The matrix embedded in the binary, parsed once. The embedded text is checked by a unit
    /// test; were it ever unparsable, this is an empty matrix and every verdict says that its
    /// release is not in the matrix, rather than the program stopping.
    pub fn bundled() -> &'static Matrix {
        static BUNDLED: OnceLock<Matrix> = OnceLock::new();
        BUNDLED.get_or_init(|| Matrix::parse(BUNDLED_TEXT, BUNDLED_PATH).unwrap_or_default())
    }

    /// This matrix with `user`'s rows added, each replacing the row with the same key;
    /// `[meta]` stays this matrix's (the date of the bundled research).
    pub fn overlay(&self, user: Matrix) -> Matrix {
        let mut merged = self.clone();
        if merged.meta.is_none() {
            merged.meta = user.meta;
        }
        merge(&mut merged.cuda_driver, user.cuda_driver);
        merge(&mut merged.cuda_family, user.cuda_family);
        merge(&mut merged.cuda_targets, user.cuda_targets);
        merge(&mut merged.target_rename, user.target_rename);
        merge(&mut merged.torch_release, user.torch_release);
        merge(&mut merged.torch_build, user.torch_build);
        merge(&mut merged.gpu, user.gpu);
        merge(&mut merged.gpu_driver_floor, user.gpu_driver_floor);
        merge(&mut merged.architecture, user.architecture);
        merge(&mut merged.driver_branch, user.driver_branch);
        merge(&mut merged.branch_lifecycle, user.branch_lifecycle);
        if user.forward_compatibility.is_some() {
            merged.forward_compatibility = user.forward_compatibility;
        }
        merged.origins.extend(user.origins);
        merged
    }

    /// Date, rows per table and distinct sources.
    pub fn info(&self) -> MatrixInfo {
        let mut sources = BTreeSet::new();
        let mut unverified_rows = 0;
        let mut rows_by_status = std::collections::BTreeMap::new();
        let mut tables = Vec::new();
        let mut count = |table: &'static str, rows: Vec<(RowStatus, &str)>| {
            for (status, source) in &rows {
                if !status.usable() {
                    unverified_rows += 1;
                }
                *rows_by_status.entry(*status).or_insert(0) += 1;
                sources.insert(source.to_string());
            }
            tables.push(TableRows {
                table,
                rows: rows.len(),
            });
        };
        fn provenance<R: Row>(rows: &[R]) -> Vec<(RowStatus, &str)> {
            rows.iter()
                .map(|row| (row.status(), row.source()))
                .collect()
        }
        count(CudaDriverRow::TABLE, provenance(&self.cuda_driver));
        count(CudaFamilyRow::TABLE, provenance(&self.cuda_family));
        count(CudaTargetsRow::TABLE, provenance(&self.cuda_targets));
        count(TargetRenameRow::TABLE, provenance(&self.target_rename));
        count(TorchReleaseRow::TABLE, provenance(&self.torch_release));
        count(TorchBuildRow::TABLE, provenance(&self.torch_build));
        count(GpuRow::TABLE, provenance(&self.gpu));
        count(GpuDriverFloorRow::TABLE, provenance(&self.gpu_driver_floor));
        count(ArchitectureRow::TABLE, provenance(&self.architecture));
        count(DriverBranchRow::TABLE, provenance(&self.driver_branch));
        count(
            BranchLifecycleRow::TABLE,
            provenance(&self.branch_lifecycle),
        );
        count(
            ForwardCompatibility::TABLE,
            self.forward_compatibility
                .as_ref()
                .map(|row| (row.status(), row.source()))
                .into_iter()
                .collect(),
        );
        let mut torch_builds_by_platform = std::collections::BTreeMap::new();
        for row in &self.torch_build {
            *torch_builds_by_platform.entry(row.platform).or_insert(0) += 1;
        }
        MatrixInfo {
            date: self.meta.as_ref().map(|meta| meta.date.clone()),
            description: self.meta.as_ref().and_then(|meta| meta.description.clone()),
            tables,
            unverified_rows,
            rows_by_status,
            torch_builds_by_platform,
            sources: sources.into_iter().collect(),
            origins: self.origins.clone(),
        }
    }

    /// The research date, or `undated`.
    pub fn date(&self) -> &str {
        self.meta
            .as_ref()
            .map_or("undated", |meta| meta.date.as_str())
    }

    /// How verdicts name this matrix: `the bundled matrix (dated 2026-12-04)`.
    pub fn describe(&self) -> String {
        let overlays = self.origins.iter().filter(|origin| *origin != BUNDLED_PATH);
        let overlays: Vec<&String> = overlays.collect();
        if self.origins.iter().any(|origin| origin == BUNDLED_PATH) && overlays.is_empty() {
            format!("the bundled matrix (dated {})", self.date())
        } else if overlays.is_empty() {
            format!("the compatibility matrix (dated {})", self.date())
        } else {
            let names: Vec<&str> = overlays.iter().map(|origin| origin.as_str()).collect();
            format!(
                "the compatibility matrix (dated {}, with {})",
                self.date(),
                names.join(", ")
            )
        }
    }

    /// The row a CUDA release `X.Y` is judged by: its GA row, or its earliest update.
    pub fn cuda_release(&self, cuda: CudaVersion) -> Option<&CudaDriverRow> {
        usable(&self.cuda_driver)
            .filter(|row| row.cuda == cuda && row.minimum().is_some())
            .min_by_key(|row| row.update)
    }

    /// The `[[cuda_driver]]` row a torch build's driver floor comes from: the release its
    /// wheel pins ([`TorchBuildRow::cuda_runtime`]) where the matrix has it, else the
    /// newest update of that minor the matrix has below the pin (a floor the pin's own can
    /// only raise), else the variant's GA release ([`Matrix::cuda_release`]).
    pub fn runtime_row<'m>(&'m self, build: &'m TorchBuildRow) -> RuntimeRow<'m> {
        let ga = || RuntimeRow {
            row: self.cuda_release(build.variant.cuda()),
            pin: None,
            exact: false,
        };
        let Some(pin) = build.cuda_runtime.as_deref() else {
            return ga();
        };
        let Some((cuda, update)) = toolkit_release(pin) else {
            return ga();
        };
        let row = usable(&self.cuda_driver)
            .filter(|row| row.cuda == cuda && row.update <= update && row.minimum().is_some())
            .max_by_key(|row| row.update);
        match row {
            Some(row) => RuntimeRow {
                row: Some(row),
                pin: Some(pin),
                exact: row.update == update,
            },
            None => ga(),
        }
    }

    /// The minor-version-compatibility floor of a CUDA major family.
    pub fn cuda_family(&self, major: u32) -> Option<&CudaFamilyRow> {
        usable(&self.cuda_family).find(|row| row.major == major)
    }

    /// The compile targets of a CUDA release.
    pub fn cuda_targets(&self, cuda: CudaVersion) -> Option<&CudaTargetsRow> {
        usable(&self.cuda_targets)
            .filter(|row| row.covers(cuda))
            .min_by_key(|row| (row.cuda != cuda, row.through.is_some()))
    }

    /// Every usable compile-target row, oldest CUDA first.
    pub fn all_cuda_targets(&self) -> Vec<&CudaTargetsRow> {
        let mut rows: Vec<&CudaTargetsRow> = usable(&self.cuda_targets).collect();
        rows.sort_by_key(|row| row.cuda);
        rows
    }

    /// The compute capability a target really builds for, after renames (sm_101 → 11.0).
    pub fn target_capability(&self, target: Target) -> ComputeCapability {
        usable(&self.target_rename)
            .find(|rename| rename.old.capability == target.capability)
            .map_or(target.capability, |rename| rename.new.capability)
    }

    /// A target with its capability after renames.
    pub fn renamed(&self, target: Target) -> Target {
        Target {
            capability: self.target_capability(target),
            ..target
        }
    }

    pub fn torch_release(&self, release: TorchRelease) -> Option<&TorchReleaseRow> {
        usable(&self.torch_release).find(|row| row.torch == release)
    }

    /// The build of a torch release for one CUDA variant on one platform.
    pub fn torch_build(
        &self,
        release: TorchRelease,
        variant: &CudaVariant,
        platform: Platform,
    ) -> Option<&TorchBuildRow> {
        usable(&self.torch_build)
            .find(|row| row.torch == release && &row.variant == variant && row.platform == platform)
    }

    /// Every build of a torch release on one platform, oldest CUDA first.
    pub fn torch_builds(&self, release: TorchRelease, platform: Platform) -> Vec<&TorchBuildRow> {
        let mut rows: Vec<&TorchBuildRow> = usable(&self.torch_build)
            .filter(|row| row.torch == release && row.platform == platform)
            .collect();
        rows.sort_by_key(|row| row.variant.cuda());
        rows
    }

    /// Every torch release that has builds on one platform, oldest first.
    pub fn torch_releases_with_builds(&self, platform: Platform) -> Vec<TorchRelease> {
        let releases: BTreeSet<TorchRelease> = usable(&self.torch_build)
            .filter(|row| row.platform == platform)
            .map(|row| row.torch)
            .collect();
        releases.into_iter().collect()
    }

    /// The `UNVERIFIED` rows of a table whose key is `key`: a row a user file carries that
    /// no verdict uses, which the verdict that would have used it names.
    pub fn unverified_rows<'m, R: Row>(rows: &'m [R], key: &str) -> Vec<&'m R> {
        rows.iter()
            .filter(|row| !row.status().usable() && row.key() == key)
            .collect()
    }

    /// The only kind of host a GPU of this capability is found in: the `runs_on` every usable
    /// row of that capability agrees on (Orin's 8.7: Jetson; Thor's 11.0: aarch64). `None`
    /// when a row has none (a discrete GPU) or the rows disagree.
    pub fn gpu_host(&self, capability: ComputeCapability) -> Option<GpuHost> {
        let mut hosts = self
            .gpus()
            .filter(|row| row.capability == capability)
            .map(|row| row.runs_on);
        let first = hosts.next()??;
        hosts.all(|host| host == Some(first)).then_some(first)
    }

    /// Usable GPU rows.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuRow> {
        usable(&self.gpu)
    }

    /// The usable driver floors of the `[[gpu]]` rows named `models` (per-SKU and MIG).
    pub fn gpu_driver_floors<'m>(
        &'m self,
        models: &'m [String],
    ) -> impl Iterator<Item = &'m GpuDriverFloorRow> {
        usable(&self.gpu_driver_floor)
            .filter(move |row| row.gpus.iter().any(|gpu| models.contains(gpu)))
    }

    /// The only kind of host the GPU models named `models` (`[[gpu]]` row names) are found
    /// in: the `runs_on` they all agree on (GH200: aarch64, a Grace superchip). `None` when
    /// one has none or they disagree.
    pub fn models_host(&self, models: &[String]) -> Option<GpuHost> {
        let mut hosts = self
            .gpus()
            .filter(|row| models.contains(&row.name))
            .map(|row| row.runs_on);
        let first = hosts.next()??;
        hosts.all(|host| host == Some(first)).then_some(first)
    }

    /// The compute capabilities that exist: every one a usable GPU or architecture row
    /// lists (NVIDIA's GPU and architecture tables, compat-facts §2b and §5), ascending.
    /// A capability outside this set (`9.9`) names no GPU.
    pub fn known_capabilities(&self) -> Vec<ComputeCapability> {
        let mut known: Vec<ComputeCapability> = self
            .gpus()
            .map(|row| row.capability)
            .chain(usable(&self.architecture).flat_map(|row| row.capabilities.iter().copied()))
            .collect();
        known.sort();
        known.dedup();
        known
    }

    /// The architecture of a compute capability: the row listing it, else the row of the same
    /// major with the highest listed minor below it (8.7 → Ampere, 10.3 → Blackwell).
    pub fn architecture_of(&self, capability: ComputeCapability) -> Option<&ArchitectureRow> {
        let rows = || usable(&self.architecture);
        rows()
            .find(|row| row.capabilities.contains(&capability))
            .or_else(|| {
                rows()
                    .filter_map(|row| {
                        row.capabilities
                            .iter()
                            .filter(|listed| {
                                listed.major == capability.major && listed.minor <= capability.minor
                            })
                            .max()
                            .map(|listed| (*listed, row))
                    })
                    .max_by_key(|(listed, _)| *listed)
                    .map(|(_, row)| row)
            })
    }

    pub fn driver_branch(&self, branch: u32) -> Option<&DriverBranchRow> {
        usable(&self.driver_branch).find(|row| row.branch == branch)
    }

    pub fn branch_lifecycle(&self, branch: u32) -> Option<&BranchLifecycleRow> {
        usable(&self.branch_lifecycle).find(|row| row.branch == branch)
    }

    /// Usable lifecycle rows.
    pub fn branch_lifecycles(&self) -> impl Iterator<Item = &BranchLifecycleRow> {
        usable(&self.branch_lifecycle)
    }

    /// The forward-compatibility facts, when present and usable.
    pub fn forward_compatibility(&self) -> Option<&ForwardCompatibility> {
        self.forward_compatibility
            .as_ref()
            .filter(|row| row.status.usable())
    }

    /// Every usable GA row (update 0), oldest CUDA first.
    pub fn cuda_releases(&self) -> Vec<&CudaDriverRow> {
        let mut rows: Vec<&CudaDriverRow> = Vec::new();
        for row in usable(&self.cuda_driver) {
            if let Some(release) = self.cuda_release(row.cuda)
                && std::ptr::eq(release, row)
            {
                rows.push(row);
            }
        }
        rows.sort_by_key(|row| row.cuda);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::values::is_date;

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_bundled_matrix_parses() {
        let parsed = Matrix::parse(BUNDLED_TEXT, BUNDLED_PATH);
        assert!(
            parsed.is_ok(),
            "{}",
            parsed.err().map(|e| e.to_string()).unwrap_or_default()
        );
        let matrix = Matrix::bundled();
        assert_eq!(matrix.date(), "2026-12-04");
        assert_eq!(matrix.origins, vec![BUNDLED_PATH.to_string()]);
        assert!(!matrix.cuda_driver.is_empty());
        assert!(!matrix.gpu.is_empty());
    }

    /// Every bundled row is usable (no UNVERIFIED row ships), names a source, and carries the
    /// date it was read, never after the matrix's date.
    #[test]
    fn every_bundled_row_is_well_formed() {
        let matrix = Matrix::bundled();
        let date = matrix.date().to_string();
        fn check<R: Row>(rows: &[R], date: &str) {
            assert!(!rows.is_empty(), "{} is empty", R::TABLE);
            for row in rows {
                assert!(
                    row.status().usable(),
                    "{} {} is UNVERIFIED",
                    R::TABLE,
                    row.key()
                );
                assert!(
                    !row.source().trim().is_empty(),
                    "{} {}",
                    R::TABLE,
                    row.key()
                );
                // The matrix's date is the day of its newest reading: no row is read after it
                // (dates `YYYY-MM-DD` compare as text).
                assert!(
                    row.read().is_some_and(|read| read <= date),
                    "{} {} read after the matrix date {date}",
                    R::TABLE,
                    row.key()
                );
                assert!(row.read().is_some_and(is_date));
            }
            let keys: BTreeSet<String> = rows.iter().map(Row::key).collect();
            assert_eq!(keys.len(), rows.len(), "duplicate keys in {}", R::TABLE);
        }
        check(&matrix.cuda_driver, &date);
        check(&matrix.cuda_family, &date);
        check(&matrix.cuda_targets, &date);
        check(&matrix.target_rename, &date);
        check(&matrix.torch_release, &date);
        check(&matrix.torch_build, &date);
        check(&matrix.gpu, &date);
        check(&matrix.architecture, &date);
        check(&matrix.driver_branch, &date);
        check(&matrix.branch_lifecycle, &date);
        let forward = matrix.forward_compatibility.as_ref().unwrap();
        check(std::slice::from_ref(forward), &date);
        assert_eq!(forward.package_for(cuda("13.0")), "cuda-compat-13-0");

        for row in &matrix.cuda_driver {
            let minimum = row.minimum().unwrap();
            if let Some(branch) = row.branch {
                assert_eq!(minimum.branch(), branch, "{}", row.release);
            }
        }
        for row in &matrix.cuda_targets {
            assert!(row.lowest.capability <= row.highest.capability);
            if let Some(targets) = &row.targets {
                assert!(targets.contains(&row.lowest), "{}", row.cuda);
                assert!(targets.contains(&row.highest), "{}", row.cuda);
            }
        }
        for row in &matrix.torch_build {
            assert!(!row.targets.is_empty());
            let release = matrix.torch_release(row.torch);
            if let Some(release) = release {
                assert!(release.variants.contains(&row.variant), "{}", row.key());
            }
        }
        for row in &matrix.gpu {
            assert!(!row.match_keys.is_empty(), "{}", row.name);
        }
    }

    /// Every release with a build row has its release row (variants, PyPI default), and
    /// the release row lists each of its builds: 2.15 once had only its build.
    #[test]
    fn every_torch_release_with_builds_has_a_release_row() {
        let matrix = Matrix::bundled();
        for release in Platform::ALL
            .into_iter()
            .flat_map(|platform| matrix.torch_releases_with_builds(platform))
        {
            assert!(
                matrix.torch_release(release).is_some(),
                "torch {release} has builds but no [[torch_release]] row"
            );
        }
        let latest = matrix.torch_release("2.15".parse().unwrap()).unwrap();
        assert_eq!(
            latest
                .pypi_default_variant
                .as_ref()
                .map(|variant| variant.as_str()),
            Some("cu132"),
            "the measured PyPI wheel is 2.15.0+cu132"
        );
    }

    /// The GA floors of compat-facts §1a the verdicts rest on.
    #[test]
    fn release_floors_are_the_ga_rows() {
        let matrix = Matrix::bundled();
        let floor = |text: &str| matrix.cuda_release(cuda(text)).unwrap().minimum_text();
        assert_eq!(floor("12.8"), "570.26");
        assert_eq!(floor("12.0"), "525.60.13");
        assert_eq!(floor("13.0"), "580.65.06");
        assert_eq!(floor("11.0"), "450.51.05");
        assert_eq!(floor("13.4"), "branch R615");
        assert_eq!(floor("10.2"), "440.33");
        assert!(matrix.cuda_release(cuda("12.7")).is_none());
        assert!(matrix.cuda_release(cuda("13.5")).is_none());
        let family = |major: u32| {
            matrix
                .cuda_family(major)
                .unwrap()
                .linux_minimum_driver
                .to_string()
        };
        assert_eq!(family(13), "580");
        assert_eq!(family(12), "525");
        assert_eq!(family(11), "450.80.02");
        assert!(matrix.cuda_family(10).is_none());
    }

    /// §6a is derived from §1a: each branch's native CUDA is the newest release whose GA
    /// minimum lies in that branch.
    #[test]
    fn driver_branches_agree_with_release_minimums() {
        let matrix = Matrix::bundled();
        for row in &matrix.driver_branch {
            let release = matrix.cuda_release(row.native_cuda).unwrap();
            assert_eq!(
                release.minimum().unwrap().branch(),
                row.branch,
                "R{}",
                row.branch
            );
            let newer = matrix
                .cuda_releases()
                .into_iter()
                .filter(|other| other.cuda > row.native_cuda)
                .filter_map(|other| other.minimum())
                .any(|minimum| minimum.branch() <= row.branch);
            assert!(
                !newer,
                "a newer release than {} fits R{}",
                row.native_cuda, row.branch
            );
        }
    }

    #[test]
    fn target_ranges_and_renames() {
        let matrix = Matrix::bundled();
        assert_eq!(
            matrix.cuda_targets(cuda("11.2")).unwrap().cuda,
            cuda("11.1")
        );
        assert_eq!(
            matrix.cuda_targets(cuda("11.6")).unwrap().cuda,
            cuda("11.4")
        );
        assert_eq!(
            matrix.cuda_targets(cuda("12.8")).unwrap().cuda,
            cuda("12.8")
        );
        assert!(matrix.cuda_targets(cuda("12.7")).is_none());
        let sm_101: Target = "sm_101".parse().unwrap();
        assert_eq!(
            matrix.target_capability(sm_101),
            ComputeCapability::new(11, 0)
        );
        let name = |major, minor| {
            matrix
                .architecture_of(ComputeCapability::new(major, minor))
                .map(|row| row.name.clone())
        };
        assert_eq!(name(7, 0).as_deref(), Some("Volta"));
        assert_eq!(name(8, 9).as_deref(), Some("Ada"));
        assert_eq!(name(8, 7).as_deref(), Some("Ampere"));
        assert_eq!(name(12, 1).as_deref(), Some("Blackwell"));
        assert_eq!(name(11, 0), None);
    }

    #[test]
    fn overlay_adds_and_replaces_rows() {
        let user = Matrix::parse(
            r#"
[[cuda_driver]]
cuda = "12.8"
update = 0
release = "12.8 GA"
branch = 570
linux_minimum_driver = "570.30"
status = "verified"
source = "our cluster"

[[cuda_driver]]
cuda = "13.5"
update = 0
release = "13.5 GA"
branch = 620
linux_minimum_driver = "620.10"
status = "secondary"
source = "our notes"
"#,
            "team.toml",
        )
        .unwrap();
        let bundled = Matrix::bundled();
        let merged = bundled.overlay(user);
        assert_eq!(merged.cuda_driver.len(), bundled.cuda_driver.len() + 1);
        let row = merged.cuda_release(cuda("12.8")).unwrap();
        assert_eq!(
            (row.minimum_text(), row.source.as_str()),
            ("570.30".into(), "our cluster")
        );
        assert_eq!(
            merged.cuda_release(cuda("13.5")).unwrap().minimum_text(),
            "620.10"
        );
        assert_eq!(merged.date(), "2026-12-04");
        assert_eq!(
            merged.origins,
            vec![BUNDLED_PATH.to_string(), "team.toml".to_string()]
        );
        assert!(merged.describe().contains("team.toml"));
        assert_eq!(bundled.describe(), "the bundled matrix (dated 2026-12-04)");
    }

    #[test]
    fn info_counts_rows_and_sources() {
        let info = Matrix::bundled().info();
        assert_eq!(info.date.as_deref(), Some("2026-12-04"));
        let rows = |table: &str| {
            info.tables
                .iter()
                .find(|entry| entry.table == table)
                .map(|entry| entry.rows)
        };
        assert_eq!(rows("cuda_family"), Some(3));
        assert_eq!(rows("forward_compatibility"), Some(1));
        assert!(rows("gpu").unwrap() > 100);
        assert_eq!(info.unverified_rows, 0);
        assert!(info.sources.len() > 10);
        let total: usize = info.tables.iter().map(|table| table.rows).sum();
        assert_eq!(info.rows_by_status.values().sum::<usize>(), total);
        assert!(info.rows_by_status[&RowStatus::Derived] > 0);
        assert_eq!(info.torch_builds_by_platform[&Platform::Aarch64], 14);
        let mut sorted = info.sources.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, info.sources);
    }

    /// The capabilities NVIDIA documents, from Fermi 2.0 to GB10's 12.1; none invented.
    #[test]
    fn known_capabilities_are_the_documented_ones() {
        let known: Vec<String> = Matrix::bundled()
            .known_capabilities()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            known,
            [
                "2.0", "3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0",
                "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0",
                "12.1"
            ]
        );
    }
}
