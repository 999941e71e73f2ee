//! GPU readings for `envctl stats`: NVML opened once and asked again at every interval.
//!
//! Where `nvml.rs` opens NVML, reads the static facts and closes it, a monitor asks the
//! same questions every second, so [`GpuSampler`] keeps the library open. Each answer is
//! its own: a query that fails leaves a `None` and a named [`NvmlFailure`] in the sample,
//! never a silent gap.

use std::ffi::OsStr;
use std::path::Path;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use serde::{Deserialize, Serialize};

use super::facts::{FailureKind, LoadOutcome, NvmlFailure};
use super::nvml::failure;

/// One GPU at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    /// Percent of the last sample period in which a kernel ran (NVML's "GPU" rate, which
    /// nvidia-smi calls SM utilisation).
    pub utilization_percent: Option<u32>,
    /// Percent of the period the memory was read or written.
    pub memory_utilization_percent: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub sm_clock_mhz: Option<u32>,
    pub memory_clock_mhz: Option<u32>,
    /// `nvmlClocksThrottleReasons` bits; [`throttle_reason_names`] reads them.
    pub throttle_reasons_mask: Option<u64>,
    /// Compute processes and the GPU memory each holds, by host PID; `None` when NVML
    /// could not list them (the query failed or is not offered, or the device could not
    /// be opened).
    pub processes: Option<Vec<GpuProcess>>,
    /// Every query that gave no answer, named with its NVML function.
    pub failures: Vec<NvmlFailure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// The host PID: NVML is not PID-namespace aware.
    pub pid: u32,
    /// None when the driver does not say (Windows WDDM, some MIG setups).
    pub used_memory_bytes: Option<u64>,
}

/// Every GPU at one moment, or why the GPUs could not be listed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReadings {
    pub gpus: Vec<GpuSample>,
    /// `nvmlDeviceGetCount_v2` failed: no GPU could be read.
    pub failure: Option<NvmlFailure>,
}

/// `nvmlClocksThrottleReasons` bits (nvml.h), in the names nvidia-smi prints, snake case.
pub const THROTTLE_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the bits set in `mask`; unknown bits are named by their value.
pub fn throttle_reason_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| (*name).to_string())
        .collect();
    let known = THROTTLE_REASONS.iter().fold(0, |all, (bit, _)| all | bit);
    if mask & !known != 0 {
        names.push(format!("0x{:x}", mask & !known));
    }
    names
}

/// NVML, open for repeated sampling. Closed on drop.
pub struct GpuSampler {
    nvml: Option<Nvml>,
    library: String,
}

/// Why NVML could not be opened: the library tried and the named outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuUnavailable {
    pub library: String,
    pub outcome: LoadOutcome,
}

impl GpuSampler {
    /// Opens NVML from `library` (`ENVCTL_NVML_LIBRARY`), else the driver's
    /// `libnvidia-ml.so.1`. An empty path counts as not given.
    pub fn open(library: Option<&Path>) -> Result<GpuSampler, GpuUnavailable> {
        let library = library
            .map(Path::as_os_str)
            .filter(|path| !path.is_empty())
            .unwrap_or(OsStr::new(super::DEFAULT_LIBRARY));
        let name = library.to_string_lossy().into_owned();
        match Nvml::builder().lib_path(library).init() {
            Ok(nvml) => Ok(GpuSampler {
                nvml: Some(nvml),
                library: name,
            }),
            Err(error) => Err(GpuUnavailable {
                library: name,
                outcome: LoadOutcome::from_failure(failure(error).in_function("nvmlInit_v2")),
            }),
        }
    }

    /// The library NVML was loaded from.
    pub fn library(&self) -> &str {
        &self.library
    }

    /// Reads every GPU. Blocking: NVML calls take from microseconds to tens of
    /// milliseconds on a busy driver, so async callers run this on a blocking thread.
    pub fn sample(&self) -> GpuReadings {
        let Some(nvml) = &self.nvml else {
            return GpuReadings::default();
        };
        let count = match nvml.device_count() {
            Ok(count) => count,
            Err(error) => {
                return GpuReadings {
                    gpus: Vec::new(),
                    failure: Some(failure(error).in_function("nvmlDeviceGetCount_v2")),
                };
            }
        };
        GpuReadings {
            gpus: (0..count).map(|index| sample_device(nvml, index)).collect(),
            failure: None,
        }
    }
}

fn sample_device(nvml: &Nvml, index: u32) -> GpuSample {
    let mut sample = GpuSample {
        index,
        ..GpuSample::default()
    };
    let device = match nvml.device_by_index(index) {
        Ok(device) => device,
        Err(error) => {
            sample
                .failures
                .push(failure(error).in_function("nvmlDeviceGetHandleByIndex_v2"));
            return sample;
        }
    };
    let failures = &mut sample.failures;
    sample.name = answer(failures, device.name(), "nvmlDeviceGetName");
    sample.uuid = answer(failures, device.uuid(), "nvmlDeviceGetUUID");
    if let Some(rates) = answer(
        failures,
        device.utilization_rates(),
        "nvmlDeviceGetUtilizationRates",
    ) {
        sample.utilization_percent = Some(rates.gpu);
        sample.memory_utilization_percent = Some(rates.memory);
    }
    if let Some(memory) = answer(failures, device.memory_info(), "nvmlDeviceGetMemoryInfo_v2") {
        sample.memory_used_bytes = Some(memory.used);
        sample.memory_total_bytes = Some(memory.total);
    }
    sample.temperature_c = answer(
        failures,
        device.temperature(TemperatureSensor::Gpu),
        "nvmlDeviceGetTemperature",
    );
    sample.power_w = answer(failures, device.power_usage(), "nvmlDeviceGetPowerUsage").map(watts);
    sample.power_limit_w = answer(
        failures,
        device.enforced_power_limit(),
        "nvmlDeviceGetEnforcedPowerLimit",
    )
    .map(watts);
    sample.sm_clock_mhz = answer(
        failures,
        device.clock_info(Clock::SM),
        "nvmlDeviceGetClockInfo",
    );
    sample.memory_clock_mhz = answer(
        failures,
        device.clock_info(Clock::Memory),
        "nvmlDeviceGetClockInfo",
    );
    sample.throttle_reasons_mask = answer(
        failures,
        device.current_throttle_reasons(),
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    )
    .map(|reasons| reasons.bits());
    sample.processes = answer(
        failures,
        device.running_compute_processes(),
        "nvmlDeviceGetComputeRunningProcesses_v3",
    )
    .map(|processes| {
        processes
            .into_iter()
            .map(|process| GpuProcess {
                pid: process.pid,
                used_memory_bytes: match process.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Some(bytes),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect()
    });
    sample
}

/// The value, or `None` with the failure named after `function`.
fn answer<T>(
    failures: &mut Vec<NvmlFailure>,
    result: Result<T, NvmlError>,
    function: &str,
) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            failures.push(failure(error).in_function(function));
            None
        }
    }
}

fn watts(milliwatts: u32) -> f64 {
    f64::from(milliwatts) / 1000.0
}

impl Drop for GpuSampler {
    fn drop(&mut self) {
        let Some(nvml) = self.nvml.take() else {
            return;
        };
        if nvml.lib().nvmlShutdown.is_err() {
            // nvml-wrapper's own drop would panic on a library without `nvmlShutdown`
            // (api-facts §2.1); leaking the handle is the safe way out at exit.
            std::mem::forget(nvml);
            return;
        }
        // Nothing is left to tell at exit: the samples were taken and shown.
        let _ = nvml.shutdown();
    }
}

/// Whether a failure only says the GPU does not offer the query: expected on many
/// models (clocks or power on some GeForce cards), so views stay quiet about it.
pub fn is_not_supported(failure: &NvmlFailure) -> bool {
    failure.kind == FailureKind::NotSupported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_bits_are_named() {
        assert_eq!(throttle_reason_names(0), Vec::<String>::new());
        assert_eq!(throttle_reason_names(0x1), vec!["gpu_idle"]);
        assert_eq!(
            throttle_reason_names(0x4 | 0x40),
            vec!["sw_power_cap", "hw_thermal_slowdown"]
        );
        assert_eq!(throttle_reason_names(0x1000), vec!["0x1000"]);
    }

    #[test]
    fn an_absent_library_is_a_named_outcome() {
        let unavailable = GpuSampler::open(Some(Path::new(
            "/nonexistent/envctl-unit-test/libnvidia-ml.so.1",
        )))
        .err()
        .unwrap();
        assert!(matches!(
            unavailable.outcome,
            LoadOutcome::LibraryNotFound { .. }
        ));
        assert_eq!(
            unavailable.library,
            "/nonexistent/envctl-unit-test/libnvidia-ml.so.1"
        );
    }
}
