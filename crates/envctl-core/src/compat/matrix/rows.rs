//! The row types of `matrix.toml`, one per table, with the [`Row`] trait that gives each
//! its key for overlays and its provenance (`status`, `source`, `read`). What the rows mean
//! together (the lookups, overlays and counts) is [`super::Matrix`]'s.

use serde::{Deserialize, Serialize};

use crate::compat::values::{CudaVariant, Platform, RowStatus, Target, TorchRelease, cuda_form};
use crate::compat::version::{ComputeCapability, DriverVersion};
use crate::profile::model::CudaVersion;

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
    /// build's driver floor ([`super::Matrix::runtime_row`]). Absent where the wheel pins only
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::Matrix;

    #[test]
    fn a_torch_builds_key_names_its_platform_beyond_x86_64() {
        let matrix = Matrix::bundled();
        let on = |platform: Platform| {
            matrix
                .torch_build
                .iter()
                .find(|row| row.platform == platform)
                .expect("the bundled matrix has builds for every platform")
        };
        let x86 = on(Platform::X86_64);
        assert_eq!(x86.key(), format!("{}+{}", x86.torch, x86.variant));
        let arm = on(Platform::Aarch64);
        assert_eq!(
            arm.key(),
            format!("{}+{} {}", arm.torch, arm.variant, Platform::Aarch64)
        );
    }

    #[test]
    fn every_table_accepts_the_provenance_keys() {
        for keys in [
            CudaDriverRow::KEYS,
            CudaFamilyRow::KEYS,
            CudaTargetsRow::KEYS,
            TargetRenameRow::KEYS,
            TorchReleaseRow::KEYS,
            TorchBuildRow::KEYS,
            GpuRow::KEYS,
            GpuDriverFloorRow::KEYS,
            ArchitectureRow::KEYS,
            DriverBranchRow::KEYS,
            BranchLifecycleRow::KEYS,
        ] {
            for provenance in ["status", "source", "read", "note"] {
                assert!(keys.contains(&provenance), "{keys:?}");
            }
        }
    }
}
