//! The cluster exports (issue 29, items 3, 4 and 6) checked by what reads them:
//!
//! - the sbatch scripts of `--to slurm|pyxis|apptainer` pass `bash -n` and `shellcheck`,
//!   and their rendezvous really runs: each script is run by bash with Slurm's variables
//!   of a two-node job and stand-ins for `scontrol`, `srun` (runs its command once per
//!   node, `SLURM_NODEID` 0 and 1), `envctl`, `apptainer` and the container's command on
//!   `PATH`, which record the words and variables they get; hostile profile values
//!   (quotes, `$(…)`, backticks, newlines) must arrive as the same words;
//! - Kubernetes manifests with the GPU toleration, `--runtime-class`, `--mig-profile` and
//!   the host-access keys pass `kubernetes-validate --strict`; `--nodes N` writes a
//!   PyTorchJob that passes the training operator's pinned CRD schema
//!   (`tests/fixtures/kubeflow/`, strict), whose pod templates pass `kubernetes-validate
//!   --strict` as PodTemplates;
//! - compose files and devcontainer.json with `network`, `devices`, `cap_add` and
//!   `hostname` pass both Compose versions and the pinned devcontainer schema;
//! - on the real Slurm cluster of `.ci/slurm.sh` (`ENVCTL_TEST_SLURM_CONF`), `sbatch`
//!   accepts a two-node `--to slurm` script and runs one ranked task per node.
//!
//! A missing tool skips loudly, and fails under `ENVCTL_REQUIRE_DOCKER=1` (`.ci/run`
//! installs shellcheck and the validators).
//!
//! This folder holds the shared profile, project and export helpers; the tests sit in files
//! by theme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::cli::envctl_in;
use crate::support::docker::{current_test_name, run_with_timeout, skip_or_panic};

mod batch_scripts;
mod slurm_cluster;
mod validators;

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Words no shell may read as code: quotes, substitutions, globs, a newline, a backslash.
const HOSTILE: [&str; 6] = [
    "it's",
    "$(touch /tmp/envctl-pwned)",
    "`id`",
    "a\nb",
    "*; rm -rf ~ \\",
    "\"quoted\" $HOME ${X}",
];

/// A multi-node profile with every key the cluster targets read, and hostile values.
fn training_profile() -> String {
    let command: Vec<String> = ["torchrun", "train.py"]
        .iter()
        .map(|word| (*word).to_string())
        .chain(HOSTILE.iter().map(|word| (*word).to_string()))
        .collect();
    format!(
        "image = \"nvcr.io/nvidia/pytorch:25.01-py3\"\n\
         gpus = 2\ncpus = 8\nmemory = \"32g\"\n\
         network = \"host\"\ndevices = [\"/dev/infiniband\"]\ncap_add = [\"IPC_LOCK\"]\n\
         hostname = \"trainer\"\nworkdir = \"/work space\"\n\
         mounts = [\"./my data:/data:ro\", \"~/cache:/cache\", \"datasets:/datasets\"]\n\
         command = {}\n\
         env = {{ NCCL_DEBUG = \"INFO\", ODD = {}, LIST = \"a,b\", API_TOKEN = \"\" }}\n",
        toml_array(&command),
        toml_string("it's $(id) `x`\nline")
    )
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn toml_array(words: &[String]) -> String {
    format!(
        "[{}]",
        words
            .iter()
            .map(|word| toml_string(word))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A project folder with `./envctl/NAME.toml` for each `(name, text)`.
fn project(profiles: &[(&str, &str)]) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::create_dir_all(folder.path().join("my data")).unwrap();
    for (name, text) in profiles {
        std::fs::write(folder.path().join(format!("envctl/{name}.toml")), text).unwrap();
    }
    folder
}

/// `envctl export ARGS…` in `project`: stdout, stderr, exit code.
fn export(project: &Path, arguments: &[&str]) -> (String, String, i32) {
    let output = envctl_in(project)
        .arg("export")
        .args(arguments)
        .timeout(TOOL_TIMEOUT)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

fn exported(project: &Path, arguments: &[&str]) -> (String, String) {
    let (stdout, stderr, code) = export(project, arguments);
    assert_eq!(code, 0, "export {arguments:?}: {stderr}");
    (stdout, stderr)
}

/// Writes an executable through `install`, so no file descriptor of this process (which
/// another test's fork could hold at that instant) is open on it when it runs: exec would
/// fail with "Text file busy".
fn write_executable(path: &Path, text: &str) {
    let source = path.with_extension("source");
    std::fs::write(&source, text).unwrap();
    let status = Command::new("install")
        .args(["-m", "755"])
        .arg(&source)
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "install {}", path.display());
}

fn words_of(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let mut words: Vec<String> = bytes
        .split(|byte| *byte == 0)
        .map(|word| String::from_utf8(word.to_vec()).unwrap())
        .collect();
    words.pop();
    words
}
