//! Container statistics through the Engine API, as plain counters.
//!
//! Two ways to sample:
//! - one-shot (`stream=false&one-shot=true`): one reading, without the previous sample the
//!   daemon would otherwise wait for. Measured on Engine 20.10: the answer still comes on
//!   the daemon's one-second collector tick — at once for the request that wakes an idle
//!   collector, up to a second later for the others — so a caller that keeps its own
//!   previous sample pays at most one tick per reading.
//! - streaming (`stream=true`): one frame a second for as long as the connection lives,
//!   each carrying the previous frame's CPU counters (the first frame's are empty).
//!
//! The counters are copied into `ContainerSample` (`envctl_facts::container`) with no
//! arithmetic: the formulas (CPU %, memory without page cache, I/O sums) live in the pure
//! `monitor::usage`. The same plain struct is filled from the cgroup files by
//! `host::cgroup` for local containers. Its constructors from bollard's types are functions
//! here (`container_sample`, `gpu_assignment`): the facts are a crate of their own that
//! cannot name bollard, and may not have `impl` blocks outside it.

use bollard::models::{ContainerCpuStats, ContainerStatsResponse};
use std::time::Duration;

use super::{Engine, EngineError};
use envctl_facts::container::{
    BlockIoEntry, ContainerResources, ContainerSample, CpuCounters, GpuAssignment, MemoryCounters,
    NetworkCounters,
};

/// The GPU request among a container's device requests (capability `gpu`), as
/// `docker run --gpus` stores it: `Count: -1` is all, device ids win over a count.
pub fn gpu_assignment(
    requests: Option<Vec<bollard::models::DeviceRequest>>,
) -> Option<GpuAssignment> {
    requests?.into_iter().find_map(|request| {
        let is_gpu = request
            .capabilities
            .iter()
            .flatten()
            .flatten()
            .any(|capability| capability == "gpu");
        if !is_gpu {
            return None;
        }
        Some(match (request.count, request.device_ids) {
            (_, Some(ids)) if !ids.is_empty() => GpuAssignment::Devices(ids),
            (Some(count), _) if count >= 0 => GpuAssignment::Count(count),
            _ => GpuAssignment::All,
        })
    })
}

/// Copies a stats frame's counters. `fallback_id` names the container when the daemon
/// leaves `id` out (older daemons do in one-shot answers).
pub fn container_sample(response: ContainerStatsResponse, fallback_id: &str) -> ContainerSample {
    let previous_cpu = response
        .precpu_stats
        // The daemon sends an empty precpu (no system reading) when it has no previous
        // sample: one-shot answers and a stream's first frame.
        .filter(|previous| previous.system_cpu_usage.is_some_and(|system| system > 0))
        .map(cpu_counters);
    let memory = response.memory_stats.unwrap_or_default();
    ContainerSample {
        id: response
            .id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| fallback_id.to_string()),
        name: response
            .name
            .unwrap_or_default()
            .trim_start_matches('/')
            .to_string(),
        read: response.read.map(|read| read.to_string()),
        cpu: response.cpu_stats.map(cpu_counters).unwrap_or_default(),
        previous_cpu,
        memory: MemoryCounters {
            usage: memory.usage,
            limit: memory.limit,
            stats: memory.stats.unwrap_or_default().into_iter().collect(),
        },
        networks: network_counters(response.networks),
        block_io: response
            .blkio_stats
            .and_then(|blkio| blkio.io_service_bytes_recursive)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|entry| {
                Some(BlockIoEntry {
                    operation: entry.op?,
                    bytes: entry.value.unwrap_or(0),
                })
            })
            .collect(),
        pids: response.pids_stats.and_then(|pids| pids.current),
    }
}

/// Reads a stats frame as the Engine API writes it (`GET /containers/{id}/stats`), for
/// recorded fixtures and replays.
pub fn container_sample_from_api_json(
    text: &str,
    fallback_id: &str,
) -> Result<ContainerSample, EngineError> {
    let response: ContainerStatsResponse =
        serde_json::from_str(text).map_err(|error| EngineError::InvalidBody {
            message: format!("not a stats frame: {error}"),
        })?;
    Ok(container_sample(response, fallback_id))
}

/// Each interface's counters; none at all when the frame carries none (a container
/// without a network) or when an interface lacks one: a sum with a missing term would
/// read as measured, so the figure stays unknown (`monitor::usage`), never 0 B.
fn network_counters(
    networks: Option<std::collections::HashMap<String, bollard::models::ContainerNetworkStats>>,
) -> std::collections::BTreeMap<String, NetworkCounters> {
    networks
        .unwrap_or_default()
        .into_iter()
        .map(|(interface, counters)| {
            Some((
                interface,
                NetworkCounters {
                    rx_bytes: counters.rx_bytes?,
                    tx_bytes: counters.tx_bytes?,
                },
            ))
        })
        .collect::<Option<_>>()
        .unwrap_or_default()
}

fn cpu_counters(stats: ContainerCpuStats) -> CpuCounters {
    let usage = stats.cpu_usage.unwrap_or_default();
    let throttling = stats.throttling_data.unwrap_or_default();
    CpuCounters {
        total_usage: usage.total_usage,
        system_usage: stats.system_cpu_usage,
        online_cpus: stats.online_cpus,
        percpu_count: usage
            .percpu_usage
            .map(|per_cpu| u32::try_from(per_cpu.len()).unwrap_or(u32::MAX)),
        periods: throttling.periods,
        throttled_periods: throttling.throttled_periods,
    }
}

/// How long a one-shot reading may take, headers and body: the daemon answers on its
/// one-second collector tick, so this is a daemon that stopped answering.
pub const ONE_SHOT_DEADLINE: Duration = Duration::from_secs(10);

/// How long a stats stream may go without a whole frame: the daemon sends one a second.
pub const FRAME_DEADLINE: Duration = Duration::from_secs(10);

/// The largest stats frame envctl reads (a frame of a container with a hundred networks
/// and CPUs takes some tens of kilobytes).
pub const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

impl Engine {
    /// One reading of the container's counters, without the daemon's one-second wait for a
    /// previous sample (`previous_cpu` is none). Takes milliseconds; a daemon that sends
    /// no whole answer within [`ONE_SHOT_DEADLINE`] has stopped answering.
    pub async fn container_stats_once(&self, id: &str) -> Result<ContainerSample, EngineError> {
        let swapped = self.identity().await?.swaps_network_directions();
        let path = stats_path(id, false);
        let stopped = |detail: String| EngineError::StoppedAnswering {
            endpoint: self.at(),
            request: format!("GET {path}"),
            detail,
        };
        let read = async {
            let mut body = self.get_body(&path, ONE_SHOT_DEADLINE).await?;
            let mut text = Vec::new();
            while body
                .next(&mut text)
                .await
                .map_err(|error| self.io_error(error))?
                > 0
            {
                if text.len() > MAX_FRAME_BYTES {
                    return Err(self.frame_too_large(id));
                }
            }
            Ok(text)
        };
        let text = tokio::time::timeout(ONE_SHOT_DEADLINE, read)
            .await
            .map_err(|_| {
                stopped(format!(
                    "no whole stats answer within {} s",
                    ONE_SHOT_DEADLINE.as_secs()
                ))
            })??;
        if text.trim_ascii().is_empty() {
            return Err(self.empty_stats(id));
        }
        self.frame(&text, id, swapped)
    }

    /// Follows the container's stats stream (a frame a second) and hands each frame or
    /// error to `on_frame` until it returns `false`, the stream ends (the container
    /// stopped) or the connection fails. An error is handed over and ends the stream; so
    /// is a stream with no whole frame for [`FRAME_DEADLINE`] (its liveness rule).
    pub async fn follow_container_stats(
        &self,
        id: &str,
        mut on_frame: impl FnMut(Result<ContainerSample, EngineError>) -> bool,
    ) {
        let swapped = match self.identity().await {
            Ok(identity) => identity.swaps_network_directions(),
            Err(error) => {
                on_frame(Err(error));
                return;
            }
        };
        let path = stats_path(id, true);
        let mut body = match self.get_body(&path, FRAME_DEADLINE).await {
            Ok(body) => body,
            Err(error) => {
                on_frame(Err(error));
                return;
            }
        };
        let mut pending = Vec::new();
        // Where the search for the next newline goes on: bytes before it hold none.
        let mut searched = 0;
        let mut last_frame = tokio::time::Instant::now();
        loop {
            let deadline = last_frame + FRAME_DEADLINE;
            let read = match tokio::time::timeout_at(deadline, body.next(&mut pending)).await {
                Ok(Ok(read)) => read,
                Ok(Err(error)) => {
                    on_frame(Err(self.io_error(error)));
                    return;
                }
                Err(_) => {
                    on_frame(Err(EngineError::StoppedAnswering {
                        endpoint: self.at(),
                        request: format!("GET {path}"),
                        detail: format!("no whole stats frame for {} s", FRAME_DEADLINE.as_secs()),
                    }));
                    return;
                }
            };
            let mut start = 0;
            while let Some(offset) = pending[searched..].iter().position(|byte| *byte == b'\n') {
                let end = searched + offset;
                let line = &pending[start..end];
                searched = end + 1;
                start = searched;
                if line.trim_ascii().is_empty() {
                    continue;
                }
                last_frame = tokio::time::Instant::now();
                let frame = self.frame(line, id, swapped);
                let failed = frame.is_err();
                if !on_frame(frame) || failed {
                    return;
                }
            }
            // No newline is left after `searched`: the next search starts at the end.
            searched = pending.len() - start;
            pending.drain(..start);
            if pending.len() > MAX_FRAME_BYTES {
                on_frame(Err(self.frame_too_large(id)));
                return;
            }
            if read == 0 {
                // The end: a last frame without its newline still counts.
                if !pending.trim_ascii().is_empty() {
                    on_frame(self.frame(&pending, id, swapped));
                }
                return;
            }
        }
    }

    /// A stats frame's JSON as the daemon sent it; `swapped` for an engine that reports
    /// received bytes as sent ([`super::Identity::swaps_network_directions`]).
    fn frame(&self, text: &[u8], id: &str, swapped: bool) -> Result<ContainerSample, EngineError> {
        let response: ContainerStatsResponse =
            serde_json::from_slice(text).map_err(|error| EngineError::Daemon {
                endpoint: self.at(),
                status: 200,
                message: format!("the stats of container `{id}` are not a stats frame: {error}"),
            })?;
        let mut sample = container_sample(response, id);
        if swapped {
            for counters in sample.networks.values_mut() {
                std::mem::swap(&mut counters.rx_bytes, &mut counters.tx_bytes);
            }
        }
        Ok(sample)
    }

    fn frame_too_large(&self, id: &str) -> EngineError {
        EngineError::Daemon {
            endpoint: self.at(),
            status: 200,
            message: format!(
                "the stats of container `{id}` hold a frame larger than {MAX_FRAME_BYTES} bytes"
            ),
        }
    }

    /// The container's CPU limits, GPU request and main PID; `Ok(None)` when it is gone.
    pub async fn container_resources(
        &self,
        id: &str,
    ) -> Result<Option<ContainerResources>, EngineError> {
        let Some(inspect) = self.inspect_response(id).await? else {
            return Ok(None);
        };
        let labels = inspect
            .config
            .as_ref()
            .and_then(|config| config.labels.as_ref());
        let gpus = super::occupancy::gpus_of_container(inspect.host_config.clone(), labels);
        let host = inspect.host_config.unwrap_or_default();
        Ok(Some(ContainerResources {
            nano_cpus: host.nano_cpus.filter(|cpus| *cpus > 0),
            cpu_quota: host.cpu_quota.filter(|quota| *quota > 0),
            cpu_period: host.cpu_period.filter(|period| *period > 0),
            cpuset_cpus: host.cpuset_cpus.filter(|cpus| !cpus.is_empty()),
            gpus,
            pid: inspect
                .state
                .and_then(|state| state.pid)
                .filter(|pid| *pid > 0),
        }))
    }

    fn empty_stats(&self, id: &str) -> EngineError {
        EngineError::Daemon {
            endpoint: self.at(),
            status: 200,
            message: format!("the stats of container `{id}` ended before their first frame"),
        }
    }
}

/// `GET /containers/{id}/stats`, streaming or one-shot.
fn stats_path(id: &str, stream: bool) -> String {
    let id: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
    if stream {
        format!("/containers/{id}/stats?stream=1")
    } else {
        format!("/containers/{id}/stats?stream=0&one-shot=1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_shot_frame_has_no_previous_cpu() {
        let text = include_str!("../../../tests/fixtures/stats/v1-busy-one-shot.json");
        let sample = container_sample_from_api_json(text, "fallback").unwrap();
        assert!(sample.previous_cpu.is_none());
        assert!(sample.cpu.total_usage.unwrap() > 0);
        assert!(sample.cpu.system_usage.unwrap() > 0);
        assert_eq!(sample.cpu.online_cpus, Some(2));
        assert_eq!(sample.cpu.percpu_count, Some(2));
    }

    #[test]
    fn a_two_sample_frame_keeps_the_daemons_previous_reading() {
        let text = include_str!("../../../tests/fixtures/stats/v1-busy.json");
        let sample = container_sample_from_api_json(text, "fallback").unwrap();
        let previous = sample.previous_cpu.unwrap();
        assert!(previous.system_usage.unwrap() < sample.cpu.system_usage.unwrap());
        assert!(sample.memory.stats.contains_key("total_inactive_file"));
        assert_eq!(sample.networks["eth0"].tx_bytes, 0);
        assert_eq!(sample.pids, Some(1));
        assert!(!sample.name.starts_with('/'));
    }

    #[test]
    fn a_frame_without_network_counters_has_no_network_figure() {
        let text = include_str!("../../../tests/fixtures/stats/v1-busy-one-shot.json");
        let mut frame: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut without = frame.clone();
        without.as_object_mut().unwrap().remove("networks");
        let sample = container_sample_from_api_json(&without.to_string(), "x").unwrap();
        assert!(sample.networks.is_empty());
        let usage = envctl_core::monitor::usage::container_usage(&sample, None);
        assert_eq!((usage.net_rx_bytes, usage.net_tx_bytes), (None, None));
        // An interface without its received bytes: the sum is unknown, not the rest's.
        frame["networks"] = serde_json::json!({
            "eth0": {"tx_bytes": 10},
            "eth1": {"rx_bytes": 5, "tx_bytes": 7}
        });
        let sample = container_sample_from_api_json(&frame.to_string(), "x").unwrap();
        let usage = envctl_core::monitor::usage::container_usage(&sample, None);
        assert_eq!(usage.net_rx_bytes, None);
        frame["networks"] = serde_json::json!({
            "eth0": {"rx_bytes": 1, "tx_bytes": 10},
            "eth1": {"rx_bytes": 5, "tx_bytes": 7}
        });
        let sample = container_sample_from_api_json(&frame.to_string(), "x").unwrap();
        let usage = envctl_core::monitor::usage::container_usage(&sample, None);
        assert_eq!(
            (usage.net_rx_bytes, usage.net_tx_bytes),
            (Some(6), Some(17))
        );
    }

    #[test]
    fn garbage_is_a_named_error() {
        let error = container_sample_from_api_json("{not json", "x").unwrap_err();
        assert!(error.to_string().contains("not a stats frame"), "{error}");
    }
}
