//! The team view of issue 27 (item 5): `stats --hosts` over the local daemon, the second
//! daemon of `.ci/dockerd2.sh` over TLS and a stopped endpoint, named through a team file
//! (`envctl/hosts.toml`); the team file's resolution order and its errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::remote_daemons::{CERTIFICATES, TLS_ENDPOINT, Way, dockerd2, envctl, free_port};
use crate::support::cli::{Run, envctl_in};
use crate::support::docker::{TEST_LABEL, unique_name};

/// A container of a made-up profile (so it counts as envctl's) that sleeps, started with
/// `docker` arguments `run`'s.
fn sleeper(name: &str, profile: &str, image: &str) -> Vec<String> {
    [
        "run",
        "-d",
        "--name",
        name,
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.profile={profile}"),
        "--memory",
        "64m",
        image,
        "sleep",
        "600",
    ]
    .iter()
    .map(|word| word.to_string())
    .collect()
}

fn write_team_file(folder: &Path, text: &str) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(folder.join("envctl").join("hosts.toml"), text).unwrap();
}

/// The local daemon, the second one over TLS (named in the team file, TLS from the
/// variables as `-H` takes it) and a stopped endpoint, in one snapshot: a container on each
/// reachable daemon under its host, the second daemon's GPUs unknown (never this machine's
/// stand-in GPUs, which only the local daemon's rows get), the stopped one a row saying
/// why, exit 0, all within one host's deadline.
#[test]
fn stats_hosts_shows_every_daemon_and_says_why_one_cannot_be() {
    let Some(engine) = dockerd2("stats_hosts_shows_every_daemon_and_says_why_one_cannot_be") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("team");
    let local_name = unique_name("envctl-team-local");
    let remote_name = unique_name("envctl-team-remote");
    let _local = crate::support::docker::ContainerGuard::new(local_name.clone());
    let _remote = engine.container_guard(remote_name.clone());
    crate::support::docker::docker_stdout(sleeper(
        &local_name,
        &profile,
        &crate::support::docker::test_image(),
    ));
    engine.docker_stdout(sleeper(&remote_name, &profile, &engine.test_image()));
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    write_team_file(
        folder.path(),
        &format!(
            "[hosts]\nlocal = \"unix:///var/run/docker.sock\"\nsecond = \"{TLS_ENDPOINT}\"\nstopped = \"{stopped}\"\n"
        ),
    );
    let way = Way {
        name: "team",
        variables: vec![
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
            (
                "ENVCTL_NVML_LIBRARY".into(),
                crate::support::nvml::stub_library().into(),
            ),
            (
                "ENVCTL_NVML_STUB_FIXTURE".into(),
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/nvml/healthy-8x-h100.conf")
                    .into(),
            ),
        ],
    };
    let started = Instant::now();
    let json = envctl(
        folder.path(),
        &way,
        &["--json", "stats", "--hosts", "@team", "--once"],
    );
    let took = started.elapsed();
    assert_eq!(json.code, 0, "{json}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {json}");
    let document = json.json();
    assert_eq!(document["schema_version"], 1, "{json}");
    let states = document["hosts"].as_array().unwrap();
    let named: Vec<&str> = states
        .iter()
        .map(|state| state["host"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["local", "second", "stopped"], "{json}");
    assert_eq!(states[0]["reachable"], true, "{json}");
    assert_eq!(states[0]["gpus"], "this_machine", "{json}");
    assert_eq!(states[1]["reachable"], true, "{json}");
    assert_eq!(states[1]["endpoint"], TLS_ENDPOINT, "{json}");
    // The second daemon runs on this machine too (it names its host as this one's).
    assert_eq!(states[1]["gpus"], "this_machine", "{json}");
    assert_eq!(states[2]["reachable"], false, "{json}");
    assert_eq!(states[2]["error_kind"], "connection_refused", "{json}");
    assert!(states[2]["error"].as_str().is_some(), "{json}");
    let containers = document["containers"].as_array().unwrap();
    let row = |host: &str, name: &str| {
        containers
            .iter()
            .find(|row| row["host"] == host && row["name"] == name)
            .unwrap_or_else(|| panic!("no {name} on {host}: {json}"))
            .clone()
    };
    let local_row = row("local", &local_name);
    let remote_row = row("second", &remote_name);
    // Each container under its own daemon only.
    assert!(
        !containers
            .iter()
            .any(|row| row["host"] == "local" && row["name"] == remote_name.as_str()),
        "{json}"
    );
    for row in [&local_row, &remote_row] {
        assert_eq!(row["profile"], profile.as_str(), "{json}");
        assert_eq!(row["memory_limit_bytes"], 64 * 1024 * 1024, "{json}");
        assert!(row["pids"].as_u64().unwrap() >= 1, "{json}");
    }
    // This machine's stand-in GPUs once, under the first of its daemons.
    let gpus = document["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 8, "{json}");
    assert!(gpus.iter().all(|gpu| gpu["host"] == "local"), "{json}");
    // The table: a HOST column, a row per container under its host, the stopped host a
    // row that says why, the other machine's GPUs a row saying they are not read here.
    let table = envctl(
        folder.path(),
        &way,
        &[
            "stats",
            "--hosts",
            &format!("local,second,{stopped}"),
            "--once",
        ],
    );
    assert_eq!(table.code, 0, "{table}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("second ") && line.contains(&remote_name)),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("local ") && line.contains(&local_name)),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers at")),
        "{table}"
    );
    // From another machine (a UTS namespace named `envctl-laptop`), both daemons are
    // another machine's: their GPUs are unknown, never this machine's stand-in ones.
    let mut command = crate::support::cli::envctl_on_a_laptop_in(folder.path(), None);
    command.args(["--json", "stats", "--hosts", "local,second", "--once"]);
    for (key, value) in &way.variables {
        command.env(key, value);
    }
    let far = Run::of(
        crate::support::docker::run_with_timeout(&mut command, Duration::from_secs(60)).unwrap(),
    );
    assert_eq!(far.code, 0, "{far}");
    let far_document = far.json();
    for state in far_document["hosts"].as_array().unwrap() {
        assert_eq!(state["gpus"], "unknown", "{far}");
    }
    for row in far_document["containers"].as_array().unwrap() {
        assert!(row["gpu_memory_bytes"].is_null(), "{far}");
    }
    assert!(
        far_document["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .all(|gpu| gpu["uuid"].is_null() || gpu["uuid"].as_str().is_none()),
        "{far}"
    );
    assert!(
        table.stderr.contains(&format!(
            "warning: host `{stopped}` could not be sampled (hint:"
        )),
        "{table}"
    );
    // `ps --hosts` reads the same team file.
    let ps = envctl(folder.path(), &way, &["--json", "ps", "--hosts", "second"]);
    assert_eq!(ps.code, 0, "{ps}");
    assert!(
        ps.json()["containers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["host"] == "second" && row["name"] == remote_name.as_str()),
        "{ps}"
    );
    // One snapshot only: the live view follows one daemon.
    let live = envctl(folder.path(), &way, &["stats", "--hosts", "@team"]);
    assert_eq!(live.code, 2, "{live}");
}

/// The team file's order: a name of `[hosts]` first (here it hides a context of the same
/// name), then a context name; `@team` is every host of it; a malformed file is an error
/// with its file, line and column (exit 2) before any daemon is asked; without one,
/// `@team` is a usage error naming where it is looked for; `hosts` is never a profile.
#[test]
fn the_team_file_names_hosts_first_and_says_where_it_is_wrong() {
    let folder = tempfile::tempdir().unwrap();
    let run = |arguments: &[&str]| {
        Run::of(
            envctl_in(folder.path())
                .timeout(Duration::from_secs(60))
                .args(arguments)
                .output()
                .unwrap(),
        )
    };
    let missing = run(&["ps", "--hosts", "@team"]);
    assert_eq!(missing.code, 2, "{missing}");
    assert!(
        missing.stderr.contains("envctl/hosts.toml"),
        "where it is looked for: {missing}"
    );
    write_team_file(
        folder.path(),
        "[hosts]\ngpu1 = \"ssh://me@gpu1\"\ngpu2 = 3\n\"bad,name\" = \"x\"\n",
    );
    for command in ["ps", "doctor", "stats"] {
        let mut arguments = vec![command, "--hosts", "gpu1"];
        if command == "stats" {
            arguments.push("--once");
        }
        let invalid = run(&arguments);
        assert_eq!(invalid.code, 2, "{command}: {invalid}");
        assert!(
            invalid.stderr.contains("--> envctl/hosts.toml:3:8")
                && invalid.stderr.contains("--> envctl/hosts.toml:4:1")
                && invalid.stderr.contains("invalid team file: 2 problems"),
            "{command}: {invalid}"
        );
    }
    // Through the table first: `gpu1` is the table's URL, not a docker context `gpu1`
    // (which this empty DOCKER_CONFIG does not have: as a context it would be refused).
    let port = free_port();
    write_team_file(
        folder.path(),
        &format!("[hosts]\ngpu1 = \"tcp://127.0.0.1:{port}\"\n"),
    );
    let config = folder.path().join("docker-config");
    std::fs::create_dir_all(&config).unwrap();
    let ps = |list: &str| {
        Run::of(
            envctl_in(folder.path())
                .env("DOCKER_CONFIG", &config)
                .timeout(Duration::from_secs(60))
                .args(["--json", "ps", "--hosts", list])
                .output()
                .unwrap(),
        )
    };
    let listed = ps("@team");
    assert_eq!(listed.code, 0, "{listed}");
    let document = listed.json();
    let hosts = document["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["host"], "gpu1", "{listed}");
    assert_eq!(
        hosts[0]["endpoint"],
        format!("tcp://127.0.0.1:{port}"),
        "{listed}"
    );
    assert_eq!(hosts[0]["error_kind"], "connection_refused", "{listed}");
    // Not in the table, and a context name this DOCKER_CONFIG does not know: a typo,
    // refused before anything is asked (issue 40), never a row of an unreachable host.
    let refused = ps("@team,nocontext");
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("`nocontext`"), "{refused}");
    // `hosts.toml` is the team file, never a profile.
    let profiles = run(&["--json", "profiles", "list"]);
    assert_eq!(profiles.code, 0, "{profiles}");
    assert!(!profiles.stdout.contains("\"hosts\""), "{profiles}");
}
