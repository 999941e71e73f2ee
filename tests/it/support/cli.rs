//! envctl as a test runs it: in a folder of the test's own, with no user configuration,
//! no extra profile folders, no colour, no NVML library chosen by the environment and no
//! host policy.

use std::path::Path;

/// The built binary with `directory` as its working directory (`./envctl/` profiles are
/// found there), `$XDG_CONFIG_HOME` and `$HOME` inside it, so only what the test puts
/// there and the bundled profiles are found ([`hermetic`]).
pub fn envctl_in(directory: &Path) -> assert_cmd::Command {
    assert_cmd::Command::from_std(envctl_command_in(directory))
}

/// [`envctl_in`] as a `std::process::Command`, for a test that spawns envctl and signals
/// or waits on it.
pub fn envctl_command_in(directory: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("envctl"));
    hermetic(&mut command, directory);
    command
}

/// [`envctl_command_in`] as another machine runs it (root only): in a UTS namespace of its
/// own named `envctl-laptop`, so a daemon of this machine (which names its host as this
/// one) is another machine's to it; with `hidden`, also in a mount namespace of its own
/// where that folder is an empty tmpfs (the other machine's files are not this one's).
pub fn envctl_on_a_laptop_in(directory: &Path, hidden: Option<&Path>) -> std::process::Command {
    let mut command = std::process::Command::new("unshare");
    match hidden {
        Some(folder) => command
            .args(["--uts", "--mount", "--", "sh", "-c"])
            .arg(format!(
                "hostname envctl-laptop && mount -t tmpfs envctl-laptop '{}' && exec \"$@\"",
                folder.display()
            )),
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
    hermetic(&mut command, directory);
    command
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
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| tempfile::tempdir().unwrap_or_else(|error| panic!("{error}")));
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("envctl"));
    clean(&mut command, home.path());
    command
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
