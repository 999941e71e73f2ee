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
use std::io::Write;
use std::path::Path;

/// One envctl run being set up under [`hermetic`]'s rules: the command and what its stdin
/// will read.
pub struct Envctl {
    command: std::process::Command,
    /// Written to envctl's stdin by [`Envctl::run`]; without it stdin is `/dev/null`, so a
    /// run never waits on the test process's terminal.
    input: Option<Vec<u8>>,
}

impl Envctl {
    /// The built binary in `folder`, as [`envctl_command_in`].
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

    /// The built binary in `folder` as another machine runs it, as
    /// [`envctl_on_a_laptop_in`] (root only).
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
        self.input = Some(input.into());
        self
    }

    /// Runs envctl to its end. stdin is written from a thread of its own, so a run that
    /// writes much before it reads cannot block on a full pipe while the test writes.
    pub fn run(mut self) -> Run {
        let program = self.command.get_program().to_string_lossy().into_owned();
        self.command
            .stdin(if self.input.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = self
            .command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {program}: {error}"));
        let writer = match (self.input, child.stdin.take()) {
            (Some(input), Some(mut stdin)) => Some(std::thread::spawn(move || {
                // envctl may exit without reading all of it; a broken pipe is its answer,
                // which the run's exit code and streams show.
                let _ = stdin.write_all(&input);
            })),
            _ => None,
        };
        let output = child
            .wait_with_output()
            .unwrap_or_else(|error| panic!("cannot wait for {program}: {error}"));
        if let Some(writer) = writer {
            writer
                .join()
                .unwrap_or_else(|_| panic!("the thread writing {program}'s stdin panicked"));
        }
        Run::of(output)
    }

    /// The command as set up, for a test that spawns envctl and signals or waits on it
    /// itself (stdin set with [`Envctl::stdin`] is not part of it).
    pub fn command(self) -> std::process::Command {
        self.command
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
