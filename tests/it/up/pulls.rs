//! Pulls from a loopback registry: progress lines (none with `--json`), `--pull never` naming a
//! missing image, a missing tag, an unreachable registry, one asking for credentials and one that
//! never answers, each named with its fix, and SIGINT or SIGTERM during a slow pull leaving
//! nothing.

use super::*;

/// Pull progress lines in plain mode: `<12 hex digits>: <status>`.
fn progress_lines<'a>(stderr: &'a str, status: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|line| {
            line.split_once(": ").is_some_and(|(layer, said)| {
                layer.len() == 12 && layer.chars().all(|c| c.is_ascii_hexdigit()) && said == status
            })
        })
        .collect()
}

/// A new image (test image plus one unique layer) pushed as `reference` and then removed
/// locally, so that `up` has to pull it for real.
fn push_unique_image(registry: &Registry, repo: &str) -> String {
    let source = ContainerGuard::unique("envctl-up-layer");
    let marker = unique_name("layer");
    docker_stdout([
        "run",
        "--name",
        source.name(),
        test_image().as_str(),
        "sh",
        "-c",
        &format!("echo {marker} > /unique"),
    ]);
    let reference = registry.reference(repo, "v1");
    docker_stdout(["commit", source.name(), reference.as_str()]);
    let pushed = docker_output(["push", reference.as_str()]);
    assert!(
        pushed.status.success(),
        "docker push {reference}: {}\n{}",
        String::from_utf8_lossy(&pushed.stderr),
        registry.log()
    );
    docker_stdout(["rmi", reference.as_str()]);
    assert!(!image_exists(&reference));
    reference
}

#[test]
fn pull_shows_progress_lines_from_a_local_registry_and_none_with_json() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pull");
    let reference = push_unique_image(&registry, &repo);
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pull");
    scenario.write_profile(&reference, "");

    // stderr is a pipe here: plain progress lines, one per layer and status.
    let run = scenario.up(&[]);
    run.expect_code(0, "up pulling from the local registry");
    assert!(
        run.stderr.contains(&format!("pulling {reference}")),
        "{run}"
    );
    assert!(
        !progress_lines(&run.stderr, "Pull complete").is_empty(),
        "expected `<layer>: Pull complete` lines on stderr\n{run}"
    );
    assert!(image_exists(&reference), "the image exists after the pull");
    assert!(scenario.is_running());
    assert_eq!(run.stdout.trim(), scenario.container, "{run}");

    // Again with --json: no progress on stderr, one JSON document on stdout.
    scenario
        .run(&["down", scenario.profile.as_str(), "--rm"])
        .expect_code(0, "down --rm");
    docker_stdout(["rmi", reference.as_str()]);
    assert!(!image_exists(&reference));
    let run = scenario.run(&["--json", "up", scenario.profile.as_str()]);
    run.expect_code(0, "--json up pulling");
    let report = run.json();
    assert_eq!(report["status"], "created", "{report}");
    assert_eq!(report["image"], reference.as_str(), "{report}");
    for progress in [
        "Pull complete",
        "Pulling fs layer",
        "Downloading",
        "Extracting",
        "Digest:",
        "Status:",
    ] {
        assert!(
            !run.stderr.contains(progress),
            "--json must not draw progress (`{progress}`) on stderr\n{run}"
        );
    }
    assert!(image_exists(&reference));
}

#[test]
fn pull_never_with_a_missing_image_fails_naming_it() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-never");
    let image = format!("{}:v1", unique_name("envctl-test/absent"));
    scenario.write_profile(&image, "");
    let run = scenario.up(&["--pull", "never"]);
    run.expect_code(1, "--pull never with a missing image");
    assert!(
        run.stderr.contains(&format!("error: image `{image}`")),
        "{run}"
    );
    assert!(run.stderr.contains("--pull never"), "{run}");
    assert!(run.stderr.contains("hint:"), "{run}");
    assert!(
        !run.stderr.contains(&format!("pulling {image}")),
        "nothing may be pulled\n{run}"
    );
    assert_eq!(scenario.containers(), 0);
}

#[test]
fn a_tag_missing_from_the_registry_names_image_registry_and_fix() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/tags");
    push_test_image(&registry, &repo, "v1");
    let missing = registry.reference(&repo, "v2-missing");
    let _never = ImageGuard::new(missing.as_str());
    let scenario = Scenario::new("up-notag");
    scenario.write_profile(&missing, "");
    let run = scenario.up(&[]);
    run.expect_code(1, "a tag the registry does not have");
    assert!(
        run.stderr.contains(&format!("cannot pull `{missing}`")),
        "{run}"
    );
    assert!(
        run.stderr
            .contains(&format!("from {}", registry.host_port())),
        "the error names the registry\n{run}"
    );
    assert!(
        run.stderr.contains("not found") || run.stderr.contains("manifest unknown"),
        "{run}"
    );
    assert!(
        run.stderr.contains("hint: check the image name and tag"),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
    assert!(!image_exists(&missing));
}

#[test]
fn an_unreachable_registry_is_named_as_the_cause() {
    if !require_daemon() {
        return;
    }
    let port = free_loopback_port();
    let image = format!("127.0.0.1:{port}/envctl-test/unreachable:v1");
    let scenario = Scenario::new("up-unreach");
    scenario.write_profile(&image, "");
    let run = scenario.up(&[]);
    run.expect_code(1, "a registry nothing listens on");
    assert!(
        run.stderr.contains(&format!("cannot pull `{image}`")),
        "{run}"
    );
    assert!(run.stderr.contains("connection refused"), "{run}");
    assert!(
        run.stderr
            .contains(&format!("hint: 127.0.0.1:{port} cannot be reached")),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
}

#[test]
fn sigint_during_a_slow_pull_exits_130_and_leaves_nothing() {
    signal_during_a_slow_pull("INT", 130);
}

#[test]
fn sigterm_during_a_slow_pull_exits_143_and_leaves_nothing() {
    signal_during_a_slow_pull("TERM", 143);
}

fn signal_during_a_slow_pull(signal: &str, expected_code: i32) {
    if !require_daemon() {
        return;
    }
    let blackhole = Blackhole::start();
    let image = format!("{}/envctl-test/slow:v1", blackhole.address);
    let _never = ImageGuard::new(image.as_str());
    let scenario = Scenario::new("up-sigint");
    scenario.write_profile(&image, "");
    let mut child = scenario
        .std_command()
        .args(["up", scenario.profile.as_str()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = crate::support::wait::Collected::start(child.stderr.take().unwrap());

    // The daemon connects to the registry only once `up` is pulling.
    let deadline = Instant::now() + Duration::from_secs(30);
    while blackhole.accepted.load(Ordering::SeqCst) == 0 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "up ended ({status}) before the pull started:\n{}",
                stderr.finish()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the daemon never connected to {}", blackhole.address);
        }
        thread::sleep(Duration::from_millis(20));
    }
    // `up` says so before it streams the pull's progress from the daemon.
    assert!(
        stderr.contains_within("pulling", Duration::from_secs(10)),
        "up never said it pulls:\n{}",
        stderr.text()
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the pull should still hang"
    );

    assert!(crate::support::signal::send(&child, signal));
    let Some(status) = crate::support::signal::wait_within(&mut child, Duration::from_secs(2))
    else {
        panic!(
            "up did not exit within 2 s of SIG{signal}:\n{}",
            stderr.finish()
        );
    };
    let stderr = stderr.finish();
    assert_eq!(status.code(), Some(expected_code), "{status:?}\n{stderr}");
    assert!(stderr.contains("pulling"), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(scenario.containers(), 0, "nothing may be left\n{stderr}");
    drop(blackhole);
    assert!(!image_exists(&image));
}

/// A registry that answers every request with 401 and a Basic challenge, like a private
/// registry the user has not logged in to.
fn unauthorized_registry() -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let mut request = [0u8; 4096];
                    let _ = std::io::Read::read(&mut stream, &mut request);
                    let body = r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#;
                    let response = format!(
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"envctl-test\"\r\nDocker-Distribution-API-Version: registry/2.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = std::io::Write::write_all(&mut stream, response.as_bytes());
                }
                Err(_) => thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (address, stop)
}

#[test]
fn a_registry_asking_for_credentials_is_named_with_docker_login() {
    if !require_daemon() {
        return;
    }
    let (address, stop) = unauthorized_registry();
    let image = format!("{address}/envctl-test/private:v1");
    let scenario = Scenario::new("up-unauthorized");
    scenario.write_profile(&image, "");
    let run = scenario.run(&["up", scenario.profile.as_str()]);
    stop.store(true, Ordering::Relaxed);
    run.expect_code(1, "a registry that wants credentials");
    assert!(run.stderr.contains(&image), "names the image: {run}");
    assert!(
        run.stderr.contains(&format!("docker login {address}")),
        "the fix: {run}"
    );
    assert_eq!(scenario.containers(), 0);
}

#[test]
fn a_registry_that_never_answers_is_named_after_the_stall_timeout() {
    if !require_daemon() {
        return;
    }
    let blackhole = Blackhole::start();
    let image = format!("{}/envctl-test/stalled:v1", blackhole.address);
    let scenario = Scenario::new("up-stalled");
    scenario.write_profile(&image, "");
    let started = Instant::now();
    let run = scenario.run_with(
        &["up", scenario.profile.as_str()],
        &[("ENVCTL_PULL_STALL_SECONDS", "2")],
    );
    let elapsed = started.elapsed();
    run.expect_code(1, "a registry that accepts and never answers");
    assert!(
        elapsed < Duration::from_secs(15),
        "gave up after {elapsed:?}\n{run}"
    );
    assert!(run.stderr.contains("no progress for 2 s"), "{run}");
    assert!(
        run.stderr.contains(&blackhole.address.to_string()),
        "names the registry: {run}"
    );
    assert!(
        run.stderr.contains("accepts connections but sends nothing"),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
}
