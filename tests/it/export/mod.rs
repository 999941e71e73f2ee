//! `envctl export`: compose files that `docker-compose config` accepts (that `docker-compose
//! up` makes the container `envctl up` makes is tests/it/compose_runs.rs); Kubernetes manifests
//! read back as JSON values (their schemas are checked by `kubernetes-validate --strict` in
//! tests/it/validators.rs);
//! devcontainer.json; the `docker run` line; the `-o` file handling; and the notices for
//! what a target cannot express. Text output is pinned with insta snapshots
//! (`tests/it/export/snapshots/it__export__<target>__*.snap`), built through the library
//! with a fixed working directory (`/work/project`) so they are the same on every machine.
//!
//! Tests that need `docker-compose` (v1) or `docker compose` (v2) skip without it, unless
//! `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.
//!
//! This folder holds the shared fixtures (bundled profiles, the `EVERYTHING` profile, the
//! `Project` sandbox and its `Run`) and the YAML/JSON helpers; the tests sit in files by target.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{run_with_timeout, skip_or_panic};
use envctl::container_plan::Overrides;
use envctl::export::{self, ExportInput, Exported, KubernetesOptions, VolumeMode, WorkloadKind};
use envctl::lock::LockFile;
use envctl::ops::environment::{
    EnvironmentRequest, LockPolicy, Placement, ResolvedEnvironment, resolve,
};
use envctl::profile::resolve::{ResolvedProfile, resolve_text};
use envctl::profile::{SearchPath, bundled};

mod compose;
mod devcontainer;
mod kubernetes;
mod output;

/// The working directory of the library-level exports.
const PROJECT: &str = "/work/project";
const HOME: &str = "/home/ada";
const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn bundled_names() -> Vec<&'static str> {
    bundled::BUNDLED.iter().map(|(name, _)| *name).collect()
}

/// A bundled profile resolved as the binary resolves it (its `extends` included).
fn bundled_profile(name: &str) -> ResolvedProfile {
    SearchPath::new(
        PathBuf::from("/nonexistent/envctl-export-test"),
        Vec::new(),
        None,
    )
    .resolve(name)
    .unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn profile(text: &str) -> ResolvedProfile {
    resolve_text("export-test.toml", text).unwrap_or_else(|error| panic!("{error}: {error:?}"))
}

fn everything_exists(_: &Path) -> bool {
    true
}

fn nothing_is_a_file(_: &Path) -> bool {
    false
}

/// The environment `envctl export` resolves for a file target: as on another machine with
/// GPUs, the lock (given as text) applied, and why it was not reported.
fn environment(
    resolved: &ResolvedProfile,
    working_directory: &Path,
    lock: Option<&str>,
) -> ResolvedEnvironment {
    let lock = Ok(lock.map(|text| LockFile::parse(text).unwrap()));
    resolve(
        resolved.clone(),
        EnvironmentRequest {
            overrides: Overrides::default(),
            placement: Placement::Elsewhere,
            lock_policy: LockPolicy::Report,
            lock,
            working_directory: working_directory.to_path_buf(),
            home: Some(PathBuf::from(HOME)),
            path_exists: &everything_exists,
        },
    )
    .unwrap()
}

/// Exports through the library: `run` gets the input for `resolved` with its output file
/// (relative to `working_directory`), its body pinned by the lock text as the command pins it.
fn with_input<T>(
    resolved: &ResolvedProfile,
    working_directory: &Path,
    output_file: Option<&str>,
    lock: Option<&str>,
    run: impl FnOnce(&ExportInput<'_>) -> T,
) -> T {
    let body = environment(resolved, working_directory, lock).body;
    let input = ExportInput {
        resolved,
        body: &body,
        working_directory: working_directory.to_path_buf(),
        home: Some(PathBuf::from(HOME)),
        output_file: output_file.map(|file| working_directory.join(file)),
        path_is_file: &nothing_is_a_file,
    };
    run(&input)
}

/// The file text followed by the notices, for snapshots.
fn shown(exported: &Exported) -> String {
    let mut text = exported.text.clone();
    text.push_str("\n--- notices (stderr) ---\n");
    for notice in &exported.notices {
        text.push_str(&notice.to_string());
        text.push('\n');
    }
    text
}

fn yaml_documents(text: &str) -> Vec<serde_norway::Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| serde_norway::Value::deserialize(document).unwrap())
        .collect()
}

fn yaml_to_json(value: &serde_norway::Value) -> Value {
    serde_json::to_value(value).unwrap()
}

/// The item of `list` (a JSON array) whose `key` is `value`.
fn named<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no `{key}: {value}` in {list:#}"))
}

/// Runs the compose program with `arguments` in `directory`; panics unless it succeeds.
fn compose(program: &[String], directory: &Path, arguments: &[&str]) -> String {
    let mut command = Command::new(&program[0]);
    command
        .args(&program[1..])
        .args(arguments)
        .current_dir(directory)
        .env_remove("COMPOSE_PROJECT_NAME")
        .env_remove("COMPOSE_FILE");
    let output = run_with_timeout(&mut command, Duration::from_secs(300)).unwrap();
    assert!(
        output.status.success(),
        "{program:?} {arguments:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A temporary project folder for the binary: `./envctl/`, an empty user config folder
/// and home, so only the test's and the bundled profiles are found.
struct Project {
    directory: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let directory = tempfile::Builder::new()
            .prefix("envctl-export-test-")
            .tempdir()
            .unwrap();
        for folder in ["envctl", "xdg", "home"] {
            std::fs::create_dir_all(directory.path().join(folder)).unwrap();
        }
        Project { directory }
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn folder(&self, relative: &str) {
        std::fs::create_dir_all(self.path().join(relative)).unwrap();
    }

    /// `envctl ARGUMENTS…` in the project folder.
    fn envctl(&self, arguments: &[&str]) -> Run {
        Envctl::in_folder(self.path()).args(arguments).run()
    }
}

/// The exit code a test expects of a run, asserted with both streams shown.
trait Expect {
    fn expect(self, code: i32, what: &str) -> Run;
}

impl Expect for Run {
    fn expect(self, code: i32, what: &str) -> Run {
        assert_eq!(
            self.code, code,
            "{what}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Every setting compose can carry, in one profile.
const EVERYTHING: &str = r#"
name = "everything"
image = "registry.example.com:5000/team/train:1.0"
command = ["python", "train.py", "--out", "$HOME/runs"]
workdir = "/workspace"
user = "1000:1000"
gpus = ["0", "1"]
memory = "16g"
cpus = 1.5
shm_size = "2g"
ipc = "shareable"
ports = ["8888:8888", "0.0.0.0:2222:22", "[::1]:9000-9001:9000-9001/udp", "127.0.0.1::6006"]
mounts = ["./:/workspace", "./data:/data:ro", "../shared:/shared", "~/cache:/cache", "/srv/models:/models:ro", "datasets:/datasets"]
env = { FLAG = "on", TIME = "12:30", PRICE = "$5 $(X)", EMPTY = "" }

[ulimits]
memlock = -1
nofile = { soft = 1024, hard = 2048 }
"#;
