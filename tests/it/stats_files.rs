//! The files `stats` opens: `--record` targets and `stats report` inputs that are not
//! regular files (a FIFO nobody reads or writes, a device such as `/dev/zero`) are refused
//! at once, checked on the opened descriptor, and a recording past the size limit is an
//! explicit error, not a read that grows without end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use envctl::monitor::record::MAX_RECORDING_BYTES;
use tempfile::TempDir;

use crate::support::cli::{Envctl, Run};

/// envctl killed after 10 s (then the code reads -1), against a daemon socket that does not
/// exist: nothing here may need one.
fn without_a_daemon() -> Envctl {
    Envctl::shared()
        .daemon("unix:///nonexistent/envctl-test/docker.sock")
        .env(
            "ENVCTL_NVML_LIBRARY",
            "/nonexistent/envctl-test/libnvidia-ml.so.1",
        )
        .timeout(Duration::from_secs(10))
}

fn fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

fn report(input: &Path, folder: &TempDir) -> (Run, Duration) {
    let output = folder.path().join("out.svg");
    without_a_daemon()
        .args([
            "stats".as_ref(),
            "report".as_ref(),
            input.as_os_str(),
            "-o".as_ref(),
            output.as_os_str(),
        ])
        .run_timed()
}

fn assert_refused(run: &Run, took: Duration, what: &str) {
    assert_eq!(run.code, 2, "{what}: {}", run.stderr);
    assert!(took < Duration::from_secs(2), "{what} took {took:?}");
}

#[test]
fn report_refuses_a_fifo_and_a_device_at_once() {
    let folder = TempDir::new().unwrap();
    let pipe = folder.path().join("run.csv");
    fifo(&pipe);
    let (refused, took) = report(&pipe, &folder);
    assert_refused(&refused, took, "a FIFO");
    assert!(
        refused
            .stderr
            .contains("is a FIFO (named pipe), not a regular file"),
        "{}",
        refused.stderr
    );
    // Named like a recording, but a link to a device: the opened file is what counts.
    let zero = folder.path().join("zero.csv");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let (refused, took) = report(&zero, &folder);
    assert_refused(&refused, took, "/dev/zero");
    assert!(
        refused.stderr.contains("is a character device"),
        "{}",
        refused.stderr
    );
}

#[test]
fn report_refuses_a_recording_past_the_limit() {
    let folder = TempDir::new().unwrap();
    let large = folder.path().join("large.csv");
    // Sparse: no disk is used.
    std::fs::File::create(&large)
        .unwrap()
        .set_len(MAX_RECORDING_BYTES + 1)
        .unwrap();
    let (refused, took) = report(&large, &folder);
    assert_refused(&refused, took, "a large recording");
    assert!(
        refused
            .stderr
            .contains(&format!("larger than {MAX_RECORDING_BYTES} bytes")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("hint:"), "{}", refused.stderr);
}

#[test]
fn record_refuses_a_fifo_with_no_reader_at_once() {
    let folder = TempDir::new().unwrap();
    for name in ["run.csv", "run.jsonl"] {
        let pipe = folder.path().join(name);
        fifo(&pipe);
        let (refused, took) = without_a_daemon()
            .args([
                "stats".as_ref(),
                "--once".as_ref(),
                "--record".as_ref(),
                pipe.as_os_str(),
            ])
            .run_timed();
        assert_refused(&refused, took, name);
        assert!(
            refused
                .stderr
                .contains("is a FIFO (named pipe), not a regular file"),
            "{}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("stats --json"),
            "{}",
            refused.stderr
        );
    }
}

#[test]
fn record_refuses_a_device() {
    let folder = TempDir::new().unwrap();
    let null = folder.path().join("null.csv");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let (refused, took) = without_a_daemon()
        .args([
            "stats".as_ref(),
            "--once".as_ref(),
            "--record".as_ref(),
            null.as_os_str(),
        ])
        .run_timed();
    assert_refused(&refused, took, "/dev/null");
    // A link is refused as a link before what it leads to matters (issue 30, class 3).
    assert!(
        refused.stderr.contains("is a symbolic link"),
        "{}",
        refused.stderr
    );
}
