//! The GPU keys: `gpus` (a count, `all`, `optional`, device names or a table) and
//! `placement`, with the device names NVIDIA tools accept.

use std::collections::BTreeSet;

use toml::de::{DeTable, DeValue};

use super::{Checker, GPU_TABLE_KEYS, Value, did_you_mean, integer_value};
use crate::profile::diagnostic::MAXIMUM_GPU_COUNT;
use crate::profile::model::{GpuPlacement, GpuRequest};

/// The forms `gpus` takes, for hints.
const GPUS_EXAMPLE: &str = "gpus = \"all\", \"none\", \"optional\", 2, or [\"0\", \"1\"]";

impl Checker<'_> {
    /// `placement = "free" | "idle" | "first"`: how `up` picks the GPUs of a count.
    pub(super) fn placement(&mut self, value: &Value<'_>) -> Option<GpuPlacement> {
        let example = "placement = \"free\" (GPUs no container holds), \"idle\" (and no other process uses) or \"first\" (Docker's first N)";
        let Some(text) = value.get_ref().as_str() else {
            self.type_error("placement", value, "a string", example);
            return None;
        };
        let placement = GpuPlacement::from_name(text);
        if placement.is_none() {
            self.error(
                value.span(),
                format!("`placement` = \"{text}\" is not a placement"),
                Some(example.into()),
            );
        }
        placement
    }

    pub(super) fn gpus(&mut self, value: &Value<'_>) -> Option<GpuRequest> {
        match value.get_ref() {
            DeValue::String(text) => self.gpu_word(value, text),
            DeValue::Integer(integer) => {
                self.gpu_count(value, integer_value(integer), &integer.to_string())
            }
            DeValue::Array(array) => {
                let devices = self.gpu_devices(value, array)?;
                Some(GpuRequest::Devices(devices))
            }
            DeValue::Table(table) => self.gpu_table(value, table),
            _ => {
                self.type_error(
                    "gpus",
                    value,
                    "a string, an integer or an array",
                    GPUS_EXAMPLE,
                );
                None
            }
        }
    }

    /// `gpus` as a string: `all`, `none`, `optional` or a count written as text; anything
    /// else is named with the nearest word.
    fn gpu_word(&mut self, value: &Value<'_>, text: &str) -> Option<GpuRequest> {
        match text {
            "all" => Some(GpuRequest::All),
            "none" => Some(GpuRequest::None),
            "optional" => Some(GpuRequest::Optional),
            other if other.chars().all(|c| c.is_ascii_digit()) && !other.is_empty() => {
                self.gpu_count(value, other.parse().ok(), other)
            }
            other => {
                let hint = did_you_mean(other, &["all", "none", "optional"]).map_or_else(
                    || GPUS_EXAMPLE.to_string(),
                    |word| format!("did you mean \"{word}\"?"),
                );
                self.error(
                    value.span(),
                    format!("`gpus` = \"{other}\" is not a GPU selection"),
                    Some(hint),
                );
                None
            }
        }
    }

    /// `gpus` as a table: `{ count = N }` or `{ devices = [...] }`, never both.
    fn gpu_table(&mut self, value: &Value<'_>, table: &DeTable<'_>) -> Option<GpuRequest> {
        let mut count = None;
        let mut devices = None;
        for (key, item) in table {
            match key.get_ref().as_ref() {
                "count" => count = Some(item),
                "devices" => devices = Some(item),
                _ => self.unknown_key(key, &GPU_TABLE_KEYS, Some("gpus")),
            }
        }
        match (count, devices) {
            (Some(_), Some(devices)) => {
                self.error(
                    devices.span(),
                    "`gpus` sets both `count` and `devices`; Docker takes one or the other".into(),
                    Some("keep `devices` to pick GPUs, or `count` to take the first N".into()),
                );
                None
            }
            (Some(count), None) => match count.get_ref() {
                DeValue::Integer(integer) => {
                    self.gpu_count(count, integer_value(integer), &integer.to_string())
                }
                _ => {
                    self.type_error(
                        "gpus.count",
                        count,
                        "a positive integer",
                        "gpus = { count = 2 }",
                    );
                    None
                }
            },
            (None, Some(devices)) => match devices.get_ref().as_array() {
                Some(array) => self.gpu_devices(devices, array).map(GpuRequest::Devices),
                None => {
                    self.type_error(
                        "gpus.devices",
                        devices,
                        "an array",
                        "gpus = { devices = [\"0\"] }",
                    );
                    None
                }
            },
            (None, None) => {
                self.error(
                    value.span(),
                    "`gpus` table needs `count` or `devices`".into(),
                    Some(GPUS_EXAMPLE.into()),
                );
                None
            }
        }
    }

    fn gpu_count(
        &mut self,
        value: &Value<'_>,
        count: Option<i64>,
        shown: &str,
    ) -> Option<GpuRequest> {
        match count {
            Some(count) if count > 0 && count <= MAXIMUM_GPU_COUNT => {
                Some(GpuRequest::Count(count as u32))
            }
            Some(count) if count > MAXIMUM_GPU_COUNT => {
                self.error(
                    value.span(),
                    format!("`gpus` count {shown} is too large (at most {MAXIMUM_GPU_COUNT})"),
                    Some("use gpus = \"all\" for every GPU of the host".into()),
                );
                None
            }
            None if !shown.starts_with('-') => {
                self.error(
                    value.span(),
                    format!("`gpus` count {shown} is too large (at most {MAXIMUM_GPU_COUNT})"),
                    Some("use gpus = \"all\" for every GPU of the host".into()),
                );
                None
            }
            _ => {
                self.error(
                    value.span(),
                    format!("`gpus` count `{shown}` must be a positive number"),
                    Some("use gpus = \"none\" for no GPU, or a count of 1 or more".into()),
                );
                None
            }
        }
    }

    pub(super) fn gpu_devices(
        &mut self,
        value: &Value<'_>,
        array: &[Value<'_>],
    ) -> Option<Vec<String>> {
        if array.is_empty() {
            self.error(
                value.span(),
                "`gpus` lists no device".into(),
                Some("use gpus = \"none\" for no GPU".into()),
            );
            return None;
        }
        let mut devices = Vec::new();
        let mut seen = BTreeSet::new();
        let mut valid = true;
        for item in array {
            let text = match item.get_ref() {
                DeValue::String(text) => text.to_string(),
                DeValue::Integer(integer) => integer_value(integer)
                    .map_or_else(|| integer.to_string(), |index| index.to_string()),
                other => {
                    valid = false;
                    self.error(
                        item.span(),
                        format!(
                            "a `gpus` device must be an index or a UUID string, found {}",
                            other.type_str()
                        ),
                        None,
                    );
                    continue;
                }
            };
            if let Err(message) = check_gpu_device(&text) {
                valid = false;
                self.error(
                    item.span(),
                    message,
                    Some("write an index (\"0\"), a GPU UUID (\"GPU-…\") or a MIG UUID (\"MIG-…\"), as `nvidia-smi -L` prints them".into()),
                );
                continue;
            }
            if !seen.insert(text.clone()) {
                valid = false;
                self.error(item.span(), format!("GPU `{text}` is listed twice"), None);
                continue;
            }
            devices.push(text);
        }
        valid.then_some(devices)
    }
}

pub(super) fn check_gpu_device(device: &str) -> Result<(), String> {
    if !device.is_empty() && device.chars().all(|c| c.is_ascii_digit()) {
        return match device.parse::<u32>() {
            Ok(index) if index < 1024 => Ok(()),
            _ => Err(format!("GPU index `{device}` is out of range")),
        };
    }
    let is_uuid = |text: &str| {
        let groups: Vec<&str> = text.split('-').collect();
        groups.len() == 5
            && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, length)| {
                group.len() == length && group.chars().all(|c| c.is_ascii_hexdigit())
            })
    };
    if let Some(uuid) = device.strip_prefix("GPU-")
        && is_uuid(uuid)
    {
        return Ok(());
    }
    if let Some(rest) = device.strip_prefix("MIG-") {
        // Current drivers: `MIG-<uuid>`; before R470: `MIG-GPU-<uuid>/<gi>/<ci>`.
        if is_uuid(rest) {
            return Ok(());
        }
        if let Some(legacy) = rest.strip_prefix("GPU-") {
            let parts: Vec<&str> = legacy.split('/').collect();
            if parts.len() == 3
                && is_uuid(parts[0])
                && parts[1..]
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            {
                return Ok(());
            }
        }
    }
    Err(format!(
        "`{}` is not a GPU index, GPU UUID or MIG UUID",
        device.escape_debug()
    ))
}
