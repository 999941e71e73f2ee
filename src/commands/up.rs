//! `envctl up PROFILE`: resolves the environment (`ops::environment`), hands it to
//! `ops::up` (preflight, pull, create, start; cleanup on Ctrl-C or SIGTERM), and renders
//! what happened, or the create body with `--dry-run`.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::environment::{
    self, EnvironmentRequest, LockPolicy, Placement, ResolvedEnvironment,
};
use crate::spec::{self, CreateBody, Overrides};

use crate::ops::up::{Outcome, Plan, PullPolicy, RunState, UpOptions, UpReport, clean_up, up};

pub struct UpArguments {
    pub profile: String,
    pub name: Option<String>,
    pub pull: PullPolicy,
    pub dry_run: bool,
    pub force: bool,
    pub recreate: bool,
    pub locked: bool,
    /// Run nvidia-check once the container runs.
    pub check: bool,
    pub env: Vec<String>,
    pub ports: Vec<String>,
    pub mounts: Vec<String>,
    /// `--gpus SPEC`: replaces the profile's `gpus`.
    pub gpus: Option<String>,
}

pub fn run(arguments: UpArguments, context: &Context) -> Result<ExitStatus, Error> {
    let resolved = context.search_path.resolve(&arguments.profile)?;
    let mut overrides = Overrides::parse(
        &arguments.env,
        &arguments.ports,
        &arguments.mounts,
        &|key| context.environment.variable(key),
    )?;
    if let Some(spec) = &arguments.gpus {
        overrides.gpus = Some(Overrides::parse_gpus(spec)?);
    }
    // `gpus = "optional"` shapes the container by what this host has: ask NVML now, and
    // hand the answer to the preflight.
    let gpu_facts =
        environment::host_gpus(&resolved, context.environment.nvml_library().as_deref());
    let working_directory = context.working_directory()?;
    let profile_file = spec::profile_file_label(&resolved, &working_directory);
    let lock = environment::read_lock();
    let exists = |path: &std::path::Path| path.exists();
    let ResolvedEnvironment {
        resolved,
        body,
        body_without_gpus,
        locked_digest,
        ..
    } = environment::resolve(
        resolved,
        EnvironmentRequest {
            overrides,
            placement: Placement::this_host(gpu_facts.as_ref()),
            lock_policy: if arguments.locked {
                LockPolicy::Require
            } else {
                LockPolicy::Use
            },
            lock,
            working_directory,
            home: context.environment.home(),
            path_exists: &exists,
        },
    )?;
    // policy: the host policy judges the resolved body before anything is made, for the
    // dry run as for the real run; `--force` does not pass it. What the user holds is
    // counted later, under the placement lock (`ops::placement::place`).
    let user = crate::ops::policy::user(context);
    let policy = crate::ops::policy::in_force(context)?;
    let early = match &policy {
        Some(policy) => crate::ops::policy::PolicyGate {
            policy,
            user: &user,
            // Not chosen yet without `--name`; this early check counts no holders anyway.
            container: arguments.name.as_deref(),
        }
        .enforce(&body, gpu_facts.as_ref(), None, context),
        None => Ok(()),
    };
    // policy: end
    let runtime = runtime()?;
    if arguments.dry_run {
        // Connected as doctor connects: without a daemon the plan is still shown, and what
        // only the daemon can tell is said to be unjudged.
        let connected = context.connect(super::REQUEST_TIMEOUT);
        let reachable = match &connected {
            Ok(engine) => runtime.block_on(async {
                matches!(
                    tokio::time::timeout(crate::engine::PING_TIMEOUT, engine.ping()).await,
                    Ok(Ok(_))
                )
            }),
            Err(_) => false,
        };
        // One connection for the whole dry run (a clone shares bollard's client).
        let engine = connected.as_ref().ok().filter(|_| reachable).cloned();
        let name = match (&arguments.name, &engine) {
            (Some(name), _) => name.clone(),
            (None, Some(engine)) => runtime.block_on(crate::ops::up::default_name(
                engine,
                &resolved.profile.name,
                context,
            ))?,
            (None, None) => spec::container_name(&resolved.profile.name),
        };
        let plan = Plan {
            resolved,
            body,
            body_without_gpus,
            locked_digest,
            name,
            gpu_facts,
            user,
            policy,
        };
        let mut form = dry_run_gpu_form(
            &plan.resolved,
            &plan.body,
            plan.gpu_facts.clone(),
            connected,
            context,
        )?;
        let placed_body = form
            .as_ref()
            .and_then(|form| form.placed.as_ref())
            .map(|(placed, _)| placed.clone());
        let body = match &form {
            None => plan.body.clone(),
            Some(form) => match spec::gpu_request::for_engine(
                placed_body.as_ref().unwrap_or(&plan.body),
                &form.form,
            ) {
                Ok(body) => body,
                // `optional`: what `up` would run here.
                Err(_) if plan.body_without_gpus.is_some() => plan
                    .body_without_gpus
                    .clone()
                    .unwrap_or_else(|| plan.body.clone()),
                Err(unavailable) => {
                    return Err(Error::GpusUnavailable {
                        profile: plan.resolved.profile.name.clone(),
                        reason: unavailable.reason,
                        fix: form.fix.to_string(),
                    });
                }
            },
        };
        // The dry run refuses what `up` would, before showing what it would make.
        early?;
        match &engine {
            Some(engine) => runtime.block_on(crate::ops::up::judge_dry_run(
                engine,
                &plan,
                &body,
                form.as_mut().and_then(|form| form.facts.take()),
                arguments.force,
                context,
            ))?,
            None => context.printer.warn(
                "the engine could not be reached: ports in use, GPUs held and the doctor verdict were not judged",
            ),
        }
        return dry_run(&body, &plan.name, form.as_ref(), context);
    }
    early?;
    // Where the profile lies, for `exec NAME` (spec::PROFILE_FILE_LABEL): on the container
    // only, not in the dry run's body.
    let (mut body, mut body_without_gpus) = (body, body_without_gpus);
    for body in std::iter::once(&mut body).chain(body_without_gpus.as_mut()) {
        if let Some(file) = &profile_file {
            body.labels
                .insert(spec::PROFILE_FILE_LABEL.to_string(), file.clone());
        }
        // Whose it is (`spec::ownership`): the uid decides, the name is for messages and
        // the policy's per-user limits.
        body.labels
            .insert(spec::USER_LABEL.to_string(), user.name.clone());
        if let Some(uid) = user.uid {
            body.labels
                .insert(spec::UID_LABEL.to_string(), uid.to_string());
        }
    }
    let engine = runtime.block_on(context.engine())?;
    let name = match &arguments.name {
        Some(name) => name.clone(),
        None => {
            let name = runtime.block_on(crate::ops::up::default_name(
                &engine,
                &resolved.profile.name,
                context,
            ))?;
            // The profile's container under another name (`--name`) is not what this `up`
            // meets: say so, and how to reach it, before making a second one.
            // Advisory: a list the daemon refuses here is said with its cause, and `up`
            // goes on (its own requests name a failing daemon).
            let elsewhere = match runtime.block_on(crate::ops::up::same_profile_elsewhere(
                &engine,
                &resolved.profile.name,
                &name,
                context,
            )) {
                Ok(elsewhere) => elsewhere,
                Err(error) => {
                    context.printer.warn(&format!(
                        "could not look for other containers of profile `{}`: {}",
                        resolved.profile.name,
                        crate::error::error_chain(&error)
                    ));
                    Vec::new()
                }
            };
            for other in elsewhere {
                context.printer.warn(&format!(
                    "profile `{}` also has your container `{other}` (made with `--name {other}`); this makes or meets `{name}`: `envctl up {} --name {other}` meets that one",
                    resolved.profile.name, resolved.profile.name
                ));
            }
            name
        }
    };
    let mut plan = Plan {
        resolved,
        body,
        body_without_gpus,
        locked_digest,
        name,
        gpu_facts,
        user,
        policy,
    };
    let options = UpOptions {
        pull: arguments.pull,
        force: arguments.force,
        recreate: arguments.recreate,
    };
    let state = Rc::new(RefCell::new(RunState::default()));
    runtime.block_on(async {
        let interrupted = super::termination_signal();
        let run = async {
            let first = up(&engine, &plan, &options, context, &state).await;
            // Another user's `up` of the same profile took `envctl-<profile>` between the
            // look for a free name and the create: this user's is `envctl-<profile>-<user>`.
            let personal = crate::ops::target::personal_container_name(
                &plan.resolved.profile.name,
                &context.user.name,
            );
            match first {
                Err(Error::BelongsTo {
                    action: crate::error::OtherUsersAction::Up { .. },
                    ..
                }) if arguments.name.is_none() && plan.name != personal => {
                    plan.name = personal;
                    up(&engine, &plan, &options, context, &state).await
                }
                other => other,
            }
        };
        let result = tokio::select! {
            result = run => result,
            code = interrupted => {
                clean_up(&engine, &state, context).await;
                let said = state.borrow().interrupted_summary();
                context.printer.warn(said.as_deref().unwrap_or("interrupted"));
                return Ok(ExitStatus::External(code));
            }
        };
        match result {
            Ok(report) => {
                // With `--check --json` the check's document is the one document: it names
                // the container and profile too.
                if !(arguments.check && context.json) {
                    print_report(&report, &plan.resolved.profile.name, context)?;
                }
                if !arguments.check {
                    return Ok(ExitStatus::Success);
                }
                let container = engine.inspect_container(&report.id).await?.ok_or_else(|| Error::TargetNotFound {
                    target: report.container.clone(),
                    hint: format!("the container disappeared right after it started; `envctl logs {}` may say why", report.container),
                })?;
                let options = super::nvidia_check::NvidiaCheckOptions { quick: false, timeout_seconds: 120 };
                super::nvidia_check::run(&engine, &container, &options, context).await
            }
            Err(error) => {
                clean_up(&engine, &state, context).await;
                Err(error)
            }
        }
    })
}

/// The engine's GPU request form, for a dry run that asks for GPUs.
struct DryRunGpus {
    form: crate::facts::engine::GpuRequestForm,
    /// Which engine decided it: `Podman 5.4.2`, or why none could be asked.
    engine: String,
    fix: &'static str,
    /// The body with the GPUs placement would pick now, and why; `None` when the engine
    /// could not be asked which GPUs are held.
    placed: Option<(CreateBody, Option<crate::ops::placement::PlacementReport>)>,
    /// What was gathered to decide it: the doctor verdict of the dry run judges these,
    /// not a second gathering.
    facts: Option<crate::ops::doctor::Facts>,
}

/// A dry run of a profile with GPUs shows the request in the form this engine takes
/// (`--gpus` or CDI names), so it asks the engine the preflight would ask. Without GPUs
/// the dry run needs no daemon.
fn dry_run_gpu_form(
    resolved: &crate::profile::ResolvedProfile,
    body: &CreateBody,
    gpu_facts: Option<crate::facts::gpu::GpuFacts>,
    engine: Result<crate::engine::Engine, crate::engine::EngineError>,
    context: &Context,
) -> Result<Option<DryRunGpus>, Error> {
    if body.host_config.device_requests.is_empty() {
        return Ok(None);
    }
    // The dry run's connection, judged as doctor judges it: a daemon that does not answer
    // is a fact here.
    // The same connection for placement (a clone shares bollard's client).
    let again = engine.as_ref().ok().cloned();
    let (facts, placed) = runtime()?.block_on(async {
        let facts = crate::ops::doctor::gather_with(
            engine,
            std::slice::from_ref(resolved),
            gpu_facts,
            context,
        )
        .await;
        // Which GPUs `up` would pick now; nothing is locked or created.
        let placed = match (&facts.engine.state, again) {
            (crate::facts::engine::EngineState::Reachable(_), Some(engine)) => Some(
                crate::ops::placement::place(
                    &engine,
                    body,
                    resolved.profile.placement,
                    &facts.gpu,
                    None,
                    None,
                    context,
                )
                .await,
            ),
            _ => None,
        };
        (facts, placed)
    });
    let placed = placed.transpose()?;
    let (form, fix) = crate::ops::up::request_form(&facts);
    let engine = match &facts.engine.state {
        crate::facts::engine::EngineState::Reachable(daemon) => daemon.described(),
        crate::facts::engine::EngineState::Unreachable { message, .. } => {
            context.printer.warn(&format!(
                "the engine could not be asked how it takes GPUs ({message}): showing `--gpus`'s request, which Docker with the NVIDIA runtime takes"
            ));
            format!("not reached at {}", facts.engine.endpoint)
        }
    };
    Ok(Some(DryRunGpus {
        form,
        engine,
        fix,
        placed: placed.map(|placed| (placed.body, placed.report)),
        facts: Some(facts),
    }))
}

fn dry_run(
    body: &CreateBody,
    name: &str,
    gpus: Option<&DryRunGpus>,
    context: &Context,
) -> Result<ExitStatus, Error> {
    // Secret values (by name, or taken from the shell by `-e KEY`) are never shown.
    let secrets = body.secret_env_keys();
    let report = gpus
        .and_then(|gpus| gpus.placed.as_ref())
        .and_then(|(_, report)| report.as_ref());
    if context.json {
        #[derive(Serialize)]
        struct GpuRequest<'a> {
            #[serde(flatten)]
            form: &'a crate::facts::engine::GpuRequestForm,
            engine: &'a str,
        }
        #[derive(Serialize)]
        struct DryRun<'a> {
            name: &'a str,
            /// What `POST /containers/create?name=NAME` would receive, except that each
            /// value of `masked_env` reads `<masked>`; the real request also carries this
            /// run's `envctl.run` label (`ops::up::RUN_LABEL`).
            body: &'a CreateBody,
            masked_env: &'a [String],
            /// With GPUs: the form of the request for this engine, and the engine.
            #[serde(skip_serializing_if = "Option::is_none")]
            gpu_request: Option<GpuRequest<'a>>,
            /// With GPUs: which ones `up` would take now, and why.
            #[serde(skip_serializing_if = "Option::is_none")]
            placement: Option<&'a crate::ops::placement::PlacementReport>,
        }
        context.printer.json(&DryRun {
            name,
            body: &body.masked(),
            masked_env: &secrets,
            gpu_request: gpus.map(|gpus| GpuRequest {
                form: &gpus.form,
                engine: &gpus.engine,
            }),
            placement: report,
        })?;
    } else {
        if let Some(report) = report {
            context
                .printer
                .info(&format!("placement: {}", report.reason));
            for skipped in &report.skipped {
                context.printer.warn(&format!("placement: {skipped}"));
            }
        }
        context.printer.data(&spec::docker_run_line(body, name))?;
        if !secrets.is_empty() {
            context
                .printer
                .warn(&crate::secret::docker_run_notice(&secrets));
        }
    }
    Ok(ExitStatus::Success)
}

fn print_report(report: &UpReport, profile: &str, context: &Context) -> Result<(), Error> {
    if context.json {
        return context.printer.json(report);
    }
    let short_id: String = report.id.chars().take(12).collect();
    let said = match report.status {
        Outcome::Created => "started",
        Outcome::Recreated => "recreated and started",
        Outcome::Started => "started the existing",
        Outcome::AlreadyRunning => "already running:",
    };
    context
        .printer
        .info(&format!("{said} {} ({short_id})", report.container));
    // The profile finds the user's container by its default names; a container made with
    // `--name` is named, so the hint reaches it and not another of the same profile.
    let target = if report.container == spec::container_name(profile)
        || report.container
            == crate::ops::target::personal_container_name(profile, &context.user.name)
    {
        profile
    } else {
        report.container.as_str()
    };
    context
        .printer
        .info(&format!("  enter it:   envctl shell {target}"));
    if report.gpus {
        context
            .printer
            .info(&format!("  check CUDA: envctl exec {target} nvidia-check"));
    }
    context.printer.data(&report.container)
}
