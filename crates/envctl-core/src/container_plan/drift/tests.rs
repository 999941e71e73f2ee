//! Unit tests of drift: what differs between a create body and a container as the
//! engine inspects it, how each difference is shown, and what a fresh container was not
//! given.

#[test]
fn a_container_runs_the_profiles_image_by_its_own_reference() {
    use super::runs_image;
    assert!(runs_image("busybox:1.36", "busybox:1.36"));
    assert!(runs_image("busybox:1.36", "docker.io/library/busybox:1.36"));
    assert!(runs_image(
        "busybox:1.36@sha256:1111111111111111111111111111111111111111111111111111111111111111",
        "busybox:1.36@sha256:2222222222222222222222222222222222222222222222222222222222222222"
    ));
    assert!(runs_image("x:1", "localhost/x:1"));
    assert!(!runs_image("busybox:1.36", "busybox:1.37"));
    assert!(!runs_image("pytorch/pytorch:2", "evil/pytorch:2"));
    assert!(!runs_image(
        "busybox:1.36",
        "sha256:2222222222222222222222222222222222222222222222222222222222222222"
    ));
}

use super::*;

/// [`super::changes`] as the lines `up` shows.
fn changes(body: &CreateBody, container: &Value) -> Vec<String> {
    super::changes(body, container)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Podman 4.3 reports capabilities without `CAP_` and the default device permissions
/// as empty: neither is a setting the engine dropped.
#[test]
fn podmans_spellings_of_capabilities_and_device_permissions_are_given() {
    let body = body(
        "image = \"busybox:1.36\"\ncap_add = [\"CAP_IPC_LOCK\", \"SYS_PTRACE\"]\ndevices = [\"/dev/fuse\"]\n",
    );
    let mut podman = inspected(&body);
    podman["HostConfig"]["CapAdd"] = serde_json::json!(["IPC_LOCK", "SYS_PTRACE"]);
    for device in podman["HostConfig"]["Devices"].as_array_mut().unwrap() {
        device["CgroupPermissions"] = Value::from("");
    }
    assert_eq!(
        not_given(&body, &podman, Stage::Created),
        Vec::<String>::new()
    );
    // A capability the engine really dropped is still said.
    podman["HostConfig"]["CapAdd"] = serde_json::json!(["IPC_LOCK"]);
    let said = not_given(&body, &podman, Stage::Created);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("cap_add:"), "{said:?}");
}

/// [`super::not_given`] as the lines `up` shows.
fn not_given(body: &CreateBody, container: &Value, stage: Stage) -> Vec<String> {
    super::not_given(body, container, stage)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Issue 31: drift in the units the profile is written in.
#[test]
fn sizes_and_cpus_are_shown_as_people_write_them() {
    let mut changes = Vec::new();
    compare(
        "Memory",
        &Value::from(201_326_592_u64),
        &Value::from(134_217_728_u64),
        &mut changes,
    );
    compare(
        "NanoCpus",
        &Value::from(1_500_000_000_u64),
        &Value::from(2_000_000_000_u64),
        &mut changes,
    );
    compare(
        "ShmSize",
        &Value::from(1_073_741_824_u64),
        &Value::Null,
        &mut changes,
    );
    // Within the rounding: the bytes.
    compare(
        "Memory",
        &Value::from(1_073_741_825_u64),
        &Value::from(1_073_741_824_u64),
        &mut changes,
    );
    let changes: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        changes,
        [
            "memory: 128 MiB → 192 MiB",
            "cpus: 2 CPUs → 1.5 CPUs",
            "shm_size: (unset) → 1.0 GiB",
            "memory: 1073741824 → 1073741825",
        ]
    );
}
use crate::container_plan::{Overrides, SpecContext, create_body};
use std::path::{Path, PathBuf};

fn body(text: &str) -> CreateBody {
    let resolved = crate::profile::resolve::resolve_text("p.toml", text).unwrap();
    let exists = |_: &Path| true;
    let context = SpecContext {
        working_directory: PathBuf::from("/work"),
        home: None,
        host_has_gpus: false,
        overrides: Overrides::default(),
        path_exists: &exists,
    };
    create_body(&resolved, &context).unwrap()
}

/// What the daemon would report for a container created from `body`, with the extra
/// fields and defaults a real inspect carries.
fn inspected(body: &CreateBody) -> Value {
    let mut value = serde_json::to_value(body).unwrap();
    let host = value["HostConfig"].as_object_mut().unwrap();
    host.insert("CpuShares".into(), Value::from(0));
    host.insert("Dns".into(), Value::Array(Vec::new()));
    host.entry("ShmSize").or_insert(Value::from(67108864));
    if let Some(Value::Array(mounts)) = host.get_mut("Mounts") {
        for mount in mounts {
            mount.as_object_mut().unwrap().insert(
                "BindOptions".into(),
                serde_json::json!({"Propagation": "rprivate"}),
            );
        }
    }
    let config = value.as_object_mut().unwrap();
    let mut env = config
        .get("Env")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    env.push(Value::from("PATH=/usr/bin"));
    config.insert("Env".into(), Value::Array(env));
    serde_json::json!({ "Config": value, "HostConfig": value["HostConfig"].clone() })
}

#[test]
fn the_same_profile_has_no_changes() {
    let created = body(
        "image = \"busybox\"\nmemory = \"1g\"\nmounts = [\"/data:/data:ro\"]\nports = [\"8888:8888\"]\nenv = { A = \"1\" }\n",
    );
    assert_eq!(
        changes(&created, &inspected(&created)),
        Vec::<String>::new()
    );
}

#[test]
fn the_recorded_file_is_applied_from_its_own_project() {
    assert_eq!(
        up_from_recorded_file("/home/me/my proj/envctl/train.toml", "train"),
        "cd '/home/me/my proj' && envctl up train"
    );
    assert_eq!(
        up_from_recorded_file("/srv/team/profiles/train.toml", "train"),
        "envctl up /srv/team/profiles/train.toml"
    );
}

/// Issue 40: every changed field is named, each in the words of the profile, never the
/// Engine API's JSON: only the ports, mounts and limits that differ.
#[test]
fn ports_mounts_limits_and_gpus_drift_in_words() {
    let created = body(
        "image = \"busybox\"\nports = [\"8888:8888\", \"6006:6006\"]\nmounts = [\"/data:/data\", \"cache:/cache\"]\ncommand = [\"sleep\", \"1 day\"]\n[ulimits]\nmemlock = -1\nstack = 67108864\n",
    );
    let wanted = body(
        "image = \"busybox\"\nports = [\"55888:8888\", \"6006:6006\"]\nmounts = [\"/data:/data:ro\", \"cache:/cache\"]\ngpus = 2\ncommand = [\"sleep\", \"2 days\"]\n[ulimits]\nmemlock = { soft = 65536, hard = 131072 }\nstack = 67108864\n",
    );
    let found = changes(&wanted, &inspected(&created));
    assert_eq!(
        found,
        [
            "command: sleep '1 day' → sleep '2 days'",
            // What a GPU request brings along: the PCI order and room in /dev/shm.
            "env: (unset) → CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "gpus: no GPUs → 2 GPUs",
            "mounts: /data:/data → /data:/data:ro",
            "ports: 127.0.0.1:8888:8888/tcp → 127.0.0.1:55888:8888/tcp",
            "shm_size: 64 MiB → 8.0 GiB",
            "ulimits: memlock=-1 → memlock=65536:131072",
        ],
        "{found:#?}"
    );
    for line in &found {
        assert!(!line.contains(['{', '[', '"']), "JSON in {line}");
    }
}

#[test]
fn network_devices_capabilities_and_hostname_drift_in_profile_words() {
    let cluster = "image = \"busybox\"\nnetwork = \"host\"\ndevices = [\"/dev/infiniband\"]\ncap_add = [\"IPC_LOCK\"]\nhostname = \"node-0\"\n";
    let created = body(cluster);
    assert_eq!(
        changes(&created, &inspected(&created)),
        Vec::<String>::new()
    );
    // Docker's inspect of a container made without them.
    let mut plain = inspected(&body("image = \"busybox\"\n"));
    plain["HostConfig"]["NetworkMode"] = Value::from("default");
    plain["Config"]["Hostname"] = Value::from("c0fa9052e6a3");
    assert_eq!(
        changes(&created, &plain),
        [
            "hostname: c0fa9052e6a3 → node-0",
            "cap_add: (none) → IPC_LOCK",
            "devices: (none) → /dev/infiniband",
            "network: default → host",
        ]
    );
    // The profile dropped them: the network and the capability are named; the
    // engine's default network and a generated hostname are not changes.
    let dropped = changes(&body("image = \"busybox\"\n"), &inspected(&created));
    assert_eq!(
        dropped,
        ["cap_add: IPC_LOCK → (none)", "network: host → (unset)"]
    );
    assert_eq!(
        changes(&body("image = \"busybox\"\n"), &plain),
        Vec::<String>::new()
    );
    // An engine that lists a CDI GPU's nodes among the devices: not the profile's.
    let mut podman = inspected(&created);
    podman["HostConfig"]["Devices"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"PathOnHost": "/dev/nvidia0", "PathInContainer": "/dev/nvidia0", "CgroupPermissions": "rwm"}));
    assert_eq!(changes(&created, &podman), Vec::<String>::new());
}

#[test]
fn changed_secrets_are_named_without_their_values() {
    let created = body("image = \"busybox\"\nenv = { API_TOKEN = \"old-secret\" }\n");
    let wanted =
        body("image = \"busybox\"\nenv = { API_TOKEN = \"new-secret\", DB_PASSWORD = \"pw\" }\n");
    assert_eq!(
        changes(&wanted, &inspected(&created)),
        [
            "env: API_TOKEN changed (a secret: values not shown)",
            "env: DB_PASSWORD set (a secret: values not shown)",
        ]
    );
}

#[test]
fn changed_settings_are_named_in_profile_words() {
    let created = body("image = \"busybox\"\nmemory = \"1g\"\nenv = { A = \"1\" }\ncpus = 1\n");
    let wanted = body("image = \"busybox:1.36\"\nmemory = \"2g\"\nenv = { A = \"2\" }\n");
    let found = changes(&wanted, &inspected(&created));
    assert_eq!(
        found,
        [
            "image: busybox → busybox:1.36",
            "env: A=1 → A=2",
            "memory: 1.0 GiB → 2.0 GiB",
            "cpus: 1 CPU → (unset)",
        ]
    );
}

#[test]
fn adding_a_command_names_the_command_and_init_not_command_twice() {
    let created = body("image = \"busybox\"\n");
    let wanted = body("image = \"busybox\"\ncommand = [\"python\", \"train.py\"]\n");
    let found = changes(&wanted, &inspected(&created));
    assert_eq!(
        found,
        [
            "command: sleep infinity → python train.py",
            "init (envctl runs `--init` when the profile has no `command`): on → off",
        ]
    );
}

#[test]
fn podman_spellings_are_no_changes() {
    // Issue 13, item 5: after changing only `memory`, only memory is named.
    let created = body("image = \"x:1\"\nmemory = \"1g\"\n[ulimits]\nnofile = 1024\n");
    let wanted = body("image = \"x:1\"\nmemory = \"2g\"\n[ulimits]\nnofile = 1024\n");
    let mut podman = inspected(&created);
    podman["Config"]["Image"] = Value::from("localhost/x:1");
    podman["HostConfig"]["Ulimits"][0]["Name"] = Value::from("RLIMIT_NOFILE");
    podman["HostConfig"]["Mounts"] = Value::Array(Vec::new());
    assert_eq!(changes(&wanted, &podman), ["memory: 1.0 GiB → 2.0 GiB"]);
    assert!(same_image(
        &Value::from("busybox"),
        &Value::from("docker.io/library/busybox")
    ));
    assert!(!same_image(
        &Value::from("x:1"),
        &Value::from("localhost/x:2")
    ));
    assert!(!same_image(
        &Value::from("quay.io/x:1"),
        &Value::from("localhost/x:1")
    ));
}

#[test]
fn an_unset_workdir_or_user_is_the_engines_default() {
    let created = body("image = \"x:1\"\nmemory = \"1g\"\n");
    let mut podman = inspected(&created);
    podman["Config"]["WorkingDir"] = Value::from("/");
    podman["Config"]["User"] = Value::from("0:0");
    assert_eq!(
        not_given(&created, &podman, Stage::Created),
        Vec::<String>::new()
    );
    let wanted = body("image = \"x:1\"\nmemory = \"2g\"\n");
    assert_eq!(changes(&wanted, &podman), ["memory: 1.0 GiB → 2.0 GiB"]);
}

#[test]
fn a_dropped_gpu_request_or_limit_is_not_given() {
    let wanted = body("image = \"x:1\"\ngpus = 2\nmemory = \"1g\"\nshm_size = \"1g\"\n");
    let mut dropped = inspected(&wanted);
    // Podman 4.3: no request, no devices; a memory limit it did not set.
    dropped["HostConfig"]["DeviceRequests"] = Value::Null;
    dropped["HostConfig"]["Memory"] = Value::from(0);
    let missing = not_given(&wanted, &dropped, Stage::Created);
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing[0].starts_with("gpus: no GPUs →"), "{missing:?}");
    assert!(missing[1].starts_with("memory: (unset)"), "{missing:?}");
    assert_eq!(
        not_given(&wanted, &inspected(&wanted), Stage::Created),
        Vec::<String>::new()
    );
}

#[test]
fn cdi_devices_in_the_container_are_the_cdi_request_given() {
    let mut wanted = body("image = \"x:1\"\ngpus = [\"0\"]\n");
    wanted.host_config.device_requests = crate::container_plan::gpus::render(
        &crate::container_plan::gpus::Gpus::Devices(vec!["0".into()]),
        &crate::facts::engine::GpuRequestForm::Cdi,
    )
    .unwrap();
    let mut podman = inspected(&wanted);
    podman["HostConfig"]["DeviceRequests"] = Value::Null;
    podman["HostConfig"]["Devices"] = serde_json::json!([{
        "PathOnHost": "/dev/nvidia0", "PathInContainer": "/dev/nvidia0", "CgroupPermissions": ""
    }]);
    assert_eq!(
        not_given(&wanted, &podman, Stage::Started),
        Vec::<String>::new()
    );
    // No devices: pending before start (Podman resolves CDI names at start), dropped after.
    podman["HostConfig"]["Devices"] = Value::Array(Vec::new());
    assert_eq!(
        not_given(&wanted, &podman, Stage::Created),
        Vec::<String>::new()
    );
    assert_eq!(not_given(&wanted, &podman, Stage::Started).len(), 1);
}

#[test]
fn podman_mounts_are_read_from_the_top_level_list() {
    let wanted = body("image = \"x:1\"\nmounts = [\"/data:/data:ro\", \"cache:/cache\"]\n");
    let mut podman = inspected(&wanted);
    podman["HostConfig"]["Mounts"] = Value::Null;
    podman["Mounts"] = serde_json::json!([
        {"Type": "volume", "Name": "cache", "Source": "/var/lib/containers/storage/volumes/cache/_data",
         "Destination": "/cache", "RW": true},
        {"Type": "bind", "Source": "/data", "Destination": "/data", "RW": false},
    ]);
    assert_eq!(
        not_given(&wanted, &podman, Stage::Created),
        Vec::<String>::new()
    );
    podman["Mounts"] = Value::Array(Vec::new());
    assert_eq!(not_given(&wanted, &podman, Stage::Created).len(), 1);
}
