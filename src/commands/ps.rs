//! `envctl ps`: envctl's containers with profile, image, status, ports, GPUs and drift
//! (the profile on disk no longer matches the container's config hash), and where each
//! came from: `up`, or another tool that ran an export (`compose (PROJECT)`). The user's
//! own by default; `--all-users` lists everyone's with an OWNER column. `--hosts a,b,c`
//! lists several daemons in one table with a HOST column (`ops::hosts`): each asked at
//! once, an unreachable one a row saying why.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::spec::origin::Origin;
use crate::spec::{CONFIG_HASH_LABEL, PROFILE_HASH_LABEL, PROFILE_LABEL};
use crate::ui::table::print_table;

/// The image as the table shows it: a pinned reference keeps 12 hex digits of its digest
/// (the id would only repeat it), a tag gets the image id's first 12; `--no-trunc` shows
/// both whole. A locked image was ~200 columns wide.
fn shown_image(image: &str, image_id: &str, no_trunc: bool) -> String {
    if no_trunc {
        return format!("{image} (sha256:{image_id})");
    }
    match image.split_once("@sha256:") {
        Some((name, digest)) => {
            format!(
                "{name}@sha256:{}",
                digest.chars().take(12).collect::<String>()
            )
        }
        None => format!(
            "{image} ({})",
            image_id.chars().take(12).collect::<String>()
        ),
    }
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub name: String,
    pub id: String,
    pub profile: String,
    pub image: String,
    /// The first 12 hex digits, as `docker ps` shows ids.
    pub image_id: String,
    /// For `--no-trunc`; the JSON keeps its short `image_id`.
    #[serde(skip)]
    pub full_image_id: String,
    pub state: String,
    pub status: String,
    /// The kernel's OOM killer ended it; none when the daemon did not say.
    pub oom_killed: Option<bool>,
    pub ports: Vec<String>,
    /// By index where NVML names the container's GPUs here (`1,4`), else as stored.
    pub gpus: Option<String>,
    /// The GPUs as the container stores them (UUIDs), when `gpus` shows them by index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_ids: Option<String>,
    /// `current`, `changed` (the profile differs from the container), or `unknown` (the
    /// profile cannot be found or read here).
    pub drift: &'static str,
    /// Who made it: `up`, `compose` (`docker compose up` of an export), `devcontainer`.
    pub origin: String,
    /// The Compose project, when compose made it.
    pub compose_project: Option<String>,
    /// For the table: `up`, `compose (PROJECT)`.
    #[serde(skip)]
    pub shown_origin: String,
    /// The login name (or `uid N`) of whoever made it with `up`; none for a container
    /// made before owners were recorded, or by another tool from an export.
    pub owner: Option<String>,
    /// With `--hosts`: the host as named there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// With `--hosts`: what each host answered.
#[derive(Debug, Serialize)]
struct HostState {
    host: String,
    endpoint: String,
    reachable: bool,
    /// How many containers it listed; none when unreachable.
    containers: Option<usize>,
    /// Why it could not be listed: the message with its causes, a stable kind, the hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    /// The table's word for why: the message without its causes.
    #[serde(skip)]
    said: Option<String>,
}

pub fn run(
    all: bool,
    no_trunc: bool,
    all_users: bool,
    hosts: &[String],
    context: &Context,
) -> Result<ExitStatus, Error> {
    if !hosts.is_empty() {
        return run_hosts(all, no_trunc, all_users, hosts, context);
    }
    let (mut rows, here) = runtime()?.block_on(async {
        let engine = context.engine().await?;
        let (rows, here) = tokio::join!(
            rows_of(&engine, all, all_users, context),
            on_this_machine(&engine)
        );
        Ok::<_, Error>((rows?, here))
    })?;
    if here {
        by_local_index(&mut rows, context);
    }
    if context.json {
        #[derive(Serialize)]
        struct Listing<'a> {
            containers: &'a [Row],
        }
        context.printer.json(&Listing { containers: &rows })?;
        return Ok(ExitStatus::Success);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| table_row(row, all_users, no_trunc))
        .collect();
    print_table(&context.printer, &headers(all_users, false), &table)?;
    warn_changed(&rows, context);
    Ok(ExitStatus::Success)
}

/// `ps --hosts`: every host at once, one table with a HOST column; a host that cannot be
/// listed is a row that says why (and its hint on stderr), never a failed command.
fn run_hosts(
    all: bool,
    no_trunc: bool,
    all_users: bool,
    names: &[String],
    context: &Context,
) -> Result<ExitStatus, Error> {
    let hosts = crate::ops::hosts::named(context, names)?;
    let answers = runtime()?.block_on(crate::ops::hosts::each(
        &hosts,
        super::REQUEST_TIMEOUT,
        |engine| async move {
            let (rows, here) = tokio::join!(
                rows_of(&engine, all, all_users, context),
                on_this_machine(&engine)
            );
            Ok::<_, Error>((rows?, here))
        },
    ));
    let mut states = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for answer in answers {
        let host = answer.host.name.clone();
        let endpoint = answer.host.endpoint().to_string();
        match answer.result {
            Ok((mut listed, here)) => {
                // Only a daemon on this machine has its GPUs in this machine's NVML.
                if here {
                    by_local_index(&mut listed, context);
                }
                states.push(HostState {
                    host: host.clone(),
                    endpoint,
                    reachable: true,
                    containers: Some(listed.len()),
                    error: None,
                    error_kind: None,
                    hint: None,
                    said: None,
                });
                rows.extend(listed.into_iter().map(|row| Row {
                    host: Some(host.clone()),
                    ..row
                }));
            }
            Err(error) => {
                let kind = match &error {
                    Error::Engine(engine) => engine.kind(),
                    _ => "other",
                };
                states.push(HostState {
                    host,
                    endpoint,
                    reachable: false,
                    containers: None,
                    error: Some(crate::error::error_chain(&error)),
                    error_kind: Some(kind),
                    hint: error.hint(),
                    said: Some(error.to_string()),
                });
            }
        }
    }
    if context.json {
        #[derive(Serialize)]
        struct Listing<'a> {
            hosts: &'a [HostState],
            containers: &'a [Row],
        }
        context.printer.json(&Listing {
            hosts: &states,
            containers: &rows,
        })?;
        return Ok(ExitStatus::Success);
    }
    let width = headers(all_users, true).len();
    let mut table = Vec::new();
    for state in &states {
        let mine = rows
            .iter()
            .filter(|row| row.host.as_deref() == Some(state.host.as_str()));
        let mut listed = 0;
        for row in mine {
            listed += 1;
            table.push(
                std::iter::once(state.host.clone())
                    .chain(table_row(row, all_users, no_trunc))
                    .collect(),
            );
        }
        if listed == 0 {
            // A host with nothing to list, or that could not be listed, still has its row.
            let said = match &state.said {
                Some(error) => format!("unreachable: {error}"),
                None => "no containers".to_string(),
            };
            let mut line = vec![state.host.clone(), "-".to_string()];
            line.resize(width, "-".to_string());
            let status = headers(all_users, true)
                .iter()
                .position(|header| *header == "STATUS")
                .unwrap_or(width - 1);
            line[status] = said;
            table.push(line);
        }
    }
    print_table(&context.printer, &headers(all_users, true), &table)?;
    for state in states.iter().filter(|state| !state.reachable) {
        let hint = state
            .hint
            .as_ref()
            .map_or_else(String::new, |hint| format!(" (hint: {hint})"));
        let endpoint = if state.endpoint == state.host {
            String::new()
        } else {
            format!(" ({})", state.endpoint)
        };
        context.printer.warn(&format!(
            "host `{}`{endpoint} could not be listed{hint}",
            state.host
        ));
    }
    warn_changed(&rows, context);
    Ok(ExitStatus::Success)
}

/// The table's headers: OWNER first with `--all-users`, HOST before all with `--hosts`.
fn headers(all_users: bool, hosts: bool) -> Vec<&'static str> {
    let headers = [
        "NAME", "PROFILE", "IMAGE", "STATUS", "PORTS", "GPUS", "DRIFT", "ORIGIN",
    ];
    hosts
        .then_some("HOST")
        .into_iter()
        .chain(all_users.then_some("OWNER"))
        .chain(headers)
        .collect()
}

/// One container's cells, in [`headers`]' order (without HOST).
fn table_row(row: &Row, all_users: bool, no_trunc: bool) -> Vec<String> {
    let owner = all_users.then(|| row.owner.clone().unwrap_or_else(|| "-".into()));
    owner
        .into_iter()
        .chain([
            row.name.clone(),
            row.profile.clone(),
            shown_image(&row.image, &row.full_image_id, no_trunc),
            shown_status(row),
            row.ports.join(", "),
            row.gpus.clone().unwrap_or_else(|| "-".into()),
            row.drift.to_string(),
            row.shown_origin.clone(),
        ])
        .collect()
}

/// Each changed container with the command that applies its profile (the name when it
/// is not the profile's default, so the hint reaches that container).
fn warn_changed(rows: &[Row], context: &Context) {
    for row in rows.iter().filter(|row| row.drift == "changed") {
        let target = if row.name == crate::spec::container_name(&row.profile) {
            String::new()
        } else {
            format!(" --name {}", row.name)
        };
        let host = row
            .host
            .as_ref()
            .map_or_else(String::new, |host| format!(" (on {host})"));
        context.printer.warn(&format!(
            "profile `{}` changed since `{}`{host} was created; `envctl up {}{target} --recreate` applies it",
            row.profile, row.name, row.profile
        ));
    }
}

/// Placed containers name their GPUs by UUID: show the indexes this host's NVML gives them.
/// Whether the daemon runs on this machine, so that this machine's NVML numbers its GPUs;
/// not when that cannot be told (the UUIDs are then shown as they are).
async fn on_this_machine(engine: &crate::engine::Engine) -> bool {
    engine
        .daemon_host()
        .await
        .is_ok_and(|host| host.elsewhere().is_none())
}

fn by_local_index(rows: &mut [Row], context: &Context) {
    if rows.iter().any(|row| {
        row.gpus
            .as_deref()
            .is_some_and(|gpus| gpus.contains("GPU-"))
    }) && let Some(nvml) = crate::gpu::gather(context.environment.nvml_library().as_deref())
        .loaded()
        .cloned()
    {
        for row in rows {
            if let Some(gpus) = &row.gpus {
                let shown = crate::spec::placement::by_index(gpus, &nvml.gpus);
                if shown != *gpus {
                    row.gpu_ids = Some(gpus.clone());
                    row.gpus = Some(shown);
                }
            }
        }
    }
}

/// The rows of one daemon's containers (the user's own unless `all_users`).
async fn rows_of(
    engine: &crate::engine::Engine,
    all: bool,
    all_users: bool,
    context: &Context,
) -> Result<Vec<Row>, Error> {
    let mut containers = engine.list_containers(all, true).await?;
    if !all_users {
        containers.retain(|container| crate::ops::target::is_mine(&container.labels, context));
    }
    // A few at a time (`engine::each_bounded`): one connection per container at once
    // runs out of descriptors on a busy host.
    let details = crate::engine::each_bounded(
        containers
            .iter()
            .map(|container| engine.inspect_container(&container.id)),
    )
    .await;
    let mut rows = Vec::new();
    for (container, details) in containers.into_iter().zip(details) {
        // Removed between the list and its inspect: gone, as a later `docker ps` says.
        let Some(details) = details? else { continue };
        let oom_killed = details.oom_killed;
        let gpus = details.gpus;
        let profile = container
            .labels
            .get(PROFILE_LABEL)
            .cloned()
            .unwrap_or_default();
        // Made with `up -e/-p/-v`: compare the profile's own hash, not the overridden one.
        let hash = container
            .labels
            .get(PROFILE_HASH_LABEL)
            .or_else(|| container.labels.get(CONFIG_HASH_LABEL));
        let drift = match (context.search_path.resolve(&profile), hash) {
            (Ok(resolved), Some(hash)) if *hash == resolved.config_hash => "current",
            (Ok(_), Some(_)) => "changed",
            _ => "unknown",
        };
        let origin = Origin::of(&container.labels);
        rows.push(Row {
            owner: crate::spec::ownership::owner_label(&container.labels),
            origin: origin.word().to_string(),
            compose_project: origin.compose_project().map(str::to_string),
            shown_origin: origin.shown(),
            name: container.name,
            id: container.id.chars().take(12).collect(),
            profile,
            image: container.image,
            image_id: container
                .image_id
                .trim_start_matches("sha256:")
                .chars()
                .take(12)
                .collect(),
            full_image_id: container.image_id.trim_start_matches("sha256:").to_string(),
            state: container.state,
            status: container.status,
            oom_killed,
            ports: container.ports,
            gpus,
            gpu_ids: None,
            drift,
            host: None,
        });
    }
    Ok(rows)
}

/// The daemon's status, and for a stopped container the kernel killed, that it did: an
/// `Exited (137)` alone could be a `kill -9`.
fn shown_status(row: &Row) -> String {
    if row.oom_killed == Some(true) && row.state != "running" {
        format!("{} (OOM killed)", row.status)
    } else {
        row.status.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::shown_image;

    #[test]
    fn a_pinned_image_is_cut_to_a_short_digest_unless_whole_is_asked() {
        let digest = "0123456789abcdef".repeat(4);
        let id = "fedcba9876543210".repeat(4);
        let pinned = format!("pytorch/pytorch:2.8.0@sha256:{digest}");
        assert_eq!(
            shown_image(&pinned, &id, false),
            "pytorch/pytorch:2.8.0@sha256:0123456789ab"
        );
        assert_eq!(
            shown_image("busybox:1", &id, false),
            "busybox:1 (fedcba987654)"
        );
        assert_eq!(
            shown_image(&pinned, &id, true),
            format!("{pinned} (sha256:{id})")
        );
    }
}
