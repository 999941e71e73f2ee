//! `up --dry-run`: the plan placed and written in this engine's form as `up` would (no
//! lock taken, nothing made) and judged as `up` judges it; without a daemon, the plan is
//! still shown and what only the daemon can tell is said to be unjudged.

use super::{Force, Plan, ensure_ports_free, gpu_body, request_form, verdict};
use crate::container_plan::CreateBody;
use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::ops::placement;

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
    /// Issue 41: where the image is not here, that `up` reads its CUDA libraries once it
    /// has pulled it and judges them before it creates anything (said, as `up` would
    /// do it; the dry run pulls nothing).
    pub library_scan: Option<String>,
}

/// What `up` does about the image's CUDA libraries when the image is not here
/// (`preflight::judge_pulled_image`), said for the dry run; `None` where the preflight
/// judged them (the image is here) or nothing would (no GPUs asked, none seen here).
fn library_scan_after_pull(plan: &Plan, facts: &crate::ops::doctor::Facts) -> Option<String> {
    let absent = matches!(facts.images.first(), Some(Ok(None)));
    (absent && !plan.gpus.is_none() && crate::ops::doctor::scans_libraries(&facts.gpu)).then(
        || {
            format!(
                "image `{}` is not here: `up` pulls it, then reads its CUDA libraries and judges them on this host's GPUs (gpu.library-arch) before it creates the container{}",
                plan.body.image,
                if plan.force {
                    " (a failure is said and, with --force, started anyway)"
                } else {
                    " (a failure refuses it, as the preflight does)"
                }
            )
        },
    )
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
        return unreached(plan, context);
    };
    let existing = engine.inspect_container(&plan.name).await?;
    if let Some(existing) = &existing {
        refuse_theirs(plan, existing)?;
    }
    // Judged before placing, as `up` judges it before it places: `--gpus 9` on eight GPUs
    // is the profile's failed check, not "no room" (stopping containers never helps).
    let gathered = verdict(engine, plan, Force::of(force, true), context).await?;
    // A container met is not made: nothing is pulled for it.
    let library_scan = gathered
        .as_ref()
        .or(plan.facts.as_ref())
        .filter(|_| existing.is_none())
        .and_then(|facts| library_scan_after_pull(plan, facts));
    if let Some(said) = &library_scan {
        context.printer.info(said);
    }
    let mut shown = match &plan.facts {
        Some(facts) if !plan.gpus.is_none() => placed(engine, plan, facts, context).await?,
        _ => {
            if let Some(gate) = plan.counting_gate() {
                let holders = placement::holders(engine, context).await?;
                gate.enforce(&plan.body, plan.gpu_facts(), Some(&holders), context)?;
            }
            DryRun {
                body: plan.body.clone(),
                gpu_request: None,
                placement: None,
                library_scan: None,
            }
        }
    };
    if existing.is_none() {
        ensure_ports_free(engine, &shown.body).await?;
    }
    shown.library_scan = library_scan;
    Ok(shown)
}

/// The dry run without a daemon: said, and the plan shown as it stands (with GPUs, in
/// `--gpus`'s form, which Docker with the NVIDIA runtime takes).
fn unreached(plan: &Plan, context: &Context) -> Result<DryRun, Error> {
    context.printer.warn(
        "the engine could not be reached: ports in use, GPUs held and the doctor verdict were not judged",
    );
    Ok(match &plan.facts {
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
                library_scan: None,
            }
        }
        _ => DryRun {
            body: plan.body.clone(),
            gpu_request: None,
            placement: None,
            library_scan: None,
        },
    })
}

/// Refuses the dry run where the container under the plan's name is another user's, as
/// `up` would.
fn refuse_theirs(
    plan: &Plan,
    existing: &crate::facts::container::ContainerDetails,
) -> Result<(), Error> {
    if let crate::container_plan::ownership::Belonging::Theirs { owner } =
        crate::container_plan::ownership::belonging(&existing.labels, &plan.user)
    {
        return Err(Error::BelongsTo {
            name: plan.name.clone(),
            owner,
            action: crate::error::OtherUsersAction::Up {
                profile: plan.resolved.profile.name.clone(),
            },
        });
    }
    Ok(())
}

/// The plan with the GPUs `up` would pick now (nothing is locked or created), in this
/// engine's form of the request.
async fn placed(
    engine: &Engine,
    plan: &Plan,
    facts: &crate::ops::doctor::Facts,
    context: &Context,
) -> Result<DryRun, Error> {
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
    Ok(DryRun {
        body: gpu_body(plan, &placed, facts)?,
        gpu_request: Some((form, described)),
        placement: placed.report,
        library_scan: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_plan::gpus::Gpus;
    use crate::facts::engine::GpuRequestForm;
    use crate::ops::up::fixtures::{context, facts, nvml_with_gpus, plan, unreachable};

    fn without_daemon(plan: &Plan) -> Result<DryRun, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(dry_run(None, plan, false, &context()))
    }

    /// Without a daemon, a profile without GPUs shows the plan's body as it is.
    #[test]
    fn without_a_daemon_the_plans_body_is_shown() {
        let plan = plan("name = \"web\"\nimage = \"ubuntu:24.04\"\n", Gpus::None);
        let shown = without_daemon(&plan).unwrap();
        assert_eq!(shown.body, plan.body);
        assert!(shown.gpu_request.is_none());
        assert!(shown.placement.is_none());
    }

    /// Without a daemon, a profile with GPUs shows `--gpus`'s request for the GPUs asked
    /// (none placed), and says the engine was not reached.
    #[test]
    fn without_a_daemon_gpus_are_shown_in_the_gpus_form() {
        let mut plan = plan(
            "name = \"train\"\nimage = \"ubuntu:24.04\"\ngpus = 2\n",
            Gpus::Count(2),
        );
        plan.facts = Some(facts(unreachable(), nvml_with_gpus(2)));
        let shown = without_daemon(&plan).unwrap();
        assert_eq!(
            shown.body.host_config.device_requests,
            Gpus::Count(2).docker_requests()
        );
        // Written by `gpu_body`, as `up` writes it: the GPUs named in the holder's label.
        assert_eq!(
            shown
                .body
                .labels
                .get(crate::container_plan::GPUS_LABEL)
                .map(String::as_str),
            Some("count=2")
        );
        assert!(
            !plan
                .body
                .labels
                .contains_key(crate::container_plan::GPUS_LABEL)
        );
        let (form, engine) = shown.gpu_request.unwrap();
        assert_eq!(form, GpuRequestForm::Gpus);
        assert_eq!(engine, "not reached at unix:///var/run/docker.sock");
        assert!(shown.placement.is_none());
    }

    /// Issue 41: the dry run says the scan follows the pull only where `up` would do it: a
    /// GPU profile whose image is not here, on a host whose GPUs are known; not for an
    /// image the preflight read, a profile without GPUs, or a host without known GPUs.
    #[test]
    fn the_scan_after_the_pull_is_said_only_where_up_would_do_it() {
        use crate::facts::gpu::{Fact, LoadOutcome};
        let mut nvml = nvml_with_gpus(1);
        if let LoadOutcome::Loaded(facts) = &mut nvml {
            facts.gpus[0].compute_capability =
                Fact::Value(crate::compat::ComputeCapability::new(12, 0));
        }
        let known = facts(unreachable(), nvml);
        let gpu_plan = plan(
            "name = \"train\"\nimage = \"team/train:1\"\ngpus = \"all\"\n",
            Gpus::All,
        );
        let said = library_scan_after_pull(&gpu_plan, &known).unwrap();
        assert!(said.contains("image `team/train:1` is not here"), "{said}");
        assert!(said.contains("refuses it"), "{said}");
        let mut here = facts(unreachable(), known.gpu.nvml.clone());
        here.images = vec![Ok(Some(crate::facts::engine::ImageFacts {
            reference: "team/train:1".into(),
            ..Default::default()
        }))];
        assert_eq!(library_scan_after_pull(&gpu_plan, &here), None);
        let cpu_plan = plan("name = \"cpu\"\nimage = \"team/train:1\"\n", Gpus::None);
        assert_eq!(library_scan_after_pull(&cpu_plan, &known), None);
        let unknown = facts(unreachable(), nvml_with_gpus(1));
        assert_eq!(library_scan_after_pull(&gpu_plan, &unknown), None);
    }
}
