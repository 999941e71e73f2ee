//! Profile → files for other engines: a compose file, Kubernetes manifests, a
//! devcontainer.json, and the `docker run` line. Pure: the command resolves the environment
//! (`ops::environment`: profile, lock, host), finds the working directory and writes the
//! result; everything here only maps.
//!
//! Every target starts from the same [`CreateBody`] `up` sends (built by
//! [`crate::container_plan::create_body`] and pinned by `envctl.lock` in `ops::environment`), so what envctl decides for the user — the 8 GiB `/dev/shm`
//! for PyTorch and GPU containers, `CUDA_DEVICE_ORDER=PCI_BUS_ID` with GPUs, the
//! keep-alive `sleep infinity` with an init process, the labels — is the same in every
//! export as in `up`. The exports build that body as for a host with GPUs (so
//! `gpus = "optional"` reads as `all`, except in devcontainer.json, which has its own
//! "optional"), since the file is meant for other machines. Every exporter reads that
//! body through one interpreted view (`view::BodyView`), so what they share — binds and
//! named volumes, the published ports, the command, the GPU request — is derived once.
//!
//! # What a target cannot express
//!
//! Nothing is dropped silently: each export returns [`Notice`]s, which the command prints
//! as warnings, saying what was done instead.
//!
//! | setting | compose | Kubernetes | devcontainer.json |
//! |---|---|---|---|
//! | `gpus = "optional"` | reserves all GPUs (compose has no "GPU if available") | 1 `nvidia.com/gpu` | `hostRequirements.gpu: "optional"` (native) |
//! | `gpus = "all"` | `count: all` | 1 `nvidia.com/gpu` (no "all" in Kubernetes) | `hostRequirements.gpu: true` (the tools add `--gpus all`) |
//! | `gpus = N` / ids | `count` / `device_ids` | N / as many GPUs as ids; the device plugin picks which | `runArgs --gpus`; no `hostRequirements.gpu` (it would add `--gpus all`) |
//! | host IP of ports | kept | containerPorts only; `--service` gives a ClusterIP Service | `appPort` keeps it; `forwardPorts` too |
//! | ulimits | kept | dropped (no Pod field) | `runArgs --ulimit` (Docker only) |
//! | init | kept | `shareProcessNamespace` (the pause process is PID 1) | `init: true` |
//! | command | kept | `args` (keeps the image's entrypoint, as Docker's `Cmd`) | not expressible: the tools run their own keep-alive |
//! | ipc | kept | `host` → `hostIPC`; `shareable` → pod-wide only | `runArgs --ipc` |
//! | user | kept | numeric `uid[:gid]` → `securityContext`; names dropped | `containerUser` |
//! | bind mounts | relative to the file's folder | hostPath (this machine's path) or PVC | `${localWorkspaceFolder}/…` |
//! | `network` | `network_mode`; a named one as an `external` network | `host` → `hostNetwork` (with `dnsPolicy: ClusterFirstWithHostNet`); `none` and named networks: notice | `runArgs --network` |
//! | `devices` | `devices` | notice: a device plugin must advertise them | `runArgs --device` |
//! | `cap_add` | `cap_add` | `securityContext.capabilities.add` | `capAdd` |
//! | `hostname` | `hostname` | `hostname` (a DNS label; not with `hostNetwork` or `--nodes`) | `runArgs --hostname` |
//! | long or lookalike names | — | 63-character DNS labels: a longer name, or a mount's that reads as another's (`my_cache`, `my.cache`), ends in a hash of the original | — |
//!
//! The cluster targets (`slurm`, `pyxis`, `apptainer`: sbatch scripts; `edf`: a CSCS
//! environment definition) are described in `slurm.rs` and `hpc_runtime.rs`: `slurm`
//! runs the profile through `envctl run` on each node and so carries all of it; the
//! others cannot carry ports, `shm_size`, GPU ids, named volumes, capabilities, the user,
//! IPC mode, ulimits or a hostname, and say so in notices. `--to k8s --nodes N` writes a
//! Kubeflow `PyTorchJob` (`kubernetes/pytorch_job.rs`).
//!
//! Relative bind sources are written relative to the folder of the output file — compose
//! reads them relative to the compose file's folder — or, on stdout, relative to the
//! working directory (so keep the file there, or export with `-o`).

mod apptainer;
mod compose;
mod devcontainer;
mod edf;
mod hpc_runtime;
mod kubernetes;
mod pyxis;
mod slurm;
mod view;
mod yaml;

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

use crate::container_plan::{CreateBody, SpecError, clean, docker_run_line, resolve_bind_source};
use crate::profile::ResolvedProfile;
use crate::profile::model::Mount as ProfileMount;

pub use apptainer::{apptainer, apptainer_image};
pub use compose::compose;
pub use devcontainer::devcontainer;
pub use edf::edf;
pub use kubernetes::scheduling::{MIG_RESOURCE_PREFIX, check_mig_profile, check_runtime_class};
pub use kubernetes::{KubernetesOptions, VolumeMode, WorkloadKind, kubernetes};
pub use pyxis::{enroot_image, pyxis};
pub use slurm::{DEFAULT_MASTER_PORT, SlurmOptions, slurm};
pub use yaml::to_yaml;

/// The engine an export is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Target {
    #[serde(rename = "compose")]
    Compose,
    #[serde(rename = "k8s")]
    Kubernetes,
    #[serde(rename = "devcontainer")]
    Devcontainer,
    #[serde(rename = "docker-run")]
    DockerRun,
    #[serde(rename = "slurm")]
    Slurm,
    #[serde(rename = "pyxis")]
    Pyxis,
    #[serde(rename = "apptainer")]
    Apptainer,
    #[serde(rename = "edf")]
    Edf,
}

impl Target {
    /// The name `--to` takes.
    pub fn name(self) -> &'static str {
        match self {
            Target::Compose => "compose",
            Target::Kubernetes => "k8s",
            Target::Devcontainer => "devcontainer",
            Target::DockerRun => "docker-run",
            Target::Slurm => "slurm",
            Target::Pyxis => "pyxis",
            Target::Apptainer => "apptainer",
            Target::Edf => "edf",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A setting a target could not express as `up` does, and what the export did instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    pub target: Target,
    /// The profile setting: `gpus`, `ulimits`, `ports`, `mounts./data`.
    pub setting: String,
    /// What the target lacks and what was written instead.
    pub message: String,
}

impl Notice {
    pub fn new(target: Target, setting: impl Into<String>, message: impl Into<String>) -> Self {
        Notice {
            target,
            setting: setting.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}: `{}`: {}",
            self.target, self.setting, self.message
        )
    }
}

/// An export: the file's text (ending with a newline) and what it could not express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub text: String,
    pub notices: Vec<Notice>,
}

/// Everything an export reads.
pub struct ExportInput<'a> {
    pub resolved: &'a ResolvedProfile,
    /// `up`'s create body for the profile, built as for a host with GPUs.
    pub body: &'a CreateBody,
    /// Absolute; relative bind sources resolve against it, as in `up`.
    pub working_directory: PathBuf,
    /// `~` bind sources resolve against it.
    pub home: Option<PathBuf>,
    /// The file being written (absolute), or `None` for stdout.
    pub output_file: Option<PathBuf>,
    /// Whether a host path is a regular file (Kubernetes `hostPath.type`); the command
    /// asks the file system, tests a closure.
    pub path_is_file: &'a dyn Fn(&Path) -> bool,
}

impl fmt::Debug for ExportInput<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ExportInput")
            .field("profile", &self.resolved.profile.name)
            .field("working_directory", &self.working_directory)
            .field("home", &self.home)
            .field("output_file", &self.output_file)
            .finish_non_exhaustive()
    }
}

impl ExportInput<'_> {
    /// The folder relative paths in the output are relative to: the output file's, or the
    /// working directory for stdout.
    fn output_directory(&self) -> PathBuf {
        self.output_file
            .as_deref()
            .and_then(Path::parent)
            .map(|parent| clean(&self.working_directory.join(parent)))
            .unwrap_or_else(|| clean(&self.working_directory))
    }
}

/// Why an export could not be made.
#[derive(Debug, Error)]
pub enum ExportError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("cannot build the {target} file: {message}")]
    Serialize { target: Target, message: String },
}

impl ExportError {
    fn serialize(target: Target, error: impl fmt::Display) -> Self {
        ExportError::Serialize {
            target,
            message: error.to_string(),
        }
    }
}

/// `export --to docker-run`: exactly `up --dry-run`'s line for the same body and name,
/// secret variables written `-e KEY` (docker takes them from the shell), with a notice
/// saying which to export.
pub fn docker_run(body: &CreateBody, name: &str) -> Exported {
    let secrets = body.secret_env_keys();
    let notices = if secrets.is_empty() {
        Vec::new()
    } else {
        vec![Notice::new(
            Target::DockerRun,
            "env",
            crate::secret::docker_run_notice(&secrets),
        )]
    };
    Exported {
        text: format!("{}\n", docker_run_line(body, name)),
        notices,
    }
}

/// How the profile wrote a bind source.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BindSource {
    /// `~` or `~/rest`: `rest` is `""` for `~` itself.
    Home { rest: String },
    /// An absolute path, cleaned.
    Absolute(PathBuf),
    /// `./x`, `../x` or `x/y`: the absolute path it names from the working directory.
    Relative(PathBuf),
}

impl BindSource {
    /// The absolute path on this machine.
    fn path(&self, input: &ExportInput<'_>, written: &str) -> Result<PathBuf, SpecError> {
        match self {
            BindSource::Absolute(path) | BindSource::Relative(path) => Ok(path.clone()),
            BindSource::Home { .. } => {
                resolve_bind_source(written, &input.working_directory, input.home.as_deref())
            }
        }
    }
}

fn bind_source(mount: &ProfileMount, input: &ExportInput<'_>) -> Result<BindSource, SpecError> {
    let written = mount.source.as_str();
    if written == "~" || written.starts_with("~/") {
        let rest = written.trim_start_matches('~').trim_start_matches('/');
        return Ok(BindSource::Home {
            rest: rest.trim_end_matches('/').to_string(),
        });
    }
    // Errors (another user's `~bob`, a relative working directory) exactly as `up` has them.
    let path = resolve_bind_source(written, &input.working_directory, input.home.as_deref())?;
    if Path::new(written).is_absolute() {
        Ok(BindSource::Absolute(path))
    } else {
        Ok(BindSource::Relative(path))
    }
}

/// A path as UTF-8 text, or the error `up` gives for it.
fn path_text(path: &Path) -> Result<String, SpecError> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| SpecError::NotUnicode {
            path: path.to_path_buf(),
        })
}

/// `to` relative to the folder `from` (both absolute and clean), spelled so that compose
/// reads it as relative: `.`, `./x`, `../x`.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from
        .iter()
        .zip(&to)
        .take_while(|(left, right)| left == right)
        .count();
    let mut relative = PathBuf::new();
    if common == from.len() {
        relative.push(".");
    }
    for _ in common..from.len() {
        relative.push("..");
    }
    for component in &to[common..] {
        relative.push(component);
    }
    relative
}

/// The longest DNS-1123 label (Kubernetes object, volume and container names).
const DNS_LABEL_MAX: usize = 63;

/// `text` as a DNS-1123 label (Kubernetes object and container names): lower case,
/// `[a-z0-9-]`, at most 63 characters, starting and ending with a letter or digit. A text
/// whose label would be longer is cut and ends in `-` and a short hash of the whole text
/// ([`hashed_label`]), so two long texts that share their first 63 characters still get
/// two labels.
fn dns_label(text: &str) -> String {
    let label = dns_label_whole(text);
    if label.len() > DNS_LABEL_MAX {
        hashed_label(&label, text)
    } else {
        label
    }
}

/// [`dns_label`] without the length limit: what the label says of `text` before any cut.
fn dns_label_whole(text: &str) -> String {
    let mut label = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            label.push(c);
        } else if !label.ends_with('-') {
            label.push('-');
        }
    }
    let label = label.trim_matches('-');
    if label.is_empty() {
        "envctl".into()
    } else {
        label.to_string()
    }
}

/// `label` (from [`dns_label_whole`]) cut so that `-` and the first 8 hex digits of the
/// SHA-256 of `original` fit after it in 63 characters: the same original always gives the
/// same label, two originals differ in the suffix.
fn hashed_label(label: &str, original: &str) -> String {
    let suffix = short_hash(original);
    let room = DNS_LABEL_MAX - suffix.len() - 1;
    let mut base: String = label.chars().take(room).collect();
    while base.ends_with('-') {
        base.pop();
    }
    if base.is_empty() {
        suffix
    } else {
        format!("{base}-{suffix}")
    }
}

/// The first 8 hex digits of the SHA-256 of `text`.
fn short_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

pub use crate::units::decimal_cpus;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_from_the_output_folder() {
        let cases = [
            ("/work/project", "/work/project", "."),
            ("/work/project", "/work/project/data", "./data"),
            ("/work/project/deploy", "/work/project/data", "../data"),
            ("/work/project/a/b", "/work/other", "../../../other"),
            ("/", "/srv", "./srv"),
        ];
        for (from, to, expected) in cases {
            assert_eq!(
                relative_path(Path::new(from), Path::new(to)),
                PathBuf::from(expected),
                "{from} → {to}"
            );
        }
    }

    #[test]
    fn dns_labels() {
        assert_eq!(dns_label("envctl-pytorch-2.8"), "envctl-pytorch-2-8");
        assert_eq!(dns_label("My_Profile!!"), "my-profile");
        assert_eq!(dns_label("---"), "envctl");
        assert_eq!(dns_label(&"a".repeat(63)), "a".repeat(63));
    }

    #[test]
    fn long_dns_labels_end_in_a_hash_of_the_whole_text() {
        let long = "a".repeat(80);
        let label = dns_label(&long);
        assert_eq!(label.len(), 63);
        assert_eq!(label, format!("{}-{}", "a".repeat(54), short_hash(&long)));
        // Texts that differ after the 63rd character: two labels, each the same every time.
        let train = format!("envctl-{}-data-train", "p".repeat(59));
        let valid = format!("envctl-{}-data-valid", "p".repeat(59));
        assert_ne!(dns_label(&train), dns_label(&valid));
        assert_eq!(dns_label(&train), dns_label(&train));
        for text in [&train, &valid] {
            let label = dns_label(text);
            assert!(label.len() <= 63, "{label}");
            assert!(label.starts_with("envctl-ppp"), "{label}");
            assert!(
                label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{label}"
            );
        }
        // A cut that lands on `-` drops it: no `--` before the hash.
        let dashed = format!("{}-{}", "b".repeat(53), "c".repeat(20));
        assert_eq!(
            dns_label(&dashed),
            format!("{}-{}", "b".repeat(53), short_hash(&dashed))
        );
        assert_eq!(short_hash("my_cache").len(), 8);
        assert_ne!(short_hash("my_cache"), short_hash("my.cache"));
        assert_eq!(
            hashed_label("my-cache", "my.cache"),
            format!("my-cache-{}", short_hash("my.cache"))
        );
    }

    #[test]
    fn cpus_read_back_exactly() {
        assert_eq!(decimal_cpus(1_500_000_000), "1.5");
        assert_eq!(decimal_cpus(8_000_000_000), "8");
        assert_eq!(decimal_cpus(1), "0.000000001");
    }
}
