//! `stats --serve` under a hostile client: one connection pipelining 20,000 requests and
//! never reading its answers must not slow anyone else's scrape, and SIGTERM still ends
//! envctl within 2 s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The envctl under test, killed if the test ends before it does.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `envctl stats --serve 127.0.0.1:0` against the real daemon, and the address it serves.
fn serving() -> (Serving, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["stats", "--interval", "0.3", "--serve", "127.0.0.1:0"])
        .env("NO_COLOR", "1")
        // Eight stand-in GPUs: an exposition of some kilobytes, so that the answers to
        // the pipelined requests fill the socket buffers.
        .env("ENVCTL_NVML_LIBRARY", crate::support::nvml::stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/nvml/healthy-8x-h100.conf"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_string();
    // The rest of stderr is drained, so that envctl never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Serving(child), address)
}

/// One scrape of `/metrics` on a connection of its own; the answer and the time it took,
/// or a panic past 5 s.
fn scrape(address: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|error| panic!("no answer within 5 s: {error}"));
    (answer, started.elapsed())
}

#[test]
fn a_pipelining_client_that_never_reads_blocks_no_scrape_and_no_exit() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let (mut serving, address) = serving();
    let child = &mut serving.0;
    // The flood starts once the exposition is there (some kilobytes an answer): before the
    // first publish the answers are empty and fit in the socket buffers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !scrape(&address).0.contains("DCGM_FI_DEV_GPU_TEMP") {
        assert!(Instant::now() < deadline, "no exposition within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The hostile client: 20,000 requests in one go, answers never read. Its writes block
    // once the socket buffers are full; its thread is left to the write timeout.
    let mut flood = TcpStream::connect(&address).unwrap();
    flood
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let flooding = std::thread::spawn(move || {
        let requests = b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n".repeat(20_000);
        let _ = flood.write_all(&requests);
        // Held open, never read, until the test is done with it.
        std::thread::sleep(Duration::from_secs(8));
        drop(flood);
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let (answer, took) = scrape(&address);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        slowest < Duration::from_millis(500),
        "a scrape took {slowest:?} beside the pipelining client"
    );
    let started = Instant::now();
    assert!(
        Command::new("kill")
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("still running 5 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        took < Duration::from_secs(2),
        "exit took {took:?} after SIGTERM"
    );
    let _ = flooding.join();
}
