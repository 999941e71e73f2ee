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
use crate::ops::lock::{Change, Locking};
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
    // Each profile on its own: one that fails is said at once and the others are still
    // locked; the run then exits 1.
    let (profiles, mut failed) = resolved_profiles(each, context);
    let locking = runtime()?.block_on(crate::ops::lock::lock_profiles(
        &profiles,
        arguments.update,
        &mut failed,
        context,
    ))?;
    let changes = match locking {
        Locking::Written(changes) => changes,
        Locking::NothingPinned => {
            // Nothing to write: the lock file stays as it was.
            context
                .printer
                .warn(&format!("no profile locked; {LOCK_FILE} is unchanged"));
            return Ok(ExitStatus::Failure);
        }
        Locking::Signalled(code) => {
            context
                .printer
                .warn(&format!("interrupted: {LOCK_FILE} is unchanged"));
            return Ok(ExitStatus::External(code));
        }
    };
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
        print_changes(&changes, context)?;
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

/// The profiles that resolved, each that did not said at once, and how many did not.
fn resolved_profiles(
    each: Vec<(String, Result<crate::profile::ResolvedProfile, Error>)>,
    context: &Context,
) -> (Vec<crate::profile::ResolvedProfile>, usize) {
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
    (profiles, failed)
}

/// The table of what each pin became, then whether the lock file changed.
fn print_changes(changes: &[Change], context: &Context) -> Result<(), Error> {
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
    Ok(())
}
