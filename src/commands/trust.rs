//! `envctl trust PROFILE`: records the files that give a repository profile its
//! root-equivalent settings (`ops::trust`), so that `up` and `run` start it without
//! `--trust` until one of those files changes. Shows each setting it trusts.

use serde::Serialize;

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;

/// `envctl trust`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// A profile name or path
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profile: String,
}

pub fn run(arguments: TrustArgs, context: &Context) -> Result<ExitStatus, Error> {
    let grants = crate::ops::trust::trust(&arguments.profile, context)?;
    if context.json {
        #[derive(Serialize)]
        struct Trusted<'a> {
            profile: &'a str,
            /// The root-equivalent settings now trusted, with their files and lines.
            trusted: &'a [crate::ops::trust::Grant],
        }
        context.printer.json(&Trusted {
            profile: &arguments.profile,
            trusted: &grants,
        })?;
        return Ok(ExitStatus::Success);
    }
    if grants.is_empty() {
        context.printer.info(&format!(
            "nothing to trust: profile `{}` asks for no root-equivalent setting from a file envctl did not make",
            crate::ui::text::shown(&arguments.profile)
        ));
        return Ok(ExitStatus::Success);
    }
    for grant in &grants {
        context
            .printer
            .info(&format!("trusted: {}", grant.describe()));
    }
    context
        .printer
        .info("`up` and `run` start it without --trust until one of these files changes");
    Ok(ExitStatus::Success)
}
