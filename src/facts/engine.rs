//! What the Docker daemon told envctl about itself, its images and a pull: plain serde
//! data filled by `engine::facts` and `engine::pull`, judged by `checks/` and drawn by `ui/`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What doctor knows about the daemon: reachable with its facts, or the named reason not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineFacts {
    pub endpoint: String,
    #[serde(flatten)]
    pub state: EngineState,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum EngineState {
    Reachable(Box<DaemonFacts>),
    Unreachable {
        kind: String,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

/// Whether a daemon that could not be used did answer, from its failure's `kind`
/// (`EngineError::kind`): one that answered with an error (500) or with something that is
/// not the API's JSON was reached, and must not be called "not reachable".
pub fn daemon_answered(kind: &str) -> bool {
    matches!(kind, "daemon_error" | "bad_answer")
}

/// `GET /version` and `GET /info`, the parts doctor judges.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DaemonFacts {
    pub server_version: Option<String>,
    pub api_version: Option<String>,
    pub operating_system: Option<String>,
    pub os_type: Option<String>,
    pub kernel_version: Option<String>,
    /// Docker Desktop runs the daemon in a VM: host files and GPUs are the VM's.
    pub docker_desktop: bool,
    pub cgroup_driver: Option<String>,
    pub cgroup_version: Option<String>,
    pub rootless: bool,
    pub security_options: Vec<String>,
    /// Registered runtimes (`runc`, `nvidia`, …), sorted.
    pub runtimes: Vec<String>,
    pub default_runtime: Option<String>,
    /// CDI spec folders (API ≥ 1.44); `None` when the daemon does not report them.
    pub cdi_spec_dirs: Option<Vec<String>>,
    /// Devices the daemon discovered (API ≥ 1.50), e.g. `cdi:nvidia.com/gpu=0`.
    pub discovered_devices: Option<Vec<String>>,
    pub docker_root_dir: Option<String>,
    pub warnings: Vec<String>,
    /// `NCPU`: the CPUs the daemon's host has, the most `--cpus` it accepts.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// `MemTotal`: the daemon's host memory in bytes.
    #[serde(default)]
    pub memory_bytes: Option<u64>,
}

/// The parts of an image's config that say which CUDA and PyTorch it holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageFacts {
    pub reference: String,
    pub id: Option<String>,
    pub repo_digests: Vec<String>,
    /// `linux/amd64`.
    pub platform: Option<String>,
    /// `NVIDIA_REQUIRE_CUDA`, `CUDA_VERSION`, `PYTORCH_VERSION`, … from the image's env.
    pub env: BTreeMap<String, String>,
}

/// One progress event of a pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullEvent {
    /// The layer id (`3dc16ba81c45`), or `None` for whole-image lines (`Digest: …`).
    pub layer: Option<String>,
    /// `Pulling fs layer`, `Downloading`, `Extracting`, `Pull complete`, `Already exists`, …
    pub status: String,
    pub current: Option<u64>,
    pub total: Option<u64>,
}
