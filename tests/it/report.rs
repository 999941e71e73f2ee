//! `stats report` draws what the recording holds: only the panels with data, axes scaled
//! to the readings with the memory limit drawn, lines broken where the recording has a
//! gap (two recordings appended to one file), captions without nested brackets. The
//! recordings are written here as CSV, as `--record` writes them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use envctl::monitor::record::CSV_COLUMNS;
use tempfile::TempDir;

use crate::support::cli::Envctl;

const MIB: u64 = 1024 * 1024;

/// A CSV container row: `time`, `kind`, `id`, `name`, `profile`, …, the CPU, memory and
/// memory limit columns filled, every other column empty.
fn container_row(time: f64, cpu: f64, memory: u64, limit: u64) -> String {
    let mut cells = vec![String::new(); CSV_COLUMNS.len()];
    let mut set = |column: &str, value: String| {
        let position = CSV_COLUMNS.iter().position(|name| *name == column).unwrap();
        cells[position] = value;
    };
    set("time", time.to_string());
    set("kind", "container".into());
    set("id", "0123456789ab".into());
    set("name", "envctl-train".into());
    set("profile", "train".into());
    set("cpu_percent", cpu.to_string());
    set("memory_bytes", memory.to_string());
    set("memory_limit_bytes", limit.to_string());
    cells.join(",")
}

/// 30 one-second samples from `start`: CPU 20–49 %, memory 20–49 MiB under a 64 MiB limit.
fn stretch(start: f64) -> Vec<String> {
    (0..30_u32)
        .map(|step| {
            container_row(
                start + f64::from(step),
                20.0 + f64::from(step),
                u64::from(20 + step) * MIB,
                64 * MIB,
            )
        })
        .collect()
}

fn write_recording(path: &Path, rows: &[String]) {
    let mut text = CSV_COLUMNS.join(",");
    text.push('\n');
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The SVG `stats report` draws of `recording`.
fn drawn(recording: &Path) -> String {
    let run = Envctl::shared()
        .args(["stats", "report"])
        .arg(recording)
        .args(["-o", "-"])
        .daemon("unix:///nonexistent/envctl-test/docker.sock")
        .timeout(Duration::from_secs(20))
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

/// Solid lines (2 px) in the first line colour: each segment of the container's line, plus
/// its legend swatch, in each panel.
fn solid_lines(svg: &str) -> usize {
    svg.matches(r##"<polyline fill="none" opacity="1" stroke="#0072B2" stroke-width="2""##)
        .count()
}

/// Dashes (1 px) in the same colour: the limit line.
fn dashes(svg: &str) -> usize {
    svg.matches(r##"<polyline fill="none" opacity="1" stroke="#0072B2" stroke-width="1""##)
        .count()
}

#[test]
fn a_recording_without_gpus_draws_container_panels_scaled_with_the_limit() {
    let folder = TempDir::new().unwrap();
    let recording = folder.path().join("run.csv");
    write_recording(&recording, &stretch(1_700_000_000.0));
    let svg = drawn(&recording);
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    assert!(svg.contains("Container CPU (% of one core)"), "{svg}");
    assert!(svg.contains("Container memory (MiB)"), "{svg}");
    assert!(!svg.contains("(100 = one core))"), "no nested brackets");
    for title in ["GPU utilisation", "GPU memory used", "GPU temperature"] {
        assert!(!svg.contains(title), "{title}: no GPU data, no GPU panel");
    }
    assert!(
        svg.contains(r#"height="600""#),
        "two panels of 300 px: {}",
        &svg[..120]
    );
    assert!(svg.contains("envctl-train limit 64 MiB"), "{svg}");
    assert!(
        dashes(&svg) > 10,
        "a dashed limit line: {} dashes",
        dashes(&svg)
    );
    assert_eq!(solid_lines(&svg), 4, "one segment and a swatch per panel");
    assert!(!svg.contains("no samples for"), "no gap");
}

#[test]
fn two_recordings_apart_are_two_segments_not_one_straight_line() {
    let folder = TempDir::new().unwrap();
    let recording = folder.path().join("appended.csv");
    let mut rows = stretch(1_700_000_000.0);
    // A second run, appended 200 s after the first ended.
    rows.extend(stretch(1_700_000_229.0));
    write_recording(&recording, &rows);
    let svg = drawn(&recording);
    assert_eq!(
        solid_lines(&svg),
        6,
        "two segments and a swatch in each of the two panels"
    );
    assert!(svg.contains("no samples for 200 s"), "the gap is named");
}
