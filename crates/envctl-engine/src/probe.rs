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
//! CUDA images, built on glibc), else the smallest image whose config declares CUDA
//! (`CUDA_VERSION`, `NVIDIA_REQUIRE_CUDA`, set by every CUDA base image). Without one, or
//! on a daemon whose toolkit gives containers no GPUs, [`ProbeError`] says why with the
//! command that helps.
//!
//! The container carries [`PROBE_LABEL`] and is always removed, whatever happened: where a
//! second connection is cheap (a socket, TCP, TLS) its output is attached before its start
//! and the daemon removes it once it ends (`AutoRemove`), so neither a wait, its logs nor
//! its removal is asked; over ssh (where an attach is another `ssh`) this envctl waits for
//! it, reads its logs and removes it. A probe whose envctl was killed while it ran is
//! removed by the daemon when it ends (attached) or left behind (over ssh, or killed
//! between its create and its start), and the next
//! probe of the daemon, from any machine, removes it: every probe container created more
//! than [`SWEEP_AFTER`] before its own (by the daemon's clock, so the clients' clocks need
//! not agree), whatever its state. Never a younger one, which a live envctl may be reading
//! the answer of right now (a stopped probe is one whose answer is being read), and never
//! a container without the label, or whose label its image gave it ([`Engine::is_probe`]:
//! each probe's value is its own).

use std::time::Duration;

use futures_util::StreamExt;

use super::{Engine, EngineError};
use envctl_facts::smi::{self, ServerGpus, SmiError};

/// The label of a probe container (`envctl ps` never lists it; a sweep may remove it).
pub const PROBE_LABEL: &str = "envctl.probe";

/// The longest a probe may run from its start to its exit: nvidia-smi answers in about a
/// second on a healthy machine (a few without persistence mode), a hung driver must not
/// hang the client, and `up` probes under the daemon's placement lock, which a holder
/// gives back 20 s after taking it (`ops::placement`).
pub const PROBE_DEADLINE: Duration = Duration::from_secs(15);

/// How long after its creation a probe container may still be a live envctl's: its owner
/// starts it at once, waits at most [`PROBE_DEADLINE`] for it, reads its answer and
/// removes it; fifteen seconds more cover the start, the read and the removal on a loaded
/// daemon. Older, its owner is gone (or gave up on it, and removes it too).
pub const SWEEP_AFTER: Duration = Duration::from_secs(PROBE_DEADLINE.as_secs() + 15);

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
/// nvidia-smi runs three times (each run initialises NVML, seconds on a GPU without
/// persistence mode): the GPUs, the compute processes (whose pids, first field after the
/// UUID, name the cgroups read), and `-q` for the CUDA version.
fn script() -> String {
    let m = smi::MARKER;
    let gpu_fields = smi::GPU_FIELDS;
    let app_fields = smi::APP_FIELDS;
    format!(
        "PATH=/usr/bin:/usr/local/nvidia/bin:/bin:/usr/sbin:/sbin:$PATH\n\
         echo '{m} gpus'; nvidia-smi --query-gpu={gpu_fields} --format=csv,noheader,nounits 2>&1; echo \"{m} status gpus $?\"\n\
         echo '{m} apps'; apps=$(nvidia-smi --query-compute-apps={app_fields} --format=csv,noheader,nounits 2>&1); apps_status=$?\n\
         [ -n \"$apps\" ] && printf '%s\\n' \"$apps\"; echo \"{m} status apps $apps_status\"\n\
         echo '{m} query'; nvidia-smi -q -d COMPUTE 2>&1 | head -n 30\n\
         [ \"$apps_status\" = 0 ] && printf '%s\\n' \"$apps\" | while IFS=', ' read -r uuid pid rest; do\n\
           case \"$pid\" in *[!0-9]*|'') continue ;; esac\n\
           echo \"{m} cgroup $pid\"; head -c 4096 \"/proc/$pid/cgroup\" 2>/dev/null; echo\n\
         done\n\
         echo '{m} end'\n"
    )
}

impl Engine {
    /// The image the probe runs in: the first of `wanted` present on the daemon, else the
    /// smallest there whose config declares CUDA.
    pub async fn probe_image(&self, wanted: &[String]) -> Result<String, ProbeError> {
        let engine_error = |source| ProbeError::Engine {
            endpoint: envctl_core::secret::masked_url(self.endpoint()).into_owned(),
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
        let mut listed = self
            .with_deadline(
                "listing images",
                self.answer_deadline(),
                self.docker
                    .list_images(None::<bollard::query_parameters::ListImagesOptions>),
            )
            .await
            .map_err(engine_error)?
            .map_err(|error| engine_error(self.classify(error)))?;
        // The smallest first: the first that declares CUDA is then the smallest that does,
        // found with no more inspects, and the cheapest to create where the storage
        // driver copies an image's files for each container (vfs).
        listed.sort_by_key(|image| image.size);
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
            endpoint: envctl_core::secret::masked_url(self.endpoint()).into_owned(),
            wanted: wanted.to_vec(),
        })
    }

    /// Runs the probe in `image` and reads its answer. The container is removed whatever
    /// happens: by the daemon itself once it exits (`AutoRemove`) where this envctl reads
    /// its output attached, else by this envctl after reading its logs.
    pub async fn probe_gpus(&self, image: &str) -> Result<ServerGpus, ProbeError> {
        let endpoint = envctl_core::secret::masked_url(self.endpoint()).into_owned();
        let attached = attaches(self.endpoint());
        let body = serde_json::json!({
            "Image": image,
            "Entrypoint": ["/bin/sh", "-c"],
            "Cmd": [script()],
            "User": "0",
            "Env": ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility"],
            "Labels": { PROBE_LABEL: probe_value() },
            "HostConfig": {
                "PidMode": "host",
                "NetworkMode": "none",
                "AutoRemove": attached,
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
        let ran = if attached {
            self.run_attached(&id, image).await
        } else {
            self.sweep_probes(&id).await;
            self.run_probe(&id, image).await
        };
        // Removed whatever happened; a removal that fails leaves a labelled container that
        // the next probe's owner can find, and the probe's own answer still stands. An
        // attached probe that ran to its end is the daemon's to remove (it may be gone).
        if !attached || ran.is_err() {
            let _ = self.remove_container(&id, true, false).await;
        }
        ran
    }

    /// Removes the probe containers left behind ([`left_behind`]), judged against the
    /// creation time of this run's own probe `own` (the daemon's clock). A courtesy to the
    /// daemon, never a condition of this probe: a list or removal that fails (another
    /// client sweeping the same container at once) leaves it to the next probe.
    async fn sweep_probes(&self, own: &str) {
        let Ok(listed) = self.list_raw(true, Some(PROBE_LABEL)).await else {
            return;
        };
        let mut probes: Vec<(String, i64)> = Vec::new();
        for container in listed {
            if container.id == own || self.is_probe(&container).await {
                probes.push((container.id, container.created));
            }
        }
        for id in left_behind(&probes, own) {
            let _ = self.remove_container(&id, true, false).await;
        }
    }

    /// Whether the listed container is a probe of envctl's: it carries [`PROBE_LABEL`], on
    /// no profile's container, with a value its image does not give it (each probe's value
    /// is its own, [`probe_value`]; an image built with the label, or committed from a
    /// probe, gives its containers only the image's). An image that cannot be read proves
    /// nothing: not a probe.
    pub(crate) async fn is_probe(&self, container: &super::list::Listed) -> bool {
        let Some(value) = container.labels.get(PROBE_LABEL) else {
            return false;
        };
        if container
            .labels
            .contains_key(envctl_core::container_plan::PROFILE_LABEL)
        {
            return false;
        }
        match self.image_labels(&container.image_id).await {
            Ok(Some(image)) => image.get(PROBE_LABEL) != Some(value),
            // The image is gone: nothing could have given the label but the create.
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Starts the probe `id` with its output attached first (so none of it is missed,
    /// however fast it runs) and reads that output to its end, when the process exited
    /// and the daemon removes the container (`AutoRemove`): no wait, no logs, no removal
    /// asked. The sweep of probes left behind runs meanwhile.
    async fn run_attached(&self, id: &str, image: &str) -> Result<ServerGpus, ProbeError> {
        let endpoint = envctl_core::secret::masked_url(self.endpoint()).into_owned();
        let engine_error = |source| ProbeError::Engine {
            endpoint: endpoint.clone(),
            source,
        };
        let options = bollard::query_parameters::AttachContainerOptionsBuilder::new()
            .stdout(true)
            .stderr(false)
            .stream(true)
            .logs(false)
            .build();
        let mut attached = self
            .short_answer(
                "attaching to the GPU probe's output",
                self.docker.attach_container(id, Some(options)),
            )
            .await
            .map_err(engine_error)?;
        self.start_probe(id).await?;
        let read = async {
            let mut output: Vec<u8> = Vec::new();
            while let Some(chunk) = attached.output.next().await {
                let bytes = match chunk.map_err(|error| engine_error(self.classify(error)))? {
                    bollard::container::LogOutput::StdOut { message }
                    | bollard::container::LogOutput::Console { message } => message,
                    _ => continue,
                };
                if output.len() < OUTPUT_CAP {
                    let room = OUTPUT_CAP - output.len();
                    output.extend_from_slice(&bytes[..bytes.len().min(room)]);
                }
            }
            Ok::<_, ProbeError>(output)
        };
        let (_, read) = tokio::join!(
            self.sweep_probes(id),
            tokio::time::timeout(PROBE_DEADLINE, read)
        );
        let output = match read {
            Ok(output) => output?,
            Err(_) => return Err(ProbeError::Timeout { endpoint }),
        };
        smi::parse_probe(&String::from_utf8_lossy(&output)).map_err(|source| {
            ProbeError::Unreadable {
                endpoint,
                image: image.to_string(),
                source,
            }
        })
    }

    /// Starts the probe `id`; a daemon whose toolkit gives no GPUs is said as that.
    async fn start_probe(&self, id: &str) -> Result<(), ProbeError> {
        let endpoint = || envctl_core::secret::masked_url(self.endpoint()).into_owned();
        match self.start_container(id).await {
            Ok(()) => Ok(()),
            Err(
                source @ EngineError::StartRefused {
                    refusal: super::error::StartRefusal::NoGpuDriver,
                    ..
                },
            ) => Err(ProbeError::NoGpuDriver {
                endpoint: endpoint(),
                source,
            }),
            Err(source) => Err(ProbeError::Engine {
                endpoint: endpoint(),
                source,
            }),
        }
    }

    async fn run_probe(&self, id: &str, image: &str) -> Result<ServerGpus, ProbeError> {
        let endpoint = envctl_core::secret::masked_url(self.endpoint()).into_owned();
        self.start_probe(id).await?;
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
            if stream == envctl_facts::container::OutputStream::Stdout && output.len() < OUTPUT_CAP
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

/// Whether the probe reads its output attached (the daemon then removes it): where a
/// second connection is cheap (a socket, TCP, TLS). An attach takes a connection of its
/// own, which over ssh is another `ssh` and its handshake (~0.4 s, more than the three
/// requests it saves), so there the probe is waited for, its logs read and it is removed
/// on the one connection the command keeps.
fn attaches(endpoint: &str) -> bool {
    !endpoint.starts_with("ssh://")
}

/// This probe's value of [`PROBE_LABEL`]: the process id and 64 random bits, so that no
/// image can carry it before the probe is made ([`Engine::is_probe`]).
fn probe_value() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the operating system's randomness.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{}-{random:016x}", std::process::id())
}

/// The probes among `probes` (id, creation time in Unix seconds, as the daemon lists them)
/// created more than [`SWEEP_AFTER`] before `own`, this run's probe, whose creation time is
/// the daemon's "now". Nothing when `own` is not among them (no clock to judge by).
fn left_behind(probes: &[(String, i64)], own: &str) -> Vec<String> {
    let Some(now) = probes
        .iter()
        .find(|(id, _)| id == own)
        .map(|(_, created)| *created)
    else {
        return Vec::new();
    };
    let bound = i64::try_from(SWEEP_AFTER.as_secs()).unwrap_or(i64::MAX);
    probes
        .iter()
        .filter(|(id, created)| id != own && now.saturating_sub(*created) > bound)
        .map(|(id, _)| id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_probes_older_than_the_sweep_bound_by_the_daemons_clock_are_left_behind() {
        let probes = |list: &[(&str, i64)]| -> Vec<(String, i64)> {
            list.iter()
                .map(|(id, created)| (id.to_string(), *created))
                .collect()
        };
        let after = i64::try_from(SWEEP_AFTER.as_secs()).unwrap();
        let now = 1_800_000_000;
        let listed = probes(&[
            ("old", now - after - 1),
            ("at-the-bound", now - after),
            ("young", now - 2),
            ("own", now),
            // Created after this run's own: another client's, in use.
            ("future", now + 60),
        ]);
        assert_eq!(left_behind(&listed, "own"), ["old"]);
        // Without this run's own probe in the list there is no "now" to judge by.
        assert!(left_behind(&listed, "missing").is_empty());
        assert!(SWEEP_AFTER > PROBE_DEADLINE);
    }

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
