//! Daemons reached the ways a team reaches its servers (issue 27, items 1 and 2): the
//! second daemon `.ci/dockerd2.sh` starts, over TLS (`DOCKER_TLS_VERIFY` and
//! `DOCKER_CERT_PATH`), over ssh (Debian's sshd on a loopback port of the test's own, with
//! a generated key, an `ssh_config` of the test's own through an `ssh` wrapper first on
//! `PATH`, and `SetEnv DOCKER_HOST=` pointing the far side's docker CLI at the daemon), and
//! through a context made with `docker context create`. The docker CLI is the reference:
//! for each setting envctl reaches the daemon the CLI reaches, or refuses where it refuses,
//! and each hint is run.
//!
//! This folder holds the second daemon, the ways to reach it (`Way`), the sshd and the
//! `envctl` runner, which other test modules use too; the tests sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{skip_or_panic, unique_name};
use crate::support::engines::{Family, TestEngine};

mod failures;
mod hosts;
mod reach;

/// The second daemon's own socket, its TLS and plain TCP endpoints and the client's TLS
/// files (`.ci/dockerd2.sh`).
pub const SOCKET: &str = "/run/envctl-ci/dockerd2.sock";
pub const TLS_ENDPOINT: &str = "tcp://127.0.0.1:23760";
pub const PLAIN_ENDPOINT: &str = "tcp://127.0.0.1:23750";
pub const CERTIFICATES: &str = "/run/envctl-ci/dockerd2-tls";

/// The second daemon, or `None` (reported, or a failure under `ENVCTL_REQUIRE_DOCKER=1`)
/// when it does not answer.
pub fn dockerd2(test: &str) -> Option<TestEngine> {
    if !crate::support::docker::require_daemon_for(test) {
        return None;
    }
    let version = Command::new("docker")
        .args(["-H", &format!("unix://{SOCKET}"), "version", "--format"])
        .arg("{{.Server.Version}}")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string());
    let answers_tls = Path::new(CERTIFICATES).join("ca.pem").is_file();
    match version {
        Some(version) if answers_tls => Some(TestEngine {
            name: "dockerd2".into(),
            host: format!("unix://{SOCKET}"),
            family: Family::Docker,
            version,
        }),
        _ => {
            skip_or_panic(
                "the second daemon (.ci/dockerd2.sh) does not answer",
                test,
                "start it: `sudo bash .ci/dockerd2.sh start` (.ci/run does)",
            );
            None
        }
    }
}

/// The variables of one way to reach the second daemon.
#[derive(Clone, Debug)]
pub struct Way {
    pub name: &'static str,
    pub variables: Vec<(String, OsString)>,
}

impl Way {
    pub fn tls() -> Way {
        Way {
            name: "tls",
            variables: vec![
                ("DOCKER_HOST".into(), TLS_ENDPOINT.into()),
                ("DOCKER_TLS_VERIFY".into(), "1".into()),
                ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
            ],
        }
    }

    /// Applies the way to a command (envctl or the docker CLI).
    pub fn apply(&self, command: &mut Command) {
        for (key, value) in &self.variables {
            command.env(key, value);
        }
    }

    /// The docker CLI with this way's variables and nothing else of the shell's choice.
    pub fn docker(&self, arguments: &[&str]) -> Output {
        let mut command = Command::new("docker");
        for variable in [
            "DOCKER_HOST",
            "DOCKER_CONTEXT",
            "DOCKER_TLS_VERIFY",
            "DOCKER_TLS",
            "DOCKER_CERT_PATH",
        ] {
            command.env_remove(variable);
        }
        self.apply(&mut command);
        command.args(arguments).output().unwrap()
    }
}

/// envctl in `folder` with `way`'s variables (bounded: a hang fails the test).
pub fn envctl(folder: &Path, way: &Way, arguments: &[&str]) -> Run {
    let mut envctl = Envctl::in_folder(folder);
    for (key, value) in &way.variables {
        envctl = envctl.env(key, value);
    }
    Run::of(
        assert_cmd::Command::from_std(envctl.args(arguments).command())
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap(),
    )
}

/// Debian's sshd on a loopback port of its own, as root, for the test's lifetime: a host
/// key and a client key made here, an `ssh_config` with a `gpu2` alias, and an `ssh`
/// wrapper (`-F` that config, recording each ssh's pid) first on `PATH`.
pub struct Sshd {
    folder: tempfile::TempDir,
    child: std::process::Child,
    pub port: u16,
}

impl Sshd {
    /// `None` when sshd cannot run here (reported, or a failure under
    /// `ENVCTL_REQUIRE_DOCKER=1`).
    pub fn start(test: &str, far_side_host: &str) -> Option<Sshd> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.exists() || !is_root() {
            skip_or_panic(
                "Debian's sshd is not installed or the tests do not run as root",
                test,
                "`apt-get install openssh-server` (.ci/run does), and run the tests as root",
            );
            return None;
        }
        let folder = tempfile::tempdir().unwrap();
        let at = |name: &str| folder.path().join(name);
        for key in ["host_key", "client_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(at(key))
                .output()
                .unwrap();
            assert!(made.status.success(), "{made:?}");
        }
        std::fs::copy(at("client_key.pub"), at("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = free_port();
        std::fs::write(
            at("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nAuthorizedKeysFile {keys}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
                 StrictModes no\nUsePAM no\nPidFile none\nSetEnv DOCKER_HOST={far_side_host}\n",
                host_key = at("host_key").display(),
                keys = at("authorized_keys").display(),
            ),
        )
        .unwrap();
        let host_key = std::fs::read_to_string(at("host_key.pub")).unwrap();
        std::fs::write(
            at("known_hosts"),
            format!("[127.0.0.1]:{port} {}", host_key.trim()),
        )
        .unwrap();
        std::fs::write(
            at("ssh_config"),
            format!(
                "Host gpu2\n  HostName 127.0.0.1\n  Port {port}\n  User root\n\
                 Host *\n  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n\
                 StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n",
                key = at("client_key").display(),
                known = at("known_hosts").display(),
            ),
        )
        .unwrap();
        std::fs::create_dir_all(at("bin")).unwrap();
        let wrapper = at("bin/ssh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho $$ >> {pids}\nexec /usr/bin/ssh -F {config} \"$@\"\n",
                pids = at("ssh-pids").display(),
                config = at("ssh_config").display(),
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let log = std::fs::File::create(at("sshd.log")).unwrap();
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(at("sshd_config"))
            .stderr(log)
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not listen on {port}: {}",
                std::fs::read_to_string(at("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Sshd {
            folder,
            child,
            port,
        })
    }

    /// `PATH` with the wrapper first.
    pub fn path(&self) -> OsString {
        let mut path = OsString::from(self.folder.path().join("bin"));
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        path
    }

    /// `PATH` with a wrapper first whose ssh also knows `alias` as this sshd (a daemon's
    /// host name that a hint names, here).
    pub fn path_with_alias(&self, alias: &str) -> OsString {
        let at = |name: &str| self.folder.path().join(name);
        std::fs::write(
            at(&format!("ssh_config-{alias}")),
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User root\nInclude {config}\n",
                port = self.port,
                config = at("ssh_config").display(),
            ),
        )
        .unwrap();
        let folder = at(&format!("bin-{alias}"));
        std::fs::create_dir_all(&folder).unwrap();
        let wrapper = folder.join("ssh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho $$ >> {pids}\nexec /usr/bin/ssh -F {config} \"$@\"\n",
                pids = at("ssh-pids").display(),
                config = at(&format!("ssh_config-{alias}")).display(),
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut path = OsString::from(folder);
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        path
    }

    /// The way `ssh://URL`, with the wrapper on `PATH`.
    pub fn way(&self, url: &str) -> Way {
        Way {
            name: "ssh",
            variables: vec![
                ("DOCKER_HOST".into(), url.into()),
                ("PATH".into(), self.path()),
            ],
        }
    }

    /// The pids of every ssh the wrapper started.
    pub fn ssh_pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.folder.path().join("ssh-pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the tests run as root (sshd, `unshare` and `ip netns` need it).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether process `pid` is gone (or a zombie waiting for its parent, init here).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A folder with a profile of the test image that prints a line and sleeps, and the
/// profile's name; `extra` adds lines to the profile (`gpus = 2\n`). Also the identity
/// tests' profile.
pub fn project(engine: &TestEngine, prefix: &str, extra: &str) -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name(prefix);
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!(
            "image = \"{}\"\nmemory = \"64m\"\n{extra}command = [\"sh\", \"-c\", \"echo started-remotely; trap 'exit 0' TERM; sleep 1000 & wait\"]\n",
            engine.test_image()
        ),
    )
    .unwrap();
    (folder, profile)
}

/// Names the docker CLI lists with `way`.
fn docker_names(way: &Way, all: bool) -> Vec<String> {
    let mut arguments = vec!["ps", "--format", "{{.Names}}"];
    if all {
        arguments.insert(1, "-a");
    }
    let output = way.docker(&arguments);
    assert!(output.status.success(), "{}: {output:?}", way.name);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}
