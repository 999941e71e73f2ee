//! The named volumes a create body mounts, and the labels each is made with: the
//! profile's own labels (as on the container) and envctl's that say whose and which
//! profile's it is — never the ones that describe one container (its config hash, its
//! GPUs, the run that made it), since a volume outlives its containers. `up` makes them
//! before the container (`Engine::create_volumes`), because a volume the daemon makes
//! implicitly at create carries no label; a volume that exists already is left as it is.

use std::collections::BTreeMap;

use super::{CreateBody, MountType, PROFILE_FILE_LABEL, PROFILE_LABEL, UID_LABEL, USER_LABEL};

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
    use crate::spec::{CONFIG_HASH_LABEL, GPUS_LABEL, HostConfig, Mount, RUN_LABEL};

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
    }
}
