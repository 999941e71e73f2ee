//! What `stats report` draws, decided before anything is drawn: which panels have data,
//! each panel's value range and unit, each line cut into segments at the gaps of the
//! recording, and the ceilings (a container's memory or CPU limit, a GPU's memory size)
//! drawn beside the lines. `chart` only turns this model into SVG.
//!
//! Rules (README, `stats report`):
//! - a panel is drawn only when at least one of its lines has a value;
//! - a value axis runs from 0 (or the lowest value, when below 0) to the highest value
//!   with a tenth of headroom, except GPU utilisation, a percentage drawn on 0–100;
//! - a ceiling joins the axis when it is at most [`CEILING_IN_VIEW_FACTOR`] times the
//!   panel's highest value, else it is only named in the legend ("off scale"), so a
//!   64 MiB container under an unlimited (host-sized) limit is not a flat line at zero;
//! - bytes are shown in the largest binary unit the axis reaches (B, KiB, MiB, GiB, …);
//! - a gap is a step between two samples of a line longer than [`GAP_FACTOR`] times the
//!   recording's median sample interval: the line breaks there (two recordings appended
//!   to one file 200 s apart are not joined by a straight line);
//! - a container the OOM killer ended is marked on its memory line, [`OOM_LABEL`], at the
//!   sample it was seen stopped and at the memory of its last reading: its curve runs up
//!   to the mark.

use std::collections::BTreeMap;
use std::ops::Range;

use super::chart::ChartError;
use super::snapshot::{EndedContainer, Snapshot};

/// A step longer than this many median intervals breaks a line.
pub const GAP_FACTOR: f64 = 3.0;
/// A ceiling at most this many times the highest value is drawn inside the axis.
pub const CEILING_IN_VIEW_FACTOR: f64 = 4.0;
/// The words beside the mark of a container the OOM killer ended.
pub const OOM_LABEL: &str = "OOM killed";

/// Points of one unbroken stretch of a line: (seconds since the first sample, value).
pub type Segment = Vec<(f64, f64)>;

/// The whole drawing.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartModel {
    /// Seconds since the first sample.
    pub x: Range<f64>,
    /// Steps longer than this (seconds) break lines; none when the recording has fewer
    /// than two distinct sample times.
    pub gap_seconds: Option<f64>,
    /// Stretches without any sample (longer than `gap_seconds`), shaded in every panel.
    pub gaps: Vec<Range<f64>>,
    /// Only the panels with data, in a fixed order.
    pub panels: Vec<PanelModel>,
}

/// One panel: its caption, value range and lines, values already in `unit`.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelModel {
    /// What is drawn (`Container memory`); error messages name the panel by it.
    pub title: &'static str,
    /// The values' unit (`MiB`, `% of one core`).
    pub unit: String,
    pub y: Range<f64>,
    pub lines: Vec<LineModel>,
    /// Moments marked on a line: the OOM killer's, on the memory panel.
    pub marks: Vec<Mark>,
}

/// A moment marked on one line: where it ended, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The line's name (the container's).
    pub line: String,
    /// Seconds since the first sample.
    pub at: f64,
    /// Where on the value axis, in the panel's unit: the line's last reading before it.
    pub value: f64,
    /// [`OOM_LABEL`].
    pub label: &'static str,
}

impl PanelModel {
    /// `Container memory (MiB)`.
    pub fn caption(&self) -> String {
        format!("{} ({})", self.title, self.unit)
    }
}

/// One named line and its ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct LineModel {
    pub name: String,
    pub segments: Vec<Segment>,
    pub ceiling: Option<Ceiling>,
}

/// A limit the line cannot pass (memory limit, CPU limit, GPU memory size).
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// `limit`, `total`.
    pub word: &'static str,
    /// Its highest value as text with its unit (`64 MiB`, `2 cores`).
    pub shown: String,
    /// Drawn as a dashed line; empty when it is off scale (then only named).
    pub segments: Vec<Segment>,
}

impl Ceiling {
    /// The legend's words: `limit 64 MiB` or `limit 23.0 GiB, off scale`.
    pub fn label(&self) -> String {
        if self.segments.is_empty() {
            format!("{} {}, off scale", self.word, self.shown)
        } else {
            format!("{} {}", self.word, self.shown)
        }
    }
}

/// How a panel's numbers are shown.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    /// As they are, in this unit.
    Plain(&'static str),
    /// Bytes, in the largest binary unit the axis reaches.
    Bytes,
    /// A percentage on 0–100 (more only when a value exceeds it).
    FullPercent,
}

/// A panel's lines before scaling: name → (points, ceiling points), in base units.
struct Raw {
    title: &'static str,
    scale: Scale,
    ceiling_word: &'static str,
    /// A ceiling's highest value (base units) as the legend names it.
    ceiling_shown: fn(f64) -> String,
    lines: BTreeMap<String, (Segment, Segment)>,
    /// Marks in base units (`value` not yet divided by the panel's unit).
    marks: Vec<Mark>,
}

impl Raw {
    fn new(title: &'static str, scale: Scale, ceiling_word: &'static str) -> Raw {
        Raw {
            title,
            scale,
            ceiling_word,
            ceiling_shown: |value| {
                // Byte counts are whole numbers; the cast saturates on anything else.
                crate::units::binary_limit(value as u64)
            },
            lines: BTreeMap::new(),
            marks: Vec::new(),
        }
    }

    /// Marks each end of `ends` the OOM killer made on its line, at the line's last
    /// reading up to it; an end before the line's first reading, or of a line this panel
    /// lacks, is not marked here (the report's summary still names it).
    fn mark_oom_kills(&mut self, ends: &[EndedContainer], start: f64) {
        for end in ends.iter().filter(|end| end.out_of_memory()) {
            let at = end.time - start;
            let Some((points, _)) = self.lines.get(&end.name) else {
                continue;
            };
            let last = points
                .iter()
                .filter(|(time, _)| *time <= at)
                .max_by(|left, right| left.0.total_cmp(&right.0));
            if let Some((_, value)) = last
                && at.is_finite()
            {
                self.marks.push(Mark {
                    line: end.name.clone(),
                    at,
                    value: *value,
                    label: OOM_LABEL,
                });
            }
        }
    }

    fn with_ceiling_shown(mut self, shown: fn(f64) -> String) -> Raw {
        self.ceiling_shown = shown;
        self
    }

    fn push(&mut self, name: &str, at: f64, value: Option<f64>, ceiling: Option<f64>) {
        if value.is_none() && ceiling.is_none() {
            return;
        }
        let entry = self.lines.entry(name.to_string()).or_default();
        entry.0.extend(value.map(|value| (at, value)));
        entry.1.extend(ceiling.map(|value| (at, value)));
    }
}

/// The model of `snapshots`' drawing.
pub fn model(snapshots: &[Snapshot]) -> Result<ChartModel, ChartError> {
    let x = time_axis(snapshots)?;
    let gap_seconds = gap_threshold(snapshots);
    let start = snapshots.first().map_or(0.0, |first| first.time);
    let mut cpu =
        Raw::new("Container CPU", Scale::Plain("% of one core"), "limit").with_ceiling_shown(cores);
    let mut memory = Raw::new("Container memory", Scale::Bytes, "limit");
    let mut utilization = Raw::new("GPU utilisation", Scale::FullPercent, "");
    let mut gpu_memory = Raw::new("GPU memory used", Scale::Bytes, "total");
    let mut temperature = Raw::new("GPU temperature", Scale::Plain("°C"), "");
    for snapshot in snapshots {
        let at = snapshot.time - start;
        for container in &snapshot.containers {
            let name = &container.name;
            let cpu_limit = container.cpu_limit_cores.map(|cores| cores * 100.0);
            cpu.push(name, at, container.cpu_percent, cpu_limit);
            let bytes = container.memory_bytes.map(|value| value as f64);
            let limit = container.memory_limit_bytes.map(|value| value as f64);
            memory.push(name, at, bytes, limit);
        }
        for gpu in &snapshot.gpus {
            let name = format!("GPU {}", gpu.index);
            utilization.push(&name, at, gpu.utilization_percent, None);
            let used = gpu.memory_used_bytes.map(|value| value as f64);
            let total = gpu.memory_total_bytes.map(|value| value as f64);
            gpu_memory.push(&name, at, used, total);
            temperature.push(&name, at, gpu.temperature_c, None);
        }
    }
    let mut panels = Vec::new();
    memory.mark_oom_kills(&EndedContainer::all_in(snapshots), start);
    for raw in [cpu, memory, utilization, gpu_memory, temperature] {
        // A ceiling alone (a limit, but no reading) is no data.
        if raw.lines.values().all(|(points, _)| points.is_empty()) {
            continue;
        }
        panels.push(panel(raw, gap_seconds)?);
    }
    let gaps = gap_seconds.map_or_else(Vec::new, |gap| {
        let times: Segment = snapshots
            .iter()
            .map(|snapshot| (snapshot.time - start, 0.0))
            .collect();
        split_at_gaps(times, Some(gap))
            .windows(2)
            .filter_map(|pair| Some(pair[0].last()?.0..pair[1].first()?.0))
            .collect()
    });
    Ok(ChartModel {
        x,
        gap_seconds,
        gaps,
        panels,
    })
}

/// One panel of `raw` readings: checked drawable, scaled to a unit and an axis that hold
/// its values (and the ceilings near them), its lines broken at the recording's gaps.
fn panel(raw: Raw, gap_seconds: Option<f64>) -> Result<PanelModel, ChartError> {
    refuse_non_finite(&raw)?;
    let scale = PanelScale::of(&raw)?;
    let lines = raw
        .lines
        .iter()
        .filter(|(_, (points, _))| !points.is_empty())
        .map(|(name, (points, ceiling))| scale.line(&raw, name, points, ceiling, gap_seconds))
        .collect();
    let marks = raw
        .marks
        .iter()
        .map(|mark| Mark {
            value: mark.value / scale.divisor,
            ..mark.clone()
        })
        .collect();
    Ok(PanelModel {
        title: raw.title,
        unit: scale.unit,
        y: scale.y,
        lines,
        marks,
    })
}

/// An infinite or NaN reading leaves no axis to draw: it is named, with its line.
fn refuse_non_finite(raw: &Raw) -> Result<(), ChartError> {
    for (name, (points, ceiling)) in &raw.lines {
        if let Some((_, value)) = points
            .iter()
            .chain(ceiling)
            .find(|(_, value)| !value.is_finite())
        {
            return Err(ChartError::unplottable(format!(
                "`{name}` reads {value} in {}, not a finite number",
                raw.title
            )));
        }
    }
    Ok(())
}

/// How one panel's values are drawn: divided into its unit, on its axis.
struct PanelScale {
    /// What a base-unit value is divided by (1 but for bytes).
    divisor: f64,
    unit: String,
    y: Range<f64>,
    /// The highest reading, in base units, that ceilings are held against.
    highest: f64,
}

impl PanelScale {
    /// The unit and axis for `raw`'s readings and the ceilings in view of them: from 0 (or
    /// the lowest reading, if negative) to a little above the highest.
    fn of(raw: &Raw) -> Result<Self, ChartError> {
        let values = || raw.lines.values().flat_map(|(points, _)| points);
        let lowest = values().map(|point| point.1).fold(0.0_f64, f64::min);
        let highest = values().map(|point| point.1).fold(0.0_f64, f64::max);
        let ceilings_in_view = raw
            .lines
            .values()
            .flat_map(|(_, ceiling)| ceiling)
            .map(|point| point.1)
            .filter(|value| in_view(highest, *value))
            .fold(highest, f64::max);
        let (divisor, unit) = match raw.scale {
            Scale::Plain(unit) => (1.0, unit.to_string()),
            Scale::FullPercent => (1.0, "%".to_string()),
            Scale::Bytes => binary_unit(ceilings_in_view.max(-lowest)),
        };
        let top = match raw.scale {
            Scale::FullPercent => ceilings_in_view.max(100.0) * 1.05,
            _ => (ceilings_in_view / divisor * 1.1).max(1.0),
        };
        // Headroom over a value near the largest float overflows: end at the largest instead.
        let top = if top.is_finite() { top } else { f64::MAX };
        let low = lowest / divisor;
        let y = axis(low, top).ok_or_else(|| {
            ChartError::unplottable(format!(
                "{} runs from {} to {}, too wide a range to draw",
                raw.title,
                shown(lowest),
                shown(highest)
            ))
        })?;
        Ok(PanelScale {
            divisor,
            unit,
            y,
            highest,
        })
    }

    /// `points` in the panel's unit.
    fn scaled(&self, points: &Segment) -> Segment {
        points
            .iter()
            .map(|(at, value)| (*at, value / self.divisor))
            .collect()
    }

    /// The line `name` of `raw`: its `points` and its `ceiling`, drawn only where the
    /// ceiling is in view of the readings (else the legend alone names it).
    fn line(
        &self,
        raw: &Raw,
        name: &str,
        points: &Segment,
        ceiling: &Segment,
        gap_seconds: Option<f64>,
    ) -> LineModel {
        let ceiling = ceiling
            .iter()
            .map(|point| point.1)
            .reduce(f64::max)
            .map(|ceiling_highest| Ceiling {
                word: raw.ceiling_word,
                shown: (raw.ceiling_shown)(ceiling_highest),
                segments: if in_view(self.highest, ceiling_highest) {
                    split_at_gaps(self.scaled(ceiling), gap_seconds)
                } else {
                    Vec::new()
                },
            });
        LineModel {
            name: name.to_string(),
            segments: split_at_gaps(self.scaled(points), gap_seconds),
            ceiling,
        }
    }
}

/// Whether a ceiling is close enough to the `highest` reading to be drawn on its axis.
fn in_view(highest: f64, ceiling: f64) -> bool {
    highest > 0.0 && ceiling <= highest * CEILING_IN_VIEW_FACTOR
}

/// A CPU limit in percent (100 = one core) as cores: `2 cores`, `0.5 cores`, `1 core`.
fn cores(percent: f64) -> String {
    let cores = percent / 100.0;
    if cores == 1.0 {
        "1 core".into()
    } else if cores.fract() == 0.0 {
        format!("{cores:.0} cores")
    } else {
        let digits = format!("{cores:.2}");
        format!(
            "{} cores",
            digits.trim_end_matches('0').trim_end_matches('.')
        )
    }
}

/// The divisor and name of the largest binary unit not above `bytes`.
fn binary_unit(bytes: f64) -> (f64, String) {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut divisor = 1.0;
    let mut unit = UNITS[0];
    for name in &UNITS[1..] {
        if bytes < divisor * 1024.0 {
            break;
        }
        divisor *= 1024.0;
        unit = name;
    }
    (divisor, unit.to_string())
}

/// [`GAP_FACTOR`] times the median step between distinct sample times, in seconds.
pub fn gap_threshold(snapshots: &[Snapshot]) -> Option<f64> {
    let mut times: Vec<f64> = snapshots.iter().map(|snapshot| snapshot.time).collect();
    times.sort_by(f64::total_cmp);
    let mut steps: Vec<f64> = times
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .filter(|step| *step > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    let median = *steps.get(steps.len() / 2)?;
    let threshold = median * GAP_FACTOR;
    threshold.is_finite().then_some(threshold)
}

/// `points` in time order, cut wherever two neighbours are more than `gap` apart.
pub fn split_at_gaps(mut points: Segment, gap: Option<f64>) -> Vec<Segment> {
    points.sort_by(|left, right| left.0.total_cmp(&right.0));
    let mut segments: Vec<Segment> = Vec::new();
    for point in points {
        let breaks = match (segments.last().and_then(|last| last.last()), gap) {
            (None, _) => true,
            (Some(previous), Some(gap)) => point.0 - previous.0 > gap,
            (Some(_), None) => false,
        };
        if breaks {
            segments.push(vec![point]);
        } else if let Some(last) = segments.last_mut() {
            last.push(point);
        }
    }
    segments
}

/// A range plotters can put ticks on: finite ends and a finite, non-zero length. Outside
/// that its tick search never ends (an infinite end or length) or panics (a NaN end).
pub fn axis(low: f64, high: f64) -> Option<Range<f64>> {
    (low.is_finite() && high.is_finite() && low < high && (high - low).is_finite())
        .then_some(low..high)
}

/// Seconds since the first sample, over every sample (a recording appended to by runs
/// whose clocks disagree need not be in order); at least one second long.
fn time_axis(snapshots: &[Snapshot]) -> Result<Range<f64>, ChartError> {
    if let Some(odd) = snapshots.iter().find(|snapshot| !snapshot.time.is_finite()) {
        return Err(ChartError::unplottable(format!(
            "a sample's time is {}, not a finite number",
            odd.time
        )));
    }
    let start = snapshots.first().map_or(0.0, |first| first.time);
    let earliest = snapshots
        .iter()
        .map(|snapshot| snapshot.time)
        .fold(start, f64::min);
    let latest = snapshots
        .iter()
        .map(|snapshot| snapshot.time)
        .fold(start, f64::max);
    let low = earliest - start;
    let high = (latest - start).max(low + 1.0);
    axis(low, high).ok_or_else(|| {
        ChartError::unplottable(format!(
            "the samples' times run from {} to {} s, too far apart to draw",
            shown(earliest),
            shown(latest)
        ))
    })
}

/// A number for an error message: plain when it is of a usual size, else in exponent
/// form (`1.7e308`, not 309 digits).
fn shown(value: f64) -> String {
    if value.abs() < 1e15 {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::snapshot::{ContainerRow, GpuRow};

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_ceiling_is_drawn_only_near_the_readings() {
        assert!(in_view(100.0, 100.0 * CEILING_IN_VIEW_FACTOR));
        assert!(!in_view(100.0, 100.0 * CEILING_IN_VIEW_FACTOR + 1.0));
        // Nothing read above zero: no ceiling is in view of it.
        assert!(!in_view(0.0, 1.0));
    }

    fn container_at(time: f64, memory: u64, limit: u64) -> Snapshot {
        Snapshot {
            time,
            containers: vec![ContainerRow {
                name: "train".into(),
                cpu_percent: Some(50.0),
                memory_bytes: Some(memory),
                memory_limit_bytes: Some(limit),
                ..ContainerRow::default()
            }],
            ..Snapshot::default()
        }
    }

    fn titles(model: &ChartModel) -> Vec<String> {
        model.panels.iter().map(PanelModel::caption).collect()
    }

    #[test]
    fn a_recording_without_gpus_has_only_container_panels_with_plain_titles() {
        let snapshots: Vec<Snapshot> = (0..5)
            .map(|step| container_at(f64::from(step), 40 * MIB, 64 * MIB))
            .collect();
        let model = model(&snapshots).unwrap();
        assert_eq!(
            titles(&model),
            ["Container CPU (% of one core)", "Container memory (MiB)"]
        );
    }

    #[test]
    fn memory_is_scaled_to_the_data_with_the_limit_in_view() {
        let snapshots: Vec<Snapshot> = (0..5)
            .map(|step| container_at(f64::from(step), (30 + 5 * step) as u64 * MIB, 64 * MIB))
            .collect();
        let model = model(&snapshots).unwrap();
        let memory = &model.panels[1];
        assert_eq!(memory.unit, "MiB");
        assert_eq!(memory.y.start, 0.0);
        assert!(
            (memory.y.end - 64.0 * 1.1).abs() < 1e-9,
            "the axis reaches the limit with headroom: {:?}",
            memory.y
        );
        let line = &memory.lines[0];
        assert_eq!(line.segments[0][0], (0.0, 30.0), "values in MiB");
        let ceiling = line.ceiling.as_ref().unwrap();
        assert_eq!(ceiling.label(), "limit 64 MiB");
        assert_eq!(ceiling.segments.len(), 1);
        assert!(ceiling.segments[0].iter().all(|point| point.1 == 64.0));
    }

    #[test]
    fn a_far_limit_is_named_not_drawn_and_does_not_flatten_the_line() {
        let snapshots: Vec<Snapshot> = (0..3)
            .map(|step| container_at(f64::from(step), 64 * MIB, 23 * 1024 * MIB))
            .collect();
        let model = model(&snapshots).unwrap();
        let memory = &model.panels[1];
        assert_eq!(memory.unit, "MiB");
        assert!((memory.y.end - 64.0 * 1.1).abs() < 1e-9, "{:?}", memory.y);
        let ceiling = memory.lines[0].ceiling.as_ref().unwrap();
        assert!(ceiling.segments.is_empty());
        assert_eq!(ceiling.label(), "limit 23.0 GiB, off scale");
    }

    #[test]
    fn lines_break_at_gaps_longer_than_three_median_intervals() {
        let mut times: Vec<f64> = (0..5).map(f64::from).collect();
        times.extend((0..5).map(|step| 204.0 + f64::from(step)));
        let snapshots: Vec<Snapshot> = times
            .iter()
            .map(|time| container_at(*time, 20 * MIB, 64 * MIB))
            .collect();
        let model = model(&snapshots).unwrap();
        assert_eq!(model.gap_seconds, Some(3.0));
        assert_eq!(model.gaps, [4.0..204.0]);
        for panel in &model.panels {
            let line = &panel.lines[0];
            assert_eq!(line.segments.len(), 2, "{}", panel.title);
            assert_eq!(line.segments[0].len(), 5);
            assert_eq!(line.segments[1][0].0, 204.0);
        }
        let ceiling = model.panels[1].lines[0].ceiling.as_ref().unwrap();
        assert_eq!(ceiling.segments.len(), 2, "the limit breaks too");
    }

    #[test]
    fn steps_within_three_intervals_and_out_of_order_samples_stay_joined() {
        assert_eq!(
            split_at_gaps(
                vec![(2.0, 1.0), (0.0, 1.0), (1.0, 1.0), (4.0, 1.0)],
                Some(3.0)
            ),
            vec![vec![(0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (4.0, 1.0)]]
        );
        assert_eq!(
            split_at_gaps(vec![(0.0, 1.0), (10.0, 2.0)], None),
            vec![vec![(0.0, 1.0), (10.0, 2.0)]]
        );
        assert_eq!(gap_threshold(&[container_at(5.0, 1, 1)]), None);
    }

    #[test]
    fn gpu_panels_appear_with_gpu_data_and_bytes_pick_their_unit() {
        let snapshots: Vec<Snapshot> = (0..3)
            .map(|step| Snapshot {
                time: f64::from(step),
                gpus: vec![GpuRow {
                    index: 0,
                    utilization_percent: Some(90.0),
                    memory_used_bytes: Some(30 * 1024 * MIB),
                    memory_total_bytes: Some(80 * 1024 * MIB),
                    temperature_c: Some(70.0),
                    ..GpuRow::default()
                }],
                ..Snapshot::default()
            })
            .collect();
        let model = model(&snapshots).unwrap();
        assert_eq!(
            titles(&model),
            [
                "GPU utilisation (%)",
                "GPU memory used (GiB)",
                "GPU temperature (°C)"
            ]
        );
        assert_eq!(model.panels[0].y, 0.0..105.0);
        let total = model.panels[1].lines[0].ceiling.as_ref().unwrap();
        assert_eq!(total.label(), "total 80.0 GiB");
        assert!((model.panels[2].y.end - 77.0).abs() < 1e-9);
    }

    #[test]
    fn a_limit_without_readings_draws_no_panel() {
        let mut snapshot = container_at(0.0, 0, 64 * MIB);
        snapshot.containers[0].memory_bytes = None;
        snapshot.containers[0].cpu_percent = None;
        assert!(model(&[snapshot]).unwrap().panels.is_empty());
    }

    #[test]
    fn binary_units_follow_the_size() {
        assert_eq!(cores(200.0), "2 cores");
        assert_eq!(cores(100.0), "1 core");
        assert_eq!(cores(50.0), "0.5 cores");
        assert_eq!(cores(125.0), "1.25 cores");
        assert_eq!(binary_unit(0.0).1, "B");
        assert_eq!(binary_unit(1023.0).1, "B");
        assert_eq!(binary_unit(1024.0).1, "KiB");
        assert_eq!(binary_unit(64.0 * MIB as f64).1, "MiB");
        assert_eq!(
            binary_unit(3.0 * 1024.0 * MIB as f64),
            (1024.0 * MIB as f64, "GiB".into())
        );
    }

    fn end(time: f64, oom_killed: Option<bool>) -> EndedContainer {
        EndedContainer {
            id: "abc".into(),
            name: "train".into(),
            profile: None,
            time,
            status: "exited".into(),
            exit_code: Some(137),
            oom_killed,
        }
    }

    #[test]
    fn an_oom_kill_is_marked_once_on_the_memory_line_at_its_last_reading() {
        // Memory grows 8 MiB a second to 56 MiB; seen stopped at 8 s, where the
        // container has no row; the later samples (a JSON-lines run) repeat the end.
        let mut snapshots: Vec<Snapshot> = (0..8)
            .map(|step| container_at(f64::from(step), (8 * step) as u64 * MIB, 64 * MIB))
            .collect();
        for time in [8.0, 9.0, 10.0] {
            snapshots.push(Snapshot {
                time,
                ended: vec![end(8.0, Some(true))],
                ..Snapshot::default()
            });
        }
        let model = model(&snapshots).unwrap();
        let memory = &model.panels[1];
        assert_eq!(
            memory.marks,
            vec![Mark {
                line: "train".into(),
                at: 8.0,
                value: 56.0,
                label: OOM_LABEL,
            }]
        );
        assert_eq!(OOM_LABEL, "OOM killed");
        assert_eq!(
            memory.lines[0].segments[0].last(),
            Some(&(7.0, 56.0)),
            "the curve runs up to it"
        );
        assert!(model.panels[0].marks.is_empty(), "memory only, not CPU");

        // Another end, or one the daemon said nothing about, is no OOM mark.
        for oom_killed in [Some(false), None] {
            for snapshot in &mut snapshots {
                for ended in &mut snapshot.ended {
                    ended.oom_killed = oom_killed;
                }
            }
            assert!(super::model(&snapshots).unwrap().panels[1].marks.is_empty());
        }
        // An end before the line's first reading has no curve to mark.
        for snapshot in &mut snapshots {
            snapshot.ended = vec![end(-5.0, Some(true))];
        }
        assert!(super::model(&snapshots).unwrap().panels[1].marks.is_empty());
    }
}
