//! "Yours" in the team views follows the identity each daemon's transport proves (issue
//! 38, item 2), as on one daemon alone: a container made over TLS with the CI's client
//! certificate (`tls:CN=envctl-ci-client`) is the user's in `ps --hosts` and
//! `stats --hosts` of the TLS endpoint, and another's through the unix socket of the same
//! daemon, where the same uid proves `uid:0@<this machine>`: listed only with
//! `--all-users`, as `ps -H` of that socket alone lists it. `up --hosts` counts the
//! user's GPUs on each candidate under that candidate's identity.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::remote_daemons::{SOCKET, TLS_ENDPOINT, Way, dockerd2, envctl, free_port, project};
use crate::support::cli::{Envctl, Run};
use crate::support::docker::{ContainerGuard, TEST_LABEL, docker_stdout, unique_name};

/// This machine's daemon.
const LOCAL: &str = "unix:///var/run/docker.sock";

/// No variable: each host is named in `--hosts` (TLS from the variables, as `-H` takes
/// it, for the `tcp://` one only).
fn tls_variables() -> Way {
    let mut way = Way::tls();
    way.variables.retain(|(key, _)| key != "DOCKER_HOST");
    way
}

/// Whether `run`'s JSON (`ps` or `stats --once`) lists container `name`.
fn lists(run: &Run, name: &str) -> bool {
    run.json()["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("no containers: {run}"))
        .iter()
        .any(|row| row["name"] == name)
}

#[test]
fn team_views_judge_yours_by_each_hosts_identity_not_the_uid() {
    let test = "team_views_judge_yours_by_each_hosts_identity_not_the_uid";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let (folder, profile) = project(&engine, "team-identity", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let made = envctl(folder.path(), &Way::tls(), &["up", &profile]);
    assert_eq!(made.code, 0, "{made}");
    let identity = engine.docker_stdout([
        "inspect",
        "--format",
        "{{index .Config.Labels \"envctl.identity\"}}",
        &container,
    ]);
    assert_eq!(identity.trim(), "tls:CN=envctl-ci-client", "{made}");

    let tls = tls_variables();
    let socket = format!("unix://{SOCKET}");
    for command in ["ps", "stats"] {
        let over = |host: &str, extra: &[&str]| {
            let mut arguments = vec!["--json", command, "--hosts", host];
            if command == "stats" {
                arguments.push("--once");
            }
            arguments.extend_from_slice(extra);
            let run = envctl(folder.path(), &tls, &arguments);
            assert_eq!(run.code, 0, "{run}");
            run
        };
        let theirs = over(&socket, &[]);
        assert!(
            !lists(&theirs, &container),
            "{command} --hosts {socket} counts the TLS identity's container as this uid's: {theirs}"
        );
        let everyone = over(&socket, &["--all-users"]);
        assert!(lists(&everyone, &container), "{everyone}");
        let mine = over(TLS_ENDPOINT, &[]);
        assert!(lists(&mine, &container), "{mine}");
    }
    // One daemon alone judges alike.
    let alone = envctl(folder.path(), &tls, &["--json", "-H", &socket, "ps"]);
    assert_eq!(alone.code, 0, "{alone}");
    assert!(!lists(&alone, &container), "{alone}");

    let down = envctl(folder.path(), &Way::tls(), &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
}

/// `up --hosts` counts the user's GPUs on each candidate host (the per-user limit of the
/// policy) under the identity that host's transport proves, not the default daemon's:
/// here the default is plain tcp (which proves no one; only chosen, never reached) while
/// the candidate is this machine's daemon on its unix socket (eight stand-in GPUs), where
/// the user (`uid:<uid>@<this machine>`) holds two GPUs under `max_gpus_per_user = 2`: a
/// third is refused there, as `up` of that daemon alone refuses it.
#[test]
fn up_hosts_counts_the_users_gpus_by_each_candidates_identity() {
    let test = "up_hosts_counts_the_users_gpus_by_each_candidates_identity";
    if !crate::support::docker::require_daemon_for(test) {
        return;
    }
    let machine = crate::placement::Machine::new("");
    let image = crate::support::docker::test_image();
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    let more = unique_name("quota-more");
    std::fs::write(
        folder.path().join("envctl").join(format!("{more}.toml")),
        format!("image = \"{image}\"\ngpus = 1\ncommand = [\"sleep\", \"600\"]\n"),
    )
    .unwrap();
    let policy = folder.path().join("policy.toml");
    std::fs::write(&policy, "[limits]\nmax_gpus_per_user = 2\n").unwrap();
    // Two of the stand-in GPUs held by a container of this user's as envctl labels it
    // over this machine's socket (created, never started: this daemon has no NVIDIA
    // runtime to start it, and a created container holds its GPUs all the same).
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let held = unique_name("quota-held");
    let _guard = ContainerGuard::new(held.clone());
    let uid = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    docker_stdout([
        "create",
        "--name",
        &held,
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.profile={held}"),
        "--label",
        &format!("envctl.uid={}", uid.trim()),
        "--label",
        &format!("envctl.identity=uid:{}@{}", uid.trim(), hostname.trim()),
        "--gpus",
        &format!("\"device={},{}\"", machine.uuids[0], machine.uuids[1]),
        &image,
        "sleep",
        "600",
    ]);
    let run = |default_daemon: &str, arguments: &[&str]| {
        Envctl::in_folder(folder.path())
            .daemon(default_daemon)
            .env("ENVCTL_POLICY", &policy)
            .nvml_file(&machine.fixture)
            .env("ENVCTL_GPU_LOCK", folder.path().join("gpus.lock"))
            .args(arguments)
            .timeout(Duration::from_secs(120))
            .run()
    };
    let nowhere = format!("tcp://127.0.0.1:{}", free_port());
    let chosen = run(
        &nowhere,
        &["up", &more, "--hosts", LOCAL, "--dry-run", "--force"],
    );
    assert_eq!(chosen.code, 1, "{chosen}");
    // Refused in the choice itself (counted there as the `up` on it counts), not chosen
    // and then refused by that `up`.
    assert!(
        chosen.stderr.contains("fits on none of the hosts"),
        "{chosen}"
    );
    assert!(
        chosen
            .stderr
            .lines()
            .any(|line| line.starts_with(&format!("  {LOCAL}: "))
                && line.contains("max_gpus_per_user = 2")),
        "{chosen}"
    );
    let alone = run(LOCAL, &["up", &more, "--dry-run", "--force"]);
    assert_eq!(alone.code, 1, "{alone}");
    assert!(alone.stderr.contains("max_gpus_per_user = 2"), "{alone}");
}
