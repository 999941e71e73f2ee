//! The only file that calls nvml-wrapper: open the library, ask each question once, close
//! it again, and turn every answer and every error into the plain facts of `envctl_facts::gpu`.

use std::ffi::OsStr;

use nvml_wrapper::Device;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, RetirementCause};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;

use envctl_facts::gpu::{
    CudaDriverVersion, EccCounts, Fact, FailureKind, GpuDevice, GpuHealth, GpuMemory, LoadOutcome,
    MigMode, MigSetting, NvmlFacts, NvmlFailure, RemappedRows, RetiredPages,
};
use envctl_facts::versions::ComputeCapability;

/// Loads NVML from `library` and reads the driver and every GPU.
pub(super) fn load_and_query(library: &OsStr) -> LoadOutcome {
    // The builder with no flags calls `nvmlInit_v2`. nvml-wrapper's `dlopen` is cheap when
    // the library is absent (one failed lookup), which keeps a GPU-less doctor fast.
    let nvml = match Nvml::builder().lib_path(library).init() {
        Ok(nvml) => nvml,
        Err(error) => return LoadOutcome::from_failure(failure(error).in_function("nvmlInit_v2")),
    };
    let mut facts = query_system(&nvml);
    facts.shutdown_failure = close(nvml);
    LoadOutcome::Loaded(Box::new(facts))
}

fn query_system(nvml: &Nvml) -> NvmlFacts {
    let device_count = fact(nvml.device_count(), "nvmlDeviceGetCount_v2");
    let gpus = match device_count.value() {
        Some(&count) => (0..count).map(|index| query_device(nvml, index)).collect(),
        None => Vec::new(),
    };
    NvmlFacts {
        driver_version: fact(nvml.sys_driver_version(), "nvmlSystemGetDriverVersion"),
        cuda_driver_version: fact(
            nvml.sys_cuda_driver_version(),
            "nvmlSystemGetCudaDriverVersion_v2",
        )
        .and_then(CudaDriverVersion::from_nvml_integer),
        nvml_version: fact(nvml.sys_nvml_version(), "nvmlSystemGetNVMLVersion"),
        device_count,
        gpus,
        shutdown_failure: None,
    }
}

fn query_device(nvml: &Nvml, index: u32) -> GpuDevice {
    let device = match nvml.device_by_index(index) {
        Ok(device) => device,
        Err(error) => {
            return GpuDevice::unreachable(
                index,
                failure(error).in_function("nvmlDeviceGetHandleByIndex_v2"),
            );
        }
    };
    GpuDevice {
        index,
        name: fact(device.name(), "nvmlDeviceGetName"),
        uuid: fact(device.uuid(), "nvmlDeviceGetUUID"),
        pci_bus_id: fact(device.pci_info(), "nvmlDeviceGetPciInfo_v3").map(|pci| pci.bus_id),
        compute_capability: fact(
            device.cuda_compute_capability(),
            "nvmlDeviceGetCudaComputeCapability",
        )
        .and_then(|capability| compute_capability(capability.major, capability.minor)),
        memory: fact(device.memory_info(), "nvmlDeviceGetMemoryInfo_v2").map(|memory| GpuMemory {
            total_bytes: memory.total,
            used_bytes: memory.used,
            reserved_bytes: memory.reserved,
            free_bytes: memory.free,
        }),
        mig_mode: fact(device.mig_mode(), "nvmlDeviceGetMigMode").and_then(|mode| {
            Ok(MigMode {
                current: MigSetting::from_nvml(mode.current)?,
                pending: MigSetting::from_nvml(mode.pending)?,
            })
        }),
        power_limit_watts: fact(
            device.enforced_power_limit(),
            "nvmlDeviceGetEnforcedPowerLimit",
        )
        .map(watts_from_milliwatts),
        processes: fact(
            device.running_compute_processes(),
            "nvmlDeviceGetComputeRunningProcesses_v3",
        )
        .map(|processes| processes.into_iter().map(super::sample::process).collect()),
        minor_number: fact(device.minor_number(), "nvmlDeviceGetMinorNumber"),
        health: query_health(&device),
    }
}

/// NVML's field ids for row remapping (`nvml.h`: `NVML_FI_DEV_REMAPPED_COR` … `_FAILURE`);
/// nvml-wrapper has no safe call for `nvmlDeviceGetRemappedRows`, and envctl has no
/// `unsafe`, so the same four numbers come through `nvmlDeviceGetFieldValues`, as DCGM reads them.
const REMAPPED_ROW_FIELDS: [u32; 4] = [142, 143, 144, 145];

pub(super) fn query_health(device: &Device<'_>) -> GpuHealth {
    let ecc = |counter: EccCounter| {
        let function = "nvmlDeviceGetTotalEccErrors";
        fact(
            device.total_ecc_errors(MemoryError::Corrected, counter),
            function,
        )
        .and_then(|corrected| {
            let uncorrected = device
                .total_ecc_errors(MemoryError::Uncorrected, counter)
                .map_err(|error| failure(error).in_function(function))?;
            Ok(EccCounts {
                corrected,
                uncorrected,
            })
        })
    };
    let pages = |cause: RetirementCause| {
        device
            .retired_pages(cause)
            .map(|pages| pages.len() as u64)
            .map_err(|error| failure(error).in_function("nvmlDeviceGetRetiredPages_v2"))
    };
    GpuHealth {
        persistence_mode: fact(
            device.is_in_persistent_mode(),
            "nvmlDeviceGetPersistenceMode",
        ),
        ecc_enabled: fact(device.is_ecc_enabled(), "nvmlDeviceGetEccMode")
            .map(|mode| mode.currently_enabled),
        ecc_volatile: ecc(EccCounter::Volatile),
        ecc_aggregate: ecc(EccCounter::Aggregate),
        retired_pages: pages(RetirementCause::MultipleSingleBitEccErrors)
            .and_then(|single_bit| {
                Ok(RetiredPages {
                    single_bit,
                    double_bit: pages(RetirementCause::DoubleBitEccError)?,
                })
            })
            .into(),
        retired_pages_pending: fact(
            device.are_pages_pending_retired(),
            "nvmlDeviceGetRetiredPagesPendingStatus",
        ),
        remapped_rows: fact(
            device.field_values_for(&REMAPPED_ROW_FIELDS.map(FieldId)),
            "nvmlDeviceGetFieldValues",
        )
        .and_then(remapped_rows),
    }
}

/// The four remapped-row samples, in [`REMAPPED_ROW_FIELDS`]' order; any one failing
/// (a GPU before Ampere answers "not supported") leaves the whole fact unknown.
fn remapped_rows(
    samples: Vec<Result<FieldValueSample, NvmlError>>,
) -> Result<RemappedRows, NvmlFailure> {
    let mut numbers = [0_u64; 4];
    if samples.len() != numbers.len() {
        return Err(NvmlFailure::invalid_value(format!(
            "NVML answered {} remapped-row fields for 4 asked",
            samples.len()
        )));
    }
    for (slot, sample) in numbers.iter_mut().zip(samples) {
        let sample =
            sample.map_err(|error| failure(error).in_function("nvmlDeviceGetFieldValues"))?;
        let value = sample
            .value
            .map_err(|error| failure(error).in_function("nvmlDeviceGetFieldValues"))?;
        *slot = match value {
            SampleValue::U32(number) => u64::from(number),
            SampleValue::U64(number) => number,
            other => {
                return Err(NvmlFailure::invalid_value(format!(
                    "NVML answered remapped-row field {} as {other:?}, not an unsigned count",
                    sample.field.0
                )));
            }
        };
    }
    let [correctable, uncorrectable, pending, failure] = numbers;
    Ok(RemappedRows {
        correctable,
        uncorrectable,
        pending: pending != 0,
        failure: failure != 0,
    })
}

/// Shuts NVML down; a failure is reported, since the facts were already read.
fn close(nvml: Nvml) -> Option<NvmlFailure> {
    if let Err(error) = &nvml.lib().nvmlShutdown {
        let missing = NvmlFailure::new(
            FailureKind::SymbolMissing,
            // The same words nvml-wrapper uses for every other symbol it could not load.
            format!("function symbol failed to load: {error}; NVML was left open"),
        )
        .in_function("nvmlShutdown");
        // nvml-wrapper's `Drop` calls `nvmlShutdown` through an `expect`, so dropping a
        // handle to a library without it panics (api-facts §2.1). Leaking the handle is the
        // safe way out, and costs a short-lived CLI nothing.
        std::mem::forget(nvml);
        return Some(missing);
    }
    match nvml.shutdown() {
        Ok(()) => None,
        Err(error) => Some(failure(error).in_function("nvmlShutdown")),
    }
}

fn fact<T>(result: Result<T, NvmlError>, function: &str) -> Fact<T> {
    result
        .map_err(|error| failure(error).in_function(function))
        .into()
}

/// Names an nvml-wrapper error by what a check would do about it, keeping its words.
pub(super) fn failure(error: NvmlError) -> NvmlFailure {
    let kind = match &error {
        // LibraryNotFound is NVML's own code for a component library it could not open.
        NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => FailureKind::LibraryNotFound,
        // FailedToLoadSymbol: the `dlsym` nvml-wrapper did at load time found nothing;
        // FunctionNotFound: NVML itself says the driver lacks the function.
        NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound => {
            FailureKind::SymbolMissing
        }
        NvmlError::DriverNotLoaded => FailureKind::DriverNotLoaded,
        NvmlError::LibRmVersionMismatch => FailureKind::VersionMismatch,
        NvmlError::NoPermission => FailureKind::NoPermission,
        NvmlError::NotSupported => FailureKind::NotSupported,
        NvmlError::GpuLost => FailureKind::GpuLost,
        NvmlError::Unknown => FailureKind::Unknown,
        _ => FailureKind::Other,
    };
    NvmlFailure::new(kind, error.to_string())
}

fn compute_capability(major: i32, minor: i32) -> Result<ComputeCapability, NvmlFailure> {
    match (u32::try_from(major), u32::try_from(minor)) {
        (Ok(major), Ok(minor)) => Ok(ComputeCapability::new(major, minor)),
        _ => Err(NvmlFailure::invalid_value(format!(
            "NVML reported compute capability {major}.{minor}"
        ))),
    }
}

fn watts_from_milliwatts(milliwatts: u32) -> f64 {
    f64::from(milliwatts) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(error: NvmlError) -> FailureKind {
        failure(error).kind
    }

    #[test]
    fn load_errors_map_to_their_own_kinds() {
        assert_eq!(
            kind_of(NvmlError::DriverNotLoaded),
            FailureKind::DriverNotLoaded
        );
        assert_eq!(
            kind_of(NvmlError::LibRmVersionMismatch),
            FailureKind::VersionMismatch
        );
        assert_eq!(kind_of(NvmlError::NoPermission), FailureKind::NoPermission);
        assert_eq!(
            kind_of(NvmlError::LibraryNotFound),
            FailureKind::LibraryNotFound
        );
        assert_eq!(kind_of(NvmlError::Unknown), FailureKind::Unknown);
    }

    #[test]
    fn a_library_the_loader_cannot_open_is_library_not_found() {
        // A real libloading error: the cheapest way to build one is to ask for a library
        // that does not exist.
        let error = nvml_wrapper::Nvml::builder()
            .lib_path(OsStr::new(
                "/nonexistent/envctl-unit-test/libnvidia-ml.so.1",
            ))
            .init()
            .err()
            .unwrap();
        let failure = failure(error);
        assert_eq!(failure.kind, FailureKind::LibraryNotFound);
        assert!(
            failure
                .message
                .contains("/nonexistent/envctl-unit-test/libnvidia-ml.so.1"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn missing_functions_are_symbol_missing_either_way() {
        let failed_to_load = failure(NvmlError::FailedToLoadSymbol(
            "/lib/libnvidia-ml.so.1: undefined symbol: nvmlDeviceGetMigMode".to_string(),
        ));
        assert_eq!(failed_to_load.kind, FailureKind::SymbolMissing);
        assert!(failed_to_load.message.contains("nvmlDeviceGetMigMode"));
        assert_eq!(
            kind_of(NvmlError::FunctionNotFound),
            FailureKind::SymbolMissing
        );
    }

    #[test]
    fn per_device_errors_map_to_their_kinds() {
        assert_eq!(kind_of(NvmlError::NotSupported), FailureKind::NotSupported);
        assert_eq!(kind_of(NvmlError::GpuLost), FailureKind::GpuLost);
        assert_eq!(kind_of(NvmlError::InvalidArg), FailureKind::Other);
        assert_eq!(
            kind_of(NvmlError::InsufficientSize(None)),
            FailureKind::Other
        );
        // Codes newer than the bindings (28 = NVML_ERROR_GPU_NOT_FOUND) keep their number.
        let unexpected = failure(NvmlError::UnexpectedVariant(28));
        assert_eq!(unexpected.kind, FailureKind::Other);
        assert!(unexpected.message.contains("28"), "{}", unexpected.message);
    }

    #[test]
    fn facts_name_the_function_that_failed() {
        let failed: Fact<u32> = fact(Err(NvmlError::NotSupported), "nvmlDeviceGetMigMode");
        let failure = failed.failure().unwrap();
        assert_eq!(failure.function.as_deref(), Some("nvmlDeviceGetMigMode"));
        assert_eq!(fact(Ok(3_u32), "nvmlDeviceGetCount_v2"), Fact::Value(3));
    }

    #[test]
    fn compute_capabilities_and_power_are_converted() {
        assert_eq!(compute_capability(12, 0), Ok(ComputeCapability::new(12, 0)));
        assert_eq!(
            compute_capability(-1, 0).unwrap_err().kind,
            FailureKind::InvalidValue
        );
        assert_eq!(watts_from_milliwatts(700_000), 700.0);
        assert_eq!(watts_from_milliwatts(71_234), 71.234);
    }
}
