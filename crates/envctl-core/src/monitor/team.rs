//! The team view of `stats --hosts`: every host's snapshot merged into one document, each
//! row under its host, and a row for each host that has nothing to show and why (it could
//! not be reached, it stopped answering, its first answer is still on its way). Pure: the
//! live loop (`ops::stats::team`) and `--once` (`ops::stats::hosts`) fill it, the terminal
//! (`commands::stats`), the dashboard and `/metrics` (`ops::stats::serve`) read it.

use serde::Serialize;

use super::Diagnosis;
use super::failure::{Failure, FailureKind, FailureSubject};
use super::snapshot::{ContainerRow, GpuRow, Snapshot};

/// A row of one host's snapshot, with the host as `--hosts` named it.
#[derive(Debug, Clone, Serialize)]
pub struct Hosted<T> {
    pub host: String,
    #[serde(flatten)]
    pub row: T,
}

/// Where a host's GPU figures come from.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GpuSource {
    /// A daemon on this machine: this machine's NVML.
    ThisMachine,
    /// Another machine's daemon: its GPUs are not in this machine's NVML, so the GPU
    /// rows and the containers' GPU memory are unknown (`envctl stats` there has them).
    Unknown,
}

/// Why a host has no snapshot to show now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    /// The error with its causes, on one line.
    pub error: String,
    /// Its kind, in the failure vocabulary (`connection_refused`, `timeout`).
    pub kind: &'static str,
    pub hint: Option<String>,
}

/// What one host answered.
#[derive(Debug, Clone, Serialize)]
pub struct HostState {
    pub host: String,
    pub endpoint: String,
    pub reachable: bool,
    /// How many containers it showed; none when it could not be sampled.
    pub containers: Option<usize>,
    pub gpus: GpuSource,
    /// When its snapshot was taken (seconds since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    /// The name of the machine the daemon runs on (its `/info` `Name`, or this machine's
    /// for a daemon of this machine), the metrics' `Hostname`; none when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The live view's first answer from this host is still on its way.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub diagnoses: Vec<Diagnosis>,
    /// What could not be read on that host (as plain `stats --json` lists it).
    pub failures: Vec<Failure>,
}

/// Every host's snapshot, merged: rows carry their host.
#[derive(Debug, Clone, Serialize)]
pub struct HostsSnapshot {
    /// When the snapshots were put together (seconds since the epoch).
    pub time: f64,
    pub hosts: Vec<HostState>,
    pub containers: Vec<Hosted<ContainerRow>>,
    pub gpus: Vec<Hosted<GpuRow>>,
}

impl HostsSnapshot {
    pub fn new(time: f64) -> HostsSnapshot {
        HostsSnapshot {
            time,
            hosts: Vec::new(),
            containers: Vec::new(),
            gpus: Vec::new(),
        }
    }

    /// `host`'s snapshot: its rows under it. A followed host whose snapshot says its
    /// daemon is lost is unreachable, with the loss's cause; its GPU rows (this machine's,
    /// still read) stay.
    pub fn push_sampled(
        &mut self,
        host: &str,
        endpoint: &str,
        hostname: Option<&str>,
        snapshot: Snapshot,
        here: bool,
    ) {
        let gpus = if here {
            GpuSource::ThisMachine
        } else {
            GpuSource::Unknown
        };
        let lost = daemon_lost(&snapshot).map(|failure| Unreachable {
            error: failure.message.clone(),
            kind: failure.kind.as_str(),
            hint: None,
        });
        let reachable = lost.is_none();
        self.hosts.push(HostState {
            host: host.to_string(),
            endpoint: endpoint.to_string(),
            reachable,
            containers: reachable.then_some(snapshot.containers.len()),
            gpus,
            time: Some(snapshot.time),
            hostname: hostname.map(str::to_string),
            waiting: false,
            error_kind: lost.as_ref().map(|lost| lost.kind),
            error: lost.map(|lost| lost.error),
            hint: None,
            diagnoses: snapshot.diagnoses,
            failures: snapshot.failures,
        });
        // A lost daemon's containers are still listed by its loop, their numbers unknown:
        // its row says why instead.
        let containers = if reachable {
            snapshot.containers
        } else {
            Vec::new()
        };
        self.containers
            .extend(containers.into_iter().map(|row| Hosted {
                host: host.to_string(),
                row,
            }));
        // This machine's GPUs once, under the first of its daemons: two daemons of one
        // machine share its GPUs, not two sets of them.
        let shown_already = here
            && self
                .hosts
                .iter()
                .filter(|state| state.gpus == GpuSource::ThisMachine)
                .count()
                > 1;
        if !shown_already {
            self.gpus
                .extend(snapshot.gpus.into_iter().map(|row| Hosted {
                    host: host.to_string(),
                    row,
                }));
        }
    }

    /// A host with no snapshot, and why.
    pub fn push_unreachable(&mut self, host: &str, endpoint: &str, why: Unreachable) {
        self.hosts.push(HostState {
            host: host.to_string(),
            endpoint: endpoint.to_string(),
            reachable: false,
            containers: None,
            gpus: GpuSource::Unknown,
            time: None,
            hostname: None,
            waiting: false,
            error: Some(why.error),
            error_kind: Some(why.kind),
            hint: why.hint,
            diagnoses: Vec::new(),
            failures: Vec::new(),
        });
    }

    /// A host the live view has asked and not heard from yet (within its deadline).
    pub fn push_waiting(&mut self, host: &str, endpoint: &str) {
        self.hosts.push(HostState {
            host: host.to_string(),
            endpoint: endpoint.to_string(),
            reachable: false,
            containers: None,
            gpus: GpuSource::Unknown,
            time: None,
            hostname: None,
            waiting: true,
            error: None,
            error_kind: None,
            hint: None,
            diagnoses: Vec::new(),
            failures: Vec::new(),
        });
    }

    /// The team view as one JSON line, with its `schema_version` (`/api/v1/snapshot`,
    /// `stats --hosts --json` without `--once`).
    pub fn json_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            schema_version: u32,
            #[serde(flatten)]
            team: &'a HostsSnapshot,
        }
        let line = Line {
            schema_version: super::SCHEMA_VERSION,
            team: self,
        };
        // Serialising plain data with string keys cannot fail.
        match serde_json::to_string(&line) {
            Ok(text) => format!("{text}\n"),
            Err(error) => format!("{{\"error\":\"{error}\"}}\n"),
        }
    }

    /// The snapshot of `state`'s host, put back together from its rows (for the metrics,
    /// which are written host by host).
    pub fn of_host(&self, state: &HostState) -> Snapshot {
        Snapshot {
            time: state.time.unwrap_or(self.time),
            containers: self
                .containers
                .iter()
                .filter(|row| row.host == state.host)
                .map(|row| row.row.clone())
                .collect(),
            gpus: self
                .gpus
                .iter()
                .filter(|row| row.host == state.host)
                .map(|row| row.row.clone())
                .collect(),
            diagnoses: state.diagnoses.clone(),
            failures: state.failures.clone(),
            ended: Vec::new(),
        }
    }
}

/// The failure a followed snapshot carries when its daemon cannot be reached (its socket
/// gone, connections refused, no answer): the host is then unreachable, not empty.
pub fn daemon_lost(snapshot: &Snapshot) -> Option<&Failure> {
    snapshot.failures.iter().find(|failure| {
        failure.subject == FailureSubject::Daemon && failure.kind.means_daemon_lost()
    })
}

/// The row of a host with no snapshot within its deadline: one that `answered` before
/// stopped answering (a daemon that hangs); one that never did has not answered yet.
pub fn stopped_answering(
    answered: bool,
    silent_seconds: u64,
    deadline_seconds: u64,
) -> Unreachable {
    let what = if answered {
        "stopped answering: no sample for"
    } else {
        "no answer yet after"
    };
    Unreachable {
        error: format!("{what} {silent_seconds} s (the deadline is {deadline_seconds} s)"),
        kind: FailureKind::Timeout.as_str(),
        hint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(failures: Vec<Failure>) -> Snapshot {
        Snapshot {
            time: 10.0,
            failures,
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_lost_daemon_makes_its_host_unreachable_with_the_cause() {
        let mut team = HostsSnapshot::new(11.0);
        team.push_sampled(
            "gpu2",
            "tcp://gpu2:2376",
            Some("gpu2"),
            snapshot(vec![Failure {
                subject: FailureSubject::Daemon,
                kind: FailureKind::ConnectionRefused,
                message: "lost: nothing answers at `tcp://gpu2:2376`: connection refused".into(),
            }]),
            false,
        );
        team.push_sampled(
            "here",
            "unix:///var/run/docker.sock",
            None,
            snapshot(vec![]),
            true,
        );
        assert!(!team.hosts[0].reachable);
        assert_eq!(team.hosts[0].error_kind, Some("connection_refused"));
        assert!(
            team.hosts[0]
                .error
                .as_deref()
                .unwrap()
                .contains("connection refused")
        );
        assert!(team.hosts[1].reachable);
        assert_eq!(team.hosts[1].containers, Some(0));
    }

    #[test]
    fn a_daemon_that_answered_no_is_still_reachable() {
        let mut team = HostsSnapshot::new(11.0);
        team.push_sampled(
            "gpu2",
            "tcp://gpu2:2376",
            None,
            snapshot(vec![Failure {
                subject: FailureSubject::Daemon,
                kind: FailureKind::PermissionDenied,
                message: "permission denied".into(),
            }]),
            false,
        );
        assert!(team.hosts[0].reachable);
    }
}
