//! The hand-off between the plan and placement: the image made present first (never
//! under the host's lock, so no one waits on another user's download), then the GPUs
//! placed under the lock ([`pull_and_place`]), and the body written with the GPUs placed,
//! in the form this engine takes them ([`gpu_body`], [`request_form`]).

use std::cell::RefCell;
use std::rc::Rc;

use super::{Plan, PullPolicy, RunState, ensure_image};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::ops::placement;
use crate::spec::{self, CreateBody};

/// Placement holds the host-wide lock from choosing to creating: when it will, the image
/// is pulled first (per `pull`), so no one waits on another user's download. Gives the
/// policy for the create that follows (`always` has just pulled).
/// The image made present (never under the lock), then the GPUs placed under the host's
/// lock: for a new container and for one `--recreate` replaces alike. The pull policy
/// that is left for the create comes back with the placement.
pub(super) async fn pull_and_place(
    engine: &Engine,
    plan: &Plan,
    facts: &crate::ops::doctor::Facts,
    pull: PullPolicy,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<(PullPolicy, placement::Placed), Error> {
    let pull = pull_before_placing(engine, plan, facts, pull, context).await?;
    let run = state.borrow().run_id.clone();
    let placed = placement::place(
        engine,
        &plan.gpus,
        plan.resolved.profile.placement,
        &facts.gpu,
        Some(placement::Locking {
            file: &context.environment.gpu_lock_path(),
            image: &plan.body.image,
            run: &run,
        }),
        plan.counting_gate().as_ref().map(|gate| (gate, &plan.body)),
        context,
    )
    .await?;
    // Held until the container exists; whatever ends the run first releases it.
    state.borrow_mut().placement_lock = placed.lock.daemon.clone();
    Ok((pull, placed))
}

async fn pull_before_placing(
    engine: &Engine,
    plan: &Plan,
    facts: &crate::ops::doctor::Facts,
    pull: PullPolicy,
    context: &Context,
) -> Result<PullPolicy, Error> {
    if !placement::locks(&plan.gpus, plan.resolved.profile.placement, &facts.gpu)
        && plan.counting_gate().is_none()
    {
        return Ok(pull);
    }
    let image: crate::profile::image::ImageReference =
        plan.body
            .image
            .parse()
            .map_err(|message: String| Error::Usage {
                message,
                hint: None,
            })?;
    ensure_image(engine, &image, pull, context).await?;
    Ok(match pull {
        PullPolicy::Always => PullPolicy::Missing,
        other => other,
    })
}

/// The body to create for a profile that asks for GPUs: the GPUs placement decided,
/// written once in the form this engine takes them (`spec::gpus::render`) and named in
/// the holder's label. A profile that needs GPUs fails where the engine would drop the
/// request (`optional` was decided with the same facts, in [`plan`]).
pub fn gpu_body(
    plan: &Plan,
    placed: &placement::Placed,
    facts: &crate::ops::doctor::Facts,
) -> Result<CreateBody, Error> {
    let (form, fix) = request_form(facts);
    let mut body = placement::labelled(plan.body.clone(), &placed.gpus);
    body.host_config.device_requests =
        spec::gpus::render(&placed.gpus, &form).map_err(|unavailable| Error::GpusUnavailable {
            profile: plan.resolved.profile.name.clone(),
            reason: unavailable.reason,
            fix: fix.to_string(),
        })?;
    Ok(body)
}

/// How this engine takes GPU requests, and its fix for GPUs, from the facts the preflight
/// gathered: what `up` sends and what `up --dry-run` shows. An engine that cannot be
/// reached gets `--gpus`'s request; its create then says why it cannot be used.
pub fn request_form(
    facts: &crate::ops::doctor::Facts,
) -> (crate::facts::engine::GpuRequestForm, &'static str) {
    use crate::facts::engine::{EngineKind, EngineState, GpuRequestForm};
    match &facts.engine.state {
        EngineState::Reachable(daemon) => (
            crate::spec::gpu_path::gpu_request_form(daemon, &facts.host),
            daemon.kind.gpu_fix(),
        ),
        EngineState::Unreachable { .. } => (GpuRequestForm::Gpus, EngineKind::Unknown.gpu_fix()),
    }
}

/// The container exists and names its GPUs: other `up`s see them from now on, and the
/// placement's lock is released. A container made meanwhile by another tool, outside the
/// lock, is caught here. Gives how its GPUs were chosen, when they were.
pub(super) async fn hand_over_placement(
    engine: &Engine,
    id: &str,
    placed: Option<placement::Placed>,
    facts: &crate::ops::doctor::Facts,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<Option<placement::PlacementReport>, Error> {
    let Some(placed) = placed else {
        return Ok(None);
    };
    if let Some(report) = &placed.report {
        placement::recheck(engine, id, report, &facts.gpu, context).await?;
        context
            .printer
            .info(&format!("placement: {}", report.reason));
    }
    state.borrow_mut().placement_lock = None;
    placement::release(engine, placed.lock, context).await;
    Ok(placed.report)
}
