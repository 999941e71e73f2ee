//! `envctl compat`: verdicts for a described host, through the built binary.
//!
//! This folder holds the shared runners (`compat` for JSON, `compat_text` for the human
//! text and the exit code) and `finding`; the tests sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

use crate::support::cli::Envctl;

mod aarch64;
mod arguments;
mod drivers;
mod gpu_names;
mod verdicts;

/// `envctl compat ARGUMENTS… --json` in a folder of its own: exit code, report (null
/// when stdout is not JSON), stderr.
fn compat(arguments: &[&str]) -> (i32, Value, String) {
    let directory = tempfile::tempdir().unwrap();
    let run = Envctl::in_folder(directory.path())
        .arg("compat")
        .args(arguments)
        .arg("--json")
        .run();
    let json = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run.code, json, run.stderr)
}

fn finding<'a>(gpu: &'a Value, id: &str) -> &'a Value {
    gpu["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {gpu}"))
}

/// The command's text output: exit code, stdout, stderr (no `--json`).
fn compat_text(arguments: &[&str]) -> (i32, String, String) {
    let directory = tempfile::tempdir().unwrap();
    let run = Envctl::in_folder(directory.path())
        .env("COLUMNS", "100")
        .arg("compat")
        .args(arguments)
        .run();
    (run.code, run.stdout, run.stderr)
}
