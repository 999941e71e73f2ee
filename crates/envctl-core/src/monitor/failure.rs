//! What a snapshot could not read, typed: the subject that failed (a container, NVML,
//! the daemon, a GPU process) and the kind of failure, each with exactly one spelling in
//! the JSON (`"container NAME"`, `"nvml"`, `"daemon"`, `"pid 1234"`; snake_case kinds).
//! The views and the `--once` loss check match on these enums, never on text. The kinds
//! are `facts::failure`'s, one vocabulary with NVML's.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::facts::failure::FailureKind;

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

#[cfg(test)]
mod tests {
    use super::*;

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
