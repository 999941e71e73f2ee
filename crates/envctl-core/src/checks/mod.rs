//! Findings: the verdicts every check produces (doctor, compat, nvidia-check), and their
//! ordering. Pure data; the checks themselves are pure functions over gathered facts.

pub mod gpu;
pub mod health;
pub mod host;
pub mod lock;
pub mod profile;
pub mod safety;
pub mod slurm;
pub mod stack;

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a check came out. Ordered: the worst of a set is its maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A fact worth showing that needs no action (no GPU on this host, image not pulled).
    Info,
    Pass,
    Warn,
    Fail,
}

impl Status {
    /// The verdict word used in JSON summaries: `ok`, `warn`, `fail`.
    pub fn verdict(self) -> &'static str {
        match self {
            Status::Info | Status::Pass => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Status::Info => "info",
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        })
    }
}

/// The section of a report a finding belongs to (doctor's host report, nvidia-check's
/// sections), chosen by the check that makes it rather than read back from its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Area {
    /// doctor: the daemon: socket, reachability, storage, how GPUs reach containers.
    Docker,
    /// doctor: the NVIDIA side of the host: driver, NVML, GPUs, device nodes, kernel.
    Nvidia,
    /// nvidia-check: the run itself, device nodes, NVML in the container.
    Passthrough,
    /// nvidia-check: Python and torch.
    PyTorch,
    /// nvidia-check: the GPUs against torch's architecture list.
    Architectures,
    /// nvidia-check: the matmul.
    Compute,
    /// nvidia-check: the container's variables against the profile's.
    Environment,
}

impl Area {
    /// nvidia-check's sections, in the order it prints them.
    pub const NVIDIA_CHECK: [Area; 5] = [
        Area::Passthrough,
        Area::PyTorch,
        Area::Architectures,
        Area::Compute,
        Area::Environment,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Area::Docker => "Docker",
            Area::Nvidia => "NVIDIA",
            Area::Passthrough => "GPU passthrough",
            Area::PyTorch => "PyTorch",
            Area::Architectures => "Architectures",
            Area::Compute => "Compute",
            Area::Environment => "Environment",
        }
    }
}

/// One check's outcome: a stable id, a status, a sentence, a fix, and the facts it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable and dotted, e.g. `driver.cuda-minimum`, `gpu.arch-supported`.
    pub id: String,
    pub status: Status,
    pub message: String,
    /// A command to run or a documentation link; none when nothing needs doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The facts the verdict rests on (versions, capabilities, matrix rows with sources).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub facts: serde_json::Map<String, serde_json::Value>,
    /// Where doctor's host report shows it. `None` for findings that a report sections
    /// otherwise (per profile, or nvidia-check's own areas); never part of the JSON.
    #[serde(skip)]
    pub area: Option<Area>,
}

impl Finding {
    pub fn new(id: &str, status: Status, message: impl Into<String>) -> Self {
        Finding {
            id: id.to_string(),
            status,
            message: message.into(),
            hint: None,
            facts: serde_json::Map::new(),
            area: None,
        }
    }

    pub fn info(id: &str, message: impl Into<String>) -> Self {
        Finding::new(id, Status::Info, message)
    }

    pub fn pass(id: &str, message: impl Into<String>) -> Self {
        Finding::new(id, Status::Pass, message)
    }

    pub fn warn(id: &str, message: impl Into<String>) -> Self {
        Finding::new(id, Status::Warn, message)
    }

    pub fn fail(id: &str, message: impl Into<String>) -> Self {
        Finding::new(id, Status::Fail, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Places the finding in a section of doctor's host report.
    pub fn in_area(mut self, area: Area) -> Self {
        self.area = Some(area);
        self
    }

    /// The lower-level error behind the finding (a library's own words), which the text
    /// shows as `caused by:` under the finding's own words.
    pub fn with_cause(self, cause: impl Into<String>) -> Self {
        self.with_fact(CAUSED_BY, cause.into())
    }

    pub fn cause(&self) -> Option<&str> {
        self.facts.get(CAUSED_BY).and_then(|value| value.as_str())
    }

    /// Marks a failure that `--force` cannot get past: the start itself would fail.
    pub fn failing_any_start(self) -> Self {
        self.with_fact(START_FAILS, true)
    }

    /// Whether even a forced start would fail on this finding.
    pub fn fails_any_start(&self) -> bool {
        self.facts
            .get(START_FAILS)
            .and_then(|value| value.as_bool())
            == Some(true)
    }

    /// Records a fact the verdict used.
    pub fn with_fact(mut self, key: &str, value: impl Serialize) -> Self {
        // Facts are plain values (strings, numbers, small structs): serialising them cannot
        // fail, and a fact that somehow did would only be left out of the report.
        if let Ok(value) = serde_json::to_value(value) {
            self.facts.insert(key.to_string(), value);
        }
        self
    }
}

/// The fact naming a finding's lower-level cause ([`Finding::with_cause`]).
pub const CAUSED_BY: &str = "caused_by";

/// The fact marking a failure that a forced start would meet ([`Finding::failing_any_start`]).
pub const START_FAILS: &str = "start_fails";

/// The worst status of a set of findings; `Pass` when there are none.
pub fn worst<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Status {
    findings
        .into_iter()
        .map(|finding| finding.status)
        .max()
        .unwrap_or(Status::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_is_the_maximum() {
        let findings = [
            Finding::pass("a", "x"),
            Finding::fail("b", "y"),
            Finding::warn("c", "z"),
        ];
        assert_eq!(worst(&findings), Status::Fail);
        assert_eq!(worst(&[]), Status::Pass);
        assert_eq!(Status::Warn.verdict(), "warn");
    }
}
