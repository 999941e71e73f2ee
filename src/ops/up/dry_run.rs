//! `up --dry-run`: the plan placed and written in this engine's form as `up` would (no
//! lock taken, nothing made) and judged as `up` judges it; without a daemon, the plan is
//! still shown and what only the daemon can tell is said to be unjudged.

use super::{Plan, ensure_ports_free, gpu_body, request_form, verdict};
use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::ops::placement;
use crate::spec::CreateBody;

/// The dry run's connection, made as doctor makes it: without a daemon the plan is still
/// shown, and what only the daemon can tell is said to be unjudged. Gives the connection
/// (or why there is none) for the plan's gathering, and the engine when it answered.
pub async fn dry_run_connection(
    context: &Context,
) -> (Result<Engine, EngineError>, Option<Engine>) {
    let connected = context.connect(crate::ops::REQUEST_TIMEOUT);
    let reachable = match &connected {
        Ok(engine) => matches!(
            tokio::time::timeout(crate::engine::PING_TIMEOUT, engine.ping()).await,
            Ok(Ok(_))
        ),
        Err(_) => false,
    };
    // One connection for the whole dry run (a clone shares bollard's client).
    let engine = connected.as_ref().ok().filter(|_| reachable).cloned();
    (connected, engine)
}

/// What `up --dry-run` shows: the body `up` would send now, and how its GPUs were
/// decided.
pub struct DryRun {
    pub body: CreateBody,
    /// With GPUs: the form of the request for this engine, and the engine.
    pub gpu_request: Option<(crate::facts::engine::GpuRequestForm, String)>,
    /// With GPUs, when the engine could be asked who holds GPUs: which ones `up` would
    /// take now, and why.
    pub placement: Option<placement::PlacementReport>,
}

/// `up` without making anything: the same plan placed and written in this engine's form
/// as `up` would (no lock taken), then judged as `up` judges it: another user's container
/// under the name, the policy (with what the user holds), a host port in use, and the
/// doctor verdict. The first refusal, as `up` would give it. `engine`: `None` when the
/// daemon could not be reached, which is said; what only it can tell is not judged.
pub async fn dry_run(
    engine: Option<&Engine>,
    plan: &Plan,
    force: bool,
    context: &Context,
) -> Result<DryRun, Error> {
    let Some(engine) = engine else {
        context.printer.warn(
            "the engine could not be reached: ports in use, GPUs held and the doctor verdict were not judged",
        );
        return Ok(match &plan.facts {
            Some(facts) if !plan.gpus.is_none() => {
                let (form, _) = request_form(facts);
                context.printer.warn(&format!(
                    "the engine could not be asked how it takes GPUs: showing `--gpus`'s request, which Docker with the NVIDIA runtime takes ({})",
                    facts.engine.endpoint
                ));
                DryRun {
                    body: gpu_body(plan, &placement::Placed::unplaced(&plan.gpus), facts)?,
                    gpu_request: Some((form, format!("not reached at {}", facts.engine.endpoint))),
                    placement: None,
                }
            }
            _ => DryRun {
                body: plan.body.clone(),
                gpu_request: None,
                placement: None,
            },
        });
    };
    let existing = engine.inspect_container(&plan.name).await?;
    if let Some(existing) = &existing
        && let crate::spec::ownership::Belonging::Theirs { owner } =
            crate::spec::ownership::belonging(&existing.labels, &plan.user)
    {
        return Err(Error::BelongsTo {
            name: plan.name.clone(),
            owner,
            action: crate::error::OtherUsersAction::Up {
                profile: plan.resolved.profile.name.clone(),
            },
        });
    }
    // Judged before placing, as `up` judges it before it places: `--gpus 9` on eight GPUs
    // is the profile's failed check, not "no room" (stopping containers never helps).
    verdict(engine, plan, force, context).await?;
    let shown = match &plan.facts {
        Some(facts) if !plan.gpus.is_none() => {
            // Which GPUs `up` would pick now; nothing is locked or created.
            let placed = placement::place(
                engine,
                &plan.gpus,
                plan.resolved.profile.placement,
                &facts.gpu,
                None,
                plan.counting_gate().as_ref().map(|gate| (gate, &plan.body)),
                context,
            )
            .await?;
            let (form, _) = request_form(facts);
            let described = match &facts.engine.state {
                crate::facts::engine::EngineState::Reachable(daemon) => daemon.described(),
                crate::facts::engine::EngineState::Unreachable { .. } => {
                    format!("not reached at {}", facts.engine.endpoint)
                }
            };
            DryRun {
                body: gpu_body(plan, &placed, facts)?,
                gpu_request: Some((form, described)),
                placement: placed.report,
            }
        }
        _ => {
            if let Some(gate) = plan.counting_gate() {
                let holders = placement::holders(engine, context).await?;
                gate.enforce(&plan.body, plan.gpu_facts(), Some(&holders), context)?;
            }
            DryRun {
                body: plan.body.clone(),
                gpu_request: None,
                placement: None,
            }
        }
    };
    if existing.is_none() {
        ensure_ports_free(engine, &shown.body).await?;
    }
    Ok(shown)
}
