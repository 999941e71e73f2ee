//! The daemon's own facts against what a container's labels claim (issue 39, item 7).
//! Labels are text anyone with the daemon's socket can write: a container that claims to
//! be what envctl made of a profile (its config hash, or its profile hash for one made
//! with `up -e/-p/-v`) is believed only where the daemon's inspect of it agrees with the
//! create body. [`not_as_claimed`] lists what does not; an empty list is no proof of who
//! made it (docs/identity.md says why none can be), only that nothing the daemon reports
//! tells it apart from envctl's own.
//!
//! What is compared, and why not more:
//! - always (what decides what a command run in it can reach): the image (`runs_image`:
//!   digests aside, as `envctl.lock` may pin another since), the command, the user where
//!   the profile sets one, `--privileged`, added capabilities, the pid, ipc and network
//!   namespaces, device nodes (a GPU request's own nodes aside), and security options that
//!   switch confinement off;
//! - the mounts, by target (a mount the profile does not make, or one it makes missing or
//!   read-write where it is read-only), and by source too where the container records the
//!   profile file the body was made from (relative sources resolve against that file's
//!   project folder);
//! - with a body of the same config hash ([`Claim::settings`]), the other settings
//!   `container_plan::drift::changes` names (env, ports, ulimits, `/dev/shm`, init, workdir,
//!   hostname), the GPU request aside when the body asks for GPUs (placement picks its
//!   devices afresh), and memory, CPUs and restart policy aside (`docker update` changes
//!   them on envctl's own container, and they grant nothing).
//!
//! Engine spellings are not differences: Podman writes `CAP_` prefixes differently,
//! reports every mount in the top-level `Mounts` (read here for both engines), `private`
//! pid and `shareable` ipc namespaces, and `bridge` for the default network.

use serde_json::Value;

use crate::container_plan::CreateBody;
use crate::container_plan::drift::{self, Change, Difference, Uncomparable};

/// How much of the body a container's labels vouch for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Its config hash is the body's: every setting of the body is claimed, not only the
    /// ones no override changes. False for a container made with overrides, whose body
    /// held settings `up -e/-p/-v/--ulimit/--gpus` chose.
    pub settings: bool,
    /// How far its mounts can be judged.
    pub mounts: Mounts,
}

/// How a claim's mounts are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mounts {
    /// Target, kind, source and read-only: the body was made from the file the container
    /// records, from its project folder.
    Whole,
    /// Target, kind and read-only: relative or `~` sources may resolve elsewhere here.
    Targets,
    /// Not at all: `up --volume` adds or replaces mounts as the user likes.
    Unjudged,
}

/// What the daemon says of `container` (its `docker inspect` JSON: `Config`,
/// `HostConfig`, `Mounts`) that differs from `body` as far as `claim` vouches for it,
/// each as `container_plan::drift` names differences (`mounts: /:/host → (none)`); secrets' values
/// never shown. Empty: nothing the daemon reports tells it apart from `body`'s container.
pub fn not_as_claimed(
    body: &CreateBody,
    container: &Value,
    claim: Claim,
) -> Result<Vec<Difference>, Uncomparable> {
    let empty = Value::Object(serde_json::Map::new());
    let config = container.get("Config").unwrap_or(&empty);
    let host = container.get("HostConfig").unwrap_or(&empty);
    let mut found = Vec::new();
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or("").to_string();
    let runs = text(config.get("Image"));
    if !drift::runs_image(&body.image, &runs) {
        found.push(values("image", shown_or_unset(&runs), body.image.clone()));
    }
    let command: Vec<String> = strings(config.get("Cmd"));
    if command != body.cmd {
        found.push(values("command", words(&command), words(&body.cmd)));
    }
    if let Some(user) = &body.user
        && text(config.get("User")) != *user
    {
        found.push(values(
            "user",
            shown_or_unset(&text(config.get("User"))),
            user.clone(),
        ));
    }
    if host.get("Privileged").and_then(Value::as_bool) == Some(true) {
        found.push(values("privileged", "yes".into(), "no".into()));
    }
    capabilities(body, host, &mut found);
    namespaces(body, host, &mut found);
    devices(body, host, claim, &mut found);
    let unconfined: Vec<String> = strings(host.get("SecurityOpt"))
        .into_iter()
        .filter(|option| {
            let option = option.replace(':', "=");
            option.contains("unconfined") || option == "label=disable"
        })
        .collect();
    if !unconfined.is_empty() {
        found.push(values(
            "security_opt",
            unconfined.join(", "),
            "(none)".into(),
        ));
    }
    mounts(body, container, claim.mounts, &mut found);
    if claim.settings {
        // The rest of the body, as drift names it; what is judged above (in engine-neutral
        // spellings), varies by placement, or `docker update` changes is left out.
        let asks_gpus = !body.host_config.device_requests.is_empty();
        let container = asked_ulimits_only(body, container);
        found.extend(
            drift::changes(body, &container)?
                .into_iter()
                .filter(|change| {
                    let placed = asks_gpus && change.is_gpus();
                    !(NOT_SETTINGS.contains(&change.field.as_str()) || placed)
                }),
        );
    }
    Ok(found)
}

/// The drift fields [`not_as_claimed`] does not take from `drift::changes`: those it judges
/// itself, and the limits and restart policy `docker update` changes on envctl's own
/// container (they grant a command run in it nothing).
const NOT_SETTINGS: [&str; 11] = [
    "image",
    "command",
    "user",
    "cap_add",
    "network",
    "ipc",
    "devices",
    "mounts",
    "memory",
    "cpus",
    "restart policy",
];

/// `container` with only the ulimits the body names: Podman reports defaults it was not
/// asked for (`nproc` beside a profile's `nofile`).
fn asked_ulimits_only(body: &CreateBody, container: &Value) -> Value {
    let mut container = container.clone();
    let asked: Vec<&str> = body
        .host_config
        .ulimits
        .iter()
        .map(|limit| limit.name.as_str())
        .collect();
    if let Some(Value::Array(limits)) = container
        .get_mut("HostConfig")
        .and_then(|host| host.get_mut("Ulimits"))
    {
        limits.retain(|limit| {
            let name = limit
                .get("Name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_lowercase();
            asked.contains(&name.strip_prefix("rlimit_").unwrap_or(&name))
        });
    }
    container
}

fn values(field: &str, actual: String, wanted: String) -> Difference {
    Difference {
        field: field.to_string(),
        change: Change::Values { actual, wanted },
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn shown_or_unset(text: &str) -> String {
    if text.is_empty() {
        "(unset)".into()
    } else {
        capped(text)
    }
}

/// A command as its words, quoted as a shell would need them.
fn words(command: &[String]) -> String {
    if command.is_empty() {
        return "(the image's)".into();
    }
    capped(
        &command
            .iter()
            .map(|word| crate::container_plan::shell_quote(word))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn capped(text: &str) -> String {
    if text.chars().count() > 200 {
        format!("{}…", text.chars().take(199).collect::<String>())
    } else {
        text.to_string()
    }
}

/// A list's entries that differ, as drift says them: `SYS_ADMIN → (none)`.
fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        capped(&items.join(", "))
    }
}

/// Added capabilities, named without `CAP_` in upper case (Podman and Docker spell them
/// differently): each one more or fewer than the body's is a difference.
fn capabilities(body: &CreateBody, host: &Value, found: &mut Vec<Difference>) {
    let name = |capability: &str| {
        let upper = capability.to_ascii_uppercase();
        upper.strip_prefix("CAP_").unwrap_or(&upper).to_string()
    };
    let had: Vec<String> = strings(host.get("CapAdd"))
        .iter()
        .map(|c| name(c))
        .collect();
    let wants: Vec<String> = body.host_config.cap_add.iter().map(|c| name(c)).collect();
    let extra: Vec<String> = had.iter().filter(|c| !wants.contains(c)).cloned().collect();
    let missing: Vec<String> = wants.iter().filter(|c| !had.contains(c)).cloned().collect();
    if !extra.is_empty() || !missing.is_empty() {
        found.push(values("cap_add", listed(&extra), listed(&missing)));
    }
}

/// The pid, ipc and network namespaces: the body's where it names one (ipc's `private`
/// and `shareable` are both the container's own), else any that is the host's or another
/// container's.
fn namespaces(body: &CreateBody, host: &Value, found: &mut Vec<Difference>) {
    let mode = |key: &str| {
        host.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let shared =
        |mode: &str| mode == "host" || mode.starts_with("container:") || mode.starts_with("ns:");
    let pid = mode("PidMode");
    if !matches!(pid.as_str(), "" | "private") {
        found.push(values("pid", pid, "(unset)".into()));
    }
    let own = |mode: &str| matches!(mode, "" | "private" | "shareable");
    let ipc = mode("IpcMode");
    let ipc_differs = match body.host_config.ipc_mode.as_deref() {
        Some(wanted) if own(wanted) => !own(&ipc),
        Some(wanted) => ipc != wanted,
        None => shared(&ipc),
    };
    if ipc_differs {
        let wanted = body.host_config.ipc_mode.clone();
        found.push(values(
            "ipc",
            shown_or_unset(&ipc),
            wanted.unwrap_or_else(|| "(unset)".into()),
        ));
    }
    let network = mode("NetworkMode");
    let network_differs = match body.host_config.network_mode.as_deref() {
        // A network of the user's own (`network = "lab"`): Podman may report it as
        // `bridge`, and a bridge network shares nothing of the host's.
        Some(wanted) if !shared(wanted) && !matches!(wanted, "none" | "bridge" | "default") => {
            network != wanted && network != "bridge"
        }
        Some(wanted) => network != wanted,
        None => shared(&network),
    };
    if network_differs {
        let wanted = body.host_config.network_mode.clone();
        found.push(values(
            "network",
            shown_or_unset(&network),
            wanted.unwrap_or_else(|| "(unset)".into()),
        ));
    }
}

/// Device nodes by their path in the container: one the body does not map is a
/// difference, unless it is a GPU's (`/dev/nvidia*`, `/dev/dri/*`: Podman lists a CDI GPU
/// request's nodes among the devices) where GPUs may be asked for. One the body maps that
/// the container lacks counts only with [`Claim::settings`].
fn devices(body: &CreateBody, host: &Value, claim: Claim, found: &mut Vec<Difference>) {
    let path = |device: &Value| {
        device
            .get("PathInContainer")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let had: Vec<String> = host
        .get("Devices")
        .and_then(Value::as_array)
        .map(|devices| devices.iter().map(path).collect())
        .unwrap_or_default();
    let wants: Vec<String> = body
        .host_config
        .devices
        .iter()
        .map(|device| device.path_in_container.clone())
        .collect();
    // Without this `up`'s body, whether GPUs are asked for depends on the host (`gpus =
    // "optional"`): a GPU's nodes are the GPU request's, judged with the settings.
    let gpus_may_be_asked = !body.host_config.device_requests.is_empty() || !claim.settings;
    let gpu_node = |path: &str| path.starts_with("/dev/nvidia") || path.starts_with("/dev/dri/");
    let extra: Vec<String> = had
        .iter()
        .filter(|path| !(wants.contains(path) || gpus_may_be_asked && gpu_node(path)))
        .cloned()
        .collect();
    let missing: Vec<String> = match claim.settings {
        true => wants
            .iter()
            .filter(|path| !had.contains(path))
            .cloned()
            .collect(),
        false => Vec::new(),
    };
    if !extra.is_empty() || !missing.is_empty() {
        found.push(values("devices", listed(&extra), listed(&missing)));
    }
}

/// One mount as compared: both engines list every mount in the inspect's top-level
/// `Mounts` (Docker's `HostConfig.Mounts` holds only `--mount`'s, Podman's none).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mounted {
    volume: bool,
    /// The host path, or the volume's name.
    source: String,
    target: String,
    read_only: bool,
}

impl Mounted {
    /// As the profile writes it: `/data:/data:ro`, `cache:/cache`.
    fn shown(&self, with_source: bool) -> String {
        let source = match with_source {
            true => self.source.as_str(),
            false if self.volume => "(a volume)",
            false => "(a folder)",
        };
        capped(&format!(
            "{source}:{}{}",
            self.target,
            if self.read_only { ":ro" } else { "" }
        ))
    }
}

fn mounts(body: &CreateBody, container: &Value, judged: Mounts, found: &mut Vec<Difference>) {
    if judged == Mounts::Unjudged {
        return;
    }
    let wanted: Vec<Mounted> = body
        .host_config
        .mounts
        .iter()
        .map(|mount| Mounted {
            volume: mount.kind == crate::container_plan::MountType::Volume,
            source: mount.source.clone(),
            target: mount.target.clone(),
            read_only: mount.read_only,
        })
        .collect();
    let had: Vec<Mounted> = container
        .get("Mounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|mount| {
            let text = |key: &str| mount.get(key).and_then(Value::as_str).unwrap_or("");
            let volume = text("Type") == "volume";
            let source = if volume { text("Name") } else { text("Source") };
            let target = text("Destination");
            // An image's `VOLUME` gives every container from it an anonymous volume
            // (64 hex digits): the image's, not a claim, unless it stands where the body
            // mounts something.
            let anonymous = volume
                && source.len() == 64
                && source.chars().all(|c| c.is_ascii_hexdigit())
                && !wanted.iter().any(|mount| mount.target == target);
            (!anonymous && !target.is_empty()).then(|| Mounted {
                volume,
                source: source.to_string(),
                target: target.to_string(),
                read_only: mount.get("RW").and_then(Value::as_bool) == Some(false),
            })
        })
        .collect();
    let with_source = judged == Mounts::Whole;
    let same = |a: &Mounted, b: &Mounted| {
        a.target == b.target
            && a.volume == b.volume
            && a.read_only == b.read_only
            && (!with_source || a.source == b.source)
    };
    let extra: Vec<String> = had
        .iter()
        .filter(|mount| !wanted.iter().any(|wants| same(mount, wants)))
        .map(|mount| mount.shown(true))
        .collect();
    let missing: Vec<String> = wanted
        .iter()
        .filter(|wants| !had.iter().any(|mount| same(mount, wants)))
        .map(|mount| mount.shown(with_source))
        .collect();
    if !extra.is_empty() || !missing.is_empty() {
        found.push(values("mounts", listed(&extra), listed(&missing)));
    }
}

#[cfg(test)]
mod tests;
