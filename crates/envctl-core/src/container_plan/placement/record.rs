//! The GPU record: a host's GPUs (index and UUID, with their models, driver and CUDA
//! version) as a daemon keeps them in a volume's labels for clients on other machines,
//! written from NVML or a probe and read back believing nothing of it. Placement for such
//! a client weighs the record's GPUs by their holders ([`GpuRecord::occupancy`]).

use std::collections::BTreeMap;

use super::{GpuOccupancy, is_gpu_uuid, occupancy};
use crate::facts::gpu::GpuDevice;
use crate::facts::gpu::{
    CudaDriverVersion, Fact, FailureKind, NvmlFacts, NvmlFailure, SeenBy, SeenOnServer,
};
use crate::facts::occupancy::GpuHolder;
use crate::facts::smi::ServerGpus;
use crate::facts::versions::ComputeCapability;

/// A host's GPUs as a daemon keeps them for clients on other machines
/// (`engine::daemon_placement`): each GPU's index and UUID, written as `0=GPU-…,1=GPU-…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRecord {
    pub gpus: Vec<(u32, String)>,
}

impl GpuRecord {
    /// The record of NVML's GPUs; `None` when a UUID could not be read (a record that
    /// leaves a GPU out would have it taken as absent).
    pub fn of(gpus: &[GpuDevice]) -> Option<GpuRecord> {
        let gpus = gpus
            .iter()
            .map(|gpu| Some((gpu.index, gpu.uuid.value()?.clone())))
            .collect::<Option<Vec<_>>>()?;
        (!gpus.is_empty()).then_some(GpuRecord { gpus })
    }

    /// The label's text.
    pub fn written(&self) -> String {
        self.gpus
            .iter()
            .map(|(index, uuid)| format!("{index}={uuid}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads the label's text, believing nothing of it: an entry that is not
    /// `INDEX=GPU-UUID` (NVML's shape, `GPU-` and 8-4-4-4-12 hex digits), an index named
    /// twice or a UUID named twice is named. A record listing one GPU under eight indexes
    /// would otherwise have three 2-GPU containers placed on one GPU.
    pub fn parse(text: &str) -> Result<GpuRecord, String> {
        let mut gpus: Vec<(u32, String)> = Vec::new();
        let shown = |entry: &str| format!("{:?}", entry.chars().take(80).collect::<String>());
        for entry in text.split(',') {
            let Some((index, uuid)) = entry.split_once('=').and_then(|(index, uuid)| {
                Some((index.trim().parse::<u32>().ok()?, uuid.trim().to_string()))
            }) else {
                return Err(format!("{} is not `INDEX=GPU-UUID`", shown(entry)));
            };
            if !is_gpu_uuid(&uuid) {
                return Err(format!(
                    "{} is not a GPU UUID as NVML gives them (`GPU-` and 32 hex digits, 8-4-4-4-12)",
                    shown(&uuid)
                ));
            }
            if gpus.iter().any(|(known, _)| *known == index) {
                return Err(format!("it names GPU index {index} twice"));
            }
            if let Some((first, _)) = gpus
                .iter()
                .find(|(_, known)| known.eq_ignore_ascii_case(&uuid))
            {
                return Err(format!(
                    "it gives GPUs {first} and {index} the same UUID {}",
                    shown(&uuid)
                ));
            }
            gpus.push((index, uuid));
        }
        gpus.sort_unstable();
        Ok(GpuRecord { gpus })
    }

    /// Whether the record was written for the daemon it was read from: the host it names
    /// (`recorded_on`) must be the daemon's own name (`/info`'s `Name`). A record copied
    /// from another daemon, or one naming no host, describes GPUs this daemon may not have.
    pub fn tied_to(recorded_on: Option<&str>, daemon: &str) -> Result<(), String> {
        match recorded_on {
            Some(host) if host == daemon => Ok(()),
            Some(host) => Err(format!(
                "it was written on {:?}, but the daemon's host is {daemon:?}",
                host.chars().take(80).collect::<String>()
            )),
            None => Err("it names no host it was written on".into()),
        }
    }
    /// The GPUs of the record with their `holders`, for [`super::choose`]: what is in use on a
    /// GPU of another machine (memory, processes) cannot be read from here, so placement
    /// weighs the containers that hold each GPU only.
    pub fn occupancy(&self, holders: &[GpuHolder]) -> Vec<GpuOccupancy> {
        fn unseen<T>() -> crate::facts::gpu::Fact<T> {
            crate::facts::gpu::Fact::Error(crate::facts::gpu::NvmlFailure::new(
                crate::facts::gpu::FailureKind::Other,
                "a GPU of another machine",
            ))
        }
        let devices: Vec<GpuDevice> = self
            .gpus
            .iter()
            .map(|(index, uuid)| GpuDevice {
                index: *index,
                name: unseen(),
                uuid: crate::facts::gpu::Fact::Value(uuid.clone()),
                pci_bus_id: unseen(),
                compute_capability: unseen(),
                memory: unseen(),
                mig_mode: unseen(),
                power_limit_watts: unseen(),
                processes: unseen(),
                minor_number: unseen(),
                health: Default::default(),
            })
            .collect();
        let (mut rows, _) = occupancy(&devices, holders);
        for row in &mut rows {
            // Unknown by nature here, not unreadable: the GPU stays a candidate.
            row.unreadable.clear();
        }
        rows
    }
}

/// How long the facts of a daemon's GPU record are believed before a client learns them
/// again: an hour. What it keeps (GPUs, models, driver, CUDA) changes with a driver
/// upgrade or a GPU swap, both of which restart the server, so an hour bounds how long a
/// changed server is misjudged while a team running doctor all day pays one probe an
/// hour per server. A record whose GPUs no longer match what the daemon's containers hold
/// is learnt again at once ([`RecordDetails::stale`]).
pub const RECORD_FRESH_SECONDS: i64 = 3600;

/// One GPU's model as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedModel {
    pub name: Option<String>,
    pub compute_capability: Option<ComputeCapability>,
    pub memory_total_mib: Option<u64>,
}

/// What the record keeps beside its GPUs' indexes and UUIDs (labels `envctl.gpu-record.*`
/// of the volume, by suffix): `driver`, `cuda`, `taken` (Unix seconds), `by` (`probe` or
/// `nvml`), and `gpu.N` = `CC;MIB;NAME` per GPU. A record written before these were kept
/// has none of them, and is read all the same.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordDetails {
    pub driver: Option<String>,
    pub cuda: Option<CudaDriverVersion>,
    pub models: BTreeMap<u32, RecordedModel>,
    pub taken_at: Option<i64>,
    pub by: Option<SeenBy>,
}

/// Outside text kept in a label or read from one: printable, at most 128 characters.
fn label_text(text: &str) -> String {
    text.trim()
        .chars()
        .filter(|character| !character.is_control())
        .take(128)
        .collect()
}

impl RecordDetails {
    /// The labels' suffixes and values.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        if let Some(driver) = &self.driver {
            labels.insert("driver".to_string(), label_text(driver));
        }
        if let Some(cuda) = self.cuda {
            labels.insert("cuda".to_string(), cuda.to_string());
        }
        if let Some(taken_at) = self.taken_at {
            labels.insert("taken".to_string(), taken_at.to_string());
        }
        if let Some(by) = self.by {
            labels.insert("by".to_string(), by.as_str().to_string());
        }
        for (index, model) in &self.models {
            let cc = model
                .compute_capability
                .map_or_else(String::new, |cc| format!("{}.{}", cc.major, cc.minor));
            let mib = model
                .memory_total_mib
                .map_or_else(String::new, |mib| mib.to_string());
            let name = model.name.as_deref().map(label_text).unwrap_or_default();
            labels.insert(format!("gpu.{index}"), format!("{cc};{mib};{name}"));
        }
        labels
    }

    /// Reads the labels (by suffix), believing nothing: a value that does not read is
    /// named, and a model of a GPU the record does not list is refused.
    pub fn parse(labels: &BTreeMap<String, String>, record: &GpuRecord) -> Result<Self, String> {
        let shown = |text: &str| format!("{:?}", text.chars().take(80).collect::<String>());
        let mut details = RecordDetails::default();
        for (key, value) in labels {
            match key.as_str() {
                "driver" => {
                    if value.is_empty() || !value.chars().all(|c| c.is_ascii_digit() || c == '.') {
                        return Err(format!(
                            "its driver {} is not a driver version",
                            shown(value)
                        ));
                    }
                    details.driver = Some(value.clone());
                }
                "cuda" => {
                    details.cuda =
                        Some(value.parse().map_err(|_| {
                            format!("its CUDA version {} is not one", shown(value))
                        })?);
                }
                "taken" => {
                    details.taken_at = Some(value.parse().map_err(|_| {
                        format!("its time {} is not a number of seconds", shown(value))
                    })?);
                }
                "by" => {
                    details.by = Some(match value.as_str() {
                        "probe" => SeenBy::Probe,
                        "nvml" => SeenBy::Nvml,
                        _ => {
                            return Err(format!(
                                "its source {} is not probe or nvml",
                                shown(value)
                            ));
                        }
                    });
                }
                other => {
                    let Some(index) = other.strip_prefix("gpu.") else {
                        continue;
                    };
                    let index: u32 = index
                        .parse()
                        .map_err(|_| format!("{} names no GPU index", shown(other)))?;
                    if !record.gpus.iter().any(|(known, _)| *known == index) {
                        return Err(format!("it describes GPU {index}, which it does not list"));
                    }
                    let mut parts = value.splitn(3, ';');
                    let (cc, mib, name) = (
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default(),
                    );
                    let model = RecordedModel {
                        compute_capability: (!cc.is_empty())
                            .then(|| cc.parse::<ComputeCapability>())
                            .transpose()
                            .map_err(|_| {
                                format!("GPU {index}'s compute capability {} is not one", shown(cc))
                            })?,
                        memory_total_mib: (!mib.is_empty())
                            .then(|| mib.parse::<u64>())
                            .transpose()
                            .map_err(|_| {
                                format!("GPU {index}'s memory {} is not a number", shown(mib))
                            })?,
                        name: (!name.is_empty()).then(|| label_text(name)),
                    };
                    details.models.insert(index, model);
                }
            }
        }
        Ok(details)
    }

    /// Why the record must be learnt again at `now` (Unix seconds), if it must: it keeps
    /// no time or driver (written before envctl kept them), it is older than
    /// [`RECORD_FRESH_SECONDS`], its time is in the future (a clock or a forgery), or a
    /// container holds a GPU UUID it does not list (`held_uuids`: the GPUs changed).
    pub fn stale(&self, record: &GpuRecord, now: i64, held_uuids: &[String]) -> Option<String> {
        let Some(taken_at) = self.taken_at else {
            return Some("it keeps no time (written before envctl kept one)".into());
        };
        if self.driver.is_none() {
            return Some("it keeps no driver version".into());
        }
        let age = now - taken_at;
        if age < -60 {
            return Some(format!("it says it was written {} s from now", -age));
        }
        if age > RECORD_FRESH_SECONDS {
            return Some(format!("it is {} min old", age / 60));
        }
        held_uuids
            .iter()
            .find(|uuid| {
                !record
                    .gpus
                    .iter()
                    .any(|(_, known)| known.eq_ignore_ascii_case(uuid))
            })
            .map(|uuid| {
                format!("a container holds {uuid}, which it does not list (the GPUs changed)")
            })
    }

    /// The details of NVML's facts on the daemon's own machine, at `now`.
    pub fn of_nvml(facts: &crate::facts::gpu::NvmlFacts, now: i64) -> Self {
        RecordDetails {
            driver: facts.driver_version.value().cloned(),
            cuda: facts.cuda_driver_version.value().copied(),
            models: facts
                .gpus
                .iter()
                .map(|gpu| {
                    (
                        gpu.index,
                        RecordedModel {
                            name: gpu.name.value().cloned(),
                            compute_capability: gpu.compute_capability.value().copied(),
                            memory_total_mib: gpu
                                .memory
                                .value()
                                .map(|memory| memory.total_bytes >> 20),
                        },
                    )
                })
                .collect(),
            taken_at: Some(now),
            by: Some(SeenBy::Nvml),
        }
    }
}

/// The record and its details of what a probe learnt at `now`; `None` when a UUID is not
/// NVML's shape (a record must never be written from a doubtful answer).
pub fn record_of_probe(gpus: &ServerGpus, now: i64) -> Option<(GpuRecord, RecordDetails)> {
    if gpus.gpus.is_empty() || !gpus.gpus.iter().all(|gpu| is_gpu_uuid(&gpu.uuid)) {
        return None;
    }
    let record = GpuRecord {
        gpus: gpus
            .gpus
            .iter()
            .map(|gpu| (gpu.index, gpu.uuid.clone()))
            .collect(),
    };
    let details = RecordDetails {
        driver: gpus.driver.clone(),
        cuda: gpus.cuda,
        models: gpus
            .gpus
            .iter()
            .map(|gpu| {
                (
                    gpu.index,
                    RecordedModel {
                        name: gpu.name.clone(),
                        compute_capability: gpu.compute_capability,
                        memory_total_mib: gpu.memory_total_mib,
                    },
                )
            })
            .collect(),
        taken_at: Some(now),
        by: Some(SeenBy::Probe),
    };
    Some((record, details))
}

/// The record's GPUs as doctor judges them (NVML's shape): what it does not keep is unknown.
pub fn seen_from_record(record: &GpuRecord, details: &RecordDetails) -> SeenOnServer {
    let unknown = |what: &str| {
        NvmlFailure::new(
            FailureKind::Other,
            format!("the daemon's GPU record does not keep {what}"),
        )
    };
    let gpus = record
        .gpus
        .iter()
        .map(|(index, uuid)| {
            let model = details.models.get(index);
            GpuDevice {
                index: *index,
                name: match model.and_then(|model| model.name.clone()) {
                    Some(name) => Fact::Value(name),
                    None => Fact::Error(unknown("its name")),
                },
                uuid: Fact::Value(uuid.clone()),
                pci_bus_id: Fact::Error(unknown("the PCI bus id")),
                compute_capability: match model.and_then(|model| model.compute_capability) {
                    Some(cc) => Fact::Value(cc),
                    None => Fact::Error(unknown("the compute capability")),
                },
                memory: Fact::Error(unknown("memory in use")),
                mig_mode: Fact::Error(unknown("the MIG mode")),
                power_limit_watts: Fact::Error(unknown("the power limit")),
                processes: Fact::Error(unknown("processes")),
                minor_number: Fact::Error(unknown("the device minor number")),
                health: crate::facts::gpu::GpuHealth::all_failing(unknown("the GPU's health")),
            }
        })
        .collect::<Vec<_>>();
    SeenOnServer {
        facts: NvmlFacts {
            driver_version: match &details.driver {
                Some(driver) => Fact::Value(driver.clone()),
                None => Fact::Error(unknown("the driver version")),
            },
            cuda_driver_version: match details.cuda {
                Some(cuda) => Fact::Value(cuda),
                None => Fact::Error(unknown("the CUDA version")),
            },
            nvml_version: Fact::Error(unknown("the NVML version")),
            device_count: Fact::Value(u32::try_from(gpus.len()).unwrap_or(u32::MAX)),
            gpus,
            shutdown_failure: None,
        },
        // Before envctl kept its source, only NVML on the server wrote a record.
        by: details.by.unwrap_or(SeenBy::Nvml),
        taken_at: details.taken_at,
        from_record: true,
    }
}

/// What a probe learnt, as doctor judges it.
pub fn seen_from_probe(gpus: &ServerGpus, now: i64) -> SeenOnServer {
    SeenOnServer {
        facts: gpus.nvml_facts(),
        by: SeenBy::Probe,
        taken_at: Some(now),
        from_record: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probed() -> ServerGpus {
        crate::facts::smi::ServerGpus {
            driver: Some("550.54.15".into()),
            cuda: Some("12.4".parse().unwrap()),
            gpus: (0..2)
                .map(|index| crate::facts::smi::SmiGpu {
                    index,
                    uuid: format!("GPU-{index}0000000-0000-0000-0000-000000000000"),
                    name: Some("NVIDIA A100-SXM4-80GB".into()),
                    compute_capability: Some(ComputeCapability::new(8, 0)),
                    memory_total_mib: Some(81920),
                    memory_used_mib: Some(0),
                })
                .collect(),
            processes: Vec::new(),
        }
    }

    #[test]
    fn record_details_are_written_and_read_back() {
        let (record, details) = record_of_probe(&probed(), 1_000).unwrap();
        let read = RecordDetails::parse(&details.labels(), &record).unwrap();
        assert_eq!(read, details);
        let seen = seen_from_record(&record, &read);
        assert_eq!(
            seen.facts.driver_version.value().map(String::as_str),
            Some("550.54.15")
        );
        assert_eq!(seen.facts.gpus.len(), 2);
        assert!(seen.from_record);
    }

    #[test]
    fn an_older_record_without_details_is_read_and_stale() {
        let record = GpuRecord::parse("0=GPU-00000000-0000-0000-0000-000000000000").unwrap();
        let details = RecordDetails::parse(&BTreeMap::new(), &record).unwrap();
        assert_eq!(details, RecordDetails::default());
        assert!(details.stale(&record, 1_000, &[]).is_some());
    }

    #[test]
    fn a_record_is_stale_with_age_a_future_time_or_changed_gpus() {
        let (record, details) = record_of_probe(&probed(), 10_000).unwrap();
        assert_eq!(
            details.stale(&record, 10_000 + RECORD_FRESH_SECONDS, &[]),
            None
        );
        assert!(
            details
                .stale(&record, 10_001 + RECORD_FRESH_SECONDS, &[])
                .is_some()
        );
        assert!(details.stale(&record, 9_000, &[]).is_some());
        let held = ["GPU-90000000-0000-0000-0000-000000000000".to_string()];
        assert!(details.stale(&record, 10_000, &held).is_some());
        let known = ["GPU-10000000-0000-0000-0000-000000000000".to_string()];
        assert_eq!(details.stale(&record, 10_000, &known), None);
    }

    #[test]
    fn record_details_are_not_believed_blindly() {
        let (record, _) = record_of_probe(&probed(), 1).unwrap();
        for (key, value) in [
            ("driver", "550; rm -rf"),
            ("cuda", "twelve"),
            ("taken", "soon"),
            ("by", "someone"),
            ("gpu.7", "8.0;1;A100"),
            ("gpu.0", "x.y;1;A100"),
            ("gpu.0", "8.0;lots;A100"),
        ] {
            let labels = BTreeMap::from([(key.to_string(), value.to_string())]);
            assert!(
                RecordDetails::parse(&labels, &record).is_err(),
                "{key}={value}"
            );
        }
    }

    #[test]
    fn a_probe_with_a_doubtful_uuid_writes_no_record() {
        let mut gpus = probed();
        gpus.gpus[1].uuid = "GPU-short".into();
        assert!(record_of_probe(&gpus, 1).is_none());
    }
}
