//! Profile → Docker Engine API container-create body, and the `docker run` line that makes
//! the same container. Pure: no bollard (only `engine/` talks to Docker), no file system
//! (whether a bind source exists is asked through [`SpecContext::path_exists`]).
//!
//! `engine/` serialises a [`CreateBody`] with serde and sends it as `POST /containers/create`;
//! `up --dry-run` and `export --to docker-run` print [`docker_run_line`]. Both describe one
//! container: `tests/it/spec_equivalence.rs` creates it both ways on a real daemon and compares
//! `docker inspect` field by field.
//!
//! # What envctl decides for the user
//!
//! - **Command.** The profile's `command` replaces the image's `CMD` (its `ENTRYPOINT`
//!   stays), as `docker run IMAGE COMMAND…`. Without one the container must stay up for
//!   `exec` and `shell`: [`KEEP_ALIVE_COMMAND`] (`sleep infinity`, which both busybox and
//!   coreutils understand) with `Init: true`, so docker-init is PID 1, forwards
//!   `docker stop`'s SIGTERM and the container stops at once instead of after the 10 s
//!   kill timeout.
//! - **GPUs.** `DeviceRequests` exactly as `docker run --gpus` sends them: `all` →
//!   `Count: -1`; `N` → `Count: N` (the first N GPUs); a list → `DeviceIDs` with `Count: 0`;
//!   always `Driver: ""`, `Capabilities: [["gpu"]]`, `Options: {}`. `optional` is `all` on a
//!   host with GPUs and no request elsewhere. With a request, `CUDA_DEVICE_ORDER=PCI_BUS_ID`
//!   is added unless the profile sets it, so CUDA and nvidia-smi number GPUs alike.
//! - **Shared memory.** The profile's `shm_size`, else [`DEFAULT_SHM_SIZE`] (8 GiB) when the
//!   image is PyTorch or GPUs are requested and `ipc` is not `host` — PyTorch DataLoader
//!   workers pass batches through `/dev/shm`, and Docker's 64 MiB makes them die with "bus
//!   error". Otherwise `ShmSize` is omitted: Docker's own default. With `ipc = "host"` the
//!   host's `/dev/shm` is used and Docker ignores `ShmSize`.
//! - **Ports.** Published on the profile's host IP, which the profile parser already made
//!   127.0.0.1 unless the profile wrote one. A range becomes one `PortBindings` entry per
//!   port, as the docker CLI expands it; every published port is in `ExposedPorts`.
//! - **Mounts** go in `HostConfig.Mounts` (`--mount`), never in `Binds`. Bind sources
//!   written `./x` or `../x` resolve against the working directory, `~/x` against the home
//!   folder, and are cleaned lexically. A **missing bind source is refused before anything
//!   is created**, naming every missing path with a `mkdir -p` hint: `docker run -v` would
//!   silently create an empty root-owned folder on the host (and the container would see
//!   no data), and `--mount` fails only at create. Named volumes are made by `up` before
//!   the container, labelled ([`volumes::named_volumes`]); one that exists is left as it is.
//! - **Labels**: [`PROFILE_LABEL`] and [`CONFIG_HASH_LABEL`] (and [`PROFILE_HASH_LABEL`]
//!   with overrides); nothing that differs between two runs of the same profile (no time,
//!   no user, no host). `up` adds [`PROFILE_FILE_LABEL`] (where the profile file lies) to
//!   the container it creates, outside the body.
//! - **Restart policy** `no`, as `docker run` without `--restart`: envctl starts
//!   environments on request; a reboot does not bring them back behind the user's back.
//! - **Overrides** (`up -e/-p/-v`, [`Overrides`]) are applied on top of the profile; the
//!   config-hash label then hashes the overridden profile, so `up` can tell the containers
//!   apart, and the profile-hash label keeps the plain profile's hash, so `ps` can tell
//!   whether the profile itself changed since.

mod body;
mod docker_run;
pub mod drift;
mod error;
pub mod free_ports;
pub mod gpu_path;
pub mod gpus;
mod mapping;
pub mod origin;
mod overrides;
pub mod ownership;
pub mod placement;
pub mod slurm;
mod sources;
pub mod volumes;

#[cfg(test)]
mod tests;

pub use body::{
    CreateBody, DeviceMapping, DeviceRequest, EmptyObject, HostConfig, Mount, MountType,
    PortBinding, RestartPolicy, Ulimit,
};
pub use docker_run::{
    device_flag, docker_run_arguments, docker_run_line, gpus_flag, mount_value, shell_quote,
};
pub use error::{MissingSource, SpecError};
pub use mapping::{SpecContext, create_body, device_requests, shm_size};
pub use overrides::Overrides;
pub use ownership::{RUN_LABEL, UID_LABEL};
pub use sources::{clean, resolve_bind_source};

/// The GPUs `up` gave the container (`all`, `count=N`, `devices=GPU-…,…`), beside its
/// `DeviceRequests` in the same create: GPU placement reads holders from the container
/// list instead of inspecting each of envctl's containers.
pub const GPUS_LABEL: &str = "envctl.gpus";

/// The label naming the profile a container was made from.
pub const PROFILE_LABEL: &str = "envctl.profile";
/// The label holding the hash of the resolved profile (with overrides) it was made from.
pub const CONFIG_HASH_LABEL: &str = "envctl.config-hash";
/// With overrides only: the hash of the profile without them, for `ps`'s drift column.
pub const PROFILE_HASH_LABEL: &str = "envctl.profile-hash";
/// The absolute path of the profile file a container was made from (none for a bundled
/// profile): `exec NAME` reads the named commands from there, so a profile given as a path
/// (`up ./x.toml`) keeps its `[commands]`. Added by `up` at create only, never part of the
/// create body: a host path has no place in `--dry-run`, an export or the config hash.
pub const PROFILE_FILE_LABEL: &str = "envctl.profile-file";
/// The login name of who ran `up` (the host policy's per-user limits); on the container only.
pub const USER_LABEL: &str = "envctl.user";
/// Written by the compose and devcontainer exports (`compose`, `devcontainer`), never by
/// `up`: a container started by another tool from an export is told apart from `up`'s own,
/// so `ps` shows where it came from and `up` does not make a second one beside it.
pub const ORIGIN_LABEL: &str = "envctl.origin";
/// `/dev/shm` for PyTorch and GPU containers whose profile sets no `shm_size`: 8 GiB.
pub const DEFAULT_SHM_SIZE: u64 = 8 << 30;
/// The command of a profile without one: keeps the container up for `exec` and `shell`.
pub const KEEP_ALIVE_COMMAND: [&str; 2] = ["sleep", "infinity"];
/// Added to the environment whenever GPUs are requested, unless the profile sets it.
pub const CUDA_DEVICE_ORDER: (&str, &str) = ("CUDA_DEVICE_ORDER", "PCI_BUS_ID");

/// The value of [`PROFILE_FILE_LABEL`] for a profile: its file made absolute against the
/// working directory and cleaned lexically; `None` for a bundled profile (no file).
pub fn profile_file_label(
    resolved: &crate::profile::ResolvedProfile,
    working_directory: &std::path::Path,
) -> Option<String> {
    if resolved.source == crate::profile::SourceKind::Bundled {
        return None;
    }
    Some(
        clean(&working_directory.join(&resolved.file))
            .display()
            .to_string(),
    )
}

/// The default container name of a profile: `envctl-<profile>`.
pub fn container_name(profile_name: &str) -> String {
    format!("envctl-{profile_name}")
}
