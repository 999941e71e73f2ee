//! `envctl down`: stop a container envctl made (`--rm` removes it, `--volumes` also its
//! named volumes), found by TARGET or, without one, as the obvious container; and the
//! sweep of every container envctl made that carries a label (`--slurm-job`, `--label`),
//! for a Slurm `Epilog=` script. Host folders mounted into them are never touched.
//! `commands::down` renders what these return.

use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::facts::container::ContainerDetails;
use crate::ops::target::{Purpose, find_own_container, obvious_container};

/// What `down` did: the container stopped (and removed when asked), and the named
/// volumes removed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downed {
    pub container: String,
    pub volumes_removed: Vec<String>,
    /// With `--volumes`: the named volumes it mounts that envctl did not make with it
    /// (`container_plan::volumes::made_with`), left as they are.
    pub volumes_kept: Vec<String>,
}

/// The label a sweep looks for: `--slurm-job ID` is `envctl.slurm-job=ID`; `--label` is
/// taken as given once it is KEY=VALUE.
pub fn sweep_label(slurm_job: Option<&str>, label: Option<&str>) -> Result<Option<String>, Error> {
    match (slurm_job, label) {
        (Some(job), _) => Ok(Some(format!(
            "{}={job}",
            crate::container_plan::slurm::SLURM_JOB_LABEL
        ))),
        (None, Some(label)) if !label.contains('=') || label.starts_with('=') => {
            Err(Error::Usage {
                message: format!(
                    "--label `{}` is not KEY=VALUE",
                    crate::ui::text::shown(label)
                ),
                hint: Some("`envctl down --rm --label envctl.slurm-job=1234`".into()),
            })
        }
        (None, label) => Ok(label.map(str::to_string)),
    }
}

/// `down --slurm-job ID` / `--label KEY=VALUE`: stops (and with `remove`, removes) every
/// container envctl made that carries the label; the names of those it stopped.
pub async fn sweep(
    label: &str,
    remove: bool,
    timeout_seconds: u32,
    context: &Context,
) -> Result<Vec<String>, Error> {
    let engine = context
        .engine_with_deadline(stop_deadline(timeout_seconds))
        .await?;
    let timeout = i32::try_from(timeout_seconds).unwrap_or(i32::MAX);
    // Root on this machine (a Slurm Epilog) sweeps every user's; anyone else, and root of
    // another machine reaching the daemon remotely, their own.
    let everyone = context.other_user
        || matches!(
            context.me().identity,
            Some(crate::facts::user::Identity::LocalUid { uid: 0, .. })
        );
    let mut names = Vec::new();
    for id in engine.containers_labelled(label).await? {
        let Some(container) = engine.inspect_container(&id).await? else {
            continue;
        };
        // Only what envctl made, never a container that merely shares the label.
        if !container
            .labels
            .contains_key(crate::container_plan::PROFILE_LABEL)
        {
            continue;
        }
        if !everyone && !crate::ops::target::is_mine(&container.labels, context) {
            context.printer.warn(&format!(
                "left {}: another user's (`--other-user` sweeps it too)",
                container.name
            ));
            continue;
        }
        // Both at once when removing: `rm -f` kills at once, the stop gives the grace.
        if container.running {
            engine.stop_container(&container.id, timeout).await?;
        }
        if remove {
            engine.remove_container(&container.id, true, true).await?;
        }
        names.push(container.name);
    }
    Ok(names)
}

/// `down [TARGET]`: stops the container (and with `remove` or `volumes`, removes it and
/// with `volumes` its named volumes); none when there was nothing to stop.
pub async fn down(
    target: Option<&str>,
    remove: bool,
    volumes: bool,
    timeout_seconds: u32,
    context: &Context,
) -> Result<Option<Downed>, Error> {
    {
        // The client waits as long as the daemon may rightly take: the grace period first.
        let engine = context
            .engine_with_deadline(stop_deadline(timeout_seconds))
            .await?;
        let Some(container) = target_container(&engine, target, context).await? else {
            return Ok(None);
        };
        // A look again after a race: by the TARGET given, else by the container's name.
        let target = target.map_or_else(|| container.name.clone(), str::to_string);
        let target = target.as_str();
        if container.running {
            context
                .printer
                .info(&format!("stopping {} …", container.name));
        }
        // `--timeout` is at most 86400 (clap), so it fits the API's i32.
        let timeout = i32::try_from(timeout_seconds).unwrap_or(i32::MAX);
        let was_running = container.running;
        let stopping = std::time::Instant::now();
        let container = stop(&engine, container, target, timeout, context).await?;
        if was_running && stopping.elapsed().as_secs() >= u64::from(timeout_seconds) {
            warn_if_killed(
                &engine,
                &container.id,
                &container.name,
                timeout_seconds,
                context,
            )
            .await?;
        }
        let mut removed_volumes = Vec::new();
        let mut kept_volumes = Vec::new();
        if remove || volumes {
            // Anonymous volumes go with the container; named ones only when asked.
            engine.remove_container(&container.id, false, true).await?;
            if volumes {
                remove_made_volumes(
                    &engine,
                    &container,
                    &mut removed_volumes,
                    &mut kept_volumes,
                    context,
                )
                .await?;
            }
        }
        // By name: the daemon lists a container's mounts in no stable order.
        removed_volumes.sort();
        kept_volumes.sort();
        Ok::<_, Error>(Some(Downed {
            container: container.name,
            volumes_removed: removed_volumes,
            volumes_kept: kept_volumes,
        }))
    }
}

/// The container `down` is for: TARGET's, or with none the obvious container, which is
/// envctl's (it carries `envctl.profile`); `None` where TARGET's profile has none.
async fn target_container(
    engine: &Engine,
    target: Option<&str>,
    context: &Context,
) -> Result<Option<ContainerDetails>, Error> {
    match target {
        Some(target) => match find_own_container(engine, context, target).await {
            Ok(container) => Ok(Some(container)),
            // What `down` is asked for is already so: said, not an error, and no
            // hint to `up` what is being taken down.
            Err(Error::NoContainer { profile, .. }) => {
                context.printer.info(&format!(
                    "nothing to stop: profile `{profile}` has no container"
                ));
                Ok(None)
            }
            Err(error) => Err(error),
        },
        None => {
            let purpose = Purpose {
                command: "down",
                rest: "",
                word: None,
            };
            obvious_container(engine, context, purpose).await.map(Some)
        }
    }
}

/// Stops `container`; the container stopped (looked up again by `target` where it was
/// gone).
async fn stop(
    engine: &Engine,
    container: ContainerDetails,
    target: &str,
    timeout: i32,
    context: &Context,
) -> Result<ContainerDetails, Error> {
    match engine.stop_container(&container.id, timeout).await {
        Ok(()) => Ok(container),
        // Removed between the look and the stop (an `up --recreate` replaced it): look
        // again rather than claim anything about a container envctl did not see go.
        Err(EngineError::Daemon { status: 404, .. }) => {
            let again = find_own_container(engine, context, target).await?;
            engine.stop_container(&again.id, timeout).await?;
            Ok(again)
        }
        Err(error) => Err(error.into()),
    }
}

/// Removes the named volumes of the removed `container` that were made with it, each
/// into `removed` as it goes, and keeps (into `kept`) the others.
async fn remove_made_volumes(
    engine: &Engine,
    container: &ContainerDetails,
    removed: &mut Vec<String>,
    kept: &mut Vec<String>,
    context: &Context,
) -> Result<(), Error> {
    for volume in &container.volumes {
        // Only a volume made with this container (its run id, random per run);
        // one that was there before, a team's data whatever its labels, stays.
        let made = engine.volume_labels(volume).await?.is_some_and(|labels| {
            crate::container_plan::volumes::made_with(&labels, &container.labels)
        });
        if !made {
            context.printer.info(&format!(
                "kept volume {}: not made by envctl with this container (remove it yourself, if it is yours to remove: `docker volume rm {}`)",
                crate::ui::text::shown(volume),
                crate::container_plan::shell_quote(volume)
            ));
            kept.push(volume.clone());
            continue;
        }
        engine.remove_volume(volume).await?;
        // Said as it happens: when a later volume cannot be removed, the user
        // still knows which ones are gone.
        context.printer.info(&format!("removed volume {volume}"));
        removed.push(volume.clone());
    }
    Ok(())
}

/// The daemon sends SIGTERM, waits the grace period, then SIGKILLs: a container that
/// spent the whole grace period and exited 137 was killed, and its processes got no
/// chance to save anything. Said, with the fix, rather than a plain "stopped".
async fn warn_if_killed(
    engine: &Engine,
    id: &str,
    name: &str,
    timeout_seconds: u32,
    context: &Context,
) -> Result<(), Error> {
    if let Some(details) = engine.inspect_container(id).await?
        && details.exit_code == Some(137)
    {
        context.printer.warn(&format!(
            "`{name}` did not stop within {timeout_seconds} s of SIGTERM and was killed (SIGKILL): its main process ignores SIGTERM (a shell as PID 1 does unless it `exec`s the command) or needs longer (`--timeout SECONDS`)"
        ));
    }
    Ok(())
}

/// How long the stop request of `down --timeout SECONDS` may take: the grace period, the
/// kill after it, and the daemon's own bookkeeping; never less than [`super::REQUEST_TIMEOUT`].
pub fn stop_deadline(grace_seconds: u32) -> std::time::Duration {
    super::REQUEST_TIMEOUT.max(std::time::Duration::from_secs(
        u64::from(grace_seconds) + 30,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_deadline_follows_the_grace_period() {
        assert_eq!(stop_deadline(10), super::super::REQUEST_TIMEOUT);
        assert_eq!(stop_deadline(200), std::time::Duration::from_secs(230));
        assert!(stop_deadline(86_400) > std::time::Duration::from_secs(86_400));
    }
}
