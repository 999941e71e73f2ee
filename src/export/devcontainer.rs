//! `export --to devcontainer`: a devcontainer.json (VS Code Dev Containers, the
//! devcontainer CLI, Codespaces) for an image-based dev container like `up`'s.
//!
//! - **GPUs** — `gpus = "all"` is `hostRequirements.gpu: true`, which the tools turn into
//!   `--gpus all` when the host has the NVIDIA runtime; `"optional"` is the spec's own
//!   `"optional"`. A count or a list of ids goes in `runArgs` (`--gpus 2`, `--gpus
//!   "device=0,1"`) and `hostRequirements.gpu` is left out, because the tools would add
//!   `--gpus all` next to it (devcontainers/cli `extraRunArgs`).
//! - **Limits** — memory, CPUs, `/dev/shm`, IPC, the working directory and the envctl
//!   labels as `runArgs`, which the tools pass to `docker run`; ulimits too, with a
//!   notice, since the spec has no property for them.
//! - **Mounts** — a bind of the workspace folder itself (the bundled profiles' `./` →
//!   `/workspace`) becomes `workspaceMount` + `workspaceFolder`; other relative sources are
//!   written `${localWorkspaceFolder}/…`, `~` as `${localEnv:HOME}`. The workspace folder
//!   is the folder holding `.devcontainer/` (or `.devcontainer.json`) when the file is
//!   written there, else the output file's folder, or the working directory on stdout.
//! - **Ports** — `appPort` publishes them as `up` does, host IP included; `forwardPorts`
//!   lists the TCP container ports for the tools' own forwarding.
//! - **Command** — not expressible: the tools replace the command with their own
//!   keep-alive (`overrideCommand`). `init: true` is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    BindSource, ExportError, ExportInput, Exported, Notice, Target, bind_source, clean,
    decimal_cpus, path_text, relative_path,
};
use crate::profile::model::{GpuRequest, MountKind, Protocol};
use crate::profile::size::ByteSize;
use crate::spec::{gpus_flag, mount_value};

const TARGET: Target = Target::Devcontainer;
const WORKSPACE_VARIABLE: &str = "${localWorkspaceFolder}";
const HOME_VARIABLE: &str = "${localEnv:HOME}";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DevContainer {
    name: String,
    image: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_mount: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_folder: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    container_env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container_user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    init: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    run_args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mounts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    forward_ports: Vec<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    app_port: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_requirements: Option<Value>,
}

/// The devcontainer.json for `input`'s profile.
pub fn devcontainer(input: &ExportInput<'_>) -> Result<Exported, ExportError> {
    let profile = &input.resolved.profile;
    let body = input.body;
    let host = &body.host_config;
    let mut notices = Vec::new();
    let mut notice = |setting: &str, message: String| {
        notices.push(Notice::new(TARGET, setting, message));
    };

    let mut run_args = Vec::new();
    let mut flag = |name: &str, value: String| {
        run_args.push(name.to_string());
        run_args.push(value);
    };
    for (key, value) in &body.labels {
        flag("--label", format!("{key}={value}"));
    }
    if let Some(workdir) = &body.working_dir {
        flag("--workdir", workdir.clone());
    }
    if let Some(memory) = host.memory.and_then(|bytes| u64::try_from(bytes).ok()) {
        flag("--memory", ByteSize(memory).to_string());
    }
    if let Some(nanos) = host.nano_cpus {
        flag("--cpus", decimal_cpus(nanos));
    }
    if let Some(shm) = host.shm_size.and_then(|bytes| u64::try_from(bytes).ok()) {
        flag("--shm-size", ByteSize(shm).to_string());
    }
    if let Some(ipc) = &host.ipc_mode {
        flag("--ipc", ipc.clone());
    }
    for limit in &host.ulimits {
        flag(
            "--ulimit",
            format!("{}={}:{}", limit.name, limit.soft, limit.hard),
        );
    }
    if !host.ulimits.is_empty() {
        notice(
            "ulimits",
            "devcontainer.json has no ulimits property: they are `--ulimit` runArgs, which only Docker-based tools apply".into(),
        );
    }

    let gpu_requirement = match &profile.gpus {
        GpuRequest::All => Some(json!(true)),
        GpuRequest::Optional => Some(json!("optional")),
        GpuRequest::None => None,
        GpuRequest::Count(_) | GpuRequest::Devices(_) => {
            for request in &host.device_requests {
                flag("--gpus", gpus_flag(request));
            }
            if !host.device_requests.is_empty() {
                notice(
                    "gpus",
                    format!(
                        "`gpus = {}` is a `--gpus` runArg; `hostRequirements.gpu` is left out, since the tools would add `--gpus all` next to it",
                        profile.gpus
                    ),
                );
            }
            None
        }
    };
    let host_requirements = gpu_requirement.map(|gpu| json!({ "gpu": gpu }));

    // Mounts.
    let workspace = workspace_folder(input);
    let mut workspace_mount = None;
    let mut workspace_folder_inside = None;
    let mut mounts = Vec::new();
    for mount in &profile.mounts {
        let source = match mount.kind {
            MountKind::Volume => mount.source.clone(),
            MountKind::Bind => match bind_source(mount, input)? {
                BindSource::Home { rest } if rest.is_empty() => HOME_VARIABLE.to_string(),
                BindSource::Home { rest } => format!("{HOME_VARIABLE}/{rest}"),
                BindSource::Absolute(path) => path_text(&path)?,
                BindSource::Relative(path) if path == workspace && workspace_mount.is_none() => {
                    workspace_mount = Some(mount_value(
                        "bind",
                        WORKSPACE_VARIABLE,
                        &mount.target,
                        mount.read_only,
                    ));
                    let folder = match &body.working_dir {
                        Some(workdir) if Path::new(workdir).starts_with(&mount.target) => {
                            workdir.clone()
                        }
                        _ => mount.target.clone(),
                    };
                    workspace_folder_inside = Some(folder);
                    continue;
                }
                BindSource::Relative(path) => {
                    let relative = relative_path(&workspace, &path);
                    let relative = path_text(&relative)?;
                    let relative = relative.trim_start_matches("./");
                    if relative == "." {
                        WORKSPACE_VARIABLE.to_string()
                    } else {
                        format!("{WORKSPACE_VARIABLE}/{relative}")
                    }
                }
            },
        };
        let kind = match mount.kind {
            MountKind::Volume => "volume",
            MountKind::Bind => "bind",
        };
        mounts.push(mount_value(kind, &source, &mount.target, mount.read_only));
    }
    if workspace_mount.is_none() {
        notice(
            "mounts",
            "no mount of the profile is the workspace folder, so the tools add their own at /workspaces/<folder>, which `up` does not".into(),
        );
    }

    // Ports.
    let app_port: Vec<String> = profile.ports.iter().map(ToString::to_string).collect();
    let mut forward_ports: Vec<u16> = profile
        .ports
        .iter()
        .filter(|port| port.protocol == Protocol::Tcp)
        .flat_map(|port| port.container.start..=port.container.end)
        .collect();
    forward_ports.sort_unstable();
    forward_ports.dedup();

    if let Some(command) = &profile.command {
        notice(
            "command",
            format!(
                "devcontainer.json cannot set the container's command (the tools run their own keep-alive): start `{}` from `postStartCommand` or a terminal",
                command.join(" ")
            ),
        );
    }

    let document = DevContainer {
        name: profile.name.clone(),
        image: body.image.clone(),
        workspace_mount,
        workspace_folder: workspace_folder_inside,
        container_env: super::environment(body).into_iter().collect(),
        container_user: body.user.clone(),
        init: host.init,
        run_args,
        mounts,
        forward_ports,
        app_port,
        host_requirements,
    };
    let text = serde_json::to_string_pretty(&document)
        .map_err(|error| ExportError::serialize(TARGET, error))?;
    Ok(Exported {
        text: format!("{text}\n"),
        notices,
    })
}

/// The folder the tools call `${localWorkspaceFolder}`: the parent of `.devcontainer/`
/// (for `.devcontainer/devcontainer.json` and `.devcontainer/NAME/devcontainer.json`),
/// else the output file's folder (`.devcontainer.json` sits in the workspace), or the
/// working directory for stdout.
fn workspace_folder(input: &ExportInput<'_>) -> PathBuf {
    let Some(file) = &input.output_file else {
        return clean(&input.working_directory);
    };
    let file = clean(&input.working_directory.join(file));
    let is_config_folder =
        |path: &Path| path.file_name().is_some_and(|name| name == ".devcontainer");
    let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
    for folder in parent.ancestors().take(2) {
        if is_config_folder(folder) {
            return folder.parent().map(Path::to_path_buf).unwrap_or_default();
        }
    }
    parent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::DeviceRequest;

    #[test]
    fn gpu_and_mount_arguments() {
        assert_eq!(
            gpus_flag(&DeviceRequest::gpu_devices(vec!["0".into(), "1".into()])),
            "\"device=0,1\""
        );
        assert_eq!(gpus_flag(&DeviceRequest::gpu_count(2)), "2");
        assert_eq!(
            mount_value("bind", "${localWorkspaceFolder}/a,b", "/data", true),
            "type=bind,\"source=${localWorkspaceFolder}/a,b\",target=/data,readonly"
        );
    }
}
