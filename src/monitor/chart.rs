//! `stats report`: a recording drawn as time series — container CPU and memory, GPU
//! utilisation, memory and temperature — as one SVG, or an HTML page holding that SVG, a
//! summary table and the diagnoses the recording carried.
//!
//! Pure: snapshots in, text out. plotters draws through its SVG backend into a string.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;

use plotters::prelude::*;
use thiserror::Error;

use super::snapshot::Snapshot;
use crate::units::binary_spaced as bytes;

/// The drawing's size in pixels.
const WIDTH: u32 = 1100;
const PANEL_HEIGHT: u32 = 300;

const GIBIBYTE: f64 = 1024.0 * 1024.0 * 1024.0;

/// Line colours, cycled (Okabe–Ito, readable by colour-blind readers, then greys).
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(90, 90, 90),
];

#[derive(Debug, Error)]
#[error("cannot draw the report: {message}")]
pub struct ChartError {
    message: String,
    /// The samples hold numbers no axis can span, as opposed to plotters failing.
    unplottable: bool,
}

impl ChartError {
    fn unplottable(message: String) -> ChartError {
        ChartError {
            message,
            unplottable: true,
        }
    }

    /// Whether the recording, not envctl, is at fault: numbers no axis can span.
    pub fn is_unplottable(&self) -> bool {
        self.unplottable
    }

    pub fn hint(&self) -> Option<String> {
        Some(if self.unplottable {
            "the recording holds numbers too far apart to draw: remove the lines that hold them, or record again with `envctl stats --record`".into()
        } else {
            "this is a bug in envctl; please report it with the recording".into()
        })
    }
}

/// One panel: a title, a unit, and named lines of (seconds since start, value).
struct Panel {
    title: &'static str,
    unit: &'static str,
    lines: BTreeMap<String, Vec<(f64, f64)>>,
}

fn panels(snapshots: &[Snapshot]) -> Vec<Panel> {
    let start = snapshots.first().map_or(0.0, |first| first.time);
    let mut cpu = Panel {
        title: "Container CPU",
        unit: "% (100 = one core)",
        lines: BTreeMap::new(),
    };
    let mut memory = Panel {
        title: "Container memory",
        unit: "GiB",
        lines: BTreeMap::new(),
    };
    let mut utilization = Panel {
        title: "GPU utilisation",
        unit: "%",
        lines: BTreeMap::new(),
    };
    let mut gpu_memory = Panel {
        title: "GPU memory used",
        unit: "GiB",
        lines: BTreeMap::new(),
    };
    let mut temperature = Panel {
        title: "GPU temperature",
        unit: "°C",
        lines: BTreeMap::new(),
    };
    for snapshot in snapshots {
        let at = snapshot.time - start;
        for container in &snapshot.containers {
            if let Some(value) = container.cpu_percent {
                cpu.lines
                    .entry(container.name.clone())
                    .or_default()
                    .push((at, value));
            }
            if let Some(value) = container.memory_bytes {
                memory
                    .lines
                    .entry(container.name.clone())
                    .or_default()
                    .push((at, value as f64 / GIBIBYTE));
            }
        }
        for gpu in &snapshot.gpus {
            let name = format!("GPU {}", gpu.index);
            if let Some(value) = gpu.utilization_percent {
                utilization
                    .lines
                    .entry(name.clone())
                    .or_default()
                    .push((at, value));
            }
            if let Some(value) = gpu.memory_used_bytes {
                gpu_memory
                    .lines
                    .entry(name.clone())
                    .or_default()
                    .push((at, value as f64 / GIBIBYTE));
            }
            if let Some(value) = gpu.temperature_c {
                temperature.lines.entry(name).or_default().push((at, value));
            }
        }
    }
    vec![cpu, memory, utilization, gpu_memory, temperature]
}

/// The time series as one SVG document.
pub fn svg(snapshots: &[Snapshot]) -> Result<String, ChartError> {
    let panels = panels(snapshots);
    let x = time_axis(snapshots)?;
    let mut text = String::new();
    {
        let height = PANEL_HEIGHT * panels.len() as u32;
        let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let areas = root.split_evenly((panels.len(), 1));
        for (area, panel) in areas.iter().zip(&panels) {
            draw_panel(area, panel, x.clone())?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(text)
}

/// A range plotters can put ticks on: finite ends and a finite, non-zero length. Outside
/// that its tick search never ends (an infinite end or length) or panics (a NaN end).
fn axis(low: f64, high: f64) -> Option<Range<f64>> {
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

/// The values' axis: from 0 (or the lowest value, below it) to the highest with headroom.
fn value_axis(panel: &Panel) -> Result<Range<f64>, ChartError> {
    for (name, points) in &panel.lines {
        if let Some((_, value)) = points.iter().find(|(_, value)| !value.is_finite()) {
            return Err(ChartError::unplottable(format!(
                "`{name}` reads {value} in {}, not a finite number",
                panel.title
            )));
        }
    }
    let values = || panel.lines.values().flatten().map(|point| point.1);
    let lowest = values().fold(0.0_f64, f64::min);
    let highest = values().fold(0.0_f64, f64::max);
    // Percentages start at a full scale; anything else gets a tenth of headroom.
    let top = if panel.unit.starts_with('%') {
        highest.max(100.0) * 1.05
    } else {
        (highest * 1.1).max(1.0)
    };
    // Headroom over a value near the largest float overflows: end at the largest instead.
    let top = if top.is_finite() { top } else { f64::MAX };
    axis(lowest, top).ok_or_else(|| {
        ChartError::unplottable(format!(
            "{} runs from {} to {}, too wide a range to draw",
            panel.title,
            shown(lowest),
            shown(highest)
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

fn draw_panel<Backend: DrawingBackend>(
    area: &DrawingArea<Backend, plotters::coord::Shift>,
    panel: &Panel,
    x: Range<f64>,
) -> Result<(), ChartError> {
    let y = value_axis(panel)?;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} ({})", panel.title, panel.unit),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the first sample")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(drawing)?;
    if panel.lines.is_empty() {
        area.draw(&Text::new(
            "no samples",
            (WIDTH as i32 / 2 - 40, PANEL_HEIGHT as i32 / 2),
            ("sans-serif", 16).into_font().color(&BLACK.mix(0.5)),
        ))
        .map_err(drawing)?;
        return Ok(());
    }
    for (position, (name, points)) in panel.lines.iter().enumerate() {
        let colour = COLOURS[position % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(drawing)?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(drawing)?;
    Ok(())
}

fn drawing(error: impl std::fmt::Display) -> ChartError {
    ChartError {
        message: error.to_string(),
        unplottable: false,
    }
}

/// An HTML page: the SVG, a summary per container and GPU, and the diagnoses recorded.
pub fn html(snapshots: &[Snapshot], source: &str) -> Result<String, ChartError> {
    let drawing = svg(snapshots)?;
    let mut page = String::new();
    let span = match (snapshots.first(), snapshots.last()) {
        (Some(first), Some(last)) => last.time - first.time,
        _ => 0.0,
    };
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>envctl stats report: {title}</title>\n\
         <style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:right}}th:first-child,td:first-child{{text-align:left}}</style>\n\
         </head>\n<body>\n<h1>envctl stats report</h1>\n<p>{title}: {count} samples over {span:.0} s</p>\n",
        title = escape(source),
        count = snapshots.len(),
    );
    page.push_str(&drawing);
    page.push_str("\n<h2>Summary</h2>\n<table>\n<tr><th>subject</th><th>CPU % mean</th><th>CPU % max</th><th>memory max</th><th>GPU memory max</th><th>GPU util % mean</th><th>GPU util % max</th><th>temperature max</th></tr>\n");
    for row in summary(snapshots) {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&row.subject),
            row.cpu_mean
                .map_or("-".into(), |value| format!("{value:.1}")),
            row.cpu_max
                .map_or("-".into(), |value| format!("{value:.1}")),
            row.memory_max.map_or("-".into(), bytes),
            row.gpu_memory_max.map_or("-".into(), bytes),
            row.utilization_mean
                .map_or("-".into(), |value| format!("{value:.1}")),
            row.utilization_max
                .map_or("-".into(), |value| format!("{value:.1}")),
            row.temperature_max
                .map_or("-".into(), |value| format!("{value:.0} °C")),
        );
    }
    page.push_str("</table>\n<h2>Diagnoses</h2>\n");
    let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
    for snapshot in snapshots {
        for diagnosis in &snapshot.diagnoses {
            seen.insert(
                (diagnosis.id.clone(), diagnosis.subject.clone()),
                format!("{} — hint: {}", diagnosis.message, diagnosis.hint),
            );
        }
    }
    if seen.is_empty() {
        page.push_str("<p>none recorded</p>\n");
    } else {
        page.push_str("<ul>\n");
        for ((id, subject), text) in &seen {
            let _ = writeln!(
                page,
                "<li><b>{}</b> {}: {}</li>",
                escape(id),
                escape(subject),
                escape(text)
            );
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</body>\n</html>\n");
    Ok(page)
}

#[derive(Default)]
struct SummaryRow {
    subject: String,
    cpu_mean: Option<f64>,
    cpu_max: Option<f64>,
    memory_max: Option<f64>,
    gpu_memory_max: Option<f64>,
    utilization_mean: Option<f64>,
    utilization_max: Option<f64>,
    temperature_max: Option<f64>,
}

/// Three columns of values collected for one subject (CPU, memory, GPU memory for a
/// container; utilisation, memory, temperature for a GPU).
type Columns = (Vec<f64>, Vec<f64>, Vec<f64>);

fn summary(snapshots: &[Snapshot]) -> Vec<SummaryRow> {
    let mut containers: BTreeMap<String, Columns> = BTreeMap::new();
    let mut gpus: BTreeMap<u32, Columns> = BTreeMap::new();
    for snapshot in snapshots {
        for container in &snapshot.containers {
            let entry = containers.entry(container.name.clone()).or_default();
            entry.0.extend(container.cpu_percent);
            entry
                .1
                .extend(container.memory_bytes.map(|value| value as f64));
            entry
                .2
                .extend(container.gpu_memory_bytes.map(|value| value as f64));
        }
        for gpu in &snapshot.gpus {
            let entry = gpus.entry(gpu.index).or_default();
            entry.0.extend(gpu.utilization_percent);
            entry
                .1
                .extend(gpu.memory_used_bytes.map(|value| value as f64));
            entry.2.extend(gpu.temperature_c);
        }
    }
    let maximum = |values: &[f64]| values.iter().copied().reduce(f64::max);
    let average = |values: &[f64]| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let mut rows: Vec<SummaryRow> = containers
        .into_iter()
        .map(|(name, (cpu, memory, gpu_memory))| SummaryRow {
            subject: name,
            cpu_mean: average(&cpu),
            cpu_max: maximum(&cpu),
            memory_max: maximum(&memory),
            gpu_memory_max: maximum(&gpu_memory),
            ..SummaryRow::default()
        })
        .collect();
    rows.extend(
        gpus.into_iter()
            .map(|(index, (utilization, memory, temperature))| SummaryRow {
                subject: format!("GPU {index}"),
                gpu_memory_max: maximum(&memory),
                utilization_mean: average(&utilization),
                utilization_max: maximum(&utilization),
                temperature_max: maximum(&temperature),
                ..SummaryRow::default()
            }),
    );
    rows
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::snapshot::{ContainerRow, GpuRow};

    fn recording() -> Vec<Snapshot> {
        (0..5)
            .map(|step| Snapshot {
                time: 100.0 + f64::from(step),
                containers: vec![ContainerRow {
                    name: "train<1>".into(),
                    cpu_percent: Some(f64::from(step) * 20.0),
                    memory_bytes: Some(1 << 30),
                    ..ContainerRow::default()
                }],
                gpus: vec![GpuRow {
                    index: 0,
                    utilization_percent: Some(50.0),
                    memory_used_bytes: Some(2 << 30),
                    temperature_c: Some(60.0 + f64::from(step)),
                    ..GpuRow::default()
                }],
                ..Snapshot::default()
            })
            .collect()
    }

    #[test]
    fn the_svg_has_a_panel_and_a_line_per_series() {
        let text = svg(&recording()).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..80]);
        for title in [
            "Container CPU",
            "Container memory",
            "GPU utilisation",
            "GPU memory used",
            "GPU temperature",
        ] {
            assert!(text.contains(title), "{title} missing");
        }
        assert!(!text.contains("train<1>"), "names are escaped");
        assert!(
            text.matches("<polyline").count() >= 5,
            "one line per series"
        );
    }

    #[test]
    fn the_html_page_escapes_and_summarises() {
        let page = html(&recording(), "run <1>.csv").unwrap();
        assert!(
            page.contains("run &lt;1&gt;.csv: 5 samples over 4 s"),
            "{page}"
        );
        assert!(page.contains("<td>GPU 0</td>"));
        assert!(
            page.contains("<td>40.0</td><td>80.0</td>"),
            "CPU mean and max"
        );
        assert!(page.contains("none recorded"));
    }

    /// Runs `draw` on its own thread and fails the test if it has not returned within
    /// 20 s: extreme axis ranges once sent plotters' tick search into an endless loop.
    fn within_bounded_time<T: Send + 'static>(
        what: &str,
        draw: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(draw());
        });
        receiver
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|error| panic!("{what}: no answer in 20 s ({error})"))
    }

    fn with_times(times: &[f64]) -> Vec<Snapshot> {
        let mut snapshots = recording();
        snapshots.truncate(times.len());
        for (snapshot, time) in snapshots.iter_mut().zip(times) {
            snapshot.time = *time;
        }
        snapshots
    }

    fn with_cpu(values: &[f64]) -> Vec<Snapshot> {
        let mut snapshots = recording();
        snapshots.truncate(values.len());
        for (snapshot, value) in snapshots.iter_mut().zip(values) {
            snapshot.containers[0].cpu_percent = Some(*value);
        }
        snapshots
    }

    #[test]
    fn times_too_far_apart_are_an_error_not_a_hang() {
        let cases: [(&str, &[f64]); 5] = [
            ("±1.7e308", &[-1.7e308, 1.7e308]),
            ("backwards", &[1.7e308, -1.7e308, 0.0]),
            ("inf", &[0.0, f64::INFINITY]),
            ("-inf first", &[f64::NEG_INFINITY, 1.0]),
            ("NaN", &[0.0, f64::NAN, 2.0]),
        ];
        for (what, times) in cases {
            let snapshots = with_times(times);
            let drawn = within_bounded_time(what, move || svg(&snapshots).map(|text| text.len()));
            let error = drawn.expect_err(what);
            assert!(
                error.to_string().starts_with("cannot draw the report: "),
                "{what}: {error}"
            );
        }
        let error = svg(&with_times(&[-1.7e308, 1.7e308])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot draw the report: the samples' times run from -1.7e308 to 1.7e308 s, too far apart to draw"
        );
        assert!(
            error.is_unplottable(),
            "the recording's fault, not envctl's"
        );
        assert!(error.hint().unwrap().contains("remove the lines"));
        let error = html(&with_times(&[0.0, f64::NAN]), "x.jsonl").unwrap_err();
        assert!(error.to_string().contains("time is NaN"), "{error}");
    }

    #[test]
    fn extreme_finite_spans_and_values_are_drawn() {
        let cases: [(&str, Vec<Snapshot>); 5] = [
            ("times 1.7e308 apart", with_times(&[0.0, 1.7e308])),
            (
                "times from -8e307 to 8e307",
                with_times(&[0.0, -8e307, 8e307]),
            ),
            ("CPU at the largest float", with_cpu(&[0.0, f64::MAX])),
            ("CPU at 1.7e308", with_cpu(&[1.7e308, 1.0])),
            ("CPU far below zero", with_cpu(&[-1.7e308, 50.0])),
        ];
        for (what, snapshots) in cases {
            let drawn = within_bounded_time(what, move || {
                svg(&snapshots).map(|text| text.starts_with("<svg"))
            });
            assert!(matches!(drawn, Ok(true)), "{what}: {drawn:?}");
        }
    }

    #[test]
    fn values_that_cannot_be_drawn_are_an_error_not_a_hang() {
        let cases: [(&str, &[f64]); 4] = [
            ("±1.7e308", &[-1.7e308, 1.7e308]),
            ("inf", &[f64::INFINITY, 1.0]),
            ("-inf", &[1.0, f64::NEG_INFINITY]),
            ("NaN", &[f64::NAN, 1.0]),
        ];
        for (what, values) in cases {
            let snapshots = with_cpu(values);
            let drawn = within_bounded_time(what, move || svg(&snapshots).map(|text| text.len()));
            let error = drawn.expect_err(what);
            assert!(
                error.to_string().contains("Container CPU"),
                "{what}: {error}"
            );
        }
        let error = svg(&with_cpu(&[-1.7e308, 1.7e308])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot draw the report: Container CPU runs from -1.7e308 to 1.7e308, too wide a range to draw"
        );
        assert!(error.is_unplottable());
        let error = svg(&with_cpu(&[1.0, f64::NAN])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot draw the report: `train<1>` reads NaN in Container CPU, not a finite number"
        );
    }
}
