//! Where a container of a profile came from: `up`, or another tool that ran one of
//! envctl's exports (`docker compose up`, the dev container tools). Read from its labels:
//! envctl's own [`ORIGIN_LABEL`] when the export wrote it, else the labels the tool adds
//! itself (`com.docker.compose.project`, `devcontainer.local_folder`), so a container made
//! from an export older than that label is still recognised.

use std::collections::BTreeMap;

use super::ORIGIN_LABEL;

/// The label Compose (v1 and v2) puts on every container it creates: the project name.
pub const COMPOSE_PROJECT_LABEL: &str = "com.docker.compose.project";
/// The label Compose puts on every container it creates: the service name.
pub const COMPOSE_SERVICE_LABEL: &str = "com.docker.compose.service";
/// The Compose version that made it: `1.29.2` (v1, `docker-compose`) or `2.x`.
pub const COMPOSE_VERSION_LABEL: &str = "com.docker.compose.version";
/// The folder Compose ran in: v1 finds the project's file only from there.
pub const COMPOSE_FOLDER_LABEL: &str = "com.docker.compose.project.working_dir";
/// The label the dev container tools (VS Code, the `devcontainer` CLI) put on theirs.
pub const DEVCONTAINER_FOLDER_LABEL: &str = "devcontainer.local_folder";

/// Where a container came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Made by `envctl up` (no sign of another tool).
    Up,
    /// Made by `docker compose` / `docker-compose` from `export --to compose`.
    Compose {
        project: Option<String>,
        service: Option<String>,
        /// From [`COMPOSE_VERSION_LABEL`]: which command to name in the hint.
        version: Option<String>,
        /// From [`COMPOSE_FOLDER_LABEL`].
        folder: Option<String>,
    },
    /// Made by the dev container tools from `export --to devcontainer`.
    Devcontainer,
    /// An [`ORIGIN_LABEL`] value this envctl does not know (a newer envctl wrote it).
    Other(String),
}

impl Origin {
    /// The [`ORIGIN_LABEL`] value of the compose export.
    pub const COMPOSE: &'static str = "compose";
    /// The [`ORIGIN_LABEL`] value of the devcontainer export.
    pub const DEVCONTAINER: &'static str = "devcontainer";

    /// Reads the origin from a container's labels.
    pub fn of(labels: &BTreeMap<String, String>) -> Origin {
        let compose = || Origin::Compose {
            project: labels.get(COMPOSE_PROJECT_LABEL).cloned(),
            service: labels.get(COMPOSE_SERVICE_LABEL).cloned(),
            version: labels.get(COMPOSE_VERSION_LABEL).cloned(),
            folder: labels.get(COMPOSE_FOLDER_LABEL).cloned(),
        };
        match labels.get(ORIGIN_LABEL).map(String::as_str) {
            Some(Self::COMPOSE) => compose(),
            Some(Self::DEVCONTAINER) => Origin::Devcontainer,
            Some(other) => Origin::Other(other.to_string()),
            None if labels.contains_key(COMPOSE_PROJECT_LABEL) => compose(),
            None if labels.contains_key(DEVCONTAINER_FOLDER_LABEL) => Origin::Devcontainer,
            None => Origin::Up,
        }
    }

    /// The one word for `--json`: `up`, `compose`, `devcontainer`, or the label's value.
    pub fn word(&self) -> &str {
        match self {
            Origin::Up => "up",
            Origin::Compose { .. } => Self::COMPOSE,
            Origin::Devcontainer => Self::DEVCONTAINER,
            Origin::Other(value) => value,
        }
    }

    /// The compose project, for `--json` and the hints.
    pub fn compose_project(&self) -> Option<&str> {
        match self {
            Origin::Compose { project, .. } => project.as_deref(),
            _ => None,
        }
    }

    /// For the `ps` table: `up`, `compose (PROJECT)`, `devcontainer`.
    pub fn shown(&self) -> String {
        match self.compose_project() {
            Some(project) => format!("compose ({project})"),
            None => self.word().to_string(),
        }
    }

    /// Who started it and how to stop it, for `up`'s refusal.
    pub fn stop_hint(&self, container: &str) -> String {
        match self {
            Origin::Compose {
                project: Some(project),
                version,
                folder,
                ..
            } => match (version.as_deref(), folder) {
                // Compose v1 reads the project's file again to take it down.
                (Some(version), Some(folder)) if version.starts_with("1.") => format!(
                    "started by docker-compose {version} (project {project}); stop it with `docker-compose -p {project} down` in {folder}"
                ),
                _ => format!(
                    "started by docker compose (project {project}); stop it with `docker compose -p {project} down`"
                ),
            },
            Origin::Compose { project: None, .. } => format!(
                "started by docker compose; stop it with `docker compose down` in its folder, or `docker stop {container}`"
            ),
            Origin::Devcontainer => format!(
                "started by the dev container tools; stop it there, or with `docker stop {container}`"
            ),
            Origin::Up | Origin::Other(_) => format!(
                "started by {}; stop it with `docker stop {container}`",
                self.word()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn envctls_own_label_comes_first_and_compose_labels_name_the_project() {
        let own = labels(&[
            (ORIGIN_LABEL, "compose"),
            (COMPOSE_PROJECT_LABEL, "proj"),
            (COMPOSE_SERVICE_LABEL, "p"),
        ]);
        assert_eq!(Origin::of(&own).shown(), "compose (proj)");
        assert_eq!(Origin::of(&own).compose_project(), Some("proj"));
        assert_eq!(
            Origin::of(&labels(&[(ORIGIN_LABEL, "devcontainer")])),
            Origin::Devcontainer
        );
        assert_eq!(
            Origin::of(&labels(&[(ORIGIN_LABEL, "nomad")])).word(),
            "nomad"
        );
    }

    #[test]
    fn without_envctls_label_the_tools_labels_decide_and_none_is_up() {
        let compose = Origin::of(&labels(&[(COMPOSE_PROJECT_LABEL, "old")]));
        assert_eq!(compose.word(), "compose");
        assert!(
            compose
                .stop_hint("old-p-1")
                .contains("docker compose -p old down")
        );
        assert_eq!(
            Origin::of(&labels(&[(DEVCONTAINER_FOLDER_LABEL, "/src")])),
            Origin::Devcontainer
        );
        assert_eq!(Origin::of(&labels(&[("envctl.profile", "p")])), Origin::Up);
    }
}
