//! Unit tests of the profile checks that are pure functions of a value: key suggestions,
//! GPU device names, users.

use super::gpus::check_gpu_device;
use super::strings::check_user;
use super::{STACK_KEYS, TOP_LEVEL_KEYS, did_you_mean};

#[test]
fn suggestions() {
    assert_eq!(did_you_mean("memroy", TOP_LEVEL_KEYS), Some("memory"));
    assert_eq!(did_you_mean("pytorch", &STACK_KEYS), Some("torch"));
    assert_eq!(did_you_mean("volumes", TOP_LEVEL_KEYS), Some("mounts"));
    assert_eq!(did_you_mean("shm-size", TOP_LEVEL_KEYS), Some("shm_size"));
    assert_eq!(did_you_mean("zzzzzz", TOP_LEVEL_KEYS), None);
}

#[test]
fn gpu_devices() {
    assert!(check_gpu_device("0").is_ok());
    assert!(check_gpu_device("GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc").is_ok());
    assert!(check_gpu_device("MIG-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc").is_ok());
    assert!(check_gpu_device("MIG-GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc/1/0").is_ok());
    assert!(check_gpu_device("GPU-xyz").is_err());
    assert!(check_gpu_device("first").is_err());
}

#[test]
fn users() {
    for good in ["root", "1000", "1000:1000", "jovyan:users", "_svc"] {
        assert!(check_user(good).is_ok(), "{good}");
    }
    for bad in ["", ":", "1000:", "a b", "-x", "a:b:c"] {
        assert!(check_user(bad).is_err(), "{bad}");
    }
}
