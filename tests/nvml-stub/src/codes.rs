//! NVML return codes (`nvmlReturn_t` in nvml.h) the stub answers with, and their texts
//! for `nvmlErrorString`.

use std::ffi::{CStr, c_uint};

pub type Return = c_uint;

pub const SUCCESS: Return = 0;
pub const UNINITIALIZED: Return = 1;
pub const INVALID_ARGUMENT: Return = 2;
pub const NOT_SUPPORTED: Return = 3;
pub const NO_PERMISSION: Return = 4;
pub const NOT_FOUND: Return = 6;
pub const INSUFFICIENT_SIZE: Return = 7;
pub const DRIVER_NOT_LOADED: Return = 9;
pub const FUNCTION_NOT_FOUND: Return = 13;
pub const GPU_IS_LOST: Return = 15;
pub const TIMEOUT: Return = 10;
pub const LIB_RM_VERSION_MISMATCH: Return = 18;
pub const ARGUMENT_VERSION_MISMATCH: Return = 25;
pub const UNKNOWN: Return = 999;

/// The texts real NVML gives, for the codes a fixture is likely to use.
pub fn description(code: Return) -> &'static CStr {
    match code {
        SUCCESS => c"Success",
        UNINITIALIZED => c"Uninitialized",
        INVALID_ARGUMENT => c"Invalid Argument",
        NOT_SUPPORTED => c"Not Supported",
        NO_PERMISSION => c"Insufficient Permissions",
        NOT_FOUND => c"Not Found",
        INSUFFICIENT_SIZE => c"Insufficient Size",
        DRIVER_NOT_LOADED => c"Driver Not Loaded",
        FUNCTION_NOT_FOUND => c"Function Not Found",
        GPU_IS_LOST => c"GPU is lost",
        LIB_RM_VERSION_MISMATCH => c"RM has detected an NVML/RM version mismatch.",
        ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        _ => c"Unknown Error",
    }
}
