//! The daemon going away under envctl, and coming back.
//!
//! The machine's real daemon cannot be stopped in a test, so envctl talks to it through a
//! tiny unix-socket proxy ([`Proxy`]) at a temporary path, given as `DOCKER_HOST`.
//! "Stopping the daemon" is the proxy closing every connection and its socket; "the
//! daemon returns" is a new proxy at the same path.
//!
//! - `stats` (JSON lines): warns on stderr naming the endpoint, keeps printing, and
//!   follows the container again once the daemon answers; SIGINT still ends it at once.
//! - `stats` on a terminal (the live view, in tmux: [`crate::support::tmux`]), through the cgroup
//!   files and through the API: a `daemon: …` line naming the socket while it is gone,
//!   sampling on; the line goes and the container's row is measured again once it
//!   returns; `q` then ends it within 3 s, exit 0, the terminal settings as before.
//! - `stats --once` with no daemon: exit 1 within 3 s, naming the socket.
//! - `up` pulling from a registry that never answers when the daemon goes: exit 1 within
//!   a few seconds, naming the endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::cli::Envctl;
use crate::support::registry::Blackhole;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::support::docker::{
    ContainerGuard, ImageGuard, docker_stdout, require_daemon, test_image,
};
use crate::support::tmux::{MAIN_SCREEN_MARKER, Recording, SCREEN_TIMEOUT, Tmux, shell_quote};
use crate::support::wait::Collected;
use serde_json::Value;

/// The real daemon's socket: `DOCKER_HOST` when it is a unix socket, else the default.
fn real_socket() -> PathBuf {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|host| host.strip_prefix("unix://").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"))
}

/// A unix-socket proxy to the real daemon. Dropping it (or [`Proxy::stop`]) closes every
/// connection and removes the socket: to envctl, the daemon is gone. (The dashboard's test
/// uses it too.)
pub(crate) struct Proxy {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    /// Both ends of every connection, to shut them down on stop.
    streams: Arc<Mutex<Vec<UnixStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    pub(crate) fn start(path: &Path) -> Proxy {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::<UnixStream>::new()));
        let upstream = real_socket();
        let thread = {
            let (stop, streams) = (Arc::clone(&stop), Arc::clone(&streams));
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let client = match listener.accept() {
                        Ok((client, _)) => client,
                        Err(_) => {
                            thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                    };
                    client.set_nonblocking(false).unwrap();
                    let Ok(daemon) = UnixStream::connect(&upstream) else {
                        continue;
                    };
                    {
                        let mut held = streams.lock().unwrap();
                        held.push(client.try_clone().unwrap());
                        held.push(daemon.try_clone().unwrap());
                    }
                    pipe(client.try_clone().unwrap(), daemon.try_clone().unwrap());
                    pipe(daemon, client);
                }
                // The listener drops here: nothing accepts any more.
            })
        };
        Proxy {
            path: path.to_path_buf(),
            stop,
            streams,
            thread: Some(thread),
        }
    }

    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies `from` to `to` on a thread of its own until either side closes.
fn pipe(mut from: UnixStream, mut to: UnixStream) {
    thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

/// A temporary folder for the proxy's socket, and the socket's path in it.
fn socket_in(directory: &tempfile::TempDir) -> PathBuf {
    directory.path().join("docker.sock")
}

/// envctl through the proxy's `socket`, with an NVML library that is never there.
fn through(socket: &Path) -> Envctl {
    Envctl::shared()
        .daemon(&format!("unix://{}", socket.display()))
        .env(
            "ENVCTL_NVML_LIBRARY",
            "/nonexistent/envctl-test/libnvidia-ml.so.1",
        )
}

/// Every line the reader reads, sent as it comes.
fn lines_of(reader: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Kills the child if a test panics before it ends.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The next JSON line with a row for `name` that `accept` takes, within `limit`.
fn next_line(
    lines: &Receiver<String>,
    limit: Duration,
    accept: impl Fn(&Value) -> bool,
) -> Option<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match lines.recv_timeout(left) {
            Ok(line) => {
                let snapshot: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
                if accept(&snapshot) {
                    return Some(snapshot);
                }
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
        }
    }
}

fn has_container(snapshot: &Value, name: &str) -> bool {
    snapshot["containers"]
        .as_array()
        .is_some_and(|rows| rows.iter().any(|row| row["name"] == name))
}

/// A row for `name` with numbers in it, not only the name.
fn has_measured_row(snapshot: &Value, name: &str) -> bool {
    snapshot["containers"].as_array().is_some_and(|rows| {
        rows.iter()
            .any(|row| row["name"] == name && row["memory_bytes"].is_u64())
    })
}

fn daemon_failure(snapshot: &Value) -> bool {
    snapshot["failures"].as_array().is_some_and(|failures| {
        failures
            .iter()
            .any(|failure| failure["subject"] == "daemon")
    })
}

#[test]
fn stats_warns_when_the_daemon_goes_and_follows_again_when_it_returns() {
    if !require_daemon() {
        return;
    }
    daemon_goes_and_returns(None);
}

/// The same through the Engine API's stats streams, which end with the connection and
/// must be started again.
#[test]
fn stats_through_the_api_follows_again_when_the_daemon_returns() {
    if !require_daemon() {
        return;
    }
    daemon_goes_and_returns(Some("api"));
}

fn daemon_goes_and_returns(source: Option<&str>) {
    let directory = tempfile::tempdir().unwrap();
    let socket = socket_in(&directory);
    let mut proxy = Proxy::start(&socket);
    let container = ContainerGuard::unique("envctl-daemon-loss");
    let name = container.name().to_string();
    docker_stdout(["run", "-d", "--name", &name, &test_image(), "sleep", "600"]);

    let envctl = through(&socket);
    let envctl = match source {
        Some(source) => envctl.env("ENVCTL_STATS_SOURCE", source),
        None => envctl,
    };
    let mut child = envctl
        .args(["stats", &name, "--json", "--interval", "200ms"])
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    let stderr = Collected::start(child.stderr.take().unwrap());
    let mut child = ChildGuard(child);

    assert!(
        next_line(&lines, Duration::from_secs(20), |snapshot| has_container(
            snapshot, &name
        ))
        .is_some(),
        "no line with {name}\n{}",
        stderr.text()
    );

    // The daemon goes.
    proxy.stop();
    let endpoint = format!("unix://{}", socket.display());
    assert!(
        stderr.contains_within("lost the Docker daemon", Duration::from_secs(10)),
        "no warning on stderr within 10 s\n{}",
        stderr.text()
    );
    let warning = stderr.text();
    assert!(
        warning.contains(&endpoint),
        "the warning names {endpoint}\n{warning}"
    );
    // It keeps sampling (the GPUs, the cgroup files) and says the daemon is missing.
    assert!(
        next_line(&lines, Duration::from_secs(3), daemon_failure).is_some(),
        "no line naming the lost daemon\n{}",
        stderr.text()
    );
    if source == Some("api") {
        // The numbers came from the daemon's stream: without it they are unknown, never
        // the last frame shown as if it were current.
        assert!(
            next_line(&lines, Duration::from_secs(5), |snapshot| {
                daemon_failure(snapshot)
                    && has_container(snapshot, &name)
                    && !has_measured_row(snapshot, &name)
            })
            .is_some(),
            "the row kept the stream's last numbers without the daemon\n{}",
            stderr.text()
        );
    } else {
        // The cgroup files are still there and current: the row stays measured.
        assert!(
            next_line(&lines, Duration::from_secs(5), |snapshot| {
                daemon_failure(snapshot) && has_measured_row(snapshot, &name)
            })
            .is_some(),
            "the row lost its cgroup readings with the daemon\n{}",
            stderr.text()
        );
    }
    // It goes on: another snapshot, still without the daemon.
    assert!(
        next_line(&lines, Duration::from_secs(5), daemon_failure).is_some(),
        "no snapshot after the daemon's loss was shown\n{}",
        stderr.text()
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "stats ended without its daemon\n{}",
        stderr.text()
    );

    // The daemon returns.
    let _proxy = Proxy::start(&socket);
    assert!(
        stderr.contains_within("answers again", Duration::from_secs(10)),
        "no reconnection within 10 s\n{}",
        stderr.text()
    );
    let seen = Mutex::new(Vec::new());
    assert!(
        next_line(&lines, Duration::from_secs(10), |snapshot| {
            seen.lock().unwrap().push(snapshot.to_string());
            has_measured_row(snapshot, &name) && !daemon_failure(snapshot)
        })
        .is_some(),
        "container rows did not resume\n{}\nlast lines: {:?}",
        stderr.text(),
        seen.lock()
            .unwrap()
            .iter()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
    );

    let signalled = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_exit(&mut child.0, Duration::from_secs(2));
    assert!(
        status.is_some(),
        "stats did not exit within 2 s of SIGINT ({:?})\n{}",
        signalled.elapsed(),
        stderr.text()
    );
    assert!(!stderr.text().contains("panicked"), "{}", stderr.text());
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(130),
        "the code a shell reports for SIGINT"
    );
}

#[test]
fn stats_once_without_the_daemon_fails_naming_the_socket() {
    if !require_daemon() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let socket = socket_in(&directory);
    // A proxy that stopped: the socket is gone.
    drop(Proxy::start(&socket));
    // And a socket file nothing listens on any more (connection refused).
    let stale = directory.path().join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    for path in [&socket, &stale] {
        let (run, elapsed) = through(path)
            .args(["stats", "--once", "--json"])
            .run_timed();
        let stderr = &run.stderr;
        assert_eq!(run.code, 1, "{stderr}");
        assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "names {}\n{stderr}",
            path.display()
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn up_fails_naming_the_endpoint_when_the_daemon_goes_during_a_pull() {
    if !require_daemon() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let socket = socket_in(&directory);
    let mut proxy = Proxy::start(&socket);
    let blackhole = Blackhole::start();
    let image = format!("{}/envctl-test/slow:v1", blackhole.address);
    let _never = ImageGuard::new(image.as_str());
    let profile = crate::support::docker::unique_name("daemon-loss-up");
    let _container = ContainerGuard::new(format!("envctl-{profile}"));
    for folder in ["envctl", "xdg", "home"] {
        std::fs::create_dir_all(directory.path().join(folder)).unwrap();
    }
    std::fs::write(
        directory
            .path()
            .join("envctl")
            .join(format!("{profile}.toml")),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();

    let child = Envctl::in_folder(directory.path())
        .daemon(&format!("unix://{}", socket.display()))
        .args(["up", &profile])
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = ChildGuard(child);
    let stderr = Collected::start(child.0.stderr.take().unwrap());

    // The daemon connects to the registry only once `up` is pulling.
    let deadline = Instant::now() + Duration::from_secs(30);
    while blackhole.accepted.load(Ordering::SeqCst) == 0 {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "up ended ({status}) before the pull started:\n{}",
                stderr.text()
            );
        }
        assert!(
            Instant::now() < deadline,
            "the daemon never connected to {}\n{}",
            blackhole.address,
            stderr.text()
        );
        thread::sleep(Duration::from_millis(20));
    }
    // `up` says so before it streams the pull's progress from the daemon.
    assert!(
        stderr.contains_within("pulling", Duration::from_secs(10)),
        "up never said it pulls\n{}",
        stderr.text()
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the pull should hang"
    );

    proxy.stop();
    let status = wait_exit(&mut child.0, Duration::from_secs(5));
    // Once it has ended, its stderr closes: the reader takes the last lines.
    let text = if status.is_some() {
        stderr.finish()
    } else {
        stderr.text()
    };
    let status = status.unwrap_or_else(|| panic!("up hangs without its daemon\n{text}"));
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        text.contains(&socket.display().to_string()),
        "names the endpoint\n{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}

// ---------------------------------------------------------------------------------------
// The live view, in a real terminal (tmux).

/// The number after `sample` in the live view's header (its first line).
fn sample_number(screen: &str) -> Option<u64> {
    let header = screen.lines().next()?;
    if !header.starts_with("envctl stats ·") {
        return None;
    }
    let (_, rest) = header.split_once("· sample ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The screen's line for container `name` when it shows a reading: a memory usage and
/// limit (`636KiB / 23.5GiB`) where an unknown reading shows `-`.
fn measured_row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    let binary = |cell: &str| {
        ["KiB", "MiB", "GiB", "TiB"].iter().any(|unit| {
            cell.strip_suffix(unit)
                .is_some_and(|number| number.parse::<f64>().is_ok())
        })
    };
    screen.lines().find(|line| {
        let cells: Vec<&str> = line.split_whitespace().collect();
        cells.first() == Some(&name)
            && cells
                .windows(3)
                .any(|pair| binary(pair[0]) && pair[1] == "/" && binary(pair[2]))
    })
}

/// The live view's failure line about the daemon (`daemon: <message> (<kind>)`).
fn daemon_line(screen: &str) -> Option<&str> {
    screen.lines().find(|line| line.starts_with("daemon: "))
}

/// The live view's failure line about container `name` (its stats stream failed).
fn container_line<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    let subject = format!("container {name}: ");
    screen.lines().find(|line| line.starts_with(&subject))
}

/// `envctl stats` on a terminal while the daemon goes away and comes back: the screen
/// says the daemon is gone, naming its socket, and keeps sampling; once the daemon
/// answers again the failure lines go and the container's row is measured again; `q`
/// still quits at once, exit 0, the terminal as it was.
#[test]
fn the_live_view_shows_the_daemon_loss_and_recovers() {
    if !require_daemon() {
        return;
    }
    live_view_loses_and_recovers(None);
}

/// The same through the Engine API's stats streams, which end with the connection and
/// must be started again.
#[test]
fn the_live_view_through_the_api_shows_the_daemon_loss_and_recovers() {
    if !require_daemon() {
        return;
    }
    live_view_loses_and_recovers(Some("api"));
}

fn live_view_loses_and_recovers(source: Option<&str>) {
    let directory = tempfile::tempdir().unwrap();
    let socket = socket_in(&directory);
    let mut proxy = Proxy::start(&socket);
    let container = ContainerGuard::unique("envctl-daemon-loss-live");
    let name = container.name().to_string();
    docker_stdout(["run", "-d", "--name", &name, &test_image(), "sleep", "600"]);

    let source = match source {
        Some(source) => format!("ENVCTL_STATS_SOURCE={source} "),
        None => String::new(),
    };
    let recording = Recording::new(
        directory.path(),
        &format!(
            "unset ENVCTL_STATS_SOURCE ENVCTL_NVML_STUB_FIXTURE CLICOLOR_FORCE; \
             {source}DOCKER_HOST={host} NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent \
             {envctl} stats --interval 0.3 {name}",
            host = shell_quote(&format!("unix://{}", socket.display())),
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };

    let screen = tmux.wait_until(
        &format!("a measured row for {name}"),
        SCREEN_TIMEOUT,
        |screen| measured_row(screen, &name).is_some(),
    );
    assert!(
        daemon_line(&screen).is_none() && !screen.contains(MAIN_SCREEN_MARKER),
        "{screen}"
    );

    // The daemon goes: the view notices at its next listing of the containers (every 5 s).
    proxy.stop();
    let screen = tmux.wait_until(
        "a line saying the daemon is lost",
        SCREEN_TIMEOUT,
        |screen| daemon_line(screen).is_some(),
    );
    let line = daemon_line(&screen).unwrap();
    let path = socket.display().to_string();
    assert!(line.contains(&path), "the line names {path}:\n{screen}");
    // It goes on sampling without its daemon, and keeps saying so.
    let lost_at = sample_number(&screen).unwrap_or_else(|| panic!("no header:\n{screen}"));
    let screen = tmux.wait_until(
        "two more samples with the daemon still lost",
        SCREEN_TIMEOUT,
        |screen| sample_number(screen).is_some_and(|sample| sample >= lost_at + 2),
    );
    assert!(daemon_line(&screen).is_some(), "{screen}");

    // The daemon returns: the failure lines go and the row is measured again (through the
    // API: a stream started again, whose first frame replaces the last one of the old).
    let returned_at = sample_number(&screen).unwrap_or_else(|| panic!("no header:\n{screen}"));
    let _proxy = Proxy::start(&socket);
    let screen = tmux.wait_until(
        &format!("{name} measured again, without the daemon's failure line"),
        SCREEN_TIMEOUT,
        |screen| {
            sample_number(screen).is_some_and(|sample| sample > returned_at)
                && daemon_line(screen).is_none()
                && container_line(screen, &name).is_none()
                && measured_row(screen, &name).is_some()
        },
    );
    assert!(!screen.contains(MAIN_SCREEN_MARKER), "{screen}");

    // `q` quits at once and gives the terminal back.
    tmux.keys("q");
    let screen = tmux.wait_until(
        "the view ending after `q`",
        Duration::from_secs(3),
        |screen| screen.contains("exit="),
    );
    assert!(screen.contains("exit=0"), "{screen}");
    assert!(
        screen.contains(MAIN_SCREEN_MARKER),
        "the main screen is back:\n{screen}"
    );
    let (before, after) = recording.settings();
    assert_eq!(before, after, "terminal settings restored");
}
