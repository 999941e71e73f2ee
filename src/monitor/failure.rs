//! What a snapshot could not read, typed: the subject that failed (a container, NVML,
//! the daemon, a GPU process) and the kind of failure, each with exactly one spelling in
//! the JSON (`"container NAME"`, `"nvml"`, `"daemon"`, `"pid 1234"`; snake_case kinds).
//! The views and the `--once` loss check match on these enums, never on text.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::facts::gpu::LoadOutcome;

/// A sample that could not be taken, with its cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// What failed.
    pub subject: FailureSubject,
    /// A short stable name for the cause.
    pub kind: FailureKind,
    /// The cause in words, with its own causes.
    pub message: String,
}

/// What failed to be sampled. Written as one string: `container NAME`, `nvml`, `daemon`,
/// `pid 1234`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureSubject {
    /// A container, by name: its inspect data, its stats, its cgroup files, or a named
    /// target that is not running.
    Container(String),
    /// The NVIDIA management library: not loaded, or its reading failed.
    Nvml,
    /// The Docker daemon itself: its container list, or the daemon being away.
    Daemon,
    /// A GPU process (host PID) whose cgroup could not be read to find its container.
    Process(u32),
}

impl fmt::Display for FailureSubject {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureSubject::Container(name) => write!(formatter, "container {name}"),
            FailureSubject::Nvml => formatter.write_str("nvml"),
            FailureSubject::Daemon => formatter.write_str("daemon"),
            FailureSubject::Process(pid) => write!(formatter, "pid {pid}"),
        }
    }
}

impl std::str::FromStr for FailureSubject {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(name) = text.strip_prefix("container ") {
            return Ok(FailureSubject::Container(name.to_string()));
        }
        if let Some(pid) = text.strip_prefix("pid ") {
            return pid
                .parse()
                .map(FailureSubject::Process)
                .map_err(|error| format!("`{text}` does not name a process id: {error}"));
        }
        match text {
            "nvml" => Ok(FailureSubject::Nvml),
            "daemon" => Ok(FailureSubject::Daemon),
            _ => Err(format!(
                "`{text}` is not a failure subject (`container NAME`, `nvml`, `daemon`, `pid N`)"
            )),
        }
    }
}

impl Serialize for FailureSubject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FailureSubject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a sample failed: the daemon's error kinds, the cgroup and state problems found
/// here, and NVML's failure kinds, in one snake_case vocabulary.
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
    /// Any other failure, of the daemon's connection or of NVML; the message says which.
    Other,
    /// envctl itself ran out of file descriptors (its own `ulimit -n`): not the daemon.
    TooManyOpenFiles,
    // What envctl finds itself.
    /// A named target exists but does not run.
    NotRunning,
    /// A cgroup file (a container's counters, a process's `/proc/PID/cgroup`) could not
    /// be read.
    CgroupUnreadable,
    // NVML's (`gpu::FailureKind`, `LoadOutcome`).
    LibraryNotFound,
    DriverNotLoaded,
    VersionMismatch,
    NoPermission,
    SymbolMissing,
    NotSupported,
    GpuLost,
    InvalidValue,
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

    /// The kind of a failed NVML query.
    pub fn of_nvml(kind: crate::facts::gpu::FailureKind) -> FailureKind {
        use crate::facts::gpu::FailureKind as Nvml;
        match kind {
            Nvml::LibraryNotFound => FailureKind::LibraryNotFound,
            Nvml::DriverNotLoaded => FailureKind::DriverNotLoaded,
            Nvml::VersionMismatch => FailureKind::VersionMismatch,
            Nvml::NoPermission => FailureKind::NoPermission,
            Nvml::SymbolMissing => FailureKind::SymbolMissing,
            Nvml::NotSupported => FailureKind::NotSupported,
            Nvml::GpuLost => FailureKind::GpuLost,
            Nvml::InvalidValue => FailureKind::InvalidValue,
            Nvml::Unknown => FailureKind::Unknown,
            Nvml::Other => FailureKind::Other,
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
    fn nvml_kinds_keep_the_spelling_of_the_gpu_module() {
        use crate::facts::gpu::FailureKind as Nvml;
        for kind in [
            Nvml::LibraryNotFound,
            Nvml::DriverNotLoaded,
            Nvml::VersionMismatch,
            Nvml::NoPermission,
            Nvml::SymbolMissing,
            Nvml::NotSupported,
            Nvml::GpuLost,
            Nvml::InvalidValue,
            Nvml::Unknown,
            Nvml::Other,
        ] {
            assert_eq!(
                serde_json::to_value(FailureKind::of_nvml(kind)).unwrap(),
                serde_json::to_value(kind).unwrap()
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

    #[test]
    fn subjects_are_one_string_each_way() {
        for (subject, text) in [
            (FailureSubject::Container("train".into()), "container train"),
            (FailureSubject::Nvml, "nvml"),
            (FailureSubject::Daemon, "daemon"),
            (FailureSubject::Process(1234), "pid 1234"),
        ] {
            assert_eq!(serde_json::to_value(&subject).unwrap(), text);
            assert_eq!(
                serde_json::from_value::<FailureSubject>(text.into()).unwrap(),
                subject
            );
        }
        assert!("gpu 1".parse::<FailureSubject>().is_err());
        assert!("pid x".parse::<FailureSubject>().is_err());
    }

    #[test]
    fn a_failure_is_written_as_before() {
        let failure = Failure {
            subject: FailureSubject::Nvml,
            kind: FailureKind::LibraryNotFound,
            message: "libnvidia-ml.so.1: cannot open".into(),
        };
        assert_eq!(
            serde_json::to_value(&failure).unwrap(),
            serde_json::json!({
                "subject": "nvml",
                "kind": "library_not_found",
                "message": "libnvidia-ml.so.1: cannot open",
            })
        );
    }
}
