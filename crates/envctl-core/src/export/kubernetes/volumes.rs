//! The pod's volumes and the container's mounts: `/dev/shm` as a memory `emptyDir` (a
//! pod's own is 64 MiB, the PyTorch DataLoader "bus error"), bind sources as `hostPath`
//! or PersistentVolumeClaims, named volumes always as claims.

use std::collections::BTreeMap;

use super::labels::Identity;
use super::names::{Names, Renamed, volume_text};
use super::objects::{
    EmptyDirVolumeSource, HostPathVolumeSource, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, Volume, VolumeMount, VolumeResourceRequirements,
};
use super::resources::binary_quantity;
use super::{DEFAULT_CLAIM_SIZE, Notices, SHM_VOLUME, VolumeMode};
use crate::export::view::{BodyView, MountSource, MountView};
use crate::export::{BindSource, ExportError, ExportInput, path_text};

/// The pod's volumes, the container's mounts of them, and the claims they need.
#[derive(Debug, Default)]
pub(super) struct Storage {
    pub(super) volumes: Vec<Volume>,
    pub(super) volume_mounts: Vec<VolumeMount>,
    pub(super) claims: Vec<PersistentVolumeClaim>,
}

/// `/dev/shm` first, then the profile's mounts in order.
pub(super) fn storage(
    view: &BodyView<'_>,
    input: &ExportInput<'_>,
    mode: VolumeMode,
    identity: &Identity,
    notices: &mut Notices,
) -> Result<Storage, ExportError> {
    let mut builder = Builder::new(identity);
    builder.shared_memory(view, notices);
    for mount in &view.mounts {
        builder.mount(mount, input, mode, notices)?;
    }
    builder.summarize(notices);
    Ok(builder.storage)
}

/// What the mounts made so far, and the names they hold.
struct Builder<'a> {
    identity: &'a Identity,
    storage: Storage,
    /// Volume names within the pod: one per mount target.
    volume_names: Names,
    /// Claim names within the namespace: one per bind mount or named volume.
    claim_names: Names,
    /// The hostPath volumes' paths, for the notice.
    host_paths: Vec<String>,
    /// The bind sources that became claims, as written (absolute ones cleaned).
    claimed_binds: Vec<String>,
    /// The named volumes that became claims.
    claimed_volumes: Vec<String>,
}

impl<'a> Builder<'a> {
    fn new(identity: &'a Identity) -> Self {
        let mut volume_names = Names::default();
        volume_names.reserve(SHM_VOLUME);
        Builder {
            identity,
            storage: Storage::default(),
            volume_names,
            claim_names: Names::default(),
            host_paths: Vec::new(),
            claimed_binds: Vec::new(),
            claimed_volumes: Vec::new(),
        }
    }

    /// The body's `ShmSize` as a memory `emptyDir`; with the host's IPC the pod uses the
    /// node's `/dev/shm`. A memory-backed `emptyDir` counts against the container's memory
    /// limit, so a size above the limit could never be used: it is cut to the limit, and
    /// said.
    fn shared_memory(&mut self, view: &BodyView<'_>, notices: &mut Notices) {
        let Some(mut shm) = view.shm_size else {
            return;
        };
        if view.host_ipc() {
            return;
        }
        if let Some(memory) = view.memory
            && shm > memory
        {
            notices.add(
                "shm_size",
                format!(
                    "/dev/shm is a memory emptyDir, which counts against the container's {} memory limit: its sizeLimit is {} instead of {}",
                    binary_quantity(memory),
                    binary_quantity(memory),
                    binary_quantity(shm)
                ),
            );
            shm = memory;
        }
        self.storage.volumes.push(Volume {
            empty_dir: Some(EmptyDirVolumeSource {
                medium: "Memory".into(),
                size_limit: binary_quantity(shm),
            }),
            ..Volume::named(SHM_VOLUME)
        });
        self.storage.volume_mounts.push(VolumeMount {
            name: SHM_VOLUME.into(),
            mount_path: "/dev/shm".into(),
            read_only: None,
        });
    }

    fn mount(
        &mut self,
        mount: &MountView<'_>,
        input: &ExportInput<'_>,
        mode: VolumeMode,
        notices: &mut Notices,
    ) -> Result<(), ExportError> {
        let what = match mount.source {
            MountSource::Volume => format!("the named volume `{}`", mount.written),
            MountSource::Bind(_) => {
                format!("the bind mount `{}:{}`", mount.written, mount.target)
            }
        };
        let volume_name = self.volume_names.unique(volume_text(mount.target), &what).0;
        let mut renamed_claim = |claim: &str, renamed: Option<Renamed>| {
            if let Some(renamed) = renamed {
                let object = format!("the PersistentVolumeClaim for {what}");
                notices.add(
                    &format!("mounts.{}", mount.target),
                    renamed.message(&object, claim),
                );
            }
        };
        let volume = match &mount.source {
            MountSource::Volume => {
                // The same named volume mounted twice is one volume, so one claim.
                let (claim, renamed) = self.claim_names.shared(mount.written, &what);
                renamed_claim(&claim, renamed);
                if !self.has_claim(&claim) {
                    self.claimed_volumes.push(mount.written.to_string());
                    self.add_claim(&claim);
                }
                claim_source(&claim, &volume_name)
            }
            MountSource::Bind(source) => {
                let source = source.clone()?;
                match mode {
                    VolumeMode::HostPath => self.host_path(source, mount, input, &volume_name)?,
                    VolumeMode::Pvc => {
                        self.claimed_binds
                            .push(claimed_bind_text(&source, mount, input)?);
                        // `envctl-PROFILE-VOLUME`, from the whole container name: the
                        // hash of a long one differs per mount.
                        let text = format!("{}-{volume_name}", self.identity.container);
                        let (claim, renamed) = self.claim_names.unique(&text, &what);
                        renamed_claim(&claim, renamed);
                        self.add_claim(&claim);
                        claim_source(&claim, &volume_name)
                    }
                }
            }
        };
        self.storage.volumes.push(volume);
        self.storage.volume_mounts.push(VolumeMount {
            name: volume_name,
            mount_path: mount.target.to_string(),
            read_only: mount.read_only.then_some(true),
        });
        Ok(())
    }

    /// A bind source as this machine's path; `type` says `File` or `Directory`, so a
    /// missing source fails the pod instead of being created empty, as `up` refuses it.
    fn host_path(
        &mut self,
        source: BindSource,
        mount: &MountView<'_>,
        input: &ExportInput<'_>,
        volume_name: &str,
    ) -> Result<Volume, ExportError> {
        let path = source.path(input, mount.written)?;
        let path_text = path_text(&path)?;
        self.host_paths.push(path_text.clone());
        let kind = if (input.path_is_file)(&path) {
            "File"
        } else {
            "Directory"
        };
        Ok(Volume {
            host_path: Some(HostPathVolumeSource {
                path: path_text,
                type_: kind.into(),
            }),
            ..Volume::named(volume_name)
        })
    }

    fn has_claim(&self, claim: &str) -> bool {
        self.storage
            .claims
            .iter()
            .any(|object| object.metadata.name.as_deref() == Some(claim))
    }

    fn add_claim(&mut self, claim: &str) {
        let object = claim_object(self.identity, claim);
        self.storage.claims.push(object);
    }

    /// What the export did with bind sources and named volumes, one notice each.
    fn summarize(&self, notices: &mut Notices) {
        if !self.host_paths.is_empty() {
            notices.add(
                "mounts",
                format!(
                    "bind mounts become hostPath volumes of this machine's paths ({}): they must exist on the node that runs the pod; `--volumes pvc` writes PersistentVolumeClaims instead",
                    self.host_paths.join(", ")
                ),
            );
        }
        for (sources, what) in [
            (&self.claimed_binds, "bind sources"),
            (&self.claimed_volumes, "named volumes"),
        ] {
            if !sources.is_empty() {
                notices.add(
                    "mounts",
                    format!(
                        "{what} ({}) become PersistentVolumeClaims of {DEFAULT_CLAIM_SIZE} each; their data is not copied into them, and their size is a guess (`resources.requests.storage`)",
                        sources.join(", ")
                    ),
                );
            }
        }
    }
}

/// A bind source that became a claim, for the notice: relative and `~` sources as
/// written, absolute ones cleaned.
fn claimed_bind_text(
    source: &BindSource,
    mount: &MountView<'_>,
    input: &ExportInput<'_>,
) -> Result<String, ExportError> {
    let path = source.path(input, mount.written)?;
    Ok(match source {
        BindSource::Relative(_) | BindSource::Home { .. } => mount.written.to_string(),
        BindSource::Absolute(_) => path_text(&path)?,
    })
}

fn claim_object(identity: &Identity, claim: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim::claim(
        identity.object_metadata(claim),
        PersistentVolumeClaimSpec {
            access_modes: vec!["ReadWriteOnce".into()],
            resources: VolumeResourceRequirements {
                requests: BTreeMap::from([("storage".to_string(), DEFAULT_CLAIM_SIZE.into())]),
            },
        },
    )
}

fn claim_source(claim: &str, volume_name: &str) -> Volume {
    Volume {
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.to_string(),
        }),
        ..Volume::named(volume_name)
    }
}
