//! Refusals that create nothing or say why: a missing bind source, an unreachable daemon within
//! 3 seconds, a create refused with 400, a port another container publishes (and the hint that
//! moves it), and ulimits runc refuses or a daemon may not raise.

use super::*;

#[test]
fn a_missing_bind_source_is_refused_before_anything_is_created() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-nobind");
    scenario.write_profile(&test_image(), "mounts = [\"./not-there:/data\"]\n");
    let run = scenario.up(&[]);
    run.expect_code(1, "a missing bind source");
    let missing = scenario.path().join("not-there");
    assert!(
        run.stderr
            .contains(&format!("mkdir -p {}", missing.display())),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
    assert!(!missing.exists(), "nobody may create the host folder");
    insta::assert_snapshot!("missing_bind_source", scenario.redact(&run.stderr));
}

#[test]
fn an_unreachable_daemon_is_named_within_3_seconds() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-nodaemon");
    scenario.write_profile(&test_image(), "");
    let started = Instant::now();
    let run = scenario.run_with(
        &["up", scenario.profile.as_str()],
        &[("DOCKER_HOST", "unix:///nonexistent.sock")],
    );
    let elapsed = started.elapsed();
    run.expect_code(1, "DOCKER_HOST at a socket that does not exist");
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}\n{run}");
    assert!(run.stderr.contains("/nonexistent.sock"), "{run}");
    assert!(run.stderr.contains("hint:"), "{run}");
    assert!(run.stderr.contains("DOCKER_HOST"), "{run}");
    assert_eq!(scenario.containers(), 0);
}

/// Issue 15, item 5: a create the daemon refuses with a 400 is never shown bare: the
/// daemon's words are the cause, and the hint says where the profile is checked.
#[test]
fn a_create_refused_with_400_gets_a_cause_and_a_hint_and_leaves_nothing() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-400");
    scenario.write_profile(&test_image(), "cpus = 4096\n");
    let _guard = ContainerGuard::new(scenario.container.clone());
    let run = scenario.up(&["--force"]);
    run.expect_code(1, "a create the daemon refuses");
    assert!(
        run.stderr.contains("the daemon refused to create"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("caused by:") && run.stderr.contains("400"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("hint: `envctl doctor {}`", scenario.profile)),
        "{}",
        run.stderr
    );
    assert_eq!(scenario.containers(), 0);
}

/// Issue 15, item 7: a host port another running container publishes (one envctl did not
/// make) is found before anything is created: the container holding it is named, with a
/// `-p` fix; before, the daemon's 500 at start said neither.
#[test]
fn a_port_published_by_another_container_is_named_before_create() {
    if !require_daemon() {
        return;
    }
    let port = free_loopback_port();
    let holder = ContainerGuard::unique("envctl-test-port-holder");
    let started = docker_output([
        "run",
        "-d",
        "--name",
        holder.name(),
        "-p",
        &format!("0.0.0.0:{port}:80"),
        &test_image(),
        "sleep",
        "600",
    ]);
    assert!(started.status.success(), "{started:?}");
    let scenario = Scenario::new("up-port-taken");
    scenario.write_profile(&test_image(), &format!("ports = [\"{port}:{port}\"]\n"));
    let _guard = ContainerGuard::new(scenario.container.clone());
    let run = scenario.up(&[]);
    run.expect_code(1, "a port another container publishes");
    assert!(
        run.stderr.contains(&format!(
            "host port 127.0.0.1:{port}/tcp is already published by container `{}`",
            holder.name()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(" -p "), "{}", run.stderr);
    assert_eq!(scenario.containers(), 0, "nothing may be created");
}

/// Issue 13 (hint part): a ulimit runc may not set is named in the hint — here `nofile`
/// above any kernel's `nr_open`, refused with or without CAP_SYS_RESOURCE — where the hint
/// always said "memlock, stack"; the half-made container is removed.
#[test]
fn a_ulimit_runc_refuses_is_named_in_the_hint() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-rlimit");
    scenario.write_profile(&test_image(), "[ulimits]\nnofile = 2147483647\n");
    let _guard = ContainerGuard::new(scenario.container.clone());
    let run = scenario.up(&[]);
    run.expect_code(1, "a ulimit runc refuses");
    assert!(run.stderr.contains("rlimit type 7"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("may not raise the `nofile` ulimit this far"),
        "{}",
        run.stderr
    );
    assert_eq!(scenario.containers(), 0);
}

/// Issue 31: the port-conflict hint is a command that works. `-p HOST:CONTAINER` replaces
/// the profile's mapping of that container port (it used to be added beside it, so the
/// same conflict came back); the hint is run as printed.
#[test]
fn the_port_conflict_hint_runs_and_moves_the_port() {
    if !require_daemon() {
        return;
    }
    let taken = free_loopback_port();
    let squatter = ContainerGuard::unique("port-squatter");
    docker_stdout([
        "run",
        "-d",
        "--label",
        "envctl.test=1",
        "--name",
        squatter.name(),
        "-p",
        &format!("127.0.0.1:{taken}:80"),
        &test_image(),
        "sleep",
        "300",
    ]);
    let scenario = Scenario::new("port-hint");
    scenario.write_profile(&test_image(), &format!("ports = [\"{taken}:8888\"]\n"));
    let refused = scenario.up(&["--pull", "never"]);
    refused.expect_code(1, "up onto a taken port");
    let hint = refused
        .stderr
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("hint: publish it on another host port: `")
        })
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no port hint\n{refused}"))
        .to_string();
    let words: Vec<&str> = hint.split_whitespace().collect();
    assert_eq!(words[..2], ["envctl", "up"], "{hint}");
    let mut arguments = words[1..].to_vec();
    arguments.extend(["--pull", "never"]);
    let moved = scenario.run(&arguments);
    moved.expect_code(0, "the hint, run as printed");
    let published = docker_stdout(["port", scenario.container.as_str()]);
    assert!(
        !published.contains(&format!(":{taken}")) && published.contains("8888/tcp"),
        "{published}"
    );
}

/// Issue 40: `up --ulimit NAME=SOFT[:HARD]` (docker's syntax) escapes a profile's ulimit
/// the daemon may not raise: the container gets the flag's limit, and the refusal's hint
/// names the flag. A daemon that can raise `memlock = -1` starts the plain one as well.
#[test]
fn up_ulimit_replaces_the_profiles_limit_a_daemon_may_not_raise() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-ulimit");
    scenario.write_profile(&test_image(), "[ulimits]\nmemlock = -1\nstack = 67108864\n");
    let plain = scenario.up(&[]);
    if plain.code != 0 {
        assert!(
            plain.stderr.contains("`memlock`") && plain.stderr.contains("--ulimit memlock="),
            "{plain}"
        );
    }
    let bad = scenario.up(&["--recreate", "--ulimit", "memlok=65536"]);
    bad.expect_code(2, "a misspelt ulimit");
    assert!(bad.stderr.contains("did you mean `memlock`"), "{bad}");
    let run = scenario.up(&["--recreate", "--ulimit", "memlock=65536"]);
    run.expect_code(0, "up --ulimit memlock=65536");
    assert!(scenario.is_running(), "{run}");
    let limits = &scenario.inspect()["HostConfig"]["Ulimits"];
    let limit = |name: &str| {
        limits
            .as_array()
            .and_then(|limits| limits.iter().find(|limit| limit["Name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {limits}"))
    };
    assert_eq!(limit("memlock")["Soft"], 65536, "{limits}");
    assert_eq!(limit("memlock")["Hard"], 65536, "{limits}");
    // The profile's other limits are kept.
    assert_eq!(limit("stack")["Soft"], 67108864, "{limits}");
}
