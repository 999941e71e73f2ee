//! The policy an admin keeps at a daemon (issue 38, item 3), so that every client of that
//! daemon obeys it, from whatever machine: a volume named [`POLICY_NAME`] whose label
//! [`POLICY_LABEL`] holds the policy's TOML text, as the GPU record is kept
//! (`daemon_placement`). A volume's labels cannot change, so a push makes the volume
//! again; a volume of that name without the label is someone's and never replaced.
//!
//! This module reads and writes the volume; what the text says and how it combines with
//! a client's own policy file are `policy` and `ops::policy`'s.

use std::collections::HashMap;

use super::{Engine, EngineError};

/// The volume's name, one per daemon.
pub const POLICY_NAME: &str = "envctl-policy";

/// The label holding the policy's TOML text.
pub const POLICY_LABEL: &str = "envctl.policy";

/// Who pushed it (`user@host` of the client), for `doctor` and `policy show`.
pub const PUSHED_BY_LABEL: &str = "envctl.policy.pushed-by";

/// When it was pushed (RFC 3339, UTC).
pub const PUSHED_AT_LABEL: &str = "envctl.policy.pushed-at";

/// What stands at [`POLICY_NAME`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonPolicyVolume {
    Missing,
    /// envctl's: the policy's text and who pushed it when.
    Envctls {
        text: String,
        pushed_by: Option<String>,
        pushed_at: Option<String>,
    },
    /// A volume of that name without [`POLICY_LABEL`]: someone's, never read as a policy
    /// nor replaced.
    NotEnvctls,
}

impl Engine {
    /// The daemon's policy volume, as it stands.
    pub async fn daemon_policy(&self) -> Result<DaemonPolicyVolume, EngineError> {
        let inspected = self
            .with_deadline(
                "inspecting a volume",
                self.answer_deadline(),
                self.docker.inspect_volume(POLICY_NAME),
            )
            .await?;
        match inspected {
            Ok(volume) => Ok(read_labels(&volume.labels)),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(DaemonPolicyVolume::Missing),
            Err(error) => Err(self.classify(error)),
        }
    }

    /// Writes `text` as the daemon's policy: the volume made again (its labels cannot
    /// change). Called only where [`Engine::daemon_policy`] found envctl's or none.
    pub async fn write_daemon_policy(
        &self,
        text: &str,
        pushed_by: &str,
        pushed_at: &str,
    ) -> Result<(), EngineError> {
        self.remove_volume(POLICY_NAME).await?;
        let request = bollard::models::VolumeCreateRequest {
            name: Some(POLICY_NAME.to_string()),
            labels: Some(HashMap::from([
                (POLICY_LABEL.to_string(), text.to_string()),
                (PUSHED_BY_LABEL.to_string(), pushed_by.to_string()),
                (PUSHED_AT_LABEL.to_string(), pushed_at.to_string()),
            ])),
            ..Default::default()
        };
        self.work_answer("creating a volume", self.docker.create_volume(request))
            .await?;
        Ok(())
    }

    /// Removes the daemon's policy volume. Called only where [`Engine::daemon_policy`]
    /// found envctl's; one already gone is not an error.
    pub async fn remove_daemon_policy(&self) -> Result<(), EngineError> {
        self.remove_volume(POLICY_NAME).await
    }
}

/// What a volume's labels say about it.
fn read_labels(labels: &HashMap<String, String>) -> DaemonPolicyVolume {
    match labels.get(POLICY_LABEL) {
        Some(text) => DaemonPolicyVolume::Envctls {
            text: text.clone(),
            pushed_by: labels.get(PUSHED_BY_LABEL).cloned(),
            pushed_at: labels.get(PUSHED_AT_LABEL).cloned(),
        },
        None => DaemonPolicyVolume::NotEnvctls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volume_without_the_label_is_someones_and_the_label_is_the_policy() {
        assert_eq!(
            read_labels(&HashMap::from([("team".to_string(), "x".to_string())])),
            DaemonPolicyVolume::NotEnvctls
        );
        assert_eq!(
            read_labels(&HashMap::from([
                (POLICY_LABEL.to_string(), "[limits]\n".to_string()),
                (PUSHED_BY_LABEL.to_string(), "alice@laptop".to_string()),
            ])),
            DaemonPolicyVolume::Envctls {
                text: "[limits]\n".into(),
                pushed_by: Some("alice@laptop".into()),
                pushed_at: None,
            }
        );
    }
}
