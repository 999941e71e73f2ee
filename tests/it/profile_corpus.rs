//! The profile corpus: every file of `tests/corpus/invalid/` must be refused with the
//! problems its header announces, every file of `tests/corpus/valid/` must be accepted and
//! resolve to what its header asserts. Plus generated inputs that do not belong in git
//! (deep nesting, more than 1 MiB, NUL bytes, invalid UTF-8, non-files) and property
//! tests that the validator and the syntax parsers never panic.
//!
//! Header lines of an invalid file:
//!
//! ```text
//! # expect: LINE:COL: <substring of the message>
//! # expect: parents/x.toml:LINE:COL: <substring>   (a problem reported in another file,
//! #                                                  relative to the corpus file's folder)
//! # expect-hint: <substring of some diagnostic's hint>
//! ```
//!
//! Header lines of a valid file (`{dir}` is the corpus folder's absolute path):
//!
//! ```text
//! # assert: <JSON pointer into `envctl profiles show FILE --json`> = <JSON value>
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use envctl::profile::diagnostic::Diagnostic;
use envctl::profile::file::{MAXIMUM_PROFILE_BYTES, decode_profile_bytes, read_profile_text};
use envctl::profile::image::ImageReference;
use envctl::profile::mounts::parse_mount_spec;
use envctl::profile::ports::parse_port_spec;
use envctl::profile::size::ByteSize;
use envctl::profile::validate::validate;
use proptest::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

const IMAGE_LINE: &str = "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\n";

// ---------------------------------------------------------------------------------------
// Running envctl
// ---------------------------------------------------------------------------------------

fn corpus_folder(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("corpus")
        .join(name)
}

/// The `*.toml` files directly in `folder` (helpers in `parents/` are not walked), sorted.
fn corpus_files(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// A working directory with no `./envctl/` and a config home of its own, so that only the
/// corpus and the bundled profiles are found.
fn sandbox() -> TempDir {
    let sandbox = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(sandbox.path().join("config")).unwrap();
    sandbox
}

fn envctl(sandbox: &TempDir) -> Command {
    let mut command = crate::support::cli::envctl();
    command
        .current_dir(sandbox.path())
        .env("NO_COLOR", "1")
        .env_remove("ENVCTL_PROFILE_PATH")
        .env("XDG_CONFIG_HOME", sandbox.path().join("config"))
        .args(["--color", "never"])
        .timeout(Duration::from_secs(20));
    command
}

/// What one run printed.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "exit code: {:?}\n--- stderr ---\n{}\n--- stdout ---\n{}",
            self.code,
            clip(&self.stderr),
            clip(&self.stdout)
        )
    }
}

/// Long outputs (a 10,000-character source line) are cut for failure messages.
fn clip(text: &str) -> String {
    const LIMIT: usize = 6000;
    if text.len() <= LIMIT {
        return text.to_string();
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

fn run(sandbox: &TempDir, arguments: &[&str]) -> Run {
    let output = envctl(sandbox).args(arguments).output().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn check(sandbox: &TempDir, file: &str) -> Run {
    run(sandbox, &["profiles", "check", file])
}

fn check_json(sandbox: &TempDir, file: &str) -> (Run, Result<Value, String>) {
    let run = run(sandbox, &["--json", "profiles", "check", file]);
    let json = serde_json::from_str(&run.stdout).map_err(|error| error.to_string());
    (run, json)
}

/// One diagnostic as rendered on stderr: `error: MESSAGE` then ` --> FILE:LINE:COL`.
#[derive(Debug)]
struct Rendered {
    location: String,
    message: String,
}

fn rendered_diagnostics(stderr: &str) -> Vec<Rendered> {
    let lines: Vec<&str> = stderr.lines().collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let message = pair[0].strip_prefix("error: ")?;
            let location = pair[1].trim_start().strip_prefix("--> ")?;
            Some(Rendered {
                location: location.to_string(),
                message: message.to_string(),
            })
        })
        .collect()
}

/// The diagnostics of the one file of a `profiles check --json` report.
fn json_diagnostics(report: &Value) -> Result<Vec<Value>, String> {
    if report["schema_version"] != 1 {
        return Err(format!("schema_version is {}", report["schema_version"]));
    }
    let files = report["files"]
        .as_array()
        .ok_or("no `files` array in the report")?;
    if files.len() != 1 {
        return Err(format!("{} entries in `files`, expected 1", files.len()));
    }
    files[0]["diagnostics"]
        .as_array()
        .cloned()
        .ok_or_else(|| "no `diagnostics` array".to_string())
}

/// Identical diagnostics (same file, place and message) said twice are noise.
fn duplicated_diagnostics(diagnostics: &[Value]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for diagnostic in diagnostics {
        let key = format!(
            "{}:{}:{}: {}",
            diagnostic["path"].as_str().unwrap_or_default(),
            diagnostic["line"],
            diagnostic["column"],
            diagnostic["message"].as_str().unwrap_or_default()
        );
        if !seen.insert(key.clone()) {
            duplicates.insert(key);
        }
    }
    duplicates.into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// Corpus headers
// ---------------------------------------------------------------------------------------

/// `# expect: [FILE:]LINE:COL: MESSAGE`.
#[derive(Debug)]
struct Expectation {
    /// Absolute, as envctl prints it.
    file: String,
    line: usize,
    column: usize,
    message: String,
}

impl Expectation {
    fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column)
    }

    fn matches_json(&self, diagnostic: &Value) -> bool {
        diagnostic["path"] == self.file.as_str()
            && diagnostic["line"] == self.line
            && diagnostic["column"] == self.column
            && diagnostic["message"]
                .as_str()
                .is_some_and(|message| message.contains(&self.message))
    }
}

struct InvalidHeader {
    expectations: Vec<Expectation>,
    hints: Vec<String>,
}

fn parse_invalid_header(path: &Path, text: &str) -> Result<InvalidHeader, String> {
    let folder = path.parent().unwrap();
    let mut header = InvalidHeader {
        expectations: Vec::new(),
        hints: Vec::new(),
    };
    for (index, line) in text.lines().enumerate() {
        if let Some(hint) = line.strip_prefix("# expect-hint: ") {
            header.hints.push(hint.trim().to_string());
            continue;
        }
        let Some(rest) = line.strip_prefix("# expect: ") else {
            continue;
        };
        let bad = || format!("line {}: malformed `# expect:` line: {line}", index + 1);
        let parts: Vec<&str> = rest.splitn(4, ':').collect();
        let number = |part: &str| part.trim().parse::<usize>().map_err(|_| bad());
        let (file, line_number, column, message) = if parts
            .first()
            .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit()))
        {
            let parts: Vec<&str> = rest.splitn(3, ':').collect();
            if parts.len() != 3 {
                return Err(bad());
            }
            (
                path.to_path_buf(),
                number(parts[0])?,
                number(parts[1])?,
                parts[2],
            )
        } else {
            if parts.len() != 4 {
                return Err(bad());
            }
            (
                folder.join(parts[0]),
                number(parts[1])?,
                number(parts[2])?,
                parts[3],
            )
        };
        let message = message.trim().to_string();
        if message.is_empty() {
            return Err(bad());
        }
        header.expectations.push(Expectation {
            file: file.display().to_string(),
            line: line_number,
            column,
            message,
        });
    }
    if header.expectations.is_empty() {
        return Err("no `# expect: LINE:COL: message` line".into());
    }
    Ok(header)
}

/// `# assert: POINTER = JSON`.
struct Assertion {
    pointer: String,
    value: Value,
}

fn parse_valid_header(path: &Path, text: &str) -> Result<Vec<Assertion>, String> {
    let folder = path.parent().unwrap().display().to_string();
    // `{dir}` goes inside JSON strings: escape it as JSON would.
    let escaped_folder = serde_json::to_string(&folder).unwrap();
    let escaped_folder = &escaped_folder[1..escaped_folder.len() - 1];
    let mut assertions = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("# assert: ") else {
            continue;
        };
        let (pointer, value) = rest
            .split_once(" = ")
            .ok_or_else(|| format!("line {}: malformed `# assert:` line: {line}", index + 1))?;
        let value =
            serde_json::from_str(&value.replace("{dir}", escaped_folder)).map_err(|error| {
                format!(
                    "line {}: the value is not JSON ({error}): {line}",
                    index + 1
                )
            })?;
        assertions.push(Assertion {
            pointer: pointer.trim().to_string(),
            value,
        });
    }
    if assertions.is_empty() {
        return Err("no `# assert: POINTER = VALUE` line".into());
    }
    Ok(assertions)
}

// ---------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------

/// What is wrong with how envctl handles one invalid corpus file (empty: all is well).
fn judge_invalid(sandbox: &TempDir, path: &Path) -> Vec<String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap();
    let header = match parse_invalid_header(path, &text) {
        Ok(header) => header,
        Err(problem) => return vec![format!("corpus file is malformed: {problem}")],
    };
    let mut problems = Vec::new();

    let plain = check(sandbox, &shown);
    if plain.code != Some(2) {
        problems.push(format!("expected exit code 2, got {:?}", plain.code));
    }
    let rendered = rendered_diagnostics(&plain.stderr);
    for expectation in &header.expectations {
        let location = expectation.location();
        let found = rendered.iter().any(|diagnostic| {
            diagnostic.location == location && diagnostic.message.contains(&expectation.message)
        });
        if !found {
            problems.push(format!(
                "stderr has no diagnostic `{}` at {location}",
                expectation.message
            ));
        }
    }
    if rendered.len() < header.expectations.len() {
        problems.push(format!(
            "stderr shows {} diagnostics (`error:` then `-->`), expected at least {}",
            rendered.len(),
            header.expectations.len()
        ));
    }
    if !plain.stderr.contains("error: invalid profile: ") {
        problems.push("stderr has no closing `error: invalid profile: N problems in …`".into());
    }
    if !problems.is_empty() {
        problems.push(format!("envctl printed:\n{}", plain.describe()));
        return problems;
    }

    let (json_run, report) = check_json(sandbox, &shown);
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            return vec![format!(
                "--json output is not JSON ({error}):\n{}",
                json_run.describe()
            )];
        }
    };
    if json_run.code != Some(2) {
        problems.push(format!(
            "--json: expected exit code 2, got {:?}",
            json_run.code
        ));
    }
    if report["valid"] != false || report["files"][0]["valid"] != false {
        problems.push("--json: `valid` is not false".into());
    }
    match json_diagnostics(&report) {
        Err(problem) => problems.push(format!("--json: {problem}")),
        Ok(diagnostics) => {
            if diagnostics.len() < header.expectations.len() {
                problems.push(format!(
                    "--json lists {} diagnostics, expected at least {}",
                    diagnostics.len(),
                    header.expectations.len()
                ));
            }
            if diagnostics.len() != rendered.len() {
                problems.push(format!(
                    "--json lists {} diagnostics but stderr shows {}",
                    diagnostics.len(),
                    rendered.len()
                ));
            }
            for expectation in &header.expectations {
                if !diagnostics
                    .iter()
                    .any(|diagnostic| expectation.matches_json(diagnostic))
                {
                    problems.push(format!(
                        "--json has no diagnostic `{}` at {}",
                        expectation.message,
                        expectation.location()
                    ));
                }
            }
            for hint in &header.hints {
                let found = diagnostics.iter().any(|diagnostic| {
                    diagnostic["hint"]
                        .as_str()
                        .is_some_and(|text| text.contains(hint.as_str()))
                });
                if !found {
                    problems.push(format!("--json has no diagnostic with the hint `{hint}`"));
                }
            }
            for duplicate in duplicated_diagnostics(&diagnostics) {
                problems.push(format!("a diagnostic is reported twice: {duplicate}"));
            }
        }
    }
    if !problems.is_empty() {
        problems.push(format!("envctl --json printed:\n{}", json_run.describe()));
    }
    problems
}

/// What is wrong with how envctl handles one valid corpus file (empty: all is well).
fn judge_valid(sandbox: &TempDir, path: &Path) -> Vec<String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap();
    let assertions = match parse_valid_header(path, &text) {
        Ok(assertions) => assertions,
        Err(problem) => return vec![format!("corpus file is malformed: {problem}")],
    };

    let plain = check(sandbox, &shown);
    if plain.code != Some(0) {
        return vec![format!(
            "expected `profiles check` to accept it (exit code 0):\n{}",
            plain.describe()
        )];
    }
    let (json_run, report) = check_json(sandbox, &shown);
    match report {
        Ok(report)
            if json_run.code == Some(0)
                && report["valid"] == true
                && report["files"][0]["valid"] == true
                && report["files"][0]["diagnostics"] == serde_json::json!([]) => {}
        _ => {
            return vec![format!(
                "`profiles check --json` does not report it valid:\n{}",
                json_run.describe()
            )];
        }
    }

    let shown_run = run(sandbox, &["--json", "profiles", "show", &shown]);
    let document: Value = match serde_json::from_str(&shown_run.stdout) {
        Ok(document) if shown_run.code == Some(0) => document,
        _ => {
            return vec![format!(
                "`profiles show --json` failed:\n{}",
                shown_run.describe()
            )];
        }
    };
    let mut problems = Vec::new();
    for assertion in &assertions {
        match document.pointer(&assertion.pointer) {
            Some(actual) if *actual == assertion.value => {}
            Some(actual) => problems.push(format!(
                "{}: expected {}, got {}",
                assertion.pointer, assertion.value, actual
            )),
            None => problems.push(format!(
                "{}: expected {}, but the pointer names nothing",
                assertion.pointer, assertion.value
            )),
        }
    }
    if !problems.is_empty() {
        problems.push(format!(
            "`profiles show --json` printed:\n{}",
            clip(&shown_run.stdout)
        ));
    }
    problems
}

fn report_failures(folder: &str, failures: &[(PathBuf, Vec<String>)], total: usize) {
    if failures.is_empty() {
        return;
    }
    let mut report = format!(
        "{} of {total} files of tests/corpus/{folder}/ are not handled as expected:\n",
        failures.len()
    );
    for (path, problems) in failures {
        let _ = writeln!(report, "\n=== {} ===", path.display());
        for problem in problems {
            let _ = writeln!(report, "- {problem}");
        }
    }
    panic!("{report}");
}

#[test]
fn invalid_corpus_files_are_refused_with_their_problems() {
    let folder = corpus_folder("invalid");
    let files = corpus_files(&folder);
    assert!(
        files.len() >= 40,
        "tests/corpus/invalid/ holds {} files, expected at least 40",
        files.len()
    );
    let sandbox = sandbox();
    let failures: Vec<(PathBuf, Vec<String>)> = files
        .iter()
        .map(|path| (path.clone(), judge_invalid(&sandbox, path)))
        .filter(|(_, problems)| !problems.is_empty())
        .collect();
    report_failures("invalid", &failures, files.len());
}

#[test]
fn valid_corpus_files_are_accepted_and_resolve_as_asserted() {
    let folder = corpus_folder("valid");
    let files = corpus_files(&folder);
    assert!(
        files.len() >= 15,
        "tests/corpus/valid/ holds {} files, expected at least 15",
        files.len()
    );
    let sandbox = sandbox();
    let failures: Vec<(PathBuf, Vec<String>)> = files
        .iter()
        .map(|path| (path.clone(), judge_valid(&sandbox, path)))
        .filter(|(_, problems)| !problems.is_empty())
        .collect();
    report_failures("valid", &failures, files.len());
}

/// One `profiles check` of every corpus file gives each file the verdict and diagnostics it
/// gets alone, and one invalid file makes the whole run exit 2.
#[test]
fn checking_many_files_at_once_judges_each_as_alone() {
    let sandbox = sandbox();
    let arguments: Vec<String> = corpus_files(&corpus_folder("valid"))
        .iter()
        .chain(&corpus_files(&corpus_folder("invalid")))
        .map(|path| path.display().to_string())
        .collect();
    let mut command = envctl(&sandbox);
    command
        .args(["--json", "profiles", "check"])
        .args(&arguments);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], false);
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), arguments.len());
    let mut failures = Vec::new();
    for (together, argument) in files.iter().zip(&arguments) {
        let (_, alone) = check_json(&sandbox, argument);
        let alone = alone.unwrap();
        if *together != alone["files"][0] {
            failures.push(format!(
                "{argument}:\n  checked with the others: {together}\n  checked alone:           {}",
                alone["files"][0]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Windows line endings change no line, column or message of the validator's own
/// diagnostics (library level, file by file). TOML syntax errors must stay on the same
/// lines.
#[test]
fn crlf_line_endings_report_the_same_places() {
    type Place = (usize, usize, String);
    let mut failures = Vec::new();
    for folder in ["valid", "invalid"] {
        for path in corpus_files(&corpus_folder(folder)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let crlf = text.replace('\n', "\r\n");
            let places = |diagnostics: Vec<Diagnostic>| -> Vec<Place> {
                diagnostics
                    .into_iter()
                    .map(|d| (d.line, d.column, d.message))
                    .collect()
            };
            let shown = path.display().to_string();
            let lf_places = places(validate(&shown, &text).1);
            let crlf_places = places(validate(&shown, &crlf).1);
            let syntax_error = lf_places
                .iter()
                .any(|(_, _, message)| message.starts_with("invalid TOML"));
            let same = if syntax_error {
                let lines = |places: &[Place]| -> BTreeSet<usize> {
                    places.iter().map(|(line, _, _)| *line).collect()
                };
                lines(&lf_places) == lines(&crlf_places)
            } else {
                lf_places == crlf_places
            };
            if !same {
                failures.push(format!(
                    "{shown}:\n  LF:   {lf_places:?}\n  CRLF: {crlf_places:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Generated inputs
// ---------------------------------------------------------------------------------------

/// Writes `bytes` as `name` in a fresh folder and checks it; returns the run, its JSON
/// report and the path as passed.
fn check_generated(name: &str, bytes: &[u8]) -> (Run, Value, String, TempDir) {
    let sandbox = sandbox();
    let path = sandbox.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let shown = path.display().to_string();
    let plain = check(&sandbox, &shown);
    let (json_run, report) = check_json(&sandbox, &shown);
    let report = report
        .unwrap_or_else(|error| panic!("--json is not JSON ({error}):\n{}", json_run.describe()));
    assert_eq!(
        json_run.code,
        Some(2),
        "--json run:\n{}",
        json_run.describe()
    );
    (plain, report, shown, sandbox)
}

/// Asserts a refusal: exit 2, and a diagnostic on `line` (at `column` when given) whose
/// message contains `message`, both on stderr and in the JSON report, each said once.
fn assert_refused(
    run: &Run,
    report: &Value,
    shown: &str,
    (line, column): (usize, Option<usize>),
    message: &str,
) {
    assert_eq!(
        run.code,
        Some(2),
        "expected exit code 2:\n{}",
        run.describe()
    );
    let place = match column {
        Some(column) => format!("{shown}:{line}:{column}"),
        None => format!("{shown}:{line}:"),
    };
    let rendered = rendered_diagnostics(&run.stderr);
    assert!(
        rendered.iter().any(|d| d.message.contains(message)
            && match column {
                Some(_) => d.location == place,
                None => d.location.starts_with(&place),
            }),
        "expected `{message}` at {place}:\n{}",
        run.describe()
    );
    let diagnostics = json_diagnostics(report).unwrap();
    assert!(
        diagnostics.iter().any(|d| d["path"] == shown
            && d["line"] == line
            && column.is_none_or(|column| d["column"] == column)
            && d["message"].as_str().is_some_and(|m| m.contains(message))),
        "--json lacks `{message}` at {place}: {}",
        clip(&report.to_string())
    );
    let duplicates = duplicated_diagnostics(&diagnostics);
    assert!(
        duplicates.is_empty(),
        "diagnostics reported more than once ({} diagnostics in all): {duplicates:?}",
        diagnostics.len()
    );
}

const DEPTH: usize = 10_000;

#[test]
fn deeply_nested_arrays_are_refused_without_crashing() {
    let text = format!(
        "{IMAGE_LINE}command = {}{}\n",
        "[".repeat(DEPTH),
        "]".repeat(DEPTH)
    );
    let (run, report, shown, _sandbox) = check_generated("deep-arrays.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    assert!(run.stderr.contains("recurs"), "{}", run.describe());
}

#[test]
fn deeply_nested_inline_tables_are_refused_without_crashing() {
    let text = format!(
        "{IMAGE_LINE}env = {}\"1\"{}\n",
        "{ a = ".repeat(DEPTH),
        " }".repeat(DEPTH)
    );
    let (run, report, shown, _sandbox) = check_generated("deep-tables.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    assert!(run.stderr.contains("recurs"), "{}", run.describe());
}

/// 10,000 `[` and no `]`: one problem, said once (not once per nesting level).
#[test]
fn deeply_nested_unclosed_arrays_are_reported_once() {
    let text = format!("{IMAGE_LINE}command = {}\n", "[".repeat(DEPTH));
    let (run, report, shown, _sandbox) = check_generated("deep-unclosed.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
}

/// A table header or dotted key too deep for the parser is reported on its own line,
/// not at 1:1 (which points at an unrelated line).
#[test]
fn deeply_dotted_keys_are_refused_at_their_line() {
    let keys = vec!["a"; DEPTH].join(".");
    for (name, text) in [
        ("deep-header.toml", format!("{IMAGE_LINE}[{keys}]\nx = 1\n")),
        ("deep-dotted.toml", format!("{IMAGE_LINE}{keys} = 1\n")),
    ] {
        let (run, report, shown, _sandbox) = check_generated(name, text.as_bytes());
        assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    }
}

#[test]
fn files_over_one_mebibyte_are_refused_and_one_mebibyte_is_not() {
    let limit = usize::try_from(MAXIMUM_PROFILE_BYTES).unwrap();
    assert_eq!(limit, 1024 * 1024);
    let mut text = IMAGE_LINE.to_string();
    while text.len() + 64 < limit {
        text.push_str("# padding: a data file given by mistake looks much like this one.\n");
    }
    text.push_str(&"#".repeat(limit - 1 - text.len()));
    text.push('\n');
    assert_eq!(text.len(), limit);

    // Exactly at the limit: read and accepted.
    let sandbox = sandbox();
    let path = sandbox.path().join("at-limit.toml");
    std::fs::write(&path, &text).unwrap();
    let at_limit = check(&sandbox, &path.display().to_string());
    assert_eq!(at_limit.code, Some(0), "{}", at_limit.describe());

    // One byte over: refused, naming the size and the limit.
    text.push('\n');
    let (run, report, shown, _sandbox) = check_generated("over-limit.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (1, Some(1)), "1048576 bytes");
    assert!(run.stderr.contains("1048577"), "{}", run.describe());

    // Far over (a checkpoint given by mistake): refused as fast.
    let huge = vec![b'#'; 8 * limit];
    let (run, report, shown, _sandbox) = check_generated("huge.toml", &huge);
    assert_refused(
        &run,
        &report,
        &shown,
        (1, Some(1)),
        "limited to 1048576 bytes",
    );
}

#[test]
fn nul_bytes_are_refused_at_their_place() {
    let text = format!("{IMAGE_LINE}description = \"team\0profile\"\n");
    let (run, report, shown, _sandbox) = check_generated("nul.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, Some(20)), "NUL byte");

    // Binary data from the first byte (a tarball or checkpoint named .toml).
    let mut binary = b"\0\0\0\x01PK\x03\x04".to_vec();
    binary.extend(std::iter::repeat_n(0u8, 4096));
    let (run, report, shown, _sandbox) = check_generated("binary.toml", &binary);
    assert_refused(&run, &report, &shown, (1, Some(1)), "NUL byte");
}

#[test]
fn invalid_utf8_is_refused_at_the_first_bad_byte() {
    // Latin-1 `é` in a description.
    let mut latin1 = IMAGE_LINE.as_bytes().to_vec();
    latin1.extend(b"description = \"caf\xe9\"\n");
    let (run, report, shown, _sandbox) = check_generated("latin1.toml", &latin1);
    assert_refused(&run, &report, &shown, (2, Some(19)), "not valid UTF-8");

    // After multi-byte characters: the column counts characters, not bytes.
    let mut after_unicode = IMAGE_LINE.as_bytes().to_vec();
    after_unicode.extend("description = \"日本".as_bytes());
    after_unicode.extend(b"\xff\"\n");
    let (run, report, shown, _sandbox) = check_generated("after-unicode.toml", &after_unicode);
    assert_refused(&run, &report, &shown, (2, Some(18)), "not valid UTF-8");

    // A multi-byte sequence cut at the end of the file.
    let mut truncated = IMAGE_LINE.as_bytes().to_vec();
    truncated.extend("description = \"".as_bytes());
    truncated.extend(&"é".as_bytes()[..1]);
    let (run, report, shown, _sandbox) = check_generated("truncated.toml", &truncated);
    assert_refused(&run, &report, &shown, (2, Some(16)), "not valid UTF-8");

    // Notepad's "Unicode": UTF-16 with a byte-order mark.
    let utf16: Vec<u8> = [0xfeff_u16]
        .into_iter()
        .chain("image = \"ubuntu\"\n".encode_utf16())
        .flat_map(u16::to_le_bytes)
        .collect();
    let (run, report, shown, _sandbox) = check_generated("utf16.toml", &utf16);
    assert_refused(&run, &report, &shown, (1, Some(1)), "not valid UTF-8");
}

/// A UTF-8 byte-order mark is invisible: it takes no column.
#[test]
fn a_utf8_byte_order_mark_takes_no_column() {
    let text = format!("\u{feff}memroy = \"16g\"\n{IMAGE_LINE}");
    let (run, report, shown, _sandbox) = check_generated("bom.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (1, Some(1)), "unknown key `memroy`");
}

#[test]
fn directories_and_other_non_files_are_refused() {
    let sandbox = sandbox();
    let directory = sandbox.path().join("profile.toml");
    std::fs::create_dir(&directory).unwrap();
    let mut cases = vec![
        directory.display().to_string(),
        format!("{}/", sandbox.path().display()),
    ];
    #[cfg(unix)]
    {
        cases.push("/dev/null".to_string());
        // A FIFO would block a naive reader forever.
        let fifo = sandbox.path().join("fifo.toml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|status| status.success());
        if made {
            cases.push(fifo.display().to_string());
        }
    }
    for shown in &cases {
        let plain = check(&sandbox, shown);
        let (json_run, report) = check_json(&sandbox, shown);
        let report = report.unwrap_or_else(|error| {
            panic!("{shown}: not JSON ({error}):\n{}", json_run.describe())
        });
        assert_refused(&plain, &report, shown, (1, Some(1)), "not a regular file");
    }
}

#[test]
fn a_missing_file_is_refused() {
    let sandbox = sandbox();
    let shown = sandbox
        .path()
        .join("no-such-profile.toml")
        .display()
        .to_string();
    let plain = check(&sandbox, &shown);
    let (_, report) = check_json(&sandbox, &shown);
    assert_refused(
        &plain,
        &report.unwrap(),
        &shown,
        (1, Some(1)),
        "cannot read the profile",
    );
}

/// A chain of 32 files is fine; one more is refused at the `extends` that goes too far.
#[test]
fn extends_chains_longer_than_32_files_are_refused() {
    let sandbox = sandbox();
    let folder = sandbox.path().join("chain");
    std::fs::create_dir(&folder).unwrap();
    const FILES: usize = 40;
    for index in 0..FILES {
        let text = if index + 1 < FILES {
            format!("# link {index}\nextends = \"link-{}\"\n", index + 1)
        } else {
            IMAGE_LINE.to_string()
        };
        std::fs::write(folder.join(format!("link-{index}.toml")), text).unwrap();
    }
    let shown = |index: usize| {
        folder
            .join(format!("link-{index}.toml"))
            .display()
            .to_string()
    };

    let longest = check(&sandbox, &shown(FILES - 32));
    assert_eq!(longest.code, Some(0), "{}", longest.describe());

    let first = FILES - 33;
    let plain = check(&sandbox, &shown(first));
    let (json_run, report) = check_json(&sandbox, &shown(first));
    let report =
        report.unwrap_or_else(|error| panic!("not JSON ({error}):\n{}", json_run.describe()));
    // The 32nd file of the chain holds the `extends` that is one too many.
    assert_refused(
        &plain,
        &report,
        &shown(first + 31),
        (2, Some(11)),
        "`extends` chain is longer than 32",
    );
}

// ---------------------------------------------------------------------------------------
// Properties: nothing panics, parsers round-trip
// ---------------------------------------------------------------------------------------

/// Pieces of TOML syntax, valid and broken, to glue together at random.
const SYNTAX: &[&str] = &[
    "\n",
    "\n",
    "\n",
    " ",
    "\t",
    "\r\n",
    "\r",
    "=",
    " = ",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    "#",
    "# comment\n",
    "\\",
    "\\u00e9",
    "\\x",
    "\0",
    "é",
    "日本",
    "🚀",
    "\u{feff}",
    "[stack]\n",
    "[ulimits]\n",
    "[commands]\n",
    "[env]\n",
    "[gpus]\n",
    "[[ports]]\n",
    "[[mounts]]\n",
];

/// The keys envctl knows, at every level, and a few it does not.
const KEYS: &[&str] = &[
    "name",
    "description",
    "extends",
    "image",
    "command",
    "workdir",
    "user",
    "gpus",
    "memory",
    "memroy",
    "cpus",
    "shm_size",
    "ipc",
    "ports",
    "mounts",
    "env",
    "ulimits",
    "stack",
    "commands",
    "cuda",
    "torch",
    "cudnn",
    "count",
    "devices",
    "host_ip",
    "host",
    "container",
    "protocol",
    "source",
    "target",
    "read_only",
    "soft",
    "hard",
    "nofile",
    "memlock",
    "nvidia-check",
    "train",
    "\"A=B\"",
    "\"\"",
    "-x",
    "stack.cuda",
    "gpus.count",
    "env.A",
];

/// Values, valid and not, of every type.
const VALUES: &[&str] = &[
    "\"pytorch/pytorch:2.8.0\"",
    "\"PyTorch:x\"",
    "\"a@sha256:00\"",
    "\"\"",
    "\"16g\"",
    "\"0\"",
    "\"-1\"",
    "\"6m\"",
    "\"1.5t\"",
    "\"x\"",
    "\"all\"",
    "\"alll\"",
    "\"none\"",
    "\"optional\"",
    "\"GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc\"",
    "\"MIG-x\"",
    "\"8888:8888\"",
    "\"[::1]:1:1/udp\"",
    "\"0.0.0.0::80\"",
    "\"8000-8010:1-11\"",
    "\"65536\"",
    "\"./d:/d:ro\"",
    "\":/x\"",
    "\"a:b\"",
    "\"12.8\"",
    "\"2.8.0+cu128\"",
    "\"2.8\"",
    "\"host\"",
    "\"1000:1000\"",
    "\"A=1\"",
    "\"A\"",
    "\"nul\\u0000\"",
    "\"pytorch-2.8\"",
    "\"./self.toml\"",
    "0",
    "1",
    "-1",
    "-2",
    "2",
    "4096",
    "4097",
    "65535",
    "65536",
    "0x10",
    "0o17",
    "0b11",
    "1_000",
    "9223372036854775807",
    "99999999999999999999",
    "0.5",
    "-0.0",
    "1e309",
    "inf",
    "nan",
    "true",
    "false",
    "1979-05-27T07:32:00Z",
    "[]",
    "{}",
    "[\"a\"]",
    "[\"0\", \"0\"]",
    "[1, true]",
    "{ count = 2 }",
    "{ count = 1, devices = [] }",
    "{ soft = 1, hard = 0 }",
    "{ soft = -1 }",
    "{ host = 1, container = 1 }",
    "{ host = 0, container = 70000 }",
    "{ source = \"./a\", target = \"/a\" }",
    "{ source = 1, read_only = \"no\" }",
    "[\"1:1\", \"1:2\"]",
    "[\"./a:/a\", \"./b:/a/\"]",
];

fn fragments() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(SYNTAX),
        prop::sample::select(KEYS),
        prop::sample::select(VALUES),
    ];
    prop::collection::vec(fragment, 0..60).prop_map(|parts| parts.concat())
}

/// Lines `key = value` over the real keys: mostly valid TOML, so validation itself runs.
fn profile_lines() -> impl Strategy<Value = String> {
    let line = (prop::sample::select(KEYS), prop::sample::select(VALUES));
    prop::collection::vec(line, 0..12).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    })
}

fn assert_sane_diagnostics(text: &str, shown: &str, diagnostics: &[Diagnostic]) {
    let lines = text.split('\n').count();
    for diagnostic in diagnostics {
        assert_eq!(diagnostic.path, shown);
        assert!(
            diagnostic.line >= 1 && diagnostic.line <= lines,
            "{diagnostic:?}"
        );
        assert!(diagnostic.column >= 1, "{diagnostic:?}");
        assert!(!diagnostic.message.is_empty(), "{diagnostic:?}");
    }
}

fn validate_bytes(bytes: Vec<u8>) {
    let shown = "fuzz/profile.toml";
    let text = match decode_profile_bytes(bytes, shown) {
        Ok(text) => text,
        Err(diagnostic) => {
            assert_eq!(diagnostic.path, shown);
            assert!(diagnostic.line >= 1 && diagnostic.column >= 1);
            return;
        }
    };
    let (_, diagnostics) = validate(shown, &text);
    assert_sane_diagnostics(&text, shown, &diagnostics);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn validating_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        validate_bytes(bytes);
    }

    #[test]
    fn validating_arbitrary_text_never_panics(text in any::<String>()) {
        validate_bytes(text.into_bytes());
    }

    #[test]
    fn validating_toml_fragments_never_panics(text in fragments()) {
        validate_bytes(text.into_bytes());
    }

    #[test]
    fn validating_profile_lines_never_panics(text in profile_lines(), tail in fragments()) {
        validate_bytes(text.clone().into_bytes());
        validate_bytes(format!("{text}{tail}").into_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The whole read path on a real file: size check, decoding, validation.
    #[test]
    fn reading_arbitrary_files_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256), text in fragments()) {
        let folder = tempfile::tempdir().unwrap();
        for (name, content) in [("bytes.toml", bytes), ("text.toml", text.into_bytes())] {
            let path = folder.path().join(name);
            std::fs::write(&path, &content).unwrap();
            let shown = path.display().to_string();
            match read_profile_text(&path, &shown) {
                Ok(text) => {
                    prop_assert_eq!(text.as_bytes(), &content[..]);
                    let (_, diagnostics) = validate(&shown, &text);
                    assert_sane_diagnostics(&text, &shown, &diagnostics);
                }
                Err(diagnostic) => prop_assert!(std::str::from_utf8(&content).is_err(), "{:?}", diagnostic),
            }
        }
    }
}

const PORT_ALPHABET: &str = "[0-9:./\\[\\]a-fA-F-]{0,24}(/(tcp|udp|sctp|TCP|x))?";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn port_specs_never_panic(spec in any::<String>()) {
        let _ = parse_port_spec(&spec);
    }

    #[test]
    fn parsed_port_specs_round_trip(spec in PORT_ALPHABET) {
        if let Ok(binding) = parse_port_spec(&spec) {
            let displayed = binding.to_string();
            prop_assert_eq!(parse_port_spec(&displayed), Ok(binding), "{} displayed as {}", spec, displayed);
        }
    }

    #[test]
    fn structured_port_specs_round_trip(
        ip in prop::option::of(prop::sample::select(&["127.0.0.1", "0.0.0.0", "10.1.2.3", "[::1]", "[::]", "[2001:db8::7]", "[::ffff:1.2.3.4]"][..])),
        host in prop::option::of((1u16..=65535, 0u16..20)),
        container in (1u16..=65535, 0u16..20),
        protocol in prop::sample::select(&["", "/tcp", "/udp", "/sctp", "/UDP"][..]),
    ) {
        let range = |(start, extra): (u16, u16)| {
            let end = start.saturating_add(extra);
            if end == start { start.to_string() } else { format!("{start}-{end}") }
        };
        let ports = match host {
            Some(host) => format!("{}:{}", range(host), range(container)),
            None if ip.is_some() => format!(":{}", range(container)),
            None => range(container),
        };
        let spec = match ip {
            Some(ip) => format!("{ip}:{ports}{protocol}"),
            None => format!("{ports}{protocol}"),
        };
        if let Ok(binding) = parse_port_spec(&spec) {
            let displayed = binding.to_string();
            prop_assert_eq!(parse_port_spec(&displayed), Ok(binding), "{} displayed as {}", spec, displayed);
        }
    }

    #[test]
    fn mount_specs_never_panic(spec in any::<String>(), shaped in "[./~a-z:,_-]{0,20}(:(ro|rw|ro,rw|x))?") {
        let _ = parse_mount_spec(&spec);
        let _ = parse_mount_spec(&shaped);
    }

    #[test]
    fn image_references_never_panic(text in any::<String>(), shaped in "[a-zA-Z0-9./:@_\\[\\]-]{0,40}") {
        let _ = text.parse::<ImageReference>();
        if let Ok(reference) = shaped.parse::<ImageReference>() {
            let displayed = reference.to_string();
            prop_assert_eq!(displayed.parse::<ImageReference>(), Ok(reference), "{} displayed as {}", shaped, displayed);
        }
    }

    #[test]
    fn sizes_never_panic(text in any::<String>(), shaped in "[0-9. ]{0,24}[bkmgtiBKMGTI ]{0,4}") {
        let _ = text.parse::<ByteSize>();
        if let Ok(size) = shaped.parse::<ByteSize>() {
            let displayed = size.to_string();
            prop_assert_eq!(displayed.parse::<ByteSize>(), Ok(size), "{} displayed as {}", shaped, displayed);
        }
    }
}
