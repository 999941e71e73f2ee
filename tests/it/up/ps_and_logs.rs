//! `ps` lists the container with its profile and drift (judged by the profile when up had
//! overrides), and `logs` keeps stdout and stderr apart and tails.

use super::*;

/// The `ps --json` row of `container`.
fn ps_row(scenario: &Scenario) -> Value {
    let run = scenario.run(&["--json", "ps"]);
    run.expect_code(0, "ps --json");
    let listing = run.json();
    listing["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == scenario.container.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{} is not in `ps --json`:\n{run}", scenario.container))
}

#[test]
fn ps_lists_the_container_with_its_profile_and_drift() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-ps");
    let image = test_image();
    scenario.write_profile(&image, "memory = \"64m\"\n");
    scenario.up(&[]).expect_code(0, "up");
    let row = ps_row(&scenario);
    assert_eq!(row["profile"], scenario.profile.as_str(), "{row}");
    assert_eq!(row["state"], "running", "{row}");
    assert_eq!(row["image"], image.as_str(), "{row}");
    assert_eq!(row["drift"], "current", "{row}");

    scenario.write_profile(&image, "memory = \"128m\"\n");
    let row = ps_row(&scenario);
    assert_eq!(row["drift"], "changed", "{row}");
}

#[test]
fn ps_judges_drift_by_the_profile_when_up_had_overrides() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-ps-override");
    let image = test_image();
    scenario.write_profile(&image, "memory = \"64m\"\n");
    scenario
        .up(&["-e", "EXTRA=1"])
        .expect_code(0, "up with an override");
    let labels = &scenario.inspect()["Config"]["Labels"];
    assert_ne!(
        labels["envctl.config-hash"], labels["envctl.profile-hash"],
        "the overridden container is told apart from the plain profile's: {labels}"
    );
    let row = ps_row(&scenario);
    assert_eq!(
        row["drift"], "current",
        "an override is not a changed profile: {row}"
    );

    scenario.write_profile(&image, "memory = \"128m\"\n");
    let row = ps_row(&scenario);
    assert_eq!(row["drift"], "changed", "{row}");
}

#[test]
fn logs_keep_stdout_and_stderr_apart_and_tail() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-logs");
    scenario.write_profile(
        &test_image(),
        "command = [\"sh\", \"-c\", \"echo out-first; echo err-first >&2; sleep 0.3; echo out-last\"]\n",
    );
    scenario.up(&[]).expect_code(0, "up");
    assert_eq!(
        docker_stdout(["wait", scenario.container.as_str()]),
        "0",
        "the command runs to its end"
    );

    let logs = scenario.run(&["logs", scenario.profile.as_str()]);
    logs.expect_code(0, "logs");
    assert_eq!(logs.stdout, "out-first\nout-last\n", "{logs}");
    assert_eq!(logs.stderr, "err-first\n", "{logs}");

    let tail = scenario.run(&["logs", scenario.profile.as_str(), "--tail", "1"]);
    tail.expect_code(0, "logs --tail 1");
    assert_eq!(tail.stdout, "out-last\n", "{tail}");
    assert_eq!(tail.stderr, "", "{tail}");

    let json = scenario.run(&["--json", "logs", scenario.profile.as_str()]);
    json.expect_code(0, "--json logs");
    let document = json.json();
    assert_eq!(document["schema_version"], 1, "{json}");
    assert_eq!(document["container"], scenario.container.as_str(), "{json}");
    let lines: Vec<(String, String)> = document["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| {
            (
                line["stream"].as_str().unwrap().to_string(),
                line["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for expected in [
        ("stdout", "out-first"),
        ("stderr", "err-first"),
        ("stdout", "out-last"),
    ] {
        assert!(
            lines.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} in {lines:?}"
        );
    }
    // Following is a stream: JSON lines (the container has exited, so it ends at once).
    let follow = scenario.run(&["--json", "logs", scenario.profile.as_str(), "-f"]);
    follow.expect_code(0, "--json logs -f");
    let streamed: Vec<Value> = follow
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(streamed.len(), 3, "{follow}");
    for line in &streamed {
        assert_eq!(line["schema_version"], 1, "{line}");
        assert_eq!(line["container"], scenario.container.as_str(), "{line}");
    }
    assert!(
        streamed
            .iter()
            .any(|line| line["stream"] == "stderr" && line["text"] == "err-first"),
        "{follow}"
    );
}
