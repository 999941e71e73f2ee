//! Facts about the daemon and images, gathered through the Engine API into the plain
//! structs of `envctl_facts::engine`.

use super::{Engine, EngineError};
use envctl_facts::engine::{
    DaemonFacts, DaemonHost, EngineFacts, EngineKind, EngineState, ImageFacts,
};

/// The env variables of an image that matter to compatibility.
const IMAGE_ENV_KEYS: [&str; 6] = [
    "NVIDIA_REQUIRE_CUDA",
    "CUDA_VERSION",
    "PYTORCH_VERSION",
    "CUDNN_VERSION",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
];

/// The most of an `/info` answer envctl reads: Docker's is some 10 KiB, Podman's some
/// 20 KiB.
const MAX_FACTS_ANSWER_BYTES: usize = 4 << 20;

/// Whether `/info`'s `OperatingSystem` is Docker Desktop's VM.
fn is_docker_desktop(operating_system: Option<&str>) -> bool {
    operating_system.is_some_and(|system| system.contains("Docker Desktop"))
}

/// The devices a daemon discovered, as `source:id`.
fn device_names(devices: Vec<bollard::models::DeviceInfo>) -> Vec<String> {
    devices
        .into_iter()
        .map(|device| {
            format!(
                "{}:{}",
                device.source.unwrap_or_default(),
                device.id.unwrap_or_default()
            )
        })
        .collect()
}

impl Engine {
    /// Reads `/version` and `/info` at once. Unreachable is a fact, not an error.
    pub async fn facts(&self) -> EngineFacts {
        let state = match self.daemon_facts().await {
            Ok(facts) => EngineState::Reachable(Box::new(facts)),
            Err(error) => {
                let error = self.first_failure(error).await;
                EngineState::Unreachable {
                    kind: error.kind().into(),
                    message: envctl_core::text::error_chain(&error),
                    hint: error.hint(),
                }
            }
        };
        EngineFacts {
            endpoint: self.endpoint().to_string(),
            state,
        }
    }

    async fn daemon_facts(&self) -> Result<DaemonFacts, EngineError> {
        // No separate ping: `/version` answers the same question, and its failure is
        // classified the same way (the short-answer deadline bounds it).
        // `/info` is read within a size limit: a daemon (or whatever listens at
        // DOCKER_HOST) answering hundreds of megabytes must not take that much memory
        // here. `/version`, asked through bollard, is the one whose failure names the
        // cause (a timeout, a refused connection).
        let (version, info) = tokio::join!(
            self.short_answer("GET /version", self.docker.version()),
            self.get_json::<bollard::models::SystemInfo>(
                "/info",
                "GET /info",
                MAX_FACTS_ANSWER_BYTES
            )
        );
        let (version, info) = (version?, info?);
        let security_options = info.security_options.unwrap_or_default();
        let mut runtimes: Vec<String> = info.runtimes.unwrap_or_default().into_keys().collect();
        runtimes.sort();
        let operating_system = info.operating_system;
        let docker_desktop = is_docker_desktop(operating_system.as_deref());
        let kind = EngineKind::from_components(
            version
                .components
                .iter()
                .flatten()
                .map(|component| component.name.as_str()),
            docker_desktop,
        );
        let rootless = self.is_rootless(kind, &security_options).await?;
        // The one `/version` of this connection: what `Engine::identity` would ask again.
        self.remember_identity(kind, version.version.clone());
        let name = info.name.filter(|name| !name.is_empty());
        let host = self.locate_daemon(name.as_deref(), docker_desktop);
        Ok(DaemonFacts {
            name,
            host,
            kind,
            server_version: version.version,
            api_version: version.api_version,
            docker_desktop,
            operating_system,
            os_type: info.os_type,
            kernel_version: info.kernel_version,
            cgroup_driver: info.cgroup_driver.map(|driver| driver.to_string()),
            cgroup_version: info.cgroup_version.map(|version| version.to_string()),
            rootless,
            security_options,
            runtimes,
            default_runtime: info.default_runtime,
            cdi_spec_dirs: info.cdi_spec_dirs,
            discovered_devices: info.discovered_devices.map(device_names),
            docker_root_dir: info.docker_root_dir,
            warnings: info.warnings.unwrap_or_default(),
            // A daemon that reports no positive figure leaves the limit unjudged.
            cpus: info
                .ncpu
                .and_then(|count| u32::try_from(count).ok())
                .filter(|count| *count > 0),
            memory_bytes: info
                .mem_total
                .and_then(|bytes| u64::try_from(bytes).ok())
                .filter(|bytes| *bytes > 0),
        })
    }

    /// Whether the daemon runs rootless: its security options say so, or Podman's own
    /// `Rootless` field, which bollard does not read.
    async fn is_rootless(
        &self,
        kind: EngineKind,
        security_options: &[String],
    ) -> Result<bool, EngineError> {
        let rootless = security_options
            .iter()
            .any(|option| option.contains("name=rootless"));
        if kind == EngineKind::Podman && !rootless {
            return self.podman_rootless().await;
        }
        Ok(rootless)
    }

    /// Where the daemon runs, remembered for this connection: its host's name beside this
    /// one's (unreadable here: the endpoint decides, `DaemonHost::of`).
    fn locate_daemon(&self, name: Option<&str>, docker_desktop: bool) -> DaemonHost {
        let host = DaemonHost::of(
            name,
            docker_desktop,
            self.endpoint(),
            envctl_host::hostname().ok().as_deref(),
        );
        let _ = self.host.set(host.clone());
        host
    }

    /// Whether the daemon runs on this machine, asked once per connection (`/info`'s
    /// `Name`; `DaemonHost::of`): what may be read here for it, NVML, `/proc`, the free
    /// disk, the GPU lock file, is this machine's only when it does.
    pub async fn daemon_host(&self) -> Result<DaemonHost, EngineError> {
        self.host
            .get_or_try_init(|| async {
                let answer: serde_json::Value = self
                    .get_json("/info", "GET /info", MAX_FACTS_ANSWER_BYTES)
                    .await?;
                let name = answer
                    .get("Name")
                    .and_then(serde_json::Value::as_str)
                    .filter(|name| !name.is_empty());
                let docker_desktop = is_docker_desktop(
                    answer
                        .get("OperatingSystem")
                        .and_then(serde_json::Value::as_str),
                );
                Ok(DaemonHost::of(
                    name,
                    docker_desktop,
                    self.endpoint(),
                    envctl_host::hostname().ok().as_deref(),
                ))
            })
            .await
            .cloned()
    }

    /// Whether the daemon runs on this machine, [`Engine::daemon_host`] answered; not when
    /// that cannot be told (then nothing of this machine is read for it).
    pub async fn on_this_host(&self) -> bool {
        self.daemon_host()
            .await
            .is_ok_and(|host| host.elsewhere().is_none())
    }

    /// Podman's `/info` field `Rootless`, read from the raw answer (at most 1 MiB).
    async fn podman_rootless(&self) -> Result<bool, EngineError> {
        let answer: serde_json::Value = self.get_json("/info", "GET /info", 1 << 20).await?;
        Ok(answer.get("Rootless").and_then(serde_json::Value::as_bool) == Some(true))
    }

    /// The image's config when it is present locally; `Ok(None)` when it is not.
    pub async fn image_facts(&self, reference: &str) -> Result<Option<ImageFacts>, EngineError> {
        let reference = super::reference::image(reference)?;
        let inspect = self.whole_answer(
            "inspecting an image",
            self.answer_deadline(),
            self.docker.inspect_image(reference),
        );
        match inspect.await? {
            Ok(inspect) => {
                let env = inspect
                    .config
                    .and_then(|config| config.env)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|pair| {
                        let (key, value) = pair.split_once('=')?;
                        IMAGE_ENV_KEYS
                            .contains(&key)
                            .then(|| (key.to_string(), value.to_string()))
                    })
                    .collect();
                let platform = match (&inspect.os, &inspect.architecture) {
                    (Some(os), Some(architecture)) => Some(format!("{os}/{architecture}")),
                    _ => None,
                };
                Ok(Some(ImageFacts {
                    reference: reference.to_string(),
                    platform,
                    id: inspect.id,
                    repo_digests: inspect.repo_digests.unwrap_or_default(),
                    env,
                }))
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(error) => Err(self.classify(error)),
        }
    }
}
