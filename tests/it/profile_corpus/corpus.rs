//! The corpus itself: every invalid file is refused with the problems its header announces,
//! every valid file resolves as its header asserts, many files checked at once are each judged as
//! alone, and CRLF line endings report the same places.

use super::*;

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
    if plain.code != 2 {
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
    if json_run.code != 2 {
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
    if plain.code != 0 {
        return vec![format!(
            "expected `profiles check` to accept it (exit code 0):\n{}",
            plain.describe()
        )];
    }
    let (json_run, report) = check_json(sandbox, &shown);
    match report {
        Ok(report)
            if json_run.code == 0
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
        Ok(document) if shown_run.code == 0 => document,
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
    let output = bounded_output(
        envctl(&sandbox)
            .args(["--json", "profiles", "check"])
            .args(&arguments),
    );
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
