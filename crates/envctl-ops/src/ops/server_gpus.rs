//! Another machine's GPUs, learnt through its daemon (issue 38, item 1): from the GPU
//! record the daemon keeps (`engine::daemon_placement`) while it is fresh, else by a probe
//! container (`engine::probe`), whose answer is then kept in the record so that the next
//! client, from any machine, does not pay for it again.
//!
//! A record is never believed blindly: it must be envctl's, read as NVML's shape, name
//! the daemon's own host (`container_plan::placement::GpuRecord`), and be fresh
//! (`RecordDetails::stale`: an hour, or at once when a container holds a GPU it does not
//! list). Placement asks for a probe every time ([`Need::Processes`]): the processes on
//! each GPU change by the minute and are never kept.

use crate::container_plan::placement::{self, GpuRecord, RecordDetails};
use crate::context::Context;
use crate::engine::Engine;
use crate::engine::daemon_placement::GpuRecordVolume;
use crate::engine::probe::ProbeError;
use crate::facts::gpu::SeenOnServer;
use crate::facts::smi::ServerGpus;

/// What the caller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The GPUs, models, driver and CUDA: a fresh record will do (doctor).
    Facts,
    /// The compute processes too: a probe now (placement).
    Processes,
}

/// What was learnt, and how.
#[derive(Debug, Clone)]
pub struct Learnt {
    pub seen: SeenOnServer,
    /// The probe's answer, when a probe ran (its processes, for placement).
    pub probed: Option<ServerGpus>,
    /// What the caller should say: why the record was learnt again, or why it could not be
    /// kept.
    pub notes: Vec<String>,
}

/// Why nothing could be learnt.
#[derive(Debug, thiserror::Error)]
pub enum ServerGpusError {
    /// The probe failed and no record believed stands in.
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

impl ServerGpusError {
    pub fn hint(&self) -> Option<String> {
        match self {
            ServerGpusError::Probe(error) => error.hint(),
        }
    }
}

/// Unix seconds of the context's clock.
pub fn now_seconds(context: &Context) -> i64 {
    context
        .environment
        .now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
        })
}

/// The record at the daemon, when it is envctl's and believed for `host`: the record, its
/// details, and why it is not.
async fn believed_record(
    engine: &Engine,
    host: &str,
) -> (Option<(GpuRecord, RecordDetails)>, Option<String>, bool) {
    match engine.gpu_record().await {
        Ok(GpuRecordVolume::Envctls {
            record,
            host: recorded_on,
            details,
        }) => {
            let believed = GpuRecord::parse(&record)
                .and_then(|record| {
                    GpuRecord::tied_to(recorded_on.as_deref(), host).map(|()| record)
                })
                .and_then(|record| {
                    RecordDetails::parse(&details, &record).map(|details| (record, details))
                });
            match believed {
                Ok(kept) => (Some(kept), None, true),
                Err(why) => (
                    None,
                    Some(format!(
                        "the GPU record of the daemon on {host} (volume {}) is not believed: {why}",
                        crate::engine::daemon_placement::RECORD_NAME
                    )),
                    true,
                ),
            }
        }
        Ok(GpuRecordVolume::Missing) => (None, None, true),
        Ok(GpuRecordVolume::NotEnvctls) => (
            None,
            Some(format!(
                "the volume {} on {host} is not envctl's GPU record, so what is learnt is not kept there",
                crate::engine::daemon_placement::RECORD_NAME
            )),
            false,
        ),
        Err(error) => (
            None,
            Some(format!(
                "the GPU record of the daemon on {host} could not be read ({})",
                crate::error::error_chain(&error)
            )),
            false,
        ),
    }
}

/// The GPUs of `host` as its daemon's record keeps them, when it is believed (fresh or
/// not): what is told without a probe, for commands about profiles that want no GPU.
pub async fn recorded_only(engine: &Engine, host: &str) -> Option<SeenOnServer> {
    let (kept, _, _) = believed_record(engine, host).await;
    kept.map(|(record, details)| placement::seen_from_record(&record, &details))
}

/// The GPUs of the daemon's machine `host` (its `/info` Name). `images`: the profiles'
/// images, the probe's first choice. `held_uuids`: the GPU UUIDs the daemon's containers
/// hold, which a fresh record must list.
pub async fn learn(
    engine: &Engine,
    host: &str,
    images: &[String],
    held_uuids: &[String],
    need: Need,
    context: &Context,
) -> Result<Learnt, ServerGpusError> {
    let now = now_seconds(context);
    let (kept, mut notes, writable) = {
        let (kept, note, writable) = believed_record(engine, host).await;
        (kept, note.into_iter().collect::<Vec<_>>(), writable)
    };
    let stale = kept
        .as_ref()
        .and_then(|(record, details)| details.stale(record, now, held_uuids));
    if need == Need::Facts
        && let Some((record, details)) = &kept
        && stale.is_none()
    {
        return Ok(Learnt {
            seen: placement::seen_from_record(record, details),
            probed: None,
            notes,
        });
    }
    let probed = match engine.probe_image(images).await {
        Ok(image) => engine.probe_gpus(&image).await,
        Err(error) => Err(error),
    };
    let probed = match probed {
        Ok(probed) => probed,
        Err(error) => {
            // The record, stale or not, is better than nothing for the GPUs it lists; the
            // processes stay unknown, which placement says.
            return match kept {
                Some((record, details)) => {
                    notes.push(format!(
                        "{host}'s GPUs could not be probed ({}): its daemon's GPU record stands in{}",
                        crate::error::error_chain(&error),
                        stale.map_or_else(String::new, |why| format!(", though {why}"))
                    ));
                    Ok(Learnt {
                        seen: placement::seen_from_record(&record, &details),
                        probed: None,
                        notes,
                    })
                }
                None => Err(error.into()),
            };
        }
    };
    if writable {
        keep_probe(
            engine,
            host,
            &probed,
            now,
            kept.as_ref(),
            stale.is_none(),
            &mut notes,
        )
        .await;
    }
    Ok(Learnt {
        seen: placement::seen_from_probe(&probed, now),
        probed: Some(probed),
        notes,
    })
}

/// Keeps what the probe learnt in the daemon's GPU record for the next client, whichever
/// machine it runs on, unless the record (`kept`, when `fresh`) says the same already; a
/// write that fails is said in `notes`.
async fn keep_probe(
    engine: &Engine,
    host: &str,
    probed: &ServerGpus,
    now: i64,
    kept: Option<&(GpuRecord, RecordDetails)>,
    fresh: bool,
    notes: &mut Vec<String>,
) {
    let Some((record, details)) = placement::record_of_probe(probed, now) else {
        return;
    };
    let same = kept.is_some_and(|(old, old_details)| {
        *old == record
            && old_details.driver == details.driver
            && old_details.cuda == details.cuda
            && old_details.models == details.models
            && fresh
    });
    if !same {
        let mut labels = details.labels();
        labels.remove("host");
        if let Err(error) = engine
            .write_gpu_record(&record.written(), Some(host), &labels)
            .await
        {
            notes.push(format!(
                "what was learnt of {host}'s GPUs could not be kept in its daemon's record (volume {}): {}",
                crate::engine::daemon_placement::RECORD_NAME,
                crate::error::error_chain(&error)
            ));
        }
    }
}
