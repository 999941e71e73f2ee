//! Readings of the raw text facts: nvidia-smi's CSV, `df -P -k`, `ulimit`, torch's cuDNN
//! integer, and byte counts for messages.

use serde::Serialize;

use crate::compat::ComputeCapability;

/// One GPU line of `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SmiGpu {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub driver_version: Option<String>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub memory_total_mib: Option<u64>,
    pub compute_capability: Option<ComputeCapability>,
}

/// The GPUs in nvidia-smi's output, its columns named by `query` (as the script asked).
/// Values nvidia-smi cannot give (`[N/A]`, `[Not Supported]`) are None; lines that do not
/// have every column (an error message on stdout) are skipped.
pub fn smi_gpus(query: &str, stdout: &str) -> Vec<SmiGpu> {
    let columns: Vec<&str> = query.split(',').map(str::trim).collect();
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let values: Vec<&str> = line.split(',').map(str::trim).collect();
            if values.len() != columns.len() {
                return None;
            }
            let mut gpu = SmiGpu::default();
            for (column, value) in columns.iter().zip(values) {
                if value.is_empty() || value.starts_with('[') {
                    continue;
                }
                match *column {
                    "index" => gpu.index = value.parse().ok(),
                    "name" => gpu.name = Some(value.to_string()),
                    "driver_version" => gpu.driver_version = Some(value.to_string()),
                    "uuid" => gpu.uuid = Some(value.to_string()),
                    "pci.bus_id" => gpu.pci_bus_id = Some(value.to_string()),
                    "memory.total" => gpu.memory_total_mib = value.parse().ok(),
                    "compute_cap" => gpu.compute_capability = value.parse().ok(),
                    _ => {}
                }
            }
            // A line of the right width that is not a GPU (a message with commas) has no index.
            gpu.index.map(|_| gpu)
        })
        .collect()
}

/// The size of a file system from `df -P -k` (POSIX format: one line per file system,
/// sizes in KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FileSystemSize {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

pub fn df_size(output: &str) -> Option<FileSystemSize> {
    output.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Counted from the right: the file system's name is the one field that can hold
        // anything. Filesystem, 1024-blocks, Used, Available, Capacity, Mounted on.
        let count = fields.len();
        if count < 6 {
            return None;
        }
        let total: u64 = fields[count - 5].parse().ok()?;
        let available: u64 = fields[count - 3].parse().ok()?;
        Some(FileSystemSize {
            total_bytes: total.saturating_mul(1024),
            available_bytes: available.saturating_mul(1024),
        })
    })
}

/// A resource limit as `ulimit -l` / `ulimit -s` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    Unlimited,
    Bytes(u64),
}

/// `unlimited`, or a number of KiB (what POSIX shells print for -l and -s).
pub fn ulimit_value(text: &str) -> Option<Limit> {
    let text = text.trim();
    if text == "unlimited" {
        return Some(Limit::Unlimited);
    }
    text.parse::<u64>()
        .ok()
        .map(|kibibytes| Limit::Bytes(kibibytes.saturating_mul(1024)))
}

/// torch's cuDNN integer as a version: 91002 → 9.10.2 (cuDNN 9 counts major × 10000),
/// 8902 → 8.9.2 (cuDNN 8 and older count major × 1000).
pub fn cudnn_version(number: i64) -> String {
    if number >= 90_000 {
        format!(
            "{}.{}.{}",
            number / 10_000,
            number / 100 % 100,
            number % 100
        )
    } else {
        format!("{}.{}.{}", number / 1000, number / 100 % 10, number % 100)
    }
}

/// The first line of an error text (CUDA errors carry several lines of advice).
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// The last non-empty line (a traceback's final line names the error).
pub fn last_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .unwrap_or("")
}
