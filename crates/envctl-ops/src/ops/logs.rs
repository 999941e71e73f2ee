//! `logs`' application side: the container a TARGET (or none) names, on a daemon reached
//! here, and its output read as it comes. The command formats what it is handed; it never
//! holds the engine (ARCHITECTURE.md: commands reach the adapters through `ops`).

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::OutputStream;
use crate::ops::target::{Purpose, find_container, obvious_container};

/// A container whose output can be read: found, with the connection that found it.
pub struct ContainerOutput {
    engine: Engine,
    id: String,
    name: String,
}

impl ContainerOutput {
    /// The container `target` names, or the obvious one for `logs` when there is none.
    pub async fn find(context: &Context, target: Option<&str>) -> Result<Self, Error> {
        let engine = context.engine().await?;
        let container = match target {
            Some(target) => find_container(&engine, context, target).await?,
            None => {
                let purpose = Purpose {
                    command: "logs",
                    rest: "",
                    word: None,
                };
                obvious_container(&engine, context, purpose).await?
            }
        };
        Ok(ContainerOutput {
            engine,
            id: container.id,
            name: container.name,
        })
    }

    /// The container's name, as the daemon gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The output (the last `tail` lines, `all` for every one), each chunk handed to
    /// `on_chunk` with its stream as it comes; with `follow`, until the container stops.
    pub async fn read(
        &self,
        follow: bool,
        tail: &str,
        on_chunk: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        self.engine.logs(&self.id, follow, tail, on_chunk).await?;
        Ok(())
    }
}
