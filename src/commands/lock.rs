//! `envctl lock [PROFILE…]`: pin image tags to digests in `envctl.lock` (being built).

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Profiles to lock (default: the project's)
    pub profiles: Vec<String>,
}

pub fn run(_arguments: LockArgs, _context: &Context) -> Result<ExitStatus, Error> {
    Err(Error::Usage {
        message: "lock is not available yet".into(),
        hint: None,
    })
}
