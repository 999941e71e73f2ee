//! `envctl stats`: container and GPU usage side by side (being built).

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Profiles or containers (default: envctl's containers)
    pub targets: Vec<String>,
}

pub fn run(_arguments: StatsArgs, _context: &Context) -> Result<ExitStatus, Error> {
    Err(Error::Usage {
        message: "stats is not available yet".into(),
        hint: None,
    })
}
