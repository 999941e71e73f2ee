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
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
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
    let policy = if arguments.update {
        PullPolicy::Always
    } else {
        PullPolicy::Missing
    };
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
        let engine = context.engine().await?;
        let mut entries = Vec::new();
        for resolved in &profiles {
            match locked_image(&engine, resolved, policy, &today, context).await {
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
            .map(|entry| {
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

/// How long the registry may take to say which digest a tag points at.
const REGISTRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// The lock entry of one profile: its image pulled per `policy`, then the digest the
/// registry serves for its tag, checked against what the engine recorded
/// ([`crate::lock::choose_pin`]): the same pin through Docker and Podman.
async fn locked_image(
    engine: &crate::engine::Engine,
    resolved: &crate::profile::ResolvedProfile,
    policy: PullPolicy,
    today: &str,
    context: &Context,
) -> Result<LockedImage, Error> {
    let image = &resolved.profile.image;
    ensure_image(engine, image, policy, context).await?;
    let reference = image.to_string();
    let facts = engine
        .image_facts(&reference)
        .await?
        .ok_or_else(|| Error::ImageMissing {
            image: reference.clone(),
        })?;
    let name = image.name();
    let local: Vec<String> = facts
        .repo_digests
        .iter()
        .filter(|repo_digest| repo_digest_matches(repo_digest, &name))
        .filter_map(|repo_digest| repo_digest.split_once('@'))
        .map(|(_, digest)| digest.to_string())
        .collect();
    let registry_digest = match &image.digest {
        // The profile names a digest already: that is the pin.
        Some(digest) => Ok(digest.clone()),
        None => {
            let tag = image.tag.clone().unwrap_or_else(|| "latest".into());
            let asked = image.clone();
            let answer = tokio::task::spawn_blocking(move || {
                crate::registry::RegistryClient::new(REGISTRY_TIMEOUT).digest(&asked, &tag)
            })
            .await;
            match answer {
                Ok(answer) => answer.map_err(|error| crate::error::error_chain(&error)),
                // The request panicked: a bug, surfaced as the panic it was.
                Err(error) => std::panic::resume_unwind(error.into_panic()),
            }
        }
    };
    let fresh_pull = policy == PullPolicy::Always;
    let digest = match crate::lock::choose_pin(&local, registry_digest, fresh_pull) {
        Ok(crate::lock::Pin::Registry(digest)) => digest,
        Ok(crate::lock::Pin::Recorded {
            digest,
            registry_error,
        }) => {
            context.printer.warn(&format!(
                "could not ask the registry where `{reference}` points ({registry_error}): pinned the digest recorded at pull, {digest}"
            ));
            digest
        }
        Err(refusal) => return Err(pin_refused(&reference, refusal)),
    };
    Ok(LockedImage {
        profile: resolved.profile.name.clone(),
        image: reference,
        digest,
        date: today.to_string(),
        platform: facts.platform.clone().unwrap_or_else(|| "unknown".into()),
    })
}

/// Why `reference` cannot be pinned, and what to do.
fn pin_refused(reference: &str, refusal: crate::lock::PinRefusal) -> Error {
    use crate::lock::PinRefusal;
    match refusal {
        PinRefusal::NoRegistryDigest => Error::Lock {
            message: format!(
                "image `{reference}` has no registry digest (built or loaded locally?)"
            ),
            hint: format!(
                "push it to a registry (`docker push {reference}`), then run `envctl lock` again"
            ),
        },
        PinRefusal::Moved { registry, local } => Error::Lock {
            message: format!(
                "the registry serves {registry} for `{reference}`, but the local image is {} (pulled before the tag moved?)",
                local.join(", ")
            ),
            hint: "`envctl lock --update` pulls where the tag points now and pins that".into(),
        },
        PinRefusal::Ambiguous {
            local,
            registry_error,
        } => Error::Lock {
            message: format!(
                "could not ask the registry where `{reference}` points ({registry_error}), and the engine recorded several digests: {}",
                local.join(", ")
            ),
            hint: "run `envctl lock` again once the registry answers".into(),
        },
    }
}
