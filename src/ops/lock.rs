//! `lock`'s work for one profile: the digest its image's tag points at, asked of the
//! registry's API (`registry::RegistryClient::manifest`: the index digest of a
//! multi-platform image, as `crane digest` and `docker buildx imagetools inspect` give it,
//! which `docker pull IMAGE@DIGEST` takes), so nothing is pulled. Only when the registry
//! cannot answer (a private repository, whose credentials envctl does not read; a registry
//! out of reach from here but not from the daemon) is the image pulled, said on stderr,
//! and the digest the engine recorded at pull pinned ([`crate::lock::choose_pin`]).

use tokio::sync::OnceCell;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::lock::LockedImage;
use crate::ops::up::{PullPolicy, ensure_image};
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
    let asked = image.clone();
    let answer = tokio::task::spawn_blocking(move || {
        crate::registry::RegistryClient::new(REGISTRY_TIMEOUT).manifest(&asked, &asked_for)
    })
    .await;
    let answer = match answer {
        Ok(answer) => answer,
        // The request panicked: a bug, surfaced as the panic it was.
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    };
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
