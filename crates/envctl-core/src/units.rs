//! How envctl writes quantities in messages and tables: byte sizes and GPU index ranges.
//! Each format lives here once. The byte formats differ on purpose — each copies the tool
//! its readers compare it with (`docker stats`, `df -h`) — so there is one clearly named
//! function per visible format rather than one format for all.
//!
//! Not here: Docker's own size spelling (`16g`, `profile::size::ByteSize`) and Kubernetes
//! quantities (`16Gi`, `export::kubernetes`), which are exact values a tool reads back, not
//! text for people.

const BINARY_UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
const DECIMAL_UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];

/// `value` in the largest unit (of `base`) that keeps it at or above 1, with one decimal
/// below 100 and none from 100 on (three significant digits, as `docker stats` prints),
/// bytes always whole.
fn scaled(value: f64, base: f64, units: &[&str; 5], separator: &str) -> String {
    let mut value = value;
    let mut unit = 0;
    while value.abs() >= base && unit + 1 < units.len() {
        value /= base;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0}{separator}B")
    } else if value.abs() >= 100.0 {
        format!("{value:.0}{separator}{}", units[unit])
    } else {
        format!("{value:.1}{separator}{}", units[unit])
    }
}

// Precision is irrelevant in a message: a byte count above 2^53 is shown to three digits.
#[allow(clippy::cast_precision_loss)]
fn approximate(bytes: u64) -> f64 {
    bytes as f64
}

/// `1.5GiB`, `512MiB`, `0B`: binary units without a space, as `docker stats` prints memory
/// (the live `stats` table).
pub fn binary_compact(bytes: u64) -> String {
    scaled(approximate(bytes), 1024.0, &BINARY_UNITS, "")
}

/// `12.3kB`, `999B`: decimal units without a space, as `docker stats` prints network and
/// block I/O.
pub fn decimal_compact(bytes: u64) -> String {
    scaled(approximate(bytes), 1000.0, &DECIMAL_UNITS, "")
}

/// `1.5 GiB`, `512 MiB`, `730 KiB`: binary units with a space, for prose (the monitor's
/// diagnoses). Signed, since a growth rate may be negative.
pub fn binary_spaced(bytes: f64) -> String {
    scaled(bytes, 1024.0, &BINARY_UNITS, " ")
}

/// `64 MiB`, `8.0 GiB`: binary units as `df -h` and Docker's `--shm-size` speak of limits —
/// whole KiB and MiB, GiB with one decimal (nvidia-check's environment findings).
pub fn binary_limit(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = KIB * 1024;
    const GIB: u64 = MIB * 1024;
    let scaled = |unit: u64| approximate(bytes) / approximate(unit);
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

/// `0-7`, `0, 2-3`: GPU indices folded into ranges, in ascending order, each index once
/// (nvidia-check's sections).
pub fn index_ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    index_ranges_in_order(&sorted)
}

/// `0-7`, `1, 0`: runs of consecutive GPU indices folded into ranges, in the order given
/// (doctor's GPU lines, which follow the order a profile lists its devices in).
pub fn index_ranges_in_order(indices: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    while start < indices.len() {
        let mut end = start;
        while end + 1 < indices.len() && indices[end + 1] == indices[end] + 1 {
            end += 1;
        }
        parts.push(if end == start {
            indices[start].to_string()
        } else {
            format!("{}-{}", indices[start], indices[end])
        });
        start = end + 1;
    }
    parts.join(", ")
}

/// `1 problem`, `2 problems`: a count with its noun, for messages.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// NanoCpus as the decimal docker and compose read back exactly: 1500000000 → `1.5`.
pub fn decimal_cpus(nanos: i64) -> String {
    let whole = nanos / 1_000_000_000;
    let fraction = (nanos % 1_000_000_000).abs();
    if fraction == 0 {
        whole.to_string()
    } else {
        let digits = format!("{fraction:09}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn docker_stats_formats() {
        assert_eq!(binary_compact(0), "0B");
        assert_eq!(binary_compact(1023), "1023B");
        assert_eq!(binary_compact(1536), "1.5KiB");
        assert_eq!(binary_compact(512 * 1024 * 1024), "512MiB");
        assert_eq!(binary_compact(16 * GIB), "16.0GiB");
        assert_eq!(decimal_compact(999), "999B");
        assert_eq!(decimal_compact(1_234_567), "1.2MB");
        assert_eq!(decimal_compact(123_456_789), "123MB");
    }

    #[test]
    fn prose_format() {
        assert_eq!(binary_spaced(512.0), "512 B");
        assert_eq!(binary_spaced(1536.0), "1.5 KiB");
        assert_eq!(binary_spaced(3.0 * 1024.0 * 1024.0 * 1024.0), "3.0 GiB");
        assert_eq!(binary_spaced(-1536.0), "-1.5 KiB");
        assert_eq!(binary_spaced(200.0 * 1024.0 * 1024.0), "200 MiB");
    }

    #[test]
    fn limit_format() {
        assert_eq!(binary_limit(64 << 20), "64 MiB");
        assert_eq!(binary_limit(8 << 30), "8.0 GiB");
        assert_eq!(binary_limit(8192), "8 KiB");
        assert_eq!(binary_limit(512), "512 B");
    }

    #[test]
    fn folds_indices_into_ranges() {
        assert_eq!(index_ranges(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(index_ranges(&[0, 2, 3]), "0, 2-3");
        assert_eq!(index_ranges(&[5]), "5");
        assert_eq!(index_ranges(&[3, 0, 1, 2, 5]), "0-3, 5");
        assert_eq!(index_ranges(&[1, 1]), "1");
        assert_eq!(index_ranges(&[]), "");
        assert_eq!(index_ranges_in_order(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(index_ranges_in_order(&[0, 2, 3]), "0, 2-3");
        assert_eq!(index_ranges_in_order(&[1, 0]), "1, 0");
        assert_eq!(index_ranges_in_order(&[0, 0]), "0, 0");
    }
}
