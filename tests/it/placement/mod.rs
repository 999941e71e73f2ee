//! GPU placement on a shared host, against the real daemons with eight stand-in GPUs:
//! other containers are created (not started: Docker without an NVIDIA runtime creates
//! them, it cannot start them) holding GPUs through real `DeviceRequests`, and envctl's
//! `up --dry-run --json`, `doctor --json` and `ps` are read. On Podman 5.4, whose CDI path
//! starts GPU containers from a CDI spec the test writes, four `up`s run at once and the
//! containers they made are inspected.
//!
//! Placement sees every container on the daemon, and other test modules create GPU
//! containers too. So each Docker scenario runs when no other container holds a GPU, and
//! again if one appeared while it ran ([`quietly`]); the tests of this file take turns.
//!
//! This folder holds the fake `Machine`, the `envctl` runners, `Holders` and the small readers
//! that other test modules use too; the tests sit in files by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{self, TEST_LABEL, unique_name};
use crate::support::engines::{CDI_DIR_ENV, Family, engines};
use crate::support::nvml;

mod bodies;
mod choice;
mod concurrency;
mod remote;
mod safety;

/// The tests of this file take turns: each counts the others' containers as holders.
static TURN: Mutex<()> = Mutex::new(());

/// The first GPU's device minor number in the fixtures that give them: not its index, so
/// a node is never matched to a GPU by index by mistake.
const MINOR_BASE: usize = 20;

/// `gpu.N.minor_number=MINOR_BASE + N` for eight GPUs.
fn minor_numbers() -> String {
    (0..8)
        .map(|index| format!("gpu.{index}.minor_number={}\n", MINOR_BASE + index))
        .collect()
}

pub(crate) fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Eight H100s with UUIDs no other test uses (`GPU-<prefix>-…-00N`), `extra` appended.
pub(crate) struct Machine {
    _folder: tempfile::TempDir,
    pub(crate) fixture: PathBuf,
    pub(crate) uuids: Vec<String>,
}

impl Machine {
    pub(crate) fn new(extra: &str) -> Machine {
        let folder = tempfile::tempdir().unwrap();
        let prefix = format!(
            "{:08x}",
            std::process::id() ^ unique_name("m").len() as u32 ^ nanos()
        );
        let uuids: Vec<String> = (0..8)
            .map(|index| format!("GPU-{prefix}-2c1e-4b8e-9a57-0c3f1e2d4a0{index}"))
            .collect();
        let base = std::fs::read_to_string(nvml::fixture("healthy-8x-h100.conf")).unwrap();
        let mut text: String = base
            .lines()
            .filter(|line| !line.contains(".uuid="))
            .map(|line| format!("{line}\n"))
            .collect();
        for (index, uuid) in uuids.iter().enumerate() {
            text.push_str(&format!("gpu.{index}.uuid={uuid}\n"));
        }
        text.push_str(extra);
        let fixture = folder.path().join("machine.conf");
        std::fs::write(&fixture, text).unwrap();
        Machine {
            _folder: folder,
            fixture,
            uuids,
        }
    }
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

pub(crate) fn envctl(folder: &Path, machine: &Machine, host: &str, arguments: &[&str]) -> Run {
    envctl_with(folder, machine, host, &[], arguments)
}

/// [`envctl`] with `environment` added (`ENVCTL_POLICY`, …).
fn envctl_with(
    folder: &Path,
    machine: &Machine,
    host: &str,
    environment: &[(&str, &Path)],
    arguments: &[&str],
) -> Run {
    let mut envctl = Envctl::in_folder(folder);
    for (key, value) in environment {
        envctl = envctl.env(key, value);
    }
    envctl = envctl
        .nvml_file(&machine.fixture)
        .env("ENVCTL_GPU_LOCK", folder.join("gpus.lock"))
        .args(arguments);
    if !host.is_empty() {
        envctl = envctl.daemon(host);
    }
    Run::of(
        assert_cmd::Command::from_std(envctl.command())
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap(),
    )
}

/// A folder with `./envctl/NAME.toml` for each `(name, rest)`.
pub(crate) fn project(image: &str, profiles: &[(&str, &str)]) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    for (name, rest) in profiles {
        std::fs::write(
            folder.path().join("envctl").join(format!("{name}.toml")),
            format!("image = \"{image}\"\n{rest}"),
        )
        .unwrap();
    }
    folder
}

/// Containers created on Docker with `--gpus SPEC`, labelled as this test's, removed on drop.
pub(crate) struct Holders {
    pub(crate) names: Vec<String>,
}

impl Holders {
    pub(crate) fn create(specs: &[&str]) -> Holders {
        let given: Vec<Vec<&str>> = specs.iter().map(|spec| vec!["--gpus", *spec]).collect();
        Holders::given(&given)
    }

    /// One container per entry, created with those `docker create` options.
    pub(crate) fn given(options: &[Vec<&str>]) -> Holders {
        let image = docker::test_image();
        let names = options
            .iter()
            .map(|options| {
                let name = unique_name("holder");
                let mut arguments = vec!["create", "--label", TEST_LABEL, "--name", &name];
                arguments.extend(options.iter().copied());
                arguments.push(&image);
                docker::docker_stdout(arguments);
                name
            })
            .collect();
        Holders { names }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = docker::run_with_timeout(
                &mut docker::docker_command(["rm", "-f", name.as_str()]),
                Duration::from_secs(60),
            );
        }
    }
}

/// The containers on the engine at `host` (empty: Docker's own) that hold GPUs (not
/// exited, with a GPU request or CDI GPU devices) and that `mine` does not claim by name.
fn others_holding_gpus(host: &str, mine: &dyn Fn(&str) -> bool) -> Vec<String> {
    let command = |arguments: &[&str]| {
        let mut command = std::process::Command::new("docker");
        if !host.is_empty() {
            command.args(["-H", host]);
        }
        command.args(arguments);
        command
    };
    let listed = command(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        "status=created",
        "--filter",
        "status=running",
        "--filter",
        "status=paused",
        "--filter",
        "status=restarting",
    ])
    .output()
    .unwrap_or_else(|error| panic!("docker ps: {error}"));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|id| {
            // One removed since the list holds nothing.
            let output = command(&[
                "inspect",
                "--format",
                "{{.Name}} {{json .HostConfig.DeviceRequests}} {{json .HostConfig.Devices}}",
                id,
            ])
            .output()
            .ok()?;
            let line = String::from_utf8_lossy(&output.stdout).trim().to_string();
            let (name, rest) = line.split_once(' ')?;
            let name = name.trim_start_matches('/');
            let holds = rest.contains("\"gpu\"")
                || rest.contains("nvidia.com/gpu")
                || rest.contains("\"PathInContainer\":\"/dev/nvidia");
            (holds && !mine(name)).then(|| line.clone())
        })
        .collect()
}

/// Runs `scenario` while no other container holds a GPU on the engine at `host`: waits
/// for quiet, runs, and runs again when another module's GPU container appeared meanwhile.
pub(crate) fn quietly<T>(
    host: &str,
    mine: &dyn Fn(&str) -> bool,
    mut scenario: impl FnMut() -> T,
) -> T {
    let started = Instant::now();
    loop {
        while !others_holding_gpus(host, mine).is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "other containers have held GPUs for 4 minutes: {:?}",
                others_holding_gpus(host, mine)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let outcome = scenario();
        if others_holding_gpus(host, mine).is_empty() {
            return outcome;
        }
    }
}

pub(crate) fn chosen(dry_run: &Value) -> Vec<u64> {
    dry_run["placement"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no placement.gpus in {dry_run}"))
        .iter()
        .map(|gpu| gpu["index"].as_u64().unwrap())
        .collect()
}

/// A CDI spec naming each GPU of `machine` by UUID, so Podman 5.4 starts containers placed
/// on them: each adds `ENVCTL_TEST_GPU_<index>=<uuid>` and, as NVIDIA's specs do, the
/// GPU's node `/dev/nvidia<minor>` in the container (minor [`MINOR_BASE`] + index, as the
/// machine's `minor_number`s say when it has them), made with `mknod` as /dev/null's 1:3
/// in `nodes`; and `all`, every GPU's edits at once. Removed on drop.
struct CdiSpec(PathBuf);

impl CdiSpec {
    fn write(machine: &Machine, nodes: &Path) -> Option<CdiSpec> {
        let folder = std::env::var_os(CDI_DIR_ENV)?;
        let devices: Vec<Value> = machine
            .uuids
            .iter()
            .enumerate()
            .map(|(index, uuid)| {
                let node = nodes.join(format!("gpu{index}"));
                crate::support::engines::null_device_node(&node);
                serde_json::json!({
                    "name": uuid,
                    "containerEdits": {
                        "env": [format!("ENVCTL_TEST_GPU_{index}={uuid}")],
                        "deviceNodes": [{
                            "path": format!("/dev/nvidia{}", MINOR_BASE + index),
                            "hostPath": node,
                            "permissions": "rw"
                        }]
                    }
                })
            })
            .collect();
        // `all`, as `nvidia-ctk cdi generate` writes it: every GPU's edits at once.
        let mut devices = devices;
        let every: Vec<Value> = devices
            .iter()
            .map(|device| device["containerEdits"].clone())
            .collect();
        devices.push(serde_json::json!({
            "name": "all",
            "containerEdits": {
                "env": every.iter().flat_map(|edits| edits["env"].as_array().unwrap().clone()).collect::<Vec<_>>(),
                "deviceNodes": every.iter().flat_map(|edits| edits["deviceNodes"].as_array().unwrap().clone()).collect::<Vec<_>>()
            }
        }));
        let spec = serde_json::json!({
            "cdiVersion": "0.6.0",
            "kind": "nvidia.com/gpu",
            "devices": devices
        });
        std::fs::create_dir_all(&folder).unwrap();
        let path =
            Path::new(&folder).join(format!("envctl-test-placement-{}.json", std::process::id()));
        std::fs::write(&path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
        Some(CdiSpec(path))
    }
}

impl Drop for CdiSpec {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The Podman 5.4 service these tests need: `None` (said as a skip) only where no engine
/// is required; with `ENVCTL_REQUIRE_DOCKER=1` its absence fails `test`.
fn podman_5_4(test: &str) -> Option<crate::support::engines::TestEngine> {
    let podman = engines()?
        .into_iter()
        .find(|engine| engine.family == Family::Podman && engine.version_pair() >= (5, 4));
    if podman.is_none() {
        docker::skip_or_panic(
            "no Podman 5.4 service",
            test,
            "ENVCTL_TEST_PODMAN names no Podman 5.4 or newer (.ci/podman.sh starts one)",
        );
    }
    podman
}

/// The UUIDs an `up --json` report says placement pinned.
fn pinned(report: &Value) -> Vec<String> {
    report["placement"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no pinned GPUs: {report:#}"))
        .iter()
        .map(|gpu| gpu["uuid"].as_str().unwrap().to_string())
        .collect()
}

/// Every run of a round, for a failure's message.
fn shown(runs: &[Run]) -> String {
    runs.iter().map(|run| format!("{run}\n")).collect()
}
