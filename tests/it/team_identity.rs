//! "Yours" in the team views follows the identity each daemon's transport proves (issue
//! 38, item 2), as on one daemon alone: a container made over TLS with the CI's client
//! certificate (`tls:CN=envctl-ci-client`) is the user's in `ps --hosts` and
//! `stats --hosts` of the TLS endpoint, and another's through the unix socket of the same
//! daemon, where the same uid proves `uid:0@<this machine>`: listed only with
//! `--all-users`, as `ps -H` of that socket alone lists it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::remote_daemons::{SOCKET, TLS_ENDPOINT, Way, dockerd2, envctl, project};
use crate::support::cli::Run;

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
