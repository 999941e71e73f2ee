//! envctl against a fake daemon (`support::fake_daemon`) that answers badly: headers and
//! then one byte a second, no headers at all, 500, bad JSON, a 50 MB error; and TARGETs
//! that must never reach another endpoint or another container.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::fake_daemon::{FakeDaemon, Reply, inspected_container, listed_container};

/// envctl's deadline for a short answer (`engine::ANSWER_DEADLINE`), and the slack a test
/// allows on top of it (start-up, a loaded machine).
const ANSWER_DEADLINE: Duration = Duration::from_secs(15);
const SLACK: Duration = Duration::from_secs(5);

/// envctl in `folder` against the fake `daemon`, with an NVML library that is never there
/// (no GPU facts to wait for), ended if it runs past a minute.
fn against(daemon: &FakeDaemon, folder: &Path) -> Envctl {
    Envctl::in_folder(folder)
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .daemon(&daemon.host())
        .timeout(Duration::from_secs(60))
}

/// A body of `length` bytes of valid JSON (an array of spaces), so only its pace is wrong.
fn slow_json(length: usize) -> String {
    format!("[{}]", " ".repeat(length))
}

#[test]
fn a_daemon_that_sends_one_byte_a_second_stops_ps_doctor_exec_and_logs_within_the_deadline() {
    let daemon = FakeDaemon::start(|request| {
        let trickle = Reply::trickle(200, slow_json(300), Duration::from_secs(1));
        match request.route() {
            "/containers/json" | "/info" => Some(trickle),
            route if route.starts_with("/containers/") => Some(trickle),
            _ => None,
        }
    });
    let folder = tempfile::tempdir().unwrap();
    let commands = [
        &["ps"][..],
        &["doctor"],
        &["exec", "some-container", "--", "true"],
        &["logs", "some-container"],
    ];
    // At once: each waits out the deadline.
    let outcomes: Vec<(Run, Duration)> = std::thread::scope(|scope| {
        let running: Vec<_> = commands
            .iter()
            .map(|arguments| {
                scope.spawn(|| against(&daemon, folder.path()).args(*arguments).run_timed())
            })
            .collect();
        running
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    for (arguments, (outcome, took)) in commands.iter().zip(outcomes) {
        let text = format!("{}{}", outcome.stdout, outcome.stderr);
        assert!(
            took < ANSWER_DEADLINE + SLACK,
            "{arguments:?} took {took:?}: {text}"
        );
        assert_eq!(outcome.code, 1, "{arguments:?}: {text}");
        assert!(text.contains("stopped answering"), "{arguments:?}: {text}");
        assert!(
            text.contains(&daemon.host()),
            "names the socket: {arguments:?}: {text}"
        );
    }
}

#[test]
fn a_daemon_that_never_sends_headers_stops_ps_within_the_deadline() {
    let daemon = FakeDaemon::start(|request| {
        (request.route() == "/containers/json").then_some(Reply::Silent {
            r#for: Duration::from_secs(200),
        })
    });
    let folder = tempfile::tempdir().unwrap();
    let (outcome, took) = against(&daemon, folder.path()).args(["ps"]).run_timed();
    assert!(took < ANSWER_DEADLINE + SLACK, "{took:?}");
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("stopped answering") && outcome.stderr.contains(&daemon.host()),
        "{}",
        outcome.stderr
    );
}

#[test]
fn an_error_answer_is_said_as_such_not_as_unreachable() {
    let daemon = FakeDaemon::start(|request| {
        (request.route() == "/info")
            .then(|| Reply::json(500, r#"{"message":"info is broken today"}"#))
    });
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/plain.toml"),
        "image = \"busybox:1\"\n",
    )
    .unwrap();
    for arguments in [&["up", "plain"][..], &["doctor"]] {
        let outcome = against(&daemon, folder.path()).args(arguments).run();
        let text = format!("{}{}", outcome.stdout, outcome.stderr);
        assert_ne!(outcome.code, 0, "{arguments:?}: {text}");
        assert!(!text.contains("not reachable"), "{arguments:?}: {text}");
        assert!(
            text.contains("answered 500: info is broken today"),
            "{arguments:?}: {text}"
        );
    }
}

#[test]
fn bad_json_is_quoted_not_called_unreachable() {
    let daemon = FakeDaemon::start(|request| {
        (request.route() == "/containers/json")
            .then(|| Reply::json(200, "<html>a proxy says hello</html>"))
    });
    let folder = tempfile::tempdir().unwrap();
    let outcome = against(&daemon, folder.path()).args(["ps"]).run();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("not with the Engine API's JSON")
            && outcome.stderr.contains("<html>a proxy says hello</html>"),
        "{}",
        outcome.stderr
    );
    assert!(
        !outcome.stderr.contains("not reachable"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_50_mb_error_is_capped() {
    let huge = format!(r#"{{"message":"{}"}}"#, "x".repeat(50 * 1024 * 1024));
    let daemon = FakeDaemon::start(move |request| {
        (request.route() == "/containers/json").then(|| Reply::json(500, huge.clone()))
    });
    let folder = tempfile::tempdir().unwrap();
    let (outcome, took) = against(&daemon, folder.path()).args(["ps"]).run_timed();
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.len() < 16 * 1024,
        "stderr is {} bytes",
        outcome.stderr.len()
    );
    assert!(
        outcome.stderr.contains("bytes more"),
        "{}",
        &outcome.stderr[..200]
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_path_that_is_not_a_socket_is_named_so() {
    let folder = tempfile::tempdir().unwrap();
    for (path, what) in [("/etc/passwd", "a regular file"), ("/etc", "a folder")] {
        let run = Envctl::in_folder(folder.path())
            .daemon(&format!("unix://{path}"))
            .arg("ps")
            .timeout(Duration::from_secs(20))
            .run();
        let stderr = &run.stderr;
        assert_eq!(run.code, 1, "{stderr}");
        assert!(
            stderr.contains(&format!("`{path}` is not a socket (it is {what})")),
            "{stderr}"
        );
        assert!(!stderr.contains("connection refused"), "{stderr}");
        assert!(!stderr.contains("restart Docker"), "{stderr}");
    }
}

/// Whether a request went anywhere but the container endpoints envctl means.
fn strays(daemon: &FakeDaemon) -> Vec<String> {
    daemon
        .requests()
        .into_iter()
        .filter(|request| {
            let path = request.split_whitespace().nth(1).unwrap_or_default();
            let path = path.split('?').next().unwrap_or_default();
            let route = path
                .strip_prefix("/v1.41")
                .or_else(|| path.strip_prefix("/v1.44"))
                .unwrap_or(path);
            !(route == "/_ping"
                || route == "/version"
                || route == "/containers/json"
                || (route.starts_with("/containers/")
                    && route.split('/').nth(2).is_some_and(|name| {
                        name.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
                            && !name.starts_with('.')
                    })))
                || request.contains("..")
                || request.contains("/images/")
        })
        .collect()
}

#[test]
fn targets_never_reach_another_endpoint() {
    let daemon = FakeDaemon::start(|request| match request.route() {
        "/containers/json" => Some(Reply::json(200, "[]")),
        _ => None,
    });
    let folder = tempfile::tempdir().unwrap();
    for target in [
        "",
        ".",
        "..",
        "x/../../v1.41/images/busybox/json",
        "x?all=1",
        "x#y",
        "%2e%2e",
    ] {
        for command in [
            &["down", target][..],
            &["exec", target, "--", "true"],
            &["logs", target],
        ] {
            let outcome = against(&daemon, folder.path()).args(command).run();
            assert_ne!(outcome.code, 0, "{command:?}: {}", outcome.stderr);
            assert!(
                !outcome.stderr.contains("panicked"),
                "{command:?}: {}",
                outcome.stderr
            );
        }
    }
    let strays = strays(&daemon);
    assert!(
        strays.is_empty(),
        "requests outside the container endpoints: {strays:?}"
    );
}

#[test]
fn a_short_id_prefix_never_names_another_container() {
    // The daemon resolves any id prefix: `1548e` is the start of another container's id.
    let other_id = format!("1548e{}", "0".repeat(59));
    let answer = inspected_container(&other_id, "someone-elses", Some("theirs"), true);
    let daemon = FakeDaemon::start(move |request| match request.route() {
        "/containers/json" => Some(Reply::json(200, "[]")),
        "/containers/1548e/json" => Some(Reply::json(200, answer.clone())),
        _ => None,
    });
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/1548e.toml"),
        "image = \"busybox:1\"\n",
    )
    .unwrap();
    let outcome = against(&daemon, folder.path())
        .args(["down", "1548e"])
        .run();
    // Nothing of the profile's to stop: said, exit 0 (issue 15, item 10).
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains("nothing to stop: profile `1548e` has no container"),
        "{}",
        outcome.stderr
    );
    let requests = daemon.requests();
    assert!(
        !requests.iter().any(|request| request.contains("/stop")),
        "nothing is stopped: {requests:?}"
    );
    // Without a profile of that name, the hint says why the prefix was not taken.
    std::fs::remove_file(folder.path().join("envctl/1548e.toml")).unwrap();
    let outcome = against(&daemon, folder.path())
        .args(["exec", "1548e", "--", "true"])
        .run();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("at least 12 hex digits"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_container_replaced_while_down_looks_is_found_again_not_called_removed() {
    // `up --recreate` at work: the first list shows the old container, which is gone when
    // inspected; the new one runs under the same name.
    let old = format!("a{}", "1".repeat(63));
    let new = format!("b{}", "2".repeat(63));
    let lists = std::sync::atomic::AtomicUsize::new(0);
    let (old_listed, new_listed) = (
        listed_container(&old, "envctl-racing", "racing"),
        listed_container(&new, "envctl-racing", "racing"),
    );
    let new_inspected = inspected_container(&new, "envctl-racing", Some("racing"), true);
    let (old_route, new_route) = (
        format!("/containers/{old}/json"),
        format!("/containers/{new}/json"),
    );
    let new_stop = format!("/containers/{new}/stop");
    let daemon = FakeDaemon::start(move |request| {
        let route = request.route();
        if route == "/containers/json" {
            let seen = lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let listed = if seen == 0 { &old_listed } else { &new_listed };
            Some(Reply::json(200, format!("[{listed}]")))
        } else if route == old_route {
            Some(Reply::not_found())
        } else if route == new_route {
            Some(Reply::json(200, new_inspected.clone()))
        } else if route == new_stop {
            Some(Reply::no_content())
        } else {
            None
        }
    });
    let folder = tempfile::tempdir().unwrap();
    let outcome = against(&daemon, folder.path())
        .args(["down", "racing"])
        .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(!outcome.stderr.contains("meanwhile"), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("stopped envctl-racing"),
        "{}",
        outcome.stderr
    );
    let requests = daemon.requests();
    assert!(
        requests.iter().any(
            |request| request.starts_with(&format!("POST /containers/{new}/stop"))
                || request.contains(&format!("/containers/{new}/stop"))
        ),
        "{requests:?}"
    );
}

/// A daemon whose container answers a removal with 409 and, read again, is in the state
/// `after` (`removing` while another removal is under way); the outcome of a sweep of it.
fn sweep_meeting_a_409(after: &'static str) -> (Run, FakeDaemon) {
    use std::sync::atomic::{AtomicBool, Ordering};
    const ID: &str = "3f1c9b2e0a7d3f1c9b2e0a7d3f1c9b2e0a7d3f1c9b2e0a7d3f1c9b2e0a7d1234";
    const NAME: &str = "envctl-train-job42-0a1b2c3d";
    const JOB_OF: &str = r#""envctl.profile":"train""#;
    const JOB: &str = r#""envctl.profile":"train","envctl.slurm-job":"42""#;
    let deleted = AtomicBool::new(false);
    let daemon = FakeDaemon::start(move |request| {
        crate::support::fake_daemon::standard(request).or_else(|| {
            match (request.method.as_str(), request.route()) {
                ("GET", "/containers/json") => Some(Reply::json(
                    200,
                    // The job's label too: envctl checks a list's labels itself.
                    format!(
                        "[{}]",
                        listed_container(ID, NAME, "train").replace(JOB_OF, JOB)
                    ),
                )),
                ("GET", route) if route.starts_with("/containers/") => {
                    let inspected =
                        inspected_container(ID, NAME, Some("train"), false).replace(JOB_OF, JOB);
                    Some(Reply::json(
                        200,
                        if deleted.load(Ordering::SeqCst) {
                            inspected
                                .replace(r#""Status":"exited""#, &format!(r#""Status":"{after}""#))
                        } else {
                            inspected
                        },
                    ))
                }
                ("GET", route) if route.starts_with("/images/") => Some(Reply::json(
                    200,
                    r#"{"Id":"sha256:0","RepoTags":["busybox:latest"],"Config":{"Labels":{}}}"#,
                )),
                ("DELETE", _) => {
                    deleted.store(true, Ordering::SeqCst);
                    Some(Reply::json(
                        409,
                        format!(
                            r#"{{"message":"removal of container {ID} is already in progress"}}"#
                        ),
                    ))
                }
                _ => None,
            }
        })
    });
    let folder = tempfile::tempdir().unwrap();
    let outcome = against(&daemon, folder.path())
        .args(["down", "--slurm-job", "42", "--rm"])
        .run();
    (outcome, daemon)
}

/// Issue 40: a Slurm Epilog's sweep racing `run`'s own cleanup meets Docker's 409
/// "removal … already in progress": the container is going (read again, its state is
/// `removing`), so it counts as removed and the sweep succeeds (it reported a failure).
#[test]
fn a_sweep_racing_another_removal_counts_the_container_as_removed() {
    let (outcome, daemon) = sweep_meeting_a_409("removing");
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(!outcome.stderr.contains("409"), "{}", outcome.stderr);
    assert!(
        daemon
            .requests()
            .iter()
            .any(|request| request.starts_with("DELETE")),
        "{:?}",
        daemon.requests()
    );
}

/// The 409's words are not what decides: a container that, read again, is neither gone
/// nor being removed was not removed, whatever the daemon said, and the sweep fails.
#[test]
fn a_409_on_a_container_still_there_is_a_failed_removal() {
    let (outcome, _daemon) = sweep_meeting_a_409("exited");
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert!(outcome.stderr.contains("409"), "{}", outcome.stderr);
}

/// A server that answers plain HTTP with 404 and a TLS hello with a TLS alert (a proxy in
/// front of every port does both) is no TLS-only daemon: envctl says what it answered,
/// never "speaks TLS" with a hint to turn TLS on (which would not reach a daemon either).
#[test]
fn a_plain_http_answer_is_never_called_tls_because_the_port_also_answers_tls() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut first = [0u8; 1];
            if stream.read_exact(&mut first).is_err() {
                continue;
            }
            if first[0] == 0x16 {
                // A TLS alert record: version 3.3, fatal (2), handshake_failure (40).
                let _ = stream.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]);
                continue;
            }
            let mut request = first.to_vec();
            let mut chunk = [0u8; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => request.extend_from_slice(&chunk[..read]),
                }
            }
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let folder = tempfile::tempdir().unwrap();
    let run = Envctl::in_folder(folder.path())
        .args(["-H", &format!("tcp://127.0.0.1:{port}"), "ps"])
        .timeout(Duration::from_secs(60))
        .run();
    let stderr = &run.stderr;
    assert_ne!(run.code, 0, "{stderr}");
    assert!(!stderr.contains("speaks TLS"), "{stderr}");
    assert!(stderr.contains("404"), "{stderr}");
}
