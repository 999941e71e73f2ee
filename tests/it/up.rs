//! `envctl up` (and the `down`, `ps`, `logs` that go with it) against the real Docker
//! daemon: idempotence and concurrent runs, drift and `--recreate`, host data kept by
//! `down`, the create body really sent, pulls with progress from a loopback registry and
//! their failures, GPU preflight without an NVIDIA runtime, refusals that create nothing,
//! Ctrl-C during a pull, and an unreachable daemon.
//!
//! Every test runs the built binary in its own temporary working directory, with its
//! profiles in `./envctl/NAME.toml`, a unique profile name (so the container
//! `envctl-NAME` is its own and tests run in parallel) and guards that remove whatever
//! it made, even when it panics.
//!
//! Without a daemon these tests print `SKIPPED (no Docker daemon): …` and pass, unless
//! `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::registry::Blackhole;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::docker::{
    ContainerGuard, ImageGuard, docker_output, docker_stdout, image_exists, require_daemon,
    test_image, unique_name,
};
use crate::support::registry::{Registry, free_loopback_port, push_test_image, require_registry};

/// No single envctl run in these tests may take longer than this.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// One test's world: a working directory with `./envctl/<profile>.toml`, and the guard of
/// the container `envctl-<profile>` that `up` makes.
struct Scenario {
    profile: String,
    container: String,
    // Declared before the directory: the container goes before its bind sources.
    _container_guard: ContainerGuard,
    directory: tempfile::TempDir,
}

/// What one envctl run did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The one JSON document on stdout.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not one JSON document ({error}):\n{self}"))
    }

    fn expect_code(&self, code: i32, what: &str) -> &Self {
        assert_eq!(self.code, code, "{what}: unexpected exit code\n{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "exit code {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Scenario {
    /// A fresh scenario whose profile is named `<prefix>-<unique>`.
    fn new(prefix: &str) -> Scenario {
        let profile = unique_name(prefix);
        let container = format!("envctl-{profile}");
        let directory = tempfile::Builder::new()
            .prefix("envctl-up-test-")
            .tempdir()
            .unwrap();
        for folder in ["envctl", "xdg", "home"] {
            std::fs::create_dir_all(directory.path().join(folder)).unwrap();
        }
        Scenario {
            _container_guard: ContainerGuard::new(container.as_str()),
            profile,
            container,
            directory,
        }
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }

    /// Writes the profile: `image = "<image>"` followed by `rest`.
    fn write_profile(&self, image: &str, rest: &str) {
        std::fs::write(
            self.path()
                .join("envctl")
                .join(format!("{}.toml", self.profile)),
            format!("image = \"{image}\"\n{rest}"),
        )
        .unwrap();
    }

    /// Makes `./relative` and returns its absolute path.
    fn folder(&self, relative: &str) -> PathBuf {
        let path = self.path().join(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// `envctl` set up for this scenario: its working directory and a clean environment.
    fn std_command(&self) -> std::process::Command {
        let mut command = crate::support::cli::envctl_command();
        command
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HOME", self.path().join("home"))
            .env_remove("ENVCTL_PROFILE_PATH")
            .env_remove("ENVCTL_NVML_LIBRARY")
            .env_remove("CLICOLOR_FORCE")
            .stdin(Stdio::null());
        command
    }

    fn run_with(&self, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
        let mut command = assert_cmd::Command::from_std(self.std_command());
        command.args(arguments).timeout(HANG_GUARD);
        for (key, value) in environment {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        Run {
            code: output
                .status
                .code()
                .unwrap_or_else(|| panic!("envctl {arguments:?} was killed ({:?})", output.status)),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// `envctl ARGUMENTS…`.
    fn run(&self, arguments: &[&str]) -> Run {
        self.run_with(arguments, &[])
    }

    /// `envctl up PROFILE EXTRA…`.
    fn up(&self, extra: &[&str]) -> Run {
        let mut arguments = vec!["up", self.profile.as_str()];
        arguments.extend_from_slice(extra);
        self.run(&arguments)
    }

    /// `envctl --json up PROFILE EXTRA…`, expected to succeed: its JSON report.
    fn up_json(&self, extra: &[&str]) -> Value {
        let mut arguments = vec!["--json", "up", self.profile.as_str()];
        arguments.extend_from_slice(extra);
        let run = self.run(&arguments);
        run.expect_code(0, "envctl --json up");
        run.json()
    }

    /// How many containers (running or not) are named `envctl-<profile>`.
    fn containers(&self) -> usize {
        count_containers(&self.container)
    }

    /// `docker inspect` of the container.
    fn inspect(&self) -> Value {
        let text = docker_stdout(["container", "inspect", self.container.as_str()]);
        let mut all: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(all.len(), 1, "{text}");
        all.remove(0)
    }

    fn container_id(&self) -> String {
        docker_stdout(["container", "inspect", "-f", "{{.Id}}", &self.container])
    }

    fn is_running(&self) -> bool {
        docker_stdout([
            "container",
            "inspect",
            "-f",
            "{{.State.Running}}",
            &self.container,
        ]) == "true"
    }

    /// Replaces the scenario's own (random) names in `text`, for snapshots.
    fn redact(&self, text: &str) -> String {
        text.replace(&self.path().display().to_string(), "[DIR]")
            .replace(&self.profile, "[PROFILE]")
    }
}

/// Containers named exactly `name`, running or not.
fn count_containers(name: &str) -> usize {
    docker_stdout(["ps", "-a", "-q", "--filter", &format!("name=^/{name}$")])
        .lines()
        .filter(|line| !line.trim().is_empty())
        .count()
}

/// Removes a named volume when dropped. Declare it before the scenario: locals drop in
/// reverse order, and a volume still in use cannot be removed.
struct VolumeGuard {
    name: String,
}

impl VolumeGuard {
    /// Guards a fresh volume name; the volume itself is made by whoever uses it first.
    fn unique(prefix: &str) -> VolumeGuard {
        VolumeGuard {
            name: unique_name(prefix),
        }
    }
}

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = docker_output(["volume", "rm", "-f", self.name.as_str()]);
    }
}

fn volume_exists(name: &str) -> bool {
    docker_output(["volume", "inspect", name]).status.success()
}

/// Pull progress lines in plain mode: `<12 hex digits>: <status>`.
fn progress_lines<'a>(stderr: &'a str, status: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|line| {
            line.split_once(": ").is_some_and(|(layer, said)| {
                layer.len() == 12 && layer.chars().all(|c| c.is_ascii_hexdigit()) && said == status
            })
        })
        .collect()
}

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
            .map(|child| {
                let output = child.wait_with_output().unwrap();
                Run {
                    code: output.status.code().unwrap_or(-1),
                    stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                }
            })
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

/// A new image (test image plus one unique layer) pushed as `reference` and then removed
/// locally, so that `up` has to pull it for real.
fn push_unique_image(registry: &Registry, repo: &str) -> String {
    let source = ContainerGuard::unique("envctl-up-layer");
    let marker = unique_name("layer");
    docker_stdout([
        "run",
        "--name",
        source.name(),
        test_image().as_str(),
        "sh",
        "-c",
        &format!("echo {marker} > /unique"),
    ]);
    let reference = registry.reference(repo, "v1");
    docker_stdout(["commit", source.name(), reference.as_str()]);
    let pushed = docker_output(["push", reference.as_str()]);
    assert!(
        pushed.status.success(),
        "docker push {reference}: {}\n{}",
        String::from_utf8_lossy(&pushed.stderr),
        registry.log()
    );
    docker_stdout(["rmi", reference.as_str()]);
    assert!(!image_exists(&reference));
    reference
}

#[test]
fn pull_shows_progress_lines_from_a_local_registry_and_none_with_json() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pull");
    let reference = push_unique_image(&registry, &repo);
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pull");
    scenario.write_profile(&reference, "");

    // stderr is a pipe here: plain progress lines, one per layer and status.
    let run = scenario.up(&[]);
    run.expect_code(0, "up pulling from the local registry");
    assert!(
        run.stderr.contains(&format!("pulling {reference}")),
        "{run}"
    );
    assert!(
        !progress_lines(&run.stderr, "Pull complete").is_empty(),
        "expected `<layer>: Pull complete` lines on stderr\n{run}"
    );
    assert!(image_exists(&reference), "the image exists after the pull");
    assert!(scenario.is_running());
    assert_eq!(run.stdout.trim(), scenario.container, "{run}");

    // Again with --json: no progress on stderr, one JSON document on stdout.
    scenario
        .run(&["down", scenario.profile.as_str(), "--rm"])
        .expect_code(0, "down --rm");
    docker_stdout(["rmi", reference.as_str()]);
    assert!(!image_exists(&reference));
    let run = scenario.run(&["--json", "up", scenario.profile.as_str()]);
    run.expect_code(0, "--json up pulling");
    let report = run.json();
    assert_eq!(report["status"], "created", "{report}");
    assert_eq!(report["image"], reference.as_str(), "{report}");
    for progress in [
        "Pull complete",
        "Pulling fs layer",
        "Downloading",
        "Extracting",
        "Digest:",
        "Status:",
    ] {
        assert!(
            !run.stderr.contains(progress),
            "--json must not draw progress (`{progress}`) on stderr\n{run}"
        );
    }
    assert!(image_exists(&reference));
}

#[test]
fn pull_never_with_a_missing_image_fails_naming_it() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-never");
    let image = format!("{}:v1", unique_name("envctl-test/absent"));
    scenario.write_profile(&image, "");
    let run = scenario.up(&["--pull", "never"]);
    run.expect_code(1, "--pull never with a missing image");
    assert!(
        run.stderr.contains(&format!("error: image `{image}`")),
        "{run}"
    );
    assert!(run.stderr.contains("--pull never"), "{run}");
    assert!(run.stderr.contains("hint:"), "{run}");
    assert!(
        !run.stderr.contains(&format!("pulling {image}")),
        "nothing may be pulled\n{run}"
    );
    assert_eq!(scenario.containers(), 0);
}

#[test]
fn a_tag_missing_from_the_registry_names_image_registry_and_fix() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/tags");
    push_test_image(&registry, &repo, "v1");
    let missing = registry.reference(&repo, "v2-missing");
    let _never = ImageGuard::new(missing.as_str());
    let scenario = Scenario::new("up-notag");
    scenario.write_profile(&missing, "");
    let run = scenario.up(&[]);
    run.expect_code(1, "a tag the registry does not have");
    assert!(
        run.stderr.contains(&format!("cannot pull `{missing}`")),
        "{run}"
    );
    assert!(
        run.stderr
            .contains(&format!("from {}", registry.host_port())),
        "the error names the registry\n{run}"
    );
    assert!(
        run.stderr.contains("not found") || run.stderr.contains("manifest unknown"),
        "{run}"
    );
    assert!(
        run.stderr.contains("hint: check the image name and tag"),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
    assert!(!image_exists(&missing));
}

#[test]
fn an_unreachable_registry_is_named_as_the_cause() {
    if !require_daemon() {
        return;
    }
    let port = free_loopback_port();
    let image = format!("127.0.0.1:{port}/envctl-test/unreachable:v1");
    let scenario = Scenario::new("up-unreach");
    scenario.write_profile(&image, "");
    let run = scenario.up(&[]);
    run.expect_code(1, "a registry nothing listens on");
    assert!(
        run.stderr.contains(&format!("cannot pull `{image}`")),
        "{run}"
    );
    assert!(run.stderr.contains("connection refused"), "{run}");
    assert!(
        run.stderr
            .contains(&format!("hint: 127.0.0.1:{port} cannot be reached")),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
}

/// Whether the daemon has an NVIDIA runtime (then the GPU scenarios below do not apply).
/// Whether the daemon lacks an NVIDIA runtime, which the GPU-refusal scenarios need; says
/// so loudly when it has one (the scenario then cannot happen here).
fn daemon_without_nvidia_runtime() -> bool {
    if !docker_stdout(["info", "--format", "{{json .Runtimes}}"]).contains("nvidia") {
        return true;
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED (the daemon has an NVIDIA runtime): {}",
        crate::support::docker::current_test_name()
    );
    false
}

#[test]
fn a_gpu_profile_without_nvidia_runtime_is_refused_and_force_leaves_nothing() {
    if !require_daemon() {
        return;
    }
    if !daemon_without_nvidia_runtime() {
        return;
    }
    let scenario = Scenario::new("up-gpu");
    scenario.write_profile(&test_image(), "gpus = \"all\"\n");
    let refused = scenario.up(&[]);
    refused.expect_code(1, "preflight of a GPU profile without NVIDIA runtime");
    assert!(refused.stderr.contains("NVIDIA runtime"), "{refused}");
    // Not offered: the forced start below fails as the finding says it would.
    assert!(!refused.stderr.contains("--force"), "{refused}");
    // `up` creates (never starts) the container while the preflight runs; a refusal
    // removes it again, without talk about a container the user never asked for.
    assert_eq!(
        scenario.containers(),
        0,
        "a refused preflight leaves nothing"
    );
    assert!(!refused.stderr.contains("removed"), "{refused}");

    let forced = scenario.up(&["--force"]);
    forced.expect_code(1, "up --force of a GPU profile without NVIDIA runtime");
    assert!(
        forced.stderr.contains("could not select device driver"),
        "{forced}"
    );
    assert!(
        forced.stderr.contains("NVIDIA Container Toolkit"),
        "{forced}"
    );
    assert!(
        forced
            .stderr
            .contains("removed the container this run created but did not start"),
        "{forced}"
    );
    assert_eq!(
        scenario.containers(),
        0,
        "the half-made container must be removed\n{forced}"
    );
}

#[test]
fn optional_gpus_start_without_them_when_the_daemon_cannot_hand_them_over() {
    if !require_daemon() {
        return;
    }
    if !daemon_without_nvidia_runtime() {
        return;
    }
    let scenario = Scenario::new("up-optional");
    scenario.write_profile(&test_image(), "gpus = \"optional\"\n");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("healthy-8x-h100.conf");
    let init_log = scenario.path().join("nvml-inits.log");
    let environment = [
        ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_INIT_LOG", init_log.to_str().unwrap()),
    ];
    let run = scenario.run_with(&["up", &scenario.profile], &environment);
    run.expect_code(
        0,
        "up of a gpus = \"optional\" profile on a GPU host without runtime",
    );
    assert!(
        run.stderr.contains("cannot hand them to containers")
            && run.stderr.contains("starts without them"),
        "{run}"
    );
    assert!(scenario.is_running(), "{run}");
    let requests = &scenario.inspect()["HostConfig"]["DeviceRequests"];
    assert!(
        requests.is_null() || requests.as_array().is_some_and(Vec::is_empty),
        "no GPU request when the daemon cannot serve it: {requests}"
    );
    let inits = std::fs::read_to_string(&init_log).unwrap();
    assert_eq!(
        inits.lines().count(),
        1,
        "NVML is initialised once per run (the body and the preflight share it): {inits:?}"
    );
}

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

#[test]
fn sigint_during_a_slow_pull_exits_130_and_leaves_nothing() {
    signal_during_a_slow_pull("INT", 130);
}

#[test]
fn sigterm_during_a_slow_pull_exits_143_and_leaves_nothing() {
    signal_during_a_slow_pull("TERM", 143);
}

fn signal_during_a_slow_pull(signal: &str, expected_code: i32) {
    if !require_daemon() {
        return;
    }
    let blackhole = Blackhole::start();
    let image = format!("{}/envctl-test/slow:v1", blackhole.address);
    let _never = ImageGuard::new(image.as_str());
    let scenario = Scenario::new("up-sigint");
    scenario.write_profile(&image, "");
    let mut child = scenario
        .std_command()
        .args(["up", scenario.profile.as_str()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = crate::support::wait::Collected::start(child.stderr.take().unwrap());

    // The daemon connects to the registry only once `up` is pulling.
    let deadline = Instant::now() + Duration::from_secs(30);
    while blackhole.accepted.load(Ordering::SeqCst) == 0 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "up ended ({status}) before the pull started:\n{}",
                stderr.finish()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the daemon never connected to {}", blackhole.address);
        }
        thread::sleep(Duration::from_millis(20));
    }
    // `up` says so before it streams the pull's progress from the daemon.
    assert!(
        stderr.contains_within("pulling", Duration::from_secs(10)),
        "up never said it pulls:\n{}",
        stderr.text()
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the pull should still hang"
    );

    assert!(crate::support::signal::send(&child, signal));
    let Some(status) = crate::support::signal::wait_within(&mut child, Duration::from_secs(2))
    else {
        panic!(
            "up did not exit within 2 s of SIG{signal}:\n{}",
            stderr.finish()
        );
    };
    let stderr = stderr.finish();
    assert_eq!(status.code(), Some(expected_code), "{status:?}\n{stderr}");
    assert!(stderr.contains("pulling"), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(scenario.containers(), 0, "nothing may be left\n{stderr}");
    drop(blackhole);
    assert!(!image_exists(&image));
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

/// A registry that answers every request with 401 and a Basic challenge, like a private
/// registry the user has not logged in to.
fn unauthorized_registry() -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let mut request = [0u8; 4096];
                    let _ = std::io::Read::read(&mut stream, &mut request);
                    let body = r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#;
                    let response = format!(
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"envctl-test\"\r\nDocker-Distribution-API-Version: registry/2.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = std::io::Write::write_all(&mut stream, response.as_bytes());
                }
                Err(_) => thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (address, stop)
}

#[test]
fn a_registry_asking_for_credentials_is_named_with_docker_login() {
    if !require_daemon() {
        return;
    }
    let (address, stop) = unauthorized_registry();
    let image = format!("{address}/envctl-test/private:v1");
    let scenario = Scenario::new("up-unauthorized");
    scenario.write_profile(&image, "");
    let run = scenario.run(&["up", scenario.profile.as_str()]);
    stop.store(true, Ordering::Relaxed);
    run.expect_code(1, "a registry that wants credentials");
    assert!(run.stderr.contains(&image), "names the image: {run}");
    assert!(
        run.stderr.contains(&format!("docker login {address}")),
        "the fix: {run}"
    );
    assert_eq!(scenario.containers(), 0);
}

#[test]
fn a_registry_that_never_answers_is_named_after_the_stall_timeout() {
    if !require_daemon() {
        return;
    }
    let blackhole = Blackhole::start();
    let image = format!("{}/envctl-test/stalled:v1", blackhole.address);
    let scenario = Scenario::new("up-stalled");
    scenario.write_profile(&image, "");
    let started = Instant::now();
    let run = scenario.run_with(
        &["up", scenario.profile.as_str()],
        &[("ENVCTL_PULL_STALL_SECONDS", "2")],
    );
    let elapsed = started.elapsed();
    run.expect_code(1, "a registry that accepts and never answers");
    assert!(
        elapsed < Duration::from_secs(15),
        "gave up after {elapsed:?}\n{run}"
    );
    assert!(run.stderr.contains("no progress for 2 s"), "{run}");
    assert!(
        run.stderr.contains(&blackhole.address.to_string()),
        "names the registry: {run}"
    );
    assert!(
        run.stderr.contains("accepts connections but sends nothing"),
        "{run}"
    );
    assert_eq!(scenario.containers(), 0);
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

/// Issue 13, item 3: `gpus = "optional"` says so whenever the container runs without GPUs
/// (here: no NVML, so no GPU); before, nothing was printed.
#[test]
fn optional_gpus_warn_when_the_container_runs_without_them() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-optional");
    scenario.write_profile(&test_image(), "gpus = \"optional\"\n");
    let _guard = ContainerGuard::new(scenario.container.clone());
    let run = scenario.run_with(
        &["up", scenario.profile.as_str()],
        &[("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")],
    );
    run.expect_code(0, "up");
    assert!(
        run.stderr.contains("`gpus = \"optional\"`: NVML sees no GPU on this host, so the container runs without GPUs"),
        "{}",
        run.stderr
    );
    let requests = docker_stdout([
        "inspect",
        "--format",
        "{{json .HostConfig.DeviceRequests}}",
        scenario.container.as_str(),
    ]);
    assert_eq!(requests.trim(), "null", "no GPU request was sent");
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

/// Issue 41: an image built FROM the test image with bitsandbytes 0.50.2's real CUDA
/// `library` (`tests/corpus/fatbin`) in site-packages, pushed to `registry` as `repo:v1`
/// and removed here, so that `up` must pull it. None (the test skipped, said) when the
/// corpus is not fetched.
fn push_cuda_library_image(registry: &Registry, repo: &str, library: &str) -> Option<String> {
    let Some(folder) = crate::fatbin_corpus::bitsandbytes_folder() else {
        crate::support::docker::skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            &crate::support::docker::current_test_name(),
            "hint: bash tests/corpus/fatbin/fetch.sh",
        );
        return None;
    };
    let reference = registry.reference(repo, "v1");
    let built = crate::support::cuda_images::ImageBuild::new()
        .package(
            crate::fatbin_corpus::SITE,
            ("bitsandbytes", "0.50.2"),
            &folder,
            &[library],
        )
        .build(&reference);
    let pushed = docker_output(["push", reference.as_str()]);
    assert!(
        pushed.status.success(),
        "docker push {reference}: {}\n{}",
        String::from_utf8_lossy(&pushed.stderr),
        registry.log()
    );
    drop(built);
    assert!(!image_exists(&reference));
    Some(reference)
}

/// The files of the library-scan cache under `cache` (`<id>.json`, per image id).
fn cached_scans(cache: &Path) -> Vec<String> {
    let folder = cache.join("envctl/image-libraries");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The cache file's name of the local image `reference` (`<digest of its id>.json`).
fn cache_name_of(reference: &str) -> String {
    let id = crate::support::docker::image_id(reference).unwrap();
    format!("{}.json", id.trim_start_matches("sha256:"))
}

/// Issue 41: an image that is only in the registry is read once `up` has pulled it, before
/// anything is created, and judged as the preflight judges a local image: bitsandbytes'
/// CUDA 11.8 build (sm_60 … sm_90, no PTX) on the stand-in NVML's RTX 5090 (sm_120) is
/// doctor's own `gpu.library-arch` failure, said after the pull and before the create —
/// here with `--force` (this daemon has no NVIDIA runtime, which the preflight refuses
/// first; the refusal without `--force` is `preflight`'s unit test), so the create that
/// follows fails on the missing runtime and nothing is left. Both ways an image is pulled:
/// `gpus = "all"` (pulled by the create) and `gpus = 1` (pulled before placing). The scan
/// is cached per image id, the cache doctor then reads. `--dry-run` says the scan will
/// follow the pull.
#[test]
fn a_pulled_images_cuda_libraries_are_judged_before_the_create() {
    if !require_daemon() || !require_registry() || !daemon_without_nvidia_runtime() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pulled-cuda");
    let Some(reference) = push_cuda_library_image(&registry, &repo, "libbitsandbytes_cuda118.so")
    else {
        return;
    };
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pulled-cuda");
    let cache = scenario.path().join("cache");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("rtx-5090.conf");
    let environment = [
        ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
    ];
    scenario.write_profile(&reference, "gpus = \"all\"\n");

    let planned = scenario.run_with(
        &["--json", "up", &scenario.profile, "--dry-run", "--force"],
        &environment,
    );
    planned.expect_code(0, "up --dry-run --force of an image in the registry only");
    let said = planned.json()["library_scan"].as_str().unwrap().to_string();
    assert!(
        said.contains(&format!("image `{reference}` is not here"))
            && said.contains("pulls it, then reads its CUDA libraries"),
        "{planned}"
    );
    assert!(!image_exists(&reference), "a dry run pulls nothing");

    for gpus in ["gpus = \"all\"\n", "gpus = 1\n"] {
        scenario.write_profile(&reference, gpus);
        let run = scenario.run_with(&["up", &scenario.profile, "--force"], &environment);
        run.expect_code(
            1,
            "the create after the forced scan fails: no NVIDIA runtime",
        );
        let pulled = run
            .stderr
            .find(&format!("pulling {reference}"))
            .unwrap_or_else(|| panic!("no pull ({gpus})\n{run}"));
        let judged = run
            .stderr
            .find("libbitsandbytes_cuda118.so")
            .unwrap_or_else(|| panic!("no library verdict ({gpus})\n{run}"));
        // Docker 20.10 creates a GPU container without the runtime, and fails its start.
        let created = run
            .stderr
            .find("removed the container this run created but did not start")
            .unwrap_or_else(|| panic!("no create ({gpus})\n{run}"));
        assert!(pulled < judged && judged < created, "{gpus}\n{run}");
        let verdict = run.stderr[judged..].lines().next().unwrap().to_string();
        for expected in [
            "(from bitsandbytes 0.50.2)",
            "sm_120",
            "no kernel image",
            "(starting anyway: --force)",
        ] {
            assert!(verdict.contains(expected), "{expected:?} not in {verdict}");
        }
        assert_eq!(scenario.containers(), 0, "{run}");
        assert_eq!(
            cached_scans(&cache),
            [cache_name_of(&reference)],
            "one scan, cached per image id"
        );

        // doctor, with the image here now, gives the same verdict, read from that cache.
        let doctor = scenario.run_with(&["--json", "doctor", &scenario.profile], &environment);
        doctor.expect_code(1, "doctor on the pulled image");
        let report = doctor.json();
        let failure = report["profiles"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|finding| finding["id"] == "gpu.library-arch")
            .unwrap_or_else(|| panic!("{report:#}"));
        assert_eq!(failure["status"], "fail", "{failure:#}");
        assert!(
            run.stderr.contains(&format!(
                "{} (starting anyway: --force)",
                failure["message"].as_str().unwrap()
            )),
            "up said doctor's words\n{failure:#}\n{run}"
        );
        docker_stdout(["rmi", reference.as_str()]);
    }
}

/// Issue 41, the negative control: bitsandbytes' CUDA 13.2 build (which has sm_120), only
/// in the registry, pulled by `up` on the stand-in RTX 5090: scanned (the cache holds its
/// id) and nothing said of it; `up` goes on to the create (which fails here on the missing
/// NVIDIA runtime, forced past the preflight).
#[test]
fn a_pulled_image_whose_libraries_cover_the_gpu_is_not_warned_about() {
    if !require_daemon() || !require_registry() || !daemon_without_nvidia_runtime() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pulled-cuda-ok");
    let Some(reference) = push_cuda_library_image(&registry, &repo, "libbitsandbytes_cuda132.so")
    else {
        return;
    };
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pulled-cuda-ok");
    let cache = scenario.path().join("cache");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("rtx-5090.conf");
    scenario.write_profile(&reference, "gpus = \"all\"\n");
    let run = scenario.run_with(
        &["up", &scenario.profile, "--force"],
        &[
            ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
            ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ],
    );
    run.expect_code(1, "the create fails: no NVIDIA runtime");
    assert!(
        run.stderr.contains(&format!("pulling {reference}")),
        "{run}"
    );
    assert!(
        run.stderr.contains("could not select device driver"),
        "the create was reached\n{run}"
    );
    for unwanted in ["libbitsandbytes", "no kernel image", "CUDA libraries"] {
        assert!(!run.stderr.contains(unwanted), "{unwanted:?} said\n{run}");
    }
    assert_eq!(
        cached_scans(&cache),
        [cache_name_of(&reference)],
        "the pulled image was scanned"
    );
}
