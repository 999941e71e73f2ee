//! What envctl keeps at a daemon for GPU placement, so that its clients on any machine
//! place alike (issue 27, items 3 and 4).
//!
//! **The lock**: a container named
//! [`LOCK_NAME`], created and never started by the `up` that places, removed once that
//! `up`'s own container exists. A daemon gives a name to one container only, atomically,
//! whoever asks (Docker's name reservation, Podman's database), so the clients of one
//! daemon, from any machine, place one at a time, where a lock file of one machine orders
//! only that machine's `up`s.
//!
//! **The record**: a volume named [`RECORD_NAME`] whose label lists the host's GPUs
//! (index and UUID), written by an `up` that placed on that host with its NVML, or by a
//! client that probed the daemon (`engine::probe`): a client on another machine, which
//! cannot read that host's NVML, places and judges by it. Its other labels
//! ([`RECORD_DETAIL_PREFIX`]) keep the driver, CUDA version, each GPU's model, and when
//! and by what it was taken; a record without them (older envctl) is read all the same.
//!
//! This module makes single tries and plain reads; waiting, breaking a lock whose holder
//! died, signals, and what the record says are `ops::placement`'s.

use super::{Engine, EngineError};

/// The lock's container name, one per daemon.
pub const LOCK_NAME: &str = "envctl-gpu-placement-lock";

/// The label carrying the run that holds the lock (`RUN_LABEL`'s value), which finds a
/// lock whose create was cut short by a signal.
pub const LOCK_LABEL: &str = "envctl.placement-lock";

/// The label naming who holds it, for the message of those who wait.
pub const HOLDER_LABEL: &str = "envctl.placement-lock.holder";

/// The record's volume name, one per daemon.
pub const RECORD_NAME: &str = "envctl-gpus";

/// The record's label: `0=GPU-…,1=GPU-…` (`container_plan::placement::GpuRecord`).
pub const RECORD_LABEL: &str = "envctl.gpu-record";

/// The label naming the host that wrote the record.
pub const RECORDED_ON_LABEL: &str = "envctl.gpu-record.host";

/// The prefix of the record's other labels (`container_plan::placement::RecordDetails`): driver,
/// CUDA version, each GPU's model, when and by what it was taken.
pub const RECORD_DETAIL_PREFIX: &str = "envctl.gpu-record.";

/// What stands at [`RECORD_NAME`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuRecordVolume {
    Missing,
    /// envctl's record, with the host that wrote it and its other labels by suffix
    /// ([`RECORD_DETAIL_PREFIX`] taken off; `host` among them).
    Envctls {
        record: String,
        host: Option<String>,
        details: std::collections::BTreeMap<String, String>,
    },
    /// A volume of that name without the record's label: someone's, never replaced.
    NotEnvctls,
}

/// What one try found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockTry {
    /// This try made the lock: its container id.
    Taken { id: String },
    /// Another holds it.
    Held {
        id: String,
        /// [`HOLDER_LABEL`] of the lock, when it has one.
        holder: Option<String>,
        /// Whether envctl made it (it carries [`LOCK_LABEL`]): a container of that name
        /// that envctl did not make is someone's, never broken as a dead holder's lock.
        envctls: bool,
    },
    /// Held at the create, gone at the look: try again.
    Released,
}

impl Engine {
    /// One try at the daemon's placement lock, made from `image` (present: `up` pulls
    /// before it places) with a command that is never run. `run` and `holder` label it.
    pub async fn try_placement_lock(
        &self,
        image: &str,
        run: &str,
        holder: &str,
    ) -> Result<LockTry, EngineError> {
        let body = serde_json::json!({
            "Image": image,
            // Never started; an image without CMD would otherwise be refused at the create.
            "Cmd": ["envctl-placement-lock"],
            "Entrypoint": [],
            "Labels": { LOCK_LABEL: run, HOLDER_LABEL: holder },
            "HostConfig": { "NetworkMode": "none" },
        });
        match self.create_container(LOCK_NAME, &body).await {
            Ok(id) => Ok(LockTry::Taken { id }),
            Err(EngineError::NameConflict { .. }) => {
                Ok(match self.inspect_container(LOCK_NAME).await? {
                    Some(held) => LockTry::Held {
                        holder: held.labels.get(HOLDER_LABEL).cloned(),
                        envctls: held.labels.contains_key(LOCK_LABEL),
                        id: held.id,
                    },
                    None => LockTry::Released,
                })
            }
            Err(error) => Err(error),
        }
    }

    /// The longest a create on this connection may take before envctl gives up on it:
    /// the connection's timeout and the grace past it (`Engine::work_answer`). A lock's
    /// holder is alive at least that long after it begins its create.
    pub fn create_deadline(&self) -> std::time::Duration {
        self.timeout + super::TIMEOUT_GRACE
    }

    /// Removes the lock `id` (this run's, or a dead holder's): by id, so a lock taken again
    /// meanwhile by another run is never removed. One already gone is not an error.
    pub async fn release_placement_lock(&self, id: &str) -> Result<(), EngineError> {
        self.remove_container(id, true, false).await
    }

    /// The ids of the locks labelled with `run`: a create cut short by a signal may have
    /// made one whose id never came back.
    pub async fn placement_locks_of(&self, run: &str) -> Result<Vec<String>, EngineError> {
        self.containers_labelled(&format!("{LOCK_LABEL}={run}"))
            .await
    }

    /// The daemon's GPU record ([`RECORD_LABEL`] of [`RECORD_NAME`]).
    pub async fn gpu_record(&self) -> Result<GpuRecordVolume, EngineError> {
        let inspected = self
            .with_deadline(
                "inspecting a volume",
                self.answer_deadline(),
                self.docker.inspect_volume(RECORD_NAME),
            )
            .await?;
        match inspected {
            Ok(volume) => Ok(match volume.labels.get(RECORD_LABEL) {
                Some(record) => GpuRecordVolume::Envctls {
                    record: record.clone(),
                    host: volume.labels.get(RECORDED_ON_LABEL).cloned(),
                    details: volume
                        .labels
                        .iter()
                        .filter_map(|(key, value)| {
                            Some((
                                key.strip_prefix(RECORD_DETAIL_PREFIX)?.to_string(),
                                value.clone(),
                            ))
                        })
                        .collect(),
                },
                None => GpuRecordVolume::NotEnvctls,
            }),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(GpuRecordVolume::Missing),
            Err(error) => Err(self.classify(error)),
        }
    }

    /// Writes the daemon's GPU record: the volume made again with `record`, labelled as
    /// written on `host` (a volume's labels cannot be changed). Called under the lock, and
    /// only where [`Engine::gpu_record`] found envctl's record or none.
    pub async fn write_gpu_record(
        &self,
        record: &str,
        host: Option<&str>,
        details: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        self.remove_volume(RECORD_NAME).await?;
        let request = bollard::models::VolumeCreateRequest {
            name: Some(RECORD_NAME.to_string()),
            labels: Some(
                std::iter::once((RECORD_LABEL.to_string(), record.to_string()))
                    .chain(host.map(|host| (RECORDED_ON_LABEL.to_string(), host.to_string())))
                    .chain(
                        details
                            .iter()
                            .filter(|(key, _)| key.as_str() != "host")
                            .map(|(key, value)| {
                                (format!("{RECORD_DETAIL_PREFIX}{key}"), value.clone())
                            }),
                    )
                    .collect(),
            ),
            ..Default::default()
        };
        self.work_answer("creating a volume", self.docker.create_volume(request))
            .await?;
        Ok(())
    }
}
