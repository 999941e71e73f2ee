//! TARGET arguments: a container name or id, or a profile (name or path) whose container
//! is found by its `envctl.profile` label; the running container `exec` needs, and the
//! named commands of the profile it was made from.

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::ContainerDetails;
use crate::spec::{PROFILE_LABEL, container_name};

/// Finds the container a TARGET names. A container name or id wins over a profile name.
pub async fn find_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    if let Some(details) = engine.inspect_container(target).await? {
        return Ok(details);
    }
    find_by_profile(engine, context, target).await
}

/// Like [`find_container`], for commands that stop or remove: only a container envctl
/// created (it carries `envctl.profile`). A foreign container that happens to have the
/// TARGET's name gives way to the profile's container, and is never touched itself.
pub async fn find_own_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    let foreign = match engine.inspect_container(target).await? {
        Some(details) if details.labels.contains_key(PROFILE_LABEL) => return Ok(details),
        Some(details) => Some(details.name),
        None => None,
    };
    match (find_by_profile(engine, context, target).await, foreign) {
        (Err(Error::TargetNotFound { .. }), Some(name)) => Err(Error::NotEnvctls { name }),
        (result, _) => result,
    }
}

/// The container of the profile TARGET names, found by its `envctl.profile` label.
async fn find_by_profile(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    // The profile's own name when it resolves (a path, or `name` set in the file); else the
    // target itself, so a container whose profile file is gone is still found by label.
    let resolved = match context.search_path.resolve(target) {
        Ok(resolved) => Some(resolved.profile.name),
        Err(
            crate::profile::ProfileError::NotFound { .. }
            | crate::profile::ProfileError::FileNotFound { .. },
        ) => None,
        Err(error) => return Err(error.into()),
    };
    let profile = resolved.clone().unwrap_or_else(|| target.to_string());
    let mut containers: Vec<_> = engine
        .list_containers(true, true)
        .await?
        .into_iter()
        .filter(|container| container.labels.get(PROFILE_LABEL) == Some(&profile))
        .collect();
    // The default name first: `envctl-<profile>`.
    let default_name = container_name(&profile);
    containers.sort_by_key(|container| container.name != default_name);
    match containers.as_slice() {
        // A profile that exists has no container yet: `up` makes one.
        [] if resolved.is_some() => Err(Error::TargetNotFound {
            target: target.to_string(),
            hint: format!(
                "profile `{profile}` has no container yet: start one with `envctl up {target}`"
            ),
        }),
        // Neither a profile nor a container: `up` would fail the same way, so suggest the
        // nearest name envctl knows instead.
        [] => Err(Error::TargetNotFound {
            target: target.to_string(),
            hint: not_found_hint(engine, context, target).await?,
        }),
        [only] => single(engine, &only.id).await,
        [first, ..] if first.name == default_name => single(engine, &first.id).await,
        several => Err(Error::TargetAmbiguous {
            target: target.to_string(),
            containers: several
                .iter()
                .map(|container| container.name.clone())
                .collect(),
        }),
    }
}

/// For a TARGET that names nothing: the nearest profile or envctl container name, or
/// where to look.
async fn not_found_hint(engine: &Engine, context: &Context, target: &str) -> Result<String, Error> {
    let mut known = context.search_path.names();
    known.extend(
        engine
            .list_containers(true, true)
            .await?
            .into_iter()
            .filter(|container| container.labels.contains_key(PROFILE_LABEL))
            .map(|container| container.name),
    );
    let candidates: Vec<&str> = known.iter().map(String::as_str).collect();
    Ok(match crate::suggest::did_you_mean(target, &candidates) {
        Some(near) => format!("did you mean `{near}`?"),
        None => {
            "`envctl ps -a` lists envctl's containers, `envctl profiles list` the profiles".into()
        }
    })
}

async fn single(engine: &Engine, id: &str) -> Result<ContainerDetails, Error> {
    engine
        .inspect_container(id)
        .await?
        .ok_or_else(|| Error::TargetNotFound {
            target: id.to_string(),
            hint: "the container was removed meanwhile".into(),
        })
}

/// Finds the target's container and insists it runs.
pub async fn running_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    let container = find_container(engine, context, target).await?;
    if !container.running {
        let hint = match container.labels.get(PROFILE_LABEL) {
            Some(profile) => format!("start it with `envctl up {profile}`"),
            // Not envctl's: `envctl up` cannot start it, docker can.
            None => format!("start it with `docker start {}`", container.name),
        };
        return Err(Error::NotRunning {
            name: container.name,
            status: container.status,
            hint,
        });
    }
    Ok(container)
}

/// The command a profile names `name`, from the profile the container was made from.
pub fn named_command(
    context: &Context,
    container: &ContainerDetails,
    name: &str,
) -> Result<Vec<String>, Error> {
    let profile = container
        .labels
        .get(PROFILE_LABEL)
        .ok_or_else(|| Error::Usage {
            message: format!(
                "container `{}` has no envctl profile, so it has no named commands",
                container.name
            ),
            hint: Some(format!(
                "run a command with `envctl exec {} -- {name} …`",
                container.name
            )),
        })?;
    let resolved = context.search_path.resolve(profile)?;
    resolved.profile.commands.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = resolved
            .profile
            .commands
            .keys()
            .map(String::as_str)
            .collect();
        Error::Usage {
            message: format!("profile `{profile}` has no command `{name}`"),
            hint: Some(if known.is_empty() {
                format!(
                    "add it under [commands] in {}, or run `envctl exec {} -- {name} …`",
                    resolved.file, container.name
                )
            } else {
                format!(
                    "its commands: {} (or run any command after `--`)",
                    known.join(", ")
                )
            }),
        }
    })
}
