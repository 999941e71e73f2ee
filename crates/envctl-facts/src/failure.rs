//! Why something could not be read, as one vocabulary: the daemon's error kinds, what
//! envctl finds itself (a cgroup it cannot read, a target that does not run), and NVML's
//! failure kinds. NVML's facts (`gpu::NvmlFailure`) and the stats snapshots
//! (`monitor::failure::Failure`) both carry it; each kind has one snake_case spelling.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::gpu::LoadOutcome;

/// Why something could not be read: the daemon's error kinds, the cgroup and state
/// problems envctl finds itself, and NVML's failure kinds (what `facts::gpu::NvmlFailure`
/// carries, and `monitor`'s sample failures), in one snake_case vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    // The Engine API's errors (`EngineError`; `ops::stats::failure_kind` maps them).
    SocketMissing,
    PermissionDenied,
    ConnectionRefused,
    Timeout,
    UnsupportedHost,
    DaemonError,
    PullFailed,
    ImageMissing,
    NameConflict,
    InvalidBody,
    Output,
    /// Any other failure, of the daemon's connection or of NVML (any other NVML or
    /// wrapper error); the message says which.
    Other,
    /// envctl itself ran out of file descriptors (its own `ulimit -n`): not the daemon.
    TooManyOpenFiles,
    // What envctl finds itself.
    /// A named target exists but does not run.
    NotRunning,
    /// A cgroup file (a container's counters, a process's `/proc/PID/cgroup`) could not
    /// be read.
    CgroupUnreadable,
    // NVML's (a failed query, `gpu::LoadOutcome`); `Other` too.
    /// The library (or one NVML itself needs) could not be opened.
    LibraryNotFound,
    DriverNotLoaded,
    /// NVML library and kernel driver versions differ.
    VersionMismatch,
    NoPermission,
    /// The library does not export the function: a driver older than the call.
    SymbolMissing,
    /// This GPU or driver does not offer the query (MIG on a GeForce, power on some SKUs).
    NotSupported,
    /// The GPU fell off the bus.
    GpuLost,
    /// NVML answered with a value envctl cannot read.
    InvalidValue,
    /// NVML's own `NVML_ERROR_UNKNOWN`: an internal driver error.
    Unknown,
}

/// Every kind, for reading them back.
const ALL_KINDS: [FailureKind; 24] = [
    FailureKind::SocketMissing,
    FailureKind::PermissionDenied,
    FailureKind::ConnectionRefused,
    FailureKind::Timeout,
    FailureKind::UnsupportedHost,
    FailureKind::DaemonError,
    FailureKind::PullFailed,
    FailureKind::ImageMissing,
    FailureKind::NameConflict,
    FailureKind::InvalidBody,
    FailureKind::Output,
    FailureKind::Other,
    FailureKind::TooManyOpenFiles,
    FailureKind::NotRunning,
    FailureKind::CgroupUnreadable,
    FailureKind::LibraryNotFound,
    FailureKind::DriverNotLoaded,
    FailureKind::VersionMismatch,
    FailureKind::NoPermission,
    FailureKind::SymbolMissing,
    FailureKind::NotSupported,
    FailureKind::GpuLost,
    FailureKind::InvalidValue,
    FailureKind::Unknown,
];

impl FailureKind {
    /// The one spelling, as JSON and the views write it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::SocketMissing => "socket_missing",
            FailureKind::PermissionDenied => "permission_denied",
            FailureKind::ConnectionRefused => "connection_refused",
            FailureKind::Timeout => "timeout",
            FailureKind::UnsupportedHost => "unsupported_host",
            FailureKind::DaemonError => "daemon_error",
            FailureKind::PullFailed => "pull_failed",
            FailureKind::ImageMissing => "image_missing",
            FailureKind::NameConflict => "name_conflict",
            FailureKind::InvalidBody => "invalid_body",
            FailureKind::Output => "output",
            FailureKind::Other => "other",
            FailureKind::TooManyOpenFiles => "too_many_open_files",
            FailureKind::NotRunning => "not_running",
            FailureKind::CgroupUnreadable => "cgroup_unreadable",
            FailureKind::LibraryNotFound => "library_not_found",
            FailureKind::DriverNotLoaded => "driver_not_loaded",
            FailureKind::VersionMismatch => "version_mismatch",
            FailureKind::NoPermission => "no_permission",
            FailureKind::SymbolMissing => "symbol_missing",
            FailureKind::NotSupported => "not_supported",
            FailureKind::GpuLost => "gpu_lost",
            FailureKind::InvalidValue => "invalid_value",
            FailureKind::Unknown => "unknown",
        }
    }

    /// The kind of a failed NVML load; none for a load that succeeded.
    pub fn of_load(outcome: &LoadOutcome) -> Option<FailureKind> {
        match outcome {
            LoadOutcome::Loaded(_) => None,
            LoadOutcome::LibraryNotFound { .. } => Some(FailureKind::LibraryNotFound),
            LoadOutcome::DriverNotLoaded { .. } => Some(FailureKind::DriverNotLoaded),
            LoadOutcome::VersionMismatch { .. } => Some(FailureKind::VersionMismatch),
            LoadOutcome::NoPermission { .. } => Some(FailureKind::NoPermission),
            LoadOutcome::SymbolMissing { .. } => Some(FailureKind::SymbolMissing),
            LoadOutcome::Unknown { .. } | LoadOutcome::OnAnotherHost { .. } => {
                Some(FailureKind::Unknown)
            }
        }
    }

    /// Whether this kind says the daemon cannot be reached at all (its socket is gone,
    /// it refuses connections, it does not answer), rather than that it answered "no".
    pub fn means_daemon_lost(self) -> bool {
        matches!(
            self,
            FailureKind::SocketMissing
                | FailureKind::ConnectionRefused
                | FailureKind::Timeout
                | FailureKind::Other
        )
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl std::str::FromStr for FailureKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let find = |text: &str| ALL_KINDS.into_iter().find(|kind| kind.as_str() == text);
        find(text)
            // Recordings written before the kinds had one spelling carry the daemon's
            // and envctl's own kinds in kebab-case; `stats report` still reads them.
            .or_else(|| find(&text.replace('-', "_")))
            .ok_or_else(|| format!("`{text}` is not a failure kind"))
    }
}

impl Serialize for FailureKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_snake_case_spelling() {
        let mut names: Vec<&str> = ALL_KINDS.iter().map(|kind| kind.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL_KINDS.len());
        for kind in ALL_KINDS {
            let name = kind.as_str();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(name.parse::<FailureKind>().unwrap(), kind);
        }
    }

    #[test]
    fn nvml_kinds_keep_the_spelling_the_gpu_facts_had() {
        // As the NVML facts wrote them before the two enums were one (serde's
        // snake_case of the variant names), so a recorded doctor report still reads.
        for (kind, name) in [
            (FailureKind::LibraryNotFound, "library_not_found"),
            (FailureKind::DriverNotLoaded, "driver_not_loaded"),
            (FailureKind::VersionMismatch, "version_mismatch"),
            (FailureKind::NoPermission, "no_permission"),
            (FailureKind::SymbolMissing, "symbol_missing"),
            (FailureKind::NotSupported, "not_supported"),
            (FailureKind::GpuLost, "gpu_lost"),
            (FailureKind::InvalidValue, "invalid_value"),
            (FailureKind::Unknown, "unknown"),
            (FailureKind::Other, "other"),
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(
                serde_json::from_value::<FailureKind>(name.into()).unwrap(),
                kind
            );
        }
    }

    #[test]
    fn recordings_with_the_old_kebab_case_kinds_still_read() {
        assert_eq!(
            "socket-missing".parse::<FailureKind>().unwrap(),
            FailureKind::SocketMissing
        );
        assert_eq!(
            "cgroup-unreadable".parse::<FailureKind>().unwrap(),
            FailureKind::CgroupUnreadable
        );
        assert!("library-not-found".parse::<FailureKind>().is_ok());
        assert!("nonsense".parse::<FailureKind>().is_err());
    }
}
