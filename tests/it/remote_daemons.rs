//! Daemons reached the ways a team reaches its servers (issue 27, items 1 and 2): the
//! second daemon `.ci/dockerd2.sh` starts, over TLS (`DOCKER_TLS_VERIFY` and
//! `DOCKER_CERT_PATH`), over ssh (Debian's sshd on a loopback port of the test's own, with
//! a generated key, an `ssh_config` of the test's own through an `ssh` wrapper first on
//! `PATH`, and `SetEnv DOCKER_HOST=` pointing the far side's docker CLI at the daemon), and
//! through a context made with `docker context create`. The docker CLI is the reference:
//! for each setting envctl reaches the daemon the CLI reaches, or refuses where it refuses,
//! and each hint is run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::cli::{Run, envctl_in};
use crate::support::docker::{skip_or_panic, unique_name};
use crate::support::engines::{Family, TestEngine};

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
    let mut command = envctl_in(folder);
    for (key, value) in &way.variables {
        command.env(key, value);
    }
    Run::of(
        command
            .timeout(Duration::from_secs(120))
            .args(arguments)
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

/// doctor, up, ps, exec, logs, stats, down over `way`, each checked against the docker CLI
/// with the same settings and against the local daemon, which must see nothing.
fn every_command(engine: &TestEngine, way: &Way) {
    let (folder, profile) = project(engine, &format!("remote-{}", way.name), "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let run = |arguments: &[&str]| envctl(folder.path(), way, arguments);

    let doctor = run(&["--json", "doctor"]);
    let report = doctor.json();
    assert_eq!(
        report["host"]["engine"]["status"], "reachable",
        "{}: {doctor}",
        way.name
    );
    assert_eq!(
        report["host"]["engine"]["server_version"].as_str(),
        Some(engine.version.as_str()),
        "{}: {doctor}",
        way.name
    );

    let up = run(&["up", &profile, "--pull", "never"]);
    assert_eq!(up.code, 0, "{}: {up}", way.name);
    // The reference: the CLI with the same settings lists it; the local daemon has none.
    assert!(
        docker_names(way, false).contains(&container),
        "{}",
        way.name
    );
    let local = crate::support::docker::docker_stdout(["ps", "-a", "--format", "{{.Names}}"]);
    assert!(!local.lines().any(|name| name == container), "{local}");

    let ps = run(&["--json", "ps"]);
    assert_eq!(ps.code, 0, "{}: {ps}", way.name);
    assert!(ps.stdout.contains(&container), "{}: {ps}", way.name);

    let exec = run(&["exec", &profile, "--", "echo", "hello-from-far"]);
    assert_eq!(
        (exec.code, exec.stdout.trim()),
        (0, "hello-from-far"),
        "{}: {exec}",
        way.name
    );
    let failing = run(&["exec", &profile, "--", "sh", "-c", "exit 7"]);
    assert_eq!(failing.code, 7, "{}: {failing}", way.name);

    let logs = run(&["logs", &profile]);
    assert_eq!(logs.code, 0, "{}: {logs}", way.name);
    assert!(
        logs.stdout.contains("started-remotely"),
        "{}: {logs}",
        way.name
    );

    let stats = run(&["--json", "stats", "--once", &profile]);
    assert_eq!(stats.code, 0, "{}: {stats}", way.name);
    assert!(stats.stdout.contains(&container), "{}: {stats}", way.name);

    let down = run(&["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{}: {down}", way.name);
    assert!(
        !docker_names(way, true).contains(&container),
        "{}",
        way.name
    );
}

#[test]
fn every_command_reaches_the_daemon_over_tls() {
    let Some(engine) = dockerd2("every_command_reaches_the_daemon_over_tls") else {
        return;
    };
    every_command(&engine, &Way::tls());
}

#[test]
fn every_command_reaches_the_daemon_over_ssh() {
    let test = "every_command_reaches_the_daemon_over_ssh";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    // The alias of the test's ssh_config: host, port and user come from there, as for
    // the docker CLI.
    let way = sshd.way("ssh://gpu2");
    every_command(&engine, &way);
    // The port and user in the URL itself.
    let way = sshd.way(&format!("ssh://root@127.0.0.1:{}", sshd.port));
    let folder = tempfile::tempdir().unwrap();
    let ps = envctl(folder.path(), &way, &["--json", "doctor"]);
    assert_eq!(
        ps.json()["host"]["engine"]["status"],
        "reachable",
        "{ps}\n{}",
        sshd.log()
    );
    // Every ssh envctl started has ended with the command.
    let pids = sshd.ssh_pids();
    assert!(!pids.is_empty());
    let started = Instant::now();
    while !pids.iter().all(|pid| gone(*pid)) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<&i32> = pids.iter().filter(|pid| !gone(**pid)).collect();
    assert!(left.is_empty(), "ssh processes outlived envctl: {left:?}");
}

#[test]
fn every_command_reaches_the_daemon_through_a_context() {
    let Some(engine) = dockerd2("every_command_reaches_the_daemon_through_a_context") else {
        return;
    };
    let config = tempfile::tempdir().unwrap();
    let name = unique_name("gpu2");
    let created = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "create", &name, "--docker"])
        .arg(format!(
            "host={TLS_ENDPOINT},ca={CERTIFICATES}/ca.pem,cert={CERTIFICATES}/cert.pem,key={CERTIFICATES}/key.pem"
        ))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let used = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "use", &name])
        .output()
        .unwrap();
    assert!(used.status.success(), "{used:?}");
    // `docker context use`: no variable but DOCKER_CONFIG names the daemon.
    let way = Way {
        name: "context",
        variables: vec![("DOCKER_CONFIG".into(), config.path().into())],
    };
    every_command(&engine, &way);
    // doctor's first line names the context and its endpoint.
    let folder = tempfile::tempdir().unwrap();
    let doctor = envctl(folder.path(), &way, &["doctor"]);
    assert!(
        doctor.stdout.contains(&format!(
            "daemon {TLS_ENDPOINT} chosen by context {name} (currentContext)"
        )),
        "{doctor}"
    );
}

/// TLS asked for at the plain port, and plain HTTP at the TLS port: the CLI refuses both,
/// so does envctl, each with its own hint; run, the hint reaches the daemon.
#[test]
fn a_tls_mismatch_is_refused_with_the_hint_that_fixes_it() {
    if dockerd2("a_tls_mismatch_is_refused_with_the_hint_that_fixes_it").is_none() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let tls_to_plain = Way {
        name: "tls to plain",
        variables: vec![
            ("DOCKER_HOST".into(), PLAIN_ENDPOINT.into()),
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
        ],
    };
    let cli = tls_to_plain.docker(&["ps"]);
    assert!(!cli.status.success(), "{cli:?}");
    assert!(
        String::from_utf8_lossy(&cli.stderr).contains("server gave HTTP response to HTTPS client"),
        "{cli:?}"
    );
    for arguments in [&["ps"][..], &["logs", "nothing"], &["stats", "--once"]] {
        let run = envctl(folder.path(), &tls_to_plain, arguments);
        assert_eq!(run.code, 1, "{arguments:?}: {run}");
        assert!(
            run.stderr.contains(&format!(
                "error: the server at `{PLAIN_ENDPOINT}` gave a plain HTTP answer to envctl's TLS hello"
            )) && run.stderr.contains("unset DOCKER_TLS_VERIFY DOCKER_TLS"),
            "{arguments:?}: {run}"
        );
    }
    let doctor = envctl(folder.path(), &tls_to_plain, &["--json", "doctor"]);
    assert_eq!(
        doctor.json()["host"]["engine"]["kind"],
        "tls_mismatch",
        "{doctor}"
    );
    // The hint, run: without the TLS variables the plain port answers, for both.
    let plain = Way {
        name: "plain",
        variables: vec![("DOCKER_HOST".into(), PLAIN_ENDPOINT.into())],
    };
    assert!(plain.docker(&["ps"]).status.success());
    let run = envctl(folder.path(), &plain, &["ps"]);
    assert_eq!(run.code, 0, "{run}");

    let plain_to_tls = Way {
        name: "plain to tls",
        variables: vec![("DOCKER_HOST".into(), TLS_ENDPOINT.into())],
    };
    let cli = plain_to_tls.docker(&["ps"]);
    assert!(!cli.status.success(), "{cli:?}");
    assert!(
        String::from_utf8_lossy(&cli.stderr)
            .contains("Client sent an HTTP request to an HTTPS server"),
        "{cli:?}"
    );
    for arguments in [&["ps"][..], &["--json", "doctor"]] {
        let run = envctl(folder.path(), &plain_to_tls, arguments);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert_ne!(run.code, 0, "{arguments:?}: {run}");
        assert!(
            said.contains(&format!("the server at `{TLS_ENDPOINT}` speaks TLS"))
                && said.contains("export DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=FOLDER"),
            "{arguments:?}: {run}"
        );
    }
    // The hint, run (FOLDER: the daemon's CA and the client's files).
    let run = envctl(folder.path(), &Way::tls(), &["ps"]);
    assert_eq!(run.code, 0, "{run}");
    assert!(Way::tls().docker(&["ps"]).status.success());
}

/// A CA that did not sign the daemon's certificate, and no client certificate for a daemon
/// that asks for one: refused by the handshake, for the CLI and for envctl.
#[test]
fn a_certificate_the_other_side_refuses_is_named() {
    if dockerd2("a_certificate_the_other_side_refuses_is_named").is_none() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let wrong = tempfile::tempdir().unwrap();
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=someone-else", "-keyout"])
        .arg(wrong.path().join("ca-key.pem"))
        .arg("-out")
        .arg(wrong.path().join("ca.pem"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    for file in ["cert.pem", "key.pem"] {
        std::fs::copy(Path::new(CERTIFICATES).join(file), wrong.path().join(file)).unwrap();
    }
    let unknown_ca = Way {
        name: "unknown CA",
        variables: vec![
            ("DOCKER_HOST".into(), TLS_ENDPOINT.into()),
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), wrong.path().into()),
        ],
    };
    assert!(!unknown_ca.docker(&["ps"]).status.success());
    let run = envctl(folder.path(), &unknown_ca, &["ps"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr.contains("the TLS handshake with") && run.stderr.contains("UnknownIssuer"),
        "{run}"
    );
    let only_ca = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(CERTIFICATES).join("ca.pem"),
        only_ca.path().join("ca.pem"),
    )
    .unwrap();
    let no_client = Way {
        name: "no client certificate",
        variables: vec![
            ("DOCKER_HOST".into(), TLS_ENDPOINT.into()),
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), only_ca.path().into()),
        ],
    };
    let cli = no_client.docker(&["ps"]);
    assert!(!cli.status.success(), "{cli:?}");
    let run = envctl(folder.path(), &no_client, &["ps"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .contains("the daemon refused envctl's client certificate"),
        "{run}"
    );
    // DOCKER_TLS alone (no verification): the unknown CA is taken, as the CLI takes it.
    let unverified = Way {
        name: "unverified",
        variables: vec![
            ("DOCKER_HOST".into(), TLS_ENDPOINT.into()),
            ("DOCKER_TLS".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), wrong.path().into()),
        ],
    };
    assert!(unverified.docker(&["ps"]).status.success());
    let run = envctl(folder.path(), &unverified, &["ps"]);
    assert_eq!(run.code, 0, "{run}");
}

/// ssh that cannot reach the far side, and no ssh at all: said with ssh's own words, the
/// hint's command fails the same way.
#[test]
fn ssh_that_fails_is_said_with_its_own_words() {
    let test = "ssh_that_fails_is_said_with_its_own_words";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let closed = free_port();
    let url = format!("ssh://root@127.0.0.1:{closed}");
    let way = sshd.way(&url);
    let started = Instant::now();
    let run = envctl(folder.path(), &way, &["ps"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(started.elapsed() < Duration::from_secs(10), "{run}");
    assert!(
        run.stderr.contains(&format!(
            "cannot reach `{url}` through ssh: ssh ended with status 255"
        )) && run.stderr.contains("Connection refused"),
        "{run}"
    );
    // The hint's command: the docker CLI fails there too.
    assert!(
        run.stderr.contains(&format!("`docker -H {url} info`")),
        "{run}"
    );
    assert!(!way.docker(&["-H", &url, "info"]).status.success());
    // No ssh on PATH.
    let empty = tempfile::tempdir().unwrap();
    let way = Way {
        name: "no ssh",
        variables: vec![
            ("DOCKER_HOST".into(), "ssh://gpu2".into()),
            ("PATH".into(), empty.path().into()),
        ],
    };
    let run = envctl(folder.path(), &way, &["ps"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stderr.contains("cannot run `ssh`"), "{run}");
}

/// `logs -f` over ssh ended by SIGTERM: envctl ends, and so does its ssh.
#[test]
fn the_ssh_child_ends_with_envctl() {
    let test = "the_ssh_child_ends_with_envctl";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let way = sshd.way("ssh://gpu2");
    let (folder, profile) = project(&engine, "remote-signal", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let up = envctl(folder.path(), &way, &["up", &profile, "--pull", "never"]);
    assert_eq!(up.code, 0, "{up}");
    let before = sshd.ssh_pids().len();
    let mut command = crate::support::cli::envctl_command_in(folder.path());
    way.apply(&mut command);
    let mut child = command
        .args(["logs", "-f", &profile])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Until its ssh started and the far side serves it: a `dial-stdio` under this sshd.
    let started = Instant::now();
    while sshd.ssh_pids().len() <= before {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::support::wait::wait_for(
        "the far side of envctl's ssh (`docker system dial-stdio` under sshd)",
        Duration::from_secs(10),
        || crate::support::wait::has_descendant(sshd.child.id(), "dial-stdio"),
    );
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    let pids: Vec<i32> = sshd.ssh_pids()[before..].to_vec();
    let waited = Instant::now();
    while !pids.iter().all(|pid| gone(*pid)) && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        pids.iter().all(|pid| gone(*pid)),
        "ssh outlived envctl: {pids:?}"
    );
    let down = envctl(folder.path(), &way, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
}

/// The host's loopback port `port` reachable at 127.0.0.1:`port` inside the second
/// daemon's network namespace (for pulls from the test registry): a socat there to a unix
/// socket, and one here from that socket to the port. Both are killed on drop.
struct IntoTheNamespace {
    _folder: tempfile::TempDir,
    children: Vec<std::process::Child>,
}

impl IntoTheNamespace {
    fn forward(port: u16) -> IntoTheNamespace {
        let folder = tempfile::tempdir().unwrap();
        let socket = folder.path().join("forward.sock");
        let outside = Command::new("socat")
            .arg(format!("UNIX-LISTEN:{},fork", socket.display()))
            .arg(format!("TCP:127.0.0.1:{port}"))
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "socat did not listen"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let inside = Command::new("nsenter")
            .arg("--net=/run/netns/envctl-dockerd2")
            .arg("socat")
            .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
            .arg(format!("UNIX-CONNECT:{}", socket.display()))
            .spawn()
            .unwrap();
        let forward = IntoTheNamespace {
            _folder: folder,
            children: vec![outside, inside],
        };
        let started = Instant::now();
        loop {
            let reached = Command::new("nsenter")
                .arg("--net=/run/netns/envctl-dockerd2")
                .args(["socat", "-u", "/dev/null"])
                .arg(format!("TCP:127.0.0.1:{port}"))
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            if reached.success() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "no forward into the netns"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        forward
    }
}

impl Drop for IntoTheNamespace {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `lock` with TLS, ssh or a context chosen: the registry answers the digest (nothing is
/// pulled, on the remote daemon either), and it is the digest the remote daemon records
/// when it pulls the tag, as `docker image inspect` there reads it.
#[test]
fn lock_pins_what_the_remote_daemon_pulls() {
    let test = "lock_pins_what_the_remote_daemon_pulls";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    if !crate::support::registry::require_registry() {
        return;
    }
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let registry = crate::support::registry::Registry::start();
    let _forward = IntoTheNamespace::forward(registry.addr().port());
    let repo = unique_name("remote-lock");
    let reference = crate::support::registry::push_test_image(&registry, &repo, "1.0");
    let _pulled = engine.image_guard(reference.clone());
    let config = tempfile::tempdir().unwrap();
    let name = unique_name("gpu2");
    let created = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "create", &name, "--docker"])
        .arg(format!(
            "host={TLS_ENDPOINT},ca={CERTIFICATES}/ca.pem,cert={CERTIFICATES}/cert.pem,key={CERTIFICATES}/key.pem"
        ))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let context = Way {
        name: "context",
        variables: vec![
            ("DOCKER_CONFIG".into(), config.path().into()),
            ("DOCKER_CONTEXT".into(), name.clone().into()),
        ],
    };
    for way in [Way::tls(), sshd.way("ssh://gpu2"), context] {
        // Each way pulls afresh.
        let _ = engine.docker(["rmi", "-f", reference.as_str()]);
        let folder = tempfile::tempdir().unwrap();
        let profile = unique_name("locked");
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        std::fs::write(
            folder.path().join("envctl").join(format!("{profile}.toml")),
            format!("image = \"{reference}\"\n"),
        )
        .unwrap();
        let lock = envctl(folder.path(), &way, &["--json", "lock"]);
        assert_eq!(lock.code, 0, "{}: {lock}", way.name);
        let pin = &lock.json()["locked"][0];
        let digest = pin["digest"].as_str().unwrap().to_string();
        // The registry answered: nothing was pulled, here or on the remote daemon.
        assert_eq!(pin["source"], "registry", "{}: {lock}", way.name);
        let absent = engine.docker(["image", "inspect", reference.as_str()]);
        assert!(
            !absent.status.success(),
            "{}: lock pulled the image onto the remote daemon",
            way.name
        );
        // What the remote daemon gets when it pulls the tag is what the lock pins.
        let pulled = engine.docker(["pull", "-q", reference.as_str()]);
        assert!(pulled.status.success(), "{pulled:?}");
        let recorded = engine.docker_stdout([
            "image",
            "inspect",
            "--format",
            "{{json .RepoDigests}}",
            reference.as_str(),
        ]);
        assert!(
            recorded.contains(&digest),
            "{}: the lock pins {digest}, the remote daemon recorded {recorded}",
            way.name
        );
        let text = std::fs::read_to_string(folder.path().join("envctl.lock")).unwrap();
        assert!(text.contains(&digest), "{text}");
    }
}

/// `ps --hosts` over the local daemon, the second one through a context (TLS) and over
/// ssh, one stopped and one that accepts and never answers: one table with a HOST column,
/// each host's containers as `docker -H` lists them there, the stopped and the silent one
/// rows that say why, exit 0, and the whole within one host's deadline (asked at once, not
/// one after another).
#[test]
fn ps_hosts_lists_every_daemon_and_says_why_one_cannot_be() {
    let test = "ps_hosts_lists_every_daemon_and_says_why_one_cannot_be";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let (folder, profile) = project(&engine, "hosts", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let up = envctl(
        folder.path(),
        &Way::tls(),
        &["up", &profile, "--pull", "never"],
    );
    assert_eq!(up.code, 0, "{up}");
    let config = tempfile::tempdir().unwrap();
    let context = unique_name("gpu2");
    let created = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "create", &context, "--docker"])
        .arg(format!(
            "host={TLS_ENDPOINT},ca={CERTIFICATES}/ca.pem,cert={CERTIFICATES}/cert.pem,key={CERTIFICATES}/key.pem"
        ))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    // Accepts connections (the kernel's backlog) and never answers.
    let silent_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!(
        "tcp://127.0.0.1:{}",
        silent_listener.local_addr().unwrap().port()
    );
    let hosts = [
        "unix:///var/run/docker.sock".to_string(),
        context.clone(),
        "ssh://gpu2".to_string(),
        stopped.clone(),
        silent.clone(),
    ];
    let way = Way {
        name: "hosts",
        variables: vec![
            ("DOCKER_CONFIG".into(), config.path().into()),
            ("PATH".into(), sshd.path()),
        ],
    };
    let list = hosts.join(",");
    let started = Instant::now();
    // Every user's containers, as the docker CLI's reference lists them: whose they are on
    // each host (the identity each transport proves) is `team_identity`'s test.
    let json = envctl(
        folder.path(),
        &way,
        &["--json", "ps", "--all-users", "--hosts", &list],
    );
    let took = started.elapsed();
    assert_eq!(json.code, 0, "{json}");
    // The silent host costs its ping deadline (3 s), once: not one host after another.
    assert!(took < Duration::from_secs(6), "took {took:?}: {json}");
    let document = json.json();
    let states = document["hosts"].as_array().unwrap();
    let listed: Vec<&str> = states
        .iter()
        .map(|state| state["host"].as_str().unwrap())
        .collect();
    assert_eq!(listed, hosts.iter().map(String::as_str).collect::<Vec<_>>());
    for state in states {
        let host = state["host"].as_str().unwrap();
        let reachable = state["reachable"].as_bool().unwrap();
        if host == stopped || host == silent {
            assert!(!reachable, "{host}: {json}");
            assert!(state["error"].as_str().is_some(), "{json}");
            let kind = state["error_kind"].as_str().unwrap();
            let expected = if host == stopped {
                "connection_refused"
            } else {
                "timeout"
            };
            assert_eq!(kind, expected, "{host}: {json}");
            continue;
        }
        assert!(reachable, "{host}: {json}");
        // The reference: what the docker CLI lists there, of envctl's containers.
        let mut cli = Command::new("docker");
        cli.env("DOCKER_CONFIG", config.path())
            .env("PATH", sshd.path())
            .env_remove("DOCKER_HOST")
            .env_remove("DOCKER_CONTEXT");
        if host.contains("://") {
            cli.args(["-H", host]);
        } else {
            cli.args(["--context", host]);
        }
        let cli = cli
            .args([
                "ps",
                "--filter",
                "label=envctl.profile",
                "--format",
                "{{.Names}}",
            ])
            .output()
            .unwrap();
        assert!(cli.status.success(), "{host}: {cli:?}");
        // Only this test's container: other tests make and remove theirs meanwhile.
        let expected: Vec<String> = String::from_utf8_lossy(&cli.stdout)
            .lines()
            .filter(|name| *name == container)
            .map(str::to_string)
            .collect();
        let names: Vec<String> = document["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["host"] == host && row["name"] == container.as_str())
            .map(|row| row["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, expected, "{host}: {json}");
        let on_second = host != "unix:///var/run/docker.sock";
        assert_eq!(names.contains(&container), on_second, "{host}: {json}");
    }
    // The table: a HOST column, the container under both names of the second daemon,
    // each unreachable host a row saying why, and its hint on stderr.
    let table = envctl(
        folder.path(),
        &way,
        &["ps", "--all-users", "--hosts", &list],
    );
    assert_eq!(table.code, 0, "{table}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    for host in [&context, "ssh://gpu2"] {
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with(&format!("{host} ")) && line.contains(&container)),
            "{host}: {table}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers at")),
        "{table}"
    );
    assert!(
        table.stderr.contains(&format!(
            "warning: host `{stopped}` could not be listed (hint:"
        )),
        "{table}"
    );
    // Bad lists are usage errors, before anything is asked.
    for bad in [",", &format!("{context},{context}")] {
        let run = envctl(folder.path(), &way, &["ps", "--hosts", bad]);
        assert_eq!(run.code, 2, "{bad}: {run}");
    }
    let run = envctl(
        folder.path(),
        &way,
        &[
            "-H",
            "unix:///var/run/docker.sock",
            "ps",
            "--hosts",
            &context,
        ],
    );
    assert_eq!(run.code, 2, "{run}");
    let down = envctl(folder.path(), &Way::tls(), &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
    drop(silent_listener);
}

/// `doctor --hosts`: the local daemon and the second one side by side; a profile's image
/// on one of them only is a marked difference (exit 1); once the same image is on both,
/// they agree (exit 0); a stopped host is a column saying why and no difference.
#[test]
fn doctor_hosts_marks_where_the_setups_differ() {
    let Some(engine) = dockerd2("doctor_hosts_marks_where_the_setups_differ") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    // An image of its own on the second daemon only, then copied to the local one.
    let image = format!("{}:1", unique_name("envctl-test-hosts"));
    let _remote_image = engine.image_guard(image.clone());
    let _local_image = crate::support::docker::ImageGuard::new(image.as_str());
    engine.docker_stdout(["tag", engine.test_image().as_str(), image.as_str()]);
    let profile = unique_name("compared");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let list = format!("unix:///var/run/docker.sock,{TLS_ENDPOINT},{stopped}");
    let way = Way {
        name: "hosts",
        variables: vec![
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
        ],
    };
    // The GPUs the second daemon's own fixture gives a probe, not a record another test's
    // stand-in NVML kept there meanwhile (the Slurm tests run envctl on that machine).
    let _record = crate::support::docker::BuildLock::acquire_at(
        &crate::support::docker::dockerd2_record_lock(),
    );
    engine.docker(["volume", "rm", "envctl-gpus"]);
    let run = envctl(folder.path(), &way, &["--json", "doctor", "--hosts", &list]);
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    let facts = report["facts"].as_array().unwrap();
    let row = |name: &str| {
        facts
            .iter()
            .find(|fact| fact["fact"] == name)
            .unwrap_or_else(|| panic!("no {name}: {run}"))
            .clone()
    };
    let image_row = row(&format!("{profile}: image id"));
    assert_eq!(image_row["differs"], true, "{run}");
    assert_eq!(image_row["cells"][0]["text"], "absent", "{run}");
    assert_eq!(image_row["cells"][2]["state"], "unknown", "{run}");
    assert_eq!(row("engine")["differs"], false, "{run}");
    // The second daemon is another machine whose GPUs its stand-in nvidia-smi tells (four
    // A100s on driver 550), where this machine has no NVML.
    let branch = row("NVIDIA driver branch");
    assert_eq!(branch["differs"], true, "{run}");
    assert_eq!(branch["cells"][0]["text"], "no NVML", "{run}");
    assert_eq!(branch["cells"][1]["text"], "550", "{run}");
    assert_eq!(
        row("GPUs")["cells"][1]["text"],
        "4 × NVIDIA A100-SXM4-80GB",
        "{run}"
    );
    assert_eq!(report["differences"], 4, "{run}");
    assert_eq!(report["hosts"][2]["reachable"], false, "{run}");
    // The table marks it.
    let table = envctl(folder.path(), &way, &["doctor", "--hosts", &list]);
    assert_eq!(table.code, 1, "{table}");
    assert!(
        table
            .stdout
            .lines()
            .any(|line| line.starts_with('≠') && line.contains(&profile)),
        "{table}"
    );
    // The same image on both: they agree.
    let saved = tempfile::tempdir().unwrap();
    let tarball = saved.path().join("image.tar");
    engine.docker_stdout(["save", "-o", tarball.to_str().unwrap(), image.as_str()]);
    crate::support::docker::docker_stdout(["load", "-i", tarball.to_str().unwrap()]);
    let run = envctl(folder.path(), &way, &["--json", "doctor", "--hosts", &list]);
    let report = run.json();
    let image_row = report["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|fact| fact["fact"] == format!("{profile}: image id"))
        .unwrap()
        .clone();
    assert_eq!(image_row["differs"], false, "{run}");
    // Only the GPUs differ now.
    assert_eq!(report["differences"], 3, "{run}");
}

/// A laptop without NVML (a UTS namespace named `envctl-laptop`, no NVML library) asks
/// the second daemon, over TLS, for a GPU profile: that daemon's stand-in hook gives GPUs,
/// which the laptop cannot see. It is judged by the daemon's facts (NVML: that machine's,
/// not a failure here), not refused, and the container starts there with its GPU request.
#[test]
fn a_gpu_profile_from_a_machine_without_nvml_starts_on_the_remote_gpu_daemon() {
    let test = "a_gpu_profile_from_a_machine_without_nvml_starts_on_the_remote_gpu_daemon";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    if !is_root() {
        skip_or_panic(
            "not root: `unshare --uts` needs CAP_SYS_ADMIN",
            test,
            "run the tests as root (.ci/run does)",
        );
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("laptop-gpu");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!(
            "image = \"{}\"\ngpus = 1\nmemory = \"64m\"\ncommand = [\"sleep\", \"600\"]\n",
            engine.test_image()
        ),
    )
    .unwrap();
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let laptop = |arguments: &[&str]| {
        let mut command = crate::support::cli::envctl_on_a_laptop_in(folder.path(), None);
        command.args(arguments);
        Way::tls().apply(&mut command);
        command.env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"));
        Run::of(
            crate::support::docker::run_with_timeout(&mut command, Duration::from_secs(120))
                .unwrap(),
        )
    };
    let doctor = laptop(&["--json", "doctor", &profile]);
    let report = doctor.json();
    let finding = |id: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .chain(
                report["profiles"][0]["findings"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .find(|finding| finding["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {doctor}"))
            .clone()
    };
    assert_eq!(finding("gpu.nvml")["status"], "info", "{doctor}");
    assert_eq!(finding("host.elsewhere")["status"], "info", "{doctor}");
    assert_ne!(finding("profile.gpus")["status"], "fail", "{doctor}");
    let up = laptop(&["up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    let inspected = Way::tls().docker(&[
        "inspect",
        "--format",
        "{{.State.Running}} {{json .HostConfig.DeviceRequests}}",
        &container,
    ]);
    let line = String::from_utf8_lossy(&inspected.stdout).to_string();
    assert!(line.starts_with("true "), "{line}");
    assert!(line.contains("\"gpu\""), "{line}");
    // Not on this machine's daemon.
    assert!(
        !docker_names(
            &Way {
                name: "local",
                variables: vec![]
            },
            true
        )
        .contains(&container)
    );
}
