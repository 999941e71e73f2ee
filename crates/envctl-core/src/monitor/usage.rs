//! The docker CLI's formulas over a container's counters (docker/cli
//! `cli/command/container/stats_helpers.go`), so envctl's numbers are the ones `docker
//! stats` prints for the same two samples.
//!
//! - CPU % = Δcontainer CPU time / Δhost CPU time × online CPUs × 100: 100 % is one
//!   core, a container using four cores shows 400 %.
//! - Memory = usage − inactive file pages (`total_inactive_file` on cgroup v1,
//!   `inactive_file` on v2): page cache the kernel can drop is not the container's
//!   footprint, and counting it makes every container that reads files look like a leak.
//! - Network and block I/O are sums over interfaces and devices.

use crate::facts::container::{BlockIoEntry, ContainerResources, ContainerSample, CpuCounters};

/// One container's usage, computed from its counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ContainerUsage {
    /// None without a previous sample to compare with, or when a reading lacks a counter.
    pub cpu_percent: Option<f64>,
    pub memory_bytes: Option<u64>,
    pub memory_limit_bytes: Option<u64>,
    /// Sums over the interfaces; none when the reading carries no network counters (a
    /// container without a network, a daemon that left them out): unknown, never 0 B.
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
    pub block_read_bytes: u64,
    pub block_write_bytes: u64,
    pub pids: Option<u64>,
    /// CPUs online on the host, for the limit when the container has none.
    pub online_cpus: Option<u32>,
}

/// CPU % between two readings, on the docker CLI's scale (100 % = one core).
///
/// None when the earlier reading has no host CPU time (a one-shot answer's empty
/// `precpu_stats`, or a stream's first frame), or no container CPU time: counting from 0
/// would make the container's whole lifetime of CPU time one interval's, and the
/// percentage jump. 0 unless both deltas are positive, which also covers a restarted
/// container whose counter went back to zero.
pub fn cpu_percent(current: &CpuCounters, previous: &CpuCounters) -> Option<f64> {
    let previous_system = previous.system_usage.filter(|system| *system > 0)?;
    let previous_total = previous.total_usage?;
    let current_total = current.total_usage?;
    let current_system = current.system_usage?;
    let cpu_delta = current_total.saturating_sub(previous_total);
    let system_delta = current_system.saturating_sub(previous_system);
    let online_cpus = online_cpus(current)?;
    if cpu_delta == 0 || system_delta == 0 {
        return Some(0.0);
    }
    Some(cpu_delta as f64 / system_delta as f64 * f64::from(online_cpus) * 100.0)
}

/// `online_cpus`, or the length of `percpu_usage` for daemons that do not send it.
fn online_cpus(counters: &CpuCounters) -> Option<u32> {
    counters
        .online_cpus
        .filter(|count| *count > 0)
        .or(counters.percpu_count)
        .filter(|count| *count > 0)
}

/// Memory without the page cache the kernel may reclaim (`calculateMemUsageUnixNoCache`).
pub fn memory_without_cache(memory: &crate::facts::container::MemoryCounters) -> Option<u64> {
    let usage = memory.usage?;
    // cgroup v1 has both keys; its hierarchical `total_` one wins, as in the docker CLI.
    if let Some(&inactive) = memory.stats.get("total_inactive_file")
        && inactive < usage
    {
        return Some(usage - inactive);
    }
    let inactive = memory.stats.get("inactive_file").copied().unwrap_or(0);
    Some(if inactive < usage {
        usage - inactive
    } else {
        usage
    })
}

/// Bytes read and written, from entries whose operation starts with r/R or w/W
/// (`Read`/`Write` on v1, `read`/`write` on v2; `Sync`, `Total`, … are not added).
pub fn block_io_totals(entries: &[BlockIoEntry]) -> (u64, u64) {
    entries.iter().fold((0, 0), |(read, write), entry| {
        match entry.operation.bytes().next() {
            Some(b'r' | b'R') => (read.saturating_add(entry.bytes), write),
            Some(b'w' | b'W') => (read, write.saturating_add(entry.bytes)),
            _ => (read, write),
        }
    })
}

/// Usage from one sample. `previous` is the caller's own earlier reading (one-shot
/// sampling); without it the daemon's `previous_cpu` is used (streaming).
pub fn container_usage(sample: &ContainerSample, previous: Option<&CpuCounters>) -> ContainerUsage {
    let previous = previous.or(sample.previous_cpu.as_ref());
    // No interface, no counters: a sum over nothing would read as a measured 0 B.
    let (net_rx_bytes, net_tx_bytes) = if sample.networks.is_empty() {
        (None, None)
    } else {
        let (rx, tx) = sample
            .networks
            .values()
            .fold((0_u64, 0_u64), |(rx, tx), counters| {
                (
                    rx.saturating_add(counters.rx_bytes),
                    tx.saturating_add(counters.tx_bytes),
                )
            });
        (Some(rx), Some(tx))
    };
    let (block_read_bytes, block_write_bytes) = block_io_totals(&sample.block_io);
    ContainerUsage {
        cpu_percent: previous.and_then(|previous| cpu_percent(&sample.cpu, previous)),
        memory_bytes: memory_without_cache(&sample.memory),
        memory_limit_bytes: sample.memory.limit.filter(|limit| *limit > 0),
        net_rx_bytes,
        net_tx_bytes,
        block_read_bytes,
        block_write_bytes,
        pids: sample.pids,
        online_cpus: online_cpus(&sample.cpu),
    }
}

/// How many cores the container may use: `--cpus`, else the CFS quota, else its cpuset,
/// else every online CPU of the host.
pub fn cpu_limit_cores(
    resources: Option<&ContainerResources>,
    online_cpus: Option<u32>,
) -> Option<f64> {
    let host = online_cpus.map(f64::from);
    let Some(resources) = resources else {
        return host;
    };
    let limit = if let Some(nano_cpus) = resources.nano_cpus {
        Some(nano_cpus as f64 / 1e9)
    } else if let (Some(quota), Some(period)) = (resources.cpu_quota, resources.cpu_period) {
        Some(quota as f64 / period as f64)
    } else if let (Some(quota), None) = (resources.cpu_quota, resources.cpu_period) {
        // The kernel's default CFS period is 100 ms.
        Some(quota as f64 / 100_000.0)
    } else {
        None
    };
    let cpuset = resources
        .cpuset_cpus
        .as_deref()
        .and_then(cpuset_size)
        .map(f64::from);
    // A quota on a pinned container is bounded by its cpuset, and both by the host.
    [limit, cpuset, host]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp)
}

/// The number of CPUs in a cpuset list such as `0-3,8`; None when it does not parse.
pub fn cpuset_size(list: &str) -> Option<u32> {
    let mut count = 0_u32;
    for part in list
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        count += match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) =
                    (first.trim().parse().ok()?, last.trim().parse().ok()?);
                last.checked_sub(first)? + 1
            }
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
    }
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::facts::container::MemoryCounters;

    fn counters(total: u64, system: u64, online: Option<u32>, percpu: Option<u32>) -> CpuCounters {
        CpuCounters {
            total_usage: Some(total),
            system_usage: Some(system),
            online_cpus: online,
            percpu_count: percpu,
            ..CpuCounters::default()
        }
    }

    #[test]
    fn cpu_percent_is_per_core() {
        // One core busy for the whole interval of a 4-CPU host: Δsystem is 4× Δcontainer.
        let previous = counters(1_000_000_000, 100_000_000_000, Some(4), None);
        let current = counters(2_000_000_000, 104_000_000_000, Some(4), None);
        assert_eq!(cpu_percent(&current, &previous), Some(100.0));
        // Two and a half cores.
        let current = counters(3_500_000_000, 104_000_000_000, Some(4), None);
        assert_eq!(cpu_percent(&current, &previous), Some(250.0));
    }

    #[test]
    fn cpu_percent_falls_back_to_percpu_usage_and_guards_deltas() {
        let previous = counters(0, 10_000, None, Some(2));
        let current = counters(500, 11_000, None, Some(2));
        assert_eq!(cpu_percent(&current, &previous), Some(100.0));
        // No CPU count at all: no percentage rather than a wrong one.
        assert_eq!(
            cpu_percent(
                &counters(500, 11_000, None, None),
                &counters(0, 10_000, None, None)
            ),
            None
        );
        // A restarted container (counter went back) and an unchanged host both give 0.
        let restarted = counters(10, 12_000, Some(2), None);
        assert_eq!(
            cpu_percent(&restarted, &counters(900, 11_000, Some(2), None)),
            Some(0.0)
        );
        assert_eq!(
            cpu_percent(
                &counters(900, 11_000, Some(2), None),
                &counters(800, 11_000, Some(2), None)
            ),
            Some(0.0)
        );
    }

    #[test]
    fn a_previous_reading_without_host_time_gives_no_percentage() {
        let empty = CpuCounters::default();
        let current = counters(500, 11_000, Some(2), None);
        assert_eq!(cpu_percent(&current, &empty), None);
        let zero_system = counters(0, 0, Some(2), None);
        assert_eq!(cpu_percent(&current, &zero_system), None);
    }

    #[test]
    fn a_previous_reading_without_container_time_gives_no_percentage() {
        // Host time but no container time earlier: the delta is unknown, not the whole
        // lifetime's 50 s of CPU (which would read as 5000 % of a 1 s interval).
        let previous = CpuCounters {
            total_usage: None,
            ..counters(0, 100_000_000_000, Some(4), None)
        };
        let current = counters(50_000_000_000, 104_000_000_000, Some(4), None);
        assert_eq!(cpu_percent(&current, &previous), None);
    }

    fn memory(usage: u64, stats: &[(&str, u64)]) -> MemoryCounters {
        MemoryCounters {
            usage: Some(usage),
            limit: Some(1 << 30),
            stats: stats
                .iter()
                .map(|(key, value)| (key.to_string(), *value))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn memory_subtracts_the_inactive_page_cache() {
        // cgroup v1: `total_inactive_file` wins over `inactive_file`.
        assert_eq!(
            memory_without_cache(&memory(
                1000,
                &[("total_inactive_file", 300), ("inactive_file", 100)]
            )),
            Some(700)
        );
        // v1 whose total key is not below usage falls through to `inactive_file`.
        assert_eq!(
            memory_without_cache(&memory(
                1000,
                &[("total_inactive_file", 1000), ("inactive_file", 100)]
            )),
            Some(900)
        );
        // cgroup v2.
        assert_eq!(
            memory_without_cache(&memory(1000, &[("inactive_file", 250)])),
            Some(750)
        );
        // Nothing to subtract, or more inactive than used: raw usage.
        assert_eq!(memory_without_cache(&memory(1000, &[])), Some(1000));
        assert_eq!(
            memory_without_cache(&memory(1000, &[("inactive_file", 2000)])),
            Some(1000)
        );
        assert_eq!(memory_without_cache(&MemoryCounters::default()), None);
    }

    #[test]
    fn block_io_adds_reads_and_writes_only() {
        let entry = |operation: &str, bytes| BlockIoEntry {
            operation: operation.into(),
            bytes,
        };
        let entries = [
            entry("Read", 10),
            entry("Write", 20),
            entry("Sync", 30),
            entry("Async", 0),
            entry("Total", 30),
            entry("read", 1),
            entry("write", 2),
            entry("", 99),
        ];
        assert_eq!(block_io_totals(&entries), (11, 22));
    }

    #[test]
    fn cpu_limits_come_from_cpus_quota_cpuset_or_the_host() {
        let resources = |nano_cpus, quota, period, cpuset: Option<&str>| ContainerResources {
            nano_cpus,
            cpu_quota: quota,
            cpu_period: period,
            cpuset_cpus: cpuset.map(String::from),
            ..ContainerResources::default()
        };
        assert_eq!(cpu_limit_cores(None, Some(8)), Some(8.0));
        assert_eq!(
            cpu_limit_cores(
                Some(&resources(Some(1_500_000_000), None, None, None)),
                Some(8)
            ),
            Some(1.5)
        );
        assert_eq!(
            cpu_limit_cores(
                Some(&resources(None, Some(200_000), Some(100_000), None)),
                Some(8)
            ),
            Some(2.0)
        );
        assert_eq!(
            cpu_limit_cores(Some(&resources(None, Some(50_000), None, None)), Some(8)),
            Some(0.5)
        );
        assert_eq!(
            cpu_limit_cores(Some(&resources(None, None, None, Some("0-3,8"))), Some(16)),
            Some(5.0)
        );
        // `--cpus 12` on an 8-CPU host can use 8.
        assert_eq!(
            cpu_limit_cores(
                Some(&resources(Some(12_000_000_000), None, None, None)),
                Some(8)
            ),
            Some(8.0)
        );
        assert_eq!(cpuset_size("0-3,8"), Some(5));
        assert_eq!(cpuset_size("3-1"), None);
        assert_eq!(cpuset_size("x"), None);
    }
}
