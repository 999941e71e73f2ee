//! `export --to compose`: one service that `docker compose up` (v2) and `docker-compose up`
//! (v1.28+) turn into the container `up` makes.
//!
//! Choices that keep the two the same:
//!
//! - Service-level `mem_limit`, `cpus`, `shm_size`, `ipc`, `ulimits`, `init` rather than
//!   `deploy.resources.limits`, which compose v1 applies only with `--compatibility`.
//! - GPUs as `deploy.resources.reservations.devices` with an explicit `count` (`all` or N)
//!   or `device_ids`, and `capabilities: [gpu]`: without `count` or `device_ids` some
//!   compose releases reserve no GPU at all (docker/docs#20588), and `capabilities` is
//!   required. With `device_ids`, `count: 0` is written too: compose v1 defaults a missing
//!   `count` to `all`, and the daemon refuses a request with both ("cannot set both Count
//!   and DeviceIDs"); compose v2 reads `0` as "not set".
//! - Ports in Docker's short syntax with the host IP always written, so loopback stays
//!   loopback; mounts in the long syntax, so a missing bind source is an error (as in `up`)
//!   instead of a root-owned folder compose would create.
//! - Named volumes are declared with `name:` so compose uses the volume `up` uses instead
//!   of a project-prefixed one. `docker compose down -v` deletes them, as `envctl down
//!   --volumes` would.
//! - Every `$` in a value is written `$$`: compose interpolates `${VAR}` in the whole file.
//! - The `envctl.profile` and `envctl.config-hash` labels are kept, so `envctl ps` lists
//!   the compose container as the profile's.
//!
//! Compose adds its own `com.docker.compose.*` labels and puts the container on the
//! project's network; both are compose's design, not differences in the environment.

use serde_json::{Map, Value, json};

use super::{
    BindSource, ExportError, ExportInput, Exported, Notice, Target, bind_source, decimal_cpus,
    path_text, relative_path, yaml,
};
use crate::profile::model::{GpuRequest, MountKind};
use crate::profile::size::ByteSize;
use crate::spec::DeviceRequest;

const TARGET: Target = Target::Compose;

/// The compose file for `input`'s profile.
pub fn compose(input: &ExportInput<'_>) -> Result<Exported, ExportError> {
    let profile = &input.resolved.profile;
    let body = input.body;
    let host = &body.host_config;
    let mut notices = Vec::new();
    let mut service = Map::new();

    service.insert("image".into(), literal(&body.image));
    service.insert(
        "command".into(),
        Value::Array(body.cmd.iter().map(|word| literal(word)).collect()),
    );
    if let Some(init) = host.init {
        service.insert("init".into(), Value::Bool(init));
    }
    if let Some(workdir) = &body.working_dir {
        service.insert("working_dir".into(), literal(workdir));
    }
    if let Some(user) = &body.user {
        service.insert("user".into(), literal(user));
    }
    let environment: Map<String, Value> = super::environment(body)
        .into_iter()
        .map(|(key, value)| (key, literal(&value)))
        .collect();
    if !environment.is_empty() {
        service.insert("environment".into(), Value::Object(environment));
    }
    service.insert(
        "labels".into(),
        Value::Object(
            body.labels
                .iter()
                .map(|(key, value)| (key.clone(), literal(value)))
                .collect(),
        ),
    );
    if !profile.ports.is_empty() {
        service.insert(
            "ports".into(),
            Value::Array(
                profile
                    .ports
                    .iter()
                    .map(|port| Value::String(port.to_string()))
                    .collect(),
            ),
        );
    }

    let mut named_volumes = Map::new();
    let mut volumes = Vec::new();
    for mount in &profile.mounts {
        let mut entry = Map::new();
        match mount.kind {
            MountKind::Volume => {
                entry.insert("type".into(), json!("volume"));
                entry.insert("source".into(), literal(&mount.source));
                named_volumes.insert(
                    mount.source.clone(),
                    json!({ "name": literal(&mount.source) }),
                );
            }
            MountKind::Bind => {
                let source = match bind_source(mount, input)? {
                    BindSource::Home { rest } if rest.is_empty() => "~".to_string(),
                    BindSource::Home { rest } => format!("~/{rest}"),
                    BindSource::Absolute(path) => path_text(&path)?,
                    BindSource::Relative(path) => {
                        path_text(&relative_path(&input.output_directory(), &path))?
                    }
                };
                entry.insert("type".into(), json!("bind"));
                entry.insert("source".into(), literal(&source));
            }
        }
        entry.insert("target".into(), literal(&mount.target));
        if mount.read_only {
            entry.insert("read_only".into(), Value::Bool(true));
        }
        volumes.push(Value::Object(entry));
    }
    if !volumes.is_empty() {
        service.insert("volumes".into(), Value::Array(volumes));
    }

    if let Some(memory) = host.memory.and_then(|bytes| u64::try_from(bytes).ok()) {
        service.insert("mem_limit".into(), json!(ByteSize(memory).to_string()));
    }
    if let Some(nanos) = host.nano_cpus {
        service.insert("cpus".into(), cpus_value(nanos));
    }
    if let Some(shm) = host.shm_size.and_then(|bytes| u64::try_from(bytes).ok()) {
        service.insert("shm_size".into(), json!(ByteSize(shm).to_string()));
    }
    if let Some(ipc) = &host.ipc_mode {
        service.insert("ipc".into(), literal(ipc));
    }
    if !host.ulimits.is_empty() {
        let ulimits: Map<String, Value> = host
            .ulimits
            .iter()
            .map(|limit| {
                let value = if limit.soft == limit.hard {
                    json!(limit.soft)
                } else {
                    json!({ "soft": limit.soft, "hard": limit.hard })
                };
                (limit.name.clone(), value)
            })
            .collect();
        service.insert("ulimits".into(), Value::Object(ulimits));
    }
    if !host.device_requests.is_empty() {
        let devices: Vec<Value> = host.device_requests.iter().map(device).collect();
        service.insert(
            "deploy".into(),
            json!({ "resources": { "reservations": { "devices": devices } } }),
        );
        if profile.gpus == GpuRequest::Optional {
            notices.push(Notice::new(
                TARGET,
                "gpus",
                "compose has no \"GPU if available\" (docker/compose#12514): the file reserves every GPU, so it starts only where the NVIDIA runtime is installed; delete the `deploy` block for hosts without GPUs",
            ));
        }
    }

    let mut services = Map::new();
    services.insert(service_name(&profile.name), Value::Object(service));
    let mut document = Map::new();
    document.insert("services".into(), Value::Object(services));
    if !named_volumes.is_empty() {
        document.insert("volumes".into(), Value::Object(named_volumes));
    }

    let name = &profile.name;
    let relative_note = if input.output_file.is_some() {
        "# Relative bind sources are relative to this file's folder, as compose reads them."
    } else {
        "# Relative bind sources are relative to the folder envctl ran in: keep this file there."
    };
    let header = format!(
        "# Compose file for envctl profile `{name}` (`envctl export {name} --to compose`).\n\
         # Start: `docker compose up -d` (or `docker-compose up -d`); stop: `docker compose down`.\n\
         {relative_note}\n"
    );
    Ok(Exported {
        text: format!("{header}{}", yaml::to_yaml(&Value::Object(document))),
        notices,
    })
}

/// A string value with compose's interpolation escaped (`$` → `$$`).
fn literal(value: &str) -> Value {
    Value::String(value.replace('$', "$$"))
}

/// `cpus` as a YAML number that reads back as the same NanoCpus: an integer when whole,
/// else the shortest decimal.
fn cpus_value(nanos: i64) -> Value {
    if nanos % 1_000_000_000 == 0 {
        return json!(nanos / 1_000_000_000);
    }
    decimal_cpus(nanos)
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// One `deploy.resources.reservations.devices` entry for a `DeviceRequests` entry.
fn device(request: &DeviceRequest) -> Value {
    let mut entry = Map::new();
    match &request.device_ids {
        Some(ids) if !ids.is_empty() => {
            entry.insert("count".into(), json!(0));
            entry.insert("device_ids".into(), json!(ids));
        }
        _ if request.count < 0 => {
            entry.insert("count".into(), json!("all"));
        }
        _ => {
            entry.insert("count".into(), json!(request.count));
        }
    }
    let capabilities: Vec<String> = request.capabilities.iter().flatten().cloned().collect();
    entry.insert("capabilities".into(), json!(capabilities));
    if !request.driver.is_empty() {
        entry.insert("driver".into(), json!(request.driver));
    }
    if !request.options.is_empty() {
        entry.insert("options".into(), json!(request.options));
    }
    Value::Object(entry)
}

/// The profile name as a compose service name (`[a-zA-Z0-9._-]`).
fn service_name(profile: &str) -> String {
    let name: String = profile
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() {
        "envctl".into()
    } else {
        name
    }
}
