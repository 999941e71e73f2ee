//! `envctl stats` on screen: the table of containers then GPUs, the diagnoses under it,
//! and the live view that redraws it in place like `docker stats` or nvitop.
//!
//! The table is laid out by a pure function ([`snapshot_lines`]) that fits any width by
//! leaving out the least useful columns first, so the live view, the plain snapshots
//! printed when stdout is not a terminal, and the tests all see the same text.
//!
//! The live view ([`LiveScreen`]) uses the alternate screen with the cursor hidden and the
//! terminal in raw mode, so `q` is read without Enter; its `Drop` puts everything back,
//! also when the command fails or panics. Raw mode turns Ctrl-C into a byte rather than a
//! signal, so the key reader treats that byte as "quit" too.

use std::io::{self, Read, Write};

use console::Style;
use crossterm::{cursor, queue, terminal};

use super::printer::Printer;
use super::sparkline;
use crate::error::Error;
use crate::monitor::diagnosis::Severity;
use crate::monitor::history::{ContainerValues, GpuValues, History};
use crate::monitor::{ContainerRow, GpuRow, Snapshot};
use crate::units::{binary_compact, decimal_compact};

/// Styles text, or leaves it plain (the printer decides from `--color` and the stream).
pub type Styler<'a> = &'a dyn Fn(Style, &str) -> String;

/// One column: its header, its cells, whether it is right-aligned, and how readily it is
/// left out when the terminal is too narrow (higher goes first; 0 never goes).
struct Column {
    header: &'static str,
    cells: Vec<String>,
    right: bool,
    drop_order: u8,
}

/// Space between two columns.
const GAP: usize = 2;

/// The narrowest the first column (the name) is cut to before whole lines are cut.
const NAME_MINIMUM: usize = 12;

/// Escapes and caps every cell: cells quote outside text (container names, GPU names
/// from NVML).
fn escape_cells(columns: &mut [Column]) {
    for column in columns {
        for cell in &mut column.cells {
            if let std::borrow::Cow::Owned(safe) = super::text::shown(cell) {
                *cell = safe;
            }
        }
    }
}

/// The widest of a column's header and cells.
fn column_width(column: &Column) -> usize {
    column
        .cells
        .iter()
        .map(|cell| console::measure_text_width(cell))
        .chain(std::iter::once(column.header.len()))
        .max()
        .unwrap_or(0)
}

/// The width of `columns` side by side with their gaps.
fn total_width(columns: &[Column]) -> usize {
    columns.iter().map(column_width).sum::<usize>() + GAP * columns.len().saturating_sub(1)
}

/// Leaves out the columns most readily dropped until the rest fit `width` or none can go.
fn drop_columns_to_fit(columns: &mut Vec<Column>, width: usize) {
    while total_width(columns) > width {
        let Some(position) = columns
            .iter()
            .enumerate()
            .filter(|(_, column)| column.drop_order > 0)
            .max_by_key(|(_, column)| column.drop_order)
            .map(|(position, _)| position)
        else {
            break;
        };
        columns.remove(position);
    }
}

/// Each column's width, the first cut (down to [`NAME_MINIMUM`]) when they do not fit.
fn fitted_widths(columns: &[Column], width: Option<usize>) -> Vec<usize> {
    let mut widths: Vec<usize> = columns.iter().map(column_width).collect();
    if let (Some(width), Some(first)) = (width, widths.first().copied()) {
        let others = total_width(columns) - first;
        if others + first > width {
            widths[0] = width.saturating_sub(others).max(NAME_MINIMUM).min(first);
        }
    }
    widths
}

/// One line of `cells` padded to `widths` and aligned as their columns say, then cut to
/// `width`.
fn render_line(
    cells: &[&str],
    columns: &[Column],
    widths: &[usize],
    width: Option<usize>,
) -> String {
    let mut line = String::new();
    for (position, (cell, column)) in cells.iter().zip(columns).enumerate() {
        let cell = console::truncate_str(cell, widths[position], "…");
        let alignment = if column.right {
            console::Alignment::Right
        } else {
            console::Alignment::Left
        };
        if position > 0 {
            line.push_str(&" ".repeat(GAP));
        }
        line.push_str(&console::pad_str(&cell, widths[position], alignment, None));
    }
    let line = line.trim_end().to_string();
    match width {
        Some(width) => console::truncate_str(&line, width, "…").into_owned(),
        None => line,
    }
}

/// Lays `columns` out in `width` (none: no limit). Columns are left out by `drop_order`,
/// then the first column (the name) is cut, then whole lines.
fn layout(mut columns: Vec<Column>, width: Option<usize>, style: Styler<'_>) -> Vec<String> {
    escape_cells(&mut columns);
    if let Some(width) = width {
        drop_columns_to_fit(&mut columns, width);
    }
    let widths = fitted_widths(&columns, width);
    let rows = columns.first().map_or(0, |column| column.cells.len());
    let render = |cells: Vec<&str>, header: bool| {
        let line = render_line(&cells, &columns, &widths, width);
        if header {
            style(Style::new().bold(), &line)
        } else {
            line
        }
    };
    let mut lines = vec![render(
        columns.iter().map(|column| column.header).collect(),
        true,
    )];
    for row in 0..rows {
        lines.push(render(
            columns
                .iter()
                .map(|column| column.cells[row].as_str())
                .collect(),
            false,
        ));
    }
    lines
}

/// What a table shows for a figure that is unknown.
pub const UNKNOWN: &str = "-";

/// `value` shown, or [`UNKNOWN`].
pub fn or_unknown<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| UNKNOWN.to_string(), show)
}

/// `first / second`, each shown or [`UNKNOWN`]; [`UNKNOWN`] alone when both are.
pub fn pair(first: Option<u64>, second: Option<u64>, show: fn(u64) -> String) -> String {
    match (first, second) {
        (None, None) => UNKNOWN.to_string(),
        _ => format!("{} / {}", or_unknown(first, show), or_unknown(second, show)),
    }
}

/// The last minute of a container's value as a sparkline cell.
fn container_spark(
    history: &History,
    row: &ContainerRow,
    value: fn(&ContainerValues) -> Option<f64>,
    top: impl Fn(&[Option<f64>]) -> f64,
) -> String {
    let values = history.container_recent(&row.id, sparkline::SPAN_SECONDS, value);
    sparkline::sparkline(&values, sparkline::WIDTH, top(&values))
}

/// The largest known value, or `floor` when none is larger.
fn peak(values: &[Option<f64>], floor: f64) -> f64 {
    values.iter().flatten().copied().fold(floor, f64::max)
}

/// The container table's columns, with the sparkline columns when there is a `history`.
fn container_columns(containers: &[ContainerRow], history: Option<&History>) -> Vec<Column> {
    let cells = |show: &dyn Fn(&ContainerRow) -> String| containers.iter().map(show).collect();
    let mut columns = vec![
        Column {
            header: "CONTAINER",
            cells: cells(&|row| row.name.clone()),
            right: false,
            drop_order: 0,
        },
        Column {
            header: "PROFILE",
            cells: cells(&|row| row.profile.clone().unwrap_or_else(|| UNKNOWN.into())),
            right: false,
            drop_order: 5,
        },
        Column {
            header: "CPU %",
            cells: cells(&|row| or_unknown(row.cpu_percent, |cpu| format!("{cpu:.1}%"))),
            right: true,
            drop_order: 0,
        },
        Column {
            header: "MEM USAGE / LIMIT",
            cells: cells(&|row| pair(row.memory_bytes, row.memory_limit_bytes, binary_compact)),
            right: true,
            drop_order: 0,
        },
        Column {
            header: "MEM %",
            cells: cells(&|row| match (row.memory_bytes, row.memory_limit_bytes) {
                (Some(used), Some(limit)) if limit > 0 => {
                    format!("{:.1}%", used as f64 / limit as f64 * 100.0)
                }
                _ => UNKNOWN.into(),
            }),
            right: true,
            drop_order: 3,
        },
        Column {
            header: "GPU MEM",
            cells: cells(&|row| or_unknown(row.gpu_memory_bytes, binary_compact)),
            right: true,
            drop_order: 1,
        },
        Column {
            header: "NET I/O",
            cells: cells(&|row| pair(row.net_rx_bytes, row.net_tx_bytes, decimal_compact)),
            right: true,
            drop_order: 6,
        },
        Column {
            header: "BLOCK I/O",
            cells: cells(&|row| pair(row.block_read_bytes, row.block_write_bytes, decimal_compact)),
            right: true,
            drop_order: 7,
        },
        Column {
            header: "PIDS",
            cells: cells(&|row| or_unknown(row.pids, |pids| pids.to_string())),
            right: true,
            drop_order: 4,
        },
    ];
    if let Some(history) = history {
        insert_container_sparklines(&mut columns, containers, history);
    }
    columns
}

/// Inserts the last minute of CPU and memory after their figures.
fn insert_container_sparklines(
    columns: &mut Vec<Column>,
    containers: &[ContainerRow],
    history: &History,
) {
    let cells = |show: &dyn Fn(&ContainerRow) -> String| containers.iter().map(show).collect();
    // CPU against 100 % (one core) or its peak; memory against its limit.
    columns.insert(
        3,
        Column {
            header: "CPU 1m",
            cells: cells(&|row| {
                container_spark(
                    history,
                    row,
                    |values| values.cpu_percent,
                    |values| peak(values, 100.0),
                )
            }),
            right: false,
            drop_order: 2,
        },
    );
    columns.insert(
        6,
        Column {
            header: "MEM 1m",
            cells: cells(&|row| {
                let limit = row.memory_limit_bytes.map(|limit| limit as f64);
                container_spark(
                    history,
                    row,
                    |values| values.memory_bytes.map(|bytes| bytes as f64),
                    |values| limit.unwrap_or_else(|| peak(values, 1.0)),
                )
            }),
            right: false,
            drop_order: 2,
        },
    );
}

/// The GPU table's columns, with the sparkline columns when there is a `history`.
fn gpu_columns(gpus: &[GpuRow], history: Option<&History>) -> Vec<Column> {
    let cells = |show: &dyn Fn(&GpuRow) -> String| gpus.iter().map(show).collect();
    let mut columns = vec![
        Column {
            header: "GPU",
            cells: cells(&|row| row.index.to_string()),
            right: false,
            drop_order: 0,
        },
        Column {
            header: "NAME",
            cells: cells(&|row| row.name.clone().unwrap_or_else(|| UNKNOWN.into())),
            right: false,
            drop_order: 5,
        },
        Column {
            header: "UTIL",
            cells: cells(&|row| {
                or_unknown(row.utilization_percent, |value| format!("{value:.0}%"))
            }),
            right: true,
            drop_order: 0,
        },
        Column {
            header: "MEM UTIL",
            cells: cells(&|row| {
                or_unknown(row.memory_utilization_percent, |value| {
                    format!("{value:.0}%")
                })
            }),
            right: true,
            drop_order: 4,
        },
        Column {
            header: "MEMORY",
            cells: cells(&|row| {
                pair(
                    row.memory_used_bytes,
                    row.memory_total_bytes,
                    binary_compact,
                )
            }),
            right: true,
            drop_order: 0,
        },
        Column {
            header: "TEMP",
            cells: cells(&|row| or_unknown(row.temperature_c, |value| format!("{value:.0}°C"))),
            right: true,
            drop_order: 1,
        },
        Column {
            header: "POWER",
            cells: cells(&power_cell),
            right: true,
            drop_order: 2,
        },
        Column {
            header: "CLOCKS SM/MEM",
            cells: cells(&clocks_cell),
            right: true,
            drop_order: 6,
        },
        Column {
            header: "THROTTLE",
            cells: cells(&throttle_cell),
            right: false,
            drop_order: 3,
        },
    ];
    if let Some(history) = history {
        insert_gpu_sparklines(&mut columns, gpus, history);
    }
    columns
}

/// Power draw and limit in watts.
fn power_cell(row: &GpuRow) -> String {
    match (row.power_w, row.power_limit_w) {
        (None, None) => UNKNOWN.into(),
        (draw, limit) => format!(
            "{} / {} W",
            or_unknown(draw, |value| format!("{value:.0}")),
            or_unknown(limit, |value| format!("{value:.0}"))
        ),
    }
}

/// SM and memory clocks in MHz.
fn clocks_cell(row: &GpuRow) -> String {
    match (row.sm_clock_mhz, row.memory_clock_mhz) {
        (None, None) => UNKNOWN.into(),
        (sm, memory) => format!(
            "{} / {} MHz",
            or_unknown(sm, |value| value.to_string()),
            or_unknown(memory, |value| value.to_string())
        ),
    }
}

/// The throttle reasons, "none", or unknown when NVML did not say.
fn throttle_cell(row: &GpuRow) -> String {
    if row.throttle_reasons_mask.is_none() {
        UNKNOWN.into()
    } else if row.throttle_reasons.is_empty() {
        "none".into()
    } else {
        row.throttle_reasons.join(",")
    }
}

/// Inserts the last minute of utilization and memory after their figures.
fn insert_gpu_sparklines(columns: &mut Vec<Column>, gpus: &[GpuRow], history: &History) {
    let cells = |show: &dyn Fn(&GpuRow) -> String| gpus.iter().map(show).collect();
    let spark = |row: &GpuRow, value: fn(&GpuValues) -> Option<f64>, top: f64| {
        let values = history.gpu_recent(row.index, sparkline::SPAN_SECONDS, value);
        sparkline::sparkline(&values, sparkline::WIDTH, top)
    };
    columns.insert(
        3,
        Column {
            header: "UTIL 1m",
            cells: cells(&|row| spark(row, |values| values.utilization_percent, 100.0)),
            right: false,
            drop_order: 2,
        },
    );
    columns.insert(
        6,
        Column {
            header: "MEM 1m",
            cells: cells(&|row| {
                let total = row.memory_total_bytes.map_or(0.0, |total| total as f64);
                spark(
                    row,
                    |values| values.memory_used_bytes.map(|bytes| bytes as f64),
                    total,
                )
            }),
            right: false,
            drop_order: 2,
        },
    );
}

/// The snapshot as lines: containers, a blank line, GPUs, then diagnoses and failures.
/// Every line fits `width` when one is given.
pub fn snapshot_lines(snapshot: &Snapshot, width: Option<usize>, style: Styler<'_>) -> Vec<String> {
    snapshot_lines_with(snapshot, None, width, style)
}

/// [`snapshot_lines`] with sparklines of the last minute of `history` (the live view's),
/// columns that go before the essentials when the terminal is narrow.
pub fn snapshot_lines_with(
    snapshot: &Snapshot,
    history: Option<&History>,
    width: Option<usize>,
    style: Styler<'_>,
) -> Vec<String> {
    let mut lines = Vec::new();
    if snapshot.containers.is_empty() {
        lines.push(style(Style::new().dim(), "no running containers to show"));
    } else {
        lines.extend(layout(
            container_columns(&snapshot.containers, history),
            width,
            style,
        ));
    }
    if !snapshot.gpus.is_empty() {
        lines.push(String::new());
        lines.extend(layout(gpu_columns(&snapshot.gpus, history), width, style));
    }
    let fit = |text: String| match width {
        Some(width) => console::truncate_str(&text, width, "…").into_owned(),
        None => text,
    };
    if !snapshot.ended.is_empty() {
        lines.push(String::new());
    }
    for ended in &snapshot.ended {
        let (mark, colour) = if ended.out_of_memory() {
            ("✗", Style::new().red().bold())
        } else {
            ("-", Style::new().dim())
        };
        lines.push(fit(format!(
            "{} {} stopped: {}",
            style(colour, mark),
            super::text::shown(&ended.name),
            ended.sentence()
        )));
    }
    if !snapshot.diagnoses.is_empty() {
        lines.push(String::new());
    }
    for diagnosis in &snapshot.diagnoses {
        let (mark, colour) = match diagnosis.severity {
            Severity::Warning => ("!", Style::new().yellow().bold()),
            Severity::Info => ("i", Style::new().cyan().bold()),
        };
        lines.push(fit(format!(
            "{} {} {}: {}",
            style(colour, mark),
            style(Style::new().bold(), &diagnosis.id),
            super::text::shown(&diagnosis.subject),
            diagnosis.message
        )));
        lines.push(fit(format!("    hint: {}", diagnosis.hint)));
    }
    lines
}

/// The live screen's first line: how many containers, how often, the time (UTC) and
/// the sample number.
pub fn header(
    taken: u64,
    containers: usize,
    interval: std::time::Duration,
    now: std::time::SystemTime,
) -> String {
    format!(
        "envctl stats · {containers} container{} · every {} · {} UTC · sample {taken} · q quits",
        if containers == 1 { "" } else { "s" },
        crate::monitor::duration::humanize(interval),
        crate::time::time_of_day_utc(crate::time::timestamp(now))
    )
}

/// A machine without an NVIDIA driver has no NVML: normal for a CPU-only host, so it is
/// said in one quiet line ([`NO_NVML`]), with NVML's own words only with `-v` (and always
/// in the JSON).
fn is_expected(failure: &crate::monitor::Failure) -> bool {
    failure.subject == crate::monitor::FailureSubject::Nvml
        && failure.kind == crate::monitor::FailureKind::LibraryNotFound
}

/// What `stats` says when there are no GPU readings because NVML is not there.
pub const NO_NVML: &str = "no GPU readings: NVML (the NVIDIA driver's library) is not on this host; `-v` says where it was looked for";

/// Failures as short lines (for the live view's foot; printed runs put them on stderr).
pub fn failure_lines(snapshot: &Snapshot, width: Option<usize>, style: Styler<'_>) -> Vec<String> {
    snapshot
        .failures
        .iter()
        .map(|failure| {
            let text = if is_expected(failure) {
                NO_NVML.to_string()
            } else {
                format!(
                    "{}: {} ({})",
                    failure.subject,
                    super::text::shown(&failure.message),
                    failure.kind
                )
            };
            let text = match width {
                Some(width) => console::truncate_str(&text, width, "…").into_owned(),
                None => text,
            };
            style(Style::new().dim(), &text)
        })
        .collect()
}

/// Prints one snapshot as plain text on stdout (the `--once` view, and each interval's
/// view when stdout is not a terminal); failures go to stderr as warnings.
pub fn print_snapshot(printer: &Printer, snapshot: &Snapshot) -> Result<(), Error> {
    for line in snapshot_text(printer, snapshot) {
        printer.data(&line)?;
    }
    say_failures(printer, snapshot);
    Ok(())
}

/// The data lines [`print_snapshot`] prints, for a caller that writes them itself.
pub fn snapshot_text(printer: &Printer, snapshot: &Snapshot) -> Vec<String> {
    let style = |style: Style, text: &str| printer.style_stdout(style, text);
    snapshot_lines(snapshot, printer.stdout_width(), &style)
}

/// The failures of [`print_snapshot`], on stderr.
pub fn say_failures(printer: &Printer, snapshot: &Snapshot) {
    for failure in &snapshot.failures {
        let text = format!("{}: {}", failure.subject, failure.message);
        if is_expected(failure) {
            printer.info(NO_NVML);
            printer.detail(&text);
        } else {
            printer.warn(&text);
        }
    }
}

/// The terminal while the live view runs; restored when dropped.
pub struct LiveScreen {
    raw_mode: bool,
}

impl LiveScreen {
    /// Switches to the alternate screen and hides the cursor; raw mode only when stdin is
    /// a terminal too (without one, keys cannot be read and Ctrl-C must stay a signal).
    pub fn enter() -> io::Result<LiveScreen> {
        let mut stdout = io::stdout().lock();
        queue!(stdout, terminal::EnterAlternateScreen, cursor::Hide)?;
        stdout.flush()?;
        let raw_mode = super::terminal::stdin_is_terminal() && terminal::enable_raw_mode().is_ok();
        Ok(LiveScreen { raw_mode })
    }

    /// Whether keys can be read (`q` quits).
    pub fn reads_keys(&self) -> bool {
        self.raw_mode
    }

    /// Redraws from the top-left corner, each line cleared to its end, and clears what
    /// an earlier, longer frame left below. Lines beyond the screen are left out.
    pub fn draw(&mut self, header: &str, lines: &[String]) -> io::Result<()> {
        let (rows, _) = super::terminal::size();
        let mut stdout = io::stdout().lock();
        queue!(stdout, cursor::MoveTo(0, 0))?;
        let room = usize::from(rows).saturating_sub(1);
        let mut shown: Vec<&str> = std::iter::once(header)
            .chain(lines.iter().map(String::as_str))
            .collect();
        if shown.len() > room.max(1) {
            shown.truncate(room.max(1));
        }
        for (position, line) in shown.iter().enumerate() {
            queue!(stdout, cursor::MoveTo(0, position as u16))?;
            stdout.write_all(line.as_bytes())?;
            queue!(stdout, terminal::Clear(terminal::ClearType::UntilNewLine))?;
        }
        queue!(
            stdout,
            cursor::MoveTo(0, shown.len() as u16),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        )?;
        stdout.flush()
    }
}

impl Drop for LiveScreen {
    fn drop(&mut self) {
        // Best effort: nothing else can restore the terminal if these fail.
        if self.raw_mode {
            let _ = terminal::disable_raw_mode();
        }
        let mut stdout = io::stdout().lock();
        let _ = queue!(stdout, cursor::Show, terminal::LeaveAlternateScreen);
        let _ = stdout.flush();
    }
}

/// The terminal's width for the live view.
pub fn screen_width() -> usize {
    usize::from(super::terminal::size().1)
}

/// Reads keys from stdin on a thread of its own and sends one message when the user asks
/// to quit (`q`, `Q`, Ctrl-C or Ctrl-D in raw mode). A plain thread rather than tokio's
/// stdin: a read blocked on a terminal would hold the runtime's shutdown until a key.
pub fn spawn_quit_reader() -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("envctl-keys".into())
        .spawn(move || {
            let mut byte = [0_u8; 1];
            let mut stdin = io::stdin().lock();
            while let Ok(1) = stdin.read(&mut byte) {
                if matches!(byte[0], b'q' | b'Q' | 0x03 | 0x04) {
                    let _ = sender.send(());
                    return;
                }
            }
        });
    // Without the thread, `q` is not read; Ctrl-C still arrives as a signal.
    drop(spawned);
    receiver
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::monitor::diagnosis::Diagnosis;

    fn plain(_: Style, text: &str) -> String {
        text.to_string()
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            time: 0.0,
            containers: vec![ContainerRow {
                id: "abc".into(),
                name: "envctl-pytorch-2.8-with-a-long-name".into(),
                profile: Some("pytorch-2.8".into()),
                cpu_percent: Some(98.54),
                memory_bytes: Some(1_288_490_188),
                memory_limit_bytes: Some(17_179_869_184),
                net_rx_bytes: Some(1_234),
                net_tx_bytes: Some(0),
                block_read_bytes: Some(0),
                block_write_bytes: Some(67_108_864),
                pids: Some(12),
                gpu_memory_bytes: Some(3_435_973_837),
                ..ContainerRow::default()
            }],
            gpus: vec![GpuRow {
                index: 0,
                name: Some("NVIDIA H100 80GB HBM3".into()),
                utilization_percent: Some(37.0),
                memory_utilization_percent: Some(12.0),
                memory_used_bytes: Some(2_147_483_648),
                memory_total_bytes: Some(85_520_809_984),
                temperature_c: Some(41.0),
                power_w: Some(71.234),
                power_limit_w: Some(700.0),
                throttle_reasons_mask: Some(1),
                throttle_reasons: vec!["gpu_idle".into()],
                ..GpuRow::default()
            }],
            diagnoses: vec![Diagnosis {
                id: "gpu-idle".into(),
                severity: Severity::Warning,
                subject: "envctl-pytorch".into(),
                message: "GPU 0 at most 0% busy".into(),
                evidence: Default::default(),
                hint: "look at it".into(),
            }],
            failures: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// Issue 31: no NVML is said in one quiet line, not only with `-v`.
    #[test]
    fn a_host_without_nvml_is_said_plainly() {
        let mut snapshot = snapshot();
        snapshot.failures.push(crate::monitor::Failure {
            subject: crate::monitor::FailureSubject::Nvml,
            kind: crate::monitor::FailureKind::LibraryNotFound,
            message: "libnvidia-ml.so.1: cannot open shared object file".into(),
        });
        assert_eq!(failure_lines(&snapshot, None, &plain), [NO_NVML]);
    }

    #[test]
    fn a_wide_terminal_shows_every_column() {
        let lines = snapshot_lines(&snapshot(), Some(200), &plain);
        assert!(lines[0].starts_with("CONTAINER"), "{lines:#?}");
        for header in ["PROFILE", "NET I/O", "BLOCK I/O", "PIDS", "GPU MEM"] {
            assert!(lines[0].contains(header), "{header}: {}", lines[0]);
        }
        assert!(lines[1].contains("98.5%"));
        assert!(lines[1].contains("1.2GiB / 16.0GiB"), "{}", lines[1]);
        assert!(lines[1].contains("1.2kB / 0B"), "{}", lines[1]);
        assert!(lines[1].contains("3.2GiB"), "{}", lines[1]);
        assert!(
            lines[4].contains("37%")
                && lines[4].contains("71 / 700 W")
                && lines[4].contains("gpu_idle"),
            "{}",
            lines[4]
        );
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with("! gpu-idle envctl-pytorch: GPU 0"))
        );
        assert!(lines.iter().any(|line| line == "    hint: look at it"));
    }

    #[test]
    fn a_narrow_terminal_drops_columns_before_cutting_names() {
        for width in [40, 60, 80, 100] {
            let lines = snapshot_lines(&snapshot(), Some(width), &plain);
            for line in &lines {
                assert!(
                    console::measure_text_width(line) <= width,
                    "{width}: `{line}`"
                );
            }
            // The essentials survive.
            assert!(lines[0].contains("CPU %"), "{width}: {}", lines[0]);
        }
        let lines = snapshot_lines(&snapshot(), Some(80), &plain);
        assert!(!lines[0].contains("BLOCK I/O"), "{}", lines[0]);
        assert!(lines[0].contains("GPU MEM"), "{}", lines[0]);
    }

    #[test]
    fn sparklines_show_the_last_minute_and_fit_any_width() {
        let mut history = History::new(Duration::from_secs(60), Duration::from_secs(1));
        let mut moment = snapshot();
        for second in 0..30 {
            moment.time = f64::from(second);
            moment.containers[0].cpu_percent = Some(f64::from(second) * 3.0);
            moment.gpus[0].utilization_percent = Some(if second < 15 { 0.0 } else { 100.0 });
            history.push(&moment);
        }
        let lines = snapshot_lines_with(&moment, Some(&history), Some(250), &plain);
        assert!(
            lines[0].contains("CPU 1m") && lines[0].contains("MEM 1m"),
            "{}",
            lines[0]
        );
        assert!(lines[3].contains("UTIL 1m"), "{lines:#?}");
        // GPU 0 idle, then busy: low blocks, then full ones, on its row.
        assert!(lines[4].contains("▁▁▁▁▁█████"), "{}", lines[4]);
        for width in [40, 60, 80, 100, 120, 160] {
            for line in snapshot_lines_with(&moment, Some(&history), Some(width), &plain) {
                assert!(
                    console::measure_text_width(&line) <= width,
                    "{width}: `{line}`"
                );
            }
        }
        // Without history, no sparkline columns.
        assert!(!snapshot_lines(&moment, Some(250), &plain)[0].contains("1m"));
    }

    #[test]
    fn units_match_docker_stats() {
        assert_eq!(binary_compact(0), "0B");
        assert_eq!(binary_compact(1536), "1.5KiB");
        assert_eq!(binary_compact(512 * 1024 * 1024), "512MiB");
        assert_eq!(decimal_compact(999), "999B");
        assert_eq!(decimal_compact(1_234_567), "1.2MB");
    }
}
