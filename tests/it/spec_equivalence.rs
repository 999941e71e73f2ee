//! The create body envctl sends and the `docker run` line it prints make the same
//! container: both are created on the real daemon and `docker inspect` compared field by
//! field — every `HostConfig` key, and the `Config` keys envctl sets.
//!
//! Container A goes the way `envctl up` goes: the body as JSON, deserialised into bollard's
//! `ContainerCreateBody`, sent with `create_container`. Container B is `docker create` with
//! the arguments of `docker_run_line` (run through `sh`, so its quoting is tested too). GPU
//! containers are only created: this daemon has no NVIDIA runtime, and `--gpus` fails at
//! start, not at create.
//!
//! Without a daemon these tests print `SKIPPED (no Docker daemon): …` and pass, unless
//! `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{CreateContainerOptionsBuilder, StartContainerOptions};
use serde_json::Value;

use crate::support::docker::{
    ContainerGuard, TEST_LABEL, docker_output, docker_stdout, require_daemon, run_with_timeout,
    test_image, unique_name,
};
use envctl::container_plan::{CreateBody, Overrides, SpecContext, create_body, docker_run_line};
use envctl::profile::resolve::{ResolvedProfile, resolve_text};

/// The `Config` keys envctl sets; the rest (hostname, attach flags, …) is not envctl's.
const CONFIG_KEYS: [&str; 8] = [
    "Image",
    "Cmd",
    "Entrypoint",
    "Env",
    "WorkingDir",
    "User",
    "Labels",
    "ExposedPorts",
];

/// Removes a named volume when dropped, even if the test panics. Declare it before the
/// container guards: locals drop in reverse order, and a volume in use cannot be removed.
struct VolumeGuard {
    name: String,
}

impl VolumeGuard {
    fn create(prefix: &str) -> Self {
        let name = unique_name(prefix);
        docker_stdout(["volume", "create", "--label", TEST_LABEL, name.as_str()]);
        VolumeGuard { name }
    }
}

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = docker_output(["volume", "rm", "-f", self.name.as_str()]);
    }
}

fn everything_exists(_: &Path) -> bool {
    true
}

fn context(working_directory: &Path, home: &Path) -> SpecContext<'static> {
    SpecContext {
        working_directory: working_directory.to_path_buf(),
        home: Some(home.to_path_buf()),
        host_has_gpus: false,
        overrides: Overrides::default(),
        path_exists: &everything_exists,
    }
}

fn resolve(text: &str) -> ResolvedProfile {
    resolve_text("spec-equivalence.toml", text).unwrap_or_else(|error| panic!("{error}: {error:?}"))
}

/// Container A: the body through bollard, as `envctl up` sends it.
async fn create_with_bollard(body: &CreateBody, name: &str) {
    let json = serde_json::to_value(body).unwrap();
    let bollard_body: ContainerCreateBody = serde_json::from_value(json.clone()).unwrap();
    // The round trip through bollard's types keeps every field envctl sets; the only
    // change is `DeviceIDs: null`, which bollard reads as `None` and then omits.
    let mut expected = json;
    // `get_mut`, not `[]`: indexing a `Value` mutably inserts the key when it is missing.
    if let Some(requests) = expected
        .get_mut("HostConfig")
        .and_then(|host| host.get_mut("DeviceRequests"))
        .and_then(Value::as_array_mut)
    {
        for request in requests {
            if request["DeviceIDs"].is_null()
                && let Some(object) = request.as_object_mut()
            {
                object.remove("DeviceIDs");
            }
        }
    }
    assert_eq!(serde_json::to_value(&bollard_body).unwrap(), expected);

    let docker = Docker::connect_with_defaults().unwrap();
    let options = CreateContainerOptionsBuilder::default().name(name).build();
    docker
        .create_container(Some(options), bollard_body)
        .await
        .unwrap_or_else(|error| panic!("bollard create_container {name}: {error}"));
}

/// Container B: `docker create` with the arguments of the `docker run` line, through `sh`.
fn create_with_docker_cli(body: &CreateBody, name: &str) -> String {
    let line = docker_run_line(body, name);
    let create = line
        .strip_prefix("docker run -d ")
        .map(|rest| format!("docker create {rest}"))
        .unwrap_or_else(|| panic!("not a `docker run -d` line: {line}"));
    let mut command = Command::new("sh");
    command.args(["-c", create.as_str()]);
    let output = run_with_timeout(&mut command, Duration::from_secs(120)).unwrap();
    assert!(
        output.status.success(),
        "`{create}` failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    line
}

fn inspect(name: &str) -> Value {
    let text = docker_stdout(["inspect", "--type", "container", name]);
    let mut list: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(list.len(), 1, "{text}");
    list.remove(0)
}

/// One `HostConfig` value, normalised where the two clients differ only in Go encoding:
/// the docker CLI sends empty lists and maps (`"Dns": []`, `"Devices": []`,
/// `"BlkioWeightDevice": []`, `"PortBindings": {}`, …) where a client that leaves a field
/// out gets Go's nil (`null`). The daemon treats both as "none". VERIFIED on 20.10: these
/// are the only `HostConfig` differences between the two containers.
fn empty_is_null(value: &Value) -> Value {
    match value {
        Value::Array(items) if items.is_empty() => Value::Null,
        Value::Object(entries) if entries.is_empty() => Value::Null,
        other => other.clone(),
    }
}

/// `Config.Env` as a sorted list: the docker CLI (28.x) sends `-e` variables in Go map
/// order, different on every run (VERIFIED: the same `docker create -e A=1 -e B=2 …` gave
/// two orders), and the daemon keeps the order it gets. Keys are unique either way.
fn sorted_env(value: &Value) -> Value {
    let mut env: Vec<String> = value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    env.sort();
    Value::from(env)
}

/// Compares `docker inspect` of A and B: every `HostConfig` key (the union of both), and
/// the `Config` keys envctl sets. Names, ids, hostnames and times are not compared.
fn assert_same_container(envctl_name: &str, docker_name: &str, line: &str) -> (Value, Value) {
    let envctl = inspect(envctl_name);
    let docker = inspect(docker_name);
    let mut differences = Vec::new();

    let host_keys: std::collections::BTreeSet<&String> = envctl["HostConfig"]
        .as_object()
        .unwrap()
        .keys()
        .chain(docker["HostConfig"].as_object().unwrap().keys())
        .collect();
    assert!(
        host_keys.len() > 40,
        "HostConfig looks empty: {host_keys:?}"
    );
    for key in host_keys {
        let ours = empty_is_null(&envctl["HostConfig"][key]);
        let theirs = empty_is_null(&docker["HostConfig"][key]);
        if ours != theirs {
            differences.push(format!("HostConfig.{key}: envctl {ours} ≠ docker {theirs}"));
        }
    }
    for key in CONFIG_KEYS {
        let (ours, theirs) = if key == "Env" {
            (
                sorted_env(&envctl["Config"][key]),
                sorted_env(&docker["Config"][key]),
            )
        } else {
            (envctl["Config"][key].clone(), docker["Config"][key].clone())
        };
        if ours != theirs {
            differences.push(format!("Config.{key}: envctl {ours} ≠ docker {theirs}"));
        }
    }
    assert!(
        differences.is_empty(),
        "the body and `{line}` made different containers:\n{}",
        differences.join("\n")
    );
    (envctl, docker)
}

/// Creates A and B from `body` and compares them; returns A's inspect output.
async fn create_both_and_compare(body: &CreateBody, prefix: &str) -> Value {
    let envctl = ContainerGuard::unique(&format!("{prefix}-envctl"));
    let docker = ContainerGuard::unique(&format!("{prefix}-docker"));
    create_with_bollard(body, envctl.name()).await;
    let line = create_with_docker_cli(body, docker.name());
    let (inspected, _) = assert_same_container(envctl.name(), docker.name(), &line);
    inspected
}

#[tokio::test]
async fn every_key_makes_the_same_container_as_docker_run() {
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let working_directory = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(working_directory.path().join("bind")).unwrap();
    std::fs::create_dir(home.path().join("datasets")).unwrap();
    let volume = VolumeGuard::create("envctl-spec-volume");
    let profile = format!(
        r#"
name = "spec-every-key"
image = "{image}"
command = ["sh", "-c", "sleep 1000"]
workdir = "/tmp"
user = "65534:65534"
gpus = "none"
memory = "256m"
cpus = 1.5
shm_size = "128m"
ipc = "shareable"
ports = ["18888:8888", "[::1]:18888:8888", "127.0.0.1:19000-19002:9000-9002/udp", "127.0.0.1::7000"]
mounts = ["./bind:/data:ro", "~/datasets:/datasets", "{volume}:/volume"]
env = {{ PYTHONUNBUFFERED = "1", WITH_SPACE = "a b 'c'" }}

[ulimits]
memlock = -1
stack = 67108864
nofile = {{ soft = 1024, hard = 2048 }}
"#,
        volume = volume.name
    );
    let resolved = resolve(&profile);
    let body = create_body(&resolved, &context(working_directory.path(), home.path())).unwrap();
    let inspected = create_both_and_compare(&body, "envctl-spec-every-key").await;

    // And what they agree on is what the profile says.
    let host = &inspected["HostConfig"];
    assert_eq!(host["Memory"], 256 << 20);
    assert_eq!(host["NanoCpus"], 1_500_000_000_i64);
    assert_eq!(host["ShmSize"], 128 << 20);
    assert_eq!(host["IpcMode"], "shareable");
    assert_eq!(
        host["PortBindings"]["8888/tcp"],
        serde_json::json!([
            {"HostIp": "127.0.0.1", "HostPort": "18888"},
            {"HostIp": "::1", "HostPort": "18888"}
        ])
    );
    assert_eq!(
        host["PortBindings"]["9001/udp"],
        serde_json::json!([{"HostIp": "127.0.0.1", "HostPort": "19001"}])
    );
    assert_eq!(
        host["PortBindings"]["7000/tcp"],
        serde_json::json!([{"HostIp": "127.0.0.1", "HostPort": ""}])
    );
    let bind = working_directory.path().join("bind");
    assert_eq!(host["Mounts"][0]["Source"], bind.to_str().unwrap());
    assert_eq!(host["Mounts"][0]["ReadOnly"], true);
    assert_eq!(host["Mounts"][2]["Source"], volume.name.as_str());
    assert_eq!(host["RestartPolicy"]["Name"], "no");
    assert!(host["DeviceRequests"].is_null());
    let config = &inspected["Config"];
    assert_eq!(config["Labels"]["envctl.profile"], "spec-every-key");
    assert_eq!(
        config["Labels"]["envctl.config-hash"],
        resolved.config_hash.as_str()
    );
    assert_eq!(config["Labels"]["envctl.test"], "1");
    assert!(config["ExposedPorts"]["9002/udp"].is_object());
}

/// Issue 29: `network`, `devices`, `cap_add` and `hostname` (host network; a named
/// network the test makes) make the same container as `--network`, `--device`,
/// `--cap-add` and `--hostname`.
#[tokio::test]
async fn host_access_keys_make_the_same_container_as_docker_run() {
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let folder = tempfile::tempdir().unwrap();
    let network = unique_name("envctl-spec-net");
    docker_stdout(["network", "create", "--label", TEST_LABEL, network.as_str()]);
    struct NetworkGuard(String);
    impl Drop for NetworkGuard {
        fn drop(&mut self) {
            let _ = docker_output(["network", "rm", self.0.as_str()]);
        }
    }
    let _network_guard = NetworkGuard(network.clone());
    for (mode, ports) in [("host", "[]"), (network.as_str(), "[\"127.0.0.1::8888\"]")] {
        let resolved = resolve(&format!(
            "name = \"spec-host-access\"\nimage = \"{image}\"\nnetwork = \"{mode}\"\nports = {ports}\n\
             devices = [\"/dev/fuse\", \"/dev/net/tun:/dev/tun:rw\"]\ncap_add = [\"ipc_lock\", \"SYS_NICE\"]\n\
             hostname = \"trainer-0\"\n"
        ));
        let body = create_body(&resolved, &context(folder.path(), folder.path())).unwrap();
        let envctl = ContainerGuard::unique("envctl-spec-host-access-envctl");
        let docker = ContainerGuard::unique("envctl-spec-host-access-docker");
        create_with_bollard(&body, envctl.name()).await;
        let line = create_with_docker_cli(&body, docker.name());
        let (ours, theirs) = assert_same_container(envctl.name(), docker.name(), &line);
        // `Hostname` is compared here: without one each container gets its own.
        assert_eq!(ours["Config"]["Hostname"], "trainer-0");
        assert_eq!(theirs["Config"]["Hostname"], "trainer-0");
        let host = &ours["HostConfig"];
        assert_eq!(host["NetworkMode"], mode);
        assert_eq!(
            host["CapAdd"],
            serde_json::json!(["CAP_IPC_LOCK", "CAP_SYS_NICE"])
        );
        assert_eq!(
            host["Devices"],
            serde_json::json!([
                {"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rwm"},
                {"PathOnHost": "/dev/net/tun", "PathInContainer": "/dev/tun", "CgroupPermissions": "rw"}
            ])
        );
        // And `up`'s drift check finds nothing to change in either.
        assert_eq!(
            envctl::container_plan::drift::changes(&body, &theirs).unwrap(),
            Vec::new()
        );
    }
}

async fn gpu_form_makes_the_same_container(gpus: &str, expected_requests: Value) {
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let resolved = resolve(&format!(
        "name = \"spec-gpus\"\nimage = \"{image}\"\ngpus = {gpus}"
    ));
    let directory = tempfile::tempdir().unwrap();
    let body = create_body(&resolved, &context(directory.path(), directory.path())).unwrap();
    let inspected = create_both_and_compare(&body, "envctl-spec-gpus").await;
    assert_eq!(inspected["HostConfig"]["DeviceRequests"], expected_requests);
    assert_eq!(inspected["HostConfig"]["ShmSize"], 8_i64 << 30);
    let env = inspected["Config"]["Env"].as_array().unwrap();
    assert!(
        env.contains(&Value::from("CUDA_DEVICE_ORDER=PCI_BUS_ID")),
        "{env:?}"
    );
}

#[tokio::test]
async fn all_gpus_make_the_same_container_as_docker_run() {
    gpu_form_makes_the_same_container(
        "\"all\"",
        serde_json::json!([{"Driver": "", "Count": -1, "DeviceIDs": null,
                            "Capabilities": [["gpu"]], "Options": {}}]),
    )
    .await;
}

#[tokio::test]
async fn gpu_count_makes_the_same_container_as_docker_run() {
    gpu_form_makes_the_same_container(
        "2",
        serde_json::json!([{"Driver": "", "Count": 2, "DeviceIDs": null,
                            "Capabilities": [["gpu"]], "Options": {}}]),
    )
    .await;
}

#[tokio::test]
async fn gpu_devices_make_the_same_container_as_docker_run() {
    gpu_form_makes_the_same_container(
        r#"["0", "GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc"]"#,
        serde_json::json!([{"Driver": "", "Count": 0,
                            "DeviceIDs": ["0", "GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc"],
                            "Capabilities": [["gpu"]], "Options": {}}]),
    )
    .await;
}

#[tokio::test]
async fn default_command_stays_up_and_stops_at_once() {
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let resolved = resolve(&format!("name = \"spec-keep-alive\"\nimage = \"{image}\""));
    let directory = tempfile::tempdir().unwrap();
    let body = create_body(&resolved, &context(directory.path(), directory.path())).unwrap();
    assert_eq!(body.cmd, ["sleep", "infinity"]);
    // Same container either way, then start the one envctl made.
    let envctl = ContainerGuard::unique("envctl-spec-keep-alive-envctl");
    let docker = ContainerGuard::unique("envctl-spec-keep-alive-docker");
    create_with_bollard(&body, envctl.name()).await;
    let line = create_with_docker_cli(&body, docker.name());
    assert_same_container(envctl.name(), docker.name(), &line);

    let client = Docker::connect_with_defaults().unwrap();
    client
        .start_container(envctl.name(), None::<StartContainerOptions>)
        .await
        .unwrap();
    // A window by the clock, which is the behaviour under test: a command that ends at
    // once (a shell without input) would have ended the container within it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let state = docker_stdout([
        "inspect",
        "--format",
        "{{.State.Status}} {{.State.Pid}}",
        envctl.name(),
    ]);
    assert!(state.starts_with("running "), "after 1.5 s: {state}");
    // `exec` and `shell` need it up: a command runs in it.
    assert_eq!(
        docker_stdout(["exec", envctl.name(), "echo", "alive"]),
        "alive"
    );

    let started = Instant::now();
    docker_stdout(["stop", envctl.name()]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "`docker stop` took {took:?}: SIGTERM did not reach `sleep`"
    );
    let state = docker_stdout([
        "inspect",
        "--format",
        "{{.State.Status}} {{.State.ExitCode}}",
        envctl.name(),
    ]);
    // 143 = killed by SIGTERM, forwarded by docker-init; 137 would be the SIGKILL fallback.
    assert_eq!(state, "exited 143");
}
