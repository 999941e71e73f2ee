//! `--record FILE`: snapshots appended as CSV or JSON lines, chosen by the extension, and
//! read back by `stats report`.
//!
//! Each interval's lines go out in one `write` on a file opened for appending, so a
//! killed recorder leaves every earlier line whole; at worst the last line is cut, and
//! the reader skips it (and says so). Reopening a file whose last line was cut starts on
//! a fresh line. An existing file is appended to only when an earlier `--record` wrote it
//! (the CSV header, or a first JSON line with `schema_version` and a snapshot's fields);
//! reading one back skips, and names, lines holding an infinite or NaN number.
//!
//! CSV is long-form: one row per container and per GPU per moment, `kind` telling which,
//! the other kind's columns left empty, so spreadsheets and pandas read it as is. A
//! followed container that stopped gets one `ended` row, at the sample it was first seen
//! stopped, with `status`, `exit_code` and `oom_killed` (the OOM killer's mark); JSON
//! lines carry the same as each snapshot's `ended`. Rows are written and read by the `csv`
//! crate through one row struct whose fields are the columns.
//!
//! A file begun before the `ended` columns existed ([`CSV_COLUMNS_BEFORE_ENDED`]) is read
//! as before and appended to in its own layout, without `ended` rows, so it stays one
//! table.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::snapshot::{ContainerRow, EndedContainer, GpuRow, Snapshot};

/// The CSV header, in column order.
pub const CSV_COLUMNS: &[&str] = &[
    "time",
    "kind",
    "id",
    "name",
    "profile",
    "gpu_index",
    "cpu_percent",
    "memory_bytes",
    "memory_limit_bytes",
    "net_rx_bytes",
    "net_tx_bytes",
    "block_read_bytes",
    "block_write_bytes",
    "pids",
    "gpu_memory_bytes",
    "utilization_percent",
    "memory_utilization_percent",
    "memory_used_bytes",
    "memory_total_bytes",
    "temperature_c",
    "power_w",
    "power_limit_w",
    "sm_clock_mhz",
    "memory_clock_mhz",
    "throttle_reasons",
    "status",
    "exit_code",
    "oom_killed",
];

/// How many of [`CSV_COLUMNS`] a recording had before the `ended` rows: the header of a
/// file an earlier envctl began.
pub const CSV_COLUMNS_BEFORE_ENDED: usize = 25;

/// The columns of a CSV recording, as its header names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvLayout {
    /// [`CSV_COLUMNS`].
    Current,
    /// The first [`CSV_COLUMNS_BEFORE_ENDED`] of them: no `ended` rows.
    BeforeEnded,
}

impl CsvLayout {
    fn columns(self) -> &'static [&'static str] {
        match self {
            CsvLayout::Current => CSV_COLUMNS,
            CsvLayout::BeforeEnded => &CSV_COLUMNS[..CSV_COLUMNS_BEFORE_ENDED],
        }
    }

    /// The layout a header line names; none for any other line.
    pub fn of_header(header: &str) -> Option<CsvLayout> {
        [CsvLayout::Current, CsvLayout::BeforeEnded]
            .into_iter()
            .find(|layout| header == layout.columns().join(","))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    Csv,
    JsonLines,
}

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("`{path}` has no extension envctl records to (.csv, .jsonl, .ndjson or .json)")]
    UnknownExtension { path: PathBuf },
    #[error("cannot open the recording `{path}`")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write to the recording `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the recording `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not an envctl CSV recording: its header is `{found}`")]
    Header { path: PathBuf, found: String },
    #[error("`{path}` is not an envctl JSON-lines recording: its first line is `{found}`")]
    NotJsonLines {
        path: PathBuf,
        found: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{path}` holds no samples")]
    Empty { path: PathBuf },
    /// Every line was skipped: the reasons, not "record first".
    #[error(
        "`{path}` holds no sample envctl can read: {} line{} skipped, the first (line {}) because {}",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        skipped.first().map_or(0, |(line, _)| *line),
        skipped.first().map_or("", |(_, why)| why.as_str())
    )]
    Unreadable {
        path: PathBuf,
        skipped: Vec<(usize, String)>,
    },
    #[error("`{path}` is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("the recording `{path}` is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
}

impl RecordError {
    /// Opening or writing the recording failed (as opposed to reading one).
    pub fn is_write(&self) -> bool {
        matches!(self, RecordError::Open { .. } | RecordError::Write { .. })
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            RecordError::UnknownExtension { .. } => {
                Some("name the file `….csv` for CSV or `….jsonl` for JSON lines".into())
            }
            RecordError::Header { .. } | RecordError::NotJsonLines { .. } => {
                Some("record to a new file, or to the one an earlier `--record` wrote".into())
            }
            RecordError::Empty { .. } => Some(
                "record first: `envctl stats --record FILE`, and let it run a few intervals".into(),
            ),
            RecordError::Unreadable { .. } => Some(
                "check that the file is a recording `envctl stats --record` wrote (.csv or .jsonl), and not another tool's".into(),
            ),
            RecordError::Open { .. } | RecordError::Write { .. } | RecordError::Read { .. } => {
                Some("check the path, its folder and their permissions".into())
            }
            RecordError::NotRegular { .. } => Some(
                "record to a regular file; to pipe the samples elsewhere, use `envctl stats --json` (one JSON line per interval on stdout)".into(),
            ),
            RecordError::TooLarge { .. } => Some(format!(
                "draw a part of it: keep the header and the last lines (`(head -n 1 FILE; tail -n 100000 FILE) > part.csv`); envctl reads at most {} MiB",
                MAX_RECORDING_BYTES / (1024 * 1024)
            )),
        }
    }
}

impl RecordFormat {
    /// `.csv` → CSV; `.jsonl`, `.ndjson`, `.json` → JSON lines.
    pub fn from_path(path: &Path) -> Result<RecordFormat, RecordError> {
        let extension = path
            .extension()
            .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
        match extension.as_deref() {
            Some("csv") => Ok(RecordFormat::Csv),
            Some("jsonl" | "ndjson" | "json") => Ok(RecordFormat::JsonLines),
            _ => Err(RecordError::UnknownExtension {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// A line as [`json_line`] writes it, read back strictly: `schema_version` and the
/// snapshot's own fields must all be there.
#[derive(serde::Deserialize)]
struct RecordedLine {
    #[serde(rename = "schema_version")]
    _schema_version: u32,
    #[serde(flatten)]
    _snapshot: Snapshot,
}

/// Whether `line`, the first line of an existing JSON-lines file, is one [`json_line`]
/// wrote. A file of blank lines is accepted (there is nothing in it to spoil), and so is a
/// `cut` line, where a recorder was killed in its first write, that begins the way
/// [`json_line`] does.
pub fn check_first_json_line(path: &Path, line: &str, cut: bool) -> Result<(), RecordError> {
    if line.trim().is_empty() {
        return Ok(());
    }
    let error = match serde_json::from_str::<RecordedLine>(line) {
        Ok(_) => return Ok(()),
        Err(error) => error,
    };
    if cut && error.is_eof() && line.starts_with("{\"schema_version\":") {
        return Ok(());
    }
    Err(RecordError::NotJsonLines {
        path: path.to_path_buf(),
        found: line.chars().take(80).collect(),
        source: error,
    })
}

/// One JSON document on one line, with `schema_version` like every `--json` output.
pub fn json_line(snapshot: &Snapshot) -> String {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        schema_version: u32,
        #[serde(flatten)]
        snapshot: &'a Snapshot,
    }
    let line = Line {
        schema_version: super::SCHEMA_VERSION,
        snapshot,
    };
    // Serialising plain data with string keys cannot fail.
    match serde_json::to_string(&line) {
        Ok(text) => format!("{text}\n"),
        Err(error) => format!("{{\"error\":\"{error}\"}}\n"),
    }
}

/// One CSV row, its fields named and ordered as [`CSV_COLUMNS`]; a container's row leaves
/// the GPU columns empty and a GPU's row the container columns.
///
/// `time` and `gpu_index` stay text so that a reader can name an unreadable one (the row
/// is skipped); every other number reads as unknown when its cell is empty or unreadable.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CsvRecord {
    time: String,
    kind: String,
    id: String,
    name: String,
    profile: String,
    gpu_index: String,
    #[serde(with = "cell")]
    cpu_percent: Option<f64>,
    #[serde(with = "cell")]
    memory_bytes: Option<u64>,
    #[serde(with = "cell")]
    memory_limit_bytes: Option<u64>,
    #[serde(with = "cell")]
    net_rx_bytes: Option<u64>,
    #[serde(with = "cell")]
    net_tx_bytes: Option<u64>,
    #[serde(with = "cell")]
    block_read_bytes: Option<u64>,
    #[serde(with = "cell")]
    block_write_bytes: Option<u64>,
    #[serde(with = "cell")]
    pids: Option<u64>,
    #[serde(with = "cell")]
    gpu_memory_bytes: Option<u64>,
    #[serde(with = "cell")]
    utilization_percent: Option<f64>,
    #[serde(with = "cell")]
    memory_utilization_percent: Option<f64>,
    #[serde(with = "cell")]
    memory_used_bytes: Option<u64>,
    #[serde(with = "cell")]
    memory_total_bytes: Option<u64>,
    #[serde(with = "cell")]
    temperature_c: Option<f64>,
    #[serde(with = "cell")]
    power_w: Option<f64>,
    #[serde(with = "cell")]
    power_limit_w: Option<f64>,
    #[serde(with = "cell")]
    sm_clock_mhz: Option<u32>,
    #[serde(with = "cell")]
    memory_clock_mhz: Option<u32>,
    /// `gpu_idle|sw_power_cap`.
    throttle_reasons: String,
    /// An `ended` row's state word (`exited`, `dead`); absent from a file an earlier
    /// envctl began, as are the two after it.
    #[serde(default)]
    status: String,
    #[serde(default, with = "cell")]
    exit_code: Option<i64>,
    /// `true` when the kernel's OOM killer ended the container, `false` when it did not,
    /// empty when the daemon did not say.
    #[serde(default, with = "cell")]
    oom_killed: Option<bool>,
}

/// A number's cell: written as Rust prints it (`2`, not the `2.0` csv's own float writer
/// would give), empty for unknown; read back as unknown when empty or unreadable, as a
/// spreadsheet's stray text in one cell must not cost the whole row.
mod cell {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.collect_str(value),
            None => serializer.serialize_str(""),
        }
    }

    pub fn deserialize<'de, T: FromStr, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<T>, D::Error> {
        let text = String::deserialize(deserializer)?;
        // Unreadable is unknown: the reader's rule for every number but time and index.
        Ok(text.parse().ok())
    }
}

/// A cell's text with line breaks made spaces: a recording keeps one row per line, so
/// a killed recorder's cut line stays alone and the reader skips just that one.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

impl CsvRecord {
    fn container(time: &str, row: &ContainerRow) -> CsvRecord {
        CsvRecord {
            time: time.to_string(),
            kind: "container".into(),
            id: one_line(&row.id),
            name: one_line(&row.name),
            profile: one_line(row.profile.as_deref().unwrap_or_default()),
            cpu_percent: row.cpu_percent,
            memory_bytes: row.memory_bytes,
            memory_limit_bytes: row.memory_limit_bytes,
            net_rx_bytes: row.net_rx_bytes,
            net_tx_bytes: row.net_tx_bytes,
            block_read_bytes: row.block_read_bytes,
            block_write_bytes: row.block_write_bytes,
            pids: row.pids,
            gpu_memory_bytes: row.gpu_memory_bytes,
            ..CsvRecord::default()
        }
    }

    fn gpu(time: &str, row: &GpuRow) -> CsvRecord {
        CsvRecord {
            time: time.to_string(),
            kind: "gpu".into(),
            id: one_line(row.uuid.as_deref().unwrap_or_default()),
            name: one_line(row.name.as_deref().unwrap_or_default()),
            gpu_index: row.index.to_string(),
            utilization_percent: row.utilization_percent,
            memory_utilization_percent: row.memory_utilization_percent,
            memory_used_bytes: row.memory_used_bytes,
            memory_total_bytes: row.memory_total_bytes,
            temperature_c: row.temperature_c,
            power_w: row.power_w,
            power_limit_w: row.power_limit_w,
            sm_clock_mhz: row.sm_clock_mhz,
            memory_clock_mhz: row.memory_clock_mhz,
            throttle_reasons: one_line(&row.throttle_reasons.join("|")),
            ..CsvRecord::default()
        }
    }

    fn ended(time: &str, end: &EndedContainer) -> CsvRecord {
        CsvRecord {
            time: time.to_string(),
            kind: "ended".into(),
            id: one_line(&end.id),
            name: one_line(&end.name),
            profile: one_line(end.profile.as_deref().unwrap_or_default()),
            status: one_line(&end.status),
            exit_code: end.exit_code,
            oom_killed: end.oom_killed,
            ..CsvRecord::default()
        }
    }
}

/// One row as CSV text ended by `\n`, without a header (the recorder writes
/// [`CSV_COLUMNS`] once, to a new file), quoting (RFC 4180) only cells holding a comma or
/// a quote. Rows of strings and numbers into memory cannot fail; were one to, its error
/// is written instead, as a line the reader skips and names.
fn csv_row(row: &impl Serialize) -> String {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .terminator(csv::Terminator::Any(b'\n'))
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(Vec::new());
    let written = writer
        .serialize(row)
        .map_err(|error| error.to_string())
        .and_then(|()| writer.into_inner().map_err(|error| error.to_string()));
    match written {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => format!("{}\n", one_line(&error)),
    }
}

/// The rows of one snapshot: its containers, its GPUs, and an `ended` row for each end
/// first seen at this sample (a snapshot carries every end of the run so far; the CSV
/// names each once, at the sample where the container was found stopped).
pub fn csv_lines(snapshot: &Snapshot, layout: CsvLayout) -> String {
    let time = snapshot.time.to_string();
    let containers = snapshot
        .containers
        .iter()
        .map(|container| CsvRecord::container(&time, container));
    let gpus = snapshot.gpus.iter().map(|gpu| CsvRecord::gpu(&time, gpu));
    let rows = containers.chain(gpus).map(|row| csv_row(&row));
    match layout {
        CsvLayout::Current => {
            let ended = snapshot
                .ended
                .iter()
                .filter(|end| end.time == snapshot.time)
                .map(|end| csv_row(&CsvRecord::ended(&time, end)));
            rows.chain(ended).collect()
        }
        // The older file has no room for an end; its container and GPU rows are the same
        // cells less the three empty ones that end them.
        CsvLayout::BeforeEnded => rows.map(|row| before_ended(&row)).collect(),
    }
}

/// A container's or GPU's row (`…,,,\n`: no `status`, `exit_code`, `oom_killed`) in the
/// layout of [`CSV_COLUMNS_BEFORE_ENDED`] columns.
fn before_ended(row: &str) -> String {
    let empty_tail = ",".repeat(CSV_COLUMNS.len() - CSV_COLUMNS_BEFORE_ENDED) + "\n";
    match row.strip_suffix(&empty_tail) {
        Some(kept) => format!("{kept}\n"),
        // Only an error's line, which the reader skips anyway, ends otherwise.
        None => row.to_string(),
    }
}

/// A recording read back, and the lines that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub snapshots: Vec<Snapshot>,
    /// (line number, why), e.g. the last line of a killed recorder.
    pub skipped: Vec<(usize, String)>,
}

/// The largest recording `stats report` reads: about two days of 10 containers and a GPU
/// each second in CSV. Past it the reading would only grow, so it is an error.
pub const MAX_RECORDING_BYTES: u64 = 256 * 1024 * 1024;

/// JSON lines into snapshots; lines that are not one are skipped and named.
pub fn parse_json_lines(text: &str) -> Recording {
    let mut recording = Recording::default();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Snapshot>(line) {
            Ok(snapshot) => match snapshot_non_finite(&snapshot) {
                None => recording.snapshots.push(snapshot),
                Some(why) => recording.skipped.push((number + 1, why)),
            },
            Err(error) => recording.skipped.push((number + 1, error.to_string())),
        }
    }
    recording
}

/// Why a value cannot be drawn or summed, naming the first number in `values` that is
/// infinite or NaN: `cpu_percent is inf, not a finite number`.
fn first_non_finite<const N: usize>(values: [(&str, Option<f64>); N]) -> Option<String> {
    values.into_iter().find_map(|(name, value)| {
        value
            .filter(|value| !value.is_finite())
            .map(|value| format!("{name} is {value}, not a finite number"))
    })
}

fn container_non_finite(row: &ContainerRow) -> Option<String> {
    first_non_finite([
        ("cpu_percent", row.cpu_percent),
        ("cpu_limit_cores", row.cpu_limit_cores),
    ])
    .map(|why| format!("container `{}`: {why}", row.name))
}

fn gpu_non_finite(row: &GpuRow) -> Option<String> {
    first_non_finite([
        ("utilization_percent", row.utilization_percent),
        ("memory_utilization_percent", row.memory_utilization_percent),
        ("temperature_c", row.temperature_c),
        ("power_w", row.power_w),
        ("power_limit_w", row.power_limit_w),
    ])
    .map(|why| format!("GPU {}: {why}", row.index))
}

/// The first number in `snapshot` that is not finite, named. JSON has no spelling for
/// them, but a reader must not trust that: one infinite value would leave nothing to draw.
fn snapshot_non_finite(snapshot: &Snapshot) -> Option<String> {
    first_non_finite([("time", Some(snapshot.time))])
        .or_else(|| snapshot.containers.iter().find_map(container_non_finite))
        .or_else(|| snapshot.gpus.iter().find_map(gpu_non_finite))
        .or_else(|| {
            snapshot.diagnoses.iter().find_map(|diagnosis| {
                diagnosis.evidence.iter().find_map(|(name, value)| {
                    first_non_finite([(name.as_str(), Some(*value))]).map(|why| {
                        format!(
                            "diagnosis `{}` of {}: {why}",
                            diagnosis.id, diagnosis.subject
                        )
                    })
                })
            })
        })
}

/// One CSV row read back, before it joins the snapshot of its time.
enum CsvRow {
    Container(ContainerRow),
    Gpu(GpuRow),
    Ended(EndedContainer),
}

/// The cells of one line of a recording. Lines are read one at a time, not the file as
/// one CSV stream: a killed recorder's cut line may end inside a quoted cell, and must not
/// swallow the rows appended after it.
fn line_record(line: &str) -> Result<csv::StringRecord, csv::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        // `\n` only: `lines()` took it (and a `\r` before it) away, and a lone `\r` is
        // text in a cell, as in the line-based format.
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(line.as_bytes());
    let mut record = csv::StringRecord::new();
    reader.read_record(&mut record)?;
    Ok(record)
}

/// A CSV recording into snapshots: the header names the layout (a recording from before
/// `ended` rows is read too); each line that is not a row of it is skipped and named.
pub fn parse_csv(path: &Path, text: &str) -> Result<Recording, RecordError> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, line)| line).unwrap_or_default();
    let layout = CsvLayout::of_header(header).ok_or_else(|| RecordError::Header {
        path: path.to_path_buf(),
        found: header.chars().take(80).collect(),
    })?;
    let names = layout.columns();
    let columns = csv::StringRecord::from(names);
    let mut recording = Recording::default();
    for (number, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match csv_line(line, names, &columns) {
            Ok((time, row)) => recording.add(time, row),
            Err(why) => recording.skipped.push((number + 1, why)),
        }
    }
    Ok(recording)
}

impl Recording {
    /// Adds `row` to the snapshot at `time`: the last one when it has that time, else a
    /// new one (rows of one sample are written together).
    fn add(&mut self, time: f64, row: CsvRow) {
        if self.snapshots.last().is_none_or(|last| last.time != time) {
            self.snapshots.push(Snapshot {
                time,
                ..Snapshot::default()
            });
        }
        let Some(snapshot) = self.snapshots.last_mut() else {
            return;
        };
        match row {
            CsvRow::Container(container) => snapshot.containers.push(container),
            CsvRow::Gpu(gpu) => snapshot.gpus.push(gpu),
            CsvRow::Ended(end) => snapshot.ended.push(end),
        }
    }
}

/// One line of a CSV recording whose header has the columns `names` (`columns` as a
/// record): its time and row, or why it is skipped.
fn csv_line(
    line: &str,
    names: &[&str],
    columns: &csv::StringRecord,
) -> Result<(f64, CsvRow), String> {
    let record = line_record(line).map_err(|error| error.to_string())?;
    if record.len() != names.len() {
        return Err(format!(
            "{} cells where the header has {}",
            record.len(),
            names.len()
        ));
    }
    let cells: CsvRecord = record
        .deserialize(Some(columns))
        .map_err(|error| error.to_string())?;
    let Ok(time) = cells.time.parse::<f64>() else {
        return Err(format!("`{}` is not a time", cells.time));
    };
    let row = csv_row_of(cells, time)?;
    // `inf` and `NaN` parse as floats, and one of them leaves no chart to draw.
    let non_finite = first_non_finite([("time", Some(time))]).or_else(|| match &row {
        CsvRow::Container(container) => container_non_finite(container),
        CsvRow::Gpu(gpu) => gpu_non_finite(gpu),
        CsvRow::Ended(_) => None,
    });
    match non_finite {
        Some(why) => Err(why),
        None => Ok((time, row)),
    }
}

/// The row that `cells` hold, by their kind (`container`, `gpu`, `ended`), sampled at
/// `time`; why not, for an unknown kind or a GPU row without its index.
fn csv_row_of(cells: CsvRecord, time: f64) -> Result<CsvRow, String> {
    Ok(match cells.kind.as_str() {
        "container" => CsvRow::Container(ContainerRow {
            id: cells.id,
            name: cells.name,
            profile: Some(cells.profile).filter(|profile| !profile.is_empty()),
            cpu_percent: cells.cpu_percent,
            memory_bytes: cells.memory_bytes,
            memory_limit_bytes: cells.memory_limit_bytes,
            net_rx_bytes: cells.net_rx_bytes,
            net_tx_bytes: cells.net_tx_bytes,
            block_read_bytes: cells.block_read_bytes,
            block_write_bytes: cells.block_write_bytes,
            pids: cells.pids,
            gpu_memory_bytes: cells.gpu_memory_bytes,
            ..ContainerRow::default()
        }),
        "gpu" => CsvRow::Gpu(GpuRow {
            // A GPU row without its index cannot be told from GPU 0: skip it.
            index: cells
                .gpu_index
                .parse()
                .map_err(|_| format!("`{}` is not a GPU index", cells.gpu_index))?,
            uuid: Some(cells.id).filter(|uuid| !uuid.is_empty()),
            name: Some(cells.name).filter(|name| !name.is_empty()),
            utilization_percent: cells.utilization_percent,
            memory_utilization_percent: cells.memory_utilization_percent,
            memory_used_bytes: cells.memory_used_bytes,
            memory_total_bytes: cells.memory_total_bytes,
            temperature_c: cells.temperature_c,
            power_w: cells.power_w,
            power_limit_w: cells.power_limit_w,
            sm_clock_mhz: cells.sm_clock_mhz,
            memory_clock_mhz: cells.memory_clock_mhz,
            throttle_reasons: cells
                .throttle_reasons
                .split('|')
                .filter(|reason| !reason.is_empty())
                .map(String::from)
                .collect(),
            ..GpuRow::default()
        }),
        "ended" => CsvRow::Ended(EndedContainer {
            id: cells.id,
            name: cells.name,
            profile: Some(cells.profile).filter(|profile| !profile.is_empty()),
            time,
            status: cells.status,
            exit_code: cells.exit_code,
            oom_killed: cells.oom_killed,
        }),
        other => return Err(format!("unknown kind `{other}`")),
    })
}

/// Appends one row of cells as the recorder writes them, for tests that edit a row.
#[cfg(test)]
fn push_row(text: &mut String, cells: &[String]) {
    let cells: Vec<String> = cells.iter().map(|cell| one_line(cell)).collect();
    text.push_str(&csv_row(&cells));
}

/// Sample rows for the tests of this module and of the recorder that writes them
/// (`ops::stats::recording`, in the crate above): plain values, no I/O.
#[doc(hidden)]
pub mod fixtures {
    use super::*;

    /// A snapshot at `time` with one container and one GPU, with quotes and commas in
    /// its text.
    pub fn snapshot(time: f64) -> Snapshot {
        Snapshot {
            time,
            containers: vec![ContainerRow {
                id: "abc".into(),
                name: "train, \"quoted\"".into(),
                profile: Some("pytorch".into()),
                cpu_percent: Some(99.5),
                memory_bytes: Some(1 << 30),
                gpu_memory_bytes: Some(0),
                ..ContainerRow::default()
            }],
            gpus: vec![GpuRow {
                index: 1,
                name: Some("NVIDIA H100 80GB HBM3".into()),
                uuid: Some("GPU-1".into()),
                utilization_percent: Some(37.0),
                temperature_c: Some(41.0),
                throttle_reasons: vec!["gpu_idle".into(), "sw_power_cap".into()],
                ..GpuRow::default()
            }],
            ..Snapshot::default()
        }
    }

    /// The container of [`snapshot`] ended by the OOM killer at `time`.
    pub fn oom_end(time: f64) -> EndedContainer {
        EndedContainer {
            id: "abc".into(),
            name: "train, \"quoted\"".into(),
            profile: Some("pytorch".into()),
            time,
            status: "exited".into(),
            exit_code: Some(137),
            oom_killed: Some(true),
        }
    }

    /// One line's cells, for tests that edit a written row.
    pub fn split_csv(line: &str) -> Result<Vec<String>, csv::Error> {
        Ok(line_record(line)?.iter().map(String::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{oom_end, snapshot, split_csv};
    use super::*;

    /// One line of the current layout with `cells` set by column name, the rest empty.
    fn line_of(cells: &[(&str, &str)]) -> String {
        let row: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|column| {
                cells
                    .iter()
                    .find(|(name, _)| name == column)
                    .map_or_else(String::new, |(_, value)| value.to_string())
            })
            .collect();
        csv_row(&row).trim_end().to_string()
    }

    #[test]
    fn one_csv_line_is_a_row_or_the_reason_it_is_skipped() {
        let columns = csv::StringRecord::from(CSV_COLUMNS);
        let read = |line: &str| csv_line(line, CSV_COLUMNS, &columns);
        let why = |line: &str| read(line).err().unwrap_or_default();
        let Ok((time, row)) = read(&line_of(&[
            ("time", "2.5"),
            ("kind", "gpu"),
            ("gpu_index", "3"),
        ])) else {
            panic!("a GPU row");
        };
        assert_eq!(time, 2.5);
        assert!(matches!(row, CsvRow::Gpu(GpuRow { index: 3, .. })));
        assert_eq!(
            why("1,container"),
            format!("2 cells where the header has {}", CSV_COLUMNS.len())
        );
        assert_eq!(
            why(&line_of(&[("time", "soon"), ("kind", "gpu")])),
            "`soon` is not a time"
        );
        assert_eq!(
            why(&line_of(&[
                ("time", "1"),
                ("kind", "gpu"),
                ("gpu_index", "")
            ])),
            "`` is not a GPU index"
        );
        assert_eq!(
            why(&line_of(&[("time", "1"), ("kind", "volume")])),
            "unknown kind `volume`"
        );
        assert_eq!(
            why(&line_of(&[("time", "inf"), ("kind", "container")])),
            "time is inf, not a finite number"
        );
    }

    #[test]
    fn rows_of_one_time_share_a_snapshot() {
        let mut recording = Recording::default();
        recording.add(1.0, CsvRow::Gpu(GpuRow::default()));
        recording.add(1.0, CsvRow::Container(ContainerRow::default()));
        recording.add(2.0, CsvRow::Ended(oom_end(2.0)));
        let times: Vec<f64> = recording
            .snapshots
            .iter()
            .map(|snapshot| snapshot.time)
            .collect();
        assert_eq!(times, [1.0, 2.0]);
        assert_eq!(recording.snapshots[0].gpus.len(), 1);
        assert_eq!(recording.snapshots[0].containers.len(), 1);
        assert_eq!(recording.snapshots[1].ended.len(), 1);
    }

    #[test]
    fn the_row_names_the_header_columns_in_order() {
        let mut writer = csv::WriterBuilder::new().from_writer(Vec::new());
        writer.serialize(CsvRecord::default()).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next(), Some(CSV_COLUMNS.join(",").as_str()));
        // Numbers as Rust writes them, quotes only where a cell needs them, line breaks
        // made spaces.
        let mut odd = snapshot(2.0);
        odd.containers[0].name = "a\nb\"c".into();
        odd.containers[0].cpu_percent = Some(1.0);
        let line = csv_lines(&odd, CsvLayout::Current);
        assert!(
            line.starts_with("2,container,abc,\"a b\"\"c\",pytorch,,1,1073741824,,"),
            "{line}"
        );
        assert!(
            line.ends_with(
                ",GPU-1,NVIDIA H100 80GB HBM3,,1,,,,,,,,,,37,,,,41,,,,,gpu_idle|sw_power_cap,,,\n"
            ),
            "{line}"
        );
    }

    #[test]
    fn a_line_cut_inside_quotes_keeps_the_rows_after_it() {
        let whole = csv_lines(&snapshot(1.0), CsvLayout::Current);
        let cut = &whole[..whole.find("\"quoted").unwrap()];
        let text = format!(
            "{}\n{whole}{cut}\n{}",
            CSV_COLUMNS.join(","),
            csv_lines(&snapshot(2.0), CsvLayout::Current)
        );
        let recording = parse_csv(Path::new("x.csv"), &text).unwrap();
        assert_eq!(recording.snapshots.len(), 2, "{:?}", recording.skipped);
        assert_eq!(
            recording.snapshots[1].containers[0].name,
            "train, \"quoted\""
        );
        let skipped: Vec<usize> = recording.skipped.iter().map(|(line, _)| *line).collect();
        assert_eq!(skipped, vec![4], "{:?}", recording.skipped);
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(
            RecordFormat::from_path(Path::new("a.CSV")).unwrap(),
            RecordFormat::Csv
        );
        assert_eq!(
            RecordFormat::from_path(Path::new("a.jsonl")).unwrap(),
            RecordFormat::JsonLines
        );
        assert!(RecordFormat::from_path(Path::new("a.txt")).is_err());
        assert!(RecordFormat::from_path(Path::new("noextension")).is_err());
    }

    #[test]
    fn csv_round_trips_with_quotes_and_gaps() {
        let text = format!(
            "{}\n{}{}",
            CSV_COLUMNS.join(","),
            csv_lines(&snapshot(1.5), CsvLayout::Current),
            csv_lines(&snapshot(2.5), CsvLayout::Current)
        );
        let recording = parse_csv(Path::new("x.csv"), &text).unwrap();
        assert!(recording.skipped.is_empty(), "{:?}", recording.skipped);
        assert_eq!(recording.snapshots.len(), 2);
        let first = &recording.snapshots[0];
        assert_eq!(first.containers[0].name, "train, \"quoted\"");
        assert_eq!(first.containers[0].cpu_percent, Some(99.5));
        assert_eq!(first.containers[0].net_rx_bytes, None);
        assert_eq!(first.gpus[0].index, 1);
        assert_eq!(
            first.gpus[0].throttle_reasons,
            vec!["gpu_idle", "sw_power_cap"]
        );
        assert_eq!(first.gpus[0].temperature_c, Some(41.0));
    }

    #[test]
    fn a_cut_last_line_is_skipped_and_named() {
        let whole = json_line(&snapshot(1.0));
        let text = format!("{whole}{}", &whole[..whole.len() / 2]);
        let recording = parse_json_lines(&text);
        assert_eq!(recording.snapshots.len(), 1);
        assert_eq!(recording.skipped.len(), 1);
        assert_eq!(recording.skipped[0].0, 2);
    }

    #[test]
    fn lines_with_a_non_finite_number_are_skipped_and_named() {
        let good = csv_lines(&snapshot(1.0), CsvLayout::Current);
        let mut text = format!("{}\n{good}", CSV_COLUMNS.join(","));
        // Line 4: a container at CPU inf; 5: a GPU at NaN °C; 6 and 7: times out of range.
        for (column, value) in [(6, "inf"), (19, "NaN")] {
            let kind = if column == 6 { "container" } else { "gpu" };
            let line = good
                .lines()
                .find(|line| line.split(',').nth(1) == Some(kind))
                .unwrap();
            let mut cells = split_csv(line).unwrap();
            cells[0] = "2".into();
            cells[column] = value.into();
            push_row(&mut text, &cells);
        }
        for time in ["-inf", "1e999"] {
            let mut cells = split_csv(good.lines().last().unwrap()).unwrap();
            cells[0] = time.into();
            push_row(&mut text, &cells);
        }
        let recording = parse_csv(Path::new("x.csv"), &text).unwrap();
        assert_eq!(recording.snapshots.len(), 1, "{:?}", recording.snapshots);
        let skipped: Vec<usize> = recording.skipped.iter().map(|(line, _)| *line).collect();
        assert_eq!(skipped, vec![4, 5, 6, 7], "{:?}", recording.skipped);
        assert!(
            recording.skipped[0].1.contains("cpu_percent is inf"),
            "{:?}",
            recording.skipped
        );
        assert!(
            recording.skipped[1]
                .1
                .contains("GPU 1: temperature_c is NaN")
        );
        assert!(recording.skipped[2].1.contains("time is -inf"));
        assert!(recording.skipped[3].1.contains("time is inf"));

        // JSON cannot spell them, and a number too large for a float is not read either.
        let line = json_line(&snapshot(1.0)).replacen("99.5", "1e999", 1);
        let recording = parse_json_lines(&format!("{}{line}", json_line(&snapshot(0.0))));
        assert_eq!(recording.snapshots.len(), 1);
        assert_eq!(recording.skipped[0].0, 2, "{:?}", recording.skipped);
        // Values read some other way are checked all the same.
        let mut odd = snapshot(1.0);
        odd.gpus[0].power_w = Some(f64::NAN);
        assert_eq!(
            snapshot_non_finite(&odd).as_deref(),
            Some("GPU 1: power_w is NaN, not a finite number")
        );
        odd.time = f64::INFINITY;
        assert_eq!(
            snapshot_non_finite(&odd).as_deref(),
            Some("time is inf, not a finite number")
        );
        assert_eq!(snapshot_non_finite(&snapshot(1.7e308)), None);
    }

    #[test]
    fn a_gpu_row_without_an_index_is_skipped_not_taken_for_gpu_0() {
        let good = csv_lines(&snapshot(1.0), CsvLayout::Current);
        let gpu_line = good
            .lines()
            .find(|line| line.split(',').nth(1) == Some("gpu"))
            .unwrap();
        let mut cells = split_csv(gpu_line).unwrap();
        cells[0] = "2".into();
        cells[5] = "one".into();
        let mut text = format!("{}\n{good}", CSV_COLUMNS.join(","));
        push_row(&mut text, &cells);
        let recording = parse_csv(Path::new("x.csv"), &text).unwrap();
        assert_eq!(recording.skipped.len(), 1, "{:?}", recording.skipped);
        assert!(
            recording.skipped[0].1.contains("`one` is not a GPU index"),
            "{:?}",
            recording.skipped
        );
        assert!(
            recording
                .snapshots
                .iter()
                .all(|snapshot| snapshot.gpus.iter().all(|gpu| gpu.index != 0)),
            "no GPU 0 made up: {:?}",
            recording.snapshots
        );
    }

    #[test]
    fn an_end_is_one_ended_row_at_the_sample_it_was_seen_and_reads_back() {
        let mut first = snapshot(1.0);
        first.ended = vec![oom_end(1.0)];
        // The next sample still carries the end (JSON lines keep the run's ends); the CSV
        // names it once.
        let mut second = snapshot(2.0);
        second.containers.clear();
        second.ended = vec![oom_end(1.0)];
        let rows = format!(
            "{}{}",
            csv_lines(&first, CsvLayout::Current),
            csv_lines(&second, CsvLayout::Current)
        );
        let ended: Vec<&str> = rows
            .lines()
            .filter(|line| line.split(',').nth(1) == Some("ended"))
            .collect();
        assert_eq!(
            ended,
            vec![
                "1,ended,abc,\"train, \"\"quoted\"\"\",pytorch,,,,,,,,,,,,,,,,,,,,,exited,137,true"
            ],
            "{rows}"
        );
        let recording = parse_csv(
            Path::new("x.csv"),
            &format!("{}\n{rows}", CSV_COLUMNS.join(",")),
        )
        .unwrap();
        assert!(recording.skipped.is_empty(), "{:?}", recording.skipped);
        assert_eq!(recording.snapshots.len(), 2);
        assert_eq!(recording.snapshots[0].ended, vec![oom_end(1.0)]);
        assert!(recording.snapshots[1].ended.is_empty());
        // An end the daemon said nothing about stays unknown, not "not OOM".
        let mut unknown = oom_end(3.0);
        unknown.oom_killed = None;
        unknown.exit_code = None;
        let mut third = snapshot(3.0);
        third.ended = vec![unknown.clone()];
        let text = format!(
            "{}\n{}",
            CSV_COLUMNS.join(","),
            csv_lines(&third, CsvLayout::Current)
        );
        let recording = parse_csv(Path::new("x.csv"), &text).unwrap();
        assert_eq!(recording.snapshots[0].ended, vec![unknown]);
    }
}
