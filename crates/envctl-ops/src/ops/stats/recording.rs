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

/// The file side of recordings, tested with the formats of `monitor::record`.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::record::fixtures::{oom_end, snapshot, split_csv};
    use crate::monitor::record::*;

    #[test]
    fn a_recording_whose_every_line_fails_says_why() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("run.jsonl");
        std::fs::write(&path, "not json\n{\"also\": \"not a snapshot\"}\n").unwrap();
        let error = read_recording(&path).unwrap_err();
        match &error {
            RecordError::Unreadable { skipped, .. } => assert_eq!(skipped.len(), 2),
            other => panic!("{other:?}"),
        }
        let message = error.to_string();
        assert!(
            message.contains("2 lines skipped, the first (line 1) because"),
            "{message}"
        );
        assert!(!error.hint().unwrap_or_default().contains("record first"));
    }

    #[test]
    fn a_recording_is_never_created_or_appended_through_a_link() {
        let folder = tempfile::tempdir().unwrap();
        let elsewhere = folder.path().join("elsewhere.csv");
        let dangling = folder.path().join("rec.csv");
        std::os::unix::fs::symlink(&elsewhere, &dangling).unwrap();
        let error = Recorder::open(&dangling).unwrap_err();
        assert!(
            matches!(
                error,
                RecordError::NotRegular {
                    kind: "a symbolic link",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            !elsewhere.exists(),
            "nothing is created where the link points"
        );
        std::fs::write(&elsewhere, "").unwrap();
        assert!(Recorder::open(&dangling).is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    }

    #[test]
    fn appending_after_a_cut_line_starts_a_fresh_one() {
        let folder =
            std::env::temp_dir().join(format!("envctl-record-unit-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("cut.jsonl");
        let whole = json_line(&snapshot(1.0));
        std::fs::write(&path, format!("{whole}{}", &whole[..10])).unwrap();
        let mut recorder = Recorder::open(&path).unwrap();
        recorder.append(&snapshot(2.0)).unwrap();
        drop(recorder);
        let recording = read_recording(&path).unwrap();
        assert_eq!(recording.snapshots.len(), 2);
        assert_eq!(recording.skipped.len(), 1);
        // A CSV file with someone else's header is refused, not appended to.
        let foreign = folder.join("foreign.csv");
        std::fs::write(&foreign, "a,b,c\n1,2,3\n").unwrap();
        assert!(matches!(
            Recorder::open(&foreign),
            Err(RecordError::Header { .. })
        ));
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn only_an_envctl_json_lines_file_is_appended_to() {
        let folder = tempfile::TempDir::new().unwrap();
        let envctl_line = json_line(&snapshot(1.0));
        let refused = [
            (
                "package.json",
                "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\"\n}\n".to_string(),
            ),
            ("list.jsonl", "[1,2,3]\n".to_string()),
            ("text.ndjson", "hello\n".to_string()),
            // A snapshot, but not one `--record` wrote: no `schema_version`.
            (
                "bare.jsonl",
                format!("{}\n", serde_json::to_string(&snapshot(1.0)).unwrap()),
            ),
            // `schema_version`, but not a snapshot.
            (
                "other.json",
                "{\"schema_version\":1,\"name\":\"x\"}\n".to_string(),
            ),
            // Someone else's one-line file with no newline.
            ("cut-foreign.json", "{\"name\":\"x\"".to_string()),
        ];
        for (name, content) in &refused {
            let path = folder.path().join(name);
            std::fs::write(&path, content).unwrap();
            let error = Recorder::open(&path).unwrap_err();
            assert!(
                matches!(error, RecordError::NotJsonLines { .. }),
                "{name}: {error:?}"
            );
            assert!(!error.is_write(), "invalid input, exit 2");
            assert!(error.hint().unwrap().contains("new file"));
            assert!(
                std::error::Error::source(&error).is_some(),
                "{name}: the parse error is kept as the cause"
            );
            assert_eq!(&std::fs::read_to_string(&path).unwrap(), content, "{name}");
        }
        let package = Recorder::open(&folder.path().join("package.json")).unwrap_err();
        assert_eq!(
            package.to_string(),
            format!(
                "`{}` is not an envctl JSON-lines recording: its first line is `{{`",
                folder.path().join("package.json").display()
            )
        );

        let accepted = [
            ("ours.jsonl", envctl_line.clone()),
            ("crlf.jsonl", envctl_line.replace('\n', "\r\n")),
            ("blank-first.jsonl", format!("\n  \n{envctl_line}")),
            ("blank.jsonl", "\n\n".to_string()),
            // The recorder was killed in its very first write.
            ("cut.jsonl", envctl_line[..40].to_string()),
        ];
        for (name, content) in &accepted {
            let path = folder.path().join(name);
            std::fs::write(&path, content).unwrap();
            let mut recorder =
                Recorder::open(&path).unwrap_or_else(|error| panic!("{name}: {error:?}"));
            recorder.append(&snapshot(2.0)).unwrap();
            drop(recorder);
            let recording = read_recording(&path).unwrap();
            assert_eq!(
                recording.snapshots.last().map(|last| last.time),
                Some(2.0),
                "{name}"
            );
        }
        // A first line longer than what is read is not taken for a snapshot.
        let long = folder.path().join("long.jsonl");
        let mut content =
            "{\"schema_version\":1,\"time\":1,\"containers\":[],\"gpus\":[],\"x\":\"".to_string();
        content.push_str(&"a".repeat(FIRST_LINE_LIMIT as usize));
        content.push_str("\"}\n");
        std::fs::write(&long, &content).unwrap();
        assert!(matches!(
            Recorder::open(&long),
            Err(RecordError::NotJsonLines { .. })
        ));
    }

    #[test]
    fn a_file_begun_before_the_ended_columns_is_read_and_appended_to_in_its_layout() {
        let folder = tempfile::TempDir::new().unwrap();
        let path = folder.path().join("old.csv");
        let old_header = CSV_COLUMNS[..CSV_COLUMNS_BEFORE_ENDED].join(",");
        // A row as the earlier envctl wrote it: 25 cells.
        let old_row = "1,container,abc,train,pytorch,,99.5,1073741824,,,,,,,0,,,,,,,,,,";
        assert_eq!(old_row.split(',').count(), CSV_COLUMNS_BEFORE_ENDED);
        std::fs::write(&path, format!("{old_header}\n{old_row}\n")).unwrap();
        let mut later = snapshot(2.0);
        later.ended = vec![oom_end(2.0)];
        let mut recorder = Recorder::open(&path).unwrap();
        recorder.append(&later).unwrap();
        drop(recorder);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().next(), Some(old_header.as_str()), "{text}");
        for line in text.lines().skip(1) {
            assert_eq!(
                split_csv(line).unwrap().len(),
                CSV_COLUMNS_BEFORE_ENDED,
                "one table: {line}"
            );
        }
        assert!(!text.contains(",ended,"), "no room for an end: {text}");
        let recording = read_recording(&path).unwrap();
        assert!(recording.skipped.is_empty(), "{:?}", recording.skipped);
        assert_eq!(recording.snapshots.len(), 2);
        assert_eq!(
            recording.snapshots[0].containers[0].memory_bytes,
            Some(1 << 30)
        );
        assert_eq!(recording.snapshots[1].gpus[0].temperature_c, Some(41.0));
        assert!(
            recording
                .snapshots
                .iter()
                .all(|snapshot| snapshot.ended.is_empty())
        );
        // A row of the current width in the older file is named, not misread.
        let mut text = text;
        text.push_str(&csv_lines(&later, CsvLayout::Current));
        let recording = parse_csv(&path, &text).unwrap();
        assert!(
            recording.skipped[0]
                .1
                .contains("28 cells where the header has 25"),
            "{:?}",
            recording.skipped
        );
    }
}
