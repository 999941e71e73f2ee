//! `envctl outdated [PROFILE…]`: asks each image's registry for newer tags of the same
//! family (same CUDA/cuDNN/runtime suffix, higher version) and for a new digest behind the
//! locked tag, and prints what `lock` would change. Exit 0 whether or not something is newer
//! (it informs); 1 when a registry could not be asked (the answer is then incomplete).

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::lock::{LOCK_FILE, family, file};
use crate::registry::RegistryClient;
use crate::ui::table::print_table;

#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// Profiles to check (default: the project's ./envctl/ profiles)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profiles: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    profile: String,
    image: String,
    /// Newer tags of the same family, newest first.
    newer_tags: Vec<String>,
    locked_digest: Option<String>,
    /// The digest the registry serves for the tag now.
    current_digest: Option<String>,
    /// The locked digest differs from the registry's: `envctl lock --update` would move it.
    digest_moved: bool,
    /// Why `newer_tags` may miss some: the registry's tag list was not read to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    incomplete: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The image is only on this machine (built here, never pulled or pushed: the engine
    /// knows no registry digest of it), so there is no registry to compare with.
    local_only: bool,
    /// Why the registry could not be asked, with its cause, for stderr.
    #[serde(skip)]
    failure: Option<crate::registry::RegistryError>,
}

/// A registry answer should take seconds, not minutes.
const REGISTRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

pub fn run(arguments: OutdatedArgs, context: &Context) -> Result<ExitStatus, Error> {
    let profiles = context.profiles_or_project(&arguments.profiles)?;
    let lock = file::read(std::path::Path::new(LOCK_FILE))?;
    let client = RegistryClient::new(REGISTRY_TIMEOUT);
    let mut reports = Vec::new();
    for resolved in &profiles {
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
        match client.tag_list(image) {
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
            match client.digest(image, &tag) {
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
    local_only(&mut reports, context);
    // A registry that could not be asked is a failed check: said on stderr, exit 1, after
    // every other profile's answer.
    let status = if reports.iter().any(|report| report.error.is_some()) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    };
    if context.json {
        #[derive(Serialize)]
        struct Outdated<'a> {
            profiles: &'a [Report],
        }
        context.printer.json(&Outdated { profiles: &reports })?;
        warn_about(&mut reports, context);
        return Ok(status);
    }
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|report| {
            let newer = if report.newer_tags.is_empty() {
                "-".to_string()
            } else {
                report
                    .newer_tags
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let digest = match (&report.error, report.digest_moved, &report.locked_digest) {
                _ if report.local_only => "local image, no registry".into(),
                (Some(_), _, _) => "error (below)".into(),
                (None, true, _) => "moved: `envctl lock --update` pins the new one".into(),
                (None, false, Some(_)) => "locked, current".into(),
                (None, false, None) => "not locked".into(),
            };
            vec![report.profile.clone(), report.image.clone(), newer, digest]
        })
        .collect();
    print_table(
        &context.printer,
        &["PROFILE", "IMAGE", "NEWER TAGS", "DIGEST"],
        &rows,
    )?;
    for report in reports
        .iter()
        .filter(|report| !report.newer_tags.is_empty())
    {
        context.printer.info(&format!(
            "{}: change `image` to …:{} to move up",
            report.profile, report.newer_tags[0]
        ));
    }
    warn_about(&mut reports, context);
    Ok(status)
}

/// The images whose registry could not be asked that are only on this machine: the
/// engine has the image and knows no registry digest of it (built here, never pulled or
/// pushed). Those are no failure: there is no registry to compare with. Without an engine
/// to ask, the registry's failure stands.
fn local_only(reports: &mut [Report], context: &Context) {
    if reports.iter().all(|report| report.failure.is_none()) {
        return;
    }
    let Ok(runtime) = runtime() else {
        return;
    };
    runtime.block_on(async {
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
    });
}

/// On stderr: tag lists that stopped early, images only on this machine, and registries
/// that could not be asked (errors: they make the exit code 1).
fn warn_about(reports: &mut [Report], context: &Context) {
    for report in reports {
        if let Some(incomplete) = &report.incomplete {
            context
                .printer
                .warn(&format!("{}: {incomplete}", report.profile));
        }
        if report.local_only {
            context.printer.info(&format!(
                "{}: `{}` is only on this machine (the engine knows no registry digest of it): no registry to compare with",
                report.profile, report.image
            ));
        }
        if let Some(failure) = report.failure.take() {
            context.printer.error(&Error::Registry {
                profile: report.profile.clone(),
                image: report.image.clone(),
                source: failure,
            });
        }
    }
}

fn with_hint(error: &crate::registry::RegistryError) -> String {
    match error.hint() {
        Some(hint) => format!("{error} ({hint})"),
        None => error.to_string(),
    }
}
