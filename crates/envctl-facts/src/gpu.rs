//! The GPU facts NVML gave (or failed to give), filled by `gpu::gather`: plain serde data
//! with no nvml-wrapper type in it, so a doctor report can be written as JSON and replayed
//! into the checks later.
//!
//! Every query answers on its own: a [`Fact`] holds either the value or the named
//! [`NvmlFailure`], so one GPU failing one query leaves every other fact intact.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use super::failure::FailureKind;
use super::versions::{ComputeCapability, CudaVersion};

/// What NVML said about this machine, and which library said it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// The library handed to the dynamic loader: the `ENVCTL_NVML_LIBRARY` path, or
    /// `libnvidia-ml.so.1` looked up through the loader's search path.
    pub library: String,
    /// Whether NVML loaded and, when it did, what it reported.
    pub nvml: LoadOutcome,
}

impl GpuFacts {
    /// The system and GPU facts, when NVML loaded.
    pub fn loaded(&self) -> Option<&NvmlFacts> {
        match &self.nvml {
            LoadOutcome::Loaded(facts) => Some(facts),
            _ => None,
        }
    }

    /// The facts the checks judge: this machine's NVML, or another machine's GPUs as its
    /// daemon told them.
    pub fn judged(&self) -> Option<&NvmlFacts> {
        match &self.nvml {
            LoadOutcome::Loaded(facts) => Some(facts),
            LoadOutcome::OnAnotherHost {
                seen: Some(seen), ..
            } => Some(&seen.facts),
            _ => None,
        }
    }

    /// Another machine's GPUs as its daemon told them.
    pub fn seen_on_server(&self) -> Option<&SeenOnServer> {
        match &self.nvml {
            LoadOutcome::OnAnotherHost {
                seen: Some(seen), ..
            } => Some(seen),
            _ => None,
        }
    }

    /// The GPUs NVML listed, or why there is no list: NVML did not load, or it loaded but
    /// could not count the GPUs (then "no GPU" would be a guess: none was asked about).
    pub fn listed_gpus(&self) -> Result<&[GpuDevice], String> {
        match &self.nvml {
            LoadOutcome::Loaded(facts) => match facts.device_count.as_result() {
                Ok(_) => Ok(&facts.gpus),
                Err(failure) => Err(format!(
                    "NVML could not count the GPUs: {}",
                    failure.message
                )),
            },
            other => Err(other
                .failure_message()
                .unwrap_or("NVML was not loaded")
                .to_string()),
        }
    }
}

/// How loading NVML went. Each way it fails is its own variant, because each has its own
/// fix (install the driver, load the kernel module, reboot after an upgrade, …); none of
/// them means "no GPU".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum LoadOutcome {
    /// `nvmlInit` succeeded. Boxed because it is far larger than the failures.
    Loaded(Box<NvmlFacts>),
    /// The dynamic loader could not open the library (not installed, wrong path, wrong
    /// architecture); the message is the loader's.
    LibraryNotFound { message: String },
    /// The library loaded but the NVIDIA kernel module is not running.
    DriverNotLoaded { message: String },
    /// The user-space library and the kernel module are different versions, typically
    /// after a driver upgrade without a reboot.
    VersionMismatch { message: String },
    /// NVML may not talk to the driver as this user (device node permissions, cgroups).
    NoPermission { message: String },
    /// The library lacks the init function envctl calls (not NVML, or far too old).
    SymbolMissing { message: String },
    /// Any other failure, with NVML's own words.
    Unknown { message: String },
    /// Not read: the daemon runs on another machine (`DaemonHost::Elsewhere`), whose
    /// driver and GPUs this machine's NVML cannot see. Never this machine's GPUs instead.
    /// `seen`: what the daemon told of them (its GPU record, or a probe through it), when
    /// it could.
    OnAnotherHost {
        host: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<Box<SeenOnServer>>,
    },
}

/// Another machine's driver and GPUs as its daemon told them (issue 38, item 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenOnServer {
    /// In NVML's shape, so the checks judge them as they judge this machine's; what the
    /// source does not tell (health, MIG, power) is a `not_supported` failure: unknown.
    pub facts: NvmlFacts,
    /// Who learnt them: a probe container's nvidia-smi, or NVML on the server itself.
    pub by: SeenBy,
    /// When they were learnt (Unix seconds), where the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<i64>,
    /// Read from the daemon's GPU record (no probe ran now); processes are then unknown.
    pub from_record: bool,
}

/// The source of [`SeenOnServer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeenBy {
    Probe,
    Nvml,
}

impl SeenBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SeenBy::Probe => "probe",
            SeenBy::Nvml => "nvml",
        }
    }
}

impl LoadOutcome {
    /// NVML not read because the daemon runs on `host`, with the words that say so.
    pub fn on_another_host(host: &str) -> Self {
        LoadOutcome::OnAnotherHost {
            host: host.to_string(),
            message: format!(
                "the daemon runs on {host}, whose NVIDIA driver and GPUs NVML on this machine cannot see"
            ),
            seen: None,
        }
    }

    /// [`LoadOutcome::on_another_host`], with what its daemon told of its GPUs.
    pub fn seen_on_another_host(host: &str, seen: Option<SeenOnServer>) -> Self {
        match LoadOutcome::on_another_host(host) {
            LoadOutcome::OnAnotherHost { host, message, .. } => LoadOutcome::OnAnotherHost {
                host,
                message,
                seen: seen.map(Box::new),
            },
            other => other,
        }
    }

    /// The outcome for a failed load, from the failure's kind.
    pub fn from_failure(failure: NvmlFailure) -> Self {
        // A missing function is only actionable with its name.
        let message = match &failure.function {
            Some(function)
                if failure.kind == FailureKind::SymbolMissing
                    && !failure.message.contains(function.as_str()) =>
            {
                format!("{function}: {}", failure.message)
            }
            _ => failure.message,
        };
        match failure.kind {
            FailureKind::LibraryNotFound => LoadOutcome::LibraryNotFound { message },
            FailureKind::DriverNotLoaded => LoadOutcome::DriverNotLoaded { message },
            FailureKind::VersionMismatch => LoadOutcome::VersionMismatch { message },
            FailureKind::NoPermission => LoadOutcome::NoPermission { message },
            FailureKind::SymbolMissing => LoadOutcome::SymbolMissing { message },
            FailureKind::NotSupported
            | FailureKind::GpuLost
            | FailureKind::InvalidValue
            | FailureKind::Unknown
            | FailureKind::Other => LoadOutcome::Unknown { message },
            // Not NVML's kinds: `gpu::nvml` never gives them to a failed load.
            FailureKind::SocketMissing
            | FailureKind::PermissionDenied
            | FailureKind::ConnectionRefused
            | FailureKind::Timeout
            | FailureKind::UnsupportedHost
            | FailureKind::DaemonError
            | FailureKind::PullFailed
            | FailureKind::ImageMissing
            | FailureKind::NameConflict
            | FailureKind::InvalidBody
            | FailureKind::Output
            | FailureKind::TooManyOpenFiles
            | FailureKind::NotRunning
            | FailureKind::CgroupUnreadable => LoadOutcome::Unknown { message },
        }
    }

    /// Why NVML did not load; none when it did.
    pub fn failure_message(&self) -> Option<&str> {
        match self {
            LoadOutcome::Loaded(_) => None,
            LoadOutcome::LibraryNotFound { message }
            | LoadOutcome::DriverNotLoaded { message }
            | LoadOutcome::VersionMismatch { message }
            | LoadOutcome::NoPermission { message }
            | LoadOutcome::SymbolMissing { message }
            | LoadOutcome::Unknown { message }
            | LoadOutcome::OnAnotherHost { message, .. } => Some(message),
        }
    }
}

/// The driver-wide facts and one entry per GPU NVML counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvmlFacts {
    /// The kernel driver's version, e.g. `570.124.06`, as NVML writes it.
    pub driver_version: Fact<String>,
    /// The newest CUDA version the driver supports, e.g. `12.8`.
    pub cuda_driver_version: Fact<CudaDriverVersion>,
    /// The NVML library's own version, e.g. `12.570.124.06`.
    pub nvml_version: Fact<String>,
    pub device_count: Fact<u32>,
    /// One entry per index below the device count; empty when the count failed.
    pub gpus: Vec<GpuDevice>,
    /// A failure to close NVML again; reported, because it hints at a broken library,
    /// but it changes none of the facts above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_failure: Option<NvmlFailure>,
}

/// One GPU. Each field is queried on its own and fails on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuDevice {
    /// NVML's index, the one `CUDA_DEVICE_ORDER=PCI_BUS_ID` and `--gpus device=` use.
    pub index: u32,
    /// The marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: Fact<String>,
    /// `GPU-…`, stable across reboots and reorderings.
    pub uuid: Fact<String>,
    /// `00000000:17:00.0`.
    pub pci_bus_id: Fact<String>,
    pub compute_capability: Fact<ComputeCapability>,
    pub memory: Fact<GpuMemory>,
    /// Not supported on GPUs without MIG (anything before A100/A30).
    pub mig_mode: Fact<MigMode>,
    /// The power limit the driver enforces now.
    pub power_limit_watts: Fact<f64>,
    /// Compute processes on it now and the memory each holds: what GPU placement weighs
    /// and doctor's occupancy shows. Records written before envctl read it have none.
    #[serde(default = "processes_not_recorded")]
    pub processes: Fact<Vec<crate::gpu_sample::GpuProcess>>,
    /// The device minor number: the GPU's node is `/dev/nvidia<minor>` (NVML's
    /// `nvmlDeviceGetMinorNumber`), which is how a container given the node itself
    /// (`--device /dev/nvidia3`, or a CDI device as Podman records it) is told to hold it.
    #[serde(default = "minor_not_recorded")]
    pub minor_number: Fact<u32>,
    /// What says whether the GPU is sound: ECC, retired pages, remapped rows, persistence.
    /// Records written before envctl read it have none of it.
    #[serde(default)]
    pub health: GpuHealth,
}

/// The health facts of one GPU, each read on its own. A query the GPU does not offer
/// (ECC on a GeForce, remapped rows before Ampere) stays a `not_supported` failure: it is
/// unknown, never a zero count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHealth {
    /// Persistence mode (`nvmlDeviceGetPersistenceMode`): off, the driver tears the GPU
    /// down whenever no client holds it, and each `nvidia-smi` or CUDA start re-initialises it.
    pub persistence_mode: Fact<bool>,
    /// ECC enabled now (`nvmlDeviceGetEccMode`).
    pub ecc_enabled: Fact<bool>,
    /// ECC errors since the driver loaded (`nvmlDeviceGetTotalEccErrors`, volatile).
    pub ecc_volatile: Fact<EccCounts>,
    /// ECC errors over the GPU's life (aggregate).
    pub ecc_aggregate: Fact<EccCounts>,
    /// Pages retired for ECC errors (`nvmlDeviceGetRetiredPages_v2`; GPUs before Ampere).
    pub retired_pages: Fact<RetiredPages>,
    /// Whether retired pages wait for a reboot to take effect
    /// (`nvmlDeviceGetRetiredPagesPendingStatus`).
    pub retired_pages_pending: Fact<bool>,
    /// Row remapping (Ampere and newer), read through NVML's field values
    /// `NVML_FI_DEV_REMAPPED_*`.
    pub remapped_rows: Fact<RemappedRows>,
}

impl Default for GpuHealth {
    /// For records that predate the health facts: every fact unknown, never zero.
    fn default() -> Self {
        GpuHealth::all_failing(NvmlFailure::new(
            FailureKind::Other,
            "this record predates envctl reading GPU health",
        ))
    }
}

impl GpuHealth {
    /// Every health fact carries the same failure (a GPU NVML would not hand out).
    pub fn all_failing(failure: NvmlFailure) -> Self {
        GpuHealth {
            persistence_mode: Fact::Error(failure.clone()),
            ecc_enabled: Fact::Error(failure.clone()),
            ecc_volatile: Fact::Error(failure.clone()),
            ecc_aggregate: Fact::Error(failure.clone()),
            retired_pages: Fact::Error(failure.clone()),
            retired_pages_pending: Fact::Error(failure.clone()),
            remapped_rows: Fact::Error(failure),
        }
    }
}

/// ECC error counts of one counter (volatile or aggregate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EccCounts {
    /// Single-bit errors, corrected by ECC.
    pub corrected: u64,
    /// Double-bit errors ECC could not correct.
    pub uncorrected: u64,
}

/// Retired pages by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiredPages {
    /// Retired after repeated single-bit errors.
    pub single_bit: u64,
    /// Retired after a double-bit error.
    pub double_bit: u64,
}

/// NVML's remapped-row counters and states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemappedRows {
    pub correctable: u64,
    pub uncorrectable: u64,
    /// A remap waits for a GPU reset: until then the bad row is still in use.
    pub pending: bool,
    /// A remap failed: the GPU has run out of spare rows.
    pub failure: bool,
}

fn minor_not_recorded() -> Fact<u32> {
    Fact::Error(NvmlFailure::new(
        FailureKind::Other,
        "this record predates envctl reading GPU minor numbers",
    ))
}

fn processes_not_recorded() -> Fact<Vec<crate::gpu_sample::GpuProcess>> {
    Fact::Error(NvmlFailure::new(
        FailureKind::Other,
        "this record predates envctl reading GPU processes",
    ))
}

impl GpuDevice {
    /// A GPU NVML counted but would not hand out: every fact carries the same failure.
    pub fn unreachable(index: u32, failure: NvmlFailure) -> Self {
        GpuDevice {
            index,
            name: Fact::Error(failure.clone()),
            uuid: Fact::Error(failure.clone()),
            pci_bus_id: Fact::Error(failure.clone()),
            compute_capability: Fact::Error(failure.clone()),
            memory: Fact::Error(failure.clone()),
            mig_mode: Fact::Error(failure.clone()),
            power_limit_watts: Fact::Error(failure.clone()),
            processes: Fact::Error(failure.clone()),
            minor_number: Fact::Error(failure.clone()),
            health: GpuHealth::all_failing(failure),
        }
    }

    /// NVML's "GPU is lost" (`NVML_ERROR_GPU_IS_LOST`) from any query of this GPU: it fell
    /// off the bus, whatever else was read before.
    pub fn lost(&self) -> Option<&NvmlFailure> {
        let health = &self.health;
        [
            self.name.failure(),
            self.uuid.failure(),
            self.pci_bus_id.failure(),
            self.compute_capability.failure(),
            self.memory.failure(),
            self.mig_mode.failure(),
            self.power_limit_watts.failure(),
            self.processes.failure(),
            self.minor_number.failure(),
            health.persistence_mode.failure(),
            health.ecc_enabled.failure(),
            health.ecc_volatile.failure(),
            health.ecc_aggregate.failure(),
            health.retired_pages.failure(),
            health.retired_pages_pending.failure(),
            health.remapped_rows.failure(),
        ]
        .into_iter()
        .flatten()
        .find(|failure| failure.kind == FailureKind::GpuLost)
    }
}

/// Frame-buffer memory in bytes, as NVML's `nvmlMemory_v2_t` splits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuMemory {
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// Set aside by the driver; neither used nor free.
    pub reserved_bytes: u64,
    pub free_bytes: u64,
}

/// Multi-Instance GPU mode now and after the next GPU reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigMode {
    pub current: MigSetting,
    pub pending: MigSetting,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigSetting {
    Disabled,
    Enabled,
}

impl MigSetting {
    /// NVML's `NVML_DEVICE_MIG_DISABLE` (0) / `NVML_DEVICE_MIG_ENABLE` (1).
    pub fn from_nvml(value: u32) -> Result<Self, NvmlFailure> {
        match value {
            0 => Ok(MigSetting::Disabled),
            1 => Ok(MigSetting::Enabled),
            other => Err(NvmlFailure::invalid_value(format!(
                "NVML reported MIG mode {other}, which is neither 0 (disabled) nor 1 (enabled)"
            ))),
        }
    }
}

/// The newest CUDA version a driver supports: `12.8` for NVML's integer 12080.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaDriverVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaDriverVersion {
    /// From NVML's (and CUDA's) encoding `1000 × major + 10 × minor`, e.g. 12080 → 12.8.
    pub fn from_nvml_integer(value: i32) -> Result<Self, NvmlFailure> {
        let value = u32::try_from(value).map_err(|_| {
            NvmlFailure::invalid_value(format!(
                "NVML reported CUDA driver version {value}, which is negative"
            ))
        })?;
        Ok(CudaDriverVersion {
            major: value / 1000,
            minor: (value % 1000) / 10,
        })
    }
}

/// The compatibility verdicts compare CUDA versions as the profile writes them.
impl From<CudaDriverVersion> for CudaVersion {
    fn from(version: CudaDriverVersion) -> Self {
        CudaVersion {
            major: version.major,
            minor: version.minor,
        }
    }
}

impl fmt::Display for CudaDriverVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for CudaDriverVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("`{text}` is not a CUDA version like 12.8");
        let (major, minor) = text.trim().split_once('.').ok_or_else(invalid)?;
        Ok(CudaDriverVersion {
            major: major.parse().map_err(|_| invalid())?,
            minor: minor.parse().map_err(|_| invalid())?,
        })
    }
}

impl Serialize for CudaDriverVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CudaDriverVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One query's answer: `{"value": …}` or `{"error": {"kind": …, "message": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    Value(T),
    Error(NvmlFailure),
}

impl<T> Fact<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Fact::Value(value) => Some(value),
            Fact::Error(_) => None,
        }
    }

    pub fn failure(&self) -> Option<&NvmlFailure> {
        match self {
            Fact::Value(_) => None,
            Fact::Error(failure) => Some(failure),
        }
    }

    pub fn as_result(&self) -> Result<&T, &NvmlFailure> {
        match self {
            Fact::Value(value) => Ok(value),
            Fact::Error(failure) => Err(failure),
        }
    }

    pub fn map<U>(self, convert: impl FnOnce(T) -> U) -> Fact<U> {
        match self {
            Fact::Value(value) => Fact::Value(convert(value)),
            Fact::Error(failure) => Fact::Error(failure),
        }
    }

    /// For raw answers that still need reading (an integer version, a MIG code).
    pub fn and_then<U>(self, convert: impl FnOnce(T) -> Result<U, NvmlFailure>) -> Fact<U> {
        match self {
            Fact::Value(value) => convert(value).into(),
            Fact::Error(failure) => Fact::Error(failure),
        }
    }
}

impl<T> From<Result<T, NvmlFailure>> for Fact<T> {
    fn from(result: Result<T, NvmlFailure>) -> Self {
        match result {
            Ok(value) => Fact::Value(value),
            Err(failure) => Fact::Error(failure),
        }
    }
}

/// Why one NVML query gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvmlFailure {
    pub kind: FailureKind,
    /// The NVML function that failed, e.g. `nvmlDeviceGetMemoryInfo_v2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// NVML's (or the loader's) own words.
    pub message: String,
}

impl NvmlFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        NvmlFailure {
            kind,
            function: None,
            message: message.into(),
        }
    }

    /// NVML answered, but with a value envctl cannot read.
    pub fn invalid_value(message: impl Into<String>) -> Self {
        NvmlFailure::new(FailureKind::InvalidValue, message)
    }

    pub fn in_function(mut self, function: &str) -> Self {
        self.function = Some(function.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_driver_integers_become_major_minor() {
        let version = |value| CudaDriverVersion::from_nvml_integer(value).unwrap();
        assert_eq!(version(12080).to_string(), "12.8");
        assert_eq!(version(12040).to_string(), "12.4");
        assert_eq!(version(11040).to_string(), "11.4");
        assert_eq!(version(13000).to_string(), "13.0");
        assert_eq!(
            version(12090),
            CudaDriverVersion {
                major: 12,
                minor: 9
            }
        );
        let failure = CudaDriverVersion::from_nvml_integer(-1).unwrap_err();
        assert_eq!(failure.kind, FailureKind::InvalidValue);
        assert!(version(12080) < version(13000));
        assert_eq!(
            CudaVersion::from(version(12080)),
            CudaVersion {
                major: 12,
                minor: 8
            }
        );
    }

    #[test]
    fn cuda_driver_versions_round_trip_as_text() {
        let version: CudaDriverVersion = "12.8".parse().unwrap();
        assert_eq!(serde_json::to_string(&version).unwrap(), "\"12.8\"");
        let back: CudaDriverVersion = serde_json::from_str("\"12.8\"").unwrap();
        assert_eq!(back, version);
        assert!("12".parse::<CudaDriverVersion>().is_err());
    }

    #[test]
    fn mig_codes_other_than_zero_and_one_are_failures() {
        assert_eq!(MigSetting::from_nvml(0), Ok(MigSetting::Disabled));
        assert_eq!(MigSetting::from_nvml(1), Ok(MigSetting::Enabled));
        assert_eq!(
            MigSetting::from_nvml(7).unwrap_err().kind,
            FailureKind::InvalidValue
        );
    }

    #[test]
    fn facts_serialise_as_value_or_error() {
        let value: Fact<u32> = Fact::Value(8);
        assert_eq!(serde_json::to_string(&value).unwrap(), r#"{"value":8}"#);
        let error: Fact<u32> = Fact::Error(
            NvmlFailure::new(FailureKind::NotSupported, "not available")
                .in_function("nvmlDeviceGetMigMode"),
        );
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"error":{"kind":"not_supported","function":"nvmlDeviceGetMigMode","message":"not available"}}"#
        );
        let back: Fact<u32> =
            serde_json::from_str(&serde_json::to_string(&error).unwrap()).unwrap();
        assert_eq!(back, error);
    }

    #[test]
    fn load_failures_keep_their_kind_and_message() {
        let outcome = LoadOutcome::from_failure(NvmlFailure::new(
            FailureKind::DriverNotLoaded,
            "NVIDIA driver is not loaded",
        ));
        assert_eq!(
            outcome,
            LoadOutcome::DriverNotLoaded {
                message: "NVIDIA driver is not loaded".to_string()
            }
        );
        assert_eq!(
            serde_json::to_value(&outcome).unwrap(),
            serde_json::json!({"outcome": "driver_not_loaded", "message": "NVIDIA driver is not loaded"})
        );
        let odd = LoadOutcome::from_failure(NvmlFailure::new(FailureKind::Other, "code 28"));
        assert_eq!(odd.failure_message(), Some("code 28"));
        assert!(matches!(odd, LoadOutcome::Unknown { .. }));
    }

    #[test]
    fn an_unreachable_gpu_carries_the_failure_in_every_fact() {
        let failure = NvmlFailure::new(FailureKind::GpuLost, "fell off the bus");
        let device = GpuDevice::unreachable(3, failure.clone());
        assert_eq!(device.index, 3);
        assert_eq!(device.memory.failure(), Some(&failure));
        assert_eq!(device.power_limit_watts.failure(), Some(&failure));
    }
}
