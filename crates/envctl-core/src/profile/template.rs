//! Profile text that `profiles new` writes: a resolved profile written out in full, or a
//! commented starter.

use std::fmt::Write as _;

use super::model::{GpuRequest, Profile};

/// The starter profile for `envctl profiles new NAME` without `--from`.
pub const STARTER: &str = r#"# An envctl profile. Reference: `envctl profiles show pytorch-2.8` and docs/profiles.md.
description = "PyTorch 2.8 for our team"
image = "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime"
workdir = "/workspace"
gpus = "optional"                 # every GPU, none without; "all" | "none" | 2 | ["0", "1"]
shm_size = "8g"                   # PyTorch DataLoader workers share tensors through /dev/shm
# memory = "32g"
# cpus = 8
# user = "1000:1000"
ipc = "private"
ports = ["127.0.0.1:8888:8888"]   # loopback only; write 0.0.0.0 to publish to the network
mounts = ["./:/workspace"]
env = { PYTHONUNBUFFERED = "1" }

[ulimits]
# memlock = -1                    # for RDMA across nodes; many daemons may not raise it
stack = 67108864

[stack]
cuda = "12.8"
torch = "2.8.0"
cudnn = "9"

[commands]
versions = ["python", "-c", "import torch; print(torch.__version__, torch.version.cuda)"]
"#;

/// A profile as `profiles new --from` writes it for a project, so the README's quick start
/// `up`s as shown on a laptop as on a GPU server (issue 40): `gpus = "all"` becomes
/// `"optional"` (every GPU of a host with GPUs, none of one without), and an unlimited
/// `memlock` (NVIDIA's setting, for RDMA across nodes) is left out, since a daemon without
/// CAP_SYS_RESOURCE (rootless, a sandbox) refuses to start a container asking for it.
/// Returns the lines for the file's header saying each change and how to undo it; any other
/// setting is the team's choice and kept.
pub fn for_a_new_project(mut profile: Profile) -> (Profile, String) {
    let mut notes = String::new();
    if profile.gpus == GpuRequest::All {
        profile.gpus = GpuRequest::Optional;
        notes.push_str("\ngpus = \"optional\": every GPU of a host with GPUs, none on one without; write \"all\" to refuse to start without them.");
    }
    if profile
        .ulimits
        .get("memlock")
        .is_some_and(|limit| limit.soft == -1 || limit.hard == -1)
    {
        profile.ulimits.remove("memlock");
        notes.push_str("\nNo [ulimits] memlock = -1: many daemons may not raise it (rootless, sandboxes); add it for RDMA across nodes.");
    }
    (profile, notes)
}

/// One line of a written profile, with the key it sets (`memory`, `env.PATH`), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub key: Option<String>,
    pub text: String,
}

/// Writes `profile` as a complete TOML profile, headed by `comment` lines.
pub fn render(profile: &Profile, comment: &str) -> String {
    let mut text = String::new();
    for line in comment.lines() {
        let _ = writeln!(text, "# {line}");
    }
    for line in lines(profile) {
        let _ = writeln!(text, "{}", line.text);
    }
    text
}

/// The lines of `profile` as TOML: top-level keys, then `[env]`, `[labels]`, `[ulimits]`, `[stack]`
/// and `[commands]`.
pub fn lines(profile: &Profile) -> Vec<Line> {
    let mut lines: Vec<Line> = top_level(profile)
        .into_iter()
        .map(|(key, value)| Line {
            key: Some(key.to_string()),
            text: format!("{} = {value}", bare_or_quoted(key)),
        })
        .collect();
    for (section, entries) in sections(profile) {
        if entries.is_empty() {
            continue;
        }
        lines.push(Line {
            key: None,
            text: String::new(),
        });
        lines.push(Line {
            key: None,
            text: format!("[{section}]"),
        });
        for (key, value) in entries {
            lines.push(Line {
                key: Some(format!("{section}.{key}")),
                text: format!("{} = {value}", bare_or_quoted(&key)),
            });
        }
    }
    lines
}

/// The top-level keys `profile` sets and their TOML values, in the order the file lists
/// them; a key left at its default (unset, empty) is left out.
fn top_level(profile: &Profile) -> Vec<(&'static str, String)> {
    let mut keys = Vec::new();
    let mut set = |key: &'static str, value: String| keys.push((key, value));
    if let Some(description) = &profile.description {
        set("description", quote(description));
    }
    set("image", quote(&profile.image.to_string()));
    if let Some(command) = &profile.command {
        set("command", array(command));
    }
    if let Some(workdir) = &profile.workdir {
        set("workdir", quote(workdir));
    }
    if let Some(user) = &profile.user {
        set("user", quote(user));
    }
    set(
        "gpus",
        match &profile.gpus {
            GpuRequest::Count(count) => count.to_string(),
            GpuRequest::Devices(devices) => array(devices),
            other => quote(&other.to_string()),
        },
    );
    // Part of the config hash (and so of drift): shown whenever it is not the default.
    if !profile.placement.is_default() {
        set("placement", quote(profile.placement.name()));
    }
    if let Some(memory) = profile.memory {
        set("memory", quote(&memory.to_string()));
    }
    if let Some(cpus) = profile.cpus {
        set("cpus", format!("{cpus:?}"));
    }
    if let Some(shm_size) = profile.shm_size {
        set("shm_size", quote(&shm_size.to_string()));
    }
    if let Some(ipc) = profile.ipc {
        set("ipc", quote(ipc.as_str()));
    }
    if !profile.ports.is_empty() {
        let ports: Vec<String> = profile.ports.iter().map(ToString::to_string).collect();
        set("ports", array(&ports));
    }
    if !profile.mounts.is_empty() {
        let mounts: Vec<String> = profile.mounts.iter().map(ToString::to_string).collect();
        set("mounts", array(&mounts));
    }
    if let Some(network) = &profile.network {
        set("network", quote(network.as_str()));
    }
    if !profile.devices.is_empty() {
        let devices: Vec<String> = profile.devices.iter().map(ToString::to_string).collect();
        set("devices", array(&devices));
    }
    if !profile.cap_add.is_empty() {
        set("cap_add", array(&profile.cap_add));
    }
    if let Some(hostname) = &profile.hostname {
        set("hostname", quote(hostname));
    }
    keys
}

/// The tables of `profile` (`env`, `labels`, `ulimits`, `stack`, `commands`), each with
/// its keys and TOML values; an empty table is written by no line.
fn sections(profile: &Profile) -> Vec<(&'static str, Vec<(String, String)>)> {
    let mut sections: Vec<(&'static str, Vec<(String, String)>)> = Vec::new();
    sections.push((
        "env",
        profile
            .env
            .iter()
            .map(|(key, value)| (key.clone(), quote(value)))
            .collect(),
    ));
    // Labels are part of the config hash: `profiles show` left them out (issue 40).
    sections.push((
        "labels",
        profile
            .labels
            .iter()
            .map(|(key, value)| (key.clone(), quote(value)))
            .collect(),
    ));
    sections.push((
        "ulimits",
        profile
            .ulimits
            .iter()
            .map(|(name, limit)| {
                let value = if limit.soft == limit.hard {
                    limit.soft.to_string()
                } else {
                    format!("{{ soft = {}, hard = {} }}", limit.soft, limit.hard)
                };
                (name.clone(), value)
            })
            .collect(),
    ));
    let mut stack = Vec::new();
    if let Some(cuda) = profile.stack.cuda {
        stack.push(("cuda".to_string(), quote(&cuda.to_string())));
    }
    if let Some(torch) = &profile.stack.torch {
        stack.push(("torch".to_string(), quote(&torch.to_string())));
    }
    if let Some(cudnn) = profile.stack.cudnn {
        stack.push(("cudnn".to_string(), quote(&cudnn.to_string())));
    }
    sections.push(("stack", stack));
    sections.push((
        "commands",
        profile
            .commands
            .iter()
            .map(|(name, command)| (name.clone(), array(command)))
            .collect(),
    ));
    sections
}

/// A TOML basic string, escaped by the toml crate.
fn quote(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| quote(item)).collect();
    format!("[{}]", quoted.join(", "))
}

fn bare_or_quoted(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    {
        key.to_string()
    } else {
        quote(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::resolve::resolve_text;

    fn profile(text: &str) -> Profile {
        resolve_text("team.toml", text).unwrap().profile
    }

    #[test]
    fn top_level_keys_come_first_and_empty_tables_write_nothing() {
        let profile =
            profile("image = \"pytorch/pytorch:2.8.0\"\nmemory = \"8g\"\n[env]\nA = \"1\"\n");
        let keys: Vec<&str> = top_level(&profile).iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["image", "gpus", "memory"]);
        let tables: Vec<(&str, usize)> = sections(&profile)
            .iter()
            .map(|(table, entries)| (*table, entries.len()))
            .collect();
        assert_eq!(
            tables,
            [
                ("env", 1),
                ("labels", 0),
                ("ulimits", 0),
                ("stack", 0),
                ("commands", 0)
            ]
        );
        let written: Vec<String> = lines(&profile).into_iter().map(|line| line.text).collect();
        assert_eq!(written[written.len() - 3..], ["", "[env]", "A = \"1\""]);
    }
}
