//! The named volumes a create body mounts, and the labels each is made with: the
//! profile's own labels (as on the container) and envctl's that say whose and which
//! profile's it is — never the ones that describe one container (its config hash, its
//! GPUs, the run that made it), since a volume outlives its containers. `up` makes them
//! before the container (`Engine::create_volumes`), because a volume the daemon makes
//! implicitly at create carries no label; a volume that exists already is left as it is.
//!
//! A volume `up` makes also carries [`VOLUME_RUN_LABEL`], the run id (`envctl.run`, random
//! each run) of the container made with it: `down --volumes` removes a volume only when
//! that label equals the container's own run id ([`made_with`]), so a volume that existed
//! before (a team's data, however it is labelled) is never removed, and a label copied onto
//! one cannot name a run id that did not exist yet.

use std::collections::BTreeMap;

use super::{CreateBody, MountType, PROFILE_FILE_LABEL, PROFILE_LABEL, UID_LABEL, USER_LABEL};

/// The run id of the `up` that made a volume: the same value as its container's
/// [`super::RUN_LABEL`].
pub const VOLUME_RUN_LABEL: &str = "envctl.volume-run";

/// Whether `up` made the volume labelled `volume_labels` together with the container
/// labelled `container_labels`: both carry the same run id, which is random per run, so
/// no volume made before that run can carry it.
pub fn made_with(
    volume_labels: &BTreeMap<String, String>,
    container_labels: &BTreeMap<String, String>,
) -> bool {
    match (
        volume_labels.get(VOLUME_RUN_LABEL),
        container_labels.get(super::RUN_LABEL),
    ) {
        (Some(volume), Some(container)) => !volume.is_empty() && volume == container,
        _ => false,
    }
}

/// [`named_volumes`] as `up` makes them in the run `run_id`: each with [`VOLUME_RUN_LABEL`].
pub fn named_volumes_of_run(body: &CreateBody, run_id: &str) -> Vec<NamedVolume> {
    let mut volumes = named_volumes(body);
    for volume in &mut volumes {
        volume
            .labels
            .insert(VOLUME_RUN_LABEL.to_string(), run_id.to_string());
    }
    volumes
}

/// A named volume to make before the container, with its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedVolume {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// envctl's labels a volume carries, when the body has them: which profile, from which
/// file, and whose.
const VOLUME_CLAIMS: [&str; 4] = [PROFILE_LABEL, PROFILE_FILE_LABEL, USER_LABEL, UID_LABEL];

/// The named volumes `body` mounts, each once, in the order of its mounts.
pub fn named_volumes(body: &CreateBody) -> Vec<NamedVolume> {
    let labels: BTreeMap<String, String> = body
        .labels
        .iter()
        .filter(|(key, _)| !key.starts_with("envctl.") || VOLUME_CLAIMS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let mut volumes: Vec<NamedVolume> = Vec::new();
    for mount in &body.host_config.mounts {
        if mount.kind == MountType::Volume
            && !volumes.iter().any(|volume| volume.name == mount.source)
        {
            volumes.push(NamedVolume {
                name: mount.source.clone(),
                labels: labels.clone(),
            });
        }
    }
    volumes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_plan::{CONFIG_HASH_LABEL, GPUS_LABEL, HostConfig, Mount, RUN_LABEL};

    fn body(mounts: Vec<Mount>) -> CreateBody {
        CreateBody {
            image: "x:1".into(),
            cmd: Vec::new(),
            env: Vec::new(),
            working_dir: None,
            user: None,
            hostname: None,
            labels: Default::default(),
            exposed_ports: Default::default(),
            host_config: HostConfig {
                mounts,
                ..HostConfig::default()
            },
            env_from_shell: Default::default(),
            open_stdin: false,
            stdin_once: false,
        }
    }

    fn mount(kind: MountType, source: &str, target: &str) -> Mount {
        Mount {
            kind,
            source: source.into(),
            target: target.into(),
            read_only: false,
        }
    }

    #[test]
    fn each_named_volume_once_with_the_profiles_labels_and_whose_it_is() {
        let mut body = body(vec![
            mount(MountType::Volume, "data", "/data"),
            mount(MountType::Bind, "/home/a/code", "/code"),
            mount(MountType::Volume, "cache", "/cache"),
            mount(MountType::Volume, "data", "/data-again"),
        ]);
        for (key, value) in [
            ("com.example.team", "vision"),
            (PROFILE_LABEL, "train"),
            (USER_LABEL, "ada"),
            (UID_LABEL, "1000"),
            (PROFILE_FILE_LABEL, "/p/envctl/train.toml"),
            (CONFIG_HASH_LABEL, "abc"),
            (GPUS_LABEL, "all"),
            (RUN_LABEL, "r1"),
        ] {
            body.labels.insert(key.into(), value.into());
        }
        let volumes = named_volumes(&body);
        let names: Vec<&str> = volumes.iter().map(|volume| volume.name.as_str()).collect();
        assert_eq!(names, ["data", "cache"], "binds are no volumes; each once");
        let keys: Vec<&str> = volumes[0].labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "com.example.team",
                "envctl.profile",
                "envctl.profile-file",
                "envctl.uid",
                "envctl.user"
            ],
            "nothing that describes one container"
        );
        assert_eq!(volumes[0].labels, volumes[1].labels);
        assert!(named_volumes(&super::tests::body(Vec::new())).is_empty());
        let of_run = named_volumes_of_run(&body, "r1");
        assert_eq!(of_run[0].labels[VOLUME_RUN_LABEL], "r1");
    }

    #[test]
    fn a_volume_is_made_with_a_container_only_when_their_run_ids_match() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect()
        };
        let container = labels(&[(RUN_LABEL, "42-abc"), (PROFILE_LABEL, "p")]);
        assert!(made_with(
            &labels(&[(VOLUME_RUN_LABEL, "42-abc")]),
            &container
        ));
        // Claims of profile and owner alone, another run's id, an empty one: not made with it.
        assert!(!made_with(
            &labels(&[(PROFILE_LABEL, "p"), (UID_LABEL, "1000")]),
            &container
        ));
        assert!(!made_with(
            &labels(&[(VOLUME_RUN_LABEL, "41-abc")]),
            &container
        ));
        assert!(!made_with(
            &labels(&[(VOLUME_RUN_LABEL, "")]),
            &labels(&[(RUN_LABEL, "")])
        ));
        assert!(!made_with(
            &labels(&[(VOLUME_RUN_LABEL, "42-abc")]),
            &labels(&[(PROFILE_LABEL, "p")])
        ));
    }
}
