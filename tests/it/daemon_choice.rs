//! The daemon the user chose (issue 27, item 1), with the docker CLI as the reference: a
//! context in a private `DOCKER_CONFIG` that points at the Podman 5.4 service, made with
//! `docker context create`, is followed by `--context`, `DOCKER_CONTEXT` and
//! `docker context use` (`currentContext`) alike, so `envctl up` makes its container where
//! `docker ps` then shows it; `DOCKER_HOST` and `-H` win as they do for the CLI; an unknown
//! context is an error naming it, as the CLI's is; and where TLS is asked for nothing goes
//! out in cleartext. TLS, ssh and contexts against a second Docker daemon are in
//! `remote_daemons.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::unique_name;
use crate::support::engines::{Family, TestEngine, engines};

/// The Podman 5.4 service, or `None` when this run has none (reported, or a failure under
/// `ENVCTL_REQUIRE_DOCKER=1`).
fn podman(test: &str) -> Option<TestEngine> {
    let found = engines()?
        .into_iter()
        .find(|engine| engine.family == Family::Podman && engine.version_pair() >= (5, 4));
    if found.is_none()
        && crate::support::docker::skip_or_panic(
            "no Podman 5.4 service to stand for a second server",
            test,
            "run .ci/podman.sh (it exports ENVCTL_TEST_PODMAN)",
        )
    {
        panic!("unreachable: skip_or_panic returned true without an engine");
    }
    found
}

/// The docker CLI with `DOCKER_CONFIG=config` and no `DOCKER_HOST`/`DOCKER_CONTEXT`.
fn docker_cli(config: &Path, arguments: &[&str]) -> std::process::Output {
    Command::new("docker")
        .env("DOCKER_CONFIG", config)
        .env_remove("DOCKER_HOST")
        .env_remove("DOCKER_CONTEXT")
        .args(arguments)
        .output()
        .unwrap()
}

/// What `envctl doctor --json` says of the engine it reached.
fn engine_reached(run: &Run) -> String {
    run.json()["host"]["engine"].to_string()
}

#[test]
fn a_context_is_followed_as_the_docker_cli_follows_it() {
    let Some(podman) = podman("a_context_is_followed_as_the_docker_cli_follows_it") else {
        return;
    };
    let config = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let name = unique_name("context");
    let created = docker_cli(
        config.path(),
        &[
            "context",
            "create",
            &name,
            "--docker",
            &format!("host={}", podman.host),
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let image = podman.test_image();
    let profile = unique_name("remote");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();
    let container = format!("envctl-{profile}");
    let _guard = podman.container_guard(container.clone());

    // --context, DOCKER_CONTEXT and `docker context use` reach Podman; without them,
    // Docker's own daemon answers.
    let local = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["--json", "doctor"])
        .run();
    assert!(!engine_reached(&local).contains("Podman"), "{local}");
    let flagged = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["--json", "--context", &name, "doctor"])
        .run();
    let by_variable = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .env("DOCKER_CONTEXT", &name)
        .args(["--json", "doctor"])
        .run();
    for (run, by) in [(&flagged, "--context"), (&by_variable, "DOCKER_CONTEXT")] {
        assert!(
            run.stdout.contains(&format!(
                "daemon {} chosen by context {name} ({by})",
                podman.host
            )),
            "doctor names the context and its endpoint\n{run}"
        );
        let reached = engine_reached(run);
        assert!(
            reached.to_lowercase().contains("podman"),
            "{reached}\n{run}"
        );
    }
    let used = docker_cli(config.path(), &["context", "use", &name]);
    assert!(used.status.success(), "{used:?}");
    let up = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["up", &profile, "--pull", "never"])
        .run();
    assert_eq!(up.code, 0, "{up}");
    // The reference: the docker CLI with the same configuration sees the container there.
    let listed = docker_cli(config.path(), &["ps", "--format", "{{.Names}}"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout)
            .lines()
            .any(|line| line == container),
        "{listed:?}"
    );
    let ps = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["ps", "--json"])
        .run();
    assert!(ps.stdout.contains(&container), "{ps}");
    // DOCKER_HOST and -H win over the current context, for the CLI as for envctl.
    let host = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .env("DOCKER_HOST", "unix:///var/run/docker.sock")
        .args(["ps", "--json"])
        .run();
    assert!(!host.stdout.contains(&container), "{host}");
    let flag = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["-H", "unix:///var/run/docker.sock", "ps", "--json"])
        .run();
    assert!(!flag.stdout.contains(&container), "{flag}");
    let down = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["down", &profile, "--rm"])
        .run();
    assert_eq!(down.code, 0, "{down}");

    // An unknown context is an error naming it, for the CLI and for envctl.
    let cli = docker_cli(config.path(), &["--context", "nosuch", "ps"]);
    assert!(!cli.status.success(), "{cli:?}");
    let run = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args(["--context", "nosuch", "ps"])
        .run();
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .starts_with("error: context `nosuch` (--context) does not exist"),
        "{run}"
    );
    // --host and --context together: refused, as the CLI refuses them.
    let run = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .args([
            "-H",
            "unix:///var/run/docker.sock",
            "--context",
            &name,
            "ps",
        ])
        .run();
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stderr.contains("either give --host or --context"),
        "{run}"
    );
}

/// Where TLS was asked for, nothing goes out in cleartext: with no CA to verify the daemon
/// with, nothing is sent at all (the CLI refuses too: `open …/ca.pem`); with one, the first
/// bytes envctl sends are a TLS record, never an HTTP request.
#[test]
fn tls_asked_for_never_sends_cleartext() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let host = format!("tcp://127.0.0.1:{port}");
    let empty = tempfile::tempdir().unwrap();
    let cert_path = empty.path().to_str().unwrap();
    let cli = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .env("DOCKER_HOST", &host)
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", cert_path)
        .args(["ps"])
        .output()
        .unwrap();
    assert!(!cli.status.success(), "{cli:?}");
    listener.set_nonblocking(true).unwrap();
    for arguments in [&["ps"][..], &["--json", "doctor"]] {
        let run = Envctl::in_folder(folder.path())
            .env("DOCKER_CONFIG", config.path())
            .env("DOCKER_HOST", &host)
            .env("DOCKER_TLS_VERIFY", "1")
            .env("DOCKER_CERT_PATH", cert_path)
            .args(arguments)
            .run();
        let text = format!("{}{}", run.stdout, run.stderr);
        assert_ne!(run.code, 0, "{run}");
        assert!(
            text.contains(&format!(
                "over TLS (DOCKER_TLS_VERIFY is set): `{cert_path}/ca.pem` does not exist"
            )),
            "{arguments:?}: {run}"
        );
    }
    assert!(
        listener.accept().is_err(),
        "envctl connected without the CA it was told to verify with"
    );

    // A CA of the test's own: envctl connects, and says TLS.
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=test-ca", "-keyout"])
        .arg(empty.path().join("ca-key.pem"))
        .arg("-out")
        .arg(empty.path().join("ca.pem"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    listener.set_nonblocking(false).unwrap();
    let first_bytes = std::thread::spawn(move || {
        use std::io::Read as _;
        let (mut stream, _) = listener.accept().unwrap();
        let mut first = [0u8; 3];
        stream.read_exact(&mut first).unwrap();
        first
    });
    let run = Envctl::in_folder(folder.path())
        .env("DOCKER_CONFIG", config.path())
        .env("DOCKER_HOST", &host)
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", cert_path)
        .args(["ps"])
        .run();
    assert_eq!(run.code, 1, "{run}");
    let first = first_bytes.join().unwrap();
    // A TLS handshake record (22), version 3.x: a ClientHello.
    assert_eq!(&first[..2], &[22, 3], "envctl's first bytes: {first:?}");
}
