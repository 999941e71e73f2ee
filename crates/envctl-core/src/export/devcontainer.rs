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
//! - **Ports** — `appPort` publishes them as `up` does, host IP included. No
//!   `forwardPorts`: the tools would forward the same ports again onto the host ports
//!   `appPort` already holds, and collide with them.
//! - **Command** — not expressible: the tools replace the command with their own
//!   keep-alive (`overrideCommand`). `init: true` is kept.
//! - **Secrets** — a secret variable (`crate::secret`) is `${localEnv:KEY}` in
//!   `containerEnv`, never its value: the tools read it from the environment they run in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use super::view::{BodyView, Gpus, MountSource};
use super::{
    BindSource, ExportError, ExportInput, Exported, Notice, Target, clean, decimal_cpus, path_text,
    relative_path,
};
use crate::container_plan::origin::Origin;
use crate::container_plan::{ORIGIN_LABEL, gpus_flag, mount_value};
use crate::profile::size::ByteSize;

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
    cap_add: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    run_args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mounts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    app_port: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_requirements: Option<Value>,
}

/// The devcontainer.json for `input`'s profile.
pub fn devcontainer(input: &ExportInput<'_>) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    let mut notice = |setting: &str, message: String| {
        notices.push(Notice::new(TARGET, setting, message));
    };
    let mut run_args = RunArguments::default();
    limit_arguments(&mut run_args, &view, &mut notice);
    let host_requirements =
        gpu_requirement(&mut run_args, &view, &mut notice).map(|gpu| json!({ "gpu": gpu }));
    let mounts = mounts(&view, input, &mut notice)?;
    command_notice(&view, &mut notice);

    let document = DevContainer {
        name: view.profile_name.to_string(),
        image: view.image.to_string(),
        workspace_mount: mounts.workspace_mount,
        workspace_folder: mounts.workspace_folder,
        container_env: container_env(&view, &mut notice),
        container_user: view.user.map(str::to_string),
        init: view.init,
        cap_add: view.capability_names(),
        run_args: run_args.0,
        mounts: mounts.others,
        app_port: view.written_ports(),
        host_requirements,
    };
    let text = serde_json::to_string_pretty(&document)
        .map_err(|error| ExportError::serialize(TARGET, error))?;
    Ok(Exported {
        text: format!("{text}\n"),
        notices,
    })
}

/// `containerEnv`: a secret as `${localEnv:KEY}`, read where the tools run.
fn container_env(
    view: &BodyView<'_>,
    notice: &mut impl FnMut(&str, String),
) -> BTreeMap<String, String> {
    if !view.secrets.is_empty() {
        let them = if view.secrets.len() == 1 {
            "it"
        } else {
            "them"
        };
        notice(
            "env",
            format!(
                "secret values are not written: {} {} `${{localEnv:KEY}}`, read from the environment VS Code or the devcontainer CLI runs in: export {them} there first",
                crate::secret::list(&view.secrets),
                if view.secrets.len() == 1 { "is" } else { "are" },
            ),
        );
    }
    view.environment
        .iter()
        .map(|(key, value)| {
            if view.is_secret(key) {
                (key.clone(), format!("${{localEnv:{key}}}"))
            } else {
                (key.clone(), value.clone())
            }
        })
        .collect()
}

/// `runArgs`, which the tools pass to `docker run`.
#[derive(Debug, Default)]
struct RunArguments(Vec<String>);

impl RunArguments {
    fn flag(&mut self, name: &str, value: String) {
        self.0.push(name.to_string());
        self.0.push(value);
    }
}

/// The labels, working directory, memory, CPUs, `/dev/shm`, IPC and ulimits as `runArgs`.
fn limit_arguments(
    run_args: &mut RunArguments,
    view: &BodyView<'_>,
    notice: &mut impl FnMut(&str, String),
) {
    for (key, value) in view.labels {
        run_args.flag("--label", format!("{key}={value}"));
    }
    // So `ps` and `up` know the dev container tools made it, not `up`.
    run_args.flag(
        "--label",
        format!("{ORIGIN_LABEL}={}", Origin::DEVCONTAINER),
    );
    if let Some(workdir) = view.working_dir {
        run_args.flag("--workdir", workdir.to_string());
    }
    if let Some(memory) = view.memory {
        run_args.flag("--memory", ByteSize(memory).to_string());
    }
    if let Some(nanos) = view.nano_cpus {
        run_args.flag("--cpus", decimal_cpus(nanos));
    }
    if let Some(shm) = view.shm_size {
        run_args.flag("--shm-size", ByteSize(shm).to_string());
    }
    if let Some(ipc) = view.ipc_mode {
        run_args.flag("--ipc", ipc.to_string());
    }
    for limit in view.written_ulimits() {
        run_args.flag("--ulimit", limit);
    }
    // `capAdd` is a property of its own; the network, devices and hostname are not.
    if let Some(network) = view.network_mode {
        run_args.flag("--network", network.to_string());
    }
    for device in view.written_devices() {
        run_args.flag("--device", device);
    }
    if let Some(hostname) = view.hostname {
        run_args.flag("--hostname", hostname.to_string());
    }
    if !view.ulimits.is_empty() {
        notice(
            "ulimits",
            "devcontainer.json has no ulimits property: they are `--ulimit` runArgs, which only Docker-based tools apply".into(),
        );
    }
}

/// `hostRequirements.gpu` for "all" and "optional"; a count or ids as `--gpus` runArgs
/// instead, since the tools would add `--gpus all` next to `hostRequirements.gpu`.
fn gpu_requirement(
    run_args: &mut RunArguments,
    view: &BodyView<'_>,
    notice: &mut impl FnMut(&str, String),
) -> Option<Value> {
    match view.gpus {
        Gpus::All => Some(json!(true)),
        Gpus::Optional => Some(json!("optional")),
        Gpus::None => None,
        Gpus::Count(_) | Gpus::Devices(_) => {
            for request in view.device_requests {
                run_args.flag("--gpus", gpus_flag(request));
            }
            if !view.device_requests.is_empty() {
                notice(
                    "gpus",
                    format!(
                        "`gpus = {}` is a `--gpus` runArg; `hostRequirements.gpu` is left out, since the tools would add `--gpus all` next to it",
                        view.written_gpus
                    ),
                );
            }
            None
        }
    }
}

/// The mounts: the workspace folder's bind as `workspaceMount`, the others as `mounts`.
#[derive(Debug, Default)]
struct Mounts {
    workspace_mount: Option<String>,
    /// Where the workspace is inside the container (`workspaceFolder`).
    workspace_folder: Option<String>,
    others: Vec<String>,
}

fn mounts(
    view: &BodyView<'_>,
    input: &ExportInput<'_>,
    notice: &mut impl FnMut(&str, String),
) -> Result<Mounts, ExportError> {
    let workspace = workspace_folder(input);
    let mut mounts = Mounts::default();
    for mount in &view.mounts {
        let source = match &mount.source {
            MountSource::Volume => mount.written.to_string(),
            MountSource::Bind(source) => match source.clone()? {
                BindSource::Relative(path)
                    if path == workspace && mounts.workspace_mount.is_none() =>
                {
                    mounts.workspace_mount = Some(mount_value(
                        "bind",
                        WORKSPACE_VARIABLE,
                        mount.target,
                        mount.read_only,
                    ));
                    mounts.workspace_folder = Some(folder_inside(view, mount.target));
                    continue;
                }
                source => bind_text(source, &workspace)?,
            },
        };
        mounts.others.push(mount_value(
            mount.kind_name(),
            &source,
            mount.target,
            mount.read_only,
        ));
    }
    if mounts.workspace_mount.is_none() {
        notice(
            "mounts",
            "no mount of the profile is the workspace folder, so the tools add their own at /workspaces/<folder>, which `up` does not".into(),
        );
    }
    Ok(mounts)
}

/// `workspaceFolder`: the working directory when it is inside the workspace mount, else
/// the mount's target.
fn folder_inside(view: &BodyView<'_>, target: &str) -> String {
    match view.working_dir {
        Some(workdir) if Path::new(workdir).starts_with(target) => workdir.to_string(),
        _ => target.to_string(),
    }
}

/// A bind source other than the workspace: `~` as `${localEnv:HOME}`, relative paths
/// from `${localWorkspaceFolder}`.
fn bind_text(source: BindSource, workspace: &Path) -> Result<String, ExportError> {
    Ok(match source {
        BindSource::Home { rest } if rest.is_empty() => HOME_VARIABLE.to_string(),
        BindSource::Home { rest } => format!("{HOME_VARIABLE}/{rest}"),
        BindSource::Absolute(path) => path_text(&path)?,
        BindSource::Relative(path) => {
            let relative = relative_path(workspace, &path);
            let relative = path_text(&relative)?;
            let relative = relative.trim_start_matches("./");
            if relative == "." {
                WORKSPACE_VARIABLE.to_string()
            } else {
                format!("{WORKSPACE_VARIABLE}/{relative}")
            }
        }
    })
}

/// The tools replace the command with their own keep-alive: say so for a profile's own.
fn command_notice(view: &BodyView<'_>, notice: &mut impl FnMut(&str, String)) {
    if let Some(command) = view.profile_command {
        notice(
            "command",
            format!(
                "devcontainer.json cannot set the container's command (the tools run their own keep-alive): start `{}` from `postStartCommand` or a terminal",
                command.join(" ")
            ),
        );
    }
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
    use crate::container_plan::DeviceRequest;

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
