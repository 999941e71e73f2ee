//! The admin's policy kept at the daemon (issue 38, item 3): `envctl policy push` to a
//! server of the test's own (`support::server`: its own daemon, network and host name, so
//! a pushed policy never judges another test's containers), then a client with no policy
//! file of its own is refused by it, a stricter client file still refuses what the
//! daemon's allows, a looser one never passes what the daemon's refuses, `doctor` names
//! where each policy came from, a malformed push writes nothing, and a volume of the
//! policy's name that envctl did not make is never replaced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::cli::Envctl;
use crate::support::docker::unique_name;
use crate::support::server::Server;

/// How long one envctl run may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn a_policy_pushed_to_the_daemon_binds_every_client_and_a_client_file_only_tightens_it() {
    let test =
        "a_policy_pushed_to_the_daemon_binds_every_client_and_a_client_file_only_tightens_it";
    let Some(server) = Server::start(test, "gpu-policy", None) else {
        return;
    };
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

    // Nothing pushed yet: the profile starts (dry run), `policy show` says none.
    let shown = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "show"])
        .run();
    assert_eq!(shown.code, 0, "{shown}");
    assert!(shown.stderr.contains("no policy is in force"), "{shown}");

    let pushed = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "push", "admin.toml"])
        .run();
    assert_eq!(pushed.code, 0, "{pushed}");
    assert!(pushed.stderr.contains("(1 rule)"), "{pushed}");

    // A client with no policy file of its own is refused by the daemon's, naming it; the
    // hint's command shows it, with who pushed it.
    let refused = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["up", &profile, "--dry-run"])
        .run();
    assert_eq!(refused.code, 1, "{refused}");
    let place = format!(
        "envctl-policy@{}:3: limits.max_memory = \"64m\"",
        server.host()
    );
    assert!(refused.stderr.contains(&place), "{refused}");
    assert!(refused.stderr.contains("`envctl policy show`"), "{refused}");
    let shown = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["--json", "policy", "show"])
        .run();
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

    // A looser client file never passes what the daemon's refuses.
    let loose = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", at("loose.toml"))
        .timeout(LIMIT)
        .args(["up", &profile, "--dry-run"])
        .run();
    assert_eq!(loose.code, 1, "{loose}");
    assert!(loose.stderr.contains(&place), "{loose}");

    // The admin loosens the daemon's; a stricter client file still refuses, naming itself.
    std::fs::write(at("admin.toml"), "[limits]\nmax_memory = \"1g\"\n").unwrap();
    let repushed = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "push", "admin.toml"])
        .run();
    assert_eq!(repushed.code, 0, "{repushed}");
    assert!(
        repushed.stderr.contains("replacing the one pushed before"),
        "{repushed}"
    );
    let tight = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", at("tight.toml"))
        .timeout(LIMIT)
        .args(["up", &profile, "--dry-run"])
        .run();
    assert_eq!(tight.code, 1, "{tight}");
    assert!(
        tight
            .stderr
            .contains("tight.toml:2: limits.max_memory = \"128m\""),
        "{tight}"
    );
    let allowed = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", at("loose.toml"))
        .timeout(LIMIT)
        .args(["up", &profile, "--dry-run"])
        .run();
    assert_eq!(allowed.code, 0, "{allowed}");

    // doctor names both policies and where each came from.
    let doctor = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", at("tight.toml"))
        .timeout(LIMIT)
        .args(["--json", "doctor", &profile])
        .run();
    let report = doctor.json();
    assert_eq!(
        report["daemon_policy"]["origin"]["kind"], "daemon",
        "{report:#}"
    );
    assert_eq!(report["policy"]["origin"]["kind"], "file", "{report:#}");
    let human = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", at("tight.toml"))
        .timeout(LIMIT)
        .args(["doctor", &profile])
        .run();
    assert!(
        human.stdout.contains("Daemon policy (pushed to "),
        "{human}"
    );

    // A malformed policy is refused with its place (exit 2) and nothing is written.
    let bad = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "push", "bad.toml"])
        .run();
    assert_eq!(bad.code, 2, "{bad}");
    assert!(bad.stderr.contains("bad.toml:2:14"), "{bad}");
    let still = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "show"])
        .run();
    assert!(
        still.stdout.contains("limits.max_memory = \"1g\""),
        "{still}"
    );

    // Removed: the client's own file is all that is left.
    let removed = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "remove"])
        .run();
    assert_eq!(removed.code, 0, "{removed}");
    let free = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["up", &profile, "--dry-run"])
        .run();
    assert_eq!(free.code, 0, "{free}");

    // A volume of the policy's name that envctl did not make is never replaced; its hint's
    // command shows whose it is.
    server.docker_ok(&["volume", "create", "envctl-policy"]);
    let taken = Envctl::in_folder(folder.path())
        .daemon(&server.host())
        .env("ENVCTL_POLICY", &none)
        .timeout(LIMIT)
        .args(["policy", "push", "admin.toml"])
        .run();
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
