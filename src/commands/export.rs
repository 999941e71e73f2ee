//! `envctl export PROFILE --to compose|k8s|devcontainer|docker-run` (being built).

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A profile name or path
    pub profile: String,
}

pub fn run(arguments: ExportArgs, _context: &Context) -> Result<ExitStatus, Error> {
    Err(Error::Usage {
        message: format!("export of `{}` is not available yet", arguments.profile),
        hint: None,
    })
}
