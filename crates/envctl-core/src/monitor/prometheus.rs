//! `--serve`: a snapshot in the Prometheus text exposition format (version 0.0.4).
//!
//! GPU series carry NVIDIA DCGM exporter's names, units and labels (`DCGM_FI_DEV_GPU_UTIL`,
//! `DCGM_FI_DEV_FB_USED` in MiB, labels `gpu`, `UUID`, `device`, `modelName`, `Hostname`),
//! so dashboards built for dcgm-exporter read envctl's too. When one container owns every
//! process on a GPU, that GPU's series also carry its `container` and `profile`, as
//! dcgm-exporter does for Kubernetes pods. Container series are envctl's own
//! (`envctl_container_*`, labels `container`, `id`, `profile`): nothing overlaps there.
//! Every series carries the same `Hostname` (the container series, the diagnoses and the
//! sample time too), so one Prometheus scraping several envctl servers tells their
//! containers apart, and every series carries `host`, the name a board's host variable
//! filters by: with one daemon this machine's name, with `--hosts` each host's name as
//! given (one envctl serving a team, [`team_exposition`]), whose unreachable hosts are
//! `envctl_host_up 0`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::snapshot::{ContainerRow, GpuHealthRow, GpuRow, Snapshot};
use super::team::HostsSnapshot;

const MEBIBYTE: f64 = 1024.0 * 1024.0;

/// One metric family: its samples, each a set of labels and a value.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            kind,
            help,
            samples: Vec::new(),
        }
    }

    fn push(&mut self, labels: &[(&'static str, String)], value: Option<f64>) {
        if let Some(value) = value.filter(|value| value.is_finite()) {
            self.samples.push((labels.to_vec(), value));
        }
    }
}

/// One family of a table of families: its name, type and help, and the value each row
/// (a GPU, a container) gives it (`None`: no sample for that row).
struct Series<Row: 'static> {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&Row) -> Option<f64>,
}

/// The families of `table`, each with a sample per row of `rows` (with its labels).
fn families_of<'r, Row: 'r>(
    table: &[Series<Row>],
    rows: impl Iterator<Item = (Vec<(&'static str, String)>, &'r Row)>,
) -> Vec<Family> {
    let mut families: Vec<Family> = table
        .iter()
        .map(|series| Family::new(series.name, series.kind, series.help))
        .collect();
    for (labels, row) in rows {
        for (family, series) in families.iter_mut().zip(table) {
            family.push(&labels, (series.value)(row));
        }
    }
    families
}

/// The exposition text for `snapshot`: every series carries `host` (the daemon's name as
/// the board filters by it: this machine's name, or the endpoint when that is unknown)
/// and, when known, DCGM's `Hostname` (left out, not empty, when the host's name could not
/// be read).
pub fn exposition(snapshot: &Snapshot, hostname: Option<&str>, host: &str) -> String {
    let mut families = families(snapshot, hostname);
    label_host(&mut families, host);
    render(&families)
}

/// The exposition of `stats --serve --hosts`: every host's series, each with its `host`
/// (the name `--hosts` gave it) and the `Hostname` of the machine its daemon runs on, and
/// `envctl_host_up` for every host: 1 when it answers, 0 (with `error_kind`) when it does
/// not, so a board shows an unreachable server rather than nothing.
pub fn team_exposition(team: &HostsSnapshot) -> String {
    let mut merged: Vec<Family> = Vec::new();
    let mut up = Family::new(
        "envctl_host_up",
        "gauge",
        "Whether the host's daemon answers (1) or not (0, error_kind says why).",
    );
    for state in &team.hosts {
        let mut labels = vec![("host", state.host.clone())];
        if let Some(kind) = state.error_kind.filter(|_| !state.reachable) {
            labels.push(("error_kind", kind.to_string()));
        }
        up.push(&labels, Some(if state.reachable { 1.0 } else { 0.0 }));
        if state.time.is_none() {
            continue;
        }
        let mut families = families(&team.of_host(state), state.hostname.as_deref());
        label_host(&mut families, &state.host);
        for family in families {
            match merged.iter_mut().find(|known| known.name == family.name) {
                Some(known) => known.samples.extend(family.samples),
                None => merged.push(family),
            }
        }
    }
    merged.push(up);
    render(&merged)
}

/// Adds `host` to every sample's labels.
fn label_host(families: &mut [Family], host: &str) {
    for family in families {
        for (labels, _) in &mut family.samples {
            labels.push(("host", host.to_string()));
        }
    }
}

/// Every family of one snapshot, GPU series first.
fn families(snapshot: &Snapshot, hostname: Option<&str>) -> Vec<Family> {
    let mut families = gpu_families(snapshot, hostname);
    families.extend(container_families(snapshot, hostname));
    let host: Vec<(&'static str, String)> = hostname
        .map(|name| ("Hostname", name.to_string()))
        .into_iter()
        .collect();
    let mut diagnoses = Family::new(
        "envctl_diagnosis",
        "gauge",
        "A diagnosis that holds now (1), by id, subject and severity.",
    );
    for diagnosis in &snapshot.diagnoses {
        let mut labels = vec![
            ("id", diagnosis.id.clone()),
            ("subject", diagnosis.subject.clone()),
            (
                "severity",
                match diagnosis.severity {
                    super::diagnosis::Severity::Warning => "warning".to_string(),
                    super::diagnosis::Severity::Info => "info".to_string(),
                },
            ),
        ];
        labels.extend(host.iter().cloned());
        diagnoses.push(&labels, Some(1.0));
    }
    families.push(diagnoses);
    let mut time = Family::new(
        "envctl_sample_timestamp_seconds",
        "gauge",
        "When envctl took the sample these values come from (Unix time).",
    );
    time.push(&host, Some(snapshot.time));
    families.push(time);
    families
}

/// The text of `families`, each family's samples together under its HELP and TYPE.
fn render(families: &[Family]) -> String {
    let mut text = String::new();
    for family in families.iter().filter(|family| !family.samples.is_empty()) {
        let _ = writeln!(text, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(text, "# TYPE {} {}", family.name, family.kind);
        for (labels, value) in &family.samples {
            text.push_str(family.name);
            if !labels.is_empty() {
                let rendered: Vec<String> = labels
                    .iter()
                    .map(|(name, value)| format!("{name}=\"{}\"", escape(value)))
                    .collect();
                let _ = write!(text, "{{{}}}", rendered.join(","));
            }
            let _ = writeln!(text, " {}", format_value(*value));
        }
    }
    text
}

/// dcgm-exporter's series for each GPU, by its names, so boards made for it read these.
const GPU_SERIES: [Series<GpuRow>; 11] = [
    Series {
        name: "DCGM_FI_DEV_GPU_UTIL",
        kind: "gauge",
        help: "GPU utilization (in %).",
        value: |gpu| gpu.utilization_percent,
    },
    Series {
        name: "DCGM_FI_DEV_MEM_COPY_UTIL",
        kind: "gauge",
        help: "Memory utilization (in %).",
        value: |gpu| gpu.memory_utilization_percent,
    },
    Series {
        name: "DCGM_FI_DEV_FB_USED",
        kind: "gauge",
        help: "Framebuffer memory used (in MiB).",
        value: |gpu| gpu.memory_used_bytes.map(|bytes| bytes as f64 / MEBIBYTE),
    },
    Series {
        name: "DCGM_FI_DEV_FB_FREE",
        kind: "gauge",
        help: "Framebuffer memory free (in MiB).",
        value: |gpu| match (gpu.memory_total_bytes, gpu.memory_used_bytes) {
            (Some(total), Some(used)) => Some(total.saturating_sub(used) as f64 / MEBIBYTE),
            _ => None,
        },
    },
    Series {
        name: "DCGM_FI_DEV_GPU_TEMP",
        kind: "gauge",
        help: "GPU temperature (in C).",
        value: |gpu| gpu.temperature_c,
    },
    Series {
        name: "DCGM_FI_DEV_POWER_USAGE",
        kind: "gauge",
        help: "Power draw (in W).",
        value: |gpu| gpu.power_w,
    },
    Series {
        name: "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        kind: "gauge",
        help: "Power management limit (in W).",
        value: |gpu| gpu.power_limit_w,
    },
    Series {
        name: "DCGM_FI_DEV_SM_CLOCK",
        kind: "gauge",
        help: "SM clock frequency (in MHz).",
        value: |gpu| gpu.sm_clock_mhz.map(f64::from),
    },
    Series {
        name: "DCGM_FI_DEV_MEM_CLOCK",
        kind: "gauge",
        help: "Memory clock frequency (in MHz).",
        value: |gpu| gpu.memory_clock_mhz.map(f64::from),
    },
    Series {
        name: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        kind: "gauge",
        help: "Throttling reasons bitmask (nvmlClocksThrottleReasons).",
        value: |gpu| gpu.throttle_reasons_mask.map(|mask| mask as f64),
    },
    Series {
        name: "envctl_gpu_memory_total_bytes",
        kind: "gauge",
        help: "GPU memory in total (in bytes).",
        value: |gpu| gpu.memory_total_bytes.map(|bytes| bytes as f64),
    },
];

fn gpu_families(snapshot: &Snapshot, hostname: Option<&str>) -> Vec<Family> {
    let mut families = families_of(
        &GPU_SERIES,
        snapshot
            .gpus
            .iter()
            .map(|gpu| (gpu_labels(gpu, snapshot, hostname), gpu)),
    );
    families.extend(health_families(snapshot, hostname));
    families
}

/// Issue 43: each GPU's health state and its ECC, retired-page and remapped-row counters.
/// A counter the GPU does not offer is left out, never written as 0.
fn health_families(snapshot: &Snapshot, hostname: Option<&str>) -> Vec<Family> {
    let mut families = HealthFamilies::new();
    for gpu in &snapshot.gpus {
        if let Some(row) = &gpu.health {
            families.push(row, &gpu_labels(gpu, snapshot, hostname));
        }
    }
    families.into_families()
}

/// The health families, filled GPU by GPU.
struct HealthFamilies {
    health: Family,
    ecc: Family,
    retired: Family,
    remapped: Family,
    remap_pending: Family,
    xids: Family,
    remap_failure: Family,
}

impl HealthFamilies {
    fn new() -> Self {
        HealthFamilies {
            health: Family::new(
                "envctl_gpu_health",
                "gauge",
                "GPU health: 0 ok, 1 warn, 2 fatal or lost (the state label says which).",
            ),
            ecc: Family::new(
                "envctl_gpu_ecc_errors_total",
                "counter",
                "ECC errors, by counter (volatile since the driver loaded, aggregate over the GPU's life) and error (corrected single-bit, uncorrected double-bit).",
            ),
            retired: Family::new(
                "envctl_gpu_retired_pages",
                "gauge",
                "Memory pages retired, by cause (single_bit, double_bit).",
            ),
            remapped: Family::new(
                "envctl_gpu_remapped_rows",
                "gauge",
                "Memory rows remapped, by kind (correctable, uncorrectable).",
            ),
            remap_pending: Family::new(
                "envctl_gpu_row_remap_pending",
                "gauge",
                "A row remap waits for a GPU reset (1) or not (0).",
            ),
            xids: Family::new(
                "envctl_gpu_xid_errors_total",
                "counter",
                "Xid errors NVML's events reported since envctl started, by xid.",
            ),
            remap_failure: Family::new(
                "envctl_gpu_row_remap_failure",
                "gauge",
                "A row remap failed (1) or not (0).",
            ),
        }
    }

    /// The samples of one GPU's health `row`, each with the GPU's `labels` and its own.
    fn push(&mut self, row: &GpuHealthRow, labels: &[(&'static str, String)]) {
        let with = |extra: &[(&'static str, &str)]| {
            let mut all = labels.to_vec();
            all.extend(extra.iter().map(|(name, value)| (*name, value.to_string())));
            all
        };
        self.health.push(
            &with(&[("state", row.state.word())]),
            Some(f64::from(row.state.gauge())),
        );
        for (counter, counts) in [
            ("volatile", row.ecc_volatile),
            ("aggregate", row.ecc_aggregate),
        ] {
            if let Some(counts) = counts {
                self.ecc.push(
                    &with(&[("counter", counter), ("error", "corrected")]),
                    Some(counts.corrected as f64),
                );
                self.ecc.push(
                    &with(&[("counter", counter), ("error", "uncorrected")]),
                    Some(counts.uncorrected as f64),
                );
            }
        }
        if let Some(pages) = row.retired_pages {
            self.retired.push(
                &with(&[("cause", "single_bit")]),
                Some(pages.single_bit as f64),
            );
            self.retired.push(
                &with(&[("cause", "double_bit")]),
                Some(pages.double_bit as f64),
            );
        }
        for count in &row.xids {
            self.xids.push(
                &with(&[("xid", &count.xid.to_string())]),
                Some(count.count as f64),
            );
        }
        if let Some(rows) = row.remapped_rows {
            self.remapped.push(
                &with(&[("kind", "correctable")]),
                Some(rows.correctable as f64),
            );
            self.remapped.push(
                &with(&[("kind", "uncorrectable")]),
                Some(rows.uncorrectable as f64),
            );
            self.remap_pending
                .push(labels, Some(f64::from(u8::from(rows.pending))));
            self.remap_failure
                .push(labels, Some(f64::from(u8::from(rows.failure))));
        }
    }

    /// The families in the order they are written.
    fn into_families(self) -> Vec<Family> {
        vec![
            self.health,
            self.ecc,
            self.xids,
            self.retired,
            self.remapped,
            self.remap_pending,
            self.remap_failure,
        ]
    }
}

/// dcgm-exporter's labels, plus `container` and `profile` when one container owns every
/// process on the GPU.
fn gpu_labels(
    gpu: &GpuRow,
    snapshot: &Snapshot,
    hostname: Option<&str>,
) -> Vec<(&'static str, String)> {
    // What NVML or the host would not say is left out, never written as an empty value.
    let mut labels: Vec<(&'static str, String)> = [
        ("gpu", Some(gpu.index.to_string())),
        ("UUID", gpu.uuid.clone()),
        ("device", Some(format!("nvidia{}", gpu.index))),
        ("modelName", gpu.name.clone()),
        ("Hostname", hostname.map(str::to_string)),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.map(|value| (name, value)))
    .collect();
    let owners: BTreeMap<Option<&str>, ()> = gpu
        .processes
        .iter()
        .map(|process| (process.container.as_deref(), ()))
        .collect();
    if let [(Some(owner), ())] = owners.into_iter().collect::<Vec<_>>().as_slice() {
        labels.push(("container", owner.to_string()));
        if let Some(profile) = snapshot
            .containers
            .iter()
            .find(|container| container.name == *owner)
            .and_then(|container| container.profile.clone())
        {
            labels.push(("profile", profile));
        }
    }
    labels
}

/// The series of each container, as `docker stats` measures it.
const CONTAINER_SERIES: [Series<ContainerRow>; 10] = [
    Series {
        name: "envctl_container_cpu_percent",
        kind: "gauge",
        help: "CPU in use, 100 per core (the docker stats scale).",
        value: |container| container.cpu_percent,
    },
    Series {
        name: "envctl_container_cpu_limit_cores",
        kind: "gauge",
        help: "Cores the container may use.",
        value: |container| container.cpu_limit_cores,
    },
    Series {
        name: "envctl_container_memory_bytes",
        kind: "gauge",
        help: "Memory in use without reclaimable page cache (the docker stats figure).",
        value: |container| container.memory_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_memory_limit_bytes",
        kind: "gauge",
        help: "Memory limit (the host's memory when the container has none).",
        value: |container| container.memory_limit_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_network_receive_bytes_total",
        kind: "counter",
        help: "Bytes received on all interfaces.",
        value: |container| container.net_rx_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_network_transmit_bytes_total",
        kind: "counter",
        help: "Bytes sent on all interfaces.",
        value: |container| container.net_tx_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_block_read_bytes_total",
        kind: "counter",
        help: "Bytes read from block devices.",
        value: |container| container.block_read_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_block_write_bytes_total",
        kind: "counter",
        help: "Bytes written to block devices.",
        value: |container| container.block_write_bytes.map(|bytes| bytes as f64),
    },
    Series {
        name: "envctl_container_pids",
        kind: "gauge",
        help: "Processes and threads in the container.",
        value: |container| container.pids.map(|count| count as f64),
    },
    Series {
        name: "envctl_container_gpu_memory_bytes",
        kind: "gauge",
        help: "GPU memory held by the container's processes, on all GPUs.",
        value: |container| container.gpu_memory_bytes.map(|bytes| bytes as f64),
    },
];

fn container_families(snapshot: &Snapshot, hostname: Option<&str>) -> Vec<Family> {
    let rows = snapshot.containers.iter().map(|container| {
        let mut labels = vec![
            ("container", container.name.clone()),
            ("id", container.id.chars().take(12).collect()),
            ("profile", container.profile.clone().unwrap_or_default()),
        ];
        // DCGM's label name, as on the GPU series: one name for the host everywhere.
        labels.extend(hostname.map(|name| ("Hostname", name.to_string())));
        (labels, container)
    });
    families_of(&CONTAINER_SERIES, rows)
}

/// Label values escape backslash, double quote and line feed.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Integers without a fraction; other values as Rust's shortest round-trip form.
fn format_value(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::snapshot::{ContainerRow, ProcessRow};

    #[test]
    fn gpus_take_dcgm_names_and_their_owner() {
        let snapshot = Snapshot {
            time: 1_700_000_000.5,
            containers: vec![ContainerRow {
                id: "0123456789abcdef".into(),
                name: "train".into(),
                profile: Some("pytorch \"2.8\"".into()),
                cpu_percent: Some(150.25),
                ..ContainerRow::default()
            }],
            gpus: vec![GpuRow {
                index: 0,
                uuid: Some("GPU-1".into()),
                name: Some("NVIDIA H100 80GB HBM3".into()),
                utilization_percent: Some(37.0),
                memory_used_bytes: Some(2 * 1024 * 1024 * 1024),
                memory_total_bytes: Some(4 * 1024 * 1024 * 1024),
                processes: vec![ProcessRow {
                    pid: 1,
                    used_memory_bytes: Some(1),
                    container: Some("train".into()),
                }],
                ..GpuRow::default()
            }],
            ..Snapshot::default()
        };
        let text = exposition(&snapshot, Some("node-1"), "node-1");
        assert!(
            text.contains("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"),
            "{text}"
        );
        assert!(
            text.contains("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\",container=\"train\",profile=\"pytorch \\\"2.8\\\"\",host=\"node-1\"} 2048\n"),
            "{text}"
        );
        assert!(text.contains("DCGM_FI_DEV_FB_FREE{"), "{text}");
        assert!(text.contains("envctl_container_cpu_percent{container=\"train\",id=\"0123456789ab\",profile=\"pytorch \\\"2.8\\\"\",Hostname=\"node-1\",host=\"node-1\"} 150.25\n"), "{text}");
        assert!(
            text.contains("envctl_sample_timestamp_seconds{Hostname=\"node-1\",host=\"node-1\"} 1700000000.5\n"),
            "{text}"
        );
        // No network counters: no sample, never 0.
        assert!(!text.contains("envctl_container_network_"), "{text}");
        assert!(
            !text.contains("DCGM_FI_DEV_GPU_TEMP"),
            "unknown values are left out: {text}"
        );
        // Labels NVML or the host would not give are left out, never empty.
        let mut unnamed = snapshot.clone();
        unnamed.gpus[0].uuid = None;
        unnamed.gpus[0].name = None;
        let text = exposition(&unnamed, None, "unix:///var/run/docker.sock");
        assert!(
            text.contains("DCGM_FI_DEV_FB_USED{gpu=\"0\",device=\"nvidia0\",container=\"train\","),
            "{text}"
        );
        assert!(!text.contains("=\"\""), "no empty label values: {text}");
        assert!(
            text.contains(
                "envctl_sample_timestamp_seconds{host=\"unix:///var/run/docker.sock\"} 1700000000.5\n"
            ),
            "{text}"
        );
    }

    /// With `--hosts`, every series of every host carries its `host`, each family is
    /// written once with all hosts' samples, and an unreachable host is `envctl_host_up 0`
    /// with why.
    #[test]
    fn a_team_exposition_labels_every_series_with_its_host() {
        use crate::monitor::snapshot::ContainerRow;
        use crate::monitor::team::{HostsSnapshot, Unreachable};
        let row = |name: &str| ContainerRow {
            id: format!("{name}-id"),
            name: name.into(),
            cpu_percent: Some(1.0),
            ..ContainerRow::default()
        };
        let mut team = HostsSnapshot::new(5.0);
        for (host, container) in [("local", "a"), ("second", "b")] {
            team.push_sampled(
                host,
                "unix:///x",
                Some("machine"),
                Snapshot {
                    time: 4.0,
                    containers: vec![row(container)],
                    ..Snapshot::default()
                },
                false,
            );
        }
        team.push_unreachable(
            "stopped",
            "tcp://127.0.0.1:1",
            Unreachable {
                error: "nothing answers: connection refused".into(),
                kind: "connection_refused",
                hint: None,
            },
        );
        let text = team_exposition(&team);
        assert_eq!(
            text.matches("# TYPE envctl_container_cpu_percent gauge")
                .count(),
            1,
            "{text}"
        );
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            assert!(line.contains("host=\""), "{line}");
        }
        assert!(
            text.contains(
                "container=\"a\",id=\"a-id\",profile=\"\",Hostname=\"machine\",host=\"local\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "container=\"b\",id=\"b-id\",profile=\"\",Hostname=\"machine\",host=\"second\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("envctl_host_up{host=\"local\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("envctl_host_up{host=\"stopped\",error_kind=\"connection_refused\"} 0\n"),
            "{text}"
        );
    }
}
