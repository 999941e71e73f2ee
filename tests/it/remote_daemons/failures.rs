//! Failures on the way: a TLS mismatch refused with the hint that fixes it, a certificate the
//! other side refuses named, SSH failing in its own words, and the ssh child ending with envctl.

use super::*;

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
