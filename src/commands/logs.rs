//! `envctl logs TARGET [-f] [--tail N]`: the container's output, stdout to stdout and
//! stderr to stderr.

use super::target::find_container;
use super::{Context, runtime};
use crate::engine::logs::OutputStream;
use crate::error::Error;
use crate::exit::ExitStatus;

pub fn run(
    target: &str,
    follow: bool,
    tail: Option<u64>,
    context: &Context,
) -> Result<ExitStatus, Error> {
    runtime()?.block_on(async {
        let engine = context.engine().await?;
        let container = find_container(&engine, context, target).await?;
        let tail = tail.map_or_else(|| "all".to_string(), |lines| lines.to_string());
        engine
            .logs(&container.id, follow, &tail, |stream, bytes| match stream {
                OutputStream::Stdout => context.printer.stdout_bytes(bytes),
                OutputStream::Stderr => context.printer.stderr_bytes(bytes),
            })
            .await?;
        Ok::<_, Error>(())
    })?;
    Ok(ExitStatus::Success)
}
