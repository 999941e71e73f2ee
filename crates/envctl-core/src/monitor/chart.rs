//! `stats report`: a recording drawn as time series — container CPU and memory, GPU
//! utilisation, memory and temperature — as one SVG, or an HTML page holding that SVG, a
//! summary table and the diagnoses the recording carried.
//!
//! Pure: snapshots in, text out. `chart_model` decides what is drawn (panels with data,
//! axes scaled to it, limits, lines broken at gaps); plotters draws it through its SVG
//! backend into a string.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use thiserror::Error;

use super::chart_model::{self, LineModel, Mark, PanelModel};
use super::diagnosis::{self, Diagnosis};
use super::snapshot::{EndedContainer, Snapshot};
use crate::units::binary_spaced as bytes;

/// The drawing's size in pixels.
const WIDTH: u32 = 1100;
const PANEL_HEIGHT: u32 = 300;
/// Room right of each plot for its legend.
const LEGEND_WIDTH: u32 = 300;
/// Legend entries longer than this many characters are cut (with `…`) to fit its room.
const LEGEND_CHARACTERS: usize = 44;

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
/// The colour of a mark (the OOM killer's): none of the lines' colours.
const MARK_COLOUR: RGBColor = RGBColor(178, 34, 34);

#[derive(Debug, Error)]
#[error("cannot draw the report: {message}")]
pub struct ChartError {
    message: String,
    /// The samples hold numbers no axis can span, as opposed to plotters failing.
    unplottable: bool,
}

impl ChartError {
    pub(super) fn unplottable(message: String) -> ChartError {
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

/// The time series as one SVG document: a panel per kind of reading the recording holds
/// (`chart_model` decides what each panel shows).
pub fn svg(snapshots: &[Snapshot]) -> Result<String, ChartError> {
    let model = chart_model::model(snapshots)?;
    let mut text = String::new();
    {
        let height = PANEL_HEIGHT * model.panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        if model.panels.is_empty() {
            root.draw(&Text::new(
                "no readings to draw: every value in the recording is missing",
                (WIDTH as i32 / 2 - 220, PANEL_HEIGHT as i32 / 2),
                ("sans-serif", 16).into_font().color(&BLACK.mix(0.6)),
            ))
            .map_err(drawing)?;
        }
        let areas = root.split_evenly((model.panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(&model.panels) {
            draw_panel(area, panel, model.x.clone(), &model.gaps)?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(text)
}

/// How a legend entry marks its line.
enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    /// A ceiling above the axis: no line to show.
    Above,
    /// A mark on a line (the OOM killer's cross).
    Cross,
}

/// The plot of one panel: seconds across, the panel's unit up.
type Plot<'area, Backend> =
    ChartContext<'area, Backend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One panel: its axes, the gaps in the recording, each line (with its ceiling), the
/// marks on them, and the legend beside the plot.
fn draw_panel<Backend: DrawingBackend>(
    area: &DrawingArea<Backend, plotters::coord::Shift>,
    panel: &PanelModel,
    x: Range<f64>,
    gaps: &[Range<f64>],
) -> Result<(), ChartError> {
    let mut chart = ChartBuilder::on(area)
        .caption(panel.caption(), ("sans-serif", 18))
        .margin(12)
        .margin_right(LEGEND_WIDTH)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(x, panel.y.clone())
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the first sample")
        .x_label_formatter(&|value| tick(*value))
        .y_label_formatter(&|value| tick(*value))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(drawing)?;
    draw_gaps(&mut chart, panel, gaps)?;
    let mut legend = Vec::new();
    for (position, line) in panel.lines.iter().enumerate() {
        let colour = COLOURS[position % COLOURS.len()];
        legend.extend(draw_line(&mut chart, line, colour)?);
    }
    for mark in &panel.marks {
        legend.push(draw_mark(&mut chart, panel, mark)?);
    }
    draw_legend(area, &chart, &legend)
}

/// Where nothing was sampled, a shaded band says so rather than a line drawn across it;
/// named only where the band is wide enough to hold the words.
fn draw_gaps<Backend: DrawingBackend>(
    chart: &mut Plot<'_, Backend>,
    panel: &PanelModel,
    gaps: &[Range<f64>],
) -> Result<(), ChartError> {
    chart
        .draw_series(gaps.iter().map(|gap| {
            Rectangle::new(
                [(gap.start, panel.y.start), (gap.end, panel.y.end)],
                BLACK.mix(0.06).filled(),
            )
        }))
        .map_err(drawing)?;
    for gap in gaps {
        let from = chart.backend_coord(&(gap.start, panel.y.end));
        let to = chart.backend_coord(&(gap.end, panel.y.end));
        if to.0 - from.0 > 130 {
            let words = format!("no samples for {:.0} s", gap.end - gap.start);
            chart
                .plotting_area()
                .draw(
                    &(EmptyElement::at((gap.start, panel.y.end))
                        + Text::new(
                            words,
                            (8, 6),
                            ("sans-serif", 12).into_font().color(&BLACK.mix(0.55)),
                        )),
                )
                .map_err(drawing)?;
        }
    }
    Ok(())
}

/// One line in `colour`, segment by segment, and its ceiling dashed; its legend entries
/// (the line's, then the ceiling's).
fn draw_line<Backend: DrawingBackend>(
    chart: &mut Plot<'_, Backend>,
    line: &LineModel,
    colour: RGBColor,
) -> Result<Vec<(String, Swatch)>, ChartError> {
    let mut legend = vec![(line.name.clone(), Swatch::Line(colour))];
    for segment in &line.segments {
        // One sample between two gaps is a dot: a line of one point draws nothing.
        if let [point] = segment.as_slice() {
            chart
                .draw_series(std::iter::once(Circle::new(*point, 3, colour.filled())))
                .map_err(drawing)?;
        } else {
            chart
                .draw_series(LineSeries::new(
                    segment.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(drawing)?;
        }
    }
    let Some(ceiling) = &line.ceiling else {
        return Ok(legend);
    };
    legend.push((
        format!("{} {}", line.name, ceiling.label()),
        if ceiling.segments.is_empty() {
            Swatch::Above
        } else {
            Swatch::Dashed(colour)
        },
    ));
    for segment in &ceiling.segments {
        chart
            .draw_series(DashedLineSeries::new(
                segment.iter().copied(),
                6,
                4,
                colour.stroke_width(1),
            ))
            .map_err(drawing)?;
    }
    Ok(legend)
}

/// One mark (the OOM killer's): a dashed rule across the panel at the moment, a cross
/// where the line ended, and the words beside it, on the side with room for them; its
/// legend entry.
fn draw_mark<Backend: DrawingBackend>(
    chart: &mut Plot<'_, Backend>,
    panel: &PanelModel,
    mark: &Mark,
) -> Result<(String, Swatch), ChartError> {
    chart
        .draw_series(DashedLineSeries::new(
            [(mark.at, panel.y.start), (mark.at, panel.y.end)],
            4,
            4,
            MARK_COLOUR.stroke_width(1),
        ))
        .map_err(drawing)?;
    let (plot_x, _) = chart.plotting_area().get_pixel_range();
    let (mark_x, _) = chart.backend_coord(&(mark.at, mark.value));
    let words_x = if mark_x > (plot_x.start + plot_x.end) / 2 {
        -86
    } else {
        10
    };
    chart
        .plotting_area()
        .draw(
            &(EmptyElement::at((mark.at, mark.value))
                + Cross::new((0, 0), 6, MARK_COLOUR.stroke_width(2))
                + Text::new(
                    mark.label,
                    (words_x, -20),
                    ("sans-serif", 13).into_font().color(&MARK_COLOUR),
                )),
        )
        .map_err(drawing)?;
    // The words first: a long name is cut at the legend's width, they are not.
    Ok((
        format!("{} at {:.0} s: {}", mark.label, mark.at, mark.line),
        Swatch::Cross,
    ))
}

/// The legend sits right of the plot, in the margin kept for it, never over a line;
/// drawn on the panel's area, since the plot clips what lies outside it.
fn draw_legend<Backend: DrawingBackend>(
    area: &DrawingArea<Backend, plotters::coord::Shift>,
    chart: &Plot<'_, Backend>,
    legend: &[(String, Swatch)],
) -> Result<(), ChartError> {
    let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
    let (base_x, base_y) = area.get_base_pixel();
    let left = plot_x.end - base_x + 14;
    let font = ("sans-serif", 13).into_font();
    for (row, (label, swatch)) in legend.iter().enumerate() {
        let y = plot_y.start - base_y + 8 + 20 * row as i32;
        let ends = vec![(left, y), (left + 22, y)];
        match swatch {
            Swatch::Line(colour) => area.draw(&PathElement::new(ends, colour.stroke_width(2))),
            Swatch::Dashed(colour) => {
                area.draw(&DashedPathElement::new(ends, 5, 3, colour.stroke_width(1)))
            }
            Swatch::Above => area.draw(&Text::new("↑", (left + 6, y - 8), font.clone())),
            Swatch::Cross => area.draw(&Cross::new((left + 11, y), 5, MARK_COLOUR.stroke_width(2))),
        }
        .map_err(drawing)?;
        area.draw(&Text::new(fitted(label), (left + 28, y - 7), font.clone()))
            .map_err(drawing)?;
    }
    Ok(())
}

/// A tick's number without needless decimals: `900`, `2.5`, `0.25`.
fn tick(value: f64) -> String {
    // Extreme numbers in exponent form: `1.7e308`, not 309 digits.
    if value != 0.0 && !(0.01..1e15).contains(&value.abs()) {
        return format!("{value:.2e}");
    }
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// `label`, cut to [`LEGEND_CHARACTERS`] with `…`.
fn fitted(label: &str) -> String {
    if label.chars().count() <= LEGEND_CHARACTERS {
        return label.to_string();
    }
    let kept: String = label.chars().take(LEGEND_CHARACTERS - 1).collect();
    format!("{kept}…")
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
    let ends = EndedContainer::all_in(snapshots);
    summary_table(&mut page, snapshots, &ends);
    page.push_str("<h2>Diagnoses</h2>\n");
    diagnoses_list(&mut page, &diagnoses_of(snapshots, &ends));
    page.push_str("</body>\n</html>\n");
    Ok(page)
}

/// The page's summary: a row per container and GPU, with how each container ended.
fn summary_table(page: &mut String, snapshots: &[Snapshot], ends: &[EndedContainer]) {
    page.push_str("\n<h2>Summary</h2>\n<table>\n<tr><th>subject</th><th>CPU % mean</th><th>CPU % max</th><th>memory max</th><th>GPU memory max</th><th>GPU util % mean</th><th>GPU util % max</th><th>temperature max</th><th>ended</th></tr>\n");
    let start = snapshots.first().map_or(0.0, |first| first.time);
    for row in summary(snapshots, ends, start) {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
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
            if row.ended.is_empty() {
                "-".into()
            } else {
                escape(&row.ended.join("; "))
            },
        );
    }
    page.push_str("</table>\n");
}

/// Every diagnosis the recording holds, once per id and subject (the last said), with the
/// OOM kills it did not record diagnosed from the recording.
fn diagnoses_of(
    snapshots: &[Snapshot],
    ends: &[EndedContainer],
) -> BTreeMap<(String, String), String> {
    let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
    let shown = |diagnosis: &Diagnosis| format!("{} — hint: {}", diagnosis.message, diagnosis.hint);
    for snapshot in snapshots {
        for diagnosis in &snapshot.diagnoses {
            seen.insert(
                (diagnosis.id.clone(), diagnosis.subject.clone()),
                shown(diagnosis),
            );
        }
    }
    // A CSV recording keeps no diagnoses, and a JSON-lines one may have been cut before
    // the sample that named the OOM killer: the rule is applied to the recording then.
    for end in ends {
        let recorded = snapshots
            .iter()
            .flat_map(|snapshot| &snapshot.diagnoses)
            .any(|diagnosis| {
                diagnosis.subject == end.name && diagnosis.evidence.get("oom_killed") == Some(&1.0)
            });
        if recorded {
            continue;
        }
        if let Some(diagnosis) = diagnosis::out_of_memory_in(snapshots, end) {
            seen.insert(
                (diagnosis.id.clone(), diagnosis.subject.clone()),
                shown(&diagnosis),
            );
        }
    }
    seen
}

/// The diagnoses as a list, or `none recorded`.
fn diagnoses_list(page: &mut String, seen: &BTreeMap<(String, String), String>) {
    if seen.is_empty() {
        page.push_str("<p>none recorded</p>\n");
        return;
    }
    page.push_str("<ul>\n");
    for ((id, subject), text) in seen {
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
    /// How the container ended, and when: `killed by the OOM killer (exit 137) at 12 s`.
    ended: Vec<String>,
}

/// Three columns of values collected for one subject (CPU, memory, GPU memory for a
/// container; utilisation, memory, temperature for a GPU).
type Columns = (Vec<f64>, Vec<f64>, Vec<f64>);

fn summary(snapshots: &[Snapshot], ends: &[EndedContainer], start: f64) -> Vec<SummaryRow> {
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
    for end in ends {
        let words = format!("{} at {:.0} s", end.sentence(), end.time - start);
        match rows.iter_mut().find(|row| row.subject == end.name) {
            Some(row) => row.ended.push(words),
            // A container that ended before any reading of it is still named.
            None => rows.push(SummaryRow {
                subject: end.name.clone(),
                ended: vec![words],
                ..SummaryRow::default()
            }),
        }
    }
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
    fn a_recording_without_readings_says_so_instead_of_drawing_empty_panels() {
        let mut snapshots = recording();
        for snapshot in &mut snapshots {
            snapshot.gpus.clear();
            snapshot.containers[0].cpu_percent = None;
            snapshot.containers[0].memory_bytes = None;
        }
        let text = svg(&snapshots).unwrap();
        assert!(text.contains("no readings to draw"), "{text}");
        assert!(!text.contains("Container CPU"), "no empty panel");
        assert!(text.contains(r#"height="300""#), "{}", &text[..120]);
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

    /// `recording()` whose container grows and is ended by the OOM killer, seen at 5 s.
    fn killed() -> Vec<Snapshot> {
        let mut snapshots = recording();
        for (step, snapshot) in snapshots.iter_mut().enumerate() {
            snapshot.containers[0].id = "abc".into();
            snapshot.containers[0].memory_bytes = Some((step as u64 + 1) << 30);
            snapshot.containers[0].memory_limit_bytes = Some(6 << 30);
        }
        snapshots.push(Snapshot {
            time: 105.0,
            ended: vec![EndedContainer {
                id: "abc".into(),
                name: "train<1>".into(),
                profile: None,
                time: 105.0,
                status: "exited".into(),
                exit_code: Some(137),
                oom_killed: Some(true),
            }],
            ..Snapshot::default()
        });
        snapshots
    }

    #[test]
    fn an_oom_kill_is_marked_on_the_chart_in_the_summary_and_the_diagnoses() {
        let text = svg(&killed()).unwrap();
        assert_eq!(
            text.matches("fill=\"#B22222\">\nOOM killed\n</text>")
                .count(),
            1,
            "the words beside the mark, in its colour: {text}"
        );
        assert!(
            text.contains("OOM killed at 5 s: train&lt;1&gt;"),
            "the legend names it: {text}"
        );
        assert!(
            text.contains(r##"<line opacity="1" stroke="#B22222" stroke-width="2""##),
            "its cross"
        );
        let page = html(&killed(), "run.csv").unwrap();
        assert!(
            page.contains("<td>killed by the OOM killer (exit 137) at 5 s</td></tr>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<li><b>host-memory-growing</b> train&lt;1&gt;: killed by the OOM killer (exit 137) at its 6.0 GiB limit; its memory was 5.0 GiB at the last sample"
            ),
            "the rule applied to a recording without diagnoses: {page}"
        );
        // Without the OOM killer: the end is named, no mark, no diagnosis.
        let mut exited = killed();
        exited[5].ended[0].oom_killed = Some(false);
        exited[5].ended[0].exit_code = Some(0);
        assert!(!svg(&exited).unwrap().contains("OOM killed"));
        let page = html(&exited, "run.csv").unwrap();
        assert!(
            page.contains("<td>exited with code 0 at 5 s</td></tr>"),
            "{page}"
        );
        assert!(page.contains("none recorded"), "{page}");
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
