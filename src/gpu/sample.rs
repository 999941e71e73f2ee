//! GPU readings for `envctl stats`: NVML opened once and asked again at every interval.
//!
//! Where `nvml.rs` opens NVML, reads the static facts and closes it, a monitor asks the
//! same questions every second, so [`GpuSampler`] keeps the library open. Each answer is
//! its own: a query that fails leaves a `None` and a named [`NvmlFailure`] in the sample,
//! never a silent gap. The samples themselves are plain data in `crate::facts::gpu_sample`.

use std::ffi::OsStr;
use std::path::Path;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use super::nvml::failure;
use crate::facts::gpu::{LoadOutcome, NvmlFailure};
use crate::facts::gpu_sample::{GpuProcess, GpuReadings, GpuSample, GpuUnavailable};

/// NVML, open for repeated sampling. Closed on drop.
pub struct GpuSampler {
    nvml: Option<Nvml>,
    library: String,
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
    .map(|processes| processes.into_iter().map(process).collect());
    // The health facts keep their own failures: "not supported" there is unknown, and a
    // GPU lost mid-run shows in them as in any other query.
    sample.health = super::nvml::query_health(&device);
    sample
}

/// One compute process as NVML lists it; its memory is `None` where NVML cannot say (a
/// process of another container namespace on some drivers).
pub(super) fn process(process: nvml_wrapper::struct_wrappers::device::ProcessInfo) -> GpuProcess {
    GpuProcess {
        pid: process.pid,
        used_memory_bytes: match process.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => Some(bytes),
            UsedGpuMemory::Unavailable => None,
        },
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
