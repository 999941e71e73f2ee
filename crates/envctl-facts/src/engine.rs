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

/// Which engine answers the Docker API: each has its own fixes (Podman reaches GPUs
/// through CDI, Docker Desktop runs containers in a VM).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    DockerEngine,
    DockerDesktop,
    Podman,
    /// `/version` named no component envctl knows.
    #[default]
    Unknown,
}

impl EngineKind {
    /// From `/version`'s component names and whether `/info` says Docker Desktop.
    pub fn from_components<'a>(
        components: impl IntoIterator<Item = &'a str>,
        docker_desktop: bool,
    ) -> EngineKind {
        let names: Vec<&str> = components.into_iter().collect();
        if names.iter().any(|name| name.contains("Podman")) {
            EngineKind::Podman
        } else if docker_desktop {
            EngineKind::DockerDesktop
        } else if names.contains(&"Engine") {
            EngineKind::DockerEngine
        } else {
            EngineKind::Unknown
        }
    }

    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::DockerEngine => "Docker",
            EngineKind::DockerDesktop => "Docker Desktop",
            EngineKind::Podman => "Podman",
            EngineKind::Unknown => "the engine",
        }
    }

    /// How a message names what answers at the endpoint (`the Podman service at …`);
    /// before the engine is known, only "the daemon".
    pub fn daemon(self) -> &'static str {
        match self {
            EngineKind::DockerEngine => "Docker daemon",
            EngineKind::DockerDesktop => "Docker Desktop daemon",
            EngineKind::Podman => "Podman service",
            EngineKind::Unknown => "daemon",
        }
    }

    /// The command-line tool a hint's commands are written for: `podman` on Podman, the
    /// Docker CLI otherwise (the reference envctl follows).
    pub fn cli(self) -> &'static str {
        match self {
            EngineKind::Podman => "podman",
            _ => "docker",
        }
    }

    /// How to start (or restart) the engine's service: `verb` is `start` or `restart`.
    /// Before the engine is known, both Docker's and Podman's.
    pub fn start_command(self, verb: &str) -> String {
        let docker = format!("Docker (`sudo systemctl {verb} docker`)");
        let podman = format!(
            "Podman's API service (`sudo systemctl {verb} podman.socket`; rootless: `systemctl --user {verb} podman.socket`)"
        );
        match self {
            EngineKind::Podman => podman,
            EngineKind::DockerEngine => docker,
            EngineKind::DockerDesktop => "Docker Desktop".into(),
            EngineKind::Unknown => format!("{docker} or {podman}"),
        }
    }

    /// Where the rootless engines put their sockets.
    pub fn rootless_sockets(self) -> &'static str {
        match self {
            EngineKind::Podman => "rootless: unix://$XDG_RUNTIME_DIR/podman/podman.sock",
            EngineKind::DockerEngine | EngineKind::DockerDesktop => {
                "rootless: unix://$XDG_RUNTIME_DIR/docker.sock"
            }
            EngineKind::Unknown => {
                "rootless: unix://$XDG_RUNTIME_DIR/docker.sock or unix://$XDG_RUNTIME_DIR/podman/podman.sock"
            }
        }
    }

    /// Where to look when the engine hangs: its service's status and log.
    pub fn service_logs(self) -> &'static str {
        match self {
            EngineKind::Podman => {
                "`systemctl status podman.socket podman.service` and `journalctl -u podman.service`"
            }
            EngineKind::DockerEngine => "`systemctl status docker` and `journalctl -u docker`",
            EngineKind::DockerDesktop => "Docker Desktop's troubleshooting page and its logs",
            EngineKind::Unknown => {
                "`systemctl status docker` and `journalctl -u docker` (Podman: `journalctl -u podman.service`)"
            }
        }
    }

    /// The fix for a socket this user may not open.
    pub fn permission_fix(self) -> &'static str {
        match self {
            EngineKind::Podman => {
                "the rootful Podman socket is root's: use the rootless one (`systemctl --user start podman.socket`, DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock)"
            }
            EngineKind::Unknown => {
                "add yourself to the `docker` group (`sudo usermod -aG docker $USER`, then log in again) or use rootless Docker; for Podman, use its rootless socket (DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock)"
            }
            EngineKind::DockerEngine | EngineKind::DockerDesktop => {
                "add yourself to the `docker` group (`sudo usermod -aG docker $USER`, then log in again), or use rootless Docker"
            }
        }
    }

    /// How GPUs are given to containers on this engine, as a fix to install.
    pub fn gpu_fix(self) -> &'static str {
        match self {
            EngineKind::Podman => {
                "Podman reaches NVIDIA GPUs through CDI: use Podman 5.4 or newer (older ones drop GPU requests sent through the Docker API), install the NVIDIA Container Toolkit, then `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`"
            }
            _ => {
                "install the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`"
            }
        }
    }
}

/// How the GPU request is written for this engine: one rule
/// (`container_plan::gpu_path::gpu_request_form`) that `up`, its dry run and doctor read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum GpuRequestForm {
    /// `DeviceRequests` as `docker run --gpus` sends them (`Driver: ""`, capability
    /// `gpu`): the NVIDIA runtime or its hook picks the GPUs.
    Gpus,
    /// One `DeviceRequests` entry with `Driver: "cdi"` and `DeviceIDs` such as
    /// `nvidia.com/gpu=0`, as `docker run --device nvidia.com/gpu=0` sends it: Docker 25+
    /// with CDI, Podman 5.4+.
    Cdi,
    /// The engine's Docker API cannot be asked for GPUs: it would drop the request.
    Unavailable { reason: String },
}

/// The first Podman whose Docker-compatible API passes `DeviceRequests` with
/// `Driver: "cdi"` on (podman `pkg/api/handlers/compat/containers_create.go`, v5.4.0).
/// Older ones drop every `DeviceRequests` entry and write `HostConfig.Devices` as
/// `host:container:permissions`, which no CDI name survives.
pub const PODMAN_CDI_SINCE: (u64, u64) = (5, 4);

/// `GET /version` and `GET /info`, the parts doctor judges.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DaemonFacts {
    /// Docker Engine, Docker Desktop or Podman (from `/version`'s components).
    #[serde(default)]
    pub kind: EngineKind,
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
    /// `Name`: the name of the daemon's host, as its kernel gives it.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether the daemon runs on this machine ([`DaemonHost::of`]).
    #[serde(default)]
    pub host: DaemonHost,
}

/// Where the daemon runs, seen from the machine envctl runs on: what envctl may read here
/// on its behalf. On this host, NVML, the hook on `PATH`, the CDI specs, the device nodes
/// and the GPU placement lock describe the daemon's containers; elsewhere, only the
/// daemon's own answers do, and the rest is unknown (never this machine's facts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum DaemonHost {
    /// This machine (Docker Desktop's VM counts as this machine, as doctor judges it).
    /// The default of records written before envctl told the two apart, which knew only
    /// the daemon of the machine they were made on.
    #[default]
    ThisHost,
    /// Another machine, by the name the daemon gives it (or its endpoint's host when the
    /// daemon gives none).
    Elsewhere { name: String },
}

impl DaemonHost {
    /// Where a daemon runs: on this host when the name it gives its host (`/info`'s
    /// `Name`) is this host's name, elsewhere when the names differ. A socket forwarded
    /// from another machine (`ssh -L`) is so told apart from the local daemon's, and a
    /// `tcp://127.0.0.1` daemon of this machine is this host's. Without both names the
    /// endpoint decides: a unix socket is this machine's, a TCP or ssh endpoint is not
    /// (judging a far daemon by this machine's GPUs is the one wrong answer).
    pub fn of(
        daemon_name: Option<&str>,
        docker_desktop: bool,
        endpoint: &str,
        this_host: Option<&str>,
    ) -> DaemonHost {
        if docker_desktop {
            return DaemonHost::ThisHost;
        }
        match (daemon_name, this_host) {
            (Some(daemon), Some(here)) if daemon.eq_ignore_ascii_case(here) => DaemonHost::ThisHost,
            (Some(daemon), Some(_)) => DaemonHost::Elsewhere {
                name: daemon.to_string(),
            },
            _ if endpoint.starts_with("unix://") => DaemonHost::ThisHost,
            (daemon, _) => DaemonHost::Elsewhere {
                name: daemon.map_or_else(|| endpoint_host(endpoint), str::to_string),
            },
        }
    }

    /// The other machine's name, when the daemon is not on this one.
    pub fn elsewhere(&self) -> Option<&str> {
        match self {
            DaemonHost::ThisHost => None,
            DaemonHost::Elsewhere { name } => Some(name),
        }
    }
}

/// `gpu2` of `ssh://me@gpu2:22` or `tcp://gpu2:2376` (`::1` of `tcp://[::1]:2376`); the
/// endpoint itself when it names no host.
fn endpoint_host(endpoint: &str) -> String {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|url| {
            url.host_str().map(|host| {
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string()
            })
        })
        .unwrap_or_else(|| endpoint.to_string())
}

impl DaemonFacts {
    /// `Podman 5.4.2`, as messages name the engine.
    pub fn described(&self) -> String {
        format!(
            "{} {}",
            self.kind.name(),
            self.server_version
                .as_deref()
                .unwrap_or("of unknown version")
        )
    }

    /// Why this engine cannot be asked for GPUs through its Docker API at all, if so:
    /// Podman before [`PODMAN_CDI_SINCE`] drops the request and starts the container
    /// without GPUs.
    pub fn drops_gpu_requests(&self) -> Option<String> {
        if self.kind != EngineKind::Podman {
            return None;
        }
        let version = self.server_version.as_deref().unwrap_or("");
        match major_minor(version) {
            Some(found) if found >= PODMAN_CDI_SINCE => None,
            _ => Some(format!(
                "Podman {} drops GPU requests sent through its Docker API (CDI devices pass from Podman {}.{} on)",
                if version.is_empty() {
                    "of unknown version"
                } else {
                    version
                },
                PODMAN_CDI_SINCE.0,
                PODMAN_CDI_SINCE.1
            )),
        }
    }
}

/// `5.4` of `5.4.2`, `5.4.0-rc1` or `5.4`; `None` when it does not start with two numbers.
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
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

#[cfg(test)]
mod kind_tests {
    use super::EngineKind;

    #[test]
    fn the_engine_is_known_by_its_components() {
        // Docker 20.10 names "Engine", "containerd", "runc", "docker-init".
        assert_eq!(
            EngineKind::from_components(["Engine", "containerd", "runc"], false),
            EngineKind::DockerEngine
        );
        assert_eq!(
            EngineKind::from_components(["Engine"], true),
            EngineKind::DockerDesktop
        );
        assert_eq!(
            EngineKind::from_components(["Podman Engine"], false),
            EngineKind::Podman
        );
        assert_eq!(EngineKind::from_components([], false), EngineKind::Unknown);
        assert_eq!(EngineKind::Podman.name(), "Podman");
        assert!(EngineKind::Podman.gpu_fix().contains("cdi generate"));
        assert!(
            EngineKind::DockerEngine
                .gpu_fix()
                .contains("--runtime=docker")
        );
    }

    #[test]
    fn podman_before_5_4_drops_gpu_requests() {
        use super::DaemonFacts;
        let engine = |kind: EngineKind, version: &str| DaemonFacts {
            kind,
            server_version: Some(version.into()),
            ..DaemonFacts::default()
        };
        assert_eq!(
            engine(EngineKind::Podman, "5.4.2").drops_gpu_requests(),
            None
        );
        assert_eq!(
            engine(EngineKind::Podman, "6.0.0-rc1").drops_gpu_requests(),
            None
        );
        let reason = engine(EngineKind::Podman, "4.3.1")
            .drops_gpu_requests()
            .unwrap();
        assert!(
            reason.contains("Podman 4.3.1") && reason.contains("5.4"),
            "{reason}"
        );
        assert!(
            engine(EngineKind::Podman, "garbage")
                .drops_gpu_requests()
                .is_some()
        );
        assert_eq!(
            engine(EngineKind::DockerEngine, "20.10.24").drops_gpu_requests(),
            None
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_is_on_this_host_when_it_names_this_host() {
        let here = Some("vm");
        let of = |name, endpoint| DaemonHost::of(name, false, endpoint, here);
        assert_eq!(of(Some("vm"), "tcp://127.0.0.1:2375"), DaemonHost::ThisHost);
        assert_eq!(of(Some("VM"), "ssh://me@localhost"), DaemonHost::ThisHost);
        // A socket forwarded from gpu2 is gpu2's daemon.
        assert_eq!(
            of(Some("gpu2"), "unix:///tmp/gpu2.sock"),
            DaemonHost::Elsewhere {
                name: "gpu2".into()
            }
        );
        // Without a name, the endpoint decides.
        assert_eq!(
            of(None, "unix:///var/run/docker.sock"),
            DaemonHost::ThisHost
        );
        assert_eq!(
            of(None, "ssh://me@gpu3:2222"),
            DaemonHost::Elsewhere {
                name: "gpu3".into()
            }
        );
        assert_eq!(
            DaemonHost::of(Some("gpu4"), false, "tcp://[::1]:2376", None),
            DaemonHost::Elsewhere {
                name: "gpu4".into()
            }
        );
        assert_eq!(
            DaemonHost::of(None, false, "tcp://[::1]:2376", None),
            DaemonHost::Elsewhere { name: "::1".into() }
        );
        assert_eq!(
            DaemonHost::of(Some("docker-desktop"), true, "unix:///x", here),
            DaemonHost::ThisHost
        );
    }
}
