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
//!
//! This folder holds the shared imports, the corpus and sandbox helpers and the `envctl`
//! runner; the tests sit in files by theme.

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

use crate::support::cli::{Envctl, Run};

mod corpus;
mod generated;
mod properties;

// ---------------------------------------------------------------------------------------
// Running envctl
// ---------------------------------------------------------------------------------------

/// A working directory with no `./envctl/` and a config home of its own, so that only the
/// corpus and the bundled profiles are found.
fn sandbox() -> TempDir {
    tempfile::tempdir().unwrap()
}

/// envctl in the sandbox ([`Envctl::in_folder`]: its own config home), without colour.
fn envctl(sandbox: &TempDir) -> Envctl {
    Envctl::in_folder(sandbox.path()).args(["--color", "never"])
}

/// How long one run may take: a run that hangs fails its test instead of stalling it.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// Runs `envctl` to its end within [`RUN_LIMIT`].
fn bounded_output(envctl: Envctl) -> std::process::Output {
    Command::from_std(envctl.command())
        .timeout(RUN_LIMIT)
        .output()
        .unwrap()
}

/// Failure messages show a run with long outputs clipped.
trait Describe {
    fn describe(&self) -> String;
}

impl Describe for Run {
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
    Run::of(bounded_output(envctl(sandbox).args(arguments)))
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
