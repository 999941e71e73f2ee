//! The host policy in force (`ENVCTL_POLICY` or `/etc/envctl/policy.toml`), read once per
//! command, and its verdict on the container `up` is about to make: the rules are pure
//! (`policy::check`); this gathers what they need (who asks, how many GPUs "all" is).

use std::path::Path;

use crate::context::Context;
use crate::error::Error;
use crate::facts::gpu::GpuFacts;
use crate::policy::{self, Policy, PolicyError, PolicyRequest};
use crate::spec::CreateBody;

/// The policy file of this host, read and parsed; `None` where there is none.
pub fn in_force(context: &Context) -> Result<Option<Policy>, PolicyError> {
    let path = context.environment.policy_path();
    policy::load(&path, &path.display().to_string())
}

/// The login name of whoever runs envctl (the real uid's, `USER` as a fallback).
pub fn user(context: &Context) -> String {
    crate::host::user::login_name(Path::new("/"), context.environment.user_variable())
}

/// Refuses `body` when `policy` forbids it. `gpu_facts` is what NVML already said in this
/// process; NVML is asked only when a GPU rule must know how many GPUs "all" is.
/// `holders` are the engine's GPU holders (`ops::placement::holders`), which the command
/// reads only when [`counts_holders`] says the per-user rule needs them.
pub fn enforce(
    policy: &Policy,
    body: &CreateBody,
    gpu_facts: Option<&GpuFacts>,
    user: &str,
    container: &str,
    holders: Option<&[crate::facts::occupancy::GpuHolder]>,
    context: &Context,
) -> Result<(), Error> {
    // NVML is read at most once, and only where a rule needs what it counts.
    let needs_nvml =
        (policy.has_gpu_rule() && policy::asks_for_all_gpus(body)) || holders.is_some();
    let gathered;
    let nvml = match gpu_facts {
        _ if !needs_nvml => None,
        Some(facts) => facts.loaded(),
        None => {
            gathered = crate::gpu::gather(context.environment.nvml_library().as_deref());
            gathered.loaded()
        }
    };
    let host_gpu_count = if policy.has_gpu_rule() && policy::asks_for_all_gpus(body) {
        nvml.and_then(|nvml| nvml.device_count.value().copied())
    } else {
        None
    };
    let mut request = PolicyRequest::from_body(body, host_gpu_count, user);
    if let Some(holders) = holders {
        // The user's other containers; the one `up` is about to make or meet is not
        // counted twice.
        let theirs: Vec<_> = holders
            .iter()
            .filter(|holder| holder.user.as_deref() == Some(user) && holder.name != container)
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

/// Whether the per-user GPU rule applies to `body`: then the command asks the engine for
/// the GPU holders before [`enforce`].
pub fn counts_holders(policy: &Policy, body: &CreateBody) -> bool {
    policy.max_gpus_per_user.is_some() && !body.host_config.device_requests.is_empty()
}
