//! `envctl exec TARGET nvidia-check`: the CUDA health check inside a container (being built).

use super::Context;
use crate::engine::Engine;
use crate::engine::containers::ContainerDetails;
use crate::error::Error;
use crate::exit::ExitStatus;

/// `--quick` and `--timeout` of `envctl exec TARGET nvidia-check`.
#[derive(Debug, Clone)]
pub struct NvidiaCheckOptions {
    pub quick: bool,
    pub timeout_seconds: u64,
}

pub async fn run(
    _engine: &Engine,
    container: &ContainerDetails,
    _options: &NvidiaCheckOptions,
    _context: &Context,
) -> Result<ExitStatus, Error> {
    Err(Error::Usage {
        message: format!("nvidia-check in `{}` is not available yet", container.name),
        hint: None,
    })
}
