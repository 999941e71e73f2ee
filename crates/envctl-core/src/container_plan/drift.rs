//! What differs between an existing container (its `docker inspect` JSON) and the create
//! body the profile asks for now: `up` names it before refusing or recreating. Each
//! difference is a typed [`Difference`] (the profile key, what the container has, what
//! is wanted), shown as `memory: 8.0 GiB → 16.0 GiB`. The unit tests are in `drift/tests.rs`.

use serde_json::{Map, Value};

use super::CreateBody;

/// One setting that differs between a container and the body wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The profile key it comes from (`memory`, `gpus`, `env`), or the Engine API field
    /// where no key names it.
    pub field: String,
    pub change: Change,
}

/// How a [`Difference`]'s values differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The container's value, then the wanted one, as people write them.
    Values { actual: String, wanted: String },
    /// A secret variable set or changed: its values are never shown.
    Secret { key: String, was_set: bool },
}

impl Difference {
    /// Whether the GPU request differs (`gpus`): an engine that drops it needs the GPU fix.
    pub fn is_gpus(&self) -> bool {
        self.field == GPUS_FIELD
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.change {
            Change::Values { actual, wanted } => {
                write!(formatter, "{}: {actual} → {wanted}", self.field)
            }
            Change::Secret { key, was_set } => write!(
                formatter,
                "{}: {key} {} (a secret: values not shown)",
                self.field,
                if *was_set { "changed" } else { "set" }
            ),
        }
    }
}

/// The `envctl up` that applies the profile file a container records (its
/// `envctl.profile-file` label), from any folder: `cd DIR && envctl up NAME` for
/// `DIR/envctl/NAME.toml` (its relative mounts are DIR's, as when it was made there),
/// else `envctl up FILE`. Drift is judged against that file, not whatever the name
/// resolves to in the folder asking (issue 40).
pub fn up_from_recorded_file(file: &str, profile: &str) -> String {
    let path = std::path::Path::new(file);
    let project = path
        .parent()
        .filter(|folder| folder.file_name().is_some_and(|name| name == "envctl"))
        .and_then(std::path::Path::parent)
        .filter(|_| {
            path.file_stem()
                .is_some_and(|stem| stem.to_string_lossy() == profile)
        });
    match project {
        Some(project) => format!(
            "cd {} && envctl up {}",
            super::shell_quote(&project.to_string_lossy()),
            super::shell_quote(profile)
        ),
        None => format!("envctl up {}", super::shell_quote(file)),
    }
}

/// The profile key of `DeviceRequests`.
const GPUS_FIELD: &str = "gpus";

/// The body could not be written as the Engine API's JSON to compare it: a bug, said as
/// one rather than read as "nothing differs".
#[derive(Debug, thiserror::Error)]
#[error("the create body could not be compared with the container: {0}")]
pub struct Uncomparable(#[from] serde_json::Error);

/// The profile key each Engine API field comes from, for messages people recognise.
const FIELD_NAMES: [(&str, &str); 18] = [
    ("Image", "image"),
    ("Hostname", "hostname"),
    ("NetworkMode", "network"),
    ("Devices", "devices"),
    ("CapAdd", "cap_add"),
    ("Cmd", "command"),
    ("WorkingDir", "workdir"),
    ("User", "user"),
    ("Memory", "memory"),
    ("NanoCpus", "cpus"),
    ("ShmSize", "shm_size"),
    ("IpcMode", "ipc"),
    ("PortBindings", "ports"),
    ("Mounts", "mounts"),
    ("Ulimits", "ulimits"),
    ("DeviceRequests", GPUS_FIELD),
    // `--init` follows from the profile having no `command`, but the field is init.
    (
        "Init",
        "init (envctl runs `--init` when the profile has no `command`)",
    ),
    ("RestartPolicy", "restart policy"),
];

/// One line per setting that differs: `memory: 8.0 GiB → 16.0 GiB`. `container` is
/// the container's inspect JSON (`{"Config": …, "HostConfig": …}`).
pub fn changes(body: &CreateBody, container: &Value) -> Result<Vec<Difference>, Uncomparable> {
    differences(body, container, Scope::Everything)
}

/// The settings `body` asks for that the container created from it does not have: what
/// an engine dropped or changed (Podman before 5.4 drops GPU requests). Settings the
/// body leaves to the engine are not judged. `up` checks every container it creates with
/// this before starting it, and one with CDI devices again once started; empty means
/// the engine gave all.
pub fn not_given(
    body: &CreateBody,
    container: &Value,
    stage: Stage,
) -> Result<Vec<Difference>, Uncomparable> {
    differences(body, container, Scope::WhatTheBodySets(stage))
}

/// When [`not_given`] looks at the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Created, not started: Podman resolves CDI names into devices only at start, so a
    /// CDI request without devices yet is not judged.
    Created,
    /// Started: the CDI devices must be there.
    Started,
}

/// Which settings [`differences`] compares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Also those the profile dropped that the container still has (drift).
    Everything,
    /// Only those the body sets (a fresh container).
    WhatTheBodySets(Stage),
}

/// What differs between the create `body` and the `container` as the engine inspects it,
/// within `scope`: its `Config` keys, the variables the profile sets, then `HostConfig`.
fn differences(
    body: &CreateBody,
    container: &Value,
    scope: Scope,
) -> Result<Vec<Difference>, Uncomparable> {
    let wanted = match serde_json::to_value(body)? {
        Value::Object(wanted) => wanted,
        other => {
            return Err(Uncomparable(serde::ser::Error::custom(format!(
                "a body is written as a JSON object, not {other}"
            ))));
        }
    };
    let empty = Value::Object(Map::new());
    let config = container.get("Config").unwrap_or(&empty);
    let host_config = container.get("HostConfig").unwrap_or(&empty);
    let mut changes = Vec::new();
    config_differences(&wanted, config, &mut changes);
    env_differences(body, &wanted, config, &mut changes);
    if let Some(Value::Object(wanted_host)) = wanted.get("HostConfig") {
        host_config_differences(wanted_host, container, host_config, scope, &mut changes);
        if scope == Scope::Everything {
            dropped_differences(wanted_host, host_config, &mut changes);
        }
    }
    Ok(changes)
}

/// The `Config` keys the body sets (image, command, working directory, user, hostname);
/// one it leaves unset is the image's default, whatever the engine writes for it.
fn config_differences(wanted: &Map<String, Value>, config: &Value, changes: &mut Vec<Difference>) {
    for key in ["Image", "Cmd", "WorkingDir", "User", "Hostname"] {
        let actual = config.get(key).unwrap_or(&Value::Null);
        let wanted_value = wanted.get(key).unwrap_or(&Value::Null);
        // Unset is the image's (or the engine's) default, whatever it is: Podman writes
        // `/` for an image without WORKDIR, Docker "".
        if wanted_value.is_null() {
            continue;
        }
        // One image, however the engine writes its name (Podman: `localhost/x:1` for a
        // local `x:1`; `docker.io/library/busybox` for `busybox`).
        if key == "Image" && same_image(wanted_value, actual) {
            continue;
        }
        compare(key, wanted_value, actual, changes);
    }
}

/// The variables the body sets that the container lacks or holds with another value.
/// The container's env also holds the image's variables: only what the profile sets
/// counts. A secret's values are not shown, either of them: only that it changed.
fn env_differences(
    body: &CreateBody,
    wanted: &Map<String, Value>,
    config: &Value,
    changes: &mut Vec<Difference>,
) {
    fn value_of(entry: &str) -> &str {
        entry.split_once('=').map_or("", |(_, value)| value)
    }
    let container_env: Vec<&str> = config
        .get("Env")
        .and_then(Value::as_array)
        .map(|env| env.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for entry in wanted
        .get("Env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if container_env.contains(&entry) {
            continue;
        }
        let key = entry.split('=').next().unwrap_or(entry);
        let before = container_env
            .iter()
            .find(|existing| existing.split('=').next() == Some(key));
        if body.is_secret_env(key, value_of(entry))
            || before.is_some_and(|before| body.is_secret_env(key, value_of(before)))
        {
            changes.push(Difference {
                field: "env".into(),
                change: Change::Secret {
                    key: key.to_string(),
                    was_set: before.is_some(),
                },
            });
            continue;
        }
        let before = before.map_or("(unset)".to_string(), |existing| existing.to_string());
        changes.push(Difference {
            field: "env".into(),
            change: Change::Values {
                actual: before,
                wanted: entry.to_string(),
            },
        });
    }
}

/// Each `HostConfig` key the body sets, against the container's, read the way the engine
/// writes it back (mounts, ulimits, devices and CDI requests each have their own form).
fn host_config_differences(
    wanted_host: &Map<String, Value>,
    container: &Value,
    host_config: &Value,
    scope: Scope,
    changes: &mut Vec<Difference>,
) {
    for (key, value) in wanted_host {
        let actual = host_config.get(key).unwrap_or(&Value::Null);
        if key == "CapAdd" {
            compare(
                key,
                &capability_names(value),
                &capability_names(actual),
                changes,
            );
            continue;
        }
        let actual = match key.as_str() {
            "Mounts" => project_items(&mounts_of(actual, container, value), value),
            "Ulimits" => ulimit_names(actual),
            "Devices" => device_permissions(&devices_asked_for(actual, value)),
            "DeviceRequests" => cdi_devices_given(
                actual,
                value,
                host_config,
                scope == Scope::WhatTheBodySets(Stage::Created),
            ),
            _ => actual.clone(),
        };
        compare(key, value, &actual, changes);
    }
}

/// Settings the profile dropped that the container still has (drift only).
fn dropped_differences(
    wanted_host: &Map<String, Value>,
    host_config: &Value,
    changes: &mut Vec<Difference>,
) {
    for key in ["Memory", "NanoCpus", "DeviceRequests", "Init", "CapAdd"] {
        if !wanted_host.contains_key(key) {
            compare(
                key,
                &Value::Null,
                host_config.get(key).unwrap_or(&Value::Null),
                changes,
            );
        }
    }
    // A dropped `network`: the engine writes its default as `default` (Docker) or
    // `bridge` (Podman), both what no `network` asks for.
    if !wanted_host.contains_key("NetworkMode") {
        let actual = host_config.get("NetworkMode").unwrap_or(&Value::Null);
        if !matches!(actual.as_str(), None | Some("" | "default" | "bridge")) {
            compare("NetworkMode", &Value::Null, actual, changes);
        }
    }
}

fn compare(key: &str, wanted: &Value, actual: &Value, changes: &mut Vec<Difference>) {
    let (wanted, actual) = (normalize(wanted), normalize(actual));
    if wanted != actual {
        let name = FIELD_NAMES
            .iter()
            .find(|(field, _)| *field == key)
            .map_or(key, |(_, name)| name);
        let (before, after) = match (items(key, &actual), items(key, &wanted)) {
            // A list (ports, mounts, ulimits…): only the entries that differ, each as the
            // profile writes it; the whole lists where only their order differs.
            (Some(had), Some(wants)) => {
                let gone: Vec<&String> = had.iter().filter(|item| !wants.contains(item)).collect();
                let new: Vec<&String> = wants.iter().filter(|item| !had.contains(item)).collect();
                let listed = |list: Vec<&String>| match list.is_empty() {
                    true => "(none)".to_string(),
                    false => capped(
                        &list
                            .iter()
                            .map(|item| item.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                };
                if gone.is_empty() && new.is_empty() {
                    (listed(had.iter().collect()), listed(wants.iter().collect()))
                } else {
                    (listed(gone), listed(new))
                }
            }
            _ => match (shown(key, &actual), shown(key, &wanted)) {
                // Sizes that differ by less than the rounding: their bytes.
                (before, after) if before == after => (words(&actual), words(&wanted)),
                pair => pair,
            },
        };
        changes.push(Difference {
            field: name.to_string(),
            change: Change::Values {
                actual: before,
                wanted: after,
            },
        });
    }
}

/// A value as people wrote it in the profile: sizes in binary units (`memory: 128 MiB →
/// 192 MiB`, not `134217728 → 201326592`), CPUs as a count, GPUs as `--gpus` says them, a
/// command as its words; anything else in [`words`], never the engine's JSON.
fn shown(key: &str, value: &Value) -> String {
    const NANOS: u64 = 1_000_000_000;
    match (key, value.as_u64()) {
        ("Memory" | "ShmSize", Some(bytes)) if bytes > 0 => crate::units::binary_limit(bytes),
        ("NanoCpus", Some(nanos)) if nanos > 0 => {
            let fraction = format!("{:09}", nanos % NANOS);
            let fraction = fraction.trim_end_matches('0');
            match fraction {
                "" if nanos == NANOS => "1 CPU".to_string(),
                "" => format!("{} CPUs", nanos / NANOS),
                fraction => format!("{}.{fraction} CPUs", nanos / NANOS),
            }
        }
        _ => match key {
            "DeviceRequests" => gpus_in_words(value),
            "Init" => (if value.is_null() { "off" } else { "on" }).to_string(),
            "Cmd" => match value.as_array() {
                Some(command) => capped(
                    &command
                        .iter()
                        .map(|word| match word.as_str() {
                            Some(word) => super::shell_quote(word),
                            None => words(word),
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                None => words(value),
            },
            "RestartPolicy" => value
                .get("Name")
                .and_then(Value::as_str)
                .map_or_else(|| words(value), str::to_string),
            _ => words(value),
        },
    }
}

/// The entries of a list setting, each as the profile (or `docker run`) writes it:
/// `127.0.0.1:8888:8888/tcp`, `/srv/data:/data:ro`, `memlock=-1`, `IPC_LOCK`,
/// `/dev/infiniband`. None for a setting that is no list.
fn items(key: &str, value: &Value) -> Option<Vec<String>> {
    let text = |value: Option<&Value>| value.map_or_else(String::new, words);
    let entries = value.as_array().map(Vec::as_slice).unwrap_or_default();
    Some(match key {
        "PortBindings" => value
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(port, bindings)| {
                let bindings = bindings.as_array().map(Vec::as_slice).unwrap_or_default();
                bindings
                    .iter()
                    .map(|binding| {
                        let ip = text(binding.get("HostIp"));
                        let host = text(binding.get("HostPort"));
                        match ip.is_empty() || ip == "(unset)" {
                            true => format!("{host}:{port}"),
                            false => format!("{ip}:{host}:{port}"),
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        "Mounts" => entries
            .iter()
            .map(|mount| {
                let read_only = mount.get("ReadOnly").and_then(Value::as_bool) == Some(true);
                let source = match mount.get("Source") {
                    Some(source) if !source.is_null() => words(source),
                    _ => text(mount.get("Type")),
                };
                format!(
                    "{source}:{}{}",
                    text(mount.get("Target")),
                    if read_only { ":ro" } else { "" }
                )
            })
            .collect(),
        "Ulimits" => entries
            .iter()
            .map(|limit| {
                // normalize() drops a 0 limit: absent is 0.
                let number = |field: &str| limit.get(field).and_then(Value::as_i64).unwrap_or(0);
                let (soft, hard) = (number("Soft"), number("Hard"));
                let name = text(limit.get("Name"));
                match soft == hard {
                    true => format!("{name}={soft}"),
                    false => format!("{name}={soft}:{hard}"),
                }
            })
            .collect(),
        "Devices" => entries
            .iter()
            .map(|device| {
                let (host, inside) = (
                    text(device.get("PathOnHost")),
                    text(device.get("PathInContainer")),
                );
                match host == inside {
                    true => host,
                    false => format!("{host}:{inside}"),
                }
            })
            .collect(),
        "CapAdd" => entries
            .iter()
            .map(|capability| {
                let capability = words(capability);
                capability
                    .strip_prefix("CAP_")
                    .map_or(capability.clone(), str::to_string)
            })
            .collect(),
        _ => return None,
    })
}

/// A GPU request as `--gpus` writes it: `all GPUs`, `2 GPUs`, `GPUs 0,3`, `no GPUs`.
fn gpus_in_words(value: &Value) -> String {
    let requests = value.as_array().map(Vec::as_slice).unwrap_or_default();
    if requests.is_empty() {
        return "no GPUs".into();
    }
    let said: Vec<String> = requests
        .iter()
        .map(|request| {
            let devices: Vec<String> = request
                .get("DeviceIDs")
                .and_then(Value::as_array)
                .map(|devices| devices.iter().map(words).collect())
                .unwrap_or_default();
            match request.get("Count").and_then(Value::as_i64) {
                _ if !devices.is_empty() => format!("GPUs {}", devices.join(",")),
                Some(-1) => "all GPUs".to_string(),
                Some(1) => "1 GPU".to_string(),
                Some(count) => format!("{count} GPUs"),
                None => words(request),
            }
        })
        .collect();
    said.join(", ")
}

/// Any value in words: a string as itself, a list as its entries, an object as
/// `key=value` pairs; capped, so an odd setting never floods a message.
fn words(value: &Value) -> String {
    fn said(value: &Value) -> String {
        match value {
            Value::Null => "(unset)".into(),
            Value::Bool(true) => "yes".into(),
            Value::Bool(false) => "no".into(),
            Value::Number(number) => number.to_string(),
            Value::String(text) => text.clone(),
            Value::Array(items) => items.iter().map(said).collect::<Vec<_>>().join(", "),
            Value::Object(object) => object
                .iter()
                .map(|(key, value)| format!("{key}={}", said(value)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
    capped(&said(value))
}

fn capped(text: &str) -> String {
    if text.chars().count() > 200 {
        format!("{}…", text.chars().take(199).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Whether a container's own image reference (`Config.Image`, what its create named)
/// names the image `wanted` names, digests aside (`envctl.lock` may pin another digest of
/// the same tag since). A container whose labels claim the profile's current config hash
/// while it runs another image is not the profile's: its labels were written by someone
/// else, and drift believes the daemon's answer over them.
pub fn runs_image(wanted: &str, actual: &str) -> bool {
    let without_digest = |text: &str| match text.parse::<crate::profile::image::ImageReference>() {
        Ok(mut reference) if reference.tag.is_some() || reference.digest.is_none() => {
            reference.digest = None;
            reference.to_string()
        }
        _ => text.to_string(),
    };
    same_image(
        &Value::String(without_digest(wanted)),
        &Value::String(without_digest(actual)),
    ) || same_image(
        &Value::String(wanted.to_string()),
        &Value::String(actual.to_string()),
    )
}

/// Whether two image references name one image: equal in canonical form, or the
/// container's is Podman's `localhost/NAME` for a wanted `NAME` written without registry.
fn same_image(wanted: &Value, actual: &Value) -> bool {
    let (Some(wanted), Some(actual)) = (wanted.as_str(), actual.as_str()) else {
        return false;
    };
    let parse = |text: &str| text.parse::<crate::profile::image::ImageReference>().ok();
    let (Some(wanted_reference), Some(actual_reference)) = (parse(wanted), parse(actual)) else {
        return wanted == actual;
    };
    let (wanted_canonical, actual_canonical) =
        (wanted_reference.canonical(), actual_reference.canonical());
    if wanted_canonical == actual_canonical {
        return true;
    }
    actual_canonical.registry == "localhost"
        && wanted_reference.registry.is_none()
        && actual_canonical.tag == wanted_canonical.tag
        && actual_canonical.digest == wanted_canonical.digest
        && actual_canonical.repository == wanted_reference.repository
}

/// The container's GPU requests as the body wrote them, where the engine resolved a CDI
/// request into devices and kept no request: Podman shows the device nodes of
/// `nvidia.com/gpu=0` in `HostConfig.Devices` and `DeviceRequests: null`. Which CDI names
/// the nodes came from is not recorded, so nodes count as the request given; none means
/// dropped, once the container has started.
fn cdi_devices_given(
    actual: &Value,
    wanted: &Value,
    host_config: &Value,
    before_start: bool,
) -> Value {
    let kept = actual
        .as_array()
        .is_some_and(|requests| !requests.is_empty());
    let wants_cdi = wanted.as_array().into_iter().flatten().any(|request| {
        request.get("Driver").and_then(Value::as_str) == Some(super::gpus::CDI_DRIVER)
    });
    let devices = host_config
        .get("Devices")
        .and_then(Value::as_array)
        .is_some_and(|devices| !devices.is_empty());
    if !kept && wants_cdi && (devices || before_start) {
        wanted.clone()
    } else {
        actual.clone()
    }
}

/// The container's mounts as `HostConfig.Mounts` writes them. Podman leaves that empty
/// and reports its mounts in the top-level `Mounts` (`Destination`, `RW`, a volume's
/// `Name`): read from there, in the order the body lists its targets.
fn mounts_of(actual: &Value, container: &Value, wanted: &Value) -> Value {
    if actual.as_array().is_some_and(|mounts| !mounts.is_empty()) {
        return actual.clone();
    }
    let Some(reported) = container.get("Mounts").and_then(Value::as_array) else {
        return actual.clone();
    };
    let mut mounts: Vec<Value> = reported
        .iter()
        .map(|mount| {
            let kind = mount.get("Type").cloned().unwrap_or(Value::Null);
            let source = if kind.as_str() == Some("volume") {
                mount.get("Name")
            } else {
                mount.get("Source")
            };
            serde_json::json!({
                "Type": kind,
                "Source": source.cloned().unwrap_or(Value::Null),
                "Target": mount.get("Destination").cloned().unwrap_or(Value::Null),
                "ReadOnly": mount.get("RW").and_then(Value::as_bool).map(|writable| !writable),
            })
        })
        .collect();
    let targets: Vec<&Value> = wanted
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|mount| mount.get("Target"))
        .collect();
    mounts.sort_by_key(|mount| {
        mount
            .get("Target")
            .and_then(|target| targets.iter().position(|wanted| *wanted == target))
            .unwrap_or(usize::MAX)
    });
    Value::Array(mounts)
}

/// The container's devices that the body's `Devices` name (by path in the container): an
/// engine that resolves CDI GPU requests into device nodes (Podman) lists those too, and
/// they are the GPU request's, not the profile's `devices`.
fn devices_asked_for(actual: &Value, wanted: &Value) -> Value {
    let paths: Vec<&Value> = wanted
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|device| device.get("PathInContainer"))
        .collect();
    match actual.as_array() {
        Some(devices) => Value::Array(
            devices
                .iter()
                .filter(|device| {
                    device
                        .get("PathInContainer")
                        .is_some_and(|path| paths.contains(&path))
                })
                .cloned()
                .collect(),
        ),
        None => actual.clone(),
    }
}

/// Capability names as one spelling: Docker reports what it was given (`CAP_IPC_LOCK` or
/// `IPC_LOCK`), Podman 4.3 drops the prefix; both are the one capability.
fn capability_names(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| match item.as_str() {
                    Some(name) => {
                        let upper = name.to_ascii_uppercase();
                        Value::String(upper.strip_prefix("CAP_").unwrap_or(&upper).to_string())
                    }
                    None => item.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Device permissions as Docker writes them: Podman 4.3 reports an empty
/// `CgroupPermissions` for the default, which is `rwm`.
fn device_permissions(actual: &Value) -> Value {
    match actual {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| {
                    let mut item = item.clone();
                    if let Some(permissions) = item.get_mut("CgroupPermissions")
                        && permissions.as_str().is_none_or(str::is_empty)
                    {
                        *permissions = Value::String("rwm".into());
                    }
                    item
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Ulimit names as Docker writes them: Podman reports `RLIMIT_NOFILE` for `nofile`.
fn ulimit_names(actual: &Value) -> Value {
    match actual {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| {
                    let mut item = item.clone();
                    if let Some(Value::String(name)) = item.get_mut("Name") {
                        let lower = name.to_ascii_lowercase();
                        *name = lower.strip_prefix("rlimit_").unwrap_or(&lower).to_string();
                    }
                    item
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Keeps, in each of `actual`'s array items, only the keys `wanted`'s items use: the daemon
/// adds fields of its own (`BindOptions`, `VolumeOptions`) that the body never sets.
fn project_items(actual: &Value, wanted: &Value) -> Value {
    let keys: Vec<&String> = wanted
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(Map::keys)
        .collect();
    match actual.as_array() {
        Some(items) => Value::Array(
            items
                .iter()
                .map(|item| match item.as_object() {
                    Some(object) => Value::Object(
                        object
                            .iter()
                            .filter(|(key, _)| keys.contains(key))
                            .map(|(key, value)| (key.clone(), value.clone()))
                            .collect(),
                    ),
                    None => item.clone(),
                })
                .collect(),
        ),
        None => actual.clone(),
    }
}

/// Null, false, 0, "" and empty collections all mean "not set" to the daemon.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), normalize(value)))
                .filter(|(_, value)| !value.is_null())
                .collect::<Map<String, Value>>(),
        )
        .pipe_empty(),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()).pipe_empty(),
        Value::Bool(false) => Value::Null,
        Value::String(text) if text.is_empty() => Value::Null,
        Value::Number(number) if number.as_i64() == Some(0) => Value::Null,
        other => other.clone(),
    }
}

trait EmptyIsNull {
    fn pipe_empty(self) -> Value;
}

impl EmptyIsNull for Value {
    fn pipe_empty(self) -> Value {
        match &self {
            Value::Object(object) if object.is_empty() => Value::Null,
            Value::Array(items) if items.is_empty() => Value::Null,
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests;
