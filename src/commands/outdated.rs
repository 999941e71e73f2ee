//! `envctl outdated [PROFILE…]`: newer tags and moved digests (being built).

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// Profiles to check (default: the project's)
    pub profiles: Vec<String>,
}

pub fn run(_arguments: OutdatedArgs, _context: &Context) -> Result<ExitStatus, Error> {
    Err(Error::Usage {
        message: "outdated is not available yet".into(),
        hint: None,
    })
}
