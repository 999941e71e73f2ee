//! `envctl lock [PROFILE…]`: resolves each profile's image tag to the digest the registry
//! serves for it (`ops::lock`: asked of the registry's API, pulling only when it cannot
//! answer) and writes `envctl.lock` atomically, so everyone runs the same bytes. `up` then
//! uses the locked digest.

use std::path::Path;

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::lock::{LOCK_FILE, file};
use crate::ops::lock::PinSource;
use crate::ui::table::print_table;

#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Profiles to lock (default: the project's ./envctl/ profiles)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profiles: Vec<String>,
    /// Where the registry cannot be asked and the image is pulled instead: pull it again
    /// even when it is present (the registry's answer needs no pull)
    #[arg(long)]
    pub update: bool,
}

#[derive(Debug, Serialize)]
struct Change {
    profile: String,
    image: String,
    digest: String,
    previous: Option<String>,
    /// `registry` (asked of its API, nothing pulled) or `pull` (the engine's record).
    source: PinSource,
}

/// How long `envctl lock` waits for another process's lock on the project folder.
const PROJECT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn update_error(error: file::LockUpdateError) -> Error {
    match error {
        file::LockUpdateError::Read(error) => Error::LockFile(error),
        file::LockUpdateError::Write { source, .. } | file::LockUpdateError::Guard { source, .. } => {
            Error::Write {
                path: LOCK_FILE.into(),
                source,
            }
        }
        busy @ file::LockUpdateError::Busy { .. } => Error::Lock {
            message: busy.to_string(),
            hint: "`fuser -v .` shows which process holds it; another `envctl lock` ends by itself, anything else is not envctl's".into(),
        },
    }
}

pub fn run(arguments: LockArgs, context: &Context) -> Result<ExitStatus, Error> {
    let each = context.each_profile_or_project(&arguments.profiles);
    if each.is_empty() {
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
    let today = crate::ops::doctor::today(context.environment.now());
    // Each profile on its own: one that fails is said at once and the others are still
    // locked; the run then exits 1.
    let mut failed = 0usize;
    let mut profiles = Vec::new();
    for (_, resolved) in each {
        match resolved {
            Ok(resolved) => profiles.push(resolved),
            Err(error) => {
                context.printer.error(&error);
                failed += 1;
            }
        }
    }
    let entries = runtime()?.block_on(async {
        // The daemon only for a profile whose registry does not answer.
        let fallback = crate::ops::lock::Fallback::default();
        let mut entries = Vec::new();
        for resolved in &profiles {
            match crate::ops::lock::locked_image(
                resolved,
                arguments.update,
                &today,
                &fallback,
                context,
            )
            .await
            {
                Ok(entry) => entries.push(entry),
                // What belongs to this profile's image (a pull the registry refused, an
                // image without a registry digest) leaves the others to lock; anything
                // else (the daemon gone) would fail them all and is the one error.
                Err(
                    error @ (Error::Lock { .. }
                    | Error::ImageMissing { .. }
                    | Error::Engine(
                        crate::engine::EngineError::Pull { .. }
                        | crate::engine::EngineError::ImageMissing { .. },
                    )),
                ) => {
                    context.printer.error(&error);
                    failed += 1;
                }
                Err(error) => return Err(error),
            }
        }
        Ok::<_, Error>(entries)
    })?;
    if entries.is_empty() {
        // Nothing to write: the lock file stays as it was.
        context
            .printer
            .warn(&format!("no profile locked; {LOCK_FILE} is unchanged"));
        return Ok(ExitStatus::Failure);
    }
    // Read, change and write under the folder's lock: a parallel `envctl lock` of other
    // profiles keeps its entries, and ours are judged against the file as it is now. The
    // wait for it is bounded, said, and ends at a signal with nothing written.
    let guard = runtime()?.block_on(super::wait_for(
        &format!(
            "waiting for the lock another process holds on this folder, to write {LOCK_FILE} (at most {} s; Ctrl-C stops with nothing written)",
            PROJECT_LOCK_WAIT.as_secs()
        ),
        PROJECT_LOCK_WAIT,
        context,
        || file::try_guard(path),
        || file::LockUpdateError::Busy {
            folder: "this folder".into(),
            seconds: PROJECT_LOCK_WAIT.as_secs(),
        },
    ));
    let guard = match guard {
        Ok(super::Waited::Got(guard)) => guard,
        Ok(super::Waited::Signalled(code)) => {
            context
                .printer
                .warn(&format!("interrupted: {LOCK_FILE} is unchanged"));
            return Ok(ExitStatus::External(code));
        }
        Err(error) => return Err(update_error(error)),
    };
    let changes = file::update(&guard, path, |lock| {
        entries
            .into_iter()
            .map(|locked| {
                let crate::ops::lock::Locked { entry, source } = locked;
                let old = lock.entry(&entry.profile);
                let previous = old.map(|old| old.digest.clone());
                // The same pin keeps its entry, date included: the file does not change.
                let same = old.is_some_and(|old| {
                    old.image == entry.image
                        && old.digest == entry.digest
                        && old.platform == entry.platform
                });
                let change = Change {
                    profile: entry.profile.clone(),
                    image: entry.image.clone(),
                    digest: entry.digest.clone(),
                    previous,
                    source,
                };
                if !same {
                    lock.upsert(entry);
                }
                change
            })
            .collect::<Vec<_>>()
    })
    .map_err(update_error)?;
    drop(guard);
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
        let unchanged = changes
            .iter()
            .all(|change| change.previous.as_deref() == Some(change.digest.as_str()));
        context.printer.info(&if unchanged {
            format!("{LOCK_FILE} is unchanged: every pin is still the registry's digest")
        } else {
            format!("wrote {LOCK_FILE}; commit it so the team runs the same images")
        });
    }
    if failed > 0 {
        context.printer.warn(&format!(
            "{failed} profile{} not locked (said above); the others are in {LOCK_FILE}",
            if failed == 1 { "" } else { "s" }
        ));
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}
