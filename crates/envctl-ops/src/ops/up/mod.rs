//! `envctl up`'s application layer: preflight with doctor's verdicts, pull when needed,
//! create and start, detached. Idempotent, safe under concurrent runs, and it removes a
//! container it created but could not start (also on Ctrl-C or SIGTERM, through
//! [`clean_up`]). Like cargo's `ops`, it says what it does on stderr through the context's
//! printer; the command renders the result.
//!
//! One file per seam: `plan` (what to make), `place` (pull, then place under the lock),
//! `create` (make, never start; check and start), `reuse` (an existing container met),
//! `preflight` (doctor's verdict, the image, and the CUDA libraries of an image pulled
//! after it: judged before the create, issue 41), `interrupt` (what a run made and its
//! removal), `dry_run`, and `session` (the connection the command holds: `ops` connects
//! for it); here, [`up`] calls them in order.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Serialize;

use crate::container_plan::{CONFIG_HASH_LABEL, CreateBody};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::ops::placement;

mod create;
mod dry_run;
mod interrupt;
mod place;
mod plan;
mod preflight;
mod reuse;
mod session;

#[cfg(test)]
mod fixtures;

use create::{
    Check, Created, Prepared, create_with_judged_image, ensure_ports_free, prepare, prepare_known,
    start_checked,
};
pub use dry_run::{DryRun, dry_run, dry_run_connection};
pub use interrupt::{RunState, clean_up};
use interrupt::{discard_unstarted, release_placement_lock};
pub use place::{gpu_body, request_form};
use place::{hand_over_placement, pull_and_place};
pub use plan::{Plan, UpRequest, default_name, plan, same_profile_elsewhere};
pub use preflight::ensure_image;
use preflight::{Force, ensure_judged_image, verdict, warn_if_tag_moved};
use reuse::{Met, join_other_run, meet_existing};
pub use session::{Session, dry_run_plan};

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
pub use crate::container_plan::RUN_LABEL;

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

/// The steps of `up` in their order: judged and prepared (placed first when the plan asks
/// for GPUs), the container of this name met or created, its placement handed over, then
/// checked and started.
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
    // Doctor's facts: the plan's when it gathered them, else the preflight's.
    let gathered: Option<crate::ops::doctor::Facts>;
    let (mut making, prepared) = if let (false, Some(facts)) = (plan.gpus.is_none(), &plan.facts) {
        judge_then_place(engine, plan, facts, arguments, context, state).await?
    } else {
        let (judged, prepared) =
            judge_beside_create(engine, plan, arguments, context, state).await?;
        gathered = judged;
        (
            making_unplaced(gathered.as_ref(), plan, arguments)?,
            prepared?,
        )
    };
    let facts = making.facts;
    if let Some(digest) = &locked_digest {
        warn_if_tag_moved(engine, &resolved.profile.image.to_string(), digest, context).await?;
    }
    // What the report says of the body is the same for a body placed again on recreate.
    let reporting = Reporting::of(plan, &making.body);
    let (created, recreated) = match create_or_meet(
        engine,
        plan,
        arguments,
        prepared,
        &mut making,
        context,
        state,
    )
    .await?
    {
        Made::Sent(created, recreated) => (created, recreated),
        Made::Met(id, status) => return Ok(reporting.report(id, status)),
    };
    let Making { body, placed, .. } = making;
    let id = match created {
        Created::Ours(id) => id,
        // Another `up` of the same profile created it a moment ago: use theirs.
        Created::Theirs => {
            let (id, status) =
                join_other_run(engine, &body, name, &resolved.profile.name, &plan.user).await?;
            return Ok(reporting.report(id, status));
        }
    };
    let placement_report = hand_over_placement(engine, &id, placed, facts, context, state).await?;
    start_made(engine, &id, &body, plan, facts, context, state).await?;
    let outcome = if recreated {
        Outcome::Recreated
    } else {
        Outcome::Created
    };
    Ok(UpReport {
        placement: placement_report,
        ..reporting.report(id, outcome)
    })
}

/// Checks and starts the container `id` made from `body`, and records that this run
/// started it.
async fn start_made(
    engine: &Engine,
    id: &str,
    body: &CreateBody,
    plan: &Plan,
    facts: &crate::ops::doctor::Facts,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<(), Error> {
    start_checked(
        &Check {
            engine,
            id,
            body,
            name: &plan.name,
            profile: &plan.resolved.profile.name,
            facts,
        },
        context,
    )
    .await?;
    state.borrow_mut().started = true;
    Ok(())
}

/// What is made without a placement (no GPUs, or no facts to place them with): the
/// plan's body as it is, judged by doctor's facts (the preflight's `gathered`, else the
/// plan's).
fn making_unplaced<'a>(
    gathered: Option<&'a crate::ops::doctor::Facts>,
    plan: &'a Plan,
    arguments: &UpOptions,
) -> Result<Making<'a>, Error> {
    let facts = gathered
        .or(plan.facts.as_ref())
        .ok_or_else(|| Error::Internal("the preflight judged no facts".into()))?;
    Ok(Making {
        facts,
        body: plan.body.clone(),
        placed: None,
        pull: arguments.pull,
    })
}

/// Where the container this run is to start comes from, or what meeting the one of this
/// name did.
enum Made {
    /// The create was sent (by this run, or a concurrent one won the name); `true` when a
    /// `--recreate` removed the old container first.
    Sent(Created, bool),
    /// The existing container, left running or started as it was: its id and what `up`
    /// did.
    Met(String, Outcome),
}

/// The container of this name created, unless [`prepare`] already sent the create, or
/// met ([`meet_existing`]: started, left running or replaced).
async fn create_or_meet(
    engine: &Engine,
    plan: &Plan,
    arguments: &UpOptions,
    prepared: Prepared,
    making: &mut Making<'_>,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<Made, Error> {
    Ok(match prepared {
        Prepared::Created(created) => Made::Sent(created, false),
        Prepared::Existing(existing) => {
            match meet_existing(
                engine,
                plan,
                arguments.recreate,
                existing,
                making,
                context,
                state,
            )
            .await?
            {
                Met::Done(id, status) => Made::Met(id, status),
                Met::Recreated(created) => Made::Sent(created, true),
            }
        }
        Prepared::NeedsImage => {
            // An image pulled now is judged before the create, as the preflight judged
            // one that was here (issue 41).
            let created = create_with_judged_image(
                engine,
                &making.body,
                &plan.name,
                making.pull,
                Some((plan, making.facts)),
                context,
                state,
            )
            .await?;
            Made::Sent(created, false)
        }
    })
}

/// What this run is about to create, as the preflight leaves it: the doctor's facts it
/// was judged on, the body (its GPUs placed, when it asks for them), the placement held
/// until the container exists, and the pull policy left for the create.
struct Making<'a> {
    facts: &'a crate::ops::doctor::Facts,
    body: CreateBody,
    placed: Option<placement::Placed>,
    pull: PullPolicy,
}

/// With GPUs and the plan's facts: how GPUs are asked for depends on the engine's answer
/// (CDI names on Podman and on Docker with CDI, `--gpus`'s request for the NVIDIA
/// runtime), so the verdict comes first, then the placement and the body for this engine.
async fn judge_then_place<'a>(
    engine: &Engine,
    plan: &Plan,
    facts: &'a crate::ops::doctor::Facts,
    arguments: &UpOptions,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<(Making<'a>, Prepared), Error> {
    verdict(engine, plan, Force::of(arguments.force, false), context).await?;
    let mut pull = arguments.pull;
    // A container of this name is met, not placed again: `reuse` starts it (after
    // `still_free` checks its pinned GPUs) or names what changed.
    let existing = engine.inspect_container(&plan.name).await?;
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
        let (pulled, placed) = pull_and_place(engine, plan, facts, pull, context, state).await?;
        pull = pulled;
        placed
    };
    let body = gpu_body(plan, &placed, facts)?;
    if let Some(report) = &placed.report {
        for skipped in &report.skipped {
            context.printer.warn(&format!("placement: {skipped}"));
        }
    }
    let prepared = prepare_known(engine, &body, &plan.name, pull, state, existing).await?;
    let making = Making {
        facts,
        body,
        placed: Some(placed),
        pull,
    };
    Ok((making, prepared))
}

/// Without the plan's facts for GPUs: the verdict and the work that does not depend on it
/// run side by side. While the preflight waits for the daemon's `/info` and for NVML,
/// envctl looks for a container of this name and, when there is none and the image is
/// here, creates (never starts) this one. Only a passing verdict starts it; a failing one
/// removes it. This keeps `up` close to the daemon's own create + start time
/// (tests/bench/up.sh). Gives the facts the preflight gathered, and what was prepared.
async fn judge_beside_create(
    engine: &Engine,
    plan: &Plan,
    arguments: &UpOptions,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<(Option<crate::ops::doctor::Facts>, Result<Prepared, Error>), Error> {
    let (verdict, prepared) = tokio::join!(
        verdict(engine, plan, Force::of(arguments.force, false), context),
        prepare(engine, &plan.body, &plan.name, arguments.pull, state)
    );
    match verdict {
        Ok(gathered) => Ok((gathered, prepared)),
        Err(error) => {
            discard_unstarted(engine, state, context).await;
            Err(error)
        }
    }
}

/// What the report says of the container however it comes to be: taken from the body
/// before a recreate places it again.
struct Reporting {
    container: String,
    profile: String,
    image: String,
    config_hash: String,
    gpus: bool,
}

impl Reporting {
    fn of(plan: &Plan, body: &CreateBody) -> Reporting {
        Reporting {
            container: plan.name.clone(),
            profile: plan.resolved.profile.name.clone(),
            image: body.image.clone(),
            config_hash: body
                .labels
                .get(CONFIG_HASH_LABEL)
                .cloned()
                .unwrap_or_default(),
            gpus: !body.host_config.device_requests.is_empty(),
        }
    }

    /// The report of container `id`, which this run left `status`.
    fn report(&self, id: String, status: Outcome) -> UpReport {
        UpReport {
            container: self.container.clone(),
            id,
            profile: self.profile.clone(),
            image: self.image.clone(),
            status,
            config_hash: self.config_hash.clone(),
            gpus: self.gpus,
            placement: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_plan::gpus::Gpus;

    /// The report names the plan's container and profile and what the body it was taken
    /// from says (image, config hash, GPUs), whatever body a recreate makes later.
    #[test]
    fn the_report_says_what_the_body_it_was_taken_from_says() {
        let plan = fixtures::plan("name = \"web\"\nimage = \"ubuntu:24.04\"\n", Gpus::None);
        let mut body = plan.body.clone();
        body.host_config.device_requests = Gpus::All.docker_requests();
        let reporting = Reporting::of(&plan, &body);
        body.image = "ubuntu:26.04".into();
        body.host_config.device_requests.clear();
        let report = reporting.report("c0ffee".into(), Outcome::Started);
        assert_eq!(report.container, "envctl-web");
        assert_eq!(report.profile, "web");
        assert_eq!(report.id, "c0ffee");
        assert_eq!(report.image, "ubuntu:24.04");
        assert_eq!(report.status, Outcome::Started);
        assert_eq!(
            Some(&report.config_hash),
            plan.body.labels.get(CONFIG_HASH_LABEL)
        );
        assert!(!report.config_hash.is_empty());
        assert!(report.gpus);
        assert!(report.placement.is_none());
        let plain = Reporting::of(&plan, &plan.body).report("c0ffee".into(), Outcome::Created);
        assert!(!plain.gpus);
        assert_eq!(
            serde_json::to_value(&plain).unwrap()["status"],
            serde_json::json!("created")
        );
    }
}
