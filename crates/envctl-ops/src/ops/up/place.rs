//! The hand-off between the plan and placement: the image made present first (never
//! under the host's lock, so no one waits on another user's download) and, when pulled,
//! its CUDA libraries judged (`preflight::judge_pulled_image`), then the GPUs
//! placed under the lock ([`pull_and_place`]), and the body written with the GPUs placed,
//! in the form this engine takes them ([`gpu_body`], [`request_form`]).

use std::cell::RefCell;
use std::rc::Rc;

use super::{Plan, PullPolicy, RunState, ensure_judged_image};
use crate::container_plan::{self, CreateBody};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::ops::placement;

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
    // Read and judged once pulled, before placing (issue 41), as the preflight judges an
    // image that was here: outside the lock, like the pull.
    ensure_judged_image(engine, plan, facts, &image, pull, context).await?;
    Ok(match pull {
        PullPolicy::Always => PullPolicy::Missing,
        other => other,
    })
}

/// The body to create for a profile that asks for GPUs: the GPUs placement decided,
/// written once in the form this engine takes them (`container_plan::gpus::render`) and named in
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
        container_plan::gpus::render(&placed.gpus, &form).map_err(|unavailable| {
            Error::GpusUnavailable {
                profile: plan.resolved.profile.name.clone(),
                reason: unavailable.reason,
                fix: fix.to_string(),
            }
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
            crate::container_plan::gpu_path::gpu_request_form(daemon, &facts.host),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_plan::gpus::Gpus;
    use crate::facts::engine::{EngineKind, GpuRequestForm};
    use crate::ops::up::fixtures::{daemon, facts, nvml_with_gpus, plan, reachable, unreachable};

    const DOCKER_FIX: &str = "install the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`";

    /// `--gpus`'s request where the NVIDIA runtime takes it and where the engine could
    /// not be asked; CDI names where the daemon discovered CDI GPUs and on Podman 5.4+;
    /// none on an older Podman, which would drop the request. Each engine's own fix.
    #[test]
    fn the_request_form_follows_the_engine() {
        let form = |state| request_form(&facts(state, nvml_with_gpus(1)));
        assert_eq!(form(unreachable()), (GpuRequestForm::Gpus, DOCKER_FIX));
        assert_eq!(
            form(reachable(daemon(
                EngineKind::DockerEngine,
                "28.2.2",
                &["nvidia", "runc"]
            ))),
            (GpuRequestForm::Gpus, DOCKER_FIX)
        );
        let mut discovering = daemon(EngineKind::DockerEngine, "28.2.2", &["runc"]);
        discovering.discovered_devices = Some(vec!["cdi:nvidia.com/gpu=0".into()]);
        assert_eq!(form(reachable(discovering)).0, GpuRequestForm::Cdi);
        let (podman, fix) = form(reachable(daemon(EngineKind::Podman, "5.4.0", &["crun"])));
        assert_eq!(podman, GpuRequestForm::Cdi);
        assert_eq!(fix, EngineKind::Podman.gpu_fix());
        assert_ne!(fix, DOCKER_FIX);
        assert!(matches!(
            form(reachable(daemon(EngineKind::Podman, "5.0.1", &["crun"]))).0,
            GpuRequestForm::Unavailable { reason } if reason.contains("Podman 5.0.1")
        ));
    }

    const TWO_GPUS: &str = "name = \"train\"\nimage = \"ubuntu:24.04\"\ngpus = 2\n";

    /// The placed GPUs, not the plan's, are what the body asks for, in the engine's form,
    /// and named in the holder's label; the plan's body is left as it was.
    #[test]
    fn the_gpu_body_asks_for_the_placed_gpus_in_the_engines_form() {
        let plan = plan(TWO_GPUS, Gpus::Count(2));
        let placed =
            placement::Placed::unplaced(&Gpus::Devices(vec!["GPU-a".into(), "GPU-b".into()]));
        let docker = facts(
            reachable(daemon(EngineKind::DockerEngine, "28.2.2", &["nvidia"])),
            nvml_with_gpus(2),
        );
        let body = gpu_body(&plan, &placed, &docker).unwrap();
        assert_eq!(body.host_config.device_requests.len(), 1);
        let request = &body.host_config.device_requests[0];
        assert_eq!(request.driver, "");
        assert_eq!(
            request.device_ids,
            Some(vec!["GPU-a".to_string(), "GPU-b".to_string()])
        );
        assert_eq!(request.capabilities, vec![vec!["gpu".to_string()]]);
        assert_eq!(
            body.labels
                .get(container_plan::GPUS_LABEL)
                .map(String::as_str),
            Some("devices=GPU-a,GPU-b")
        );
        assert!(!plan.body.labels.contains_key(container_plan::GPUS_LABEL));
        let podman = facts(
            reachable(daemon(EngineKind::Podman, "5.4.0", &["crun"])),
            nvml_with_gpus(2),
        );
        let body = gpu_body(&plan, &placed, &podman).unwrap();
        assert!(container_plan::gpus::is_cdi(
            &body.host_config.device_requests[0]
        ));
        assert_eq!(
            body.host_config.device_requests[0].device_ids,
            Some(vec![
                "nvidia.com/gpu=GPU-a".to_string(),
                "nvidia.com/gpu=GPU-b".to_string()
            ])
        );
        // No GPUs placed: no request, and nothing to label.
        let none = gpu_body(&plan, &placement::Placed::unplaced(&Gpus::None), &docker).unwrap();
        assert!(none.host_config.device_requests.is_empty());
        assert!(!none.labels.contains_key(container_plan::GPUS_LABEL));
    }

    /// An engine that would drop the request refuses the profile with the engine's fix.
    #[test]
    fn an_engine_that_drops_gpu_requests_refuses_the_profile() {
        let plan = plan(TWO_GPUS, Gpus::Count(2));
        let old_podman = facts(
            reachable(daemon(EngineKind::Podman, "4.9.3", &["crun"])),
            nvml_with_gpus(2),
        );
        match gpu_body(&plan, &placement::Placed::unplaced(&plan.gpus), &old_podman) {
            Err(Error::GpusUnavailable {
                profile,
                reason,
                fix,
            }) => {
                assert_eq!(profile, "train");
                assert!(reason.contains("Podman 4.9.3"), "{reason}");
                assert_eq!(fix, EngineKind::Podman.gpu_fix());
            }
            other => panic!("expected GpusUnavailable, got {other:?}"),
        }
    }
}
