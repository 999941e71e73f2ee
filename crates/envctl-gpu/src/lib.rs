//! GPU facts through NVML: the only module that touches the NVIDIA driver, and the only
//! one that imports nvml-wrapper (in `nvml.rs` and `sample.rs`). It gathers and never judges: every
//! answer, and every way NVML fails, ends up as plain data in `envctl_facts::gpu` ([`GpuFacts`]),
//! which the checks read and a report can replay from JSON.

mod nvml;
pub mod sample;

use std::ffi::OsStr;
use std::path::Path;

use envctl_facts::gpu::GpuFacts;

/// The environment variable naming an NVML library to load instead of the driver's. This
/// crate never reads it: the binary's `Context` does, like every variable, and passes the
/// path to [`gather`].
pub const LIBRARY_VARIABLE: &str = "ENVCTL_NVML_LIBRARY";

/// The name the NVIDIA driver installs NVML under, found through the loader's search path.
///
/// It is also nvml-wrapper 0.13's own default, so the `.so.1` fallback other tools add
/// (the unversioned `libnvidia-ml.so` comes only with development packages) is built in.
/// envctl still passes it explicitly so that the facts name the library that was tried.
pub const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";

/// Loads NVML — from `library` when given (the caller takes it from the context's [`LIBRARY_VARIABLE`]),
/// else [`DEFAULT_LIBRARY`] — and reads the driver and every GPU it counts.
///
/// Never fails: a library that is absent or broken is itself a fact. An empty path counts
/// as not given, as an empty `ENVCTL_NVML_LIBRARY=` usually means "unset".
pub fn gather(library: Option<&Path>) -> GpuFacts {
    let library = library
        .map(Path::as_os_str)
        .filter(|path| !path.is_empty())
        .unwrap_or(OsStr::new(DEFAULT_LIBRARY));
    GpuFacts {
        library: library.to_string_lossy().into_owned(),
        nvml: nvml::load_and_query(library),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envctl_facts::gpu::LoadOutcome;

    #[test]
    fn an_absent_library_is_a_named_fact() {
        let facts = gather(Some(Path::new(
            "/nonexistent/envctl-unit-test/libnvidia-ml.so.1",
        )));
        assert_eq!(
            facts.library,
            "/nonexistent/envctl-unit-test/libnvidia-ml.so.1"
        );
        assert!(
            matches!(facts.nvml, LoadOutcome::LibraryNotFound { .. }),
            "{:?}",
            facts.nvml
        );
        assert!(facts.loaded().is_none());
    }

    #[test]
    fn an_empty_path_means_the_default_library() {
        let facts = gather(Some(Path::new("")));
        assert_eq!(facts.library, DEFAULT_LIBRARY);
    }
}
