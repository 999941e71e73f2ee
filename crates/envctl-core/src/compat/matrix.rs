//! The compatibility matrix as data: the row types of `matrix.toml`, the bundled matrix
//! (embedded at build time, parsed once), user overlays, `doctor --matrix-info` numbers,
//! and the lookups the verdicts use. Lookups skip rows whose status is `UNVERIFIED`.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::values::{CudaVariant, Platform, RowStatus, Target, TorchRelease, cuda_form};
use super::version::{ComputeCapability, DriverVersion};
use crate::profile::model::CudaVersion;

/// The text of the bundled matrix.
pub const BUNDLED_TEXT: &str = include_str!("matrix.toml");
/// How the bundled matrix is named in messages: it is in the binary, not a file on disk
/// (`src/compat/matrix.toml` in envctl's source), like `<bundled>/NAME.toml` profiles.
pub const BUNDLED_PATH: &str = "<bundled>/matrix.toml";

/// What every row of every table carries: its key for overlays and where it comes from.
pub trait Row {
    /// The table the row belongs to, as written in the file (`cuda_driver`).
    const TABLE: &'static str;
    /// The keys a row of this table may have.
    const KEYS: &'static [&'static str];
    /// Rows with the same key replace each other in an overlay.
    fn key(&self) -> String;
    fn status(&self) -> RowStatus;
    fn source(&self) -> &str;
    fn read(&self) -> Option<&str>;
}

macro_rules! row {
    ($type:ty, $table:literal, [$($key:literal),* $(,)?], |$row:ident| $identity:expr) => {
        impl Row for $type {
            const TABLE: &'static str = $table;
            const KEYS: &'static [&'static str] = &[$($key,)* "status", "source", "read", "note"];
            fn key(&self) -> String {
                let $row = self;
                $identity
            }
            fn status(&self) -> RowStatus {
                self.status
            }
            fn source(&self) -> &str {
                &self.source
            }
            fn read(&self) -> Option<&str> {
                self.read.as_deref()
            }
        }
    };
}

/// `[meta]`: when the matrix was researched and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixMeta {
    /// The date the sources were read, `YYYY-MM-DD`.
    pub date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl MatrixMeta {
    pub const KEYS: &'static [&'static str] = &["date", "description"];
}

/// `[[cuda_driver]]`: a CUDA release (and update) → its minimum Linux x86_64 driver for the
/// full feature set (compat-facts §1a). Key: `cuda` + `update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaDriverRow {
    #[serde(with = "cuda_form_serde")]
    pub cuda: CudaVersion,
    /// 0 for the GA release, N for "Update N".
    pub update: u32,
    /// The release as NVIDIA names it: `12.8 Update 1`.
    pub release: String,
    /// The driver branch (570 for R570).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<u32>,
    /// Absent where NVIDIA states only the branch (CUDA 13.4: R615).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_minimum_driver: Option<DriverVersion>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    CudaDriverRow,
    "cuda_driver",
    [
        "cuda",
        "update",
        "release",
        "branch",
        "linux_minimum_driver"
    ],
    |row| format!("{} update {}", row.cuda, row.update)
);

impl CudaDriverRow {
    /// The lowest driver meeting this row: the stated minimum, or the first driver of the
    /// stated branch (`615` for R615).
    pub fn minimum(&self) -> Option<DriverVersion> {
        match (&self.linux_minimum_driver, self.branch) {
            (Some(minimum), _) => Some(minimum.clone()),
            (None, Some(branch)) => branch.to_string().parse().ok(),
            (None, None) => None,
        }
    }

    /// `570.26`, or `branch R615` where only the branch is known.
    pub fn minimum_text(&self) -> String {
        match (&self.linux_minimum_driver, self.branch) {
            (Some(minimum), _) => minimum.to_string(),
            (None, Some(branch)) => format!("branch R{branch}"),
            (None, None) => "an unknown driver".to_string(),
        }
    }
}

/// `[[cuda_family]]`: a CUDA major family → the minor-version-compatibility floor
/// (compat-facts §1b). Key: `major`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaFamilyRow {
    pub major: u32,
    /// The lowest driver that runs every toolkit of the family (with a limited feature set).
    pub linux_minimum_driver: DriverVersion,
    /// The lowest driver of that branch NVIDIA lists anywhere (`525.60.13`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest_listed_driver: Option<DriverVersion>,
    /// Where the family's minor-compatibility range ends; newer drivers still run the family
    /// by ordinary backward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_driver_exclusive: Option<DriverVersion>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    CudaFamilyRow,
    "cuda_family",
    [
        "major",
        "linux_minimum_driver",
        "lowest_listed_driver",
        "upper_driver_exclusive"
    ],
    |row| row.major.to_string()
);

/// `[[cuda_targets]]`: a CUDA release (or range of releases) → the GPU targets its compiler
/// accepts (compat-facts §2a). Key: `cuda`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaTargetsRow {
    #[serde(with = "cuda_form_serde")]
    pub cuda: CudaVersion,
    /// The last release the row covers (`11.1` through `11.3`).
    #[serde(
        default,
        deserialize_with = "cuda_form::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub through: Option<CudaVersion>,
    /// Real (SASS) targets, where measured; rows without know only `lowest` and `highest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<Target>>,
    /// Virtual (PTX) targets, where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_targets: Option<Vec<Target>>,
    pub lowest: Target,
    pub highest: Target,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    CudaTargetsRow,
    "cuda_targets",
    [
        "cuda",
        "through",
        "targets",
        "virtual_targets",
        "lowest",
        "highest"
    ],
    |row| row.cuda.to_string()
);

impl CudaTargetsRow {
    pub fn covers(&self, cuda: CudaVersion) -> bool {
        cuda == self.cuda
            || self
                .through
                .is_some_and(|last| self.cuda <= cuda && cuda <= last)
    }
}

/// `[[target_rename]]`: a target NVIDIA renamed (sm_101 of CUDA 12.8/12.9 is sm_110 from
/// 13.0). Key: `old`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRenameRow {
    pub old: Target,
    pub new: Target,
    #[serde(with = "cuda_form_serde")]
    pub from_cuda: CudaVersion,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    TargetRenameRow,
    "target_rename",
    ["old", "new", "from_cuda"],
    |row| row.old.to_string()
);

/// `[[torch_release]]`: a torch release → its CUDA wheel variants and the PyPI default
/// (compat-facts §3a). Key: `torch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchReleaseRow {
    pub torch: TorchRelease,
    pub variants: Vec<CudaVariant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pypi_default_variant: Option<CudaVariant>,
    /// What plain `pip install torch` gets on Linux aarch64, where measured: `cpu` (a CPU
    /// build: PyPI's aarch64 wheels up to 2.10) or a CUDA variant (`cu130` from 2.11).
    /// Absent where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pypi_aarch64_variant: Option<String>,
    /// Variants published after the release's first version, from a later patch release
    /// (cu129 from 2.12.1): not in `variants`, which every version of the release has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub late_variants: Vec<LateVariant>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    TorchReleaseRow,
    "torch_release",
    [
        "torch",
        "variants",
        "pypi_default_variant",
        "pypi_aarch64_variant",
        "late_variants"
    ],
    |row| row.torch.to_string()
);

/// One of `late_variants`: a variant and the first version that has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LateVariant {
    pub variant: CudaVariant,
    /// The first version with the variant, `2.12.1`.
    pub from: String,
}

impl TorchReleaseRow {
    /// The first version of this release with `variant`, when it came with a later patch.
    pub fn late_variant(&self, variant: &CudaVariant) -> Option<&LateVariant> {
        self.late_variants
            .iter()
            .find(|late| &late.variant == variant)
    }

    /// PyPI's aarch64 wheel of this release is a CPU build (measured).
    pub fn pypi_aarch64_is_cpu(&self) -> bool {
        self.pypi_aarch64_variant.as_deref() == Some("cpu")
    }
}

/// `[[torch_build]]`: a torch release + CUDA variant + platform → the SASS targets of the
/// official Linux wheel for that platform and its PTX (compat-facts §3b). Key: `torch` +
/// `variant` + `platform`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchBuildRow {
    pub torch: TorchRelease,
    pub variant: CudaVariant,
    /// The wheel's platform. Written on every bundled row; a user row without it describes
    /// the x86_64 wheel, because every row had that meaning before platforms were keyed, so
    /// an older team file keeps the meaning it was written with.
    #[serde(default = "x86_64")]
    pub platform: Platform,
    pub targets: Vec<Target>,
    /// The PTX the wheel embeds, where verified (`compute_120`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptx: Option<Target>,
    /// Another CUDA library of the wheel that mostly lacks targets of `targets`, measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub library_gaps: Vec<LibraryGap>,
    /// The CUDA Toolkit release the wheel's METADATA pins (`Requires-Dist:
    /// cuda-toolkit[…]==13.2.2`), measured by `cargo xtask matrix torch`: the runtime pip
    /// installs with it, so its minimum driver, not the variant's GA release's, is the
    /// build's driver floor ([`Matrix::runtime_row`]). Absent where the wheel pins only
    /// component versions (`nvidia-cuda-runtime-cu12==12.8.90`, the 12.x wheels) or was not
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_runtime: Option<String>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    TorchBuildRow,
    "torch_build",
    [
        "torch",
        "variant",
        "platform",
        "targets",
        "ptx",
        "library_gaps",
        "cuda_runtime"
    ],
    |row| match row.platform {
        // The x86_64 key is the one rows had before platforms, so a team file's row
        // still replaces the bundled x86_64 row it was written to replace.
        Platform::X86_64 => format!("{}+{}", row.torch, row.variant),
        platform => format!("{}+{} {platform}", row.torch, row.variant),
    }
);

fn x86_64() -> Platform {
    Platform::X86_64
}

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

/// One of `library_gaps`: a CUDA library of the wheel (`libtorch_cuda_linalg.so`) whose fat
/// binaries mostly lack some of the build's targets (`cargo xtask matrix torch` measures
/// every `libtorch_cuda*.so`), so the operations it holds have no kernels for those GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryGap {
    pub library: String,
    /// What the library holds, for messages: `linalg operations run with MAGMA`.
    pub holds: String,
    /// The targets of the build it lacks.
    pub missing: Vec<Target>,
    /// How many of its fat binaries carry them, of `fatbins`.
    pub carried: u32,
    pub fatbins: u32,
}

/// `runs_on` of a `[[gpu]]` row: a GPU that exists only on one kind of host, which decides
/// which torch wheels apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuHost {
    /// The integrated GPU of a Jetson module under L4T (JetPack 6 and older: Nano, TX1,
    /// TX2, Xavier, Orin): neither PyPI wheel runs there; NVIDIA publishes Jetson builds.
    #[serde(rename = "jetson")]
    Jetson,
    /// A GPU only found in aarch64 hosts that take the aarch64 (SBSA) wheels: Jetson Thor
    /// (JetPack 7), GB10.
    #[serde(rename = "aarch64")]
    Aarch64,
}

/// `[[gpu]]`: a GPU model → its compute capability (compat-facts §5). Key: `name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuRow {
    /// The product as NVIDIA lists it: `GeForce RTX 4090`.
    pub name: String,
    /// Normalised keys (see `models`): `RTX 4090`, `V100`.
    #[serde(rename = "match")]
    pub match_keys: Vec<String>,
    pub capability: ComputeCapability,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// The only kind of host the GPU is found in, where that matters for the wheels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_on: Option<GpuHost>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    GpuRow,
    "gpu",
    ["name", "match", "capability", "architecture", "runs_on"],
    |row| row.name.to_ascii_lowercase()
);

/// `[[gpu_driver_floor]]`: the lowest driver NVIDIA supports for one GPU model (a per-SKU
/// floor above its architecture's, like HGX B200's 570.133.20), or for running it with MIG
/// enabled (`mig = true`, NVIDIA's MIG user guide). Key: `gpus` + `mig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuDriverFloorRow {
    /// The `[[gpu]]` rows (by `name`) the floor is for.
    pub gpus: Vec<String>,
    /// The floor holds only with MIG enabled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mig: bool,
    pub linux_minimum_driver: DriverVersion,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    GpuDriverFloorRow,
    "gpu_driver_floor",
    ["gpus", "mig", "linux_minimum_driver"],
    |row| format!(
        "{}{}",
        row.gpus.join(", "),
        if row.mig { " with MIG" } else { "" }
    )
);

/// `[[architecture]]`: NVIDIA's architecture lifecycle (compat-facts §2b). Key:
/// `capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchitectureRow {
    pub name: String,
    pub capabilities: Vec<ComputeCapability>,
    #[serde(with = "cuda_form_serde")]
    pub first_cuda: CudaVersion,
    /// The last toolkit that supports it (`12.x`); absent while support is ongoing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cuda: Option<String>,
    /// The last driver branch that supports it; absent while support is ongoing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_driver_branch: Option<u32>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    ArchitectureRow,
    "architecture",
    [
        "name",
        "capabilities",
        "first_cuda",
        "last_cuda",
        "last_driver_branch"
    ],
    |row| row
        .capabilities
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
);

/// `[[driver_branch]]`: a driver branch → the newest CUDA release it runs natively
/// (compat-facts §6a). Key: `branch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverBranchRow {
    pub branch: u32,
    #[serde(with = "cuda_form_serde")]
    pub native_cuda: CudaVersion,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    DriverBranchRow,
    "driver_branch",
    ["branch", "native_cuda"],
    |row| row.branch.to_string()
);

/// `[[branch_lifecycle]]`: a data-center driver branch's designation and end of life
/// (compat-facts §6b). Key: `branch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchLifecycleRow {
    pub branch: u32,
    /// `LTSB`, `Production`, `New Feature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designation: Option<String>,
    /// The month support ends, `YYYY-MM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_of_life: Option<String>,
    /// NVIDIA lists the branch as ended, without a date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cuda_major_without_forward_compatibility: Option<u32>,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    BranchLifecycleRow,
    "branch_lifecycle",
    [
        "branch",
        "designation",
        "end_of_life",
        "ended",
        "max_cuda_major_without_forward_compatibility"
    ],
    |row| row.branch.to_string()
);

/// `[forward_compatibility]`: running a newer CUDA on an older driver branch (compat-facts
/// §6c). A single table; a user file's replaces the bundled one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardCompatibility {
    /// The package name with `{major}` and `{minor}` placeholders: `cuda-compat-{major}-{minor}`.
    pub package: String,
    pub supported_gpus: String,
    pub purpose: String,
    pub documentation: String,
    pub status: RowStatus,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

row!(
    ForwardCompatibility,
    "forward_compatibility",
    ["package", "supported_gpus", "purpose", "documentation"],
    |_row| String::new()
);

impl ForwardCompatibility {
    /// `cuda-compat-13-0` for CUDA 13.0.
    pub fn package_for(&self, cuda: CudaVersion) -> String {
        self.package
            .replace("{major}", &cuda.major.to_string())
            .replace("{minor}", &cuda.minor.to_string())
    }
}

/// serde for a required `CudaVersion` (serialised by the profile model, parsed here).
mod cuda_form_serde {
    use serde::{Deserializer, Serialize, Serializer};

    use crate::profile::model::CudaVersion;

    pub fn serialize<S: Serializer>(cuda: &CudaVersion, serializer: S) -> Result<S::Ok, S::Error> {
        cuda.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<CudaVersion, D::Error> {
        super::cuda_form::deserialize(deserializer)
    }
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
    /// The files the matrix was built from, in order: `src/compat/matrix.toml` for the
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
