//! A stand-in `libnvidia-ml.so` for envctl's tests: it exports the NVML symbols envctl
//! calls through nvml-wrapper, answering from a fixture file named by
//! `ENVCTL_NVML_STUB_FIXTURE` (format: `tests/fixtures/nvml/README.md`). The fixture is
//! re-read at every `nvmlInit*`, so each test process picks its own machine.
//!
//! Without the variable, `nvmlInit*` answers NVML_ERROR_DRIVER_NOT_LOADED, as a machine
//! with the library but no kernel driver would. An unreadable or malformed fixture
//! answers NVML_ERROR_UNKNOWN and says why on stderr.
//!
//! Safety contract shared by every `unsafe` export: pointer arguments are NVML's
//! out-parameters (or, for `nvmlDeviceGetHandleByUUID`, a NUL-terminated input string) and
//! must be null or valid for the access NVML documents; string buffers hold `length`
//! bytes. nvml-wrapper always passes such pointers. Device handles are opaque to callers
//! (never dereferenced): the stub hands out `index + 1` as an address.

// The exported names are NVML's C symbols, and nvml-wrapper looks them up by these names.
#![allow(non_snake_case)]
// One contract for all exports, stated above, rather than a copy on each export.
#![allow(clippy::missing_safety_doc)]
// The stand-in NVML is loaded into envctl as the driver would be; it is told which fixture
// to serve through its own variables, not through envctl's context.
#![allow(clippy::disallowed_methods)]

mod codes;
mod fixture;

use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};

use codes::{
    ARGUMENT_VERSION_MISMATCH, DRIVER_NOT_LOADED, FUNCTION_NOT_FOUND, INSUFFICIENT_SIZE,
    INVALID_ARGUMENT, NOT_FOUND, Return, SUCCESS, UNINITIALIZED, UNKNOWN,
};
use fixture::Fixture;

/// The environment variable naming the fixture file.
pub const FIXTURE_VARIABLE: &str = "ENVCTL_NVML_STUB_FIXTURE";

/// The environment variable naming a file the stub appends a line to at every `nvmlInit*`
/// (`nvmlInit_v2` or `nvmlInitWithFlags`): tests count how often envctl initialises NVML.
pub const INIT_LOG_VARIABLE: &str = "ENVCTL_NVML_STUB_INIT_LOG";

/// Symbols a fixture may declare missing with `missing=`. `nvmlErrorString` is left out:
/// it returns a string, so it has no way to say "function not found".
pub const EXPORTED_SYMBOLS: &[&str] = &[
    "nvmlInit_v2",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPages_v2",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetFieldValues",
    "nvmlEventSetCreate",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlDeviceRegisterEvents",
    "nvmlEventSetWait_v2",
    "nvmlEventSetFree",
];

/// The environment variable naming a file of Xid events the stub delivers through
/// `nvmlEventSetWait_v2`, one `gpu_index:xid` per line; a line appended while envctl runs
/// arrives at its next wait, as an Xid mid-run would.
pub const EVENTS_VARIABLE: &str = "ENVCTL_NVML_STUB_EVENTS";

/// `nvmlDevice_t`: opaque to callers.
type Device = *mut c_void;

/// `nvmlPciInfo_t` (nvml-wrapper-sys 0.10 layout).
#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlUtilization_t`.
#[repr(C)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// `nvmlProcessInfo_t` (= `nvmlProcessInfo_v2_st`), what the `_v3` process query fills.
#[repr(C)]
pub struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// `nvmlEventData_t`.
#[repr(C)]
pub struct EventData {
    device: Device,
    event_type: c_ulonglong,
    event_data: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// `nvmlFieldValue_t`: the stub fills the four remapped-row fields as unsigned ints.
#[repr(C)]
pub struct FieldValue {
    field_id: c_uint,
    scope_id: c_uint,
    timestamp: i64,
    latency_microseconds: i64,
    value_type: c_uint,
    nvml_return: Return,
    /// `nvmlValue_t`, an 8-byte union; the stub writes its `uiVal` (the low 4 bytes).
    value: c_ulonglong,
}

// The layouts must match the C structs byte for byte; a wrong size would corrupt the caller.
const _: () = assert!(size_of::<PciInfo>() == 68);
const _: () = assert!(size_of::<MemoryV2>() == 40);
const _: () = assert!(size_of::<Utilization>() == 8);
const _: () = assert!(size_of::<ProcessInfo>() == 24);
const _: () = assert!(size_of::<FieldValue>() == 40);
const _: () = assert!(size_of::<EventData>() == 32);

/// `nvmlEventTypeXidCriticalError`.
const XID_CRITICAL_ERROR: c_ulonglong = 0x8;

/// How many lines of the events file were delivered already (per process, as NVML's state).
static DELIVERED_EVENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `NVML_STRUCT_VERSION(Memory, 2)`: real NVML rejects any other version, and so does the
/// stub, which also proves the caller's struct has the size the stub expects.
const MEMORY_V2_VERSION: c_uint = size_of::<MemoryV2>() as c_uint | (2 << 24);

/// "Not available" in the process instance ids (nvml.h uses 0xFFFFFFFF).
const NO_INSTANCE: c_uint = c_uint::MAX;

struct State {
    fixture: Option<Fixture>,
    /// NVML counts `nvmlInit*` calls; only the matching number of shutdowns closes it.
    references: u32,
}

static STATE: Mutex<State> = Mutex::new(State {
    fixture: None,
    references: 0,
});

/// A panic must not cross the C boundary, so a poisoned lock is simply taken over.
fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read_fixture() -> Result<Fixture, Return> {
    let Some(path) = std::env::var_os(FIXTURE_VARIABLE) else {
        return Err(DRIVER_NOT_LOADED);
    };
    let complain = |problem: String| {
        // The caller only sees a return code; stderr is the one place to say which line.
        eprintln!("envctl-nvml-stub: {}: {problem}", path.to_string_lossy());
        UNKNOWN
    };
    let text = std::fs::read_to_string(&path).map_err(|error| complain(error.to_string()))?;
    Fixture::parse(&text, EXPORTED_SYMBOLS).map_err(complain)
}

fn initialise(symbol: &str) -> Return {
    if let Some(path) = std::env::var_os(INIT_LOG_VARIABLE) {
        use std::io::Write;
        // Best effort: a log that cannot be written shows as a missing line in the test.
        if let Ok(mut log) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(log, "{symbol}");
        }
    }
    let fixture = match read_fixture() {
        Ok(fixture) => fixture,
        Err(code) => return code,
    };
    if fixture.is_missing(symbol) {
        return FUNCTION_NOT_FOUND;
    }
    if fixture.init_error != SUCCESS {
        return fixture.init_error;
    }
    let mut state = state();
    state.fixture = Some(fixture);
    state.references = state.references.saturating_add(1);
    SUCCESS
}

/// Runs one query against the loaded fixture and turns its outcome into an NVML code.
fn answer(symbol: &str, query: impl FnOnce(&Fixture) -> Result<(), Return>) -> Return {
    let state = state();
    let Some(fixture) = state.fixture.as_ref() else {
        return UNINITIALIZED;
    };
    if fixture.is_missing(symbol) {
        return FUNCTION_NOT_FOUND;
    }
    match query(fixture) {
        Ok(()) => SUCCESS,
        Err(code) => code,
    }
}

/// The GPU behind `device`, unless the fixture makes `query` fail on it.
fn device_index(fixture: &Fixture, device: Device, query: &str) -> Result<u32, Return> {
    let index = fixture.device_index(device.addr())?;
    fixture.device_failure(index, query)?;
    Ok(index)
}

/// Writes through an out-parameter.
///
/// # Safety
/// `pointer` is null or valid for a write of `T`.
unsafe fn put<T>(pointer: *mut T, value: T) -> Result<(), Return> {
    if pointer.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    // SAFETY: non-null, and valid for a write by this function's contract.
    unsafe { pointer.write(value) };
    Ok(())
}

/// Copies `text` and its NUL into a caller's buffer, or says the buffer is too small.
///
/// # Safety
/// `buffer` is null or valid for writes of `length` bytes.
unsafe fn put_text(text: &str, buffer: *mut c_char, length: c_uint) -> Result<(), Return> {
    if buffer.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    let bytes = text.as_bytes();
    if bytes.len() >= length as usize {
        return Err(INSUFFICIENT_SIZE);
    }
    // SAFETY: the buffer holds `length` > bytes.len() bytes, so text and NUL fit.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buffer, bytes.len());
        buffer.add(bytes.len()).write(0);
    }
    Ok(())
}

/// A NUL-terminated copy of `text` in a fixed C array, cut to fit.
fn text_array<const LENGTH: usize>(text: &str) -> [c_char; LENGTH] {
    let mut array = [0; LENGTH];
    for (slot, byte) in array.iter_mut().zip(text.bytes().take(LENGTH - 1)) {
        *slot = byte as c_char;
    }
    array
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> Return {
    initialise("nvmlInit_v2")
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> Return {
    initialise("nvmlInitWithFlags")
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> Return {
    let mut state = state();
    let Some(fixture) = state.fixture.as_ref() else {
        return UNINITIALIZED;
    };
    if fixture.is_missing("nvmlShutdown") {
        return FUNCTION_NOT_FOUND;
    }
    state.references = state.references.saturating_sub(1);
    if state.references == 0 {
        state.fixture = None;
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(code: Return) -> *const c_char {
    codes::description(code).as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> Return {
    answer("nvmlSystemGetDriverVersion", |fixture| {
        fixture.system_failure("driver_version")?;
        // SAFETY: `version` holds `length` bytes (crate contract).
        unsafe { put_text(fixture.system_text("driver_version")?, version, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(version: *mut c_char, length: c_uint) -> Return {
    answer("nvmlSystemGetNVMLVersion", |fixture| {
        fixture.system_failure("nvml_version")?;
        // SAFETY: `version` holds `length` bytes (crate contract).
        unsafe { put_text(fixture.system_text("nvml_version")?, version, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> Return {
    answer("nvmlSystemGetCudaDriverVersion_v2", |fixture| {
        fixture.system_failure("cuda_driver_version")?;
        let value = fixture.system_number("cuda_driver_version")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(version, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> Return {
    answer("nvmlDeviceGetCount_v2", |fixture| {
        fixture.system_failure("device_count")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(count, fixture.device_count()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut Device,
) -> Return {
    answer("nvmlDeviceGetHandleByIndex_v2", |fixture| {
        if index >= fixture.device_count() {
            return Err(INVALID_ARGUMENT);
        }
        fixture.device_failure(index, "handle")?;
        let handle = std::ptr::without_provenance_mut(index as usize + 1);
        // SAFETY: out-parameter (crate contract).
        unsafe { put(device, handle) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut Device,
) -> Return {
    answer("nvmlDeviceGetHandleByUUID", |fixture| {
        if uuid.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        // SAFETY: a non-null, NUL-terminated string (crate contract).
        let wanted = unsafe { CStr::from_ptr(uuid) }.to_string_lossy();
        let index = fixture.device_with_uuid(&wanted).ok_or(NOT_FOUND)?;
        fixture.device_failure(index, "handle")?;
        let handle = std::ptr::without_provenance_mut(index as usize + 1);
        // SAFETY: out-parameter (crate contract).
        unsafe { put(device, handle) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetIndex(device: Device, index: *mut c_uint) -> Return {
    answer("nvmlDeviceGetIndex", |fixture| {
        let value = device_index(fixture, device, "index")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(index, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: Device,
    name: *mut c_char,
    length: c_uint,
) -> Return {
    answer("nvmlDeviceGetName", |fixture| {
        let index = device_index(fixture, device, "name")?;
        // SAFETY: `name` holds `length` bytes (crate contract).
        unsafe { put_text(fixture.device_text(index, "name")?, name, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: Device,
    uuid: *mut c_char,
    length: c_uint,
) -> Return {
    answer("nvmlDeviceGetUUID", |fixture| {
        let index = device_index(fixture, device, "uuid")?;
        // SAFETY: `uuid` holds `length` bytes (crate contract).
        unsafe { put_text(fixture.device_text(index, "uuid")?, uuid, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: Device, pci: *mut PciInfo) -> Return {
    answer("nvmlDeviceGetPciInfo_v3", |fixture| {
        let index = device_index(fixture, device, "pci_info")?;
        let bus_id = fixture.device_text(index, "pci_bus_id")?;
        // Checked when the fixture was parsed.
        let (domain, bus, device_number) =
            fixture::parse_pci_bus_id(bus_id).map_err(|_| UNKNOWN)?;
        let legacy = format!("{:04x}:{bus:02x}:{device_number:02x}.0", domain & 0xffff);
        let value = PciInfo {
            bus_id_legacy: text_array(&legacy),
            domain,
            bus,
            device: device_number,
            pci_device_id: fixture.device_number(index, "pci_device_id").unwrap_or(0),
            pci_sub_system_id: 0,
            bus_id: text_array(bus_id),
        };
        // SAFETY: out-parameter (crate contract).
        unsafe { put(pci, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCudaComputeCapability(
    device: Device,
    major: *mut c_int,
    minor: *mut c_int,
) -> Return {
    answer("nvmlDeviceGetCudaComputeCapability", |fixture| {
        let index = device_index(fixture, device, "compute_capability")?;
        let text = fixture.device_text(index, "compute_capability")?;
        // Checked when the fixture was parsed.
        let (major_text, minor_text) = text.split_once('.').ok_or(UNKNOWN)?;
        let major_value = major_text.trim().parse().map_err(|_| UNKNOWN)?;
        let minor_value = minor_text.trim().parse().map_err(|_| UNKNOWN)?;
        // SAFETY: out-parameters (crate contract).
        unsafe {
            put(major, major_value)?;
            put(minor, minor_value)
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: Device,
    memory: *mut MemoryV2,
) -> Return {
    answer("nvmlDeviceGetMemoryInfo_v2", |fixture| {
        if memory.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        // SAFETY: non-null in/out parameter (crate contract); the caller sets `version`.
        let version = unsafe { (*memory).version };
        if version != MEMORY_V2_VERSION {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let index = device_index(fixture, device, "memory_info")?;
        let total: u64 = fixture.device_number(index, "memory_total")?;
        let used: u64 = fixture.device_number(index, "memory_used")?;
        let reserved: u64 = fixture.device_number(index, "memory_reserved").unwrap_or(0);
        let value = MemoryV2 {
            version,
            total,
            reserved,
            free: total.saturating_sub(used.saturating_add(reserved)),
            used,
        };
        // SAFETY: out-parameter (crate contract).
        unsafe { put(memory, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: Device,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetMigMode", |fixture| {
        let index = device_index(fixture, device, "mig_mode")?;
        // No `mig_current` means a GPU without MIG: real drivers answer NOT_SUPPORTED.
        let current_value: c_uint = fixture.device_number(index, "mig_current")?;
        let pending_value = fixture
            .device_number(index, "mig_pending")
            .unwrap_or(current_value);
        // SAFETY: out-parameters (crate contract).
        unsafe {
            put(current, current_value)?;
            put(pending, pending_value)
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: Device,
    limit: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetEnforcedPowerLimit", |fixture| {
        let index = device_index(fixture, device, "power_limit")?;
        let value = fixture.device_number(index, "power_limit_milliwatts")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(limit, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: Device,
    utilization: *mut Utilization,
) -> Return {
    answer("nvmlDeviceGetUtilizationRates", |fixture| {
        let index = device_index(fixture, device, "utilization")?;
        let value = Utilization {
            gpu: fixture.device_number(index, "utilization_gpu")?,
            memory: fixture.device_number(index, "utilization_memory")?,
        };
        // SAFETY: out-parameter (crate contract).
        unsafe { put(utilization, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: Device,
    sensor: c_uint,
    temperature: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetTemperature", |fixture| {
        // NVML_TEMPERATURE_GPU is the only sensor NVML defines.
        if sensor != 0 {
            return Err(INVALID_ARGUMENT);
        }
        let index = device_index(fixture, device, "temperature")?;
        let value = fixture.device_number(index, "temperature")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(temperature, value) }
    })
}

/// The GPU's device minor number: its node is `/dev/nvidia<minor>`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(device: Device, minor: *mut c_uint) -> Return {
    answer("nvmlDeviceGetMinorNumber", |fixture| {
        let index = device_index(fixture, device, "minor_number")?;
        let value = fixture.device_number(index, "minor_number")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(minor, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(device: Device, power: *mut c_uint) -> Return {
    answer("nvmlDeviceGetPowerUsage", |fixture| {
        let index = device_index(fixture, device, "power_usage")?;
        let value = fixture.device_number(index, "power_usage_milliwatts")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(power, value) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: Device,
    reasons: *mut c_ulonglong,
) -> Return {
    answer("nvmlDeviceGetCurrentClocksThrottleReasons", |fixture| {
        let index = device_index(fixture, device, "throttle_reasons")?;
        let value = fixture.device_number(index, "throttle_reasons")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(reasons, value) }
    })
}

/// `nvmlClockType_t`: graphics 0, SM 1, memory 2, video 3 (no fixture key: not supported).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: Device,
    clock_type: c_uint,
    clock: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetClockInfo", |fixture| {
        let index = device_index(fixture, device, "clocks")?;
        let key = match clock_type {
            0 => "clock_graphics_mhz",
            1 => "clock_sm_mhz",
            2 => "clock_memory_mhz",
            3 => return Err(codes::NOT_SUPPORTED),
            _ => return Err(INVALID_ARGUMENT),
        };
        let value = fixture.device_number(index, key)?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(clock, value) }
    })
}

/// nvml-wrapper asks twice: first with no buffer for the count (expecting
/// INSUFFICIENT_SIZE when there are processes), then with room for count + 5.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: Device,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> Return {
    answer("nvmlDeviceGetComputeRunningProcesses_v3", |fixture| {
        let index = device_index(fixture, device, "processes")?;
        let processes = fixture.processes(index);
        if count.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        // SAFETY: non-null in/out parameter (crate contract): the room the caller has.
        let capacity = unsafe { count.read() } as usize;
        let needed = c_uint::try_from(processes.len()).map_err(|_| UNKNOWN)?;
        // SAFETY: as above.
        unsafe { put(count, needed)? };
        if processes.is_empty() {
            return Ok(());
        }
        if infos.is_null() || capacity < processes.len() {
            return Err(INSUFFICIENT_SIZE);
        }
        for (slot, process) in processes.iter().enumerate() {
            let value = ProcessInfo {
                pid: process.pid,
                used_gpu_memory: process.used_memory_bytes,
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
            };
            // SAFETY: `infos` holds `capacity` ≥ processes.len() entries (crate contract).
            unsafe { infos.add(slot).write(value) };
        }
        Ok(())
    })
}

/// `nvmlEnableState_t` from a fixture's 0/1.
fn enable_state(fixture: &Fixture, index: u32, key: &str) -> Result<c_uint, Return> {
    match fixture.device_number::<c_uint>(index, key)? {
        0 => Ok(0),
        _ => Ok(1),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPersistenceMode(device: Device, mode: *mut c_uint) -> Return {
    answer("nvmlDeviceGetPersistenceMode", |fixture| {
        let index = device_index(fixture, device, "persistence_mode")?;
        let value = enable_state(fixture, index, "persistence_mode")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(mode, value) }
    })
}

/// ECC mode now and after the next reboot; the fixture has one value for both.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEccMode(
    device: Device,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetEccMode", |fixture| {
        let index = device_index(fixture, device, "ecc_mode")?;
        let value = enable_state(fixture, index, "ecc_mode")?;
        // SAFETY: out-parameters (crate contract).
        unsafe {
            put(current, value)?;
            put(pending, value)
        }
    })
}

/// `nvmlMemoryErrorType_t` (0 corrected, 1 uncorrected) × `nvmlEccCounterType_t`
/// (0 volatile, 1 aggregate).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: Device,
    error_type: c_uint,
    counter_type: c_uint,
    count: *mut c_ulonglong,
) -> Return {
    answer("nvmlDeviceGetTotalEccErrors", |fixture| {
        let index = device_index(fixture, device, "ecc_errors")?;
        let key = match (error_type, counter_type) {
            (0, 0) => "ecc_volatile_corrected",
            (1, 0) => "ecc_volatile_uncorrected",
            (0, 1) => "ecc_aggregate_corrected",
            (1, 1) => "ecc_aggregate_uncorrected",
            _ => return Err(INVALID_ARGUMENT),
        };
        let value = fixture.device_number(index, key)?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(count, value) }
    })
}

/// `nvmlPageRetirementCause_t`: 0 multiple single-bit errors, 1 a double-bit error.
fn retired_page_count(fixture: &Fixture, device: Device, cause: c_uint) -> Result<c_uint, Return> {
    let index = device_index(fixture, device, "retired_pages")?;
    match cause {
        0 => fixture.device_number(index, "retired_pages_single_bit"),
        1 => fixture.device_number(index, "retired_pages_double_bit"),
        _ => Err(INVALID_ARGUMENT),
    }
}

/// Fills the caller's arrays with `count` made-up page addresses (and timestamps), or says
/// how many there are when the room is too small, as NVML does.
///
/// # Safety
/// `room` is a valid in/out count; `addresses` and `timestamps` are null or hold `*room` entries.
unsafe fn put_pages(
    count: c_uint,
    room: *mut c_uint,
    addresses: *mut c_ulonglong,
    timestamps: *mut c_ulonglong,
) -> Result<(), Return> {
    if room.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    // SAFETY: non-null in/out parameter (crate contract).
    let capacity = unsafe { room.read() };
    // SAFETY: as above.
    unsafe { put(room, count)? };
    if count == 0 {
        return Ok(());
    }
    if addresses.is_null() || capacity < count {
        return Err(INSUFFICIENT_SIZE);
    }
    for slot in 0..count as usize {
        // SAFETY: both arrays hold `capacity` ≥ count entries (crate contract).
        unsafe {
            addresses
                .add(slot)
                .write(0x1000 * (slot as c_ulonglong + 1));
            if !timestamps.is_null() {
                timestamps.add(slot).write(1_700_000_000);
            }
        }
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages(
    device: Device,
    cause: c_uint,
    count: *mut c_uint,
    addresses: *mut c_ulonglong,
) -> Return {
    answer("nvmlDeviceGetRetiredPages", |fixture| {
        let pages = retired_page_count(fixture, device, cause)?;
        // SAFETY: NVML's in/out count and address array (crate contract).
        unsafe { put_pages(pages, count, addresses, std::ptr::null_mut()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages_v2(
    device: Device,
    cause: c_uint,
    count: *mut c_uint,
    addresses: *mut c_ulonglong,
    timestamps: *mut c_ulonglong,
) -> Return {
    answer("nvmlDeviceGetRetiredPages_v2", |fixture| {
        let pages = retired_page_count(fixture, device, cause)?;
        // SAFETY: NVML's in/out count and arrays (crate contract).
        unsafe { put_pages(pages, count, addresses, timestamps) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPagesPendingStatus(
    device: Device,
    pending: *mut c_uint,
) -> Return {
    answer("nvmlDeviceGetRetiredPagesPendingStatus", |fixture| {
        let index = device_index(fixture, device, "retired_pages")?;
        let value = enable_state(fixture, index, "retired_pages_pending")?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(pending, value) }
    })
}

/// Serves the remapped-row fields (`NVML_FI_DEV_REMAPPED_COR` 142, `_UNC` 143, `_PENDING`
/// 144, `_FAILURE` 145), each with its own return code; any other field is not supported.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(
    device: Device,
    count: c_int,
    values: *mut FieldValue,
) -> Return {
    answer("nvmlDeviceGetFieldValues", |fixture| {
        let index = device_index(fixture, device, "field_values")?;
        let count = usize::try_from(count).map_err(|_| INVALID_ARGUMENT)?;
        if values.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        for slot in 0..count {
            // SAFETY: `values` holds `count` entries (crate contract).
            let value = unsafe { &mut *values.add(slot) };
            let key = match value.field_id {
                142 => Some("remapped_rows_correctable"),
                143 => Some("remapped_rows_uncorrectable"),
                144 => Some("remapped_rows_pending"),
                145 => Some("remapped_rows_failure"),
                _ => None,
            };
            let answer = key
                .ok_or(codes::NOT_SUPPORTED)
                .and_then(|key| fixture.device_number::<c_uint>(index, key));
            value.value_type = 1; // NVML_VALUE_TYPE_UNSIGNED_INT
            match answer {
                Ok(number) => {
                    value.nvml_return = SUCCESS;
                    value.value = c_ulonglong::from(number);
                }
                Err(code) => value.nvml_return = code,
            }
        }
        Ok(())
    })
}

/// An event set: opaque to callers; the stub has one, at a made-up non-null address.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut *mut c_void) -> Return {
    answer("nvmlEventSetCreate", |_| {
        // SAFETY: out-parameter (crate contract).
        unsafe { put(set, std::ptr::without_provenance_mut(0x5e7)) }
    })
}

/// Every GPU offers Xid events (`nvmlEventTypeXidCriticalError`) unless the fixture makes
/// this query fail.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: Device,
    types: *mut c_ulonglong,
) -> Return {
    answer("nvmlDeviceGetSupportedEventTypes", |fixture| {
        fixture.device_index(device.addr())?;
        // SAFETY: out-parameter (crate contract).
        unsafe { put(types, XID_CRITICAL_ERROR) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: Device,
    _types: c_ulonglong,
    _set: *mut c_void,
) -> Return {
    answer("nvmlDeviceRegisterEvents", |fixture| {
        fixture.device_index(device.addr()).map(|_| ())
    })
}

/// The next undelivered line of the events file, else NVML_ERROR_TIMEOUT after waiting
/// `timeout` milliseconds (without the stub's lock, so other queries answer meanwhile).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    _set: *mut c_void,
    data: *mut EventData,
    timeout: c_uint,
) -> Return {
    if state().fixture.is_none() {
        return UNINITIALIZED;
    }
    let lines: Vec<(u32, u64)> = std::env::var_os(EVENTS_VARIABLE)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .map(|text| {
            text.lines()
                .filter_map(|line| {
                    let (gpu, xid) = line.trim().split_once(':')?;
                    Some((gpu.trim().parse().ok()?, xid.trim().parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    let delivered = DELIVERED_EVENTS.load(std::sync::atomic::Ordering::SeqCst);
    let Some(&(gpu, xid)) = lines.get(delivered) else {
        std::thread::sleep(std::time::Duration::from_millis(u64::from(timeout)));
        return codes::TIMEOUT;
    };
    DELIVERED_EVENTS.store(delivered + 1, std::sync::atomic::Ordering::SeqCst);
    let value = EventData {
        device: std::ptr::without_provenance_mut(gpu as usize + 1),
        event_type: XID_CRITICAL_ERROR,
        event_data: xid,
        gpu_instance_id: c_uint::MAX,
        compute_instance_id: c_uint::MAX,
    };
    // SAFETY: out-parameter (crate contract).
    match unsafe { put(data, value) } {
        Ok(()) => SUCCESS,
        Err(code) => code,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlEventSetFree(_set: *mut c_void) -> Return {
    SUCCESS
}

#[cfg(test)]
mod tests {
    use std::ptr::{null_mut, without_provenance_mut};

    use super::*;

    // The one test that touches the process-wide state, so parallel tests cannot race on it.
    // nvml-wrapper is not a dependency here; the layouts are pinned by the size assertions
    // above, and envctl's tests/it/gpu_facts.rs drives the stub through nvml-wrapper.
    #[test]
    fn stats_queries_answer_from_the_fixture() {
        let fixture = Fixture::parse(
            "device_count=2\n\
             gpu.0.uuid=GPU-first\n\
             gpu.1.uuid=GPU-second\n\
             gpu.*.utilization_gpu=37\n\
             gpu.*.utilization_memory=12\n\
             gpu.*.temperature=41\n\
             gpu.*.power_usage_milliwatts=71234\n\
             gpu.*.throttle_reasons=0x4\n\
             gpu.0.processes=1234:536870912,5678:1073741824\n\
             gpu.1.fail=temperature:3\n",
            EXPORTED_SYMBOLS,
        )
        .unwrap();
        *state() = State {
            fixture: Some(fixture),
            references: 1,
        };
        let first: Device = without_provenance_mut(1);
        let second: Device = without_provenance_mut(2);
        // SAFETY: every pointer below is a live local of the right type and size.
        unsafe {
            let mut utilization = Utilization { gpu: 0, memory: 0 };
            assert_eq!(
                nvmlDeviceGetUtilizationRates(first, &mut utilization),
                SUCCESS
            );
            assert_eq!((utilization.gpu, utilization.memory), (37, 12));

            let mut value: c_uint = 0;
            assert_eq!(nvmlDeviceGetTemperature(first, 0, &mut value), SUCCESS);
            assert_eq!(value, 41);
            assert_eq!(
                nvmlDeviceGetTemperature(first, 1, &mut value),
                INVALID_ARGUMENT
            );
            assert_eq!(nvmlDeviceGetTemperature(second, 0, &mut value), 3);
            assert_eq!(nvmlDeviceGetPowerUsage(second, &mut value), SUCCESS);
            assert_eq!(value, 71234);

            let mut reasons: c_ulonglong = 0;
            assert_eq!(
                nvmlDeviceGetCurrentClocksThrottleReasons(first, &mut reasons),
                SUCCESS
            );
            assert_eq!(reasons, 4);

            // nvml-wrapper's two phases: count with no buffer, then fill count + 5 slots.
            let mut count: c_uint = 0;
            let phase_one = nvmlDeviceGetComputeRunningProcesses_v3(first, &mut count, null_mut());
            assert_eq!((phase_one, count), (INSUFFICIENT_SIZE, 2));
            let mut infos: Vec<ProcessInfo> = (0..7)
                .map(|_| ProcessInfo {
                    pid: 0,
                    used_gpu_memory: 0,
                    gpu_instance_id: 0,
                    compute_instance_id: 0,
                })
                .collect();
            count = 7;
            let phase_two =
                nvmlDeviceGetComputeRunningProcesses_v3(first, &mut count, infos.as_mut_ptr());
            assert_eq!((phase_two, count), (SUCCESS, 2));
            assert_eq!(
                (infos[1].pid, infos[1].used_gpu_memory),
                (5678, 1_073_741_824)
            );
            assert_eq!(infos[0].gpu_instance_id, NO_INSTANCE);
            count = 0;
            let none = nvmlDeviceGetComputeRunningProcesses_v3(second, &mut count, null_mut());
            assert_eq!((none, count), (SUCCESS, 0));

            let mut handle: Device = null_mut();
            assert_eq!(
                nvmlDeviceGetHandleByUUID(c"GPU-second".as_ptr(), &mut handle),
                SUCCESS
            );
            assert_eq!(handle, second);
            assert_eq!(
                nvmlDeviceGetHandleByUUID(c"GPU-third".as_ptr(), &mut handle),
                NOT_FOUND
            );
            let mut index: c_uint = 9;
            assert_eq!(nvmlDeviceGetIndex(handle, &mut index), SUCCESS);
            assert_eq!(index, 1);
            let beyond: Device = without_provenance_mut(3);
            assert_eq!(nvmlDeviceGetIndex(beyond, &mut index), INVALID_ARGUMENT);

            assert_eq!(nvmlShutdown(), SUCCESS);
            assert_eq!(nvmlDeviceGetPowerUsage(first, &mut value), UNINITIALIZED);
            assert_eq!(nvmlShutdown(), UNINITIALIZED);
        }
    }
}
