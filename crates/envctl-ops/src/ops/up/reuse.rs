//! Meeting a container of the name `up` would make: started or left running when it is
//! what this `up` would make ([`as_made`]), replaced only with `--recreate`, refused when
//! it is another user's, another tool's or another profile's, and the drift from the
//! profile named otherwise. A concurrent `up` that won the name is joined
//! ([`join_other_run`]).

use std::cell::RefCell;
use std::rc::Rc;

use super::{
    Created, Making, Outcome, Plan, RunState, create_with_judged_image, gpu_body, pull_and_place,
};
use crate::container_plan::{self, CONFIG_HASH_LABEL, CreateBody};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::facts::container::ContainerDetails;
use crate::ops::placement;

/// A concurrent `up` of the same profile won the name: use its container when it is the
/// same configuration.
pub(super) async fn join_other_run(
    engine: &Engine,
    body: &CreateBody,
    name: &str,
    profile: &str,
    user: &crate::facts::user::User,
) -> Result<(String, Outcome), Error> {
    let existing = wait_for_container(engine, name)
        .await?
        .ok_or_else(|| Error::NameTaken {
            name: name.to_string(),
            cli: engine.known_kind().cli(),
        })?;
    match reuse(engine, &existing, body, name, profile, false, user).await? {
        Reuse::Done(status) => Ok((existing.id, status)),
        Reuse::Replace => Err(Error::NameTaken {
            name: name.to_string(),
            cli: engine.known_kind().cli(),
        }),
    }
}

/// The daemon reserves a name (409) before the container it names can be inspected: a
/// concurrent `up` may be mid-create. Give it a moment to appear.
async fn wait_for_container(
    engine: &Engine,
    name: &str,
) -> Result<Option<crate::facts::container::ContainerDetails>, Error> {
    for _ in 0..100 {
        if let Some(container) = engine.inspect_container(name).await? {
            return Ok(Some(container));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(None)
}

pub(super) enum Reuse {
    Done(Outcome),
    Replace,
}

/// Whether the container labelled `existing` is what this `up` would make: the same config
/// hash, or — for a plain `up` without overrides — a container made from the same profile
/// with overrides (`-p`, `-e`, `--volume`, `--gpus`) at its own `up`, which is started as
/// it was made, as `docker start` does (issue 40: it was "an earlier version" of an
/// unchanged profile). Its profile-hash label is the hash of the profile without them.
pub(super) fn as_made(
    existing: &std::collections::BTreeMap<String, String>,
    body: &std::collections::BTreeMap<String, String>,
) -> bool {
    let config = existing.get(CONFIG_HASH_LABEL);
    config.is_some() && config == body.get(CONFIG_HASH_LABEL)
        || (!body.contains_key(container_plan::PROFILE_HASH_LABEL)
            && existing
                .get(container_plan::PROFILE_HASH_LABEL)
                .is_some_and(|made_from| Some(made_from) == body.get(CONFIG_HASH_LABEL)))
}

/// An existing container of this name: envctl's and current → use it (starting it when
/// stopped); envctl's but from another profile version → recreate only when asked; not
/// envctl's, or another user's → never touch it (not even with `--recreate`).
pub(super) async fn reuse(
    engine: &Engine,
    existing: &crate::facts::container::ContainerDetails,
    body: &CreateBody,
    name: &str,
    profile: &str,
    recreate: bool,
    user: &crate::facts::user::User,
) -> Result<Reuse, Error> {
    refuse_not_mine(engine, existing, name, profile, user)?;
    // Another profile's container at this name (`up P --name <Q's>`) is Q's: never met as
    // an earlier P, never replaced by `--recreate`.
    crate::container_plan::ownership::made_from(&existing.labels, name, profile)?;
    let hash_current = as_made(&existing.labels, &body.labels);
    if crate::container_plan::ownership::claims_current(&existing.labels, &body.labels) {
        let differences = daemon_differences(engine, existing, body, name, profile).await?;
        crate::container_plan::ownership::not_an_impostor(
            name,
            profile,
            &differences,
            engine.known_kind().cli(),
        )?;
    }
    if hash_current {
        if existing.running {
            return Ok(Reuse::Done(Outcome::AlreadyRunning));
        }
        return start_as_made(engine, existing, name, profile).await;
    }
    if recreate {
        return Ok(Reuse::Replace);
    }
    // Removed since it was met (another `down`): no inspect to compare, so no list of
    // changes is made up; the config hash it had is the change.
    let mut changes = match engine.inspect_container_json(&existing.id).await? {
        Some(inspected) => container_plan::drift::changes(body, &inspected)?
            .iter()
            .map(ToString::to_string)
            .collect(),
        None => Vec::new(),
    };
    if changes.is_empty() {
        changes.push("the profile's settings changed (config hash differs)".into());
    }
    // Made from a file the name does not resolve to here (`up` from another folder): said,
    // so `--recreate` is not taken for applying the container's own profile (issue 40).
    let made_from = existing
        .labels
        .get(container_plan::PROFILE_FILE_LABEL)
        .filter(|file| body.labels.get(container_plan::PROFILE_FILE_LABEL) != Some(*file))
        .cloned();
    Err(Error::ProfileChanged {
        name: name.to_string(),
        profile: profile.to_string(),
        changes,
        made_from,
    })
}

/// Refuses a container of this name that is not envctl's, or is another user's.
fn refuse_not_mine(
    engine: &Engine,
    existing: &ContainerDetails,
    name: &str,
    profile: &str,
    user: &crate::facts::user::User,
) -> Result<(), Error> {
    match crate::container_plan::ownership::belonging(&existing.labels, user) {
        crate::container_plan::ownership::Belonging::NotEnvctls => Err(Error::NameTaken {
            name: name.to_string(),
            cli: engine.known_kind().cli(),
        }),
        crate::container_plan::ownership::Belonging::Theirs { owner } => Err(Error::BelongsTo {
            name: name.to_string(),
            owner,
            action: crate::error::OtherUsersAction::Up {
                profile: profile.to_string(),
            },
        }),
        crate::container_plan::ownership::Belonging::Mine
        | crate::container_plan::ownership::Belonging::Unowned => Ok(()),
    }
}

/// Starts the stopped container that is what this `up` would make; one started by a
/// concurrent `up` meanwhile is already running, one removed meanwhile was not made.
async fn start_as_made(
    engine: &Engine,
    existing: &ContainerDetails,
    name: &str,
    profile: &str,
) -> Result<Reuse, Error> {
    match engine.start_container(&existing.id).await {
        Ok(()) => Ok(Reuse::Done(Outcome::Started)),
        // Started by a concurrent `up` between our inspect and our start.
        Err(error) => match engine
            .inspect_container(&existing.id)
            .await?
            .filter(|now| !matches!(now.status.as_str(), "removing" | "dead"))
        {
            Some(now) if now.running => Ok(Reuse::Done(Outcome::AlreadyRunning)),
            // Removed as this run started it (a `down --rm` at work, gone or still
            // being removed): this run made nothing, and says so rather than
            // "created but could not start".
            None => Err(Error::TargetNotFound {
                target: name.to_string(),
                hint: format!(
                    "`{name}` was removed as envctl started it (another `envctl down --rm`?); this run made nothing: run `envctl up {profile}` again"
                ),
            }),
            _ => Err(Error::StartFailed {
                name: name.to_string(),
                source: Box::new(error),
            }),
        },
    }
}

/// What the daemon says of `existing`, whose labels claim to be what this `up` makes
/// (its config hash, or the profile hash of one made with overrides), that differs from
/// `body` (`ownership::daemon_facts`). One inspect, only for a container that claims to be
/// current: the daemon's own answer, not the labels, decides that it is.
async fn daemon_differences(
    engine: &Engine,
    existing: &ContainerDetails,
    body: &CreateBody,
    name: &str,
    profile: &str,
) -> Result<Vec<container_plan::drift::Difference>, Error> {
    use crate::container_plan::ownership::daemon_facts::{Claim, Mounts, not_as_claimed};
    let Some(inspected) = engine.inspect_container_json(&existing.id).await? else {
        return Err(Error::TargetNotFound {
            target: name.to_string(),
            hint: format!(
                "`{name}` was removed as envctl looked at it (another `envctl down --rm`?); run `envctl up {profile}` again"
            ),
        });
    };
    let same_config = existing.labels.contains_key(CONFIG_HASH_LABEL)
        && existing.labels.get(CONFIG_HASH_LABEL) == body.labels.get(CONFIG_HASH_LABEL);
    // The body's bind sources are this folder's reading of the profile: the container's
    // are comparable where it records the same profile file (relative sources resolve
    // against its project). One made with overrides may have any mounts `--volume` gave.
    let same_file = existing.labels.get(container_plan::PROFILE_FILE_LABEL)
        == body.labels.get(container_plan::PROFILE_FILE_LABEL);
    let claim = Claim {
        settings: same_config,
        mounts: match (same_config, same_file) {
            (true, true) => Mounts::Whole,
            (true, false) => Mounts::Targets,
            (false, _) => Mounts::Unjudged,
        },
    };
    Ok(not_as_claimed(body, &inspected, claim)?)
}

/// What meeting the existing container came to.
pub(super) enum Met {
    /// Left running or started as it was: its id and what `up` did.
    Done(String, Outcome),
    /// Replaced (`--recreate`): the create of the new one was sent.
    Recreated(Created),
}

/// Meets the container of this name: started or left as it is ([`reuse`]), or replaced
/// with `--recreate` ([`recreate`]). A stopped container that `reuse` starts as it is
/// keeps the GPUs it was pinned to: starting it where another container holds them now
/// would share them behind the user's back, so they are checked first.
pub(super) async fn meet_existing(
    engine: &Engine,
    plan: &Plan,
    recreate_asked: bool,
    existing: ContainerDetails,
    making: &mut Making<'_>,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<Met, Error> {
    let profile = &plan.resolved.profile.name;
    let facts = making.facts;
    let restarts = !existing.running && as_made(&existing.labels, &making.body.labels);
    if restarts {
        placement::still_free(engine, &existing, &facts.gpu, profile, context).await?;
    }
    match reuse(
        engine,
        &existing,
        &making.body,
        &plan.name,
        profile,
        recreate_asked,
        &plan.user,
    )
    .await?
    {
        Reuse::Done(status) => Ok(Met::Done(existing.id, status)),
        Reuse::Replace => recreate(engine, plan, &existing, making, context, state)
            .await
            .map(Met::Recreated),
    }
}

/// `--recreate`: the old container stopped and removed, then the new one created; with
/// GPUs, placed afresh under the lock like any other (the old one's GPUs are free now).
async fn recreate(
    engine: &Engine,
    plan: &Plan,
    existing: &ContainerDetails,
    making: &mut Making<'_>,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<Created, Error> {
    let (name, facts) = (&plan.name, making.facts);
    context.printer.info(&format!("recreating {name} …"));
    engine.stop_container(&existing.id, 10).await?;
    engine.remove_container(&existing.id, false, true).await?;
    // From here an interruption leaves no container of this name: said.
    state.borrow_mut().replaced = Some(name.to_string());
    if making.placed.is_some() {
        // The profile may name a new image: pulled first, outside the lock.
        let (pulled, replaced) =
            pull_and_place(engine, plan, facts, making.pull, context, state).await?;
        making.pull = pulled;
        making.body = gpu_body(plan, &replaced, facts)?;
        making.placed = Some(replaced);
    }
    // An image pulled only now (a profile that names its GPUs or asks for all of them)
    // is judged before the create, as a first `up` judges it (issue 41).
    create_with_judged_image(
        engine,
        &making.body,
        name,
        making.pull,
        Some((plan, facts)),
        context,
        state,
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    /// The same config hash is the container this `up` would make; another hash is not.
    #[test]
    fn the_same_config_hash_is_as_made() {
        let body = labels(&[(CONFIG_HASH_LABEL, "h1")]);
        assert!(as_made(&labels(&[(CONFIG_HASH_LABEL, "h1")]), &body));
        assert!(!as_made(&labels(&[(CONFIG_HASH_LABEL, "h0")]), &body));
        // Neither hash known is no match: an unknown never passes for current.
        assert!(!as_made(&labels(&[]), &labels(&[])));
        assert!(!as_made(&labels(&[]), &body));
    }

    /// A container made with overrides (`-p`, `--gpus`) records the profile's own hash: a
    /// plain `up` of the unchanged profile meets it as made; an `up` with overrides
    /// itself (its body has a profile hash) or of a changed profile does not.
    #[test]
    fn a_container_made_with_overrides_is_as_made_for_a_plain_up() {
        let made_with_overrides = labels(&[
            (CONFIG_HASH_LABEL, "with-overrides"),
            (container_plan::PROFILE_HASH_LABEL, "plain"),
        ]);
        assert!(as_made(
            &made_with_overrides,
            &labels(&[(CONFIG_HASH_LABEL, "plain")])
        ));
        assert!(!as_made(
            &made_with_overrides,
            &labels(&[(CONFIG_HASH_LABEL, "changed")])
        ));
        assert!(!as_made(
            &made_with_overrides,
            &labels(&[
                (CONFIG_HASH_LABEL, "plain"),
                (container_plan::PROFILE_HASH_LABEL, "plain")
            ])
        ));
    }
}
