//! Recording `stats` snapshots to a file and reading a recording back: the file I/O of
//! `--record FILE` and `stats report FILE`. The formats (CSV columns, JSON lines) and
//! their parsing are the pure `monitor::record`; opening goes through
//! `files::open_regular` (no link, no FIFO or device, never blocking in `open(2)`).

use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::files::{OpenRefused, open_for_appending, open_for_reading};
use crate::monitor::record::{
    CSV_COLUMNS, CsvLayout, MAX_RECORDING_BYTES, RecordError, RecordFormat, Recording,
    check_first_json_line, csv_lines, json_line, parse_csv, parse_json_lines,
};
use crate::monitor::snapshot::Snapshot;

/// [`open_regular`]'s refusal as the recording's error.
fn opened(result: Result<File, OpenRefused>, path: &Path) -> Result<File, RecordError> {
    result.map_err(|refused| match refused {
        OpenRefused::NotRegular { kind } => RecordError::NotRegular {
            path: path.to_path_buf(),
            kind,
        },
        OpenRefused::Io(source) => RecordError::Open {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// An open recording.
#[derive(Debug)]
pub struct Recorder {
    file: File,
    path: PathBuf,
    format: RecordFormat,
    /// The columns of the file's header (CSV only).
    layout: CsvLayout,
}

impl Recorder {
    /// Opens `path` for appending, creating it (with the CSV header) when new.
    pub fn open(path: &Path) -> Result<Recorder, RecordError> {
        let format = RecordFormat::from_path(path)?;
        let open_error = |source| RecordError::Open {
            path: path.to_path_buf(),
            source,
        };
        // Never through a link: in a shared folder (`team/rec.csv`) a link another user
        // planted, even a dangling one, would have the recording create or append to the
        // file it points at, with this user's rights.
        let file = opened(open_for_appending(path), path)?;
        let length = file.metadata().map_err(open_error)?.len();
        let mut recorder = Recorder {
            file,
            path: path.to_path_buf(),
            format,
            layout: CsvLayout::Current,
        };
        if length == 0 {
            if format == RecordFormat::Csv {
                recorder.write(&format!("{}\n", CSV_COLUMNS.join(",")))?;
            }
            return Ok(recorder);
        }
        // Append only to what an earlier `--record` wrote: never to someone else's file
        // that happens to end in `.csv` or `.json`.
        recorder.file.seek(SeekFrom::Start(0)).map_err(open_error)?;
        match format {
            RecordFormat::Csv => {
                let mut start = vec![0; 4096];
                let read = recorder.file.read(&mut start).map_err(open_error)?;
                let text = String::from_utf8_lossy(&start[..read]);
                let header = text.lines().next().unwrap_or_default();
                // An earlier envctl's file keeps its columns: one table, not two.
                recorder.layout =
                    CsvLayout::of_header(header).ok_or_else(|| RecordError::Header {
                        path: path.to_path_buf(),
                        found: header.chars().take(80).collect(),
                    })?;
            }
            RecordFormat::JsonLines => {
                let (line, cut) = first_line(&recorder.file, length).map_err(open_error)?;
                check_first_json_line(path, &line, cut)?;
            }
        }
        // A recorder killed mid-line left no newline: start a fresh line so the cut one
        // stays alone and the reader can skip it.
        let mut last = [0_u8; 1];
        recorder
            .file
            .seek(SeekFrom::Start(length - 1))
            .map_err(open_error)?;
        recorder.file.read_exact(&mut last).map_err(open_error)?;
        if last[0] != b'\n' {
            recorder.write("\n")?;
        }
        Ok(recorder)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one snapshot and hands it to the kernel at once.
    pub fn append(&mut self, snapshot: &Snapshot) -> Result<(), RecordError> {
        let text = match self.format {
            RecordFormat::Csv => csv_lines(snapshot, self.layout),
            RecordFormat::JsonLines => json_line(snapshot),
        };
        self.write(&text)
    }

    fn write(&mut self, text: &str) -> Result<(), RecordError> {
        // One `write_all` of the whole interval: whole lines or nothing on a kill, short
        // of a full disk.
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| RecordError::Write {
                path: self.path.clone(),
                source,
            })
    }
}

/// How much of an existing JSON-lines file is read to find its first line: far more than
/// a snapshot of hundreds of containers takes.
pub(crate) const FIRST_LINE_LIMIT: u64 = 16 * 1024 * 1024;

/// The first line of `file` that is not blank (empty when there is none), read no further
/// than [`FIRST_LINE_LIMIT`], and whether it is cut: the file ends inside it.
fn first_line(file: &File, length: u64) -> std::io::Result<(String, bool)> {
    let mut reader = std::io::BufReader::new(file.take(FIRST_LINE_LIMIT));
    let mut consumed = 0_u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        consumed += read as u64;
        let text = String::from_utf8_lossy(&line);
        if read == 0 || !text.trim().is_empty() {
            let cut = !line.ends_with(b"\n") && consumed == length;
            return Ok((text.trim_end_matches(['\r', '\n']).to_string(), cut));
        }
    }
}

/// Reads a recording written by [`Recorder`], in the format its extension names: a
/// regular file of at most [`MAX_RECORDING_BYTES`].
pub fn read_recording(path: &Path) -> Result<Recording, RecordError> {
    let format = RecordFormat::from_path(path)?;
    // A recording that cannot be opened is bad input (exit 2), not a failed write.
    let file = opened(open_for_reading(path), path).map_err(|error| match error {
        RecordError::Open { path, source } => RecordError::Read { path, source },
        other => other,
    })?;
    let read_error = |source| RecordError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || RecordError::TooLarge {
        path: path.to_path_buf(),
        limit: MAX_RECORDING_BYTES,
    };
    if file.metadata().map_err(read_error)?.len() > MAX_RECORDING_BYTES {
        return Err(too_large());
    }
    // Bounded again while reading: a file still growing stops at the limit.
    let mut bytes = Vec::new();
    file.take(MAX_RECORDING_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_RECORDING_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes)
        .map_err(|error| read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, error)))?;
    let recording = match format {
        RecordFormat::JsonLines => parse_json_lines(&text),
        RecordFormat::Csv => parse_csv(path, &text)?,
    };
    if recording.snapshots.is_empty() {
        if !recording.skipped.is_empty() {
            return Err(RecordError::Unreadable {
                path: path.to_path_buf(),
                skipped: recording.skipped,
            });
        }
        return Err(RecordError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(recording)
}

/// Writes the drawing to `output` whole (`crate::files`): an existing file only with
/// `force`, and never anything but a regular file.
pub fn write_report(output: &Path, drawn: &str, force: bool) -> Result<(), crate::error::Error> {
    let existing = if force {
        crate::files::Existing::Replace
    } else {
        crate::files::Existing::Refuse
    };
    crate::files::write_atomically(output, drawn.as_bytes(), existing).map_err(|error| {
        crate::error::Error::from_write(
            output,
            error,
            "pass `--force` to replace it, or choose another `-o` path",
        )
    })
}
