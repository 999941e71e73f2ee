//! Named volumes made before a container: `up` creates each volume a profile mounts with
//! its labels ([`envctl_core::container_plan::volumes::named_volumes`]), because the volume the daemon
//! makes implicitly at container create carries none. A volume that exists is left as it
//! is: its labels are not changed (the API has no way to, and its data is someone's).

use std::collections::HashMap;

use super::{Engine, EngineError};
use envctl_core::container_plan::volumes::NamedVolume;

/// What became of one volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeMade {
    Created,
    /// It existed already, and was left as it was.
    Existing,
}

impl Engine {
    /// Makes the named volumes `body` mounts that do not exist yet, with the labels
    /// [`envctl_core::container_plan::volumes::named_volumes_of_run`] gives them (the run id `run_id` of
    /// the container made next among them): called by `up` right before the create.
    pub async fn create_named_volumes(
        &self,
        body: &envctl_core::container_plan::CreateBody,
        run_id: &str,
    ) -> Result<Vec<VolumeMade>, EngineError> {
        self.create_volumes(&envctl_core::container_plan::volumes::named_volumes_of_run(
            body, run_id,
        ))
        .await
    }

    /// The labels of the volume `name`, as the daemon keeps them; `None` when it is gone.
    pub async fn volume_labels(
        &self,
        name: &str,
    ) -> Result<Option<std::collections::BTreeMap<String, String>>, EngineError> {
        let name = super::reference::volume(name)?;
        let inspected = self
            .with_deadline(
                "inspecting a volume",
                self.answer_deadline(),
                self.docker.inspect_volume(name),
            )
            .await?;
        match inspected {
            Ok(volume) => Ok(Some(volume.labels.into_iter().collect())),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(error) => Err(self.classify(error)),
        }
    }

    /// Makes each of `volumes` that does not exist yet, with its labels, in order; returns
    /// what became of each. Two `up`s racing for the same volume both succeed: the
    /// daemon's create of an existing local volume answers with the one there.
    pub async fn create_volumes(
        &self,
        volumes: &[NamedVolume],
    ) -> Result<Vec<VolumeMade>, EngineError> {
        let mut made = Vec::with_capacity(volumes.len());
        for volume in volumes {
            made.push(self.create_volume(volume).await?);
        }
        Ok(made)
    }

    async fn create_volume(&self, volume: &NamedVolume) -> Result<VolumeMade, EngineError> {
        let name = super::reference::volume(&volume.name)?;
        let inspected = self
            .with_deadline(
                "inspecting a volume",
                self.answer_deadline(),
                self.docker.inspect_volume(name),
            )
            .await?;
        match inspected {
            Ok(_) => return Ok(VolumeMade::Existing),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(error) => return Err(self.classify(error)),
        }
        let request = bollard::models::VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(
                volume
                    .labels
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect::<HashMap<_, _>>(),
            ),
            ..Default::default()
        };
        self.work_answer("creating a volume", self.docker.create_volume(request))
            .await?;
        Ok(VolumeMade::Created)
    }
}
