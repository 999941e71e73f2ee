//! The engine adapter against the real Docker daemon: facts from a reachable daemon, and a
//! named cause for each way of not reaching one, each within 3 s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::support::docker::{require_daemon, test_image};
use envctl::facts::engine::EngineState;
use envctl_engine::{Engine, EngineError};

const TIMEOUT: Duration = Duration::from_secs(3);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn docker_host() -> Option<String> {
    std::env::var("DOCKER_HOST").ok()
}

#[test]
fn reachable_daemon_reports_its_facts() {
    if !require_daemon() {
        return;
    }
    let engine = Engine::connect(docker_host().as_deref(), TIMEOUT).unwrap();
    let facts = runtime().block_on(engine.facts());
    let EngineState::Reachable(daemon) = facts.state else {
        panic!("daemon should be reachable: {facts:?}");
    };
    assert!(daemon.server_version.is_some());
    assert!(daemon.api_version.is_some());
    assert!(
        daemon.runtimes.iter().any(|runtime| runtime == "runc"),
        "{:?}",
        daemon.runtimes
    );
    assert!(
        !daemon.runtimes.iter().any(|runtime| runtime == "nvidia"),
        "the test machine has no NVIDIA runtime; a GPU verdict must be able to say so"
    );
    assert!(
        matches!(daemon.cgroup_version.as_deref(), Some("1" | "2")),
        "{:?}",
        daemon.cgroup_version
    );
    assert!(daemon.docker_root_dir.is_some());
}

#[test]
fn image_facts_read_the_config_env_or_say_absent() {
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let engine = Engine::connect(docker_host().as_deref(), TIMEOUT).unwrap();
    let runtime = runtime();
    let facts = runtime
        .block_on(engine.image_facts(&image))
        .unwrap()
        .expect("the test image is present");
    assert_eq!(facts.reference, image);
    assert!(facts.id.as_deref().unwrap().starts_with("sha256:"));
    assert!(
        facts.env.is_empty(),
        "busybox has no CUDA env: {:?}",
        facts.env
    );
    let absent = runtime
        .block_on(engine.image_facts("envctl-test/never-built:nope"))
        .unwrap();
    assert_eq!(absent, None);
}

#[test]
fn missing_socket_is_named_at_connect() {
    let started = Instant::now();
    let error =
        Engine::connect(Some("unix:///nonexistent/envctl-test/docker.sock"), TIMEOUT).unwrap_err();
    assert!(
        matches!(&error, EngineError::SocketMissing { path, .. } if path.contains("/nonexistent/envctl-test/docker.sock")),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("/nonexistent/envctl-test/docker.sock")
    );
    assert!(error.hint().unwrap().contains("systemctl start docker"));
    assert!(started.elapsed() < TIMEOUT);
}

#[test]
fn stale_socket_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let endpoint = format!("unix://{}", path.display());
    let engine = Engine::connect(Some(&endpoint), TIMEOUT).unwrap();
    let started = Instant::now();
    let error = runtime().block_on(engine.ping()).unwrap_err();
    assert!(
        matches!(error, EngineError::ConnectionRefused { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(&endpoint));
    assert!(started.elapsed() < TIMEOUT);
}

#[test]
fn closed_tcp_port_is_refused_quickly() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let engine = Engine::connect(Some(&endpoint), TIMEOUT).unwrap();
    let started = Instant::now();
    let facts = runtime().block_on(engine.facts());
    assert!(started.elapsed() < TIMEOUT, "took {:?}", started.elapsed());
    match facts.state {
        EngineState::Unreachable {
            kind,
            message,
            hint,
        } => {
            assert_eq!(kind, "connection_refused");
            assert!(message.contains(&endpoint), "{message}");
            assert!(hint.is_some());
        }
        other => panic!("expected unreachable, got {other:?}"),
    }
}

#[test]
fn a_daemon_that_never_answers_times_out() {
    // A listener that accepts and says nothing: a hung daemon.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let engine = Engine::connect(Some(&endpoint), Duration::from_secs(1)).unwrap();
    let started = Instant::now();
    let error = runtime().block_on(engine.ping()).unwrap_err();
    assert!(matches!(error, EngineError::Timeout { .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(listener);
}

#[test]
fn unsupported_scheme_is_named() {
    let error = Engine::connect(Some("ftp://example"), TIMEOUT).unwrap_err();
    assert!(
        matches!(error, EngineError::UnsupportedHost { .. }),
        "{error:?}"
    );
}
