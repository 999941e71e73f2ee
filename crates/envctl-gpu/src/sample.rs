//! GPU readings for `envctl stats`: NVML opened once and asked again at every interval.
//!
//! Where `nvml.rs` opens NVML, reads the static facts and closes it, a monitor asks the
//! same questions every second, so [`GpuSampler`] keeps the library open. Each answer is
//! its own: a query that fails leaves a `None` and a named [`NvmlFailure`] in the sample,
//! never a silent gap. The samples themselves are plain data in `envctl_facts::gpu_sample`.

use std::ffi::OsStr;
use std::path::Path;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use super::nvml::failure;
use envctl_facts::gpu::{LoadOutcome, NvmlFailure};
use envctl_facts::gpu_sample::{GpuProcess, GpuReadings, GpuSample, GpuUnavailable, XidCount};

/// NVML, open for repeated sampling. Closed on drop.
pub struct GpuSampler {
    nvml: Option<Nvml>,
    library: String,
    /// The Xids seen since it opened, by GPU index (issue 43).
    xids: XidWatcher,
}

/// How long one wait for an NVML event lasts: the longest an Xid waits before it is
/// counted (the next sample shows it), and the longest a stopped watcher lingers.
const EVENT_WAIT_MILLISECONDS: u32 = 200;

/// Xid events (`nvmlEventTypeXidCriticalError`), watched on a thread of its own: NVML's
/// event set borrows its own NVML handle, and `nvmlEventSetWait_v2` blocks. The thread
/// opens NVML a second time (NVML counts its initialisations) and stops when the sampler
/// is dropped. Nothing is watched where NVML offers no events: the counts stay empty.
struct XidWatcher {
    seen: std::sync::Arc<std::sync::Mutex<Vec<XidCount>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Why the last Xid of a GPU could not be recorded for `up`, by GPU index.
    unrecorded: std::sync::Arc<std::sync::Mutex<Vec<(u32, String)>>>,
}

/// Keeps each Xid the watcher sees where every `up` of the host reads it (issue 43's
/// keep-out; `host::gpu_health` through `ops::stats`): called on the watcher's thread
/// with the GPU's UUID, its index and the Xid; `Err` says why it was not kept.
pub type XidRecorder = Box<dyn Fn(&str, u32, u32) -> Result<(), String> + Send>;

impl XidWatcher {
    fn start(library: &OsStr, recorder: Option<XidRecorder>) -> XidWatcher {
        let watcher = XidWatcher {
            seen: Default::default(),
            stop: Default::default(),
            unrecorded: Default::default(),
        };
        let (seen, stop) = (watcher.seen.clone(), watcher.stop.clone());
        let unrecorded = watcher.unrecorded.clone();
        let library = library.to_os_string();
        // A watcher that cannot start leaves the counts empty; the samples say the rest.
        let _ = std::thread::Builder::new()
            .name("envctl-xid-watcher".into())
            .spawn(move || {
                let keep = |uuid: &str, gpu: u32, xid: u32| {
                    let Some(recorder) = &recorder else {
                        return;
                    };
                    let kept = recorder(uuid, gpu, xid);
                    if let Ok(mut unrecorded) = unrecorded.lock() {
                        unrecorded.retain(|(index, _)| *index != gpu);
                        if let Err(why) = kept {
                            unrecorded.push((gpu, why));
                        }
                    }
                };
                watch_xids(&library, &seen, &stop, &keep);
            });
        watcher
    }

    /// The counts of GPU `index`; `Err` when they cannot be told (the watcher's thread
    /// stopped in the middle of counting, leaving them poisoned): unknown, never none.
    fn of(&self, index: u32) -> Result<Vec<XidCount>, NvmlFailure> {
        self.seen
            .lock()
            .map(|seen| {
                seen.iter()
                    .filter(|count| count.gpu == index)
                    .cloned()
                    .collect()
            })
            .map_err(|_| {
                NvmlFailure::new(
                    envctl_facts::gpu::FailureKind::Other,
                    "the Xid counts are unknown: the thread watching NVML's events stopped while counting one",
                )
                .in_function("nvmlEventSetWait_v2")
            })
    }

    /// Why GPU `index`'s last Xid was not recorded for `up`, if it was not.
    fn unrecorded(&self, index: u32) -> Option<NvmlFailure> {
        let unrecorded = self.unrecorded.lock().ok()?;
        let (_, why) = unrecorded.iter().find(|(gpu, _)| *gpu == index)?;
        Some(NvmlFailure::new(
            envctl_facts::gpu::FailureKind::Other,
            format!(
                "the Xid seen on this GPU was not recorded for `envctl up` (which then may place a job on it): {why}"
            ),
        ))
    }
}

impl Drop for XidWatcher {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Counts the Xid events of every GPU that offers them in `seen`, handing each to `keep`
/// by UUID, until `stop` is set.
fn watch_xids(
    library: &OsStr,
    seen: &std::sync::Mutex<Vec<XidCount>>,
    stop: &std::sync::atomic::AtomicBool,
    keep: &dyn Fn(&str, u32, u32),
) {
    let Ok(nvml) = Nvml::builder().lib_path(library).init() else {
        return;
    };
    let Some(set) = xid_event_set(&nvml) else {
        return;
    };
    if !wait_for_xids(&set, seen, stop, keep) {
        return;
    }
    drop(set);
    // As the sampler does: a library without `nvmlShutdown` is left open at exit.
    if nvml.lib().nvmlShutdown.is_err() {
        std::mem::forget(nvml);
    }
}

/// An event set with every GPU that offers Xid events; `None` when none does or no set
/// can be made. A failed registration releases the whole set (and the registrations
/// before it), so the set is built again without that GPU.
fn xid_event_set(nvml: &Nvml) -> Option<nvml_wrapper::EventSet<'_>> {
    use nvml_wrapper::bitmasks::event::EventTypes;
    let mut candidates: Vec<u32> = (0..nvml.device_count().unwrap_or(0))
        .filter(|&index| {
            nvml.device_by_index(index)
                .and_then(|device| device.supported_event_types())
                .is_ok_and(|types| types.contains(EventTypes::CRITICAL_XID_ERROR))
        })
        .collect();
    loop {
        if candidates.is_empty() {
            return None;
        }
        let Ok(mut set) = nvml.create_event_set() else {
            return None;
        };
        let mut failed = None;
        for (position, &index) in candidates.iter().enumerate() {
            let Ok(device) = nvml.device_by_index(index) else {
                failed = Some(position);
                break;
            };
            match device.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
                Ok(kept) => set = kept,
                Err(_) => {
                    failed = Some(position);
                    // The set is gone with the failure: build it again.
                    match nvml.create_event_set() {
                        Ok(fresh) => set = fresh,
                        Err(_) => return None,
                    }
                    break;
                }
            }
        }
        match failed {
            Some(position) => {
                candidates.remove(position);
            }
            None => return Some(set),
        }
    }
}

/// Waits for Xid events on `set` until `stop` is set (`true`) or the set stops answering
/// (`false`: waiting again would spin).
fn wait_for_xids(
    set: &nvml_wrapper::EventSet<'_>,
    seen: &std::sync::Mutex<Vec<XidCount>>,
    stop: &std::sync::atomic::AtomicBool,
    keep: &dyn Fn(&str, u32, u32),
) -> bool {
    use nvml_wrapper::enums::event::XidError;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        match set.wait(EVENT_WAIT_MILLISECONDS) {
            Ok(event) => {
                let (Ok(gpu), Some(XidError::Value(xid))) =
                    (event.device.index(), event.event_data)
                else {
                    continue;
                };
                count_xid(seen, gpu, xid);
                // Kept by UUID (an index changes when a GPU falls off the bus); a GPU
                // whose UUID cannot be read now is kept nowhere, and said.
                match (event.device.uuid(), u32::try_from(xid)) {
                    (Ok(uuid), Ok(xid)) => keep(&uuid, gpu, xid),
                    (Err(_), _) | (_, Err(_)) => {}
                }
            }
            Err(NvmlError::Timeout) => {}
            Err(_) => return false,
        }
    }
    true
}

/// One more `xid` seen on `gpu`.
fn count_xid(seen: &std::sync::Mutex<Vec<XidCount>>, gpu: u32, xid: u64) {
    if let Ok(mut seen) = seen.lock() {
        match seen
            .iter_mut()
            .find(|count| count.gpu == gpu && count.xid == xid)
        {
            Some(count) => count.count += 1,
            None => seen.push(XidCount { gpu, xid, count: 1 }),
        }
    }
}

impl GpuSampler {
    /// Opens NVML from `library` (`ENVCTL_NVML_LIBRARY`), else the driver's
    /// `libnvidia-ml.so.1`. An empty path counts as not given.
    /// `recorder` keeps each Xid seen for the host's `up`s ([`XidRecorder`]).
    pub fn open(
        library: Option<&Path>,
        recorder: Option<XidRecorder>,
    ) -> Result<GpuSampler, GpuUnavailable> {
        let library = library
            .map(Path::as_os_str)
            .filter(|path| !path.is_empty())
            .unwrap_or(OsStr::new(super::DEFAULT_LIBRARY));
        let name = library.to_string_lossy().into_owned();
        match Nvml::builder().lib_path(library).init() {
            Ok(nvml) => Ok(GpuSampler {
                nvml: Some(nvml),
                library: name,
                xids: XidWatcher::start(library, recorder),
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
            gpus: (0..count)
                .map(|index| {
                    let mut sample = sample_device(nvml, index);
                    match self.xids.of(index) {
                        Ok(xids) => sample.xids = xids,
                        Err(unknown) => sample.failures.push(unknown),
                    }
                    sample.failures.extend(self.xids.unrecorded(index));
                    sample
                })
                .collect(),
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

    /// A watcher thread that stopped while counting leaves the counts unknown, said as a
    /// failure, never an empty list that reads as "no Xid".
    #[test]
    fn poisoned_xid_counts_are_unknown_not_none() {
        let watcher = XidWatcher {
            seen: Default::default(),
            stop: Default::default(),
            unrecorded: Default::default(),
        };
        let seen = watcher.seen.clone();
        let _ = std::thread::spawn(move || {
            let _held = seen.lock().unwrap();
            panic!("the watcher stops while counting");
        })
        .join();
        let unknown = watcher.of(0).unwrap_err();
        assert!(unknown.message.contains("unknown"), "{unknown:?}");
        let sound = XidWatcher {
            seen: std::sync::Arc::new(std::sync::Mutex::new(vec![XidCount {
                gpu: 1,
                xid: 79,
                count: 2,
            }])),
            stop: Default::default(),
            unrecorded: std::sync::Arc::new(std::sync::Mutex::new(vec![(1, "disk full".into())])),
        };
        assert_eq!(sound.of(1).unwrap().len(), 1);
        assert!(sound.of(0).unwrap().is_empty());
        assert!(sound.unrecorded(1).unwrap().message.contains("disk full"));
        assert!(sound.unrecorded(0).is_none());
    }

    #[test]
    fn an_absent_library_is_a_named_outcome() {
        let unavailable = GpuSampler::open(
            Some(Path::new("/nonexistent/envctl-unit-test/libnvidia-ml.so.1")),
            None,
        )
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
