//! `envctl outdated [PROFILE…]`: asks each image's registry for newer tags of the same
//! family (same CUDA/cuDNN/runtime suffix, higher version) and for a new digest behind the
//! locked tag, and prints what `lock` would change. Exit 0 whether or not something is newer
//! (it informs); 1 when a registry could not be asked (the answer is then incomplete).

use serde::Serialize;

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::outdated::Report;
use crate::ui::table::print_table;

#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// Profiles to check (default: the project's ./envctl/ profiles)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profiles: Vec<String>,
}

pub fn run(arguments: OutdatedArgs, context: &Context) -> Result<ExitStatus, Error> {
    let profiles = context.profiles_or_project(&arguments.profiles)?;
    let runtime = super::runtime()?;
    let mut reports = runtime.block_on(crate::ops::outdated::reports(&profiles, context))?;
    runtime.block_on(crate::ops::outdated::local_only(&mut reports, context));
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
                // `lock PROFILE` moves this pin only; `lock --update` is for an image the
                // registry cannot be asked about (and plain `lock` re-pins every profile).
                (None, true, _) => format!(
                    "moved: `envctl lock {}` pins the new one",
                    crate::container_plan::shell_quote(&report.profile)
                ),
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
