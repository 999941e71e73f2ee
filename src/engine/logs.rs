//! Container logs, streamed: each chunk goes to a callback with the stream it came from.

use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt;

use super::{Engine, EngineError};
use crate::facts::container::OutputStream;

impl Engine {
    /// Streams the logs of `name_or_id`; with `follow`, until the container stops.
    /// `tail` is a line count or `all`.
    pub async fn logs(
        &self,
        name_or_id: &str,
        follow: bool,
        tail: &str,
        mut on_chunk: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), EngineError> {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .follow(follow)
            .tail(tail)
            .build();
        let mut stream = self.docker.logs(name_or_id, Some(options));
        while let Some(chunk) = stream.next().await {
            let written = match chunk.map_err(|error| self.classify(error))? {
                LogOutput::StdErr { message } => on_chunk(OutputStream::Stderr, &message),
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    on_chunk(OutputStream::Stdout, &message)
                }
                LogOutput::StdIn { .. } => Ok(()),
            };
            if let Err(error) = written {
                // The reader went away (`envctl logs … | head`): stop quietly.
                if error.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(());
                }
                return Err(EngineError::Output { source: error });
            }
        }
        Ok(())
    }
}
