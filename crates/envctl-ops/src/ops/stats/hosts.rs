//! `stats --hosts a,b,c --once`: one snapshot of every host's containers, the hosts asked
//! at once (`ops::hosts::each`, each with the deadlines one daemon gets), each snapshot
//! taken as plain `stats --once` takes it (`sampler::snapshot_once`). A host that cannot be
//! chosen, reached or sampled is an answer that says why, never a failed command.
//!
//! GPUs: NVML is read on this machine only, so only a daemon on a socket of this machine
//! (`unix://`, the rule `ps --hosts` and `doctor --hosts` follow) gets this machine's GPU
//! rows and its containers' GPU memory; for any other host both are unknown
//! ([`Gpus::Elsewhere`]), never this machine's.

use std::time::Duration;

use super::sampler::{self, CounterSource, Gpus, Selection};
use crate::context::Clock;
use crate::error::Error;
use crate::monitor::Snapshot;
use crate::ops::hosts::{Answer, Host};

/// Which containers each host shows, as plain `stats` chooses them.
#[derive(Debug, Clone)]
pub struct Choice {
    /// envctl's containers only (not `--all`).
    pub only_envctl: bool,
    /// The user's own only (not `--all-users`, not `--all`): on each host, those of the
    /// identity its transport proves ([`owner_on`]).
    pub owner: Option<crate::facts::user::User>,
}

/// Whose containers `host` shows: [`Choice::owner`] with the identity `host`'s transport
/// proves (`ops::hosts::user_on`), as `stats` of that daemon alone judges "yours"; `None`
/// for everyone's.
pub async fn owner_on(host: &Host, choice: &Choice) -> Option<crate::facts::user::User> {
    match &choice.owner {
        Some(user) => Some(crate::ops::hosts::user_on(host, user).await),
        None => None,
    }
}

/// One snapshot of every host in `hosts`, in their order, each with whether its daemon
/// runs on this machine. `local_gpus` is read for the
/// hosts whose daemon runs on this machine (`Engine::daemon_host`); every other host's
/// GPUs are not read.
#[allow(clippy::too_many_arguments)]
pub async fn snapshot_hosts(
    hosts: &[Host],
    timeout: Duration,
    choice: &Choice,
    local_gpus: &Gpus,
    source: CounterSource,
    interval: Duration,
    clock: Clock,
) -> Vec<Answer<(Snapshot, bool)>> {
    let elsewhere = Gpus::Elsewhere;
    let elsewhere = &elsewhere;
    crate::ops::hosts::each_with_host(hosts, timeout, |engine, host| async move {
        let here = engine.on_this_host().await;
        let gpus = if here { local_gpus } else { elsewhere };
        let owner = owner_on(host, choice).await;
        let selection = Selection {
            targets: sampler::list_targets(&engine, choice.only_envctl, None, owner.as_ref())
                .await?,
            fixed: None,
            failures: Vec::new(),
        };
        Ok::<(Snapshot, bool), Error>((
            sampler::snapshot_once(&engine, &selection, gpus, source, interval, clock).await?,
            here,
        ))
    })
    .await
}
