//! `envctl up`'s application layer: preflight with doctor's verdicts, pull when needed,
//! create and start, detached. Idempotent, safe under concurrent runs, and it removes a
//! container it created but could not start (also on Ctrl-C or SIGTERM, through
//! [`clean_up`]). Like cargo's `ops`, it says what it does on stderr through the context's
//! printer; the command renders the result.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Serialize;

use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::ops::placement;
use crate::spec::{self, CONFIG_HASH_LABEL};

mod create;
mod dry_run;
mod interrupt;
mod place;
mod plan;
mod preflight;
mod reuse;

use create::{
    Check, Created, Prepared, create_with_image, ensure_ports_free, prepare, prepare_known,
};
pub use dry_run::{DryRun, dry_run, dry_run_connection};
pub use interrupt::{RunState, clean_up};
use interrupt::{discard_unstarted, release_placement_lock};
use place::pull_and_place;
pub use place::{gpu_body, request_form};
pub use plan::{Plan, UpRequest, default_name, plan, same_profile_elsewhere};
pub use preflight::ensure_image;
use preflight::{verdict, warn_if_tag_moved};
use reuse::{Reuse, as_made, join_other_run, reuse};

/// When to pull the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PullPolicy {
    /// Only when it is not present locally.
    Missing,
    /// Every time, to pick up a moved tag.
    Always,
    /// Never; fail when it is missing.
    Never,
}

/// What `up` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Recreated,
    Started,
    AlreadyRunning,
}

#[derive(Debug, Serialize)]
pub struct UpReport {
    pub container: String,
    pub id: String,
    pub profile: String,
    pub image: String,
    pub status: Outcome,
    pub config_hash: String,
    /// Whether the container was given GPUs: only then is nvidia-check the next step.
    #[serde(skip)]
    pub gpus: bool,
    /// How its GPUs were chosen, when this run created it with GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::ops::placement::PlacementReport>,
}

/// The label that marks a container with the run that created it: an interrupted run
/// finds what it made by it even when the create's answer never arrived.
pub use crate::spec::RUN_LABEL;

/// The flags of `up` that decide how it meets an existing container and the image.
#[derive(Debug, Clone, Copy)]
pub struct UpOptions {
    pub pull: PullPolicy,
    /// Start despite a failing preflight.
    pub force: bool,
    /// Replace an existing container even when it matches the profile.
    pub recreate: bool,
}

/// Preflight, pull when needed, create and start `plan`'s container (or meet the one
/// that exists): the whole of `envctl up` after the environment is resolved. The daemon's
/// placement lock, when taken, is released however it ends.
pub async fn up(
    engine: &Engine,
    plan: &Plan,
    arguments: &UpOptions,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<UpReport, Error> {
    let result = up_once(engine, plan, arguments, context, state).await;
    release_placement_lock(engine, state, context).await;
    result
}

async fn up_once(
    engine: &Engine,
    plan: &Plan,
    arguments: &UpOptions,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<UpReport, Error> {
    let Plan {
        resolved,
        locked_digest,
        name,
        ..
    } = plan;
    let verdict = verdict(engine, plan, arguments.force, context);
    let mut pull = arguments.pull;
    // Doctor's facts: the plan's when it gathered them, else the preflight's.
    let gathered: Option<crate::ops::doctor::Facts>;
    let (facts, body, prepared, placed) =
        if let (false, Some(facts)) = (plan.gpus.is_none(), &plan.facts) {
            // How GPUs are asked for depends on the engine's answer (CDI names on Podman and
            // on Docker with CDI, `--gpus`'s request for the NVIDIA runtime): judge first,
            // then prepare the body for this engine.
            verdict.await?;
            // A container of this name is met, not placed again: `reuse` starts it (after
            // `still_free` checks its pinned GPUs) or names what changed.
            let existing = engine.inspect_container(name).await?;
            let exists = existing.is_some();
            let placed = if exists {
                // Met, not made: the policy counts what the user holds besides it (a stopped
                // container of theirs may start again).
                if let Some(gate) = plan.counting_gate() {
                    let holders = placement::holders(engine, context).await?;
                    gate.enforce(&plan.body, Some(&facts.gpu), Some(&holders), context)?;
                }
                placement::Placed::unplaced(&plan.gpus)
            } else {
                let (pulled, placed) =
                    pull_and_place(engine, plan, facts, pull, context, state).await?;
                pull = pulled;
                placed
            };
            let body = gpu_body(plan, &placed, facts)?;
            if let Some(report) = &placed.report {
                for skipped in &report.skipped {
                    context.printer.warn(&format!("placement: {skipped}"));
                }
            }
            let prepared = prepare_known(engine, &body, name, pull, state, existing).await?;
            (facts, body, prepared, Some(placed))
        } else {
            // The verdict and the work that does not depend on it run side by side: while
            // the preflight waits for the daemon's `/info` and for NVML, envctl looks for a
            // container of this name and, when there is none and the image is here, creates
            // (never starts) this one. Only a passing verdict starts it; a failing one
            // removes it. This keeps `up` close to the daemon's own create + start time
            // (tests/bench/up.sh).
            let (verdict, prepared) = tokio::join!(
                verdict,
                prepare(engine, &plan.body, name, arguments.pull, state)
            );
            gathered = match verdict {
                Ok(gathered) => gathered,
                Err(error) => {
                    discard_unstarted(engine, state, context).await;
                    return Err(error);
                }
            };
            let facts = gathered
                .as_ref()
                .or(plan.facts.as_ref())
                .ok_or_else(|| Error::Internal("the preflight judged no facts".into()))?;
            (facts, plan.body.clone(), prepared?, None)
        };
    let (mut body, mut placed) = (body, placed);
    if let Some(digest) = &locked_digest {
        warn_if_tag_moved(engine, &resolved.profile.image.to_string(), digest, context).await?;
    }
    let hash = body
        .labels
        .get(CONFIG_HASH_LABEL)
        .cloned()
        .unwrap_or_default();
    // What the report says of the body is the same for a body placed again on recreate.
    let (image, gives_gpus) = (
        body.image.clone(),
        !body.host_config.device_requests.is_empty(),
    );
    let report = |id: String, status: Outcome| UpReport {
        container: name.to_string(),
        id,
        profile: resolved.profile.name.clone(),
        image: image.clone(),
        status,
        config_hash: hash.clone(),
        gpus: gives_gpus,
        placement: None,
    };
    let mut recreated = false;
    let created = match prepared {
        Prepared::Created(created) => created,
        Prepared::Existing(existing) => {
            // A stopped container that `reuse` starts as it is keeps the GPUs it was
            // pinned to: starting it where another container holds them now would share
            // them behind the user's back.
            let restarts = !existing.running && as_made(&existing.labels, &body.labels);
            if restarts {
                placement::still_free(
                    engine,
                    &existing,
                    &facts.gpu,
                    &resolved.profile.name,
                    context,
                )
                .await?;
            }
            match reuse(
                engine,
                &existing,
                &body,
                name,
                &resolved.profile.name,
                arguments.recreate,
                &plan.user,
            )
            .await?
            {
                Reuse::Done(status) => return Ok(report(existing.id, status)),
                Reuse::Replace => {
                    context.printer.info(&format!("recreating {name} …"));
                    engine.stop_container(&existing.id, 10).await?;
                    engine.remove_container(&existing.id, false, true).await?;
                    // From here an interruption leaves no container of this name: said.
                    state.borrow_mut().replaced = Some(name.to_string());
                    recreated = true;
                    // The old container's GPUs are free now: the new one is placed
                    // afresh, under the lock, like any other.
                    if placed.is_some() {
                        // The profile may name a new image: pulled first, outside the lock.
                        let (pulled, replaced) =
                            pull_and_place(engine, plan, facts, pull, context, state).await?;
                        pull = pulled;
                        body = gpu_body(plan, &replaced, facts)?;
                        placed = Some(replaced);
                    }
                    create_with_image(engine, &body, name, pull, context, state).await?
                }
            }
        }
        Prepared::NeedsImage => {
            create_with_image(engine, &body, name, pull, context, state).await?
        }
    };
    let body = &body;
    let id = match created {
        Created::Ours(id) => id,
        // Another `up` of the same profile created it a moment ago: use theirs.
        Created::Theirs => {
            let (id, status) =
                join_other_run(engine, body, name, &resolved.profile.name, &plan.user).await?;
            return Ok(report(id, status));
        }
    };
    // The container exists and names its GPUs: other `up`s see them from now on. A
    // container made meanwhile by another tool, outside the lock, is caught here.
    let placement_report = match placed {
        Some(placed) => {
            if let Some(report) = &placed.report {
                placement::recheck(engine, &id, report, &facts.gpu, context).await?;
                context
                    .printer
                    .info(&format!("placement: {}", report.reason));
            }
            state.borrow_mut().placement_lock = None;
            placement::release(engine, placed.lock, context).await;
            placed.report
        }
        None => None,
    };
    // Never "started" without what the profile asked for: an engine may drop a setting
    // silently (Podman before 5.4 drops GPU requests). The error leaves the container
    // unstarted, and `clean_up` removes it.
    let check = Check {
        engine,
        id: &id,
        body,
        name,
        profile: &resolved.profile.name,
        facts,
    };
    check.given(spec::drift::Stage::Created).await?;
    if let Err(error) = engine.start_container(&id).await {
        // A daemon that started it but never answered: what it did is asked, never
        // guessed, so a running container is not called unstarted and removed.
        let unanswered = matches!(
            error,
            EngineError::Timeout { .. } | EngineError::StoppedAnswering { .. }
        );
        match engine.inspect_container(&id).await {
            Ok(Some(details)) if unanswered && details.running => {
                context.printer.warn(&format!(
                    "the daemon did not answer the start of {name} ({error}), but the container runs"
                ));
            }
            _ => {
                return Err(Error::StartFailed {
                    name: name.to_string(),
                    source: Box::new(error),
                });
            }
        }
    }
    // CDI devices exist only once the engine has started the container (Podman resolves
    // them at start): look again, and take the container back when they are missing.
    if body
        .host_config
        .device_requests
        .iter()
        .any(spec::gpus::is_cdi)
        && let Err(error) = check.given(spec::drift::Stage::Started).await
    {
        if let Err(removal) = engine.remove_container(&id, true, true).await {
            context.printer.warn(&format!(
                "could not remove {name}, started without its GPUs: {removal} (`{} rm -f {name}`)",
                engine.known_kind().cli()
            ));
        }
        return Err(error);
    }
    state.borrow_mut().started = true;
    Ok(UpReport {
        placement: placement_report,
        ..report(
            id,
            if recreated {
                Outcome::Recreated
            } else {
                Outcome::Created
            },
        )
    })
}
