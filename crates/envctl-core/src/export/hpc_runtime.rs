//! What the unprivileged container runtimes of HPC clusters (pyxis/enroot, Apptainer, a
//! CSCS environment definition) share, and what none of them can carry of a profile. They
//! run the image as the calling user in the job's own cgroup, with the host's network,
//! `/dev` and `/dev/shm`: no published ports (the processes listen on the node itself),
//! no `shm_size` (the node's `/dev/shm`, counted in the job's memory), no named volumes
//! (only host paths are bound), no added capabilities, no user, IPC mode, ulimits or
//! hostname of their own. GPUs follow Slurm's allocation, never ids from the profile.

use super::view::{BodyView, MountSource};
use super::{BindSource, Notice, Target, path_text};
use crate::container_plan::shell_quote;

/// One bind mount a runtime can take: the source as a shell word (`"${HOME}"'/cache'` for
/// `~/cache`, so it is the job user's home) and as text for a file, the target, read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bind {
    pub(super) source_word: String,
    pub(super) source_text: String,
    pub(super) target: String,
    pub(super) read_only: bool,
}

/// The profile's bind mounts as absolute paths; named volumes, and paths holding the
/// runtimes' separators (`,` between entries, `:` between parts), become notices.
pub(super) fn binds(
    view: &BodyView<'_>,
    target: Target,
    notices: &mut Vec<Notice>,
) -> Result<Vec<Bind>, crate::container_plan::SpecError> {
    let mut binds = Vec::new();
    for mount in &view.mounts {
        let source = match &mount.source {
            MountSource::Volume => {
                notices.push(Notice::new(
                    target,
                    format!("mounts.{}", mount.target),
                    format!(
                        "`{target}` mounts host paths only: the named volume `{}` is not mounted; bind a folder on shared storage instead",
                        mount.written
                    ),
                ));
                continue;
            }
            MountSource::Bind(source) => source.clone()?,
        };
        let (source_word, source_text) = match &source {
            BindSource::Home { rest } => {
                let rest = if rest.is_empty() {
                    String::new()
                } else {
                    format!("/{rest}")
                };
                (
                    format!("\"${{HOME}}\"{}", quoted_or_nothing(&rest)),
                    format!("${{HOME}}{rest}"),
                )
            }
            BindSource::Absolute(path) | BindSource::Relative(path) => {
                let text = path_text(path)?;
                (shell_quote(&text), text)
            }
        };
        if [source_text.as_str(), mount.target]
            .iter()
            .any(|part| part.contains([',', ':']))
        {
            notices.push(Notice::new(
                target,
                format!("mounts.{}", mount.target),
                format!(
                    "`{}` holds `,` or `:`, which `{target}` reads as separators: not mounted; bind it from a path without them",
                    mount.written
                ),
            ));
            continue;
        }
        binds.push(Bind {
            source_word,
            source_text,
            target: mount.target.to_string(),
            read_only: mount.read_only,
        });
    }
    Ok(binds)
}

fn quoted_or_nothing(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        shell_quote(text)
    }
}

/// Whether a variable name can be exported by a POSIX shell.
pub(super) fn is_shell_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The notices every such runtime shares (see the module doc).
pub(super) fn runtime_notices(view: &BodyView<'_>, target: Target, notices: &mut Vec<Notice>) {
    let mut add = |setting: &str, message: String| {
        notices.push(Notice::new(target, setting, message));
    };
    if !view.ports.is_empty() {
        add(
            "ports",
            format!(
                "`{target}` publishes no ports: the processes share the node's network and listen on its addresses ({} are not mapped)",
                view.written_ports().join(", ")
            ),
        );
    }
    if let Some(shm) = view.shm_size {
        add(
            "shm_size",
            format!(
                "`{target}` has no `/dev/shm` size: the container uses the node's /dev/shm, counted in the job's memory ({} not set)",
                crate::profile::size::ByteSize(shm)
            ),
        );
    }
    if let Some(user) = view.user {
        add(
            "user",
            format!("`{target}` runs as the user who submits the job: `{user}` is not set"),
        );
    }
    if view.ipc_mode.is_some() {
        add(
            "ipc",
            format!("`{target}` shares the node's IPC namespace: `ipc` is not set"),
        );
    }
    if !view.ulimits.is_empty() {
        add(
            "ulimits",
            format!(
                "`{target}` keeps the job's limits (Slurm's `--propagate`): {} are not set",
                view.written_ulimits().join(", ")
            ),
        );
    }
    if !view.cap_add.is_empty() {
        add(
            "cap_add",
            format!(
                "`{target}` runs unprivileged and adds no capabilities ({}); RDMA needs the node's `memlock` limit raised instead",
                view.capability_names().join(", ")
            ),
        );
    }
    if let Some(network) = view.network_mode.filter(|network| *network != "host") {
        add(
            "network",
            format!("`{target}` uses the node's network: `network = \"{network}\"` is not kept"),
        );
    }
    if view.hostname.is_some() {
        add("hostname", format!("`{target}` keeps the node's hostname"));
    }
}

/// Whether the image reference carries a digest.
pub(super) fn is_pinned(image: &str) -> bool {
    image.contains("@sha256:")
}
