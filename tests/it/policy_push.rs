//! The admin's policy kept at the daemon (issue 38, item 3): `envctl policy push` to a
//! server of the test's own (`support::server`: its own daemon, network and host name, so
//! a pushed policy never judges another test's containers), then a client with no policy
//! file of its own is refused by it, a stricter client file still refuses what the
//! daemon's allows, a looser one never passes what the daemon's refuses, `doctor` names
//! where each policy came from, a malformed push writes nothing, and a volume of the
//! policy's name that envctl did not make is never replaced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::unique_name;
use crate::support::server::Server;

/// How long one envctl run may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The test's own server, the folder its clients run in and the profile they start.
struct Setup {
    server: Server,
    folder: tempfile::TempDir,
    profile: String,
    /// A policy path that never exists: the client has no policy file of its own.
    none: std::path::PathBuf,
}

impl Setup {
    /// A path inside the client's folder.
    fn at(&self, name: &str) -> std::path::PathBuf {
        self.folder.path().join(name)
    }

    /// One envctl run in the client's folder against the server, with `policy` as its own file.
    fn envctl(&self, policy: &std::path::Path, arguments: &[&str]) -> Run {
        Envctl::in_folder(self.folder.path())
            .daemon(&self.server.host())
            .env("ENVCTL_POLICY", policy)
            .timeout(LIMIT)
            .args(arguments)
            .run()
    }
}

#[test]
fn a_policy_pushed_to_the_daemon_binds_every_client_and_a_client_file_only_tightens_it() {
    let test =
        "a_policy_pushed_to_the_daemon_binds_every_client_and_a_client_file_only_tightens_it";
    let Some(setup) = set_up(test) else {
        return;
    };
    let place = push_and_refuse_a_client_without_a_file(&setup);
    a_looser_client_file_never_passes_what_the_daemon_refuses(&setup, &place);
    a_stricter_client_file_still_refuses_a_loosened_daemon_policy(&setup);
    doctor_names_both_policies_and_where_each_came_from(&setup);
    a_malformed_push_writes_nothing_and_remove_leaves_the_clients_file(&setup);
    a_volume_envctl_did_not_make_is_never_replaced(&setup);
}

/// Starts the server and writes the profile and the policy files the phases use.
fn set_up(test: &str) -> Option<Setup> {
    let server = Server::start(test, "gpu-policy", None)?;
    let image = server.load_test_image();
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let profile = unique_name("pushed");
    std::fs::create_dir_all(at("envctl")).unwrap();
    std::fs::write(
        at("envctl").join(format!("{profile}.toml")),
        format!(
            "image = \"{image}\"\ngpus = \"none\"\nmemory = \"256m\"\ncommand = [\"sleep\", \"600\"]\n"
        ),
    )
    .unwrap();
    std::fs::write(
        at("admin.toml"),
        "# the server's\n[limits]\nmax_memory = \"64m\"\n",
    )
    .unwrap();
    std::fs::write(at("loose.toml"), "[limits]\nmax_memory = \"4g\"\n").unwrap();
    std::fs::write(at("tight.toml"), "[limits]\nmax_memory = \"128m\"\n").unwrap();
    std::fs::write(at("bad.toml"), "[limits]\nmax_memory = \"1x\"\n").unwrap();
    let none = at("no-policy-here.toml");
    Some(Setup {
        server,
        folder,
        profile,
        none,
    })
}

/// Nothing pushed at first; once pushed, a client with no policy file of its own is refused
/// by the daemon's, naming it, and `policy show` says who pushed it. Returns the place the
/// refusal names.
fn push_and_refuse_a_client_without_a_file(setup: &Setup) -> String {
    let (server, none, profile) = (&setup.server, &setup.none, setup.profile.as_str());
    // Nothing pushed yet: the profile starts (dry run), `policy show` says none.
    let shown = setup.envctl(none, &["policy", "show"]);
    assert_eq!(shown.code, 0, "{shown}");
    assert!(shown.stderr.contains("no policy is in force"), "{shown}");

    let pushed = setup.envctl(none, &["policy", "push", "admin.toml"]);
    assert_eq!(pushed.code, 0, "{pushed}");
    assert!(pushed.stderr.contains("(1 rule)"), "{pushed}");

    // A client with no policy file of its own is refused by the daemon's, naming it; the
    // hint's command shows it, with who pushed it.
    let refused = setup.envctl(none, &["up", profile, "--dry-run"]);
    assert_eq!(refused.code, 1, "{refused}");
    let place = format!(
        "envctl-policy@{}:3: limits.max_memory = \"64m\"",
        server.host()
    );
    assert!(refused.stderr.contains(&place), "{refused}");
    assert!(refused.stderr.contains("`envctl policy show`"), "{refused}");
    let shown = setup.envctl(none, &["--json", "policy", "show"]);
    assert_eq!(shown.code, 0, "{shown}");
    let document = shown.json();
    assert_eq!(
        document["policies"][0]["origin"]["kind"], "daemon",
        "{document:#}"
    );
    assert!(
        document["policies"][0]["origin"]["pushed_by"]
            .as_str()
            .is_some_and(|by| by.contains('@')),
        "{document:#}"
    );
    assert_eq!(
        document["policies"][0]["rules"][0]["rule"], "limits.max_memory",
        "{document:#}"
    );

    place
}

/// A looser client file never passes what the daemon's refuses.
fn a_looser_client_file_never_passes_what_the_daemon_refuses(setup: &Setup, place: &str) {
    let profile = setup.profile.as_str();
    // A looser client file never passes what the daemon's refuses.
    let loose = setup.envctl(&setup.at("loose.toml"), &["up", profile, "--dry-run"]);
    assert_eq!(loose.code, 1, "{loose}");
    assert!(loose.stderr.contains(place), "{loose}");
}

/// Once the admin loosens the daemon's policy, a stricter client file still refuses,
/// naming itself, and a looser one passes.
fn a_stricter_client_file_still_refuses_a_loosened_daemon_policy(setup: &Setup) {
    let (none, profile) = (&setup.none, setup.profile.as_str());
    // The admin loosens the daemon's; a stricter client file still refuses, naming itself.
    std::fs::write(setup.at("admin.toml"), "[limits]\nmax_memory = \"1g\"\n").unwrap();
    let repushed = setup.envctl(none, &["policy", "push", "admin.toml"]);
    assert_eq!(repushed.code, 0, "{repushed}");
    assert!(
        repushed.stderr.contains("replacing the one pushed before"),
        "{repushed}"
    );
    let tight = setup.envctl(&setup.at("tight.toml"), &["up", profile, "--dry-run"]);
    assert_eq!(tight.code, 1, "{tight}");
    assert!(
        tight
            .stderr
            .contains("tight.toml:2: limits.max_memory = \"128m\""),
        "{tight}"
    );
    let allowed = setup.envctl(&setup.at("loose.toml"), &["up", profile, "--dry-run"]);
    assert_eq!(allowed.code, 0, "{allowed}");
}

/// `doctor` names both policies and where each came from.
fn doctor_names_both_policies_and_where_each_came_from(setup: &Setup) {
    let profile = setup.profile.as_str();
    // doctor names both policies and where each came from.
    let doctor = setup.envctl(&setup.at("tight.toml"), &["--json", "doctor", profile]);
    let report = doctor.json();
    assert_eq!(
        report["daemon_policy"]["origin"]["kind"], "daemon",
        "{report:#}"
    );
    assert_eq!(report["policy"]["origin"]["kind"], "file", "{report:#}");
    let human = setup.envctl(&setup.at("tight.toml"), &["doctor", profile]);
    assert!(
        human.stdout.contains("Daemon policy (pushed to "),
        "{human}"
    );
}

/// A malformed push is refused with its place and writes nothing; once removed, the
/// client's own file is all that is left.
fn a_malformed_push_writes_nothing_and_remove_leaves_the_clients_file(setup: &Setup) {
    let (none, profile) = (&setup.none, setup.profile.as_str());
    // A malformed policy is refused with its place (exit 2) and nothing is written.
    let bad = setup.envctl(none, &["policy", "push", "bad.toml"]);
    assert_eq!(bad.code, 2, "{bad}");
    assert!(bad.stderr.contains("bad.toml:2:14"), "{bad}");
    let still = setup.envctl(none, &["policy", "show"]);
    assert!(
        still.stdout.contains("limits.max_memory = \"1g\""),
        "{still}"
    );

    // Removed: the client's own file is all that is left.
    let removed = setup.envctl(none, &["policy", "remove"]);
    assert_eq!(removed.code, 0, "{removed}");
    let free = setup.envctl(none, &["up", profile, "--dry-run"]);
    assert_eq!(free.code, 0, "{free}");
}

/// A volume of the policy's name that envctl did not make is never replaced.
fn a_volume_envctl_did_not_make_is_never_replaced(setup: &Setup) {
    let (server, none) = (&setup.server, &setup.none);
    // A volume of the policy's name that envctl did not make is never replaced; its hint's
    // command shows whose it is.
    server.docker_ok(&["volume", "create", "envctl-policy"]);
    let taken = setup.envctl(none, &["policy", "push", "admin.toml"]);
    assert_eq!(taken.code, 1, "{taken}");
    assert!(
        taken.stderr.contains("was not created by envctl"),
        "{taken}"
    );
    let inspected = server.docker(&["volume", "inspect", "envctl-policy"]);
    assert!(inspected.status.success(), "{inspected:?}");
    let labels = server.docker_ok(&[
        "volume",
        "inspect",
        "--format",
        "{{json .Labels}}",
        "envctl-policy",
    ]);
    assert!(!labels.contains("envctl.policy"), "{labels}");
}
