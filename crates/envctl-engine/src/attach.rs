//! A container's stdin, attached through the daemon (`POST /containers/{id}/attach` with
//! `stdin=1&stream=1`, upgraded to a raw stream), as `docker run -i` attaches it: what
//! `envctl run` passes on from its own stdin. The container must be made with
//! `OpenStdin` (and `StdinOnce`, so the end of the input closes the process's stdin).

use std::pin::Pin;

use bollard::query_parameters::AttachContainerOptionsBuilder;
use tokio::io::AsyncWrite;

use super::{Engine, EngineError};

/// The writing end of a container's stdin.
pub type ContainerInput = Pin<Box<dyn AsyncWrite + Send>>;

impl Engine {
    /// Attaches to `container`'s stdin alone (its output is followed elsewhere): bytes
    /// written reach its main process; shutting the writer down ends its input.
    pub async fn attach_stdin(&self, container: &str) -> Result<ContainerInput, EngineError> {
        let container = super::reference::container(container)?;
        let options = AttachContainerOptionsBuilder::new()
            .stdin(true)
            .stream(true)
            .stdout(false)
            .stderr(false)
            .build();
        let attached = self
            .short_answer(
                "attaching to a container's stdin",
                self.docker.attach_container(container, Some(options)),
            )
            .await?;
        Ok(attached.input)
    }
}
