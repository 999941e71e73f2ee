//! `envctl gpu clear UUID|INDEX` (issue 43): ends the keep-out of a GPU on which a
//! `stats` watcher recorded a fatal Xid (`host::gpu_health`), once its admin has reset
//! it. The clear is this user's record of the time: it covers every user's record of the
//! Xids seen before it, and a later Xid marks the GPU again. What NVML itself reports (a
//! pending row remap, a lost GPU) is no record, so no clear ends it: a reset or a reboot
//! does, and the answer says so.

use serde::Serialize;

use crate::checks::health::RecordedFailure;
use crate::context::Context;
use crate::error::Error;

/// One GPU as named in the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuName {
    pub index: Option<u32>,
    pub uuid: String,
}

/// What `gpu clear` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Clear {
    /// The recorded fatal Xids of the GPU are cleared: placement gives it again (unless
    /// `still_kept_out`).
    Cleared {
        gpu: GpuName,
        cleared: Vec<RecordedFailure>,
        /// The record written (this user's).
        record: String,
        /// What NVML reports now that keeps the GPU out all the same.
        #[serde(skip_serializing_if = "Option::is_none")]
        still_kept_out: Option<String>,
    },
    /// No fatal Xid is recorded on it since its last clear (or this boot).
    NothingToClear {
        gpu: GpuName,
        #[serde(skip_serializing_if = "Option::is_none")]
        still_kept_out: Option<String>,
    },
    /// No GPU of this host has that index or UUID.
    UnknownGpu {
        asked: String,
        gpus: Vec<GpuName>,
        /// Why NVML listed no GPU, when it did not.
        #[serde(skip_serializing_if = "Option::is_none")]
        nvml: Option<String>,
    },
}

/// Clears the GPU `name` (an index as NVML numbers it, or a `GPU-…` UUID).
pub fn clear(name: &str, context: &Context) -> Result<Clear, Error> {
    let lock = context.environment.gpu_lock_path();
    let gpu = crate::gpu::gather(context.environment.nvml_library().as_deref());
    let (devices, nvml) = match gpu.listed_gpus() {
        Ok(devices) => (devices, None),
        Err(why) => (&[][..], Some(why)),
    };
    let found = crate::host::gpu_health::read_all(&lock);
    for why in &found.ignored {
        context.printer.warn(why);
    }
    let boot_id = crate::host::gpu_health::boot_id().map_err(|error| Error::Read {
        path: crate::host::gpu_health::BOOT_ID.into(),
        source: std::io::Error::other(crate::error::error_chain(&error)),
    })?;
    let asked = name.trim();
    let by_nvml = listed_device(devices, asked);
    let Some(target) = target_of(asked, by_nvml, &found.records) else {
        return Ok(Clear::UnknownGpu {
            asked: asked.to_string(),
            gpus: listed_names(devices),
            nvml,
        });
    };
    let fatal_xids = crate::ops::placement::fatal_xids_in_force(None, context)?;
    let still_kept_out =
        by_nvml.and_then(|device| crate::checks::health::keep_out(device, &[], None, &fatal_xids));
    let recorded = crate::checks::health::recorded_failures(
        &found.records,
        &boot_id,
        &target.uuid,
        &fatal_xids,
    );
    if recorded.is_empty() {
        return Ok(Clear::NothingToClear {
            gpu: target,
            still_kept_out,
        });
    }
    let Some(index) = target
        .index
        .or_else(|| recorded_index(&found.records, &target.uuid))
    else {
        return Err(Error::Internal(format!(
            "the record of {} names no index",
            target.uuid
        )));
    };
    let record = write_clear(&lock, &boot_id, &target.uuid, index, context)?;
    Ok(Clear::Cleared {
        gpu: target,
        cleared: recorded,
        record,
        still_kept_out,
    })
}

/// The GPUs NVML lists, as the answer names them.
fn listed_names(devices: &[crate::facts::gpu::GpuDevice]) -> Vec<GpuName> {
    devices
        .iter()
        .map(|device| GpuName {
            index: Some(device.index),
            uuid: device
                .uuid
                .value()
                .cloned()
                .unwrap_or_else(|| "(UUID unreadable)".into()),
        })
        .collect()
}

/// The GPU NVML lists by the index or UUID `asked`.
fn listed_device<'devices>(
    devices: &'devices [crate::facts::gpu::GpuDevice],
    asked: &str,
) -> Option<&'devices crate::facts::gpu::GpuDevice> {
    devices.iter().find(|device| {
        asked.parse::<u32>().ok() == Some(device.index)
            || device
                .uuid
                .value()
                .is_some_and(|uuid| uuid.eq_ignore_ascii_case(asked))
    })
}

/// The GPU to clear: the one NVML lists (`by_nvml`, when its UUID is readable), or else a
/// UUID NVML no longer lists (a GPU fallen off the bus) found in the records, so that its
/// keep-out can still be ended after it is serviced. `None` where neither names it.
fn target_of(
    asked: &str,
    by_nvml: Option<&crate::facts::gpu::GpuDevice>,
    records: &[crate::checks::health::SourcedRecord],
) -> Option<GpuName> {
    match by_nvml {
        Some(device) => device.uuid.value().map(|uuid| GpuName {
            index: Some(device.index),
            uuid: uuid.clone(),
        }),
        None => records
            .iter()
            .flat_map(|sourced| sourced.record.gpus.iter())
            .find(|gpu| gpu.uuid.eq_ignore_ascii_case(asked))
            .map(|gpu| GpuName {
                index: None,
                uuid: gpu.uuid.clone(),
            }),
    }
}

/// Writes this user's clear of the GPU `uuid` into its record under `lock`; returns the
/// record's path.
fn write_clear(
    lock: &std::path::Path,
    boot_id: &str,
    uuid: &str,
    index: u32,
    context: &Context,
) -> Result<String, Error> {
    let written = |source: std::io::Error, path: String| Error::Write { path, source };
    let uid = crate::host::gpu_health::my_uid().map_err(|error| {
        written(
            std::io::Error::other(crate::error::error_chain(&error)),
            lock.display().to_string(),
        )
    })?;
    let record = crate::host::gpu_health::path_of(lock, uid)
        .display()
        .to_string();
    crate::host::gpu_health::update(lock, boot_id, |kept| {
        kept.clear(
            uuid,
            index,
            crate::host::gpu_health::milliseconds(context.environment.now()),
        );
    })
    .map_err(|error| {
        written(
            std::io::Error::other(crate::error::error_chain(&error)),
            record.clone(),
        )
    })?;
    Ok(record)
}

/// The index a record last gave the GPU `uuid`.
fn recorded_index(records: &[crate::checks::health::SourcedRecord], uuid: &str) -> Option<u32> {
    records
        .iter()
        .flat_map(|sourced| sourced.record.gpus.iter())
        .find(|gpu| gpu.uuid.eq_ignore_ascii_case(uuid))
        .map(|gpu| gpu.index)
}
