//! The fixture file that drives the stub: `key=value` lines, parsed and checked up front so
//! a typo in a fixture is an error at `nvmlInit` rather than a silently absent value.
//! The format is described in `tests/fixtures/nvml/README.md`.

use std::collections::BTreeMap;

use crate::codes::{INVALID_ARGUMENT, NOT_SUPPORTED, Return, SUCCESS, UNKNOWN};

/// Keys that describe the whole machine.
const SYSTEM_KEYS: &[&str] = &[
    "driver_version",
    "nvml_version",
    "cuda_driver_version",
    "device_count",
    "init_error",
    "missing",
    "fail",
];

/// Keys that describe one GPU, written `gpu.<index>.<key>` or `gpu.*.<key>` for every GPU.
const DEVICE_KEYS: &[&str] = &[
    "name",
    "uuid",
    "pci_bus_id",
    "pci_device_id",
    "compute_capability",
    "memory_total",
    "memory_used",
    "memory_reserved",
    "utilization_gpu",
    "utilization_memory",
    "temperature",
    "minor_number",
    "power_usage_milliwatts",
    "power_limit_milliwatts",
    "throttle_reasons",
    "clock_graphics_mhz",
    "clock_sm_mhz",
    "clock_memory_mhz",
    "mig_current",
    "mig_pending",
    "processes",
    "persistence_mode",
    "ecc_mode",
    "ecc_volatile_corrected",
    "ecc_volatile_uncorrected",
    "ecc_aggregate_corrected",
    "ecc_aggregate_uncorrected",
    "retired_pages_single_bit",
    "retired_pages_double_bit",
    "retired_pages_pending",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "fail",
];

/// Queries a `fail=` line may name at machine level.
const SYSTEM_QUERIES: &[&str] = &[
    "driver_version",
    "nvml_version",
    "cuda_driver_version",
    "device_count",
];

/// Queries a `gpu.<index>.fail=` line may name.
const DEVICE_QUERIES: &[&str] = &[
    "handle",
    "index",
    "name",
    "uuid",
    "pci_info",
    "compute_capability",
    "memory_info",
    "mig_mode",
    "power_limit",
    "utilization",
    "temperature",
    "minor_number",
    "power_usage",
    "throttle_reasons",
    "clocks",
    "processes",
    "persistence_mode",
    "ecc_mode",
    "ecc_errors",
    "retired_pages",
    "field_values",
];

/// One compute process on a GPU, as `nvmlDeviceGetComputeRunningProcesses_v3` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub used_memory_bytes: u64,
}

/// A parsed fixture.
#[derive(Debug, Clone, Default)]
pub struct Fixture {
    values: BTreeMap<String, String>,
    /// Exported symbols that answer NVML_ERROR_FUNCTION_NOT_FOUND.
    missing: Vec<String>,
    /// The code `nvmlInit*` returns; SUCCESS unless the fixture says otherwise.
    pub init_error: Return,
}

impl Fixture {
    /// Parses and checks fixture text; the error names the line.
    pub fn parse(text: &str, exported_symbols: &[&str]) -> Result<Fixture, String> {
        let mut fixture = Fixture::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |problem: String| format!("line {}: {problem}", number + 1);
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| at(format!("`{line}` is not `key=value`")))?;
            let (key, value) = (key.trim(), value.trim());
            check_key(key).map_err(at)?;
            check_value(key, value, exported_symbols).map_err(at)?;
            match key {
                "init_error" => fixture.init_error = parse_number(value).map_err(at)?,
                "missing" => fixture.missing.extend(list(value).map(str::to_string)),
                _ => {}
            }
            if fixture
                .values
                .insert(key.to_string(), value.to_string())
                .is_some()
            {
                return Err(at(format!("`{key}` is set twice")));
            }
        }
        Ok(fixture)
    }

    /// Whether the fixture pretends this exported symbol does not exist.
    pub fn is_missing(&self, symbol: &str) -> bool {
        self.missing.iter().any(|missing| missing == symbol)
    }

    /// The machine-level value for `key`; NOT_SUPPORTED when the fixture leaves it out,
    /// which is what a real driver answers for a query it cannot serve.
    pub fn system_text(&self, key: &str) -> Result<&str, Return> {
        self.values
            .get(key)
            .map(String::as_str)
            .ok_or(NOT_SUPPORTED)
    }

    pub fn system_number<T: std::str::FromStr>(&self, key: &str) -> Result<T, Return> {
        parse_number(self.system_text(key)?).map_err(|_| NOT_SUPPORTED)
    }

    /// The number of GPUs; 0 when the fixture does not say.
    pub fn device_count(&self) -> u32 {
        self.system_number("device_count").unwrap_or(0)
    }

    /// The per-GPU value, `gpu.<index>.<key>` first, then the `gpu.*.<key>` default.
    pub fn device_text(&self, index: u32, key: &str) -> Result<&str, Return> {
        self.values
            .get(&format!("gpu.{index}.{key}"))
            .or_else(|| self.values.get(&format!("gpu.*.{key}")))
            .map(String::as_str)
            .ok_or(NOT_SUPPORTED)
    }

    pub fn device_number<T: std::str::FromStr>(&self, index: u32, key: &str) -> Result<T, Return> {
        parse_number(self.device_text(index, key)?).map_err(|_| NOT_SUPPORTED)
    }

    /// A machine-level query the fixture makes fail: `fail=device_count:999`.
    pub fn system_failure(&self, query: &str) -> Result<(), Return> {
        failure_in(self.values.get("fail"), query)
    }

    /// A per-GPU query the fixture makes fail: `gpu.1.fail=memory_info:999`.
    pub fn device_failure(&self, index: u32, query: &str) -> Result<(), Return> {
        failure_in(self.values.get(&format!("gpu.{index}.fail")), query)?;
        failure_in(self.values.get("gpu.*.fail"), query)
    }

    /// The GPU index behind a handle the stub gave out, checked against the device count.
    pub fn device_index(&self, handle_address: usize) -> Result<u32, Return> {
        // Handles are index + 1 so that no handle is null.
        let index = handle_address
            .checked_sub(1)
            .and_then(|index| u32::try_from(index).ok())
            .ok_or(INVALID_ARGUMENT)?;
        if index < self.device_count() {
            Ok(index)
        } else {
            Err(INVALID_ARGUMENT)
        }
    }

    /// The GPU whose `uuid` is this one.
    pub fn device_with_uuid(&self, uuid: &str) -> Option<u32> {
        (0..self.device_count()).find(|&index| self.device_text(index, "uuid") == Ok(uuid))
    }

    pub fn processes(&self, index: u32) -> Vec<Process> {
        // Already checked by `parse`, so a value that got here always parses.
        self.device_text(index, "processes")
            .ok()
            .and_then(|text| parse_processes(text).ok())
            .unwrap_or_default()
    }
}

fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

/// Decimal, or hexadecimal with `0x` (throttle reasons are bit masks).
fn parse_number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    let text = text.trim();
    let decimal = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16)
            .map(|number| number.to_string())
            .map_err(|error| format!("`{text}`: {error}"))?,
        None => text.to_string(),
    };
    decimal
        .parse()
        .map_err(|_| format!("`{text}` is not a number of the right size"))
}

fn failure_in(spec: Option<&String>, query: &str) -> Result<(), Return> {
    let Some(spec) = spec else { return Ok(()) };
    for item in list(spec) {
        if let Some((name, code)) = item.split_once(':')
            && name.trim() == query
        {
            // Checked by `parse`; UNKNOWN only keeps this total.
            return Err(parse_number(code).unwrap_or(UNKNOWN));
        }
    }
    Ok(())
}

fn check_key(key: &str) -> Result<(), String> {
    if let Some(rest) = key.strip_prefix("gpu.") {
        let (index, field) = rest
            .split_once('.')
            .ok_or_else(|| format!("`{key}` is not `gpu.<index>.<field>`"))?;
        if index != "*" && index.parse::<u32>().is_err() {
            return Err(format!(
                "`{index}` in `{key}` is neither a GPU index nor `*`"
            ));
        }
        if !DEVICE_KEYS.contains(&field) {
            return Err(format!(
                "unknown GPU field `{field}`; known: {}",
                DEVICE_KEYS.join(", ")
            ));
        }
        return Ok(());
    }
    if SYSTEM_KEYS.contains(&key) {
        Ok(())
    } else {
        Err(format!(
            "unknown key `{key}`; known: {}, gpu.<index>.<field>",
            SYSTEM_KEYS.join(", ")
        ))
    }
}

fn check_value(key: &str, value: &str, exported_symbols: &[&str]) -> Result<(), String> {
    let field = key.rsplit('.').next().unwrap_or(key);
    let is_device = key.starts_with("gpu.");
    match field {
        "missing" => {
            for symbol in list(value) {
                if !exported_symbols.contains(&symbol) {
                    return Err(format!("`{symbol}` is not a symbol the stub exports"));
                }
            }
        }
        "fail" => {
            let queries = if is_device {
                DEVICE_QUERIES
            } else {
                SYSTEM_QUERIES
            };
            for item in list(value) {
                let (query, code) = item
                    .split_once(':')
                    .ok_or_else(|| format!("`{item}` is not `query:code`"))?;
                if !queries.contains(&query.trim()) {
                    return Err(format!(
                        "unknown query `{query}`; known: {}",
                        queries.join(", ")
                    ));
                }
                let code: Return = parse_number(code)?;
                if code == SUCCESS {
                    return Err(format!("`{item}`: a failure needs a non-zero NVML code"));
                }
            }
        }
        "compute_capability" => {
            let (major, minor) = value
                .split_once('.')
                .ok_or_else(|| format!("`{value}` is not `major.minor`"))?;
            parse_number::<i32>(major)?;
            parse_number::<i32>(minor)?;
        }
        "pci_bus_id" => {
            parse_pci_bus_id(value)?;
        }
        "processes" => {
            parse_processes(value)?;
        }
        "cuda_driver_version" => {
            parse_number::<i32>(value)?;
        }
        "device_count"
        | "init_error"
        | "pci_device_id"
        | "utilization_gpu"
        | "utilization_memory"
        | "temperature"
        | "minor_number"
        | "power_usage_milliwatts"
        | "power_limit_milliwatts"
        | "mig_current"
        | "mig_pending"
        | "clock_graphics_mhz"
        | "clock_sm_mhz"
        | "clock_memory_mhz"
        | "persistence_mode"
        | "ecc_mode"
        | "retired_pages_single_bit"
        | "retired_pages_double_bit"
        | "retired_pages_pending"
        | "remapped_rows_correctable"
        | "remapped_rows_uncorrectable"
        | "remapped_rows_pending"
        | "remapped_rows_failure" => {
            parse_number::<u32>(value)?;
        }
        "memory_total"
        | "memory_used"
        | "memory_reserved"
        | "throttle_reasons"
        | "ecc_volatile_corrected"
        | "ecc_volatile_uncorrected"
        | "ecc_aggregate_corrected"
        | "ecc_aggregate_uncorrected" => {
            parse_number::<u64>(value)?;
        }
        _ => {}
    }
    Ok(())
}

/// `00000000:17:00.0` → (domain, bus, device).
pub fn parse_pci_bus_id(text: &str) -> Result<(u32, u32, u32), String> {
    let invalid = || format!("`{text}` is not a PCI bus id like 00000000:17:00.0");
    let (domain, rest) = text.split_once(':').ok_or_else(invalid)?;
    let (bus, rest) = rest.split_once(':').ok_or_else(invalid)?;
    let (device, function) = rest.split_once('.').ok_or_else(invalid)?;
    let hex = |part: &str| u32::from_str_radix(part, 16).map_err(|_| invalid());
    hex(function)?;
    Ok((hex(domain)?, hex(bus)?, hex(device)?))
}

/// `1234:536870912,5678:1073741824` (pid:bytes).
fn parse_processes(text: &str) -> Result<Vec<Process>, String> {
    list(text)
        .map(|item| {
            let (pid, bytes) = item
                .split_once(':')
                .ok_or_else(|| format!("`{item}` is not `pid:bytes`"))?;
            Ok(Process {
                pid: parse_number(pid)?,
                used_memory_bytes: parse_number(bytes)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYMBOLS: &[&str] = &["nvmlDeviceGetMigMode"];

    #[test]
    fn device_values_fall_back_to_the_wildcard() {
        let fixture = Fixture::parse(
            "device_count=2\ngpu.*.name=NVIDIA H100 80GB HBM3\ngpu.1.name=Tesla V100-SXM2-32GB\n",
            SYMBOLS,
        )
        .unwrap();
        assert_eq!(fixture.device_text(0, "name"), Ok("NVIDIA H100 80GB HBM3"));
        assert_eq!(fixture.device_text(1, "name"), Ok("Tesla V100-SXM2-32GB"));
        assert_eq!(fixture.device_text(1, "uuid"), Err(NOT_SUPPORTED));
    }

    #[test]
    fn failures_and_missing_symbols_are_read() {
        let fixture = Fixture::parse(
            "device_count=2\nmissing=nvmlDeviceGetMigMode\ngpu.1.fail=memory_info:999, name:3\n",
            SYMBOLS,
        )
        .unwrap();
        assert!(fixture.is_missing("nvmlDeviceGetMigMode"));
        assert_eq!(fixture.device_failure(1, "memory_info"), Err(999));
        assert_eq!(fixture.device_failure(1, "name"), Err(3));
        assert_eq!(fixture.device_failure(0, "memory_info"), Ok(()));
    }

    #[test]
    fn typos_are_errors_that_name_the_line() {
        let error = Fixture::parse("device_count=1\ngpu.0.nmae=x\n", SYMBOLS).unwrap_err();
        assert!(
            error.starts_with("line 2: unknown GPU field `nmae`"),
            "{error}"
        );
        let error = Fixture::parse("missing=nvmlNoSuchThing\n", SYMBOLS).unwrap_err();
        assert!(error.contains("nvmlNoSuchThing"), "{error}");
        let error = Fixture::parse("gpu.0.fail=memory:999\n", SYMBOLS).unwrap_err();
        assert!(error.contains("unknown query `memory`"), "{error}");
        assert!(Fixture::parse("gpu.0.pci_bus_id=17:00.0\n", SYMBOLS).is_err());
        assert!(Fixture::parse("device_count=1\ndevice_count=2\n", SYMBOLS).is_err());
    }

    #[test]
    fn numbers_take_hexadecimal_for_bit_masks() {
        let fixture = Fixture::parse("gpu.0.throttle_reasons=0x4\n", SYMBOLS).unwrap();
        assert_eq!(fixture.device_number::<u64>(0, "throttle_reasons"), Ok(4));
    }
}
