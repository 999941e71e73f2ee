//! `down`: host data and named volumes kept unless asked, never stopping or removing a container
//! envctl did not create (nor a foreign one with the default name), saying when the container had
//! to be killed, and nothing to stop without a container.

use super::*;

fn volume_exists(name: &str) -> bool {
    docker_output(["volume", "inspect", name]).status.success()
}

#[test]
fn down_keeps_host_data_and_named_volumes_unless_asked() {
    if !require_daemon() {
        return;
    }
    let volume = VolumeGuard::unique("envctl-up-vol");
    let scenario = Scenario::new("up-down");
    let data = scenario.folder("data");
    scenario.write_profile(
        &test_image(),
        &format!("mounts = [\"./data:/data\", \"{}:/vol\"]\n", volume.name),
    );
    scenario.up(&[]).expect_code(0, "up");
    docker_stdout([
        "exec",
        scenario.container.as_str(),
        "sh",
        "-c",
        "echo from-container > /data/written.txt && echo kept > /vol/marker",
    ]);
    let written = data.join("written.txt");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "from-container\n"
    );

    // Without --rm: only stopped.
    scenario
        .run(&["down", scenario.profile.as_str()])
        .expect_code(0, "down");
    assert_eq!(
        scenario.containers(),
        1,
        "down without --rm keeps the container"
    );
    assert!(!scenario.is_running(), "down stops the container");

    // --rm: the container goes; the host folder and the named volume stay.
    scenario
        .run(&["down", scenario.profile.as_str(), "--rm"])
        .expect_code(0, "down --rm");
    assert_eq!(scenario.containers(), 0, "down --rm removes the container");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "from-container\n",
        "down --rm must not touch host data"
    );
    assert!(
        volume_exists(&volume.name),
        "down --rm without --volumes keeps the named volume"
    );

    // A new container finds the volume's data again.
    scenario.up(&[]).expect_code(0, "up again");
    assert_eq!(
        docker_stdout(["exec", scenario.container.as_str(), "cat", "/vol/marker"]),
        "kept"
    );

    // --volumes: the container goes; the named volume was made with the first container,
    // not this one, so it stays (issue 39: only a volume made with the container goes,
    // `trust::down_volumes_removes_only_the_volumes_envctl_made_with_the_container`).
    let down = scenario.run(&["--json", "down", scenario.profile.as_str(), "--volumes"]);
    down.expect_code(0, "down --volumes");
    let report = down.json();
    assert_eq!(report["removed"], true, "{report}");
    assert_eq!(report["volumes_removed"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["volumes_kept"],
        serde_json::json!([volume.name]),
        "{report}"
    );
    assert_eq!(scenario.containers(), 0);
    assert!(volume_exists(&volume.name), "kept, and said");
    // A container made with the volume takes it along.
    docker_stdout(["volume", "rm", volume.name.as_str()]);
    scenario.up(&[]).expect_code(0, "up with a new volume");
    let down = scenario.run(&["--json", "down", scenario.profile.as_str(), "--volumes"]);
    down.expect_code(0, "down --volumes");
    assert_eq!(
        down.json()["volumes_removed"],
        serde_json::json!([volume.name])
    );
    assert!(
        !volume_exists(&volume.name),
        "--volumes removes the named volume made with the container"
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "from-container\n",
        "--volumes must not touch host folders"
    );
}

#[test]
fn down_never_stops_or_removes_a_container_envctl_did_not_create() {
    if !require_daemon() {
        return;
    }
    let volume = VolumeGuard::unique("envctl-test-foreign-data");
    let scenario = Scenario::new("down-foreign");
    scenario.write_profile(&test_image(), "");
    // A container of someone else's, named like the profile (not `envctl-<profile>`), with
    // a named volume of its own.
    let foreign = ContainerGuard::new(scenario.profile.clone());
    docker_stdout([
        "run",
        "-d",
        "--name",
        scenario.profile.as_str(),
        "--label",
        "envctl.test=1",
        "-v",
        &format!("{}:/data", volume.name),
        test_image().as_str(),
        "sleep",
        "300",
    ]);
    let running =
        || docker_stdout(["inspect", "-f", "{{.State.Running}}", foreign.name()]).trim() == "true";

    let refused = scenario.run(&["down", scenario.profile.as_str(), "--volumes"]);
    refused.expect_code(1, "down of a foreign container");
    assert!(
        refused.stderr.contains(&format!(
            "container `{}` was not created by envctl",
            scenario.profile
        )),
        "{refused}"
    );
    assert!(refused.stderr.contains("docker stop"), "{refused}");
    assert!(running(), "the foreign container still runs\n{refused}");
    assert!(volume_exists(&volume.name), "and keeps its volume");

    // Once the profile has its own container, the same TARGET means that one.
    scenario
        .up(&[])
        .expect_code(0, "up beside the foreign container");
    scenario
        .run(&["down", scenario.profile.as_str(), "--rm"])
        .expect_code(0, "down of the profile's container");
    assert_eq!(
        scenario.containers(),
        0,
        "the profile's container is removed"
    );
    assert!(running(), "the foreign container is untouched");
    assert!(volume_exists(&volume.name));
}

#[test]
fn a_foreign_container_with_the_default_name_is_left_alone() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-foreign");
    scenario.write_profile(&test_image(), "");
    let id = docker_stdout([
        "create",
        "--name",
        scenario.container.as_str(),
        test_image().as_str(),
        "sleep",
        "300",
    ]);
    let run = scenario.up(&[]);
    run.expect_code(1, "a container envctl did not create");
    assert!(
        run.stderr.contains(&format!(
            "container `{}` exists and was not created by envctl",
            scenario.container
        )),
        "{run}"
    );
    assert!(run.stderr.contains("hint:"), "{run}");
    assert_eq!(scenario.container_id(), id, "the foreign container stays");
    let inspect = scenario.inspect();
    assert_eq!(inspect["State"]["Status"], "created", "and is not started");
    assert!(inspect["Config"]["Labels"].get("envctl.profile").is_none());
    // `--recreate` must not touch it either.
    scenario
        .up(&["--recreate"])
        .expect_code(1, "--recreate on a foreign container");
    assert_eq!(scenario.container_id(), id);
}

/// Issue 15, item 10: a container that ignores SIGTERM is killed after the grace period,
/// and `down` says so with the fix instead of a plain "stopped"; one that stops at once
/// gets no such warning.
#[test]
fn down_says_when_the_container_had_to_be_killed() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("down-killed");
    // A shell as PID 1 without a trap: SIGTERM does nothing to it.
    scenario.write_profile(
        &test_image(),
        "command = [\"sh\", \"-c\", \"while true; do sleep 1; done\"]\n",
    );
    let _guard = ContainerGuard::new(scenario.container.clone());
    scenario.up(&[]).expect_code(0, "up");
    let run = scenario.run(&["down", scenario.profile.as_str(), "--timeout", "1"]);
    run.expect_code(0, "down");
    assert!(
        run.stderr
            .contains("did not stop within 1 s of SIGTERM and was killed"),
        "{}",
        run.stderr
    );

    let quick = Scenario::new("down-quick");
    quick.write_profile(&test_image(), "");
    let _quick_guard = ContainerGuard::new(quick.container.clone());
    quick.up(&[]).expect_code(0, "up");
    let run = quick.run(&["down", quick.profile.as_str(), "--timeout", "5"]);
    run.expect_code(0, "down");
    assert!(!run.stderr.contains("killed"), "{}", run.stderr);
}

/// Issue 15, item 10: `down P --rm` of a container already removed says there is nothing
/// to stop (exit 0) instead of "no container or profile named P — start one with up".
#[test]
fn down_of_a_profile_without_a_container_has_nothing_to_stop() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("down-twice");
    scenario.write_profile(&test_image(), "");
    let _guard = ContainerGuard::new(scenario.container.clone());
    scenario.up(&[]).expect_code(0, "up");
    scenario
        .run(&["down", scenario.profile.as_str(), "--rm"])
        .expect_code(0, "down --rm");
    let again = scenario.run(&["down", scenario.profile.as_str(), "--rm"]);
    again.expect_code(0, "down --rm again");
    assert!(
        again.stderr.contains(&format!(
            "nothing to stop: profile `{}` has no container",
            scenario.profile
        )),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains("envctl up"), "{}", again.stderr);
    // Commands that need the container still say how to make one.
    let logs = scenario.run(&["logs", scenario.profile.as_str()]);
    logs.expect_code(1, "logs");
    assert!(logs.stderr.contains("has no container"), "{}", logs.stderr);
    assert!(logs.stderr.contains("envctl up"), "{}", logs.stderr);
}
