//! A daemon's GPUs seen through the daemon itself (issue 38, item 1): a short-lived probe
//! container, given every GPU by the daemon's NVIDIA toolkit with
//! `NVIDIA_DRIVER_CAPABILITIES=utility` (which brings `nvidia-smi`), in the host's pid
//! namespace (so compute processes' pids are the host's, and each one's `/proc/PID/cgroup`
//! names its container, on cgroup v1 and v2), asks nvidia-smi for the GPUs, the driver,
//! the CUDA version and the compute processes. `facts::smi` reads the answer.
//!
//! The image: nvidia-smi is a glibc program the toolkit puts into the container, so the
//! probe runs in an image already on the daemon (never pulled: a probe must not download
//! gigabytes behind the user's back): the profile's own when present (a team's images are
//! CUDA images, built on glibc), else an image whose config declares CUDA (`CUDA_VERSION`,
//! `NVIDIA_REQUIRE_CUDA`, set by every CUDA base image). Without one, or on a daemon whose
//! toolkit gives containers no GPUs, [`ProbeError`] says why with the command that helps.
//!
//! The container carries [`PROBE_LABEL`] and is always removed, whatever happened.

use std::time::Duration;

use futures_util::StreamExt;

use super::{Engine, EngineError};
use crate::facts::smi::{self, ServerGpus, SmiError};

/// The label of a probe container (`envctl ps` never lists it; a sweep may remove it).
pub const PROBE_LABEL: &str = "envctl.probe";

/// The longest a probe may run from its start to its exit: nvidia-smi answers in about a
/// second on a healthy machine (a few without persistence mode), a hung driver must not
/// hang the client, and `up` probes under the daemon's placement lock, which a holder
/// gives back 20 s after taking it (`ops::placement`).
pub const PROBE_DEADLINE: Duration = Duration::from_secs(15);

/// The most images inspected to find one that declares CUDA.
const IMAGES_LOOKED_AT: usize = 50;

/// The most bytes of the probe's output read (a few KiB on an 8-GPU machine).
const OUTPUT_CAP: usize = 256 * 1024;

/// Why a daemon's GPUs could not be learnt through it.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "no image on the daemon at `{endpoint}` can run the GPU probe: {}, and no image there declares CUDA (nvidia-smi needs a glibc image; envctl never pulls one for the probe)",
        if .wanted.is_empty() { "no profile names one".to_string() } else { format!("the profile's {} is not there", .wanted.join(", ")) }
    )]
    NoImage {
        endpoint: String,
        wanted: Vec<String>,
    },
    #[error(
        "the daemon at `{endpoint}` gives containers no GPUs (no NVIDIA runtime, hook or CDI spec), so its GPUs cannot be seen through it"
    )]
    NoGpuDriver {
        endpoint: String,
        #[source]
        source: EngineError,
    },
    #[error("the GPU probe in image {image} on `{endpoint}` gave no answer envctl can read")]
    Unreadable {
        endpoint: String,
        image: String,
        #[source]
        source: SmiError,
    },
    #[error("the GPU probe on `{endpoint}` did not end within {} s", PROBE_DEADLINE.as_secs())]
    Timeout { endpoint: String },
    #[error("the GPU probe on `{endpoint}` could not run")]
    Engine {
        endpoint: String,
        #[source]
        source: EngineError,
    },
}

impl ProbeError {
    /// A command that helps, for the `hint:` line.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProbeError::NoImage { endpoint, wanted } => Some(match wanted.first() {
                Some(image) => format!("docker -H {endpoint} pull {image}"),
                None => format!(
                    "docker -H {endpoint} pull nvidia/cuda:12.4.1-base-ubuntu22.04 (any CUDA image will do)"
                ),
            }),
            ProbeError::NoGpuDriver { endpoint, .. } => Some(format!(
                "on the server: `nvidia-ctk runtime configure --runtime=docker` and restart its daemon; check with `docker -H {endpoint} run --rm --gpus all IMAGE nvidia-smi`"
            )),
            // The shell's "command not found": no nvidia-smi the image can run (the toolkit
            // gave none, or the image has no glibc for it, as Alpine's musl images).
            ProbeError::Unreadable {
                endpoint,
                image,
                source: SmiError::Failed { status, .. },
            } if status == "127" => Some(format!(
                "nvidia-smi is a glibc program: check `docker -H {endpoint} run --rm --gpus all -e NVIDIA_DRIVER_CAPABILITIES=utility {image} nvidia-smi`, and keep a CUDA image (glibc) on the server: `docker -H {endpoint} pull nvidia/cuda:12.4.1-base-ubuntu22.04`"
            )),
            ProbeError::Unreadable {
                endpoint, image, ..
            } => Some(format!(
                "docker -H {endpoint} run --rm --gpus all -e NVIDIA_DRIVER_CAPABILITIES=utility {image} nvidia-smi"
            )),
            ProbeError::Timeout { endpoint } => Some(format!(
                "docker -H {endpoint} run --rm --gpus all IMAGE nvidia-smi (a hung driver needs the server's admin)"
            )),
            ProbeError::Engine { .. } => None,
        }
    }
}

/// The shell script the probe runs: each answer in a section of its own (`facts::smi`).
fn script() -> String {
    let m = smi::MARKER;
    let gpu_fields = smi::GPU_FIELDS;
    let app_fields = smi::APP_FIELDS;
    format!(
        "PATH=/usr/bin:/usr/local/nvidia/bin:/bin:/usr/sbin:/sbin:$PATH\n\
         echo '{m} gpus'; nvidia-smi --query-gpu={gpu_fields} --format=csv,noheader,nounits 2>&1; echo \"{m} status gpus $?\"\n\
         echo '{m} apps'; nvidia-smi --query-compute-apps={app_fields} --format=csv,noheader,nounits 2>&1; echo \"{m} status apps $?\"\n\
         echo '{m} query'; nvidia-smi -q -d COMPUTE 2>&1 | head -n 30\n\
         for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader,nounits 2>/dev/null); do\n\
           case \"$pid\" in *[!0-9]*|'') continue ;; esac\n\
           echo \"{m} cgroup $pid\"; head -c 4096 \"/proc/$pid/cgroup\" 2>/dev/null; echo\n\
         done\n\
         echo '{m} end'\n"
    )
}

impl Engine {
    /// The image the probe runs in: the first of `wanted` present on the daemon, else one
    /// there whose config declares CUDA.
    pub async fn probe_image(&self, wanted: &[String]) -> Result<String, ProbeError> {
        let engine_error = |source| ProbeError::Engine {
            endpoint: crate::secret::masked_url(self.endpoint()).into_owned(),
            source,
        };
        for image in wanted {
            if self
                .image_facts(image)
                .await
                .map_err(engine_error)?
                .is_some()
            {
                return Ok(image.clone());
            }
        }
        let listed = self
            .with_deadline(
                "listing images",
                self.answer_deadline(),
                self.docker
                    .list_images(None::<bollard::query_parameters::ListImagesOptions>),
            )
            .await
            .map_err(engine_error)?
            .map_err(|error| engine_error(self.classify(error)))?;
        for image in listed.iter().take(IMAGES_LOOKED_AT) {
            // A tagged reference reads better in messages; an untagged image by its id.
            let reference = image
                .repo_tags
                .iter()
                .find(|tag| !tag.contains("<none>"))
                .cloned()
                .unwrap_or_else(|| image.id.clone());
            if let Some(facts) = self.image_facts(&reference).await.map_err(engine_error)?
                && (facts.env.contains_key("CUDA_VERSION")
                    || facts.env.contains_key("NVIDIA_REQUIRE_CUDA"))
            {
                return Ok(reference);
            }
        }
        Err(ProbeError::NoImage {
            endpoint: crate::secret::masked_url(self.endpoint()).into_owned(),
            wanted: wanted.to_vec(),
        })
    }

    /// Runs the probe in `image` and reads its answer. The container is removed whatever
    /// happens.
    pub async fn probe_gpus(&self, image: &str) -> Result<ServerGpus, ProbeError> {
        let endpoint = crate::secret::masked_url(self.endpoint()).into_owned();
        let body = serde_json::json!({
            "Image": image,
            "Entrypoint": ["/bin/sh", "-c"],
            "Cmd": [script()],
            "User": "0",
            "Env": ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility"],
            "Labels": { PROBE_LABEL: "1" },
            "HostConfig": {
                "PidMode": "host",
                "NetworkMode": "none",
                "DeviceRequests": [{ "Driver": "", "Count": -1, "Capabilities": [["gpu"]] }],
            },
        });
        // No name: the daemon gives one, so two clients' probes never collide.
        let id = self
            .create_container("", &body)
            .await
            .map_err(|source| ProbeError::Engine {
                endpoint: endpoint.clone(),
                source,
            })?;
        let ran = self.run_probe(&id, image).await;
        // Removed whatever happened; a removal that fails leaves a labelled container that
        // the next probe's owner can find, and the probe's own answer still stands.
        let _ = self.remove_container(&id, true, false).await;
        ran
    }

    async fn run_probe(&self, id: &str, image: &str) -> Result<ServerGpus, ProbeError> {
        let endpoint = crate::secret::masked_url(self.endpoint()).into_owned();
        match self.start_container(id).await {
            Ok(()) => {}
            Err(
                source @ EngineError::StartRefused {
                    refusal: super::error::StartRefusal::NoGpuDriver,
                    ..
                },
            ) => return Err(ProbeError::NoGpuDriver { endpoint, source }),
            Err(source) => return Err(ProbeError::Engine { endpoint, source }),
        }
        let waited = tokio::time::timeout(PROBE_DEADLINE, async {
            let mut waits = self
                .docker
                .wait_container(id, None::<bollard::query_parameters::WaitContainerOptions>);
            // The exit code is in the output's status lines; an error here (a non-zero
            // exit is one for bollard) is read from the output too.
            while waits.next().await.is_some() {}
        })
        .await;
        if waited.is_err() {
            return Err(ProbeError::Timeout { endpoint });
        }
        let mut output: Vec<u8> = Vec::new();
        self.logs(id, false, "all", |stream, bytes| {
            if stream == crate::facts::container::OutputStream::Stdout && output.len() < OUTPUT_CAP
            {
                let room = OUTPUT_CAP - output.len();
                output.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Ok(())
        })
        .await
        .map_err(|source| ProbeError::Engine {
            endpoint: endpoint.clone(),
            source,
        })?;
        smi::parse_probe(&String::from_utf8_lossy(&output)).map_err(|source| {
            ProbeError::Unreadable {
                endpoint,
                image: image.to_string(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_that_cannot_run_nvidia_smi_is_told_to_keep_a_cuda_image() {
        let unreadable = |status: &str| ProbeError::Unreadable {
            endpoint: "ssh://gpu1".into(),
            image: "alpine:3".into(),
            source: SmiError::Failed {
                what: "list the GPUs",
                status: status.into(),
                said: "sh: nvidia-smi: not found".into(),
            },
        };
        let hint = unreadable("127").hint().unwrap();
        assert!(hint.contains("glibc"), "{hint}");
        assert!(
            hint.contains("docker -H ssh://gpu1 pull nvidia/cuda"),
            "{hint}"
        );
        let other = unreadable("9").hint().unwrap();
        assert!(!other.contains("glibc"), "{other}");
    }

    #[test]
    fn the_script_asks_for_what_the_parser_reads() {
        let script = script();
        assert!(script.contains(&format!("--query-gpu={}", smi::GPU_FIELDS)));
        assert!(script.contains(&format!("--query-compute-apps={}", smi::APP_FIELDS)));
        assert!(script.contains(&format!("echo '{} end'", smi::MARKER)));
    }
}
