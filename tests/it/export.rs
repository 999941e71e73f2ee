//! `envctl export`: compose files that `docker-compose config` accepts (that `docker-compose
//! up` makes the container `envctl up` makes is tests/it/compose_runs.rs); Kubernetes manifests
//! read back as JSON values (their schemas are checked by `kubernetes-validate --strict` in
//! tests/it/validators.rs);
//! devcontainer.json; the `docker run` line; the `-o` file handling; and the notices for
//! what a target cannot express. Text output is pinned with insta snapshots
//! (`tests/it/snapshots/it__export__*.snap`), built through the library with a fixed working
//! directory (`/work/project`) so they are the same on every machine.
//!
//! Tests that need `docker-compose` (v1) or `docker compose` (v2) skip without it, unless
//! `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::support::docker::{run_with_timeout, skip_or_panic};
use envctl::container_plan::Overrides;
use envctl::export::{self, ExportInput, Exported, KubernetesOptions, VolumeMode, WorkloadKind};
use envctl::lock::LockFile;
use envctl::ops::environment::{
    EnvironmentRequest, LockPolicy, Placement, ResolvedEnvironment, resolve,
};
use envctl::profile::resolve::{ResolvedProfile, resolve_text};
use envctl::profile::{SearchPath, bundled};

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

/// Every YAML document of a multi-document file.
/// The `kind` of each document, in order.
fn kinds_of(documents: &[serde_norway::Value]) -> Vec<&str> {
    documents
        .iter()
        .map(|document| document["kind"].as_str().unwrap())
        .collect()
}

fn yaml_documents(text: &str) -> Vec<serde_norway::Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| serde_norway::Value::deserialize(document).unwrap())
        .collect()
}

fn yaml_to_json(value: &serde_norway::Value) -> Value {
    serde_json::to_value(value).unwrap()
}

/// `document` as JSON, after checking it is a `kind` object of the API group the cluster
/// serves it under. The shape against the API's schemas is `kubernetes-validate --strict`'s
/// to check (tests/it/validators.rs).
fn object(document: &serde_norway::Value, kind: &str) -> Value {
    let api_version = match kind {
        "Pod" | "Service" | "PersistentVolumeClaim" => "v1",
        "Job" => "batch/v1",
        "Deployment" => "apps/v1",
        other => panic!("not an object the export writes: {other}"),
    };
    let json = yaml_to_json(document);
    assert_eq!(
        (json["apiVersion"].as_str(), json["kind"].as_str()),
        (Some(api_version), Some(kind)),
        "{json:#}"
    );
    assert!(json["metadata"]["name"].is_string(), "{json:#}");
    json
}

/// The pod spec of any workload document.
fn pod_spec(document: &serde_norway::Value) -> Value {
    let kind = document["kind"].as_str().unwrap().to_string();
    let json = object(document, &kind);
    let spec = match kind.as_str() {
        "Job" | "Deployment" => &json["spec"]["template"]["spec"],
        _ => &json["spec"],
    };
    assert!(spec["containers"].is_array(), "{json:#}");
    spec.clone()
}

/// The item of `list` (a JSON array) whose `key` is `value`.
fn named<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no `{key}: {value}` in {list:#}"))
}

/// `docker-compose` (v1) or `docker compose` (v2), whichever answers.
fn compose_program() -> Option<Vec<String>> {
    let answers = |program: &str, arguments: &[&str]| {
        let mut command = Command::new(program);
        command.args(arguments);
        run_with_timeout(&mut command, Duration::from_secs(30))
            .is_ok_and(|output| output.status.success())
    };
    if answers("docker-compose", &["version"]) {
        Some(vec!["docker-compose".into()])
    } else if answers("docker", &["compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        None
    }
}

/// The compose program, or `None` after printing a skip (a panic with
/// `ENVCTL_REQUIRE_DOCKER=1`).
fn require_compose() -> Option<Vec<String>> {
    let program = compose_program();
    if program.is_none() {
        skip_or_panic(
            "no docker-compose",
            &crate::support::docker::current_test_name(),
            "neither `docker-compose` nor `docker compose` runs: `sudo apt-get install docker-compose`",
        );
    }
    program
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

/// What one envctl run did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
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

    fn envctl(&self, arguments: &[&str]) -> Run {
        let output = crate::support::cli::envctl_command()
            .args(arguments)
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HOME", self.path().join("home"))
            .env_remove("ENVCTL_PROFILE_PATH")
            .env_remove("ENVCTL_NVML_LIBRARY")
            .env_remove("CLICOLOR_FORCE")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl Run {
    fn expect(self, code: i32, what: &str) -> Run {
        assert_eq!(
            self.code, code,
            "{what}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

// ---------------------------------------------------------------------------------------
// compose
// ---------------------------------------------------------------------------------------

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

#[test]
fn compose_keeps_host_ips_relative_paths_gpus_and_dollars() {
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        Path::new(PROJECT),
        Some("deploy/compose.yml"),
        None,
        |input| export::compose(input).unwrap(),
    );
    let document = yaml_to_json(&yaml_documents(&exported.text)[0]);
    let service = &document["services"]["everything"];
    assert_eq!(
        service["ports"],
        serde_json::json!([
            "127.0.0.1:8888:8888/tcp",
            "0.0.0.0:2222:22/tcp",
            "[::1]:9000-9001:9000-9001/udp",
            "127.0.0.1::6006/tcp"
        ])
    );
    let sources: Vec<&str> = service["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["source"].as_str().unwrap())
        .collect();
    // Relative to deploy/, where compose reads them from.
    assert_eq!(
        sources,
        [
            "..",
            "../data",
            "../../shared",
            "~/cache",
            "/srv/models",
            "datasets"
        ]
    );
    assert_eq!(document["volumes"]["datasets"]["name"], "datasets");
    let devices = &service["deploy"]["resources"]["reservations"]["devices"][0];
    assert_eq!(devices["device_ids"], serde_json::json!(["0", "1"]));
    // Compose v2 refuses `count` next to `device_ids` (issue 14, item 1).
    assert!(devices.get("count").is_none(), "{devices}");
    assert_eq!(devices["capabilities"], serde_json::json!(["gpu"]));
    assert_eq!(service["environment"]["FLAG"], "on");
    assert_eq!(service["environment"]["PRICE"], "$$5 $$(X)");
    assert_eq!(service["environment"]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
    assert_eq!(service["command"][3], "$$HOME/runs");
    assert_eq!(service["cpus"], 1.5);
    assert_eq!(service["mem_limit"], "16g");
    assert_eq!(service["shm_size"], "2g");
    assert_eq!(service["ulimits"]["nofile"]["hard"], 2048);
    assert_eq!(service["labels"]["envctl.profile"], "everything");
    // `up`'s network and restart policy; binds through the Mount API (no missing source
    // made), named volumes without it.
    assert_eq!(service["network_mode"], "bridge");
    assert_eq!(service["restart"], "no");
    for volume in service["volumes"].as_array().unwrap() {
        match volume["type"].as_str().unwrap() {
            "bind" => assert_eq!(volume["bind"]["propagation"], "rprivate", "{volume}"),
            _ => assert!(volume.get("bind").is_none(), "{volume}"),
        }
    }
    // Compose (v1 and v2) expresses all of it: no notice (tests/it/compose_runs.rs starts a
    // GPU list on both).
    assert!(exported.notices.is_empty(), "{:?}", exported.notices);
    insta::assert_snapshot!("compose_everything", shown(&exported));
}

#[test]
fn compose_count_and_all_gpus_are_explicit() {
    for (gpus, count) in [
        ("2", serde_json::json!(2)),
        ("\"all\"", serde_json::json!("all")),
    ] {
        let resolved = profile(&format!("image = \"busybox\"\ngpus = {gpus}\n"));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::compose(input).unwrap()
        });
        let document = yaml_to_json(&yaml_documents(&exported.text)[0]);
        let devices = &document["services"]["export-test"]["deploy"]["resources"]["reservations"]["devices"]
            [0];
        assert_eq!(devices["count"], count, "{gpus}");
        assert!(devices.get("device_ids").is_none());
        // The GPU defaults of `up`: 8 GiB of /dev/shm and the PCI bus order.
        assert_eq!(document["services"]["export-test"]["shm_size"], "8g");
    }
    let optional = profile("image = \"busybox\"\ngpus = \"optional\"\n");
    let exported = with_input(&optional, Path::new(PROJECT), None, None, |input| {
        export::compose(input).unwrap()
    });
    assert!(exported.text.contains("count: all"));
    assert_eq!(exported.notices.len(), 1);
    assert!(exported.notices[0].message.contains("GPU if available"));
}

/// `docker-compose config` (the compose CLI's own validation) accepts the export of every
/// bundled profile, and reads back the GPU reservation, shm and mounts.
#[test]
fn compose_config_accepts_every_bundled_profile() {
    let Some(program) = require_compose() else {
        return;
    };
    let project = Project::new();
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        let file = format!("{name}/compose.yml");
        let exported = with_input(&resolved, project.path(), Some(&file), None, |input| {
            export::compose(input).unwrap()
        });
        project.write(&file, &exported.text);
        let config = compose(&program, project.path(), &["-f", &file, "config"]);
        let document = yaml_to_json(&yaml_documents(&config)[0]);
        let service = &document["services"][name];
        assert_eq!(service["shm_size"], "8g", "{name}: {config}");
        let device = &service["deploy"]["resources"]["reservations"]["devices"][0];
        assert_eq!(device["count"], "all", "{name}: {config}");
        assert_eq!(device["capabilities"], serde_json::json!(["gpu"]), "{name}");
        // `./` of the profile is the project folder, seen from `<name>/compose.yml`.
        let volume = &service["volumes"][0];
        assert_eq!(
            volume["source"].as_str().unwrap(),
            project.path().to_str().unwrap(),
            "{name}: {config}"
        );
    }
}

/// compose's YAML 1.1 parser reads what the export meant: `on` stays a string, `$$` is a
/// literal `$`, and relative paths land where `up` puts them.
#[test]
fn compose_config_reads_the_everything_profile_as_meant() {
    let Some(program) = require_compose() else {
        return;
    };
    let project = Project::new();
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        project.path(),
        Some("deploy/compose.yml"),
        None,
        |input| export::compose(input).unwrap(),
    );
    project.write("deploy/compose.yml", &exported.text);
    let config = compose(
        &program,
        project.path(),
        &["-f", "deploy/compose.yml", "config"],
    );
    let document = yaml_to_json(&yaml_documents(&config)[0]);
    let service = &document["services"]["everything"];
    let environment = &service["environment"];
    assert_eq!(environment["FLAG"], "on", "{config}");
    assert_eq!(environment["TIME"], "12:30", "{config}");
    let sources: Vec<String> = service["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["source"].as_str().unwrap().to_string())
        .collect();
    let root = project.path().to_str().unwrap();
    assert!(sources.contains(&format!("{root}/data")), "{config}");
    assert!(sources.contains(&root.to_string()), "{config}");
}

// `docker compose up` of the export against `envctl up`, field by field: tests/it/compose_runs.rs.

// ---------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------

#[test]
fn kubernetes_bundled_profiles_carry_gpu_shm_and_mounts() {
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        for kind in [
            WorkloadKind::Job,
            WorkloadKind::Pod,
            WorkloadKind::Deployment,
        ] {
            let options = KubernetesOptions {
                kind,
                ..KubernetesOptions::default()
            };
            let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
                export::kubernetes(input, options.clone()).unwrap()
            });
            let documents = yaml_documents(&exported.text);
            assert_eq!(documents.len(), 1, "{name} {kind:?}");
            let spec = pod_spec(&documents[0]);
            let container = &spec["containers"][0];
            let limits = &container["resources"]["limits"];
            assert_eq!(limits["nvidia.com/gpu"], "1", "{name}");
            let volumes = &spec["volumes"];
            let empty_dir = &named(volumes, "name", "shm")["emptyDir"];
            assert_eq!(empty_dir["medium"], "Memory");
            assert_eq!(empty_dir["sizeLimit"], "8Gi");
            named(&container["volumeMounts"], "mountPath", "/dev/shm");
            let workspace = named(volumes, "name", "workspace");
            assert_eq!(workspace["hostPath"]["path"], PROJECT);
            assert_eq!(container["args"], serde_json::json!(["sleep", "infinity"]));
            named(&container["env"], "name", "CUDA_DEVICE_ORDER");
            assert!(
                exported
                    .notices
                    .iter()
                    .any(|notice| notice.setting == "ulimits"),
                "{name}: ulimits must be reported"
            );
            if kind == WorkloadKind::Job {
                insta::assert_snapshot!(format!("k8s_{name}"), shown(&exported));
            }
        }
    }
}

#[test]
fn kubernetes_resources_ids_service_claims_and_lock() {
    let resolved = profile(EVERYTHING);
    let lock = format!(
        "version = 1\n\n[[image]]\nprofile = \"everything\"\nimage = \"registry.example.com:5000/team/train:1.0\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
    );
    let options = KubernetesOptions {
        kind: WorkloadKind::Deployment,
        volumes: VolumeMode::Pvc,
        service: true,
        ..KubernetesOptions::default()
    };
    let exported = with_input(&resolved, Path::new(PROJECT), None, Some(&lock), |input| {
        export::kubernetes(input, options.clone()).unwrap()
    });
    let documents = yaml_documents(&exported.text);
    let kinds = kinds_of(&documents);
    assert_eq!(
        kinds,
        [
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "Deployment",
            "Service"
        ]
    );
    for claim in &documents[..6] {
        object(claim, "PersistentVolumeClaim");
    }
    let service = object(&documents[7], "Service");
    let ports: Vec<(i64, &str)> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|port| {
            (
                port["port"].as_i64().unwrap(),
                port["protocol"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            (8888, "TCP"),
            (2222, "TCP"),
            (9000, "UDP"),
            (9001, "UDP"),
            (6006, "TCP")
        ]
    );
    let spec = pod_spec(&documents[6]);
    let container = &spec["containers"][0];
    assert_eq!(
        container["image"],
        format!("registry.example.com:5000/team/train:1.0@{DIGEST}")
    );
    let limits = &container["resources"]["limits"];
    let requests = &container["resources"]["requests"];
    assert_eq!(limits["nvidia.com/gpu"], "2");
    assert_eq!(limits["memory"], "16Gi");
    assert_eq!(requests["memory"], "16Gi");
    assert_eq!(limits["cpu"], "1500m");
    assert_eq!(requests["cpu"], "1500m");
    assert!(requests.get("nvidia.com/gpu").is_none(), "{requests}");
    let security = &container["securityContext"];
    assert_eq!(
        (&security["runAsUser"], &security["runAsGroup"]),
        (&serde_json::json!(1000), &serde_json::json!(1000))
    );
    assert_eq!(spec["restartPolicy"], "Always");
    // `$(X)` would be expanded by the kubelet; `$$(` keeps it.
    let price = named(&container["env"], "name", "PRICE");
    assert_eq!(price["value"], "$5 $$(X)");
    let settings: Vec<&str> = exported
        .notices
        .iter()
        .map(|notice| notice.setting.as_str())
        .collect();
    for expected in ["gpus", "mounts", "ports", "ipc", "ulimits", "restart"] {
        assert!(
            settings.contains(&expected),
            "no `{expected}` notice: {settings:?}"
        );
    }
    let gpus = exported
        .notices
        .iter()
        .find(|notice| notice.setting == "gpus")
        .unwrap();
    assert!(gpus.message.contains("by id (0, 1)"), "{}", gpus.message);
    insta::assert_snapshot!("k8s_everything_deployment_pvc_service", shown(&exported));
}

#[test]
fn kubernetes_stale_lock_keeps_the_tag_and_says_so() {
    let resolved = profile("image = \"busybox:1.37\"\n");
    let lock = format!(
        "version = 1\n[[image]]\nprofile = \"export-test\"\nimage = \"busybox:1.36\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
    );
    let exported = with_input(&resolved, Path::new(PROJECT), None, Some(&lock), |input| {
        export::kubernetes(input, KubernetesOptions::default()).unwrap()
    });
    let spec = pod_spec(&yaml_documents(&exported.text)[0]);
    assert_eq!(spec["containers"][0]["image"], "busybox:1.37");
    // The command adds this reason to the export's notices (`setting` "image").
    let notice = environment(&resolved, Path::new(PROJECT), Some(&lock))
        .lock_notice
        .unwrap();
    assert!(notice.contains("busybox:1.36"), "{notice}");
}

/// A 59-character profile name, so `envctl-NAME-data-train` and `envctl-NAME-data-valid`
/// share their first 63 characters, and named volumes that read the same as Kubernetes
/// names (`my_cache`, `my.cache`), one of them mounted twice.
fn lookalike_mounts_profile() -> String {
    format!(
        "name = \"{}\"\nimage = \"busybox:1.37\"\nmounts = [\"/data/train:/data/train\", \"/data/valid:/data/valid:ro\", \"my_cache:/cache/a\", \"my.cache:/cache/b\", \"my_cache:/cache/c\"]\n",
        LONG_PROFILE_NAME
    )
}

const LONG_PROFILE_NAME: &str = "a-profile-name-of-fifty-nine-characters-for-long-pvc-names9";

/// Whether `name` is a DNS-1123 label, as Kubernetes demands of object and volume names.
fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[test]
fn kubernetes_claims_are_one_per_mount_for_long_names_and_lookalike_volumes() {
    assert_eq!(LONG_PROFILE_NAME.len(), 59);
    let resolved = profile(&lookalike_mounts_profile());
    let options = KubernetesOptions {
        volumes: VolumeMode::Pvc,
        ..KubernetesOptions::default()
    };
    let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
        export::kubernetes(input, options.clone()).unwrap()
    });
    let documents = yaml_documents(&exported.text);
    let kinds = kinds_of(&documents);
    // One claim per bind mount and per named volume: `my_cache` is mounted twice.
    assert_eq!(
        kinds,
        [
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "Job"
        ]
    );
    let claims: Vec<String> = documents[..4]
        .iter()
        .map(|document| {
            object(document, "PersistentVolumeClaim")["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let distinct: std::collections::BTreeSet<&String> = claims.iter().collect();
    assert_eq!(distinct.len(), claims.len(), "duplicate claims: {claims:?}");
    for claim in &claims {
        assert!(is_dns_label(claim), "not a DNS-1123 label: {claim}");
    }

    let spec = pod_spec(&documents[4]);
    let job = object(&documents[4], "Job");
    let job_name = job["metadata"]["name"].as_str().unwrap().to_string();
    assert!(is_dns_label(&job_name), "{job_name}");
    let volumes = spec["volumes"].as_array().unwrap();
    let volume_names: std::collections::BTreeSet<&str> = volumes
        .iter()
        .map(|volume| volume["name"].as_str().unwrap())
        .collect();
    assert_eq!(volume_names.len(), volumes.len(), "{volume_names:?}");
    // mount path → the claim its volume names.
    let claim_of = |path: &str| -> String {
        let mount = named(&spec["containers"][0]["volumeMounts"], "mountPath", path);
        let volume = named(&spec["volumes"], "name", mount["name"].as_str().unwrap());
        let claim = volume["persistentVolumeClaim"]["claimName"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(claims.contains(&claim), "{claim} is not among {claims:?}");
        claim
    };
    let train = claim_of("/data/train");
    let valid = claim_of("/data/valid");
    let underscore = claim_of("/cache/a");
    let dot = claim_of("/cache/b");
    assert_ne!(train, valid, "two bind mounts share a claim");
    assert_ne!(underscore, dot, "`my_cache` and `my.cache` share a claim");
    assert_eq!(
        claim_of("/cache/c"),
        underscore,
        "one named volume, one claim"
    );
    assert_eq!(underscore, "my-cache");

    // Every renamed claim is reported, with the mount it belongs to.
    let notice = |setting: &str| {
        exported
            .notices
            .iter()
            .find(|notice| notice.setting == setting)
            .unwrap_or_else(|| panic!("no `{setting}` notice: {:#?}", exported.notices))
            .message
            .clone()
    };
    for (setting, claim) in [
        ("mounts./data/train", &train),
        ("mounts./data/valid", &valid),
    ] {
        let message = notice(setting);
        assert!(message.contains(&format!("named `{claim}`")), "{message}");
        assert!(
            message.contains("longer than the 63 characters"),
            "{message}"
        );
    }
    let message = notice("mounts./cache/b");
    assert!(
        message.contains("`my-cache` is the name of the named volume `my_cache`"),
        "{message}"
    );
    assert!(notice("name").contains(&format!("named `{job_name}`")));
    assert!(
        !exported.notices.iter().any(
            |notice| notice.setting == "mounts./cache/a" || notice.setting == "mounts./cache/c"
        ),
        "{:#?}",
        exported.notices
    );
    insta::assert_snapshot!("k8s_long_name_lookalike_volumes_pvc", shown(&exported));

    // The binary reports the renames as warnings.
    let project = Project::new();
    project.write(
        &format!("envctl/{LONG_PROFILE_NAME}.toml"),
        &lookalike_mounts_profile(),
    );
    let run = project
        .envctl(&[
            "export",
            LONG_PROFILE_NAME,
            "--to",
            "k8s",
            "--volumes",
            "pvc",
        ])
        .expect(0, "export with long and lookalike names");
    assert!(
        run.stdout.contains(&format!("claimName: {train}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("claimName: {valid}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("k8s: `mounts./cache/b`: the PersistentVolumeClaim for the named volume `my.cache` is named"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------
// devcontainer
// ---------------------------------------------------------------------------------------

#[test]
fn devcontainer_bundled_profiles() {
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        let exported = with_input(
            &resolved,
            Path::new(PROJECT),
            Some(".devcontainer/devcontainer.json"),
            None,
            |input| export::devcontainer(input).unwrap(),
        );
        let document: Value = serde_json::from_str(&exported.text).unwrap();
        assert_eq!(document["hostRequirements"]["gpu"], true, "{name}");
        assert_eq!(
            document["workspaceMount"],
            "type=bind,source=${localWorkspaceFolder},target=/workspace"
        );
        assert_eq!(document["workspaceFolder"], "/workspace");
        assert_eq!(document["containerEnv"]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
        assert_eq!(document["init"], true);
        let run_args: Vec<&str> = document["runArgs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|argument| argument.as_str().unwrap())
            .collect();
        assert!(run_args.windows(2).any(|pair| pair == ["--shm-size", "8g"]));
        assert!(run_args.windows(2).any(|pair| pair == ["--ipc", "private"]));
        assert!(
            !run_args.contains(&"--gpus"),
            "hostRequirements.gpu already adds --gpus all"
        );
        assert!(
            exported
                .notices
                .iter()
                .any(|notice| notice.setting == "ulimits")
        );
        insta::assert_snapshot!(format!("devcontainer_{name}"), shown(&exported));
    }
}

#[test]
fn devcontainer_ports_mounts_gpu_ids_and_command() {
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        Path::new(PROJECT),
        Some(".devcontainer/devcontainer.json"),
        None,
        |input| export::devcontainer(input).unwrap(),
    );
    let document: Value = serde_json::from_str(&exported.text).unwrap();
    assert!(document.get("hostRequirements").is_none());
    assert_eq!(
        document["appPort"],
        serde_json::json!([
            "127.0.0.1:8888:8888/tcp",
            "0.0.0.0:2222:22/tcp",
            "[::1]:9000-9001:9000-9001/udp",
            "127.0.0.1::6006/tcp"
        ])
    );
    // Issue 14, item 5: `forwardPorts` would forward the same ports again and collide
    // with the host ports `appPort` holds.
    assert!(document.get("forwardPorts").is_none(), "{document}");
    assert_eq!(
        document["mounts"],
        serde_json::json!([
            "type=bind,source=${localWorkspaceFolder}/data,target=/data,readonly",
            "type=bind,source=${localWorkspaceFolder}/../shared,target=/shared",
            "type=bind,source=${localEnv:HOME}/cache,target=/cache",
            "type=bind,source=/srv/models,target=/models,readonly",
            "type=volume,source=datasets,target=/datasets"
        ])
    );
    assert_eq!(document["containerUser"], "1000:1000");
    let run_args: Vec<&str> = document["runArgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| argument.as_str().unwrap())
        .collect();
    assert!(
        run_args
            .windows(2)
            .any(|pair| pair == ["--gpus", "\"device=0,1\""])
    );
    assert!(run_args.windows(2).any(|pair| pair == ["--cpus", "1.5"]));
    assert!(run_args.windows(2).any(|pair| pair == ["--memory", "16g"]));
    let settings: Vec<&str> = exported
        .notices
        .iter()
        .map(|notice| notice.setting.as_str())
        .collect();
    for expected in ["gpus", "ulimits", "command"] {
        assert!(
            settings.contains(&expected),
            "no `{expected}` notice: {settings:?}"
        );
    }
    let optional = profile("image = \"busybox\"\ngpus = \"optional\"\n");
    let exported = with_input(&optional, Path::new(PROJECT), None, None, |input| {
        export::devcontainer(input).unwrap()
    });
    let document: Value = serde_json::from_str(&exported.text).unwrap();
    assert_eq!(document["hostRequirements"]["gpu"], "optional");
}

// ---------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------

#[test]
fn docker_run_export_is_up_dry_run() {
    let project = Project::new();
    project.folder("data");
    project.write(
        "envctl/runner.toml",
        "image = \"busybox\"\nmemory = \"1g\"\nports = [\"8888:8888\"]\nmounts = [\"./data:/data\"]\n",
    );
    let exported = project
        .envctl(&["export", "runner", "--to", "docker-run"])
        .expect(0, "export --to docker-run");
    let dry_run = project
        .envctl(&["up", "runner", "--dry-run"])
        .expect(0, "up --dry-run");
    assert_eq!(exported.stdout, dry_run.stdout);
    assert!(
        exported
            .stdout
            .starts_with("docker run -d --name envctl-runner ")
    );
    // Like `up`, it refuses a bind source that is not there.
    std::fs::remove_dir(project.path().join("data")).unwrap();
    let missing = project.envctl(&["export", "runner", "--to", "docker-run"]);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("does not exist"),
        "{}",
        missing.stderr
    );
}

#[test]
fn output_file_is_written_whole_and_kept_unless_forced() {
    let project = Project::new();
    let run = project
        .envctl(&[
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "-o",
            "deploy/job.yaml",
        ])
        .expect(0, "first export");
    assert!(
        run.stdout.is_empty(),
        "the file, not stdout: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("warning: k8s: `ulimits`"),
        "{}",
        run.stderr
    );
    let written = std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap();
    assert_eq!(yaml_documents(&written).len(), 1);

    std::fs::write(project.path().join("deploy/job.yaml"), "mine\n").unwrap();
    let refused = project.envctl(&[
        "export",
        "pytorch-2.8",
        "--to",
        "k8s",
        "-o",
        "deploy/job.yaml",
    ]);
    // Like `profiles new` onto an existing file: the request cannot be met (1), not misuse.
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap(),
        "mine\n"
    );
    project
        .envctl(&[
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "-o",
            "deploy/job.yaml",
            "--force",
        ])
        .expect(0, "--force");
    assert_eq!(
        std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap(),
        written
    );
    let leftovers: Vec<String> = std::fs::read_dir(project.path().join("deploy"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "job.yaml")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn stdout_json_and_flags() {
    let project = Project::new();
    let run = project
        .envctl(&["export", "pytorch-2.8", "--to", "devcontainer"])
        .expect(0, "export to stdout");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["name"], "pytorch-2.8");

    let json = project
        .envctl(&[
            "--json",
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "--kind",
            "Pod",
        ])
        .expect(0, "--json export");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["target"], "k8s");
    assert!(report["output"].is_null());
    assert!(report["content"].as_str().unwrap().contains("kind: Pod"));
    assert!(
        report["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|notice| notice["setting"] == "ulimits")
    );

    let wrong = project.envctl(&["export", "pytorch-2.8", "--to", "compose", "--service"]);
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
    assert!(wrong.stderr.contains("--to k8s"), "{}", wrong.stderr);

    // envctl.lock in the working directory pins the Kubernetes image.
    let image = bundled_profile("pytorch-2.8").profile.image.to_string();
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"{image}\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    let pinned = project
        .envctl(&["export", "pytorch-2.8", "--to", "k8s"])
        .expect(0, "export with a lock");
    assert!(
        pinned
            .stdout
            .contains(&format!("image: \"{image}@{DIGEST}\""))
            || pinned.stdout.contains(&format!("image: {image}@{DIGEST}")),
        "{}",
        pinned.stdout
    );
    // Every target runs what `up` runs: the same pin, and `up --dry-run` names it too.
    let reference = format!("{image}@{DIGEST}");
    for target in ["compose", "devcontainer", "docker-run"] {
        let run = project
            .envctl(&["export", "pytorch-2.8", "--to", target])
            .expect(0, "export with a lock");
        assert!(run.stdout.contains(&reference), "{target}: {}", run.stdout);
    }
    let dry_run = project
        // `--force`: this host has no NVIDIA runtime, and a dry run judges what `up` would.
        .envctl(&["up", "pytorch-2.8", "--dry-run", "--force"])
        .expect(0, "dry run with a lock");
    assert!(dry_run.stdout.contains(&reference), "{}", dry_run.stdout);

    // A lock that pins another image keeps the tag and says so, for every file target.
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"busybox:1.0\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    for target in ["compose", "devcontainer", "k8s"] {
        let run = project
            .envctl(&["export", "pytorch-2.8", "--to", target])
            .expect(0, "export with a stale lock");
        assert!(!run.stdout.contains(DIGEST), "{target}: {}", run.stdout);
        assert!(
            run.stderr.contains("envctl.lock pins `busybox:1.0`"),
            "{target}: {}",
            run.stderr
        );
    }
    // A digest `up` would refuse is refused by doctor too, not reported as "locked".
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"{image}\"\ndigest = \"latest\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    let refused = project.envctl(&["up", "pytorch-2.8", "--dry-run"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("not a `sha256:` digest"),
        "{}",
        refused.stderr
    );
    let doctor = project.envctl(&["--json", "doctor", "pytorch-2.8"]);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let findings = report["profiles"][0]["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|finding| finding["id"] == "profile.lock" && finding["status"] == "fail"),
        "{findings:?}"
    );
}

#[test]
fn export_output_is_a_regular_file_or_stdout() {
    let project = Project::new();
    // As root this once replaced /dev/null (and /dev/stdout's target) with a regular file.
    for device in ["/dev/null", "/dev/stdout"] {
        let run = project.envctl(&[
            "export",
            "cuda-12.8-base",
            "--to",
            "compose",
            "-o",
            device,
            "--force",
        ]);
        assert_eq!(run.code, 1, "{device}: {}", run.stderr);
        assert!(
            run.stderr.contains("not a regular file"),
            "{device}: {}",
            run.stderr
        );
    }
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &std::fs::metadata("/dev/null").unwrap().file_type()
    ));
    let stdout = project
        .envctl(&["export", "cuda-12.8-base", "--to", "compose", "-o", "-"])
        .expect(0, "export to stdout");
    assert!(stdout.stdout.contains("services:"), "{}", stdout.stdout);
    // A symlink planted where the file goes is not followed or replaced either.
    project.write("elsewhere.yaml", "keep\n");
    std::os::unix::fs::symlink(
        project.path().join("elsewhere.yaml"),
        project.path().join("compose.yaml"),
    )
    .unwrap();
    let linked = project.envctl(&[
        "export",
        "cuda-12.8-base",
        "--to",
        "compose",
        "-o",
        "compose.yaml",
        "--force",
    ]);
    assert_eq!(linked.code, 1, "{}", linked.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("elsewhere.yaml")).unwrap(),
        "keep\n"
    );
}

#[test]
fn a_missing_bind_source_is_a_warning_for_file_exports() {
    let project = Project::new();
    project.write(
        "envctl/absent.toml",
        "image = \"busybox\"\nmounts = [\"./nowhere:/data\"]\n",
    );
    let run = project
        .envctl(&["export", "absent", "--to", "compose"])
        .expect(0, "export with a missing source");
    assert!(run.stderr.contains("does not exist here"), "{}", run.stderr);
    assert!(
        run.stdout.contains("source: \"./nowhere\""),
        "{}",
        run.stdout
    );
}

/// Issue 14, item 4: a memory `emptyDir` counts against the container's memory limit, so
/// `/dev/shm` is never sized above it (48 exports had `sizeLimit: 8Gi` over 4Gi or 1Gi),
/// and a notice says so; under the limit it is kept as the profile asks.
#[test]
fn kubernetes_shm_stays_within_the_memory_limit() {
    for (memory, shm, expected, notice) in [
        ("4g", "8g", "4Gi", true),
        ("1g", "8g", "1Gi", true),
        ("16g", "8g", "8Gi", false),
    ] {
        let resolved = profile(&format!(
            "image = \"busybox:1.37\"\nmemory = \"{memory}\"\nshm_size = \"{shm}\"\n"
        ));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::kubernetes(input, KubernetesOptions::default()).unwrap()
        });
        let spec = pod_spec(&yaml_documents(&exported.text)[0]);
        let size = &named(&spec["volumes"], "name", "shm")["emptyDir"]["sizeLimit"];
        assert_eq!(size, expected, "memory {memory}, shm {shm}");
        let said = exported
            .notices
            .iter()
            .any(|each| each.setting == "shm_size" && each.message.contains("counts against"));
        assert_eq!(said, notice, "memory {memory}: {:?}", exported.notices);
    }
}

/// Issue 14, item 5: `kubectl port-forward` carries TCP only: the notice never offers it
/// for UDP or SCTP ports, and says how those are reached.
#[test]
fn kubernetes_port_forward_is_offered_for_tcp_only() {
    let notice_for = |ports: &str| {
        let resolved = profile(&format!("image = \"busybox:1.37\"\nports = [{ports}]\n"));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::kubernetes(input, KubernetesOptions::default()).unwrap()
        });
        exported
            .notices
            .iter()
            .find(|notice| notice.setting == "ports")
            .map(|notice| notice.message.clone())
            .unwrap_or_else(|| panic!("no ports notice: {:?}", exported.notices))
    };
    let udp = notice_for("\"9000:9000/udp\"");
    assert!(
        !udp.contains("reach them with `kubectl port-forward"),
        "{udp}"
    );
    assert!(udp.contains("carries TCP only, so 9000/udp"), "{udp}");
    let mixed = notice_for("\"8888:8888\", \"9000:9000/udp\"");
    assert!(mixed.contains("kubectl port-forward"), "{mixed}");
    assert!(mixed.contains("9000/udp"), "{mixed}");
    let tcp = notice_for("\"8888:8888\"");
    assert!(!tcp.contains("TCP only"), "{tcp}");
}
