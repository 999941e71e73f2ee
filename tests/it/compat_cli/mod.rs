//! `envctl compat`: verdicts for a described host, through the built binary.
//!
//! This folder holds the shared runners (`compat` for JSON, `compat_text` for the human
//! text and the exit code) and `finding`; the tests sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

mod aarch64;
mod arguments;
mod drivers;
mod gpu_names;
mod verdicts;

fn compat(arguments: &[&str]) -> (i32, Value, String) {
    let directory = tempfile::tempdir().unwrap();
    let output = crate::support::cli::envctl()
        .current_dir(directory.path())
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", directory.path())
        .env_remove("ENVCTL_PROFILE_PATH")
        .arg("compat")
        .args(arguments)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap(),
        json,
        String::from_utf8(output.stderr).unwrap(),
    )
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
    let output = crate::support::cli::envctl()
        .current_dir(directory.path())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("XDG_CONFIG_HOME", directory.path())
        .env_remove("ENVCTL_PROFILE_PATH")
        .arg("compat")
        .args(arguments)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}
