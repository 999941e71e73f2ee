//! The host policy in force (`ENVCTL_POLICY` or `/etc/envctl/policy.toml`), read once per
//! command, and its verdict on the container `up` is about to make: the rules are pure
//! (`policy::check`); this gathers what they need (who asks, how many GPUs "all" is).

use crate::context::Context;
use crate::error::Error;
use crate::facts::gpu::GpuFacts;
use crate::facts::occupancy::GpuHolder;
use crate::facts::user::User;
use crate::policy::{self, Policy, PolicyError, PolicyRequest};
use crate::spec::CreateBody;

/// The policy file of this host, read and parsed; `None` where there is none.
pub fn in_force(context: &Context) -> Result<Option<Policy>, PolicyError> {
    let path = context.environment.policy_path();
    policy::load(&path, &path.display().to_string())
}

/// Whoever runs envctl: the real uid and its name (`host::user`), read once at start.
pub fn user(context: &Context) -> crate::facts::user::User {
    context.user.clone()
}

/// What the policy judges a create by: the rules, who asks, and the container's name.
pub struct PolicyGate<'a> {
    pub policy: &'a Policy,
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
        self.policy.max_gpus_per_user.is_some() && !body.host_config.device_requests.is_empty()
    }

    /// Refuses `body` when the policy forbids it. `gpu_facts` is what NVML already said
    /// in this process; NVML is asked only when a GPU rule must know how many GPUs "all"
    /// is. `holders`: the engine's GPU holders, read under the placement lock; `None`
    /// judges this container alone (the early check before anything is pulled).
    pub fn enforce(
        &self,
        body: &CreateBody,
        gpu_facts: Option<&GpuFacts>,
        holders: Option<&[GpuHolder]>,
        context: &Context,
    ) -> Result<(), Error> {
        let policy = self.policy;
        let all = policy::asks_for_all_gpus(body);
        // NVML is read at most once, and only where a rule needs what it counts.
        let needs_nvml = (policy.has_gpu_rule() && all) || holders.is_some();
        let gathered;
        let nvml = match gpu_facts {
            _ if !needs_nvml => None,
            Some(facts) => facts.loaded(),
            None => {
                gathered = crate::gpu::gather(context.environment.nvml_library().as_deref());
                gathered.loaded()
            }
        };
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
            request.user_gpus_held = Some(crate::spec::placement::gpus_held(listed, &theirs));
        }
        let violations = policy::check(policy, &request);
        if violations.is_empty() {
            return Ok(());
        }
        Err(Error::PolicyRefused {
            path: policy.path.clone(),
            violations,
        })
    }
}

/// Whether `holder` is `user`'s: by the uid `up` recorded, or, for a container of an
/// envctl older than that label, by the login name.
fn is_users(holder: &GpuHolder, user: &User) -> bool {
    match holder.uid {
        Some(uid) => Some(uid) == user.uid,
        None => holder.user.as_deref() == Some(user.name.as_str()),
    }
}
