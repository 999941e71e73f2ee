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
//!
//! This folder holds the `Scenario` runner, its `Run`, the volume guard and the small readers
//! shared by the files by theme.

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

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, ImageGuard, docker_output, docker_stdout, image_exists, require_daemon,
    test_image, unique_name,
};
use crate::support::registry::{Registry, free_loopback_port, push_test_image, require_registry};

mod down;
mod gpus;
mod lifecycle;
mod ps_and_logs;
mod pulls;
mod refusals;

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

/// The exit code a test expects of a run, asserted with both streams shown.
trait ExpectCode {
    fn expect_code(&self, code: i32, what: &str) -> &Self;
}

impl ExpectCode for Run {
    fn expect_code(&self, code: i32, what: &str) -> &Self {
        assert_eq!(self.code, code, "{what}: unexpected exit code\n{self}");
        self
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

    /// `envctl` set up for this scenario: its folder is the working directory and holds
    /// `./xdg` and `./home` ([`Envctl::in_folder`]).
    fn envctl(&self) -> Envctl {
        Envctl::in_folder(self.path())
    }

    /// [`Scenario::envctl`] for a test that spawns envctl itself, with stdin closed.
    fn std_command(&self) -> std::process::Command {
        let mut command = self.envctl().command();
        command.stdin(Stdio::null());
        command
    }

    /// `envctl ARGUMENTS…` with `environment` added, within [`HANG_GUARD`].
    fn run_with(&self, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
        let mut envctl = self.envctl().args(arguments);
        for (key, value) in environment {
            envctl = envctl.env(key, value);
        }
        let output = assert_cmd::Command::from_std(envctl.command())
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        assert!(
            output.status.code().is_some(),
            "envctl {arguments:?} was killed ({:?})",
            output.status
        );
        Run::of(output)
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
