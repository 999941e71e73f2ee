//! The container an omitted TARGET means (`envctl exec -- CMD`, `envctl shell`, `envctl
//! logs`, `envctl down`, `envctl exec nvidia-check`).
//!
//! The rule (ARCHITECTURE.md, "TARGET"; README, "Commands"): among envctl's **running**
//! containers (label `envctl.profile`), (1) those made from a profile of this project's
//! `./envctl/` — the container's `envctl.profile-file` label is one of those files, or, for
//! a container without that label, its `envctl.profile` is one of their names; exactly one
//! is the target, several are listed and refused. (2) Only when the project has none
//! running: every running envctl container, the same way. (3) None at all: refused, with
//! `envctl up`. Only the user's own containers count (`container_plan::ownership`): another user's
//! is never the obvious one. The project comes first so that a folder's own environment is found
//! however many other envctl containers the host runs. A refusal is a usage error (exit 2).

use crate::container_plan::{PROFILE_FILE_LABEL, PROFILE_LABEL};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::{ContainerDetails, ContainerSummary};
use crate::profile::{ProfileFile, SourceKind};

/// The command an omitted TARGET is for, to write the hints: `envctl {command} NAME {rest}`.
#[derive(Debug, Clone, Copy)]
pub struct Purpose<'a> {
    /// `exec`, `shell`, `logs`, `down`.
    pub command: &'a str,
    /// What follows the target in the example: `-- CMD`, `nvidia-check`, or nothing.
    pub rest: &'a str,
    /// For `exec WORD`: the word that named no container or profile and so is taken as a
    /// command of the obvious container.
    pub word: Option<&'a str>,
}

impl Purpose<'_> {
    fn example(&self, target: &str) -> String {
        let mut line = format!("envctl {} {target}", self.command);
        if !self.rest.is_empty() {
            line.push(' ');
            line.push_str(self.rest);
        }
        line
    }

    fn lead(&self) -> String {
        match self.word {
            None => "no TARGET given".into(),
            Some(word) => format!(
                "`{word}` names no container or profile, so it is taken as a command of the only running container"
            ),
        }
    }
}

/// A profile file of `./envctl/`: its name (the file stem) and its absolute path, as the
/// `envctl.profile-file` label writes it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ProjectProfile {
    pub name: String,
    pub file: String,
}

/// Where the candidates came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scope {
    Project,
    Everywhere,
}

/// The running containers an omitted TARGET could mean, and from which scope.
pub(super) fn candidates<'a>(
    running: &'a [ContainerSummary],
    project: &[ProjectProfile],
) -> (Scope, Vec<&'a ContainerSummary>) {
    let ours: Vec<&ContainerSummary> = running
        .iter()
        .filter(|container| is_project_container(container, project))
        .collect();
    if ours.is_empty() {
        (Scope::Everywhere, running.iter().collect())
    } else {
        (Scope::Project, ours)
    }
}

fn is_project_container(container: &ContainerSummary, project: &[ProjectProfile]) -> bool {
    // The file decides when the container says which file: two folders may each have an
    // `envctl/train.toml`, and only this folder's is this project's.
    match container.labels.get(PROFILE_FILE_LABEL) {
        Some(file) => project.iter().any(|profile| &profile.file == file),
        None => container
            .labels
            .get(PROFILE_LABEL)
            .is_some_and(|name| project.iter().any(|profile| &profile.name == name)),
    }
}

/// This project's profile files (`./envctl/*.toml`).
fn project_profiles(context: &Context) -> Vec<ProjectProfile> {
    // Without a readable working directory the names still match; the files cannot.
    let working_directory = context.working_directory().ok();
    context
        .search_path
        .files()
        .0
        .into_iter()
        .filter(|file| file.kind() == SourceKind::Project)
        .filter_map(|file| match file {
            ProfileFile::Disk { path, .. } => Some(ProjectProfile {
                name: path.file_stem()?.to_string_lossy().into_owned(),
                file: match &working_directory {
                    Some(directory) => crate::container_plan::clean(&directory.join(&path))
                        .display()
                        .to_string(),
                    None => path.display().to_string(),
                },
            }),
            ProfileFile::Bundled { .. } => None,
        })
        .collect()
}

/// How often the list is read again when the container chosen vanished before inspect.
const RELIST_ATTEMPTS: usize = 3;

/// The container an omitted TARGET means (the module's rule), or a usage error that lists
/// the candidates and how to name one.
pub async fn obvious_container(
    engine: &Engine,
    context: &Context,
    purpose: Purpose<'_>,
) -> Result<ContainerDetails, Error> {
    let project = project_profiles(context);
    for _ in 0..RELIST_ATTEMPTS {
        // The user's own only: another user's running container is never the obvious one.
        let mut running = engine.list_containers(false, true).await?;
        running.retain(|container| super::is_mine(&container.labels, context));
        let (scope, found) = candidates(&running, &project);
        // Outside its project, a container that names no owner (an older envctl's, an
        // export's) is nobody's obvious container: it may be another user's.
        let found: Vec<&ContainerSummary> = match scope {
            Scope::Project => found,
            Scope::Everywhere => found
                .into_iter()
                .filter(|container| super::is_owned_by_me(&container.labels, context))
                .collect(),
        };
        match (scope, found) {
            (_, found) if found.is_empty() => return Err(none_running(&project, purpose)),
            (_, found) if found.len() == 1 => {
                if let Some(details) = engine.inspect_container(&found[0].id).await? {
                    // Labels claiming its profile's current config over another image
                    // are not believed: named, never the container commands run in.
                    if let Some(Ok(profile)) = super::container_profile(context, &details) {
                        super::refuse_impostor(engine, &details, &profile, context).await?;
                    }
                    return Ok(details);
                }
            }
            (scope, found) => return Err(several_running(scope, &found, purpose)),
        }
    }
    Err(Error::Usage {
        message: format!(
            "{}, and the running container was removed as envctl looked",
            purpose.lead()
        ),
        hint: Some("run it again, or name the container (`envctl ps`)".into()),
    })
}

fn none_running(project: &[ProjectProfile], purpose: Purpose<'_>) -> Error {
    let hint = match project {
        [] => "start one with `envctl up PROFILE` (`envctl profiles list` shows the profiles)"
            .to_string(),
        [only] => format!("start one with `envctl up {}`", only.name),
        several => format!(
            "start one with `envctl up PROFILE` (this project's: {})",
            several
                .iter()
                .map(|profile| profile.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Error::Usage {
        message: format!("{}, and no envctl container is running", purpose.lead()),
        hint: Some(hint),
    }
}

fn several_running(scope: Scope, found: &[&ContainerSummary], purpose: Purpose<'_>) -> Error {
    let listed: Vec<String> = found
        .iter()
        .map(|container| match container.labels.get(PROFILE_LABEL) {
            Some(profile) => format!("{} (profile {profile})", container.name),
            None => container.name.clone(),
        })
        .collect();
    let whose = match scope {
        Scope::Project => "containers of this project's profiles (./envctl/)",
        Scope::Everywhere => "envctl containers",
    };
    Error::Usage {
        message: format!(
            "{}, and {} {whose} run: {}",
            purpose.lead(),
            found.len(),
            listed.join(", ")
        ),
        hint: Some(format!(
            "name one as TARGET, e.g. `{}`",
            purpose.example(&found[0].name)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, profile: &str, file: Option<&str>) -> ContainerSummary {
        let mut labels =
            std::collections::BTreeMap::from([(PROFILE_LABEL.to_string(), profile.to_string())]);
        if let Some(file) = file {
            labels.insert(PROFILE_FILE_LABEL.to_string(), file.to_string());
        }
        ContainerSummary {
            id: format!("{name}-id"),
            name: name.into(),
            image: String::new(),
            image_id: String::new(),
            state: "running".into(),
            status: String::new(),
            created: 0,
            labels,
            ports: Vec::new(),
            published: Vec::new(),
        }
    }

    fn project() -> Vec<ProjectProfile> {
        vec![ProjectProfile {
            name: "train".into(),
            file: "/home/me/project/envctl/train.toml".into(),
        }]
    }

    fn names(found: &[&ContainerSummary]) -> Vec<String> {
        found
            .iter()
            .map(|container| container.name.clone())
            .collect()
    }

    #[test]
    fn the_project_comes_first() {
        let running = [
            container("envctl-other", "other", Some("/elsewhere/other.toml")),
            container(
                "envctl-train",
                "train",
                Some("/home/me/project/envctl/train.toml"),
            ),
        ];
        let (scope, found) = candidates(&running, &project());
        assert_eq!(scope, Scope::Project);
        assert_eq!(names(&found), ["envctl-train"]);
    }

    #[test]
    fn another_folders_profile_of_the_same_name_is_not_the_projects() {
        let running = [
            container(
                "envctl-train",
                "train",
                Some("/elsewhere/envctl/train.toml"),
            ),
            container("envctl-b", "b", None),
        ];
        let (scope, found) = candidates(&running, &project());
        assert_eq!(scope, Scope::Everywhere);
        assert_eq!(names(&found), ["envctl-train", "envctl-b"]);
    }

    #[test]
    fn a_container_without_the_file_label_matches_by_name() {
        let running = [
            container("envctl-train", "train", None),
            container("envctl-b", "b", None),
        ];
        let (scope, found) = candidates(&running, &project());
        assert_eq!(scope, Scope::Project);
        assert_eq!(names(&found), ["envctl-train"]);
    }

    #[test]
    fn refusals_list_the_candidates_and_how_to_name_one() {
        let running = [
            container("envctl-a", "a", None),
            container("envctl-b", "b", None),
        ];
        let (scope, found) = candidates(&running, &[]);
        let purpose = Purpose {
            command: "exec",
            rest: "-- CMD",
            word: None,
        };
        let error = several_running(scope, &found, purpose);
        assert_eq!(
            error.to_string(),
            "no TARGET given, and 2 envctl containers run: envctl-a (profile a), envctl-b (profile b)"
        );
        assert_eq!(
            error.hint().as_deref(),
            Some("name one as TARGET, e.g. `envctl exec envctl-a -- CMD`")
        );
        assert_eq!(error.exit_status(), crate::exit::ExitStatus::Error);
        let none = none_running(&project(), purpose);
        assert_eq!(
            none.to_string(),
            "no TARGET given, and no envctl container is running"
        );
        assert_eq!(
            none.hint().as_deref(),
            Some("start one with `envctl up train`")
        );
    }
}
