//! The policies in force, read once per command, and their verdict on the container `up`
//! is about to make: the one an admin pushed to the daemon (`envctl policy push`,
//! `engine::daemon_policy`), which every client of that daemon obeys from any machine,
//! and this machine's file (`ENVCTL_POLICY` or `/etc/envctl/policy.toml`). A container
//! must pass both, so a client's own file can tighten the daemon's but never loosen it.
//! The rules are pure (`policy::check`); this gathers what they need (who asks, how many
//! GPUs "all" is).

use crate::container_plan::CreateBody;
use crate::context::Context;
use crate::engine::Engine;
use crate::engine::daemon_policy::DaemonPolicyVolume;
use crate::error::Error;
use crate::facts::gpu::GpuFacts;
use crate::facts::occupancy::GpuHolder;
use crate::facts::user::User;
use crate::policy::{self, Policy, PolicyError, PolicyRequest};

/// The policy file of this host, read and parsed; `None` where there is none.
pub fn in_force(context: &Context) -> Result<Option<Policy>, PolicyError> {
    let path = context.environment.policy_path();
    policy::load(&path, &path.display().to_string())
}

/// A pushed policy larger than this is refused: a label carries it, and no real policy
/// comes near it.
pub const MAXIMUM_PUSHED_BYTES: usize = 64 * 1024;

/// How the policy pushed to the daemon at `endpoint` is named in messages, in the place of
/// a file's path: `envctl-policy@ssh://gpu2`.
pub fn pushed_path(endpoint: &str) -> String {
    format!("{}@{endpoint}", crate::engine::daemon_policy::POLICY_NAME)
}

/// The policy pushed to `engine`'s daemon, parsed; `None` where none was pushed (or a
/// volume of that name is someone else's: never read as a policy).
pub async fn at_daemon(engine: &Engine) -> Result<Option<Policy>, Error> {
    let DaemonPolicyVolume::Envctls {
        text,
        pushed_by,
        pushed_at,
    } = engine.daemon_policy().await?
    else {
        return Ok(None);
    };
    let mut policy = policy::parse(&pushed_path(engine.endpoint()), &text)?;
    policy.origin = policy::Origin::Daemon {
        endpoint: engine.endpoint().to_string(),
        pushed_by,
        pushed_at,
    };
    Ok(Some(policy))
}

/// Every policy a container made through `engine` must pass: the daemon's first, then
/// this machine's file. Without an engine (a dry run that never connects), the file's.
pub async fn all_in_force(
    context: &Context,
    engine: Option<&Engine>,
) -> Result<Vec<Policy>, Error> {
    let mut policies = Vec::new();
    if let Some(engine) = engine {
        policies.extend(at_daemon(engine).await?);
    }
    policies.extend(in_force(context)?);
    Ok(policies)
}

/// Whoever runs envctl: the real uid and its name (`host::user`), read once at start,
/// with the identity the chosen daemon's transport proves (`Context::me`).
pub fn user(context: &Context) -> crate::facts::user::User {
    context.me().clone()
}

/// What the policies judge a create by: the rules, who asks, and the container's name.
pub struct PolicyGate<'a> {
    /// Every policy in force (`all_in_force`): the container must pass each.
    pub policies: &'a [Policy],
    pub user: &'a User,
    /// The container `up` makes or meets, when its name is known yet: never counted twice
    /// among the user's holders.
    pub container: Option<&'a str>,
}

impl PolicyGate<'_> {
    /// Whether the per-user GPU rule applies to `body`: then the engine's GPU holders are
    /// counted, under the placement lock (`ops::placement::place`), so that concurrent
    /// `up`s can never together pass the limit.
    pub fn counts_holders(&self, body: &CreateBody) -> bool {
        self.policies
            .iter()
            .any(|policy| policy.max_gpus_per_user.is_some())
            && !body.host_config.device_requests.is_empty()
    }

    /// Refuses `body` when one of the policies forbids it: the first that does (the
    /// daemon's before this machine's) names its rules.
    pub fn enforce(
        &self,
        body: &CreateBody,
        gpu_facts: Option<&GpuFacts>,
        holders: Option<&[GpuHolder]>,
        context: &Context,
    ) -> Result<(), Error> {
        // NVML is read at most once, however many policies need it.
        let gathered;
        let gpu_facts = match gpu_facts {
            Some(facts) => Some(facts),
            None if self
                .policies
                .iter()
                .any(|policy| needs_nvml(policy, body, holders)) =>
            {
                gathered = crate::gpu::gather(context.environment.nvml_library().as_deref());
                Some(&gathered)
            }
            None => None,
        };
        for policy in self.policies {
            self.enforce_one(policy, body, gpu_facts, holders)?;
        }
        Ok(())
    }

    /// Refuses `body` when `policy` forbids it. `gpu_facts` is what NVML already said
    /// in this process; NVML is asked only when a GPU rule must know how many GPUs "all"
    /// is. `holders`: the engine's GPU holders, read under the placement lock; `None`
    /// judges this container alone (the early check before anything is pulled).
    fn enforce_one(
        &self,
        policy: &Policy,
        body: &CreateBody,
        gpu_facts: Option<&GpuFacts>,
        holders: Option<&[GpuHolder]>,
    ) -> Result<(), Error> {
        let all = policy::asks_for_all_gpus(body);
        // NVML is read at most once, and only where a rule needs what it counts.
        let needs_nvml = needs_nvml(policy, body, holders);
        let nvml = gpu_facts.filter(|_| needs_nvml).and_then(GpuFacts::loaded);
        let host_gpu_count = if policy.has_gpu_rule() && all {
            nvml.and_then(|nvml| nvml.device_count.value().copied())
        } else {
            None
        };
        let mut request = PolicyRequest::from_body(body, host_gpu_count, &self.user.name);
        if let Some(holders) = holders {
            // The user's other containers, by uid; the one `up` is about to make or meet
            // is not counted twice.
            let theirs: Vec<_> = holders
                .iter()
                .filter(|holder| {
                    is_users(holder, self.user) && Some(holder.name.as_str()) != self.container
                })
                .cloned()
                .collect();
            // NVML's list when it could count the GPUs; else none, and the count rests on
            // the requests alone (an `all` then makes it unknown).
            let listed = nvml.and_then(|nvml| match nvml.device_count {
                crate::facts::gpu::Fact::Value(_) => Some(nvml.gpus.as_slice()),
                crate::facts::gpu::Fact::Error(_) => None,
            });
            request.user_gpus_held =
                Some(crate::container_plan::placement::gpus_held(listed, &theirs));
        }
        let mut violations = policy::check(policy, &request);
        // Whether a client the transport proves nothing about may make containers at all.
        violations.extend(policy::check_client(policy, self.user.identity.as_ref()));
        if violations.is_empty() {
            return Ok(());
        }
        Err(Error::PolicyRefused {
            path: policy.path.clone(),
            origin: policy.origin.clone(),
            violations,
        })
    }
}

/// Whether judging `body` by `policy` needs NVML's facts: to count "all" GPUs for a GPU
/// rule, or the listed GPUs beside the holders.
fn needs_nvml(policy: &Policy, body: &CreateBody, holders: Option<&[GpuHolder]>) -> bool {
    (policy.has_gpu_rule() && policy::asks_for_all_gpus(body)) || holders.is_some()
}

/// Whether `holder` is `user`'s: by the identity `up` recorded (`container_plan::ownership`), else,
/// for a container of an envctl older than that label, by the uid, else by the name.
fn is_users(holder: &GpuHolder, user: &User) -> bool {
    if let (Some(theirs), Some(mine)) = (&holder.identity, &user.identity) {
        return crate::facts::user::identity_key(theirs)
            == crate::facts::user::identity_key(&mine.label());
    }
    match holder.uid {
        Some(uid) => Some(uid) == user.uid,
        None => holder.user.as_deref() == Some(user.name.as_str()),
    }
}
