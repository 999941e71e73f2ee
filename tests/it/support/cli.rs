//! envctl as a test runs it: in a folder of the test's own, with no user configuration,
//! no extra profile folders, no colour, no NVML library chosen by the environment and no
//! host policy.
//!
//! [`Envctl`] is the one way a test builds such a run: the folder (or none, or another
//! machine's view of it), the stand-in NVML library and its fixture, the daemon, the
//! arguments and stdin, then [`Envctl::run`] for a [`Run`], or [`Envctl::command`] for a
//! test that spawns and signals envctl itself. The free functions below are the older
//! spellings of the same, kept for the tests that use them.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;

/// One envctl run being set up under [`hermetic`]'s rules: the command and what its stdin
/// will read.
pub struct Envctl {
    command: std::process::Command,
    /// What envctl's stdin is in [`Envctl::run`]; without it `/dev/null`, so a run never
    /// waits on the test process's terminal.
    input: Option<Input>,
    /// How long [`Envctl::run`] lets envctl run before it kills it; without it, as long
    /// as envctl takes.
    limit: Option<std::time::Duration>,
}

/// Where envctl's stdin comes from.
enum Input {
    /// These bytes, written by [`Envctl::run`] and then closed.
    Bytes(Vec<u8>),
    /// A file or pipe of the test's own.
    From(std::process::Stdio),
}

impl Envctl {
    /// The built binary with `folder` as its working directory (`./envctl/` profiles are
    /// found there) and `$HOME` and `$XDG_CONFIG_HOME` inside it ([`hermetic`]).
    pub fn in_folder(folder: &Path) -> Envctl {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("envctl"));
        hermetic(&mut command, folder);
        Envctl::from_command(command)
    }

    /// The built binary with no folder of its own, as [`envctl_command`]: it runs in the
    /// test's working directory with a home shared by every such run of this process.
    pub fn shared() -> Envctl {
        static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let home =
            HOME.get_or_init(|| tempfile::tempdir().unwrap_or_else(|error| panic!("{error}")));
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("envctl"));
        clean(&mut command, home.path());
        Envctl::from_command(command)
    }

    /// The built binary in `folder` as another machine runs it (root only): in a UTS
    /// namespace of its own named `envctl-laptop`, and with `hidden`, in a mount namespace
    /// where that folder is an empty tmpfs ([`envctl_on_a_laptop_in`] says why).
    pub fn on_a_laptop(folder: &Path, hidden: Option<&Path>) -> Envctl {
        let mut command = std::process::Command::new("unshare");
        match hidden {
            Some(hidden_folder) => command.args(["--uts", "--mount", "--", "sh", "-c"]).arg(
                format!(
                    "hostname envctl-laptop && mount -t tmpfs envctl-laptop '{}' && exec \"$@\"",
                    hidden_folder.display()
                ),
            ),
            None => command.args([
                "--uts",
                "--",
                "sh",
                "-c",
                "hostname envctl-laptop && exec \"$@\"",
            ]),
        };
        command
            .arg("sh")
            .arg(assert_cmd::cargo::cargo_bin("envctl"));
        hermetic(&mut command, folder);
        Envctl::from_command(command)
    }

    /// A command a test built itself (another program in front of envctl, say), which the
    /// caller has already put under [`hermetic`]'s rules.
    pub fn from_command(command: std::process::Command) -> Envctl {
        Envctl {
            command,
            input: None,
            limit: None,
        }
    }

    /// The stand-in NVML library answering from `tests/fixtures/nvml/FIXTURE`.
    pub fn nvml(self, fixture: &str) -> Envctl {
        self.nvml_file(&super::nvml::fixture(fixture))
    }

    /// The stand-in NVML library answering from the fixture at `fixture` (one the test
    /// wrote, say).
    pub fn nvml_file(self, fixture: &Path) -> Envctl {
        self.env("ENVCTL_NVML_LIBRARY", super::nvml::stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", fixture)
    }

    /// The daemon at `host` (`DOCKER_HOST`).
    pub fn daemon(self, host: &str) -> Envctl {
        self.env("DOCKER_HOST", host)
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Envctl {
        self.command.env(key, value);
        self
    }

    /// Each `(key, value)` of `variables` set, as [`Envctl::env`] one by one.
    pub fn envs<I, K, V>(mut self, variables: I) -> Envctl
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.envs(variables);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Envctl {
        self.command.env_remove(key);
        self
    }

    pub fn arg(mut self, argument: impl AsRef<OsStr>) -> Envctl {
        self.command.arg(argument);
        self
    }

    pub fn args<I, S>(mut self, arguments: I) -> Envctl
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(arguments);
        self
    }

    /// What envctl reads on stdin, all of it written before stdin is closed.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Envctl {
        self.input = Some(Input::Bytes(input.into()));
        self
    }

    /// envctl's stdin as the test made it: a file, a pipe whose writer the test holds,
    /// `Stdio::null()` said outright.
    pub fn stdin_from(mut self, source: impl Into<std::process::Stdio>) -> Envctl {
        self.input = Some(Input::From(source.into()));
        self
    }

    /// Ends the run (SIGKILL) when it has not ended after `limit`; such a run's code is -1.
    pub fn timeout(mut self, limit: std::time::Duration) -> Envctl {
        self.limit = Some(limit);
        self
    }

    /// Runs envctl to its end, for its exit code and both streams as text.
    pub fn run(self) -> Run {
        Run::of(self.output())
    }

    /// Runs envctl to its end, for its exit status and both streams as bytes (a test of
    /// the very bytes envctl writes). stdin is written and stdout and stderr are read each
    /// from a thread of its own, so a run that writes much before it reads cannot block on
    /// a full pipe while the test writes, and the limit of [`Envctl::timeout`] can be kept.
    pub fn output(mut self) -> std::process::Output {
        let program = self.command.get_program().to_string_lossy().into_owned();
        let (stdin, bytes) = match self.input {
            None => (std::process::Stdio::null(), None),
            Some(Input::Bytes(bytes)) => (std::process::Stdio::piped(), Some(bytes)),
            Some(Input::From(source)) => (source, None),
        };
        self.command
            .stdin(stdin)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = self
            .command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {program}: {error}"));
        let writer = match (bytes, child.stdin.take()) {
            (Some(input), Some(mut stdin)) => Some(std::thread::spawn(move || {
                // envctl may exit without reading all of it; a broken pipe is its answer,
                // which the run's exit code and streams show.
                let _ = stdin.write_all(&input);
            })),
            _ => None,
        };
        let stdout = read_all(child.stdout.take());
        let stderr = read_all(child.stderr.take());
        let status = match self.limit {
            None => child.wait(),
            Some(limit) => wait_at_most(&mut child, limit),
        }
        .unwrap_or_else(|error| panic!("cannot wait for {program}: {error}"));
        if let Some(writer) = writer {
            writer
                .join()
                .unwrap_or_else(|_| panic!("the thread writing {program}'s stdin panicked"));
        }
        let collect = |reader: std::thread::JoinHandle<Vec<u8>>| {
            reader
                .join()
                .unwrap_or_else(|_| panic!("a thread reading {program}'s output panicked"))
        };
        std::process::Output {
            status,
            stdout: collect(stdout),
            stderr: collect(stderr),
        }
    }

    /// [`Envctl::run`], and how long the run took from its start to its end (a test of a
    /// deadline asserts on it).
    pub fn run_timed(self) -> (Run, std::time::Duration) {
        let started = std::time::Instant::now();
        let run = self.run();
        (run, started.elapsed())
    }

    /// The command as set up, for a test that spawns envctl and signals or waits on it
    /// itself (stdin set with [`Envctl::stdin`] or [`Envctl::stdin_from`] is not part of
    /// it).
    pub fn command(self) -> std::process::Command {
        self.command
    }
}

/// All a child's stream gives until it closes, read on a thread of its own.
fn read_all(stream: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut stream) = stream {
            // A read error ends the stream; what came before it is what the test sees.
            let _ = stream.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// The child's end, or SIGKILL and then its end once `limit` has passed.
fn wait_at_most(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::io::Result<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if std::time::Instant::now() >= deadline {
            // It may end between the check and the kill; wait() then reports that end.
            let _ = child.kill();
            return child.wait();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The built binary with `directory` as its working directory (`./envctl/` profiles are
/// found there), `$XDG_CONFIG_HOME` and `$HOME` inside it, so only what the test puts
/// there and the bundled profiles are found ([`hermetic`]).
pub fn envctl_in(directory: &Path) -> assert_cmd::Command {
    assert_cmd::Command::from_std(envctl_command_in(directory))
}

/// [`envctl_in`] as a `std::process::Command`, for a test that spawns envctl and signals
/// or waits on it.
pub fn envctl_command_in(directory: &Path) -> std::process::Command {
    Envctl::in_folder(directory).command()
}

/// [`envctl_command_in`] as another machine runs it (root only): in a UTS namespace of its
/// own named `envctl-laptop`, so a daemon of this machine (which names its host as this
/// one) is another machine's to it; with `hidden`, also in a mount namespace of its own
/// where that folder is an empty tmpfs (the other machine's files are not this one's).
pub fn envctl_on_a_laptop_in(directory: &Path, hidden: Option<&Path>) -> std::process::Command {
    Envctl::on_a_laptop(directory, hidden).command()
}

/// The one set of rules every test's envctl runs under, whatever program starts it (envctl
/// itself, or `setpriv`/`sh` in front of it): every `ENVCTL_*`, `DOCKER_*` and `XDG_*`
/// variable of the developer's shell is cleared by prefix (a test sets what it needs), and
/// `NODE_NAME` (the metrics' host name in a pod), the working directory, `$HOME` and
/// `$XDG_CONFIG_HOME` are the test's folder, no colour, and a host policy path that is
/// never there, so `/etc/envctl/policy.toml` never judges a test.
pub fn hermetic(command: &mut std::process::Command, directory: &Path) {
    clean(command, directory);
    command.current_dir(directory);
}

/// [`hermetic`] but the working directory: `$HOME`, `$XDG_CONFIG_HOME` and the policy path
/// under `home`.
fn clean(command: &mut std::process::Command, home: &Path) {
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if ["ENVCTL_", "DOCKER_", "XDG_"]
            .iter()
            .any(|prefix| key_text.starts_with(prefix))
        {
            command.env_remove(&key);
        }
    }
    command
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("HOME", home.join("home"))
        .env("ENVCTL_POLICY", home.join("no-host-policy.toml"))
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NODE_NAME");
}

/// envctl under [`hermetic`]'s rules for a test that needs no folder of its own (it runs
/// in the test's working directory): `$HOME` and `$XDG_CONFIG_HOME` in one empty folder
/// the test process shares.
pub fn envctl() -> assert_cmd::Command {
    assert_cmd::Command::from_std(envctl_command())
}

/// [`envctl`] as a `std::process::Command`.
pub fn envctl_command() -> std::process::Command {
    Envctl::shared().command()
}

/// A copy of the envctl binary that another user (`runuser -u nobody`) can run, in a new
/// world-readable folder: the build folder may sit under a private (0700) directory, as a
/// clone under `mktemp -d` does. Dropping the folder removes the copy.
pub fn envctl_for_other_users() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::TempDir::new()
        .unwrap_or_else(|error| panic!("cannot make a temporary folder: {error}"));
    let copy = folder.path().join("envctl");
    let built = assert_cmd::cargo::cargo_bin("envctl");
    std::fs::copy(&built, &copy)
        .unwrap_or_else(|error| panic!("cannot copy {}: {error}", built.display()));
    for (path, mode) in [(folder.path(), 0o755), (copy.as_path(), 0o755)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|error| panic!("cannot chmod {}: {error}", path.display()));
    }
    (folder, copy)
}

/// One finished run of envctl: its exit code and both streams, all shown when an
/// assertion about it fails.
pub struct Run {
    /// The exit code; -1 for a run a signal ended (which no test expects).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn of(output: std::process::Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Whether envctl exited 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// The run when it exited `code`; a panic naming `what` and showing the run when
    /// not.
    pub fn expect(&self, code: i32, what: &str) -> &Run {
        assert_eq!(self.code, code, "{what}\n{self}");
        self
    }

    /// The run when neither stream holds one of `values` (secrets a test gave envctl);
    /// a panic naming `what`, the stream and the value when one does.
    pub fn shows_none(&self, values: &[&str], what: &str) -> &Run {
        for value in values {
            for (stream, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
                assert!(
                    !text.contains(value),
                    "{what}: {stream} shows `{value}`:\n{text}"
                );
            }
        }
        self
    }

    /// stdout as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{self}"))
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "exit code {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}
