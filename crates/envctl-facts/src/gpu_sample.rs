//! What `envctl stats` reads from the GPUs at each interval: plain serde data filled by
//! `gpu::sample::GpuSampler`, with no nvml-wrapper type in it, so the monitor's views and
//! recordings judge and replay it without a driver.
//!
//! Each answer is its own: a query that fails leaves a `None` and a named [`NvmlFailure`]
//! in the sample, never a silent gap.

use serde::{Deserialize, Serialize};

use super::gpu::{FailureKind, LoadOutcome, NvmlFailure};

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
    /// ECC, retired pages, remapped rows and persistence (issue 43), read at each sample.
    #[serde(default)]
    pub health: crate::gpu::GpuHealth,
    /// The Xids NVML's events reported on this GPU since `stats` started.
    #[serde(default)]
    pub xids: Vec<XidCount>,
}

/// How often one Xid arrived on one GPU since the watcher started (the sample that first
/// shows it dates it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XidCount {
    pub gpu: u32,
    pub xid: u64,
    pub count: u64,
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

/// Why NVML could not be opened: the library tried and the named outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuUnavailable {
    pub library: String,
    pub outcome: LoadOutcome,
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
}
