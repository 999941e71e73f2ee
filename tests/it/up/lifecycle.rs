//! `up` itself: idempotent and starting a stopped container again, eight concurrent ups making
//! one container, a changed profile refused and applied by `--recreate`, the body sent being the
//! dry run's, and SIGTERM at any instant leaving no container.

use super::*;

#[test]
fn up_is_idempotent_and_starts_a_stopped_container_again() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-idem");
    scenario.write_profile(&test_image(), "");

    let first = scenario.up_json(&[]);
    assert_eq!(first["schema_version"], 1, "{first}");
    assert_eq!(first["status"], "created", "{first}");
    assert_eq!(first["container"], scenario.container.as_str(), "{first}");
    assert_eq!(first["profile"], scenario.profile.as_str(), "{first}");
    let id = first["id"].as_str().unwrap().to_string();
    assert_eq!(scenario.container_id(), id);
    assert!(scenario.is_running());

    // The second `up` in human mode: the container's name on stdout, the news on stderr.
    let second = scenario.up(&[]);
    second.expect_code(0, "second up");
    assert_eq!(second.stdout.trim(), scenario.container, "{second}");
    assert!(
        second.stderr.contains("already running"),
        "the second up should say the container is already running\n{second}"
    );
    // No GPUs were asked for: the CUDA check is not suggested, the shell is.
    assert!(second.stderr.contains("enter it:"), "{second}");
    assert!(!second.stderr.contains("nvidia-check"), "{second}");
    assert_eq!(scenario.containers(), 1);

    let third = scenario.up_json(&[]);
    assert_eq!(third["status"], "already_running", "{third}");
    assert_eq!(third["id"], id.as_str(), "{third}");
    assert_eq!(scenario.containers(), 1);

    docker_stdout(["stop", "-t", "0", scenario.container.as_str()]);
    assert!(!scenario.is_running());
    let fourth = scenario.up_json(&[]);
    assert_eq!(fourth["status"], "started", "{fourth}");
    assert_eq!(
        fourth["id"],
        id.as_str(),
        "the stopped container is reused: {fourth}"
    );
    assert!(
        scenario.is_running(),
        "up should start the stopped container"
    );
    assert_eq!(scenario.containers(), 1);
}

#[test]
fn eight_concurrent_ups_of_one_profile_make_one_container() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-race");
    scenario.write_profile(&test_image(), "");
    // The race window is small: a few rounds make a lost race show up reliably.
    for round in 1..=3 {
        let children: Vec<Child> = (0..8)
            .map(|_| {
                scenario
                    .std_command()
                    .args(["--json", "up", scenario.profile.as_str()])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let runs: Vec<Run> = children
            .into_iter()
            .map(|child| Run::of(child.wait_with_output().unwrap()))
            .collect();
        let failed: Vec<String> = runs
            .iter()
            .filter(|run| run.code != 0)
            .map(ToString::to_string)
            .collect();
        let containers = scenario.containers();
        assert!(
            failed.is_empty(),
            "round {round}: {} of 8 concurrent `up`s failed ({containers} container(s) \
             named {}):\n{}",
            failed.len(),
            scenario.container,
            failed.join("\n====\n")
        );
        assert_eq!(containers, 1, "round {round}");
        let statuses: Vec<String> = runs
            .iter()
            .map(|run| {
                run.json()["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(
            statuses
                .iter()
                .filter(|status| *status == "created")
                .count(),
            1,
            "round {round}: exactly one run creates: {statuses:?}"
        );
        assert!(
            statuses
                .iter()
                .all(|status| ["created", "already_running", "started"].contains(&status.as_str())),
            "round {round}: {statuses:?}"
        );
        let id = scenario.container_id();
        for run in &runs {
            assert_eq!(
                run.json()["id"],
                id.as_str(),
                "round {round}: every run reports the one container\n{run}"
            );
        }
        assert!(scenario.is_running(), "round {round}");
        docker_stdout(["rm", "-f", scenario.container.as_str()]);
    }
}

#[test]
fn a_changed_profile_is_refused_and_applied_by_recreate() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-drift");
    let image = test_image();
    scenario.write_profile(&image, "memory = \"64m\"\n");
    let created = scenario.up_json(&[]);
    let id = created["id"].as_str().unwrap().to_string();

    scenario.write_profile(&image, "memory = \"96m\"\n");
    let refused = scenario.up(&[]);
    refused.expect_code(1, "up after the profile changed");
    assert!(
        refused.stderr.contains("memory: 64 MiB → 96 MiB"),
        "the refusal names what changed\n{refused}"
    );
    assert!(refused.stderr.contains("--recreate"), "{refused}");
    assert_eq!(scenario.container_id(), id, "the container is untouched");
    assert!(scenario.is_running(), "the container is untouched");
    assert_eq!(scenario.inspect()["HostConfig"]["Memory"], 67_108_864);
    insta::assert_snapshot!("changed_profile_refused", scenario.redact(&refused.stderr));

    let recreated = scenario.up_json(&["--recreate"]);
    assert_eq!(recreated["status"], "recreated", "{recreated}");
    let new_id = recreated["id"].as_str().unwrap();
    assert_ne!(new_id, id, "--recreate makes a new container");
    assert_eq!(scenario.container_id(), new_id);
    assert_eq!(scenario.inspect()["HostConfig"]["Memory"], 100_663_296);
    assert_eq!(scenario.containers(), 1);
    assert!(scenario.is_running());
}

/// Keeps, of each item in `actual`, only the keys of the item at the same place in `wanted`.
fn project(actual: &Value, wanted: &Value) -> Value {
    let (Some(actual), Some(wanted)) = (actual.as_array(), wanted.as_array()) else {
        return actual.clone();
    };
    Value::Array(
        actual
            .iter()
            .zip(wanted.iter().chain(std::iter::repeat(&Value::Null)))
            .map(
                |(item, wanted_item)| match (item.as_object(), wanted_item.as_object()) {
                    (Some(item), Some(wanted_item)) => Value::Object(
                        item.iter()
                            .filter(|(key, _)| wanted_item.contains_key(*key))
                            .map(|(key, value)| (key.clone(), value.clone()))
                            .collect(),
                    ),
                    _ => item.clone(),
                },
            )
            .collect(),
    )
}

#[test]
fn up_sends_exactly_the_dry_run_body() {
    if !require_daemon() {
        return;
    }
    let volume = VolumeGuard::unique("envctl-up-body");
    let scenario = Scenario::new("up-body");
    scenario.folder("data");
    scenario.folder("readonly");
    let port = free_loopback_port();
    scenario.write_profile(
        &test_image(),
        &format!(
            "memory = \"64m\"\ncpus = 0.5\nports = [\"{port}:80\"]\n\
             mounts = [\"./data:/data\", \"./readonly:/readonly:ro\", \"{}:/vol\"]\n\
             env = {{ ALPHA = \"1\", BETA = \"two words\" }}\n",
            volume.name
        ),
    );
    let dry_run = scenario.run(&["--json", "up", scenario.profile.as_str(), "--dry-run"]);
    dry_run.expect_code(0, "up --dry-run --json");
    let planned = dry_run.json();
    assert_eq!(planned["name"], scenario.container.as_str(), "{planned}");
    assert_eq!(scenario.containers(), 0, "--dry-run creates nothing");
    let body = &planned["body"];

    scenario.up(&[]).expect_code(0, "up");
    let inspect = scenario.inspect();
    let config = &inspect["Config"];
    let host = &inspect["HostConfig"];

    assert_eq!(config["Image"], body["Image"]);
    assert_eq!(config["Cmd"], body["Cmd"]);
    for (key, value) in body["Labels"].as_object().unwrap() {
        assert_eq!(&config["Labels"][key], value, "label {key}");
    }
    let env: Vec<&str> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for entry in body["Env"].as_array().unwrap() {
        assert!(
            env.contains(&entry.as_str().unwrap()),
            "Env {entry} missing from the container's {env:?}"
        );
    }
    for key in body["ExposedPorts"].as_object().unwrap().keys() {
        assert!(
            config["ExposedPorts"].get(key).is_some(),
            "ExposedPorts {key}"
        );
    }
    // Every HostConfig key the body sets, as the daemon stored it.
    let wanted = body["HostConfig"].as_object().unwrap();
    for key in ["Memory", "NanoCpus", "PortBindings", "Mounts"] {
        assert!(
            wanted.contains_key(key),
            "the body should set {key}: {body}"
        );
    }
    for (key, value) in wanted {
        let actual = if key == "Mounts" {
            project(&host[key], value)
        } else {
            host[key].clone()
        };
        assert_eq!(
            &actual, value,
            "HostConfig.{key}: container vs dry-run body"
        );
    }
    assert_eq!(host["Memory"], 67_108_864);
    assert_eq!(host["NanoCpus"], 500_000_000);
    assert_eq!(
        host["PortBindings"]["80/tcp"][0]["HostIp"], "127.0.0.1",
        "ports bind to loopback by default"
    );
}

/// Issue 12, class 15: SIGTERM at any instant of `up` — before the create, while the
/// create is in flight, between create and start — leaves nothing this run created. The
/// delays sweep the whole run (~270 ms here); a round that ends before the signal
/// started its container, which is then removed for the next round.
#[test]
fn sigterm_at_any_instant_of_up_leaves_no_container() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-sigterm-sweep");
    scenario.write_profile(&test_image(), "");
    let _guard = ContainerGuard::new(scenario.container.clone());
    let mut interrupted = 0;
    let mut report = Vec::new();
    for round in 0..24u64 {
        let delay = Duration::from_millis(round * 15);
        let mut child = scenario
            .std_command()
            .args(["up", scenario.profile.as_str()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The delay is the test: the signal lands at each instant of the run in turn.
        thread::sleep(delay);
        // The process may already have ended (a late round): kill then fails harmlessly.
        let _ = crate::support::signal::send(&child, "TERM");
        let status = crate::support::signal::wait_within(&mut child, Duration::from_secs(3))
            .unwrap_or_else(|| panic!("round {round}: up did not end within 3 s of SIGTERM"));
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let left = scenario.containers();
        report.push(format!("{delay:?}: {status} left {left}"));
        match status.code() {
            Some(0) => {
                // It finished first: its container is started, and stays (not half-made).
                assert!(
                    scenario.is_running(),
                    "round {round}: exit 0 without a running container\n{stderr}"
                );
                docker_stdout(["rm", "-f", "-v", scenario.container.as_str()]);
            }
            // 143: envctl's handler ran; None: the signal came before it was installed
            // (then nothing had been sent to the daemon yet).
            Some(143) | None => {
                interrupted += 1;
                assert_eq!(
                    left,
                    0,
                    "round {round} (SIGTERM after {delay:?}) left a container:\n{stderr}\n{}",
                    report.join("\n")
                );
            }
            Some(other) => panic!("round {round}: exit {other}\n{stderr}"),
        }
    }
    // The sweep must have hit the run, not only its end.
    assert!(
        interrupted >= 6,
        "too few rounds interrupted:\n{}",
        report.join("\n")
    );
}
