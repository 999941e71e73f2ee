//! The resource limits: `memory` and `shm_size` (sizes), `cpus`, and `[ulimits]`.

use std::collections::BTreeMap;

use toml::de::DeValue;

use super::{Checker, ULIMIT_KEYS, Value};
use crate::profile::diagnostic::{CpuCount, cpu_count, cpus_range_problem};
use crate::profile::model::{ULIMIT_NAMES, Ulimit};
use crate::profile::size::ByteSize;

impl Checker<'_> {
    pub(super) fn size(&mut self, key: &str, value: &Value<'_>) -> Option<ByteSize> {
        let example = format!("{key} = \"16g\"");
        let size = match value.get_ref() {
            DeValue::String(text) => match text.parse::<ByteSize>() {
                Ok(size) => size,
                Err(message) => {
                    self.error(
                        value.span(),
                        format!("`{key}`: {message}"),
                        Some(format!("for example: {example}")),
                    );
                    return None;
                }
            },
            DeValue::Integer(integer) => {
                match u64::from_str_radix(integer.as_str(), integer.radix()) {
                    Ok(bytes) => ByteSize(bytes),
                    Err(_) => {
                        self.error(
                            value.span(),
                            format!("`{key}` must be a positive size"),
                            Some(format!("for example: {example}")),
                        );
                        return None;
                    }
                }
            }
            _ => {
                self.type_error(key, value, "a size string", &example);
                return None;
            }
        };
        if size.bytes() == 0 {
            self.error(
                value.span(),
                format!("`{key}` must be greater than zero"),
                Some(format!("for example: {example}")),
            );
            return None;
        }
        // Docker keeps sizes in a signed 64-bit integer: a larger one is invalid input
        // here, not a failure when the body is built.
        if i64::try_from(size.bytes()).is_err() {
            self.error(
                value.span(),
                format!(
                    "`{key}` = {} bytes does not fit Docker's 64-bit signed size",
                    size.bytes()
                ),
                Some(format!("for example: {example}")),
            );
            return None;
        }
        Some(size)
    }

    pub(super) fn cpus(&mut self, value: &Value<'_>) -> Option<f64> {
        match (value.get_ref(), cpu_count(value.get_ref())) {
            (_, CpuCount::Cpus(cpus)) => Some(cpus),
            (DeValue::String(text), _) => {
                // `cpus = "8"` is a number without its quotes; `cpus = "eight"` is not one
                // at all, and `cpus = eight` would not even be TOML.
                let trimmed = text.trim();
                let hint = match trimmed.parse::<f64>() {
                    Ok(number) if number.is_finite() => {
                        format!("write it without quotes: cpus = {trimmed}")
                    }
                    _ => "write the number of CPUs as a number: cpus = 8 or cpus = 0.5".into(),
                };
                self.error(
                    value.span(),
                    format!("`cpus` must be a number, found the string \"{text}\""),
                    Some(hint),
                );
                None
            }
            (_, CpuCount::NotANumber) => {
                self.type_error("cpus", value, "a number", "cpus = 8 or cpus = 0.5");
                None
            }
            (_, CpuCount::OutOfRange) => {
                let (message, hint) = cpus_range_problem("cpus");
                self.error(value.span(), message, Some(hint));
                None
            }
        }
    }

    pub(super) fn ulimits(&mut self, value: &Value<'_>) -> BTreeMap<String, Ulimit> {
        let mut ulimits = BTreeMap::new();
        let Some(table) = value.get_ref().as_table() else {
            self.type_error("ulimits", value, "a table", "[ulimits] memlock = -1");
            return ulimits;
        };
        for (key, item) in table {
            let name = key.get_ref().as_ref();
            if !ULIMIT_NAMES.contains(&name) {
                self.unknown_key(key, &ULIMIT_NAMES, Some("ulimits"));
                continue;
            }
            let limit = match item.get_ref() {
                DeValue::Integer(_) => self.ulimit_value(name, item).map(|limit| Ulimit {
                    soft: limit,
                    hard: limit,
                }),
                DeValue::Table(limits) => {
                    let mut soft = None;
                    let mut hard = None;
                    for (limit_key, limit_value) in limits {
                        match limit_key.get_ref().as_ref() {
                            "soft" => soft = Some(self.ulimit_value(name, limit_value)),
                            "hard" => hard = Some(self.ulimit_value(name, limit_value)),
                            _ => self.unknown_key(limit_key, &ULIMIT_KEYS, Some("ulimits")),
                        }
                    }
                    match (soft, hard) {
                        (Some(Some(soft)), Some(Some(hard))) => {
                            let unlimited = |limit: i64| limit == -1;
                            if !unlimited(hard) && (unlimited(soft) || soft > hard) {
                                self.error(item.span(), format!("`ulimits.{name}`: soft limit {soft} is above hard limit {hard}"), Some("the soft limit must be at most the hard limit (-1 is unlimited)".into()));
                                None
                            } else {
                                Some(Ulimit { soft, hard })
                            }
                        }
                        (Some(None), _) | (_, Some(None)) => None,
                        _ => {
                            self.error(
                                item.span(),
                                format!("`ulimits.{name}` needs both `soft` and `hard`"),
                                Some(format!("{name} = {{ soft = 1024, hard = 4096 }}")),
                            );
                            None
                        }
                    }
                }
                _ => {
                    self.type_error(
                        &format!("ulimits.{name}"),
                        item,
                        "an integer or { soft, hard }",
                        &format!("{name} = -1"),
                    );
                    None
                }
            };
            if let Some(limit) = limit {
                ulimits.insert(name.to_string(), limit);
            }
        }
        ulimits
    }

    fn ulimit_value(&mut self, name: &str, value: &Value<'_>) -> Option<i64> {
        let parsed = value
            .get_ref()
            .as_integer()
            .and_then(|integer| i64::from_str_radix(integer.as_str(), integer.radix()).ok());
        match parsed {
            Some(limit) if limit >= -1 => Some(limit),
            _ => {
                self.error(
                    value.span(),
                    format!(
                        "`ulimits.{name}` must be an integer of 0 or more, or -1 for unlimited"
                    ),
                    None,
                );
                None
            }
        }
    }
}
