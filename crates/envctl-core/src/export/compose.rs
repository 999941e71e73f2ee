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
//!   required. With `device_ids` only `device_ids` is written: Compose v2 refuses it next
//!   to `count` ("`count` and `device_ids` attributes are exclusive", printed even by a
//!   `config -q` that exits 0). Both versions send `device_ids` alone as `Count: 0` with
//!   the list, the request `up` sends (VERIFIED with Compose 1.29.2 and 2.40.3 on Docker
//!   20.10, tests/it/compose_runs.rs).
//! - Ports in Docker's short syntax with the host IP always written, so loopback stays
//!   loopback.
//! - Mounts in the long syntax, binds with `bind.propagation: rprivate`, so that a missing
//!   bind source is an error (as in `up`) instead of a root-owned folder Docker creates.
//!   Compose v2 sends a bind as `HostConfig.Binds` (which creates the folder) unless it
//!   needs the Mount API, and a propagation forces the Mount API; Compose v1 (1.29) sends
//!   the long syntax as `HostConfig.Mounts` anyway. The Mount API refuses a missing source
//!   ("bind source path does not exist"). `rprivate` is Docker's default propagation, so
//!   the mount is the one `up` makes. `bind.create_host_path: false` would say the same to
//!   v2, but v1's schema refuses that key. VERIFIED on Docker 20.10 with Compose 1.29.2
//!   and 2.40.3 (tests/it/compose_runs.rs).
//! - Named volumes are declared with `name:` so compose uses the volume `up` uses instead
//!   of a project-prefixed one. `docker compose down -v` deletes them, as `envctl down
//!   --volumes` would.
//! - Every `$` in a value is written `$$`: compose interpolates `${VAR}` in the whole file.
//! - A secret variable (`crate::secret`) is written `${KEY}`, never its value: compose
//!   takes it from the shell that runs it (or its `.env` file); the header and a notice
//!   say which to export.
//! - The `envctl.profile` and `envctl.config-hash` labels are kept, so `envctl ps` lists
//!   the compose container as the profile's.
//!
//! - `network_mode: bridge`: the container joins Docker's default network, as `up`'s does,
//!   instead of a `PROJECT_default` network compose would make. A project network is not
//!   the same environment: its containers resolve names through Docker's embedded DNS
//!   (`nameserver 127.0.0.11` in `/etc/resolv.conf`, where `up`'s has the host's
//!   resolvers), it takes a subnet of its own (which can shadow a route of the host's
//!   network), and it is cut off from the containers on the default network. A one-service
//!   file gains nothing from it (no other service to find by name).
//! - `restart: "no"`, as `up` sends it: Compose v1 would otherwise send an empty policy
//!   name (which Docker also reads as "never"), so both containers read the same.
//!
//! - The profile's `network = "host"` (or `none`, `bridge`) as `network_mode`; a named
//!   network as the service's `networks` and a top-level `external` network of that name,
//!   which compose joins and never creates or removes. `devices`, `cap_add` and
//!   `hostname` as compose's keys of the same meaning.
//!
//! Compose adds its own `com.docker.compose.*` labels; that is compose's design, not a
//! difference in the environment. tests/it/compose_runs.rs starts the export on both
//! Compose versions and compares every field of `docker inspect` with `up`'s container.

use serde_json::{Map, Value, json};

use super::view::{BodyView, Gpus, MountSource, MountView};
use super::{
    BindSource, ExportError, ExportInput, Exported, Notice, Target, decimal_cpus, path_text,
    relative_path, yaml,
};
use crate::container_plan::origin::Origin;
use crate::container_plan::{DeviceRequest, ORIGIN_LABEL};
use crate::profile::size::ByteSize;

const TARGET: Target = Target::Compose;
/// Docker's default bind propagation, written so that both Compose versions use the Mount
/// API, which refuses a missing bind source (see the module doc).
const BIND_PROPAGATION: &str = "rprivate";
/// Docker's default network, the one `up`'s container joins.
const NETWORK_MODE: &str = "bridge";

/// The compose file for `input`'s profile.
pub fn compose(input: &ExportInput<'_>) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    let mut service = Map::new();
    insert_process(&mut service, &view);
    insert_environment(&mut service, &view, &mut notices);
    insert_labels(&mut service, &view);
    insert_ports(&mut service, &view);
    let named_volumes = insert_volumes(&mut service, &view, input)?;
    insert_resources(&mut service, &view);
    insert_gpus(&mut service, &view, &mut notices);

    let mut services = Map::new();
    services.insert(service_name(view.profile_name), Value::Object(service));
    let mut document = Map::new();
    document.insert("services".into(), Value::Object(services));
    if !named_volumes.is_empty() {
        document.insert("volumes".into(), Value::Object(named_volumes));
    }
    if let Some(network) = view.named_network() {
        // `external`: the network `docker network create` made, under its own name.
        let mut networks = Map::new();
        networks.insert(
            network.to_string(),
            json!({ "external": true, "name": literal(network) }),
        );
        document.insert("networks".into(), Value::Object(networks));
    }
    Ok(Exported {
        text: format!(
            "{}{}",
            header(view.profile_name, &view.secrets, input),
            yaml::to_yaml(&Value::Object(document))
        ),
        notices,
    })
}

/// Image, command, init, working directory and user; the network and restart policy `up`
/// uses (see the module doc).
fn insert_process(service: &mut Map<String, Value>, view: &BodyView<'_>) {
    service.insert("image".into(), literal(view.image));
    match view.named_network() {
        // A named network is joined as an external one (compose makes none of its own).
        Some(network) => {
            service.insert("networks".into(), json!([literal(network)]));
        }
        None => {
            let mode = view.network_mode.unwrap_or(NETWORK_MODE);
            service.insert("network_mode".into(), literal(mode));
        }
    }
    if let Some(hostname) = view.hostname {
        service.insert("hostname".into(), literal(hostname));
    }
    if !view.devices.is_empty() {
        let devices = view
            .written_devices()
            .iter()
            .map(|device| literal(device))
            .collect();
        service.insert("devices".into(), Value::Array(devices));
    }
    if !view.cap_add.is_empty() {
        let capabilities = view.cap_add.iter().map(|name| literal(name)).collect();
        service.insert("cap_add".into(), Value::Array(capabilities));
    }
    service.insert("restart".into(), literal(view.restart_policy));
    service.insert(
        "command".into(),
        Value::Array(view.command.iter().map(|word| literal(word)).collect()),
    );
    if let Some(init) = view.init {
        service.insert("init".into(), Value::Bool(init));
    }
    if let Some(workdir) = view.working_dir {
        service.insert("working_dir".into(), literal(workdir));
    }
    if let Some(user) = view.user {
        service.insert("user".into(), literal(user));
    }
}

/// The environment; a secret as `${KEY}`, which compose reads from its own environment.
fn insert_environment(
    service: &mut Map<String, Value>,
    view: &BodyView<'_>,
    notices: &mut Vec<Notice>,
) {
    let environment: Map<String, Value> = view
        .environment
        .iter()
        .map(|(key, value)| {
            if view.is_secret(key) {
                (key.clone(), secret_reference(key))
            } else {
                (key.clone(), literal(value))
            }
        })
        .collect();
    if !environment.is_empty() {
        service.insert("environment".into(), Value::Object(environment));
    }
    if !view.secrets.is_empty() {
        notices.push(Notice::new(
            TARGET,
            "env",
            format!(
                "secret values are not written: {} {}",
                crate::secret::list(&view.secrets),
                secrets_sentence(&view.secrets)
            ),
        ));
    }
}

/// `${KEY}`; a name compose cannot interpolate (`db.password`) is written without a value,
/// which compose also fills from its environment.
fn secret_reference(key: &str) -> Value {
    let mut characters = key.chars();
    let interpolates = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if interpolates {
        Value::String(format!("${{{key}}}"))
    } else {
        Value::Null
    }
}

/// How the compose file gets its secrets, for the notice and the header.
fn secrets_sentence(secrets: &[String]) -> String {
    let (are, them) = if secrets.len() == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    format!(
        "{are} read from the environment of `docker compose` (`${{KEY}}`): export {them} in that shell (or set {them} in a `.env` file kept out of version control) before `docker compose up`"
    )
}

/// Every label of the body, so `envctl ps` lists the compose container as the profile's,
/// and [`ORIGIN_LABEL`] `compose`, so `ps` and `up` know compose made it.
fn insert_labels(service: &mut Map<String, Value>, view: &BodyView<'_>) {
    let mut labels: Map<String, Value> = view
        .labels
        .iter()
        .map(|(key, value)| (key.clone(), literal(value)))
        .collect();
    labels.insert(ORIGIN_LABEL.into(), literal(Origin::COMPOSE));
    service.insert("labels".into(), Value::Object(labels));
}

/// Ports in the short syntax with the host IP, so loopback stays loopback.
fn insert_ports(service: &mut Map<String, Value>, view: &BodyView<'_>) {
    if !view.ports.is_empty() {
        service.insert(
            "ports".into(),
            Value::Array(
                view.written_ports()
                    .into_iter()
                    .map(Value::String)
                    .collect(),
            ),
        );
    }
}

/// The service's `volumes` (long syntax); returns the top-level named volumes.
fn insert_volumes(
    service: &mut Map<String, Value>,
    view: &BodyView<'_>,
    input: &ExportInput<'_>,
) -> Result<Map<String, Value>, ExportError> {
    let mut named_volumes = Map::new();
    let mut volumes = Vec::new();
    for mount in &view.mounts {
        let source = match &mount.source {
            MountSource::Volume => {
                named_volumes.insert(
                    mount.written.to_string(),
                    json!({ "name": literal(mount.written) }),
                );
                mount.written.to_string()
            }
            MountSource::Bind(source) => bind_text(source.clone()?, input)?,
        };
        volumes.push(volume_entry(mount, &source));
    }
    if !volumes.is_empty() {
        service.insert("volumes".into(), Value::Array(volumes));
    }
    Ok(named_volumes)
}

/// A bind source as compose reads it: `~` kept, relative paths from the file's folder.
fn bind_text(source: BindSource, input: &ExportInput<'_>) -> Result<String, ExportError> {
    Ok(match source {
        BindSource::Home { rest } if rest.is_empty() => "~".to_string(),
        BindSource::Home { rest } => format!("~/{rest}"),
        BindSource::Absolute(path) => path_text(&path)?,
        BindSource::Relative(path) => path_text(&relative_path(&input.output_directory(), &path))?,
    })
}

/// One long-syntax mount; a bind carries [`BIND_PROPAGATION`] (see the module doc).
fn volume_entry(mount: &MountView<'_>, source: &str) -> Value {
    let mut entry = Map::new();
    entry.insert("type".into(), json!(mount.kind_name()));
    entry.insert("source".into(), literal(source));
    entry.insert("target".into(), literal(mount.target));
    if mount.read_only {
        entry.insert("read_only".into(), Value::Bool(true));
    }
    if matches!(mount.source, MountSource::Bind(_)) {
        entry.insert("bind".into(), json!({ "propagation": BIND_PROPAGATION }));
    }
    Value::Object(entry)
}

/// Service-level limits (not `deploy.resources.limits`, which compose v1 applies only
/// with `--compatibility`).
fn insert_resources(service: &mut Map<String, Value>, view: &BodyView<'_>) {
    if let Some(memory) = view.memory {
        service.insert("mem_limit".into(), json!(ByteSize(memory).to_string()));
    }
    if let Some(nanos) = view.nano_cpus {
        service.insert("cpus".into(), cpus_value(nanos));
    }
    if let Some(shm) = view.shm_size {
        service.insert("shm_size".into(), json!(ByteSize(shm).to_string()));
    }
    if let Some(ipc) = view.ipc_mode {
        service.insert("ipc".into(), literal(ipc));
    }
    if !view.ulimits.is_empty() {
        let ulimits: Map<String, Value> = view
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
}

/// GPUs as `deploy.resources.reservations.devices`.
fn insert_gpus(service: &mut Map<String, Value>, view: &BodyView<'_>, notices: &mut Vec<Notice>) {
    if view.device_requests.is_empty() {
        return;
    }
    let devices: Vec<Value> = view.device_requests.iter().map(device).collect();
    service.insert(
        "deploy".into(),
        json!({ "resources": { "reservations": { "devices": devices } } }),
    );
    if view.gpus == Gpus::Optional {
        notices.push(Notice::new(
            TARGET,
            "gpus",
            "compose has no \"GPU if available\" (docker/compose#12514): the file reserves every GPU, so it starts only where the NVIDIA runtime is installed; delete the `deploy` block for hosts without GPUs",
        ));
    }
}

/// The comment lines above the document.
fn header(name: &str, secrets: &[String], input: &ExportInput<'_>) -> String {
    let relative_note = if input.output_file.is_some() {
        "# Relative bind sources are relative to this file's folder, as compose reads them."
    } else {
        "# Relative bind sources are relative to the folder envctl ran in: keep this file there."
    };
    let mut header = format!(
        "# Compose file for envctl profile `{name}` (`envctl export {name} --to compose`).\n\
         # Start: `docker compose up -d` (or `docker-compose up -d`); stop: `docker compose down`.\n\
         {relative_note}\n"
    );
    if !secrets.is_empty() {
        header.push_str(&format!(
            "# Secrets: {} {}.\n",
            secrets.join(", "),
            secrets_sentence(secrets)
        ));
    }
    header
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
