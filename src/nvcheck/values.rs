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

/// `64 MiB`, `8.0 GiB`: binary units, as `df -h` and Docker's `--shm-size` speak.
pub fn bytes_text(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = KIB * 1024;
    const GIB: u64 = MIB * 1024;
    // Precision is irrelevant in a message; the exact count is in the facts.
    #[allow(clippy::cast_precision_loss)]
    let scaled = |unit: u64| bytes as f64 / unit as f64;
    if bytes >= GIB {
        format!("{:.1} GiB", scaled(GIB))
    } else if bytes >= MIB {
        format!("{:.0} MiB", scaled(MIB))
    } else if bytes >= KIB {
        format!("{:.0} KiB", scaled(KIB))
    } else {
        format!("{bytes} B")
    }
}

/// `0-7`, `0, 2-3`: GPU indices as ranges.
pub fn index_ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    while start < sorted.len() {
        let mut end = start;
        while end + 1 < sorted.len() && sorted[end + 1] == sorted[end] + 1 {
            end += 1;
        }
        parts.push(if end == start {
            sorted[start].to_string()
        } else {
            format!("{}-{}", sorted[start], sorted[end])
        });
        start = end + 1;
    }
    parts.join(", ")
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
