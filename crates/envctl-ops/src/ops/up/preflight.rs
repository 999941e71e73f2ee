//! What `up` judges before it starts anything: doctor's verdict on the plan's facts (or
//! on facts gathered beside the create), refused unless `--force`; and the image made
//! present per the pull policy, with a word when the local tag has moved from the
//! digest `envctl.lock` pins.

use super::{Plan, PullPolicy};
use crate::checks::Status;
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::ops::doctor::{gather_with, judge};
use crate::ops::matrix::load_matrix;
use crate::profile::ResolvedProfile;
use crate::ui::progress::PullProgress;

/// `--force` as the preflight reads it: without it a failed check refuses; with it each is
/// said and `up` goes on, to a start or, in a dry run, to the command it would run (which
/// starts nothing, so it says what a start would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Force {
    Refuse,
    Start,
    DryRun,
}

impl Force {
    pub(super) fn of(force: bool, dry_run: bool) -> Force {
        match (force, dry_run) {
            (false, _) => Force::Refuse,
            (true, false) => Force::Start,
            (true, true) => Force::DryRun,
        }
    }
}

/// The local tag still pointing where the lock says? If not, say so: the lock wins.
pub(super) async fn warn_if_tag_moved(
    engine: &Engine,
    image: &str,
    digest: &str,
    context: &Context,
) -> Result<(), Error> {
    if let Some(facts) = engine.image_facts(image).await?
        && !facts.repo_digests.is_empty()
        && !facts
            .repo_digests
            .iter()
            .any(|repo_digest| repo_digest.ends_with(digest))
    {
        context.printer.warn(&format!(
            "`{image}` now points to {} but envctl.lock pins {digest}: using the locked digest (`envctl lock` moves the pin)",
            facts.repo_digests.first().and_then(|repo_digest| repo_digest.split('@').nth(1)).unwrap_or("another digest")
        ));
    }
    Ok(())
}

/// The doctor verdict for `plan`: on the facts the plan gathered when it has them, else
/// gathered now (beside the create, for a profile without GPUs).
/// Gives the facts it gathered, `None` when it judged the plan's.
pub(super) async fn verdict(
    engine: &Engine,
    plan: &Plan,
    force: Force,
    context: &Context,
) -> Result<Option<crate::ops::doctor::Facts>, Error> {
    match &plan.facts {
        Some(facts) => {
            let matrix = load_matrix(None, context.environment.config_home().as_deref())?;
            judge_verdict(facts, &plan.resolved, &matrix, force, context)?;
            Ok(None)
        }
        None => preflight(engine, &plan.resolved, force, context)
            .await
            .map(Some),
    }
}

/// Refuses a profile whose doctor verdict is a failure, unless `--force`; gives back the
/// facts it judged.
async fn preflight(
    engine: &Engine,
    resolved: &ResolvedProfile,
    force: Force,
    context: &Context,
) -> Result<crate::ops::doctor::Facts, Error> {
    let profiles = [resolved.clone()];
    // Parsing the bundled matrix takes a few milliseconds: on its own thread, so the
    // requests of the gathering and of `prepare` go out meanwhile.
    let config_home = context.environment.config_home();
    let matrix = tokio::task::spawn_blocking(move || load_matrix(None, config_home.as_deref()));
    let facts = gather_with(Ok(engine.clone()), &profiles, None, context).await;
    let matrix = match matrix.await {
        Ok(matrix) => matrix?,
        // The parser panicked: a bug, surfaced as the panic it was.
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    };
    judge_verdict(&facts, resolved, &matrix, force, context)?;
    Ok(facts)
}

/// The doctor verdict on facts already gathered: a failure refuses, unless `force`.
fn judge_verdict(
    facts: &crate::ops::doctor::Facts,
    resolved: &ResolvedProfile,
    matrix: &crate::compat::Matrix,
    force: Force,
    context: &Context,
) -> Result<(), Error> {
    let profiles = [resolved.clone()];
    let report = judge(facts, &profiles, matrix);
    let Some(profile) = report.profiles.first() else {
        return Ok(());
    };
    // A daemon that cannot be used is said once, among the host's findings (doctor shows
    // it under Docker): `up` shows no Docker section, so that finding comes first here.
    let engine_failures = report.findings.iter().filter(|finding| {
        finding.status == Status::Fail
            && matches!(
                facts.engine.state,
                crate::facts::engine::EngineState::Unreachable { .. }
            )
            && finding.area == Some(crate::checks::Area::Docker)
    });
    let failures: Vec<_> = engine_failures
        .chain(profile.findings.iter())
        .chain(profile.gpus.iter().flat_map(|gpu| gpu.findings.iter()))
        .filter(|finding| finding.status == Status::Fail)
        .cloned()
        .collect();
    refuse_unless_forced(failures, resolved, force, context)
}

/// The preflight's decision on its failures: none passes; any refuses the profile, unless
/// `force`, which says each and starts anyway (or, in a dry run, says it would).
fn refuse_unless_forced(
    failures: Vec<crate::checks::Finding>,
    resolved: &ResolvedProfile,
    force: Force,
    context: &Context,
) -> Result<(), Error> {
    if failures.is_empty() {
        return Ok(());
    }
    let anyway = match force {
        Force::Refuse => None,
        Force::Start => Some("starting anyway"),
        Force::DryRun => Some("would start anyway"),
    };
    if let Some(anyway) = anyway {
        for failure in &failures {
            context
                .printer
                .warn(&format!("{} ({anyway}: --force)", failure.message));
        }
        return Ok(());
    }
    Err(Error::Preflight {
        profile: resolved.profile.name.clone(),
        findings: failures,
    })
}

/// Issue 41: an image the preflight could not read (it was not here) read once pulled,
/// before anything is created: its CUDA libraries (`ops::image_libraries`, cached per image
/// id as doctor caches them) judged on this host's GPUs with doctor's own
/// `gpu.library-arch` findings, and a failure refused unless `--force`, as the preflight
/// refuses it for an image that was here. `image` is the reference just pulled.
pub(super) async fn judge_pulled_image(
    engine: &Engine,
    plan: &super::Plan,
    facts: &crate::ops::doctor::Facts,
    image: &str,
    context: &Context,
) -> Result<(), Error> {
    if plan.gpus.is_none() || !crate::ops::doctor::scans_libraries(&facts.gpu) {
        return Ok(());
    }
    // Gone again already (another tool removed it): the create says so.
    let Some(pulled) = engine.image_facts(image).await? else {
        return Ok(());
    };
    // `--pull always` of an image that was here and has not changed: the preflight
    // judged these very bytes.
    let judged_here = matches!(
        (facts.images.first(), facts.image_libraries.first()),
        (Some(Ok(Some(local))), Some(Some(_))) if local.id.is_some() && local.id == pulled.id
    );
    if judged_here {
        return Ok(());
    }
    let found = crate::ops::image_libraries::of_image(
        engine,
        &pulled,
        context.environment.cache_home().as_deref(),
    )
    .await;
    judge_libraries(facts, plan, found, context)
}

/// [`judge_pulled_image`]'s verdict on a scan: doctor's `gpu.library-arch` findings for the
/// plan's profile, its failures decided as the preflight decides its own.
fn judge_libraries(
    facts: &crate::ops::doctor::Facts,
    plan: &super::Plan,
    found: Result<crate::ops::image_libraries::Found, String>,
    context: &Context,
) -> Result<(), Error> {
    let failures: Vec<_> =
        crate::ops::doctor::library_findings(facts, &plan.resolved, Some(&found))
            .into_iter()
            .filter(|finding| finding.status == Status::Fail)
            .collect();
    refuse_unless_forced(
        failures,
        &plan.resolved,
        Force::of(plan.force, false),
        context,
    )
}

/// [`ensure_image`], then, when it pulled, the pulled image judged
/// ([`judge_pulled_image`]) before anything is made of it.
pub(super) async fn ensure_judged_image(
    engine: &Engine,
    plan: &super::Plan,
    facts: &crate::ops::doctor::Facts,
    image: &crate::profile::image::ImageReference,
    policy: PullPolicy,
    context: &Context,
) -> Result<(), Error> {
    if pull_if_needed(engine, image, policy, context).await? {
        judge_pulled_image(engine, plan, facts, &image.to_string(), context).await?;
    }
    Ok(())
}

/// Pulls per the policy. A reference without tag or digest pulls `latest`, never every tag.
pub async fn ensure_image(
    engine: &Engine,
    image: &crate::profile::image::ImageReference,
    policy: PullPolicy,
    context: &Context,
) -> Result<(), Error> {
    pull_if_needed(engine, image, policy, context)
        .await
        .map(|_| ())
}

/// [`ensure_image`]: whether it pulled.
async fn pull_if_needed(
    engine: &Engine,
    image: &crate::profile::image::ImageReference,
    policy: PullPolicy,
    context: &Context,
) -> Result<bool, Error> {
    let reference = image.to_string();
    let present = match policy {
        PullPolicy::Always => false,
        PullPolicy::Missing | PullPolicy::Never => engine.image_facts(&reference).await?.is_some(),
    };
    if present {
        return Ok(false);
    }
    if policy == PullPolicy::Never {
        return Err(Error::ImageMissing { image: reference });
    }
    let pull_reference = if image.tag.is_none() && image.digest.is_none() {
        format!("{reference}:latest")
    } else {
        reference.clone()
    };
    let registry = image.canonical().registry;
    let stall = context
        .environment
        .pull_stall()
        .map_err(|message| Error::Usage {
            message,
            hint: Some("unset it for the default of 120 s".into()),
        })?
        .unwrap_or(crate::engine::pull::PULL_STALL_TIMEOUT);
    context.printer.info(&format!("pulling {pull_reference} …"));
    let mut progress =
        PullProgress::new(&context.printer, context.json || context.printer.is_quiet());
    let result = engine
        .pull_image(&pull_reference, &registry, stall, |event| {
            progress.event(event)
        })
        .await;
    progress.finish();
    result.map_err(Error::from).map(|()| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::engine::EngineKind;
    use crate::ops::up::fixtures::{
        context, daemon, facts, nvml_missing, reachable, resolved, unreachable,
    };

    const PLAIN: &str = "name = \"plain\"\nimage = \"ubuntu:24.04\"\n";
    const TWO_GPUS: &str = "name = \"train\"\nimage = \"ubuntu:24.04\"\ngpus = 2\n";

    fn matrix() -> crate::compat::Matrix {
        load_matrix(None, None).unwrap()
    }

    fn refused(result: Result<(), Error>) -> (String, Vec<crate::checks::Finding>) {
        match result {
            Err(Error::Preflight { profile, findings }) => (profile, findings),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// A daemon that cannot be used is the refusal's first finding, from the host's
    /// findings (`up` shows no Docker section); `--force` starts anyway.
    #[test]
    fn an_unusable_daemon_refuses_unless_forced() {
        let (context, matrix) = (context(), matrix());
        let profile = resolved(PLAIN);
        let down = facts(unreachable(), nvml_missing());
        let (name, findings) = refused(judge_verdict(
            &down,
            &profile,
            &matrix,
            Force::Refuse,
            &context,
        ));
        assert_eq!(name, "plain");
        assert_eq!(findings[0].area, Some(crate::checks::Area::Docker));
        assert!(
            findings
                .iter()
                .all(|finding| finding.status == Status::Fail)
        );
        assert!(judge_verdict(&down, &profile, &matrix, Force::Start, &context).is_ok());
    }

    /// A profile without GPUs on a working daemon passes; one asking for two GPUs where
    /// NVML sees none is refused for its own checks, not the host's.
    #[test]
    fn a_profile_is_refused_for_its_own_failures() {
        let (context, matrix) = (context(), matrix());
        let docker = || {
            facts(
                reachable(daemon(
                    EngineKind::DockerEngine,
                    "28.2.2",
                    &["nvidia", "runc"],
                )),
                nvml_missing(),
            )
        };
        judge_verdict(
            &docker(),
            &resolved(PLAIN),
            &matrix,
            Force::Refuse,
            &context,
        )
        .unwrap();
        let (name, findings) = refused(judge_verdict(
            &docker(),
            &resolved(TWO_GPUS),
            &matrix,
            Force::Refuse,
            &context,
        ));
        assert_eq!(name, "train");
        assert!(!findings.is_empty());
        assert!(findings.iter().all(|finding| finding.status == Status::Fail
            && finding.area != Some(crate::checks::Area::Docker)));
    }

    /// A scan of a pulled image: one library with sm_80 and sm_90 machine code, no PTX.
    fn flash_attn_scan() -> Result<crate::ops::image_libraries::Found, String> {
        use crate::compat::fatbin::{IMAGE_LIBRARIES_SCHEMA, ImageLibraries, ScannedLibrary};
        let code = serde_json::from_value(serde_json::json!({
            "sass": ["sm_80", "sm_90"], "ptx": [], "has_gpu_code": true, "incomplete": null
        }))
        .unwrap();
        Ok(crate::ops::image_libraries::Found {
            libraries: ImageLibraries {
                schema_version: IMAGE_LIBRARIES_SCHEMA,
                image_id: Some(format!("sha256:{}", "ab".repeat(32))),
                libraries: vec![ScannedLibrary {
                    path: "usr/lib/python3/site-packages/flash_attn_2_cuda.so".into(),
                    package: Some("flash_attn 2.7.4".into()),
                    code,
                }],
                unreadable: Vec::new(),
                unread_layers: Vec::new(),
                shared_objects: 1,
            },
            cached: false,
            cache_problem: None,
        })
    }

    /// Docker with the NVIDIA runtime and NVML naming one GPU of compute capability `cc`.
    fn one_gpu(cc: (u32, u32)) -> crate::ops::doctor::Facts {
        let mut nvml = crate::ops::up::fixtures::nvml_with_gpus(1);
        if let crate::facts::gpu::LoadOutcome::Loaded(facts) = &mut nvml {
            facts.gpus[0].compute_capability =
                crate::facts::gpu::Fact::Value(crate::compat::ComputeCapability::new(cc.0, cc.1));
        }
        facts(
            reachable(daemon(EngineKind::DockerEngine, "28.2.2", &["nvidia"])),
            nvml,
        )
    }

    /// Issue 41: a pulled image whose library lacks the GPU's architecture is refused with
    /// doctor's `gpu.library-arch` failure, as the preflight refuses a local one; `--force`
    /// starts it; a GPU the library covers, or a profile without GPUs, passes.
    #[test]
    fn a_pulled_images_library_without_the_gpus_code_refuses_unless_forced() {
        use crate::container_plan::gpus::Gpus;
        let context = context();
        let gpu_profile = "name = \"train\"\nimage = \"team/train:1\"\ngpus = \"all\"\n";
        let mut plan = crate::ops::up::fixtures::plan(gpu_profile, Gpus::All);
        let blackwell = one_gpu((12, 0));
        let (name, findings) = refused(judge_libraries(
            &blackwell,
            &plan,
            flash_attn_scan(),
            &context,
        ));
        assert_eq!(name, "train");
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].id, crate::compat::fatbin::GPU_LIBRARY_ARCH);
        for said in [
            "flash_attn_2_cuda.so",
            "flash_attn 2.7.4",
            "no kernel image",
        ] {
            assert!(
                findings[0].message.contains(said),
                "{}",
                findings[0].message
            );
        }
        plan.force = true;
        judge_libraries(&blackwell, &plan, flash_attn_scan(), &context).unwrap();
        plan.force = false;
        judge_libraries(&one_gpu((9, 0)), &plan, flash_attn_scan(), &context).unwrap();
        // A scan that failed is doctor's warning, never a refusal.
        judge_libraries(
            &blackwell,
            &plan,
            Err("the daemon refused".into()),
            &context,
        )
        .unwrap();
        let cpu = crate::ops::up::fixtures::plan(
            "name = \"cpu\"\nimage = \"team/train:1\"\n",
            Gpus::None,
        );
        judge_libraries(&blackwell, &cpu, flash_attn_scan(), &context).unwrap();
    }
}
