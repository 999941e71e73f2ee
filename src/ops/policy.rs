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
pub fn enforce(
    policy: &Policy,
    body: &CreateBody,
    gpu_facts: Option<&GpuFacts>,
    user: &str,
    context: &Context,
) -> Result<(), Error> {
    let host_gpu_count = if policy.has_gpu_rule() && policy::asks_for_all_gpus(body) {
        let gathered;
        let facts = match gpu_facts {
            Some(facts) => facts,
            None => {
                gathered = crate::gpu::gather(context.environment.nvml_library().as_deref());
                &gathered
            }
        };
        facts
            .loaded()
            .and_then(|nvml| nvml.device_count.value().copied())
    } else {
        None
    };
    let request = PolicyRequest::from_body(body, host_gpu_count, user);
    let violations = policy::check(policy, &request);
    if violations.is_empty() {
        return Ok(());
    }
    Err(Error::PolicyRefused {
        path: policy.path.clone(),
        violations,
    })
}
