//! [`super::not_as_claimed`] on inspects shaped as Docker 20.10 and Podman 4.3/5.4 report
//! them (copied from their answers for a container envctl made).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Claim, Mounts, not_as_claimed};
use crate::container_plan::{CreateBody, Overrides, SpecContext, create_body};

const PROFILE: &str = "image = \"envctl-test/busybox:1\"\nmounts = [\"/srv/bind:/data:ro\", \"cache:/volume\"]\nenv = { A = \"1\", API_TOKEN = \"s3cret\" }\n";

const MADE: Claim = Claim {
    settings: true,
    mounts: Mounts::Whole,
};

/// A claim of the profile alone (made with overrides), mounts judged by target.
const PROFILE_ONLY: Claim = Claim {
    settings: false,
    mounts: Mounts::Targets,
};

fn body(text: &str) -> CreateBody {
    let resolved = crate::profile::resolve::resolve_text("p.toml", text).unwrap();
    let exists = |_: &Path| true;
    let context = SpecContext {
        working_directory: PathBuf::from("/work"),
        home: None,
        host_has_gpus: true,
        overrides: Overrides::default(),
        path_exists: &exists,
    };
    create_body(&resolved, &context).unwrap()
}

/// Docker's inspect of envctl's container of [`PROFILE`].
fn docker() -> Value {
    json!({
        "Config": {"Image": "envctl-test/busybox:1", "Cmd": ["sleep", "infinity"], "Entrypoint": null,
                   "User": "", "WorkingDir": "", "Env": ["A=1", "API_TOKEN=s3cret", "PATH=/bin"]},
        "HostConfig": {"Binds": null, "CapAdd": null, "Privileged": false, "PidMode": "",
                       "IpcMode": "private", "NetworkMode": "default", "SecurityOpt": null,
                       "Devices": [], "Init": true, "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
                       "Mounts": [{"Type": "bind", "Source": "/srv/bind", "Target": "/data", "ReadOnly": true},
                                  {"Type": "volume", "Source": "cache", "Target": "/volume"}]},
        "Mounts": [{"Type": "bind", "Source": "/srv/bind", "Destination": "/data", "RW": false},
                   {"Type": "volume", "Name": "cache", "Source": "/var/lib/docker/volumes/cache/_data",
                    "Destination": "/volume", "RW": true}]
    })
}

/// Podman's: `localhost/` images, every mount a bind string, its own namespace words.
fn podman() -> Value {
    json!({
        "Config": {"Image": "localhost/envctl-test/busybox:1", "Cmd": ["sleep", "infinity"], "Entrypoint": [],
                   "User": "", "WorkingDir": "/", "Env": ["PATH=/bin", "container=podman", "A=1", "API_TOKEN=s3cret", "HOSTNAME=19cb8dea9dc8"]},
        "HostConfig": {"Binds": ["/srv/bind:/data:ro,rprivate,rbind", "cache:/volume:rw,rprivate,nosuid,nodev,rbind"],
                       "Mounts": null, "CapAdd": [], "CapDrop": [], "Privileged": false, "PidMode": "private",
                       "IpcMode": "shareable", "NetworkMode": "bridge", "SecurityOpt": [], "Devices": [],
                       "Init": true, "ShmSize": 65536000, "PortBindings": {},
                       "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0}},
        "Mounts": [{"Type": "volume", "Name": "cache", "Source": "/var/lib/containers/volumes/cache/_data",
                    "Destination": "/volume", "RW": true},
                   {"Type": "bind", "Source": "/srv/bind", "Destination": "/data", "RW": false}]
    })
}

fn found(body: &CreateBody, container: &Value, claim: Claim) -> Vec<String> {
    not_as_claimed(body, container, claim)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn envctls_own_container_differs_in_nothing_on_any_engine() {
    let made = body(PROFILE);
    for inspected in [docker(), podman()] {
        for claim in [
            MADE,
            PROFILE_ONLY,
            Claim {
                settings: false,
                mounts: Mounts::Unjudged,
            },
        ] {
            assert_eq!(found(&made, &inspected, claim), Vec::<String>::new());
        }
    }
    // An image's own VOLUME is an anonymous volume of every container made from it.
    let mut with_volume = docker();
    with_volume["Mounts"].as_array_mut().unwrap().push(json!({
        "Type": "volume", "Name": "a".repeat(64), "Destination": "/var/lib/image-volume", "RW": true
    }));
    assert_eq!(found(&made, &with_volume, MADE), Vec::<String>::new());
    // `docker update` of its limits, and ulimits Podman reports unasked: envctl's still.
    let limited = body(&format!("{PROFILE}[ulimits]\nnofile = 1024\n"));
    let mut updated = podman();
    updated["HostConfig"]["Memory"] = json!(1 << 30);
    updated["HostConfig"]["RestartPolicy"]["Name"] = json!("always");
    updated["HostConfig"]["Ulimits"] = json!([
        {"Name": "RLIMIT_NOFILE", "Soft": 1024, "Hard": 1024},
        {"Name": "RLIMIT_NPROC", "Soft": 4096, "Hard": 4096}
    ]);
    assert_eq!(found(&limited, &updated, MADE), Vec::<String>::new());
    updated["HostConfig"]["Ulimits"][0]["Soft"] = json!(4096);
    assert_eq!(
        found(&limited, &updated, MADE),
        ["ulimits: nofile=4096:1024 → nofile=1024"]
    );
}

#[test]
fn the_same_image_with_copied_labels_is_named_by_what_the_daemon_says() {
    let made = body(PROFILE);
    let mut root = podman();
    root["Mounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"Type": "bind", "Source": "/", "Destination": "/host", "RW": true}));
    for claim in [MADE, PROFILE_ONLY] {
        assert_eq!(
            found(&made, &root, claim),
            ["mounts: /:/host → (none)"],
            "{claim:?}"
        );
    }
    let mut privileged = docker();
    privileged["HostConfig"]["Privileged"] = json!(true);
    privileged["HostConfig"]["CapAdd"] = json!(["CAP_SYS_ADMIN"]);
    privileged["HostConfig"]["SecurityOpt"] = json!(["seccomp=unconfined", "label:disable"]);
    assert_eq!(
        found(&made, &privileged, PROFILE_ONLY),
        [
            "privileged: yes → no",
            "cap_add: SYS_ADMIN → (none)",
            "security_opt: seccomp=unconfined, label:disable → (none)"
        ]
    );
    let mut namespaces = docker();
    namespaces["HostConfig"]["PidMode"] = json!("host");
    namespaces["HostConfig"]["IpcMode"] = json!("host");
    namespaces["HostConfig"]["NetworkMode"] = json!("host");
    namespaces["HostConfig"]["Devices"] = json!([{"PathOnHost": "/dev/sda", "PathInContainer": "/dev/sda", "CgroupPermissions": "rwm"}]);
    namespaces["Config"]["Cmd"] = json!(["sh", "-c", "nc -l -p 9 -e sh"]);
    namespaces["Config"]["Image"] = json!("evil/busybox:1");
    assert_eq!(
        found(&made, &namespaces, PROFILE_ONLY),
        [
            "image: evil/busybox:1 → envctl-test/busybox:1",
            "command: sh -c 'nc -l -p 9 -e sh' → sleep infinity",
            "pid: host → (unset)",
            "ipc: host → (unset)",
            "network: host → (unset)",
            "devices: /dev/sda → (none)",
        ]
    );
}

#[test]
fn settings_and_sources_count_only_where_the_claim_vouches_for_them() {
    let made = body(PROFILE);
    let mut moved = docker();
    moved["Mounts"][0]["Source"] = json!("/etc");
    moved["Config"]["Env"] = json!(["A=2", "API_TOKEN=other", "PATH=/bin"]);
    assert_eq!(
        found(&made, &moved, MADE),
        [
            "mounts: /etc:/data:ro → /srv/bind:/data:ro",
            "env: A=2 → A=1",
            "env: API_TOKEN changed (a secret: values not shown)",
        ]
    );
    // Without the body's own folder (exec, ps) or its settings (made with overrides),
    // only what is judged there.
    assert_eq!(found(&made, &moved, PROFILE_ONLY), Vec::<String>::new());
    let mut read_write = docker();
    read_write["Mounts"][0]["RW"] = json!(true);
    assert_eq!(
        found(&made, &read_write, PROFILE_ONLY),
        ["mounts: /srv/bind:/data → (a folder):/data:ro"]
    );
    for line in found(&made, &moved, MADE) {
        assert!(
            !line.contains("s3cret") && !line.contains("other"),
            "{line}"
        );
    }
}

#[test]
fn a_gpu_requests_placement_and_nodes_are_no_difference() {
    let made = body("image = \"envctl-test/busybox:1\"\ngpus = 2\n");
    let mut placed = docker();
    placed["Config"]["Env"] = json!(["CUDA_DEVICE_ORDER=PCI_BUS_ID", "PATH=/bin"]);
    placed["Mounts"] = json!([]);
    placed["HostConfig"]["ShmSize"] = made.host_config.shm_size.into();
    placed["HostConfig"]["DeviceRequests"] = json!([{"Driver": "", "Count": 0,
        "DeviceIDs": ["GPU-1", "GPU-2"], "Capabilities": [["gpu"]]}]);
    assert_eq!(found(&made, &placed, MADE), Vec::<String>::new());
    // Podman: the CDI request's nodes among the devices.
    placed["HostConfig"]["DeviceRequests"] = Value::Null;
    placed["HostConfig"]["Devices"] = json!([{"PathOnHost": "/dev/nvidia0", "PathInContainer": "/dev/nvidia0"},
        {"PathOnHost": "/dev/nvidiactl", "PathInContainer": "/dev/nvidiactl"}]);
    assert_eq!(found(&made, &placed, MADE), Vec::<String>::new());
    // A profile without GPUs met by a container with them: its settings differ.
    let plain = body("image = \"envctl-test/busybox:1\"\n");
    let found_plain = found(&plain, &placed, MADE);
    assert!(
        found_plain
            .iter()
            .any(|line| line.starts_with("devices: /dev/nvidia0")),
        "{found_plain:?}"
    );
}

#[test]
fn a_network_of_the_users_own_may_be_reported_as_a_bridge() {
    let lab = body("image = \"envctl-test/busybox:1\"\nnetwork = \"lab\"\n");
    let mut podman = podman();
    podman["Mounts"] = json!([]);
    assert_eq!(found(&lab, &podman, PROFILE_ONLY), Vec::<String>::new());
    podman["HostConfig"]["NetworkMode"] = json!("host");
    assert_eq!(found(&lab, &podman, PROFILE_ONLY), ["network: host → lab"]);
    let host = body("image = \"envctl-test/busybox:1\"\nnetwork = \"host\"\n");
    assert_eq!(found(&host, &podman, PROFILE_ONLY), Vec::<String>::new());
    podman["HostConfig"]["NetworkMode"] = json!("bridge");
    assert_eq!(
        found(&host, &podman, PROFILE_ONLY),
        ["network: bridge → host"]
    );
}
