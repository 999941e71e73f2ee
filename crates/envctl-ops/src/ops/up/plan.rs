//! The plan of one `up` ([`Plan`]): the profile resolved, doctor's facts gathered first
//! when it asks for GPUs (they decide `gpus = "optional"`), the body built once, the
//! policy's early judgement and the container's name ([`default_name`]). `up` applies it
//! and `up --dry-run` renders it.

use crate::container_plan::gpus::Gpus;
use crate::container_plan::{self, CreateBody, Overrides, PROFILE_LABEL};
use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::ops::doctor::gather_with;
use crate::profile::ResolvedProfile;

/// What this run is to make: the one value `up` applies and `up --dry-run` renders
/// ([`plan`]). Decided before anything is made; placement and the engine's form of the
/// GPU request are the only parts left, and both read [`Plan::gpus`].
pub struct Plan {
    pub resolved: ResolvedProfile,
    /// The create body, its GPU request in `--gpus`'s form for [`Plan::gpus`].
    pub body: CreateBody,
    /// The GPUs asked for, decided once (`gpus = "optional"` by this host and daemon).
    pub gpus: Gpus,
    /// The digest `envctl.lock` pins the image to, when it does.
    pub locked_digest: Option<String>,
    pub name: String,
    /// Doctor's facts, gathered before the body when the profile asks for GPUs (they
    /// decide `optional` and the request's form); the preflight judges these rather
    /// than gathering again. `None`: gathered by the preflight, beside the create.
    pub facts: Option<crate::ops::doctor::Facts>,
    /// Who runs `up`: the container is theirs (`container_plan::ownership`).
    pub user: crate::facts::user::User,
    /// The policies in force (the daemon's pushed one, this machine's file), judged again
    /// under the placement lock when a per-user GPU rule applies.
    pub policies: Vec<crate::policy::Policy>,
    /// `--force`: start despite a failing doctor verdict, on the preflight's facts or on
    /// an image's CUDA libraries read once it is pulled (`preflight::judge_pulled_image`).
    pub force: bool,
}

impl Plan {
    /// The policy's gate for this plan's container.
    pub fn gate(&self) -> Option<crate::ops::policy::PolicyGate<'_>> {
        (!self.policies.is_empty()).then(|| crate::ops::policy::PolicyGate {
            policies: &self.policies,
            user: &self.user,
            container: Some(&self.name),
        })
    }

    /// [`Plan::gate`], only when it must count the GPUs the user holds.
    pub(super) fn counting_gate(&self) -> Option<crate::ops::policy::PolicyGate<'_>> {
        self.gate().filter(|gate| gate.counts_holders(&self.body))
    }

    /// NVML's facts, when they were gathered for the plan.
    pub(super) fn gpu_facts(&self) -> Option<&crate::facts::gpu::GpuFacts> {
        self.facts.as_ref().map(|facts| &facts.gpu)
    }
}

/// What `envctl up` (and its dry run) is asked.
pub struct UpRequest {
    pub profile: String,
    pub overrides: Overrides,
    /// `--locked`: anything but a current pin is an error.
    pub locked: bool,
    /// `--name`.
    pub name: Option<String>,
    /// A dry run shows the body without the labels only a made container carries (where
    /// its profile lies, whose it is).
    pub dry_run: bool,
    /// `--trust`, and the command to run with it (`ops::trust`).
    pub trust: crate::ops::trust::Consent,
    /// `--force`: start despite a failing doctor verdict ([`Plan::force`]).
    pub force: bool,
}

/// Plans `request`: the profile resolved, the GPUs decided with doctor's facts (only
/// when it asks for GPUs), the body built once, the policy's early judgement and the
/// container's name. `engine`: the connection, or why there is none (a dry run plans
/// without a daemon and says what it could not judge).
pub async fn plan(
    engine: Result<Engine, EngineError>,
    request: UpRequest,
    context: &Context,
) -> Result<Plan, Error> {
    let UpRequest {
        profile,
        overrides,
        locked,
        name,
        dry_run,
        trust,
        force,
    } = request;
    let resolved = resolve_profile(&profile, &overrides, &trust, context)?;
    // The gathering takes the connection (or why there is none); naming keeps a clone.
    let (engine, connection) = match engine {
        Ok(engine) => (Some(engine.clone()), Ok(engine)),
        Err(error) => (None, Err(error)),
    };
    let asked = resolved.profile.gpus.clone();
    let (facts, gpus_reachable) = doctor_facts_for_gpus(connection, &resolved, context).await;
    let working_directory = context.working_directory()?;
    let profile_file = container_plan::profile_file_label(&resolved, &working_directory);
    let environment = resolve_environment(
        resolved,
        &overrides,
        locked,
        gpus_reachable,
        &working_directory,
        engine.as_ref(),
        context,
    )
    .await?;
    let crate::ops::environment::ResolvedEnvironment {
        resolved,
        body,
        gpus,
        locked_digest,
        ..
    } = environment;
    // slurm (issue 29): inside a job, the job's labels, memory, CPUs and GPUs (`ops::slurm`).
    let (mut body, gpus) = crate::ops::slurm::shape(
        body,
        gpus,
        asked == crate::profile::model::GpuRequest::Optional,
        facts.as_ref().map(|facts| &facts.gpu),
        &resolved.profile.name,
        context,
    )?;
    // The host policy judges the body before anything is made, for the dry run as for
    // the real run; `--force` does not pass it. What the user holds is counted later,
    // under the placement lock (`ops::placement::place`).
    let (user, policies) = judge_policy_early(
        &body,
        facts.as_ref(),
        name.as_deref(),
        engine.as_ref(),
        context,
    )
    .await?;
    if !dry_run {
        label_made_container(&mut body, profile_file, &user);
    }
    let name = container_name(name, engine.as_ref(), &resolved.profile.name, context).await?;
    Ok(Plan {
        resolved,
        body,
        gpus,
        locked_digest,
        name,
        facts,
        user,
        policies,
        force,
    })
}

/// The profile `profile` names, passed by `--trust` where it needs it (`ops::trust`), with
/// `--gpus` in place of its own: that is what is judged (issue 40): doctor's checks,
/// placement and the policy see the GPUs the container will get, not the file's
/// (`--gpus none` on a GPU-less host passes; `--gpus device=9` on eight GPUs is refused
/// as `gpus = ["9"]` is).
fn resolve_profile(
    profile: &str,
    overrides: &Overrides,
    trust: &crate::ops::trust::Consent,
    context: &Context,
) -> Result<ResolvedProfile, Error> {
    let mut resolved = context.search_path.resolve(profile)?;
    // A repository's root-equivalent settings need `--trust` (`ops::trust`).
    crate::ops::trust::gate(&resolved, trust, context)?;
    if let Some(gpus) = &overrides.gpus {
        resolved.profile.gpus = gpus.clone();
    }
    Ok(resolved)
}

/// Doctor's facts for a profile that asks for GPUs (or may: `optional`), needed before
/// its body: they say whether `optional` gets GPUs here (the second value) and how this
/// engine takes them. None for a profile that asks for none.
async fn doctor_facts_for_gpus(
    connection: Result<Engine, EngineError>,
    resolved: &ResolvedProfile,
    context: &Context,
) -> (Option<crate::ops::doctor::Facts>, bool) {
    let asked = &resolved.profile.gpus;
    let facts = if *asked == crate::profile::model::GpuRequest::None {
        None
    } else {
        Some(gather_with(connection, std::slice::from_ref(resolved), None, context).await)
    };
    let gpus_reachable = match (asked, &facts) {
        (crate::profile::model::GpuRequest::Optional, Some(facts)) => {
            optional_gets_gpus(facts, context)
        }
        _ => true,
    };
    (facts, gpus_reachable)
}

/// The profile's environment and body for this host (`ops::environment`). A bind source
/// missing here may be the daemon's machine's own path: a daemon on another machine
/// mounts from its disk, which only its create judges; such sources are said and
/// resolved as they are.
async fn resolve_environment(
    resolved: ResolvedProfile,
    overrides: &Overrides,
    locked: bool,
    gpus_reachable: bool,
    working_directory: &std::path::Path,
    engine: Option<&Engine>,
    context: &Context,
) -> Result<crate::ops::environment::ResolvedEnvironment, Error> {
    let exists = |path: &std::path::Path| path.exists();
    let anything = |_: &std::path::Path| true;
    let resolve = |resolved, path_exists: &dyn Fn(&std::path::Path) -> bool| {
        crate::ops::environment::resolve(
            resolved,
            crate::ops::environment::EnvironmentRequest {
                overrides: overrides.clone(),
                placement: crate::ops::environment::Placement::ThisHost { gpus_reachable },
                lock_policy: if locked {
                    crate::ops::environment::LockPolicy::Require
                } else {
                    crate::ops::environment::LockPolicy::Use
                },
                lock: crate::ops::environment::read_lock(),
                working_directory: working_directory.to_path_buf(),
                home: context.environment.home(),
                path_exists,
            },
        )
    };
    match resolve(resolved.clone(), &exists) {
        Err(Error::Spec(crate::container_plan::SpecError::MissingBindSources { missing })) => {
            // Asked once per connection (`Engine::daemon_host`), whatever gathered it.
            let host = match engine {
                Some(engine) => engine
                    .daemon_host()
                    .await
                    .ok()
                    .and_then(|host| host.elsewhere().map(str::to_string)),
                None => None,
            };
            let Some(host) = host else {
                return Err(Error::Spec(
                    crate::container_plan::SpecError::MissingBindSources { missing },
                ));
            };
            for source in &missing {
                context.printer.info(&format!(
                    "bind source {} is not on this machine: it is {host}'s path, which the daemon there mounts",
                    source.path.display()
                ));
            }
            resolve(resolved, &anything)
        }
        other => other,
    }
}

/// Who runs `up`, and the policies in force, which judge `body` now (counting no holders:
/// that is done under the placement lock). A transport that proves no one is said,
/// whatever the policy makes of it.
async fn judge_policy_early(
    body: &CreateBody,
    facts: Option<&crate::ops::doctor::Facts>,
    name: Option<&str>,
    engine: Option<&Engine>,
    context: &Context,
) -> Result<(crate::facts::user::User, Vec<crate::policy::Policy>), Error> {
    let user = crate::ops::policy::user(context);
    if let Some(identity @ crate::facts::user::Identity::Unproven { why, .. }) = &user.identity {
        context.printer.warn(&format!(
            "{why}: the container is recorded as `{}`'s, a claim anyone reaching this daemon can make (docs/identity.md); ssh or a TLS client certificate proves who you are",
            identity.label()
        ));
    }
    let policies = crate::ops::policy::all_in_force(context, engine).await?;
    if !policies.is_empty() {
        crate::ops::policy::PolicyGate {
            policies: &policies,
            user: &user,
            // Not chosen yet without `--name`; this early check counts no holders.
            container: name,
        }
        .enforce(body, facts.map(|facts| &facts.gpu), None, context)?;
    }
    Ok((user, policies))
}

/// The labels only a made container carries, never the dry run's body: where the profile
/// lies, for `exec NAME` (`container_plan::PROFILE_FILE_LABEL`), and whose it is
/// (`container_plan::ownership`: the uid decides, the name is for messages and the policy's per-user
/// limits; the identity the daemon's transport proves is what ownership compares).
fn label_made_container(
    body: &mut CreateBody,
    profile_file: Option<String>,
    user: &crate::facts::user::User,
) {
    if let Some(file) = profile_file {
        body.labels
            .insert(container_plan::PROFILE_FILE_LABEL.to_string(), file);
    }
    body.labels
        .insert(container_plan::USER_LABEL.to_string(), user.name.clone());
    if let Some(uid) = user.uid {
        body.labels
            .insert(container_plan::UID_LABEL.to_string(), uid.to_string());
    }
    if let Some(identity) = &user.identity {
        body.labels.insert(
            crate::container_plan::ownership::IDENTITY_LABEL.to_string(),
            identity.label(),
        );
    }
}

/// The container's name: `--name`'s, else [`default_name`] (the plain one without a
/// daemon to ask), and inside a slurm job (issue 29) the job's own container
/// (`ops::slurm::per_job_name`).
async fn container_name(
    name: Option<String>,
    engine: Option<&Engine>,
    profile: &str,
    context: &Context,
) -> Result<String, Error> {
    Ok(match (name, engine) {
        (Some(name), _) => name,
        (None, Some(engine)) => {
            let name = default_name(engine, profile, context).await?;
            crate::ops::slurm::per_job_name(name, context)
        }
        (None, None) => {
            crate::ops::slurm::per_job_name(container_plan::container_name(profile), context)
        }
    })
}

/// Whether `gpus = "optional"` gets GPUs here: NVML sees some and the daemon can hand
/// them to containers. When not, the README promises a warning saying why.
fn optional_gets_gpus(facts: &crate::ops::doctor::Facts, context: &Context) -> bool {
    // Another machine's daemon: its GPUs are not seen from here, only what it reports.
    if let crate::facts::gpu::LoadOutcome::OnAnotherHost { host, .. } = &facts.gpu.nvml {
        let reachable = crate::container_plan::gpu_path::gpus_reachable(&facts.engine, &facts.host);
        if !reachable {
            context.printer.warn(&format!(
                "`gpus = \"optional\"`: the daemon on {host} reports no NVIDIA runtime or device, so the container runs without GPUs (ask for them with `--gpus all` if {host} has its toolkit set up)"
            ));
        }
        return reachable;
    }
    let nvml_sees_gpus = facts.gpu.listed_gpus().is_ok_and(|gpus| !gpus.is_empty());
    if !nvml_sees_gpus {
        context.printer.warn(
            "`gpus = \"optional\"`: NVML sees no GPU on this host, so the container runs without GPUs",
        );
        return false;
    }
    if !crate::container_plan::gpu_path::gpus_reachable(&facts.engine, &facts.host) {
        context.printer.warn(
            "this host has GPUs but the daemon cannot hand them to containers: `gpus = \"optional\"` starts without them (`envctl doctor` says why)",
        );
        return false;
    }
    true
}

/// The user's own containers of `profile` under names other than `name`: made with
/// `--name`, they are not what a plain `up` meets, and `up` says so before making another.
pub async fn same_profile_elsewhere(
    engine: &Engine,
    profile: &str,
    name: &str,
    context: &Context,
) -> Result<Vec<String>, Error> {
    Ok(engine
        .list_containers(true, true)
        .await?
        .into_iter()
        .filter(|container| {
            container.name != name
                && container.labels.get(PROFILE_LABEL).map(String::as_str) == Some(profile)
                && crate::ops::target::is_mine(&container.labels, context)
        })
        .map(|container| container.name)
        .collect())
}

/// The name `up` gives a new container of `profile` for `user`: their own container of
/// that profile's name when they have one (`envctl-<profile>`, else
/// `envctl-<profile>-<user>`); else `envctl-<profile>`, unless another user's container
/// has it, then `envctl-<profile>-<user>`. Two users of one host can so run the same
/// bundled profile side by side, and a single user's names stay as they were.
pub async fn default_name(
    engine: &Engine,
    profile: &str,
    context: &Context,
) -> Result<String, Error> {
    use crate::container_plan::ownership::{Belonging, belonging};
    let plain = container_plan::container_name(profile);
    let whose = |container: Option<crate::facts::container::ContainerDetails>| {
        container.map(|container| belonging(&container.labels, context.me()))
    };
    match whose(engine.inspect_container(&plain).await?) {
        // The user's own, or not envctl's (then `up` names the clash).
        Some(Belonging::Mine | Belonging::Unowned | Belonging::NotEnvctls) => Ok(plain),
        Some(Belonging::Theirs { .. }) => Ok(crate::ops::target::personal_container_name(
            profile,
            &context.me().name_for_containers(),
        )),
        // Free: unless the user's own runs under the personal name (made while another
        // user had the plain one), which `up` meets instead of making a second.
        None => {
            let personal = crate::ops::target::personal_container_name(
                profile,
                &context.me().name_for_containers(),
            );
            Ok(match whose(engine.inspect_container(&personal).await?) {
                Some(Belonging::Mine) => personal,
                _ => plain,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::engine::EngineKind;
    use crate::facts::gpu::LoadOutcome;
    use crate::facts::user::Identity;
    use crate::ops::up::fixtures::{
        context, daemon, facts, nvml_missing, nvml_with_gpus, plan, reachable, unreachable, user,
    };

    const PLAIN: &str = "name = \"plain\"\nimage = \"ubuntu:24.04\"\n";

    /// A made container records where its profile lies and whose it is: the uid, the
    /// name and the identity the transport proved, each only when known.
    #[test]
    fn a_made_container_is_labelled_with_where_and_whose() {
        let mut body = plan(PLAIN, Gpus::None).body;
        let before = body.labels.clone();
        let proven = crate::facts::user::User {
            identity: Some(Identity::Ssh {
                user: "ada".into(),
                server: "gpu2".into(),
            }),
            ..user()
        };
        label_made_container(
            &mut body,
            Some("/work/project/envctl/plain.toml".into()),
            &proven,
        );
        let label = |key: &str| body.labels.get(key).map(String::as_str);
        assert_eq!(
            label(container_plan::PROFILE_FILE_LABEL),
            Some("/work/project/envctl/plain.toml")
        );
        assert_eq!(label(container_plan::USER_LABEL), Some("ada"));
        assert_eq!(label(container_plan::UID_LABEL), Some("1000"));
        assert_eq!(
            label(crate::container_plan::ownership::IDENTITY_LABEL),
            Some("ssh:ada@gpu2")
        );
        // What the plan's body had is kept.
        assert!(before.iter().all(|(key, value)| label(key) == Some(value)));

        let mut body = plan(PLAIN, Gpus::None).body;
        let unknown = crate::facts::user::User {
            uid: None,
            name: "unknown user".into(),
            identity: None,
        };
        label_made_container(&mut body, None, &unknown);
        assert_eq!(
            body.labels
                .get(container_plan::USER_LABEL)
                .map(String::as_str),
            Some("unknown user")
        );
        for absent in [
            container_plan::PROFILE_FILE_LABEL,
            container_plan::UID_LABEL,
            crate::container_plan::ownership::IDENTITY_LABEL,
        ] {
            assert!(!body.labels.contains_key(absent), "{absent}");
        }
    }

    /// `gpus = "optional"` gets GPUs only where NVML lists some and the daemon can hand
    /// them over; for another machine's daemon, only its report counts.
    #[test]
    fn optional_gets_gpus_only_where_they_can_be_given() {
        let context = context();
        let nvidia = || {
            reachable(daemon(
                EngineKind::DockerEngine,
                "28.2.2",
                &["nvidia", "runc"],
            ))
        };
        let runc = || reachable(daemon(EngineKind::DockerEngine, "28.2.2", &["runc"]));
        assert!(optional_gets_gpus(
            &facts(nvidia(), nvml_with_gpus(1)),
            &context
        ));
        assert!(!optional_gets_gpus(
            &facts(nvidia(), nvml_missing()),
            &context
        ));
        assert!(!optional_gets_gpus(
            &facts(nvidia(), nvml_with_gpus(0)),
            &context
        ));
        assert!(!optional_gets_gpus(
            &facts(runc(), nvml_with_gpus(1)),
            &context
        ));
        assert!(!optional_gets_gpus(
            &facts(unreachable(), nvml_with_gpus(1)),
            &context
        ));
        let elsewhere = || LoadOutcome::OnAnotherHost {
            host: "gpu2".into(),
            message: "the daemon runs on gpu2".into(),
            seen: None,
        };
        assert!(optional_gets_gpus(&facts(nvidia(), elsewhere()), &context));
        assert!(!optional_gets_gpus(&facts(runc(), elsewhere()), &context));
    }

    /// Without policies there is no gate; the gate counts holders only for a per-user GPU
    /// rule and a body that asks for GPUs.
    #[test]
    fn the_gate_counts_holders_only_for_a_per_user_gpu_rule() {
        let mut plan = plan(PLAIN, Gpus::None);
        assert!(plan.gate().is_none());
        assert!(plan.counting_gate().is_none());
        assert!(plan.gpu_facts().is_none());
        plan.policies =
            vec![crate::policy::parse("policy.toml", "[limits]\nmax_gpus_per_user = 4\n").unwrap()];
        let gate = plan.gate().unwrap();
        assert_eq!(gate.container, Some("envctl-plain"));
        assert_eq!(gate.user.name, "ada");
        assert!(plan.counting_gate().is_none());
        plan.body.host_config.device_requests = Gpus::Count(1).docker_requests();
        assert!(plan.counting_gate().is_some());
        plan.policies = vec![
            crate::policy::parse("policy.toml", "[limits]\nmax_gpus_per_container = 4\n").unwrap(),
        ];
        assert!(plan.gate().is_some());
        assert!(plan.counting_gate().is_none());
        plan.facts = Some(facts(unreachable(), nvml_with_gpus(3)));
        assert_eq!(plan.gpu_facts().unwrap().listed_gpus().unwrap().len(), 3);
    }
}
