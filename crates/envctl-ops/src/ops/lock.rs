//! `lock`'s work for one profile: the digest its image's tag points at, asked of the
//! registry's API (`registry::RegistryClient::manifest`: the index digest of a
//! multi-platform image, as `crane digest` and `docker buildx imagetools inspect` give it,
//! which `docker pull IMAGE@DIGEST` takes), so nothing is pulled. Only when the registry
//! cannot answer (a private repository, whose credentials envctl does not read; a registry
//! out of reach from here but not from the daemon) is the image pulled, said on stderr,
//! and the digest the engine recorded at pull pinned ([`crate::lock::choose_pin`]).
//! [`lock_profiles`] does it for every profile of `envctl lock` and writes `envctl.lock`
//! under the folder's lock.

use std::path::Path;

use tokio::sync::OnceCell;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::lock::{LOCK_FILE, LockedImage, file};
use crate::ops::up::{PullPolicy, ensure_image};
use crate::ops::wait::Waited;
use crate::profile::ResolvedProfile;
use crate::registry::manifest::{Manifest, ManifestKind};

/// How long the registry may take to say which digest a tag points at.
const REGISTRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Where a pin came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PinSource {
    /// The registry's API, nothing pulled.
    Registry,
    /// The engine's record of a pull (`RepoDigests`), the registry not answering.
    Pull,
}

/// One profile's pin and where it came from.
#[derive(Debug, Clone)]
pub struct Locked {
    pub entry: LockedImage,
    pub source: PinSource,
}

/// The engine, connected only when a profile's registry does not answer: a `lock` whose
/// registries all answer needs no daemon.
#[derive(Default)]
pub struct Fallback {
    engine: OnceCell<Engine>,
}

impl Fallback {
    async fn engine(&self, context: &Context) -> Result<&Engine, Error> {
        self.engine.get_or_try_init(|| context.engine()).await
    }
}

/// The lock entry of one profile, dated `today`. `update`: when the image must be pulled
/// after all, pull it again even if it is present (`lock --update`).
pub async fn locked_image(
    resolved: &ResolvedProfile,
    update: bool,
    today: &str,
    fallback: &Fallback,
    context: &Context,
) -> Result<Locked, Error> {
    let image = &resolved.profile.image;
    let reference = image.to_string();
    // The profile's own digest, else its tag (Docker's `latest` when it names none).
    let asked_for = image
        .digest
        .clone()
        .or_else(|| image.tag.clone())
        .unwrap_or_else(|| "latest".into());
    let proxy =
        crate::registry::proxy::Proxy::from_variables(&context.environment.proxy_variables());
    let answer = crate::registry::RegistryClient::new(REGISTRY_TIMEOUT, proxy)
        .manifest(image, &asked_for)
        .await;
    match answer {
        Ok(manifest) => {
            context.printer.detail(&said(&reference, &manifest));
            Ok(Locked {
                entry: LockedImage {
                    profile: resolved.profile.name.clone(),
                    image: reference,
                    digest: manifest.digest,
                    date: today.to_string(),
                    platform: platform_of(&manifest.platforms),
                },
                source: PinSource::Registry,
            })
        }
        Err(error) => {
            let registry_error = crate::error::error_chain(&error);
            context.printer.warn(&format!(
                "could not ask the registry where `{reference}` points ({registry_error}): pulling the image instead, to pin the digest the engine records"
            ));
            let engine = fallback.engine(context).await?;
            let entry =
                pinned_by_pull(engine, resolved, update, registry_error, today, context).await?;
            Ok(Locked {
                entry,
                source: PinSource::Pull,
            })
        }
    }
}

/// What `-v` says of the registry's answer.
fn said(reference: &str, manifest: &Manifest) -> String {
    match manifest.kind {
        ManifestKind::Index => format!(
            "the registry serves `{reference}` as an image index, {} ({}): pinned without a pull",
            manifest.digest,
            platform_of(&manifest.platforms)
        ),
        ManifestKind::Image => format!(
            "the registry serves `{reference}` as one image, {} ({}): pinned without a pull",
            manifest.digest,
            platform_of(&manifest.platforms)
        ),
    }
}

/// The lock entry's `platform`: the one platform of an image, every platform an index
/// serves, or `unknown` when the registry names none.
pub fn platform_of(platforms: &[String]) -> String {
    if platforms.is_empty() {
        "unknown".into()
    } else {
        platforms.join(", ")
    }
}

/// The pin when the registry cannot be asked: the image pulled (when missing, or always
/// with `update`) and the one digest of its repository the engine recorded.
async fn pinned_by_pull(
    engine: &Engine,
    resolved: &ResolvedProfile,
    update: bool,
    registry_error: String,
    today: &str,
    context: &Context,
) -> Result<LockedImage, Error> {
    let image = &resolved.profile.image;
    let policy = if update {
        PullPolicy::Always
    } else {
        PullPolicy::Missing
    };
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
        .filter(|repo_digest| crate::lock::repo_digest_matches(repo_digest, &name))
        .filter_map(|repo_digest| repo_digest.split_once('@'))
        .map(|(_, digest)| digest.to_string())
        .collect();
    let recorded = match &image.digest {
        // The profile names a digest already: that is the pin.
        Some(digest) => Ok(crate::lock::Pin::Registry(digest.clone())),
        None => crate::lock::choose_pin(&local, Err(registry_error), policy == PullPolicy::Always),
    };
    let digest = match recorded {
        Ok(crate::lock::Pin::Registry(digest)) => digest,
        Ok(crate::lock::Pin::Recorded { digest, .. }) => {
            context.printer.info(&format!(
                "pinned `{reference}` to the digest the engine recorded at pull, {digest}"
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

/// One profile's line in `lock`'s report: its pin, the one it replaced, and where it
/// came from.
#[derive(Debug, serde::Serialize)]
pub struct Change {
    pub profile: String,
    pub image: String,
    pub digest: String,
    pub previous: Option<String>,
    /// `registry` (asked of its API, nothing pulled) or `pull` (the engine's record).
    pub source: PinSource,
}

/// What `envctl lock` did with the profiles' pins.
#[derive(Debug)]
pub enum Locking {
    /// No profile could be pinned: the lock file is unchanged.
    NothingPinned,
    /// `envctl.lock` holds these pins now (a pin that did not move keeps its entry).
    Written(Vec<Change>),
    /// A termination signal ended the wait for the folder's lock: nothing was written.
    Signalled(u8),
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
        // Kept whole as the write's cause: nothing was written.
        file::LockUpdateError::Render { source, .. } => Error::Write {
            path: LOCK_FILE.into(),
            source: std::io::Error::other(source),
        },
        busy @ file::LockUpdateError::Busy { .. } => Error::Lock {
            message: busy.to_string(),
            hint: "`fuser -v .` shows which process holds it; another `envctl lock` ends by itself, anything else is not envctl's".into(),
        },
    }
}

/// `envctl lock`: each profile's pin, then `envctl.lock` read, changed and written under
/// the folder's lock. A profile whose own image fails (a pull the registry refused, an
/// image without a registry digest) is said at once and counted in `failed`, and the
/// others are still locked; anything else (the daemon gone) would fail them all and is
/// the one error.
pub async fn lock_profiles(
    profiles: &[ResolvedProfile],
    update: bool,
    failed: &mut usize,
    context: &Context,
) -> Result<Locking, Error> {
    let path = Path::new(LOCK_FILE);
    let entries = pin_each(profiles, update, failed, context).await?;
    if entries.is_empty() {
        return Ok(Locking::NothingPinned);
    }
    // Read, change and write under the folder's lock: a parallel `envctl lock` of other
    // profiles keeps its entries, and ours are judged against the file as it is now. The
    // wait for it is bounded, said, and ends at a signal with nothing written.
    let guard = crate::ops::wait::wait_for(
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
    )
    .await;
    let guard = match guard {
        Ok(Waited::Got(guard)) => guard,
        Ok(Waited::Signalled(code)) => return Ok(Locking::Signalled(code)),
        Err(error) => return Err(update_error(error)),
    };
    let changes = file::update(&guard, path, |lock| {
        entries
            .into_iter()
            .map(|locked| pin_into(lock, locked))
            .collect::<Vec<_>>()
    })
    .map_err(update_error)?;
    drop(guard);
    Ok(Locking::Written(changes))
}

/// Each profile's pin. A profile whose own image fails is said at once and counted in
/// `failed`; anything else is the one error.
async fn pin_each(
    profiles: &[ResolvedProfile],
    update: bool,
    failed: &mut usize,
    context: &Context,
) -> Result<Vec<Locked>, Error> {
    let today = crate::ops::doctor::today(context.environment.now());
    // The daemon only for a profile whose registry does not answer.
    let fallback = Fallback::default();
    let mut entries = Vec::new();
    for resolved in profiles {
        match locked_image(resolved, update, &today, &fallback, context).await {
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
                *failed += 1;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(entries)
}

/// Puts one pin into the lock file (the same pin keeps its entry), and says what changed.
fn pin_into(lock: &mut crate::lock::LockFile, locked: Locked) -> Change {
    let Locked { entry, source } = locked;
    let old = lock.entry(&entry.profile);
    let previous = old.map(|old| old.digest.clone());
    // The same pin keeps its entry, date included: the file does not change.
    let same = old.is_some_and(|old| {
        old.image == entry.image && old.digest == entry.digest && old.platform == entry.platform
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_of_a_pin_names_what_the_registry_serves() {
        assert_eq!(platform_of(&["linux/amd64".into()]), "linux/amd64");
        assert_eq!(
            platform_of(&["linux/amd64".into(), "linux/arm64/v8".into()]),
            "linux/amd64, linux/arm64/v8"
        );
        assert_eq!(platform_of(&[]), "unknown");
    }
}
