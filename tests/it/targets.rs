//! TARGET left out, named commands of a profile given by path, and did-you-mean for a
//! misspelled TARGET in every command that takes one (issue 15, items 1, 2 and 8).
//!
//! The shared daemon runs other tests' envctl containers at the same time, so "the only
//! running envctl container" cannot be arranged there: the tests against the real daemon
//! use the rule's first step (the only running container of a profile in this folder's
//! `./envctl/`), and the host-wide step and the refusals run against a fake daemon whose
//! container list the test writes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::Envctl;
use crate::support::docker::{ContainerGuard, require_daemon, test_image, unique_name};
use crate::support::fake_daemon::{FakeDaemon, Reply, inspected_container, listed_container};

/// How long one envctl run may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(120);

/// A profile file with a `hello` command, in `folder/directory/NAME.toml`.
fn write_profile(folder: &Path, directory: &str, name: &str, greeting: &str) {
    std::fs::create_dir_all(folder.join(directory)).unwrap();
    std::fs::write(
        folder.join(format!("{directory}/{name}.toml")),
        format!(
            "image = \"{}\"\nmemory = \"64m\"\n\n[commands]\nhello = [\"echo\", \"{greeting}\"]\n",
            test_image()
        ),
    )
    .unwrap();
}

fn up(folder: &Path, profile: &str) {
    let outcome = Envctl::in_folder(folder)
        .args(["up", profile])
        .timeout(LIMIT)
        .run();
    assert_eq!(outcome.code, 0, "up {profile}: {}", outcome.stderr);
}

#[test]
fn the_projects_only_running_container_is_the_target() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let profile = unique_name("targets-one");
    write_profile(folder, "envctl", &profile, "hello");
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    up(folder, &profile);

    let echo = Envctl::in_folder(folder)
        .args(["exec", "--", "echo", "hi"])
        .timeout(LIMIT)
        .run();
    assert_eq!(
        (echo.code, echo.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        echo.stderr
    );
    // A word that names no container or profile is a command of the obvious container.
    let named = Envctl::in_folder(folder)
        .args(["exec", "hello"])
        .timeout(LIMIT)
        .run();
    assert_eq!(
        (named.code, named.stdout.as_str()),
        (0, "hello\n"),
        "{}",
        named.stderr
    );
    let with_arguments = Envctl::in_folder(folder)
        .args(["exec", "hello", "--", "there"])
        .timeout(LIMIT)
        .run();
    assert_eq!(
        with_arguments.stdout, "hello there\n",
        "{}",
        with_arguments.stderr
    );
    // nvidia-check fails in busybox (no GPU, no python), but it ran in the container.
    let check = Envctl::in_folder(folder)
        .args(["exec", "nvidia-check", "--quick"])
        .timeout(LIMIT)
        .run();
    assert!(
        !check.stderr.contains("no container or profile named")
            && check.stderr.contains(container.name()),
        "{}",
        check.stderr
    );
    // A typo of a command gets the command.
    let typo = Envctl::in_folder(folder)
        .args(["exec", "helo"])
        .timeout(LIMIT)
        .run();
    assert_eq!(typo.code, 1);
    assert!(
        typo.stderr.contains("did you mean `hello`?"),
        "{}",
        typo.stderr
    );
    // `shell` needs a terminal (issue 31); its hint names the obvious container.
    let shell = Envctl::in_folder(folder)
        .args(["shell"])
        .stdin("echo in-the-shell\n")
        .timeout(LIMIT)
        .run();
    assert_eq!(shell.code, 2, "{}", shell.stderr);
    assert!(
        shell
            .stderr
            .contains(&format!("`envctl exec {} sh`", container.name())),
        "{}",
        shell.stderr
    );
    let logs = Envctl::in_folder(folder)
        .args(["logs"])
        .timeout(LIMIT)
        .run();
    assert_eq!(logs.code, 0, "{}", logs.stderr);
    let down = Envctl::in_folder(folder)
        .args(["down"])
        .timeout(LIMIT)
        .run();
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stderr
            .contains(&format!("stopped {}", container.name())),
        "{}",
        down.stderr
    );
}

#[test]
fn two_running_project_containers_are_listed_not_chosen() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let first = unique_name("targets-two-a");
    let second = unique_name("targets-two-b");
    write_profile(folder, "envctl", &first, "a");
    write_profile(folder, "envctl", &second, "b");
    let _first = ContainerGuard::new(format!("envctl-{first}"));
    let _second = ContainerGuard::new(format!("envctl-{second}"));
    up(folder, &first);
    up(folder, &second);
    for arguments in [
        &["exec", "--", "true"][..],
        &["exec", "hello"],
        &["exec", "nvidia-check"],
        &["shell"],
        &["logs"],
        &["down"],
    ] {
        let outcome = Envctl::in_folder(folder)
            .args(arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(outcome.code, 2, "{arguments:?}: {}", outcome.stderr);
        assert!(
            outcome
                .stderr
                .contains("2 containers of this project's profiles (./envctl/) run")
                && outcome
                    .stderr
                    .contains(&format!("envctl-{first} (profile {first})"))
                && outcome.stderr.contains(&format!("envctl-{second}")),
            "{arguments:?}: {}",
            outcome.stderr
        );
        assert!(
            outcome
                .stderr
                .contains(&format!("envctl {} envctl-", arguments[0])),
            "how to name one: {arguments:?}: {}",
            outcome.stderr
        );
    }
    // Both still run: nothing was stopped.
    let named = Envctl::in_folder(folder)
        .args(["exec", &second, "hello"])
        .timeout(LIMIT)
        .run();
    assert_eq!(named.stdout, "b\n", "{}", named.stderr);
}

#[test]
fn a_profile_given_by_path_keeps_its_named_commands() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let profile = unique_name("targets-path");
    // Not in ./envctl/: only the path finds it.
    write_profile(folder, "elsewhere", &profile, "from-the-file");
    let path = format!("./elsewhere/{profile}.toml");
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    up(folder, &path);
    let by_path = Envctl::in_folder(folder)
        .args(["exec", &path, "hello"])
        .timeout(LIMIT)
        .run();
    assert_eq!(by_path.stdout, "from-the-file\n", "{}", by_path.stderr);
    let by_name = Envctl::in_folder(folder)
        .args(["exec", container.name(), "hello"])
        .timeout(LIMIT)
        .run();
    assert_eq!(by_name.stdout, "from-the-file\n", "{}", by_name.stderr);
    // From another folder: the container's envctl.profile-file label says where it lies.
    let other = tempfile::tempdir().unwrap();
    let elsewhere = Envctl::in_folder(other.path())
        .args(["exec", container.name(), "hello"])
        .timeout(LIMIT)
        .run();
    assert_eq!(elsewhere.stdout, "from-the-file\n", "{}", elsewhere.stderr);
    let label = crate::support::docker::docker_stdout([
        "inspect",
        "--format",
        "{{index .Config.Labels \"envctl.profile-file\"}}",
        container.name(),
    ]);
    let expected = std::fs::canonicalize(folder.join(format!("elsewhere/{profile}.toml"))).unwrap();
    assert_eq!(
        std::fs::canonicalize(label.trim()).unwrap(),
        expected,
        "{label}"
    );
}

/// A fake daemon that lists `containers` (id, name, profile) as running and answers their
/// inspect and stop.
/// The uid of this process, as `up` records it (`envctl.uid`).
fn own_uid() -> String {
    let output = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// The labels of a container `up` made for this user: an obvious container outside its
/// project must name its owner (`container_plan::ownership`).
fn owned(answer: String) -> String {
    answer.replace(
        r#""envctl.profile":"#,
        &format!(r#""envctl.uid":"{}","envctl.profile":"#, own_uid()),
    )
}

fn daemon_with(containers: &'static [(&'static str, &'static str, &'static str)]) -> FakeDaemon {
    FakeDaemon::start(move |request| {
        let route = request.route();
        if route == "/containers/json" {
            let listed: Vec<String> = containers
                .iter()
                .map(|(id, name, profile)| owned(listed_container(id, name, profile)))
                .collect();
            return Some(Reply::json(200, format!("[{}]", listed.join(","))));
        }
        for (id, name, profile) in containers {
            if route == format!("/containers/{id}/json")
                || route == format!("/containers/{name}/json")
            {
                return Some(Reply::json(
                    200,
                    owned(inspected_container(id, name, Some(profile), true)),
                ));
            }
            if route == format!("/containers/{id}/stop") {
                return Some(Reply::no_content());
            }
        }
        None
    })
}

const ID_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const ID_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[test]
fn with_none_in_the_project_the_hosts_only_envctl_container_is_the_target() {
    let daemon = daemon_with(&[(ID_A, "envctl-somewhere", "somewhere")]);
    let folder = tempfile::tempdir().unwrap();
    write_profile(folder.path(), "envctl", "local", "x");
    let down = Envctl::in_folder(folder.path())
        .daemon(&daemon.host())
        .args(["down"])
        .timeout(LIMIT)
        .run();
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stderr.contains("stopped envctl-somewhere"),
        "{}",
        down.stderr
    );
    assert!(
        daemon
            .requests()
            .iter()
            .any(|request| request.contains(&format!("/containers/{ID_A}/stop"))),
        "{:?}",
        daemon.requests()
    );
}

#[test]
fn several_on_the_host_are_listed_and_none_hints_up() {
    let several = daemon_with(&[
        (ID_A, "envctl-first", "first"),
        (ID_B, "envctl-second", "second"),
    ]);
    let folder = tempfile::tempdir().unwrap();
    for arguments in [
        &["exec", "--", "true"][..],
        &["exec", "nvidia-check"],
        &["shell"],
        &["logs"],
        &["down"],
    ] {
        let outcome = Envctl::in_folder(folder.path())
            .daemon(&several.host())
            .args(arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(outcome.code, 2, "{arguments:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(
                "2 envctl containers run: envctl-first (profile first), envctl-second (profile second)"
            ),
            "{arguments:?}: {}",
            outcome.stderr
        );
    }
    assert!(
        !several
            .requests()
            .iter()
            .any(|request| request.contains("/stop")),
        "nothing is stopped on a guess: {:?}",
        several.requests()
    );

    let none = daemon_with(&[]);
    write_profile(folder.path(), "envctl", "train", "x");
    for arguments in [
        &["exec", "--", "true"][..],
        &["exec", "nvidia-check"],
        &["shell"],
        &["logs"],
        &["down"],
    ] {
        let outcome = Envctl::in_folder(folder.path())
            .daemon(&none.host())
            .args(arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(outcome.code, 2, "{arguments:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains("no envctl container is running")
                && outcome.stderr.contains("start one with `envctl up train`"),
            "{arguments:?}: {}",
            outcome.stderr
        );
    }
}

#[test]
fn a_misspelled_target_gets_the_nearest_name_in_every_command() {
    let daemon = daemon_with(&[(ID_A, "envctl-nc-aa", "nc-aa")]);
    let folder = tempfile::tempdir().unwrap();
    write_profile(folder.path(), "envctl", "nc-bb", "x");
    for arguments in [
        &["exec", "nc-bbb", "--", "true"][..],
        &["exec", "nc-bbb"],
        &["exec", "nc-bbb", "nvidia-check"],
        &["exec", "nc-bbb", "hello"],
        &["shell", "nc-bbb"],
        &["logs", "nc-bbb"],
        &["down", "nc-bbb"],
        &["stats", "nc-bbb", "--once"],
    ] {
        let outcome = Envctl::in_folder(folder.path())
            .daemon(&daemon.host())
            .args(arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(outcome.code, 1, "{arguments:?}: {}", outcome.stderr);
        assert!(
            outcome
                .stderr
                .contains("no container or profile named `nc-bbb`")
                && outcome.stderr.contains("did you mean `nc-bb`?")
                && !outcome.stderr.contains("envctl up"),
            "{arguments:?}: {}",
            outcome.stderr
        );
    }
    // The container's name is as near.
    let container = Envctl::in_folder(folder.path())
        .daemon(&daemon.host())
        .args(["logs", "envctl-nc-aaa"])
        .timeout(LIMIT)
        .run();
    assert!(
        container.stderr.contains("did you mean `envctl-nc-aa`?"),
        "{}",
        container.stderr
    );
}

/// Issue 30, class 9: twelve hex digits that begin a container's id and also name a
/// project profile are neither guessed: `down`, `exec` and `logs` refuse (exit 2) and name
/// both, and the container is not touched.
#[test]
fn an_id_prefix_that_is_also_a_profile_name_is_refused() {
    if !require_daemon() {
        return;
    }
    let guard = ContainerGuard::unique("id-prefix");
    crate::support::docker::docker_stdout([
        "run",
        "-d",
        "--label",
        "envctl.test=1",
        "--label",
        "envctl.profile=elsewhere",
        "--name",
        guard.name(),
        &test_image(),
        "sleep",
        "300",
    ]);
    let id = crate::support::docker::docker_stdout(["inspect", "-f", "{{.Id}}", guard.name()]);
    let prefix = &id[..12];
    let folder = tempfile::tempdir().unwrap();
    write_profile(folder.path(), "envctl", prefix, "hi");
    for arguments in [
        vec!["down", prefix, "--rm"],
        vec!["exec", prefix, "--", "true"],
        vec!["logs", prefix],
    ] {
        let outcome = Envctl::in_folder(folder.path())
            .args(&arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(outcome.code, 2, "{arguments:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(&format!(
                "`{prefix}` is both the start of the id of container `{}` and a profile's name",
                guard.name()
            )),
            "{}",
            outcome.stderr
        );
    }
    assert!(crate::support::docker::container_exists(guard.name()));
}
