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
    let mut request = PolicyRequest::from_body(body, host_gpu_count, user);
    if let Some(holders) = holders {
        request.user_gpus_held = Some(user_gpus_held(holders, user, container, gpu_facts, context));
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

/// GPUs that `user`'s other containers hold now (label `envctl.user`), by the engine's
/// holders: a count or a list by its length, `all` by the host's GPU count. The container
/// `up` is about to make or meet (`container`) is not counted twice.
fn user_gpus_held(
    holders: &[crate::facts::occupancy::GpuHolder],
    user: &str,
    container: &str,
    gpu_facts: Option<&GpuFacts>,
    context: &Context,
) -> u32 {
    use crate::facts::container::GpuAssignment;
    let mut host_count = None;
    let mut held = 0_u32;
    for holder in holders
        .iter()
        .filter(|holder| holder.user.as_deref() == Some(user) && holder.name != container)
    {
        held += match &holder.gpus {
            GpuAssignment::Count(count) => u32::try_from(*count).unwrap_or(0),
            GpuAssignment::Devices(devices) => u32::try_from(devices.len()).unwrap_or(u32::MAX),
            GpuAssignment::All => {
                if host_count.is_none() {
                    let gathered = match gpu_facts {
                        Some(facts) => facts.clone(),
                        None => crate::gpu::gather(context.environment.nvml_library().as_deref()),
                    };
                    host_count = gathered
                        .loaded()
                        .and_then(|nvml| nvml.device_count.value().copied());
                }
                // Every GPU, however many NVML counts; one when it cannot say, since the
                // container holds at least one.
                host_count.unwrap_or(1)
            }
        };
    }
    held
}

/// Whether the per-user GPU rule applies to `body`: then the command asks the engine for
/// the GPU holders before [`enforce`].
pub fn counts_holders(policy: &Policy, body: &CreateBody) -> bool {
    policy.max_gpus_per_user.is_some() && !body.host_config.device_requests.is_empty()
}
