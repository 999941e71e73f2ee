//! The stand-in NVML library and its fixtures: where `cargo test` put the library, the
//! fixture files, and an old-driver library built from C that truly lacks symbols.

use std::path::{Path, PathBuf};

/// `target/debug/deps/libenvctl_nvml_stub.so`, next to the running test binary.
pub fn stub_library() -> PathBuf {
    let executable =
        std::env::current_exe().unwrap_or_else(|error| panic!("no test executable: {error}"));
    let deps = executable
        .parent()
        .unwrap_or_else(|| panic!("{} has no folder", executable.display()));
    [deps.join("libenvctl_nvml_stub.so"), deps.join("..").join("libenvctl_nvml_stub.so")]
        .into_iter()
        .find(|candidate| candidate.exists())
        .unwrap_or_else(|| {
            panic!(
                "libenvctl_nvml_stub.so not found near {}: `cargo test` builds it as a dev-dependency of envctl",
                deps.display()
            )
        })
}

/// A file of `tests/fixtures/nvml/`.
pub fn fixture(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nvml")
        .join(name);
    assert!(path.exists(), "NVML fixture {} is missing", path.display());
    path
}

/// Builds `tests/fixtures/nvml/old-driver-nvml.c` (an R418-era NVML that truly lacks
/// symbols) with these `-D` defines into `lib<name>.so`; `name` must be unique per caller.
pub fn compile_old_driver_library(name: &str, defines: &[&str]) -> PathBuf {
    let source = fixture("old-driver-nvml.c");
    let output = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lib{name}.so"));
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let result = std::process::Command::new(&compiler)
        .args(["-shared", "-fPIC", "-O0", "-o"])
        .arg(&output)
        .args(defines)
        .arg(&source)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run the C compiler `{compiler}` ({error}): these tests build a library \
                 that truly lacks NVML symbols; install one (`apt-get install gcc`) or set CC"
            )
        });
    assert!(
        result.status.success(),
        "`{compiler}` failed to build {}:\n{}",
        output.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    output
}
