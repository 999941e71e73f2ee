//! The long answers of a daemon that stopped answering, from a fake daemon on a unix
//! socket (a thread here; no Docker needed): it answers the ping and the container
//! inspect, then sends the logs' headers and one byte a second, or the stats' headers and
//! no body. `logs`, `logs -f` and `stats --once` each end with an error that names the
//! socket and says the daemon stopped answering.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tempfile::TempDir;

use crate::support::cli::{Envctl, Run};

const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A fake daemon listening on `socket` until the test ends (its threads are detached).
struct FakeDaemon {
    _folder: TempDir,
    socket: PathBuf,
}

impl FakeDaemon {
    /// With `hang_later_pings`, only the first ping is answered.
    fn start(hang_later_pings: bool) -> FakeDaemon {
        let folder = TempDir::new().unwrap();
        let socket = folder.path().join("docker.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let pings = Arc::new(AtomicUsize::new(0));
        let hang = hang_later_pings;
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let pings = Arc::clone(&pings);
                std::thread::spawn(move || answer(stream, &pings, hang));
            }
        });
        FakeDaemon {
            _folder: folder,
            socket,
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }
}

/// Answers the requests of one connection: the first ping, the inspect; later pings,
/// the logs and the stats as a daemon that stopped answering would.
fn answer(stream: UnixStream, pings: &AtomicUsize, hang_later_pings: bool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let reply = |writer: &mut UnixStream, body: &str| {
            let _ = write!(
                writer,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        };
        if path.contains("/_ping") {
            if pings.fetch_add(1, Ordering::SeqCst) > 0 && hang_later_pings {
                // Later pings: taken, never answered.
                std::thread::sleep(Duration::from_secs(600));
            }
            reply(&mut writer, "OK");
        } else if path.contains("/version") {
            // As Docker 20.10 answers: envctl asks which engine it is talking to.
            reply(
                &mut writer,
                r#"{"Version":"20.10.24","ApiVersion":"1.41","Components":[{"Name":"Engine","Version":"20.10.24"}]}"#,
            );
        } else if path.contains("/logs") {
            let _ = write!(
                writer,
                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n"
            );
            while writer.write_all(b"x").is_ok() {
                std::thread::sleep(Duration::from_secs(1));
            }
            return;
        } else if path.contains("/stats") {
            let _ = write!(
                writer,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
            );
            std::thread::sleep(Duration::from_secs(600));
            return;
        } else if path.contains("/containers/json") {
            reply(
                &mut writer,
                &format!(
                    r#"[{{"Id":"{ID}","Names":["/fake"],"Image":"busybox","State":"running","Status":"Up","Labels":{{}}}}]"#
                ),
            );
        } else if path.contains("/json") {
            reply(
                &mut writer,
                &format!(
                    r#"{{"Id":"{ID}","Name":"/fake","Config":{{"Image":"busybox","Labels":{{}},"Tty":true}},"State":{{"Running":true,"Status":"running","Pid":1}},"HostConfig":{{}}}}"#
                ),
            );
        } else {
            let body = r#"{"message":"not faked"}"#;
            let _ = write!(
                writer,
                "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    }
}

/// envctl against the fake `daemon`, reading stats from its API and with an NVML library
/// that is never there, ended if it runs past a minute.
fn against(daemon: &FakeDaemon) -> Envctl {
    Envctl::shared()
        .daemon(&daemon.host())
        .env("ENVCTL_STATS_SOURCE", "api")
        .env(
            "ENVCTL_NVML_LIBRARY",
            "/nonexistent/envctl-test/libnvidia-ml.so.1",
        )
        .timeout(Duration::from_secs(60))
}

fn assert_stopped_answering(run: &Run, took: Duration, daemon: &FakeDaemon, within: Duration) {
    assert_ne!(run.code, -1, "still running after 60 s: {}", run.stderr);
    assert!(took < within, "took {took:?}: {}", run.stderr);
    assert!(run.stderr.contains("stopped answering"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&daemon.socket.display().to_string()),
        "names the socket: {}",
        run.stderr
    );
}

#[test]
fn logs_from_a_daemon_sending_a_byte_a_second_end_with_the_cause() {
    let daemon = FakeDaemon::start(false);
    let (run, took) = against(&daemon).args(["logs", "fake"]).run_timed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_stopped_answering(&run, took, &daemon, Duration::from_secs(15));
}

#[test]
fn logs_follow_from_a_daemon_that_stopped_answering_end_with_the_cause() {
    let daemon = FakeDaemon::start(true);
    let (run, took) = against(&daemon).args(["logs", "-f", "fake"]).run_timed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_stopped_answering(&run, took, &daemon, Duration::from_secs(20));
}

#[test]
fn stats_once_without_a_body_ends_with_the_cause() {
    let daemon = FakeDaemon::start(false);
    let (run, took) = against(&daemon)
        .args(["stats", "--once", "fake"])
        .run_timed();
    // As any container whose reading failed: a warning with the cause, the row kept.
    assert_stopped_answering(&run, took, &daemon, Duration::from_secs(25));
    assert!(
        run.stderr.contains("no whole stats answer within 10 s"),
        "{}",
        run.stderr
    );
}
