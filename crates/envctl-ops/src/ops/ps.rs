//! `envctl ps`'s rows: envctl's containers on one daemon (the user's own unless asked for
//! everyone's), each with its profile's drift (the profile on disk against the
//! container's config hash), where it came from, and its GPUs by this host's index where
//! NVML names them here; with `--hosts`, the same of each daemon, asked at once
//! (`ops::hosts`), the user's own on each being those of the identity that daemon's
//! transport proves (`ops::hosts::user_on`). `commands::ps` renders them.

use serde::Serialize;

use crate::container_plan::origin::Origin;
use crate::container_plan::{
    CONFIG_HASH_LABEL, PROFILE_FILE_LABEL, PROFILE_HASH_LABEL, PROFILE_LABEL,
};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::engine::DaemonHost;
use crate::profile::ResolvedProfile;

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
    /// `current`, `changed` (the profile differs from the container), `impostor` (its
    /// labels claim the profile's current config, but the daemon says it differs from what
    /// envctl makes of it: `target::daemon_differences`), or `unknown` (the profile cannot
    /// be found or read here).
    pub drift: &'static str,
    /// The profile file the container records it was made from (`envctl.profile-file`):
    /// its drift is judged against this file, whatever the name resolves to here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_file: Option<String>,
    /// Whether the profile's name resolves here to another file than `profile_file`: the
    /// command that applies it then runs where the file is (`container_plan::drift::up_from_recorded_file`).
    #[serde(skip)]
    pub named_elsewhere_here: bool,
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
    /// Who the daemon's transport proved its maker to be (`envctl.identity`:
    /// `ssh:alice@gpu2`, `tls:CN=alice`, `uid:1001@laptop`); none for a container made
    /// before identities were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// With `--hosts`: the host as named there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its GPUs that failed (issue 43: NVML says so, or a fatal Xid was recorded and not
    /// cleared), each with why and how to clear it; empty when every GPU of it is sound,
    /// `null` where this host's NVML cannot judge them (another machine's daemon, no NVML).
    pub failed_gpus: Option<Vec<FailedGpu>>,
    /// Its GPU request as envctl's label records it, to judge its GPUs by.
    #[serde(skip)]
    pub gpu_assignment: Option<crate::facts::container::GpuAssignment>,
}

/// A GPU of a container that failed.
#[derive(Debug, Clone, Serialize)]
pub struct FailedGpu {
    pub index: u32,
    pub uuid: Option<String>,
    /// Why it is kept out, with the fix (`checks::health::keep_out`).
    pub why: String,
}

/// The rows of the daemon the context names, with GPUs by this host's index when the
/// daemon runs on this host.
pub async fn rows(all: bool, all_users: bool, context: &Context) -> Result<Vec<Row>, Error> {
    let engine = context.engine().await?;
    let (rows, host) = tokio::join!(
        rows_of(&engine, all, all_users, context.me(), context),
        engine.daemon_host()
    );
    let mut rows = rows?;
    by_index(&mut rows, &engine, host.ok(), context).await;
    Ok(rows)
}

/// What one daemon of `--hosts` answered: its rows (each with its `host`), or why not.
pub struct HostRows {
    /// The host as named on the command line.
    pub host: String,
    pub endpoint: String,
    pub result: Result<Vec<Row>, Error>,
}

/// `ps --hosts`: every daemon named, asked at once, in the order named.
pub async fn rows_on_hosts(
    names: &[String],
    all: bool,
    all_users: bool,
    context: &Context,
) -> Result<Vec<HostRows>, Error> {
    let hosts = crate::ops::hosts::named(context, names)?;
    let answers = crate::ops::hosts::each_with_host(
        &hosts,
        super::REQUEST_TIMEOUT,
        |engine, host| async move {
            // "Yours" on each daemon is who its transport proves the user to be there, as
            // `ps -H` of that daemon alone judges it (`container_plan::ownership::belonging`); with
            // `--all-users` nobody's rows are left out and no identity is needed.
            let owner = if all_users {
                context.user.clone()
            } else {
                crate::ops::hosts::user_on(host, &context.user).await
            };
            let (rows, daemon_host) = tokio::join!(
                rows_of(&engine, all, all_users, &owner, context),
                engine.daemon_host()
            );
            let mut rows = rows?;
            by_index(&mut rows, &engine, daemon_host.ok(), context).await;
            Ok::<_, Error>(rows)
        },
    )
    .await;
    Ok(answers
        .into_iter()
        .map(|answer| {
            let host = answer.host.name.clone();
            let endpoint = answer.host.endpoint().to_string();
            let result = answer.result.map(|listed| {
                listed
                    .into_iter()
                    .map(|row| Row {
                        host: Some(host.clone()),
                        ..row
                    })
                    .collect()
            });
            HostRows {
                host,
                endpoint,
                result,
            }
        })
        .collect())
}

/// Placed containers name their GPUs by UUID: show the indexes the daemon's machine gives
/// them — from this machine's NVML when the daemon runs here (and mark the GPUs of each
/// that failed, issue 43), else from the GPU record the daemon keeps (`ops::server_gpus`,
/// believed only when it names that machine). Where neither is known (the machine could
/// not be told, no record) the UUIDs stay, and failed GPUs stay unjudged (`null`).
async fn by_index(rows: &mut [Row], engine: &Engine, host: Option<DaemonHost>, context: &Context) {
    let gpus = match host {
        Some(DaemonHost::ThisHost) => {
            if !rows
                .iter()
                .any(|row| row.gpu_assignment.is_some() || row.gpus.is_some())
            {
                return;
            }
            let Some(nvml) = crate::gpu::gather(context.environment.nvml_library().as_deref())
                .loaded()
                .cloned()
            else {
                return;
            };
            mark_failed_gpus(rows, &nvml.gpus, context);
            nvml.gpus
        }
        Some(DaemonHost::Elsewhere { name }) => {
            if !rows.iter().any(|row| {
                row.gpus
                    .as_deref()
                    .is_some_and(|gpus| gpus.contains("GPU-"))
            }) {
                return;
            }
            match crate::ops::server_gpus::recorded_only(engine, &name).await {
                Some(seen) => seen.facts.gpus,
                None => return,
            }
        }
        None => return,
    };
    for row in rows {
        if let Some(shown_ids) = &row.gpus {
            let shown = crate::container_plan::placement::by_index(shown_ids, &gpus);
            if shown != *shown_ids {
                row.gpu_ids = Some(shown_ids.clone());
                row.gpus = Some(shown);
            }
        }
    }
}

/// Sets each row's [`Row::failed_gpus`] from this host's GPUs and health record, for the
/// rows whose request envctl's label records (others stay unjudged: `null`).
fn mark_failed_gpus(rows: &mut [Row], devices: &[crate::facts::gpu::GpuDevice], context: &Context) {
    let fatal_xids = match crate::ops::placement::fatal_xids_in_force(None, context) {
        Ok(xids) => xids,
        Err(error) => {
            context.printer.warn(&format!(
                "the GPUs' health is not shown: {}",
                crate::error::error_chain(&error)
            ));
            return;
        }
    };
    let mut occupancy: Vec<crate::container_plan::placement::GpuOccupancy> =
        crate::container_plan::placement::occupancy(devices, &[]).0;
    crate::ops::placement::mark_kept_out(&mut occupancy, devices, &fatal_xids, context);
    for row in rows.iter_mut() {
        let Some(assignment) = &row.gpu_assignment else {
            continue;
        };
        let indexes = crate::container_plan::placement::indexes_of(assignment, devices);
        row.failed_gpus = Some(
            occupancy
                .iter()
                .filter(|gpu| indexes.contains(&gpu.index))
                .filter_map(|gpu| {
                    Some(FailedGpu {
                        index: gpu.index,
                        uuid: gpu.uuid.clone(),
                        why: gpu.kept_out.clone()?,
                    })
                })
                .collect(),
        );
    }
}

/// The rows of one daemon's containers (the user's own unless `all_users`).
async fn rows_of(
    engine: &Engine,
    all: bool,
    all_users: bool,
    owner: &crate::facts::user::User,
    context: &Context,
) -> Result<Vec<Row>, Error> {
    let mut containers = engine.list_containers(all, true).await?;
    if !all_users {
        containers.retain(|container| {
            matches!(
                crate::container_plan::ownership::belonging(&container.labels, owner),
                crate::container_plan::ownership::Belonging::Mine
                    | crate::container_plan::ownership::Belonging::Unowned
            )
        });
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
        let (judged, named_elsewhere_here) = judged_profile(context, &details, &profile);
        let Some(drift) = drift_of(engine, &details, judged, hash, context).await? else {
            continue;
        };
        rows.push(row_of(
            container,
            &details,
            profile,
            drift,
            named_elsewhere_here,
        ));
    }
    Ok(rows)
}

/// How the container stands against its profile: `current`, `impostor` (its labels claim
/// to be current, the daemon's answer says it differs), `changed` or `unknown`; `None`
/// where it was removed before the daemon could be asked.
async fn drift_of(
    engine: &Engine,
    details: &crate::facts::container::ContainerDetails,
    judged: Option<ResolvedProfile>,
    hash: Option<&String>,
    context: &Context,
) -> Result<Option<&'static str>, Error> {
    Ok(Some(match (judged, hash) {
        (Some(resolved), Some(hash)) if *hash == resolved.config_hash => {
            // The labels' claim is believed only where the daemon's own answer bears
            // it out (`target::daemon_differences`: one more inspect, for the
            // containers that claim to be current only).
            match super::target::daemon_differences(engine, details, &resolved, context).await? {
                None => return Ok(None),
                Some(differences) if differences.is_empty() => "current",
                Some(differences) => {
                    warn_impostor(&details.name, &resolved, &differences, engine, context);
                    "impostor"
                }
            }
        }
        (Some(_), Some(_)) => "changed",
        _ => "unknown",
    }))
}

/// The row of one listed container, with what its inspect adds.
fn row_of(
    container: crate::facts::container::ContainerSummary,
    details: &crate::facts::container::ContainerDetails,
    profile: String,
    drift: &'static str,
    named_elsewhere_here: bool,
) -> Row {
    let origin = Origin::of(&container.labels);
    Row {
        owner: crate::container_plan::ownership::owner_label(&container.labels),
        identity: container
            .labels
            .get(crate::container_plan::ownership::IDENTITY_LABEL)
            .map(|identity| identity.chars().take(200).collect()),
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
        oom_killed: details.oom_killed,
        ports: container.ports,
        gpus: details.gpus.clone(),
        gpu_ids: None,
        drift,
        profile_file: details.labels.get(PROFILE_FILE_LABEL).cloned(),
        named_elsewhere_here,
        host: None,
        failed_gpus: None,
        gpu_assignment: details
            .labels
            .get(crate::container_plan::GPUS_LABEL)
            .and_then(|label| crate::engine::occupancy::parse_label(label)),
    }
}

/// Says why `ps` calls a container `impostor`: its labels claim to be the profile's
/// current container, the daemon says it differs (`ownership::OwnershipError::Impostor`,
/// with its hint, a command).
fn warn_impostor(
    name: &str,
    resolved: &ResolvedProfile,
    differences: &[crate::container_plan::drift::Difference],
    engine: &Engine,
    context: &Context,
) {
    if let Err(error) = crate::container_plan::ownership::not_an_impostor(
        name,
        &resolved.profile.name,
        differences,
        engine.known_kind().cli(),
    ) {
        context
            .printer
            .warn(&format!("{error}; hint: {}", error.hint()));
    }
}

/// The profile a container's drift is judged against, and whether its name resolves here
/// to another file than the one the container records. A container made from a file
/// (`envctl.profile-file`) is judged against that file only (issue 40: from another folder
/// the name may be the bundled profile); where that file cannot be read here (another
/// host's, another user's, gone) nothing here can judge it. Without the label, the name as
/// it resolves here (bundled profiles record no file).
fn judged_profile(
    context: &Context,
    details: &crate::facts::container::ContainerDetails,
    profile: &str,
) -> (Option<ResolvedProfile>, bool) {
    let here = context.search_path.resolve(profile).ok();
    let Some(file) = details.labels.get(PROFILE_FILE_LABEL) else {
        return (here, false);
    };
    let working_directory = context.working_directory().ok();
    let is_recorded = |resolved: &ResolvedProfile| {
        working_directory
            .as_ref()
            .and_then(|folder| crate::container_plan::profile_file_label(resolved, folder))
            .as_ref()
            == Some(file)
    };
    if let Some(resolved) = here.filter(|resolved| is_recorded(resolved)) {
        return (Some(resolved), false);
    }
    match crate::ops::target::container_profile(context, details) {
        Some(Ok(resolved)) if is_recorded(&resolved) => (Some(resolved), true),
        _ => (None, true),
    }
}
