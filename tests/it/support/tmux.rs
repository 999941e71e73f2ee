//! A real terminal for tests of full-screen views: a detached tmux session, read back with
//! `capture-pane`, driven with `send-keys`, gone on drop.
//!
//! Every [`Tmux`] is a tmux server of its own, its socket in a temporary folder (`tmux -S
//! <folder>/tmux.sock -f /dev/null`): started by the test with the test's environment and
//! no configuration file, so a tmux the developer has open is neither used nor disturbed,
//! and the drop (`kill-server`, then the folder) leaves nothing behind. [`Tmux::start`]
//! returns `None` (the test skipped, with a `SKIPPED (no tmux): <test>` line on stderr)
//! when tmux is missing or cannot start a session — or panics instead when
//! `ENVCTL_REQUIRE_DOCKER=1`, as for a missing daemon ([`super::docker::skip_or_panic`]).
//!
//! [`Recording`] wraps a command in a shell script that records `stty -g` before and
//! after it and prints `exit=<code>`, so a test can check that the view gave the terminal
//! back as it found it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use super::docker::{current_test_name, run_with_timeout, skip_or_panic};

/// The longest any wait on the screen lasts.
pub const SCREEN_TIMEOUT: Duration = Duration::from_secs(15);
/// The size of every session: wide enough for the stats table with its long test names.
pub const COLUMNS: u16 = 140;
pub const ROWS: u16 = 30;
/// Upper bound for one `tmux` command.
const TMUX_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// The one session on each server.
const SESSION: &str = "envctl-test";

/// `text` as one word for `sh`: in single quotes, its own single quotes escaped.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A tmux server of its own with one detached session of [`COLUMNS`]×[`ROWS`] running one
/// shell command; killed on drop, even when the test panics.
#[derive(Debug)]
pub struct Tmux {
    socket: PathBuf,
    /// Holds the socket; removed after the server is killed.
    _folder: tempfile::TempDir,
}

impl Tmux {
    /// Starts `command` (a `sh -c` command line) in a new session. `None`: the test is
    /// skipped and should return; panics instead when `ENVCTL_REQUIRE_DOCKER=1`.
    pub fn start(command: &str) -> Option<Tmux> {
        let test = current_test_name();
        let fix = "Fix: `sudo apt-get install tmux`.";
        match Command::new("tmux").arg("-V").output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => {
                let details = format!(
                    "`tmux -V` failed ({}): {}\n{fix}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                skip_or_panic("no tmux", &test, &details);
                return None;
            }
            Err(error) => {
                let details = format!(
                    "tmux is needed to run the live view in a real terminal, and it cannot be \
                     run: {error}\n{fix}"
                );
                skip_or_panic("no tmux", &test, &details);
                return None;
            }
        }
        // Short: a unix socket's path has room for about 100 bytes.
        let folder = tempfile::Builder::new()
            .prefix("envctl-tmux-")
            .tempdir()
            .unwrap_or_else(|error| panic!("cannot create a temporary directory: {error}"));
        let tmux = Tmux {
            socket: folder.path().join("tmux.sock"),
            _folder: folder,
        };
        let (columns, rows) = (COLUMNS.to_string(), ROWS.to_string());
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            &columns,
            "-y",
            &rows,
            command,
        ]);
        let why = match started {
            Ok(output) if output.status.success() => return Some(tmux),
            Ok(output) => format!(
                "`tmux -S {} new-session -d …` failed ({}): {}",
                tmux.socket.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => error,
        };
        let details = format!(
            "{why}\nFix: tmux needs a writable temporary directory for its socket and a \
             working pseudo-terminal (/dev/ptmx)."
        );
        skip_or_panic("tmux cannot start a session", &test, &details);
        None
    }

    /// `tmux -S <this server> -f /dev/null ARGS…`, bounded by a timeout.
    fn run(&self, args: &[&str]) -> Result<Output, String> {
        let mut command = Command::new("tmux");
        // The session's shell, and the envctl it starts, run under the tests' one set of
        // rules (the server inherits this client's environment).
        if let Some(folder) = self.socket.parent() {
            crate::support::cli::hermetic(&mut command, folder);
        }
        // No configuration file: the developer's `~/.tmux.conf` must not change the screen.
        command
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args);
        run_with_timeout(&mut command, TMUX_COMMAND_TIMEOUT)
    }

    /// The visible screen, one line per row (trailing blanks trimmed by tmux).
    pub fn screen(&self) -> String {
        let output = self
            .run(&["capture-pane", "-p", "-t", SESSION])
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(
            output.status.success(),
            "tmux capture-pane: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `keys` (tmux key names: `q`, `C-c`, `Enter`…).
    pub fn keys(&self, keys: &str) {
        let output = self
            .run(&["send-keys", "-t", SESSION, keys])
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(
            output.status.success(),
            "tmux send-keys {keys}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Polls the screen until `accept` takes it; the screen it took. Panics after `limit`
    /// with `what` and the last screen.
    pub fn wait_until(&self, what: &str, limit: Duration, accept: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if accept(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not on the screen within {limit:?}:\n{screen}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits up to [`SCREEN_TIMEOUT`] for a live view's header to say `sample N` with N at
    /// least `at_least`: a screen redrawn every few hundred milliseconds may show sample 8
    /// between two looks, so "sample 8" as text can be missed on a loaded machine.
    pub fn wait_for_sample(&self, at_least: u64) -> String {
        self.wait_until(
            &format!("`sample N` with N ≥ {at_least}"),
            SCREEN_TIMEOUT,
            |screen| {
                screen
                    .split("sample ")
                    .skip(1)
                    .filter_map(|rest| {
                        let digits: String =
                            rest.chars().take_while(char::is_ascii_digit).collect();
                        digits.parse::<u64>().ok()
                    })
                    .any(|sample| sample >= at_least)
            },
        )
    }

    /// Waits up to [`SCREEN_TIMEOUT`] for `text` on the screen; the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("`{text}`"), SCREEN_TIMEOUT, |screen| {
            screen.contains(text)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // The server, its session and whatever runs in it; then the folder goes.
        let _ = self.run(&["kill-server"]);
    }
}

/// A command wrapped in a script that records the terminal settings (`stty -g`) before
/// and after it, prints `main-screen-marker` before it and `exit=<code>` after it, then
/// keeps the session open for the test to read.
#[derive(Debug)]
pub struct Recording {
    script: PathBuf,
    before: PathBuf,
    after: PathBuf,
}

/// What the script prints before the command: the main screen shows it, the alternate
/// screen of a full-screen view hides it.
pub const MAIN_SCREEN_MARKER: &str = "main-screen-marker";

impl Recording {
    /// Writes the script into `folder`; `command` is one `sh` command line.
    pub fn new(folder: &Path, command: &str) -> Recording {
        let script = folder.join("live.sh");
        let before = folder.join("stty-before");
        let after = folder.join("stty-after");
        std::fs::write(
            &script,
            format!(
                "stty -g > {before}\necho {MAIN_SCREEN_MARKER}\n{command}\necho \"exit=$?\"\n\
                 stty -g > {after}\nsleep 30\n",
                before = shell_quote(&before.display().to_string()),
                after = shell_quote(&after.display().to_string()),
            ),
        )
        .unwrap_or_else(|error| panic!("cannot write {}: {error}", script.display()));
        Recording {
            script,
            before,
            after,
        }
    }

    /// The command line that runs the script, for [`Tmux::start`].
    pub fn command(&self) -> String {
        format!("sh {}", shell_quote(&self.script.display().to_string()))
    }

    /// The settings before and after, once the script wrote the second (the shell creates
    /// the file before `stty` writes into it). Panics after [`SCREEN_TIMEOUT`].
    pub fn settings(&self) -> (String, String) {
        let deadline = Instant::now() + SCREEN_TIMEOUT;
        let after = loop {
            match std::fs::read_to_string(&self.after) {
                Ok(text) if text.ends_with('\n') => break text,
                _ => {}
            }
            assert!(
                Instant::now() < deadline,
                "`stty -g` after the command wrote nothing to {} within {SCREEN_TIMEOUT:?}",
                self.after.display()
            );
            thread::sleep(Duration::from_millis(20));
        };
        let before = std::fs::read_to_string(&self.before)
            .unwrap_or_else(|error| panic!("{}: {error}", self.before.display()));
        (before, after)
    }
}
