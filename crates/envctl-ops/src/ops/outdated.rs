//! `envctl outdated`'s gathering: each profile's registry asked for newer tags of the same
//! family and for the digest behind its tag now, beside what `envctl.lock` pins; an image
//! only on this machine (the engine knows no registry digest of it) is said, not failed.
//! The command renders the reports.

use serde::Serialize;

use crate::context::Context;
use crate::error::Error;
use crate::lock::{LOCK_FILE, family, file};
use crate::profile::ResolvedProfile;
use crate::registry::RegistryClient;

#[derive(Debug, Serialize)]
pub struct Report {
    pub profile: String,
    pub image: String,
    /// Newer tags of the same family, newest first.
    pub newer_tags: Vec<String>,
    pub locked_digest: Option<String>,
    /// The digest the registry serves for the tag now.
    pub current_digest: Option<String>,
    /// The locked digest differs from the registry's: `envctl lock --update` would move it.
    pub digest_moved: bool,
    /// Why `newer_tags` may miss some: the registry's tag list was not read to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The image is only on this machine (built here, never pulled or pushed: the engine
    /// knows no registry digest of it), so there is no registry to compare with.
    pub local_only: bool,
    /// Why the registry could not be asked, with its cause, for stderr.
    #[serde(skip)]
    pub failure: Option<crate::registry::RegistryError>,
}

/// A registry answer should take seconds, not minutes.
const REGISTRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// One report per profile, in their order (then [`local_only`] clears the failures of
/// images only on this machine): a registry that cannot be asked is that
/// profile's `error` (and `failure`), never the others'.
pub async fn reports(
    profiles: &[ResolvedProfile],
    context: &Context,
) -> Result<Vec<Report>, Error> {
    let lock = file::read(std::path::Path::new(LOCK_FILE))?;
    let client = RegistryClient::new(
        REGISTRY_TIMEOUT,
        crate::registry::proxy::Proxy::from_variables(&context.environment.proxy_variables()),
    );
    let mut reports = Vec::new();
    for resolved in profiles {
        let image = &resolved.profile.image;
        let tag = image.tag_or_latest().to_string();
        let locked_digest = lock
            .as_ref()
            .and_then(|lock| lock.entry(&resolved.profile.name))
            .filter(|entry| entry.image == image.to_string())
            .map(|entry| entry.digest.clone());
        let mut report = Report {
            profile: resolved.profile.name.clone(),
            image: image.to_string(),
            newer_tags: Vec::new(),
            locked_digest: locked_digest.clone(),
            current_digest: None,
            digest_moved: false,
            incomplete: None,
            error: None,
            local_only: false,
            failure: None,
        };
        // One profile's unreachable registry must not hide the others' answers.
        match client.tag_list(image).await {
            Ok(list) => {
                report.newer_tags = family::newer_tags(&tag, &list.tags)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                report.incomplete = list.incomplete;
            }
            Err(error) => {
                report.error = Some(with_hint(&error));
                report.failure = Some(error);
            }
        }
        if report.error.is_none() {
            match client.digest(image, &tag).await {
                Ok(digest) => {
                    report.digest_moved = locked_digest
                        .as_ref()
                        .is_some_and(|locked| *locked != digest);
                    report.current_digest = Some(digest);
                }
                Err(error) => {
                    report.error = Some(with_hint(&error));
                    report.failure = Some(error);
                }
            }
        }
        reports.push(report);
    }
    Ok(reports)
}

/// The images whose registry could not be asked that are only on this machine: the
/// engine has the image and knows no registry digest of it (built here, never pulled or
/// pushed). Those are no failure: there is no registry to compare with. Without an engine
/// to ask, the registry's failure stands.
pub async fn local_only(reports: &mut [Report], context: &Context) {
    if reports.iter().all(|report| report.failure.is_none()) {
        return;
    }
    let Ok(engine) = context.engine().await else {
        return;
    };
    for report in reports.iter_mut().filter(|report| report.failure.is_some()) {
        // Only a digest of this image's own repository says a registry has it: the
        // same image pushed elsewhere (`127.0.0.1:5000/x@sha256:…`) does not.
        let name = report
            .image
            .parse::<crate::profile::image::ImageReference>()
            .map(|reference| reference.name());
        if let Ok(Some(facts)) = engine.image_facts(&report.image).await
            && let Ok(name) = &name
            && !facts
                .repo_digests
                .iter()
                .any(|digest| crate::lock::repo_digest_matches(digest, name))
        {
            report.local_only = true;
            report.error = None;
            report.failure = None;
        }
    }
}

fn with_hint(error: &crate::registry::RegistryError) -> String {
    match error.hint() {
        Some(hint) => format!("{error} ({hint})"),
        None => error.to_string(),
    }
}
