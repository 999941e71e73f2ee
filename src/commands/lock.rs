//! `envctl lock [PROFILE…]`: resolves each profile's image tag to the digest the registry
//! gave (pulling when needed) and writes `envctl.lock` atomically, so everyone runs the
//! same bytes. `up` then uses the locked digest.

use std::path::Path;

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::lock::{LOCK_FILE, LockedImage, file, repo_digest_matches};
use crate::ops::up::{PullPolicy, ensure_image};
use crate::ui::table::print_table;

#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Profiles to lock (default: the project's ./envctl/ profiles)
    pub profiles: Vec<String>,
    /// Pull again to pick up where each tag points now
    #[arg(long)]
    pub update: bool,
}

#[derive(Debug, Serialize)]
struct Change {
    profile: String,
    image: String,
    digest: String,
    previous: Option<String>,
}

pub fn run(arguments: LockArgs, context: &Context) -> Result<ExitStatus, Error> {
    let profiles = context.profiles_or_project(&arguments.profiles)?;
    if profiles.is_empty() {
        return Err(Error::Usage {
            message: "no profile to lock".into(),
            hint: Some(
                "name profiles (`envctl lock pytorch-2.8`), or keep the team's in ./envctl/".into(),
            ),
        });
    }
    let path = Path::new(LOCK_FILE);
    // A lock file that cannot be used is said before anything is pulled.
    file::read(path)?;
    let policy = if arguments.update {
        PullPolicy::Always
    } else {
        PullPolicy::Missing
    };
    let today = crate::ops::doctor::today(context.environment.now());
    let entries = runtime()?.block_on(async {
        let engine = context.engine().await?;
        let mut entries = Vec::new();
        for resolved in &profiles {
            let image = &resolved.profile.image;
            ensure_image(&engine, image, policy, context).await?;
            let reference = image.to_string();
            let facts = engine.image_facts(&reference).await?.ok_or_else(|| Error::ImageMissing { image: reference.clone() })?;
            let name = image.name();
            let digest = facts
                .repo_digests
                .iter()
                .find(|repo_digest| repo_digest_matches(repo_digest, &name))
                .and_then(|repo_digest| repo_digest.split_once('@').map(|(_, digest)| digest.to_string()))
                .ok_or_else(|| Error::Lock {
                    message: format!("image `{reference}` has no registry digest (built or loaded locally?)"),
                    hint: format!("push it to a registry (`docker push {reference}`), then run `envctl lock` again"),
                })?;
            entries.push(LockedImage {
                profile: resolved.profile.name.clone(),
                image: reference,
                digest,
                date: today.clone(),
                platform: facts.platform.clone().unwrap_or_else(|| "unknown".into()),
            });
        }
        Ok::<_, Error>(entries)
    })?;
    // Read, change and write under the folder's lock: a parallel `envctl lock` of other
    // profiles keeps its entries, and ours are judged against the file as it is now.
    let changes = file::update(path, |lock| {
        entries
            .into_iter()
            .map(|entry| {
                let previous = lock.entry(&entry.profile).map(|old| old.digest.clone());
                let change = Change {
                    profile: entry.profile.clone(),
                    image: entry.image.clone(),
                    digest: entry.digest.clone(),
                    previous,
                };
                lock.upsert(entry);
                change
            })
            .collect::<Vec<_>>()
    })
    .map_err(|error| match error {
        file::LockUpdateError::Read(error) => Error::LockFile(error),
        file::LockUpdateError::Write { source, .. } => Error::Write {
            path: LOCK_FILE.into(),
            source,
        },
        file::LockUpdateError::Guard { source, .. } => Error::Write {
            path: LOCK_FILE.into(),
            source,
        },
    })?;
    if context.json {
        #[derive(Serialize)]
        struct Locked<'a> {
            file: &'a str,
            locked: &'a [Change],
        }
        context.printer.json(&Locked {
            file: LOCK_FILE,
            locked: &changes,
        })?;
    } else {
        let rows: Vec<Vec<String>> = changes
            .iter()
            .map(|change| {
                let status = match &change.previous {
                    None => "added".to_string(),
                    Some(previous) if *previous == change.digest => "unchanged".to_string(),
                    Some(_) => "moved".to_string(),
                };
                vec![
                    change.profile.clone(),
                    change.image.clone(),
                    change.digest.chars().take(19).collect(),
                    status,
                ]
            })
            .collect();
        print_table(
            &context.printer,
            &["PROFILE", "IMAGE", "DIGEST", "CHANGE"],
            &rows,
        )?;
        context.printer.info(&format!(
            "wrote {LOCK_FILE}; commit it so the team runs the same images"
        ));
    }
    Ok(ExitStatus::Success)
}
