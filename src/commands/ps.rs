//! `envctl ps`: envctl's containers with profile, image, status, ports, GPUs and drift
//! (the profile on disk no longer matches the container's config hash).

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::spec::{CONFIG_HASH_LABEL, PROFILE_HASH_LABEL, PROFILE_LABEL};
use crate::ui::table::print_table;

#[derive(Debug, Serialize)]
pub struct Row {
    pub name: String,
    pub id: String,
    pub profile: String,
    pub image: String,
    pub image_id: String,
    pub state: String,
    pub status: String,
    pub ports: Vec<String>,
    pub gpus: Option<String>,
    /// `current`, `changed` (the profile differs from the container), or `unknown` (the
    /// profile cannot be found or read here).
    pub drift: &'static str,
}

pub fn run(all: bool, context: &Context) -> Result<ExitStatus, Error> {
    let rows = runtime()?.block_on(async {
        let engine = context.engine().await?;
        let containers = engine.list_containers(all, true).await?;
        let details = futures_util::future::join_all(
            containers
                .iter()
                .map(|container| engine.inspect_container(&container.id)),
        )
        .await;
        let mut rows = Vec::new();
        for (container, details) in containers.into_iter().zip(details) {
            let gpus = details?.and_then(|details| details.gpus);
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
            rows.push(Row {
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
                state: container.state,
                status: container.status,
                ports: container.ports,
                gpus,
                drift,
            });
        }
        Ok::<_, Error>(rows)
    })?;
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
        .map(|row| {
            vec![
                row.name.clone(),
                row.profile.clone(),
                format!("{} ({})", row.image, row.image_id),
                row.status.clone(),
                row.ports.join(", "),
                row.gpus.clone().unwrap_or_else(|| "-".into()),
                row.drift.to_string(),
            ]
        })
        .collect();
    print_table(
        &context.printer,
        &[
            "NAME", "PROFILE", "IMAGE", "STATUS", "PORTS", "GPUS", "DRIFT",
        ],
        &table,
    )?;
    if rows.iter().any(|row| row.drift == "changed") {
        context.printer.warn("a profile changed since its container was created; `envctl up PROFILE --recreate` applies it");
    }
    Ok(ExitStatus::Success)
}
