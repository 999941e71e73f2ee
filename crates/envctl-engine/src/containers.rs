//! Containers through the Engine API: list envctl's, inspect, create from a body, start,
//! stop, remove. Results are the plain structs of `envctl_facts::container`; errors are
//! `EngineError`s.

use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use serde::Serialize;

use super::{Engine, EngineError};
use envctl_facts::container::{ContainerDetails, ContainerSummary, PublishedPort};

pub use envctl_core::container_plan::PROFILE_LABEL;

impl Engine {
    /// The ids of every container, running or not, carrying `label` (`KEY=VALUE`).
    pub async fn containers_labelled(&self, label: &str) -> Result<Vec<String>, EngineError> {
        Ok(self
            .list_raw(true, Some(label))
            .await?
            .into_iter()
            .map(|container| container.id)
            .collect())
    }

    /// envctl's containers (label `envctl.profile`), or every container with `all_containers`.
    pub async fn list_containers(
        &self,
        include_stopped: bool,
        only_envctl: bool,
    ) -> Result<Vec<ContainerSummary>, EngineError> {
        let listed = self
            .list_raw(include_stopped, only_envctl.then_some(PROFILE_LABEL))
            .await?;
        let mut containers = listed
            .into_iter()
            .map(|container| {
                let protocol = |port: &super::list::ListedPort| {
                    port.protocol.clone().unwrap_or_else(|| "tcp".into())
                };
                ContainerSummary {
                    name: container.name(),
                    published: container
                        .ports
                        .iter()
                        .filter_map(|port| {
                            Some(PublishedPort {
                                host_ip: port.ip.clone().unwrap_or_default(),
                                host_port: port.public_port?,
                                protocol: protocol(port),
                                container_port: Some(port.private_port),
                            })
                        })
                        .collect(),
                    ports: container
                        .ports
                        .iter()
                        .map(|port| match (&port.ip, port.public_port) {
                            (Some(ip), Some(public)) => {
                                format!("{ip}:{public}->{}/{}", port.private_port, protocol(port))
                            }
                            _ => format!("{}/{}", port.private_port, protocol(port)),
                        })
                        .collect(),
                    id: container.id,
                    image: container.image,
                    image_id: container.image_id,
                    state: container.state,
                    status: container.status,
                    created: container.created,
                    labels: container.labels.into_iter().collect(),
                }
            })
            .collect::<Vec<_>>();
        // Podman lists only the first port of a published range; its inspect has them all.
        if containers
            .iter()
            .any(|container| !container.published.is_empty())
            && self.kind().await? == envctl_facts::engine::EngineKind::Podman
        {
            for container in containers
                .iter_mut()
                .filter(|container| !container.published.is_empty())
            {
                if let Some(inspect) = self.inspect_response(&container.id).await? {
                    let bindings = inspect
                        .network_settings
                        .and_then(|settings| settings.ports)
                        .unwrap_or_default();
                    (container.published, container.ports) = published_ports(bindings);
                }
            }
        }
        Ok(containers)
    }

    /// The daemon's inspect answer; `Ok(None)` for a container that does not exist.
    pub(crate) async fn inspect_response(
        &self,
        name_or_id: &str,
    ) -> Result<Option<bollard::models::ContainerInspectResponse>, EngineError> {
        let name_or_id = super::reference::container(name_or_id)?;
        let inspect = self.whole_answer(
            "inspecting a container",
            self.answer_deadline(),
            self.docker
                .inspect_container(name_or_id, None::<InspectContainerOptions>),
        );
        match inspect.await? {
            Ok(inspect) => Ok(Some(inspect)),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            // Podman 4.3 answers an inspect of a container it is removing right then with
            // a 500, not a 404 (seen in CI). Whether it is gone is asked of the list, not
            // read from the message: a container the list no longer has is gone.
            Err(
                error @ bollard::errors::Error::DockerResponseServerError {
                    status_code: 500, ..
                },
            ) => {
                if listed(&self.list_raw(true, None).await?, name_or_id) {
                    Err(self.classify(error))
                } else {
                    Ok(None)
                }
            }
            Err(error) => Err(self.classify(error)),
        }
    }

    /// The container named or with this id; `Ok(None)` when there is none.
    pub async fn inspect_container(
        &self,
        name_or_id: &str,
    ) -> Result<Option<ContainerDetails>, EngineError> {
        let Some(inspect) = self.inspect_response(name_or_id).await? else {
            return Ok(None);
        };
        let state = inspect.state.unwrap_or_default();
        let volumes = inspect
            .mounts
            .unwrap_or_default()
            .into_iter()
            .filter(|mount| mount.typ.as_deref() == Some("volume"))
            .filter_map(|mount| mount.name)
            .collect();
        let config = inspect.config.unwrap_or_default();
        // The labels a create set, not those inherited from the image (`container_plan::ownership`).
        let labels = self
            .proven(
                inspect.image.as_deref().unwrap_or_default(),
                config.labels.unwrap_or_default().into_iter().collect(),
            )
            .await?;
        let label_map: std::collections::HashMap<String, String> =
            labels.clone().into_iter().collect();
        let gpus = super::occupancy::gpus_of_container(inspect.host_config, Some(&label_map))
            .map(|assignment| assignment.to_string());
        Ok(Some(ContainerDetails {
            id: inspect.id.unwrap_or_default(),
            name: inspect
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            image: config.image.unwrap_or_default(),
            running: state.running.unwrap_or(false),
            status: state
                .status
                .map(|status| status.to_string())
                .unwrap_or_default(),
            exit_code: state.exit_code,
            oom_killed: state.oom_killed,
            started_at: state.started_at,
            labels,
            gpus,
            volumes,
        }))
    }

    /// The container's `Config`, `HostConfig` and `Mounts` (where Podman reports its
    /// mounts) as the Engine API's JSON, for comparing with a create body; `Ok(None)` when
    /// there is no such container.
    pub async fn inspect_container_json(
        &self,
        name_or_id: &str,
    ) -> Result<Option<serde_json::Value>, EngineError> {
        let Some(inspect) = self.inspect_response(name_or_id).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::json!({
            "Config": serde_json::to_value(&inspect.config).map_err(|error| EngineError::InvalidBody { message: error.to_string() })?,
            "HostConfig": serde_json::to_value(&inspect.host_config).map_err(|error| EngineError::InvalidBody { message: error.to_string() })?,
            "Mounts": serde_json::to_value(&inspect.mounts).map_err(|error| EngineError::InvalidBody { message: error.to_string() })?,
        })))
    }

    /// Creates a container from an Engine API create body (any serde value with the API's
    /// field names). A taken name is `EngineError::NameConflict`.
    pub async fn create_container(
        &self,
        name: &str,
        body: &impl Serialize,
    ) -> Result<String, EngineError> {
        let value = serde_json::to_value(body).map_err(|error| EngineError::InvalidBody {
            message: error.to_string(),
        })?;
        let body: bollard::models::ContainerCreateBody =
            serde_json::from_value(value).map_err(|error| EngineError::InvalidBody {
                message: error.to_string(),
            })?;
        // Podman's racing create (below) is tried once more when the name it raced for is
        // free again: the failed create made nothing, so a second one is the user's first.
        // Raced a second time, it is the name conflict it is (a lock's waiters look again).
        match self.create_once(name, body.clone()).await {
            Err(CreateFailure::RacedAndFreed(_)) => match self.create_once(name, body).await {
                Err(CreateFailure::RacedAndFreed(error)) => Err(EngineError::NameConflict {
                    name: name.to_string(),
                    message: envctl_core::text::error_chain(&error),
                    engine: self.known_kind(),
                }),
                Err(CreateFailure::Engine(error)) => Err(error),
                Ok(id) => Ok(id),
            },
            Err(CreateFailure::Engine(error)) => Err(error),
            Ok(id) => Ok(id),
        }
    }

    /// One create of [`Engine::create_container`].
    async fn create_once(
        &self,
        name: &str,
        body: bollard::models::ContainerCreateBody,
    ) -> Result<String, CreateFailure> {
        let options = CreateContainerOptionsBuilder::default().name(name).build();
        let image = body.image.clone().unwrap_or_default();
        let create = self.whole_answer(
            "creating a container",
            self.timeout,
            self.docker.create_container(Some(options), body),
        );
        let answer = create.await.map_err(CreateFailure::Engine)?;
        let result = match answer {
            Ok(created) => Ok(created.id),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409,
                message,
            }) => Err(EngineError::NameConflict {
                name: name.to_string(),
                message,
                engine: self.known_kind(),
            }),
            // Podman answers 409 when the name is taken before the create, and 500 when two
            // creates of one name race and its storage refuses the second: the same
            // conflict. Which 500 it was is asked of the daemon, not read from its words: a
            // create that failed made no container, so one of this name now is another's.
            Err(
                error @ bollard::errors::Error::DockerResponseServerError {
                    status_code: 500, ..
                },
            ) => match self.inspect_response(name).await {
                Ok(Some(_)) => Err(EngineError::NameConflict {
                    name: name.to_string(),
                    message: daemon_message(error),
                    engine: self.known_kind(),
                }),
                // The container it raced with may be gone already (a placement lock is
                // held for milliseconds): the caller tries once more.
                Ok(None) => return Err(CreateFailure::RacedAndFreed(self.classify(error))),
                Err(_) => Err(self.classify(error)),
            },
            // The API's only 404 on create: "No such image".
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Err(EngineError::ImageMissing {
                image,
                engine: self.known_kind(),
            }),
            Err(error) => Err(self.classify(error)),
        };
        result.map_err(CreateFailure::Engine)
    }

    /// Removes a named volume; one still in use or already gone is reported, not forced.
    pub async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        let name = super::reference::volume(name)?;
        let remove = self.whole_answer(
            "removing a volume",
            self.timeout,
            self.docker
                .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>),
        );
        match remove.await? {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(error) => Err(self.classify(error)),
        }
    }

    pub async fn start_container(&self, name_or_id: &str) -> Result<(), EngineError> {
        let name_or_id = super::reference::container(name_or_id)?;
        let start = self.whole_answer(
            "starting a container",
            self.timeout,
            self.docker.start_container(name_or_id, None),
        );
        let error = match start.await? {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        // The daemon refused: what the container asks of the runtime tells its refusals
        // apart (`StartRefusal::recognise`). Unknown when it cannot be read back.
        let request = match &error {
            bollard::errors::Error::DockerResponseServerError { .. } => self
                .inspect_response(name_or_id)
                .await
                .ok()
                .flatten()
                // No `HostConfig` in the answer: what it asked for is unknown, not nothing.
                .and_then(|inspect| inspect.host_config.as_ref().map(start_request)),
            _ => None,
        };
        Err(EngineError::classify_start(
            &self.at(),
            error,
            self.timeout.as_secs(),
            request.as_ref(),
        ))
    }

    /// Stops within `timeout_seconds`, then kills. Stopping a stopped container is fine.
    pub async fn stop_container(
        &self,
        name_or_id: &str,
        timeout_seconds: i32,
    ) -> Result<(), EngineError> {
        let options = StopContainerOptionsBuilder::default()
            .t(timeout_seconds)
            .build();
        let name_or_id = super::reference::container(name_or_id)?;
        self.work_answer(
            "stopping a container",
            self.docker.stop_container(name_or_id, Some(options)),
        )
        .await
    }

    /// Removes the container; anonymous volumes too with `volumes`. Host bind mounts are
    /// never touched by the daemon.
    pub async fn remove_container(
        &self,
        name_or_id: &str,
        force: bool,
        volumes: bool,
    ) -> Result<(), EngineError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(force)
            .v(volumes)
            .build();
        let name_or_id = super::reference::container(name_or_id)?;
        let remove = self.whole_answer(
            "removing a container",
            self.timeout,
            self.docker.remove_container(name_or_id, Some(options)),
        );
        match remove.await? {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            // A 409: the container's state refuses the removal. Another removal of it may
            // be under way (a Slurm Epilog's sweep racing `run`'s own cleanup): it is going,
            // which is what was asked, not a failure. Which it is, the container's state
            // says, read again; anything else (running, without `force`) keeps the error.
            Err(
                error @ bollard::errors::Error::DockerResponseServerError {
                    status_code: 409, ..
                },
            ) => match self.inspect_response(name_or_id).await {
                Ok(None) => Ok(()),
                Ok(Some(inspect)) if removal_under_way(inspect.state.as_ref()) => Ok(()),
                Ok(Some(_)) | Err(_) => Err(self.classify(error)),
            },
            Err(error) => Err(self.classify(error)),
        }
    }
}

/// Whether a container's state says it is being removed, or is dead (what a removal
/// leaves while it finishes): the daemon's own facts, where its 409's words would be
/// guesswork.
fn removal_under_way(state: Option<&bollard::models::ContainerState>) -> bool {
    use bollard::models::ContainerStateStatusEnum as Status;
    matches!(
        state.and_then(|state| state.status),
        Some(Status::REMOVING | Status::DEAD)
    )
}

/// The daemon's words of an error answer, for an error that keeps them.
fn daemon_message(error: bollard::errors::Error) -> String {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message,
        other => other.to_string(),
    }
}

/// What a created container asks of the runtime, from its `HostConfig`: the capabilities
/// it adds and the ulimits it sets (by the profile's names: Podman reports its defaults
/// as `RLIMIT_NOFILE`). The daemon writes an empty list as `null`: none asked for.
fn start_request(host: &bollard::models::HostConfig) -> super::error::StartRequest {
    super::error::StartRequest {
        // Empty is the fact here, not a guess: Docker's `HostConfig` (and Podman's
        // compatible answer, built from the same type) always writes `CapAdd`, as `null`
        // when the create asked for no capability, and bollard reads that `null` as `None`.
        // (A whole `HostConfig` missing is unknown, not nothing: the caller keeps `None`.)
        capabilities: host.cap_add.clone().unwrap_or_default(),
        ulimits: host
            .ulimits
            .iter()
            .flatten()
            .filter_map(|limit| limit.name.as_deref())
            .map(|name| {
                let name = name.to_ascii_lowercase();
                name.strip_prefix("rlimit_").unwrap_or(&name).to_string()
            })
            .collect(),
    }
}

/// `NetworkSettings.Ports` (`"80/tcp": [{"HostIp": "127.0.0.1", "HostPort": "8080"}]`) as
/// the list's published ports and `ps`'s column, sorted by container port.
fn published_ports(
    bindings: std::collections::HashMap<String, Option<Vec<bollard::models::PortBinding>>>,
) -> (Vec<PublishedPort>, Vec<String>) {
    let mut entries: Vec<(u16, String, Option<Vec<bollard::models::PortBinding>>)> = bindings
        .into_iter()
        // A key that is not `PORT/PROTOCOL` names no port envctl could show.
        .filter_map(|(key, bound)| {
            let (port, protocol) = key.split_once('/')?;
            Some((port.parse().ok()?, protocol.to_string(), bound))
        })
        .collect();
    entries.sort_by(|left, right| (left.0, &left.1).cmp(&(right.0, &right.1)));
    let (mut published, mut shown) = (Vec::new(), Vec::new());
    for (port, protocol, bound) in entries {
        let bound = bound.unwrap_or_default();
        if bound.is_empty() {
            shown.push(format!("{port}/{protocol}"));
        }
        for binding in bound {
            let host_ip = binding.host_ip.unwrap_or_default();
            let Some(host_port) = binding.host_port.and_then(|text| text.parse().ok()) else {
                continue;
            };
            shown.push(format!("{host_ip}:{host_port}->{port}/{protocol}"));
            published.push(PublishedPort {
                host_ip,
                host_port,
                protocol: protocol.clone(),
                container_port: Some(port),
            });
        }
    }
    (published, shown)
}

/// Whether `name_or_id` (a name, a full id or its prefix, as inspect takes them) is among
/// the listed containers.
fn listed(containers: &[super::list::Listed], name_or_id: &str) -> bool {
    containers
        .iter()
        .any(|container| container.id.starts_with(name_or_id) || container.name() == name_or_id)
}

/// Why one create failed: an answer to give the caller, or Podman's racing create whose
/// rival is gone already (worth one more try).
enum CreateFailure {
    Engine(EngineError),
    RacedAndFreed(EngineError),
}

#[cfg(test)]
mod removal_tests {
    use super::{listed, removal_under_way, start_request};
    use crate::list::Listed;
    use bollard::models::{ContainerState, ContainerStateStatusEnum as Status};

    fn state(status: Status) -> ContainerState {
        ContainerState {
            status: Some(status),
            ..ContainerState::default()
        }
    }

    /// Issue 40: a sweep racing `run`'s own removal met Docker's 409 and called it a
    /// failure; only a container being removed (or dead) after the 409 is a removal under
    /// way, read from its state, never from the 409's words.
    #[test]
    fn a_removal_already_under_way_is_told_apart() {
        assert!(removal_under_way(Some(&state(Status::REMOVING))));
        assert!(removal_under_way(Some(&state(Status::DEAD))));
        assert!(!removal_under_way(Some(&state(Status::RUNNING))));
        assert!(!removal_under_way(Some(&state(Status::EXITED))));
        // A state the daemon did not report is not a removal.
        assert!(!removal_under_way(Some(&ContainerState::default())));
        assert!(!removal_under_way(None));
    }

    #[test]
    fn what_a_container_asks_of_the_runtime_is_read_from_its_host_config() {
        let host = bollard::models::HostConfig {
            cap_add: Some(vec!["ALL".into()]),
            ulimits: Some(vec![
                bollard::models::ResourcesUlimits {
                    name: Some("RLIMIT_NOFILE".into()),
                    ..Default::default()
                },
                bollard::models::ResourcesUlimits {
                    name: Some("memlock".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let request = start_request(&host);
        assert_eq!(request.capabilities, ["ALL"]);
        assert_eq!(request.ulimits, ["nofile", "memlock"]);
        let nothing = start_request(&bollard::models::HostConfig::default());
        assert!(nothing.capabilities.is_empty() && nothing.ulimits.is_empty());
    }

    #[test]
    fn a_container_the_list_no_longer_has_is_gone() {
        let containers = [Listed {
            id: "96fc8c33c641493563cf".into(),
            names: vec!["/envctl-train".into()],
            ..Listed::default()
        }];
        assert!(listed(&containers, "96fc8c33c641"));
        assert!(listed(&containers, "envctl-train"));
        assert!(!listed(&containers, "envctl-other"));
        assert!(!listed(&[], "96fc8c33c641"));
    }
}
