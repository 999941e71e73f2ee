//! `up PROFILE --hosts @team` (issue 38, item 4): the server of a team's few where the
//! profile fits, chosen once at `up` — no queue, no retries, no daemon of envctl's own (a
//! team that needs those has Slurm or Kubernetes).
//!
//! Every host is asked at once (`ops::hosts::each`) for what `doctor` would say of the
//! profile there: the daemon and its GPUs (`ops::doctor::gather_with` and the occupancy;
//! for another machine's daemon, its GPUs as that daemon tells them, `ops::server_gpus`,
//! with a probe for the processes on them now, as `up` from a laptop places), the checks of the profile on that host (driver, CUDA, GPU, image), and the policies in
//! force there (the daemon's pushed one and this machine's file), each judging the user as
//! that host's transport proves them (`ops::hosts::user_on`). [`judge`] is pure: a host
//! fits when it answers, no check of the profile fails, no policy refuses, and it has the
//! GPUs free; among those it prefers the image already present, then the most free GPUs,
//! then the team file's order. The `up` that follows takes the daemon's placement lock as
//! `up -H` does, so racing clients never double-book: the choice is advice, the lock is
//! the rule.

use serde::Serialize;

use crate::checks::Status;
use crate::context::Context;
use crate::error::Error;
use crate::ops::hosts::Host;
use crate::profile::ResolvedProfile;
use crate::profile::model::GpuRequest;

/// What one host offers the profile, as [`judge`] needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Why the host cannot take the profile, when something says so before GPUs count:
    /// unreachable, a failed check, a policy refusal.
    pub refused: Option<String>,
    /// GPUs no container and no process holds, failed ones kept out, by index; `None`
    /// when the host's GPUs cannot be seen ([`Offer::unseen`] says why).
    pub free_gpus: Option<Vec<u32>>,
    /// How many GPUs the host has, when known.
    pub gpu_count: Option<u32>,
    pub image_present: bool,
    /// Why the host's GPUs cannot be counted, when that is known (another machine whose
    /// daemon could not tell them).
    pub unseen: Option<String>,
    /// How another machine's GPUs were seen, said beside their count: by a probe through
    /// its daemon now, or from its daemon's record (the processes on them then unknown).
    pub seen_by: Option<String>,
}

/// One host's verdict, for the message and `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub host: String,
    pub endpoint: String,
    /// Why it was chosen, or why not.
    pub reason: String,
    pub fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_gpus: Option<u32>,
    pub image_present: bool,
}

/// The choice: the host's index among the verdicts, or none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen: Option<usize>,
    pub hosts: Vec<Verdict>,
}

/// How many GPUs `request` needs free on one host: `None` for no GPU (or `optional`,
/// which runs without), `Some(0)` for "all", which needs every GPU free.
fn needed(request: &GpuRequest) -> Option<u32> {
    match request {
        GpuRequest::None | GpuRequest::Optional => None,
        GpuRequest::All => Some(0),
        GpuRequest::Count(count) => Some(*count),
        GpuRequest::Devices(devices) => Some(u32::try_from(devices.len()).unwrap_or(u32::MAX)),
    }
}

/// The pure choice over each host's `(name, endpoint, offer)`, in the team file's order.
pub fn judge(request: &GpuRequest, offers: &[(String, String, Offer)]) -> Choice {
    let wanted = needed(request);
    let mut hosts = Vec::new();
    // (image present, free GPUs) of the best host that fits so far; the team file's order
    // breaks a tie, as only a strictly better rank replaces it. A free count that is not
    // known ranks below every known one, zero included (`None < Some(_)`): an unknown is not
    // room, and it is never taken for a count.
    let mut best: Option<(usize, (bool, Option<u32>))> = None;
    for (order, (host, endpoint, offer)) in offers.iter().enumerate() {
        let free = offer
            .free_gpus
            .as_ref()
            .map(|free| u32::try_from(free.len()).unwrap_or(u32::MAX));
        let verdict = |fits: bool, reason: String| Verdict {
            host: host.clone(),
            endpoint: endpoint.clone(),
            reason,
            fits,
            free_gpus: free,
            image_present: offer.image_present,
        };
        if let Some(refused) = &offer.refused {
            hosts.push(verdict(false, refused.clone()));
            continue;
        }
        let gpus_ok = gpus_fit(wanted, free, offer);
        // Another machine's count says how it was seen (a probe now, or a record).
        let seen = |said: String| match (&offer.seen_by, free) {
            (Some(seen_by), Some(_)) => format!("{said} ({seen_by})"),
            _ => said,
        };
        match gpus_ok {
            Err(reason) => hosts.push(verdict(false, seen(reason))),
            Ok(gpus) => {
                let mut reasons: Vec<String> = Vec::new();
                if !gpus.is_empty() {
                    reasons.push(seen(gpus));
                }
                reasons.push(if offer.image_present {
                    "image present".into()
                } else {
                    "image to pull".into()
                });
                if free.is_none() {
                    // Only a profile that asks for no GPU fits without a count (one that
                    // asks for some was refused above), so the count is unknown, not zero.
                    reasons.push("free GPUs unknown (none needed)".into());
                }
                hosts.push(verdict(true, reasons.join(", ")));
                let rank = (offer.image_present, free);
                if best.is_none_or(|(_, best_rank)| rank > best_rank) {
                    best = Some((order, rank));
                }
            }
        }
    }
    Choice {
        chosen: best.map(|(order, _)| order),
        hosts,
    }
}

/// Whether a host's `free` GPUs (of its count) give the `wanted` ones (`Some(0)`: every
/// GPU): what is said of them where they do (empty where none are wanted), why not where
/// they do not.
fn gpus_fit(wanted: Option<u32>, free: Option<u32>, offer: &Offer) -> Result<String, String> {
    match (wanted, free, offer.gpu_count) {
        (None, _, _) => Ok(String::new()),
        (Some(_), None, _) => Err(offer
            .unseen
            .clone()
            .unwrap_or_else(|| "its GPUs cannot be seen from here".to_string())),
        (Some(0), Some(free), Some(count)) if count > 0 && free == count => {
            Ok(format!("all {count} GPUs free"))
        }
        (Some(0), Some(free), count) => Err(match count {
            Some(0) => "it has no GPU".to_string(),
            Some(count) => {
                format!("the profile asks for every GPU; {free} of {count} are free")
            }
            None => format!("the profile asks for every GPU; {free} are free"),
        }),
        (Some(wanted), Some(free), _) if free >= wanted => {
            Ok(format!("{free} GPUs free for {wanted}"))
        }
        (Some(wanted), Some(free), _) => Err(format!(
            "{free} GPU{} free, the profile asks for {wanted}",
            if free == 1 { "" } else { "s" }
        )),
    }
}

/// Asks every host `names` names what it offers `resolved`, and chooses.
/// `force`: as `up --force` starts despite failed checks, a host is judged by its GPUs and
/// policies alone (a policy is never passed by `--force`). `dry_run`: no probe is made for
/// the processes on another machine's GPUs where its record tells the GPUs (as placement's
/// dry run makes none).
pub async fn choose(
    context: &Context,
    names: &[String],
    resolved: &ResolvedProfile,
    force: bool,
    dry_run: bool,
) -> Result<(Choice, Vec<Host>), Error> {
    let hosts = crate::ops::hosts::named(context, names)?;
    let matrix =
        crate::ops::matrix::load_matrix(None, context.environment.config_home().as_deref())?;
    let answers = {
        let matrix = &matrix;
        crate::ops::hosts::each_with_host(
            &hosts,
            crate::engine::PING_TIMEOUT,
            |engine, host| async move {
                // The user as this host's transport proves them, whose GPUs there its
                // per-user limit counts (`up` on it will count the same).
                let user = crate::ops::hosts::user_on(host, &context.user).await;
                offer(engine, resolved, matrix, (force, dry_run), &user, context).await
            },
        )
        .await
    };
    let offers: Vec<(String, String, Offer)> = answers
        .into_iter()
        .map(|answer| {
            let offer = answer.result.unwrap_or_else(|error| Offer {
                refused: Some(format!(
                    "cannot be reached: {}",
                    crate::error::error_chain(&error)
                )),
                free_gpus: None,
                gpu_count: None,
                image_present: false,
                unseen: None,
                seen_by: None,
            });
            (
                answer.host.name.clone(),
                answer.host.endpoint().to_string(),
                offer,
            )
        })
        .collect();
    Ok((judge(&resolved.profile.gpus, &offers), hosts))
}

/// What the host behind `engine` offers: doctor's facts and verdicts for the profile there,
/// with the policies in force there, judged for `user` as that host knows them.
/// `(force, dry_run)` as [`choose`] takes them.
async fn offer(
    engine: crate::engine::Engine,
    resolved: &ResolvedProfile,
    matrix: &crate::compat::Matrix,
    (force, dry_run): (bool, bool),
    user: &crate::facts::user::User,
    context: &Context,
) -> Result<Offer, Error> {
    let profiles = std::slice::from_ref(resolved);
    let mut facts =
        crate::ops::doctor::gather_with(Ok(engine.clone()), profiles, None, context).await;
    // Who holds the GPUs matters only to a profile that asks for some.
    if needed(&resolved.profile.gpus).is_some() {
        crate::ops::doctor::gather_occupancy(&engine, &mut facts, context).await;
    }
    let policies = crate::ops::policy::all_in_force(context, Some(&engine)).await?;
    let report = crate::ops::doctor::judge(&facts, profiles, matrix)
        .with_policy_verdicts_as(&policies, profiles, &facts, user, context);
    let failed: Vec<String> = report
        .profiles
        .iter()
        .flat_map(|profile| {
            profile
                .findings
                .iter()
                .chain(profile.gpus.iter().flat_map(|gpu| gpu.findings.iter()))
        })
        .filter(|finding| finding.status == Status::Fail)
        .filter(|finding| !force || finding.id == crate::ops::doctor::POLICY_PROFILE)
        .map(|finding| finding.message.clone())
        .collect();
    let refused = (!failed.is_empty()).then(|| failed.join("; "));
    let elsewhere = match &facts.engine.state {
        crate::facts::engine::EngineState::Reachable(daemon) => {
            daemon.host.elsewhere().map(str::to_string)
        }
        crate::facts::engine::EngineState::Unreachable { .. } => None,
    };
    let counted = match (&elsewhere, needed(&resolved.profile.gpus)) {
        // Only worth a look (perhaps a probe) when nothing refused the host already.
        (Some(host), Some(_)) if refused.is_none() => {
            remote_count(&engine, host, resolved, &facts, dry_run, context).await
        }
        (Some(_), _) => Counted::default(),
        (None, _) => local_count(report.occupancy.as_ref()),
    };
    let image_present = matches!(facts.images.first(), Some(Ok(Some(_))));
    Ok(Offer {
        refused,
        free_gpus: counted.free,
        gpu_count: counted.count,
        image_present,
        unseen: counted.unseen,
        seen_by: counted.seen_by,
    })
}

/// A host's GPUs counted for [`judge`].
#[derive(Debug, Default)]
struct Counted {
    free: Option<Vec<u32>>,
    count: Option<u32>,
    unseen: Option<String>,
    seen_by: Option<String>,
}

impl Counted {
    fn unseen(why: String) -> Counted {
        Counted {
            unseen: Some(why),
            ..Counted::default()
        }
    }

    /// The GPUs of `rows` no container and no process holds, failed ones kept out: those
    /// placement takes first (`container_plan::placement::choose`), and the only ones the chooser
    /// calls room, since `up` would otherwise share a GPU someone uses.
    fn of_rows(rows: &[crate::container_plan::placement::GpuOccupancy]) -> Counted {
        Counted {
            free: Some(
                rows.iter()
                    .filter(|row| row.free && row.busy.is_none() && row.kept_out.is_none())
                    .filter(|row| row.unreadable.is_empty() && row.uuid.is_some())
                    .map(|row| row.index)
                    .collect(),
            ),
            count: u32::try_from(rows.len()).ok(),
            ..Counted::default()
        }
    }
}

/// This machine's GPUs, from doctor's occupancy (NVML and the daemon's holders).
fn local_count(occupancy: Option<&crate::ops::doctor::Occupancy>) -> Counted {
    match occupancy {
        Some(occupancy) if occupancy.error.is_none() => Counted::of_rows(&occupancy.gpus),
        _ => Counted::default(),
    }
}

/// Another machine's GPUs, learnt through its daemon as placement from a laptop learns
/// them (`ops::server_gpus`): the probe doctor's facts just ran when they did (so a host is
/// probed once), else a probe now (the processes on each GPU change by the minute and no
/// record keeps them), else its daemon's record when the probe cannot run (then only its
/// containers are weighed, said). The containers holding GPUs are the daemon's own list.
/// A dry run makes no probe of its own: the record, when doctor's facts read one.
async fn remote_count(
    engine: &crate::engine::Engine,
    host: &str,
    resolved: &ResolvedProfile,
    facts: &crate::ops::doctor::Facts,
    dry_run: bool,
    context: &Context,
) -> Counted {
    use crate::facts::gpu::SeenBy;
    let holders = match crate::ops::placement::holders(engine, context).await {
        Ok(holders) => holders,
        Err(error) => {
            return Counted::unseen(format!(
                "the containers holding its GPUs could not be listed: {}",
                crate::error::error_chain(&error)
            ));
        }
    };
    let probed_now = facts
        .gpu
        .seen_on_server()
        .filter(|seen| !seen.from_record && seen.by == SeenBy::Probe);
    let (devices, owners, seen_by) = match (probed_now, facts.gpu.seen_on_server()) {
        (Some(seen), _) => (
            seen.facts.gpus.clone(),
            std::collections::BTreeMap::new(),
            "seen by a probe through its daemon",
        ),
        // Neither a record nor a probe could tell them just now: why, as doctor says it.
        (None, None) => {
            return Counted::unseen(
                facts
                    .gpu
                    .nvml
                    .failure_message()
                    .unwrap_or("its GPUs could not be learnt through its daemon")
                    .to_string(),
            );
        }
        (None, Some(recorded)) if dry_run => (
            recorded.facts.gpus.clone(),
            std::collections::BTreeMap::new(),
            "as its daemon's GPU record keeps them, the processes on them unknown: a dry run probes nothing",
        ),
        (None, Some(_)) => match probe_now(engine, host, resolved, &holders, context).await {
            Ok(probed) => probed,
            Err(unseen) => return unseen,
        },
    };
    let (mut rows, _) =
        crate::container_plan::placement::occupancy_with_owners(&devices, &holders, &owners);
    for row in &mut rows {
        // What the daemon cannot tell (reserved memory, health) is unknown by nature
        // there, not unreadable: the GPU stays a candidate, as `up` weighs it.
        row.unreadable.clear();
    }
    Counted {
        seen_by: Some(seen_by.to_string()),
        ..Counted::of_rows(&rows)
    }
}

/// A remote host's GPUs as a probe through its daemon sees them now, with the container
/// each compute process runs in, and how they were seen; the [`Counted`] that says why
/// where they could not be learnt.
async fn probe_now(
    engine: &crate::engine::Engine,
    host: &str,
    resolved: &ResolvedProfile,
    holders: &[crate::facts::occupancy::GpuHolder],
    context: &Context,
) -> Result<
    (
        Vec<crate::facts::gpu::GpuDevice>,
        std::collections::BTreeMap<u32, String>,
        &'static str,
    ),
    Counted,
> {
    use crate::ops::server_gpus::{Need, learn};
    let held_uuids = held_gpu_uuids(holders);
    let images = [resolved.profile.image.to_string()];
    let learnt = match learn(engine, host, &images, &held_uuids, Need::Processes, context).await {
        Ok(learnt) => learnt,
        Err(error) => {
            return Err(Counted::unseen(format!(
                "its GPUs could not be learnt through its daemon: {}",
                crate::error::error_chain(&error)
            )));
        }
    };
    for note in &learnt.notes {
        context.printer.warn(note);
    }
    // Each compute process named by the container it runs in, as `up` names them.
    let owners = learnt
        .probed
        .iter()
        .flat_map(|probed| probed.processes.iter())
        .filter_map(|process| {
            let holder = holders
                .iter()
                .find(|holder| process.cgroup_ids.contains(&holder.id))?;
            Some((process.pid, holder.name.clone()))
        })
        .collect();
    let seen_by = if learnt.probed.is_some() {
        "seen by a probe through its daemon"
    } else {
        "as its daemon's GPU record keeps them, the processes on them unknown"
    };
    Ok((learnt.seen.facts.gpus, owners, seen_by))
}

/// The UUIDs of the GPUs the daemon's containers were given by device request.
fn held_gpu_uuids(holders: &[crate::facts::occupancy::GpuHolder]) -> Vec<String> {
    holders
        .iter()
        .filter_map(|holder| match &holder.gpus {
            crate::facts::container::GpuAssignment::Devices(devices) => Some(devices.iter()),
            _ => None,
        })
        .flatten()
        .filter(|device| device.starts_with("GPU-"))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(free: Option<&[u32]>, count: u32, image: bool) -> Offer {
        Offer {
            refused: None,
            free_gpus: free.map(<[u32]>::to_vec),
            gpu_count: Some(count),
            image_present: image,
            unseen: None,
            seen_by: None,
        }
    }

    fn hosts(offers: Vec<Offer>) -> Vec<(String, String, Offer)> {
        offers
            .into_iter()
            .enumerate()
            .map(|(index, offer)| (format!("gpu{index}"), format!("ssh://gpu{index}"), offer))
            .collect()
    }

    #[test]
    fn the_host_with_room_and_the_image_wins_and_every_other_says_why_not() {
        let offers = hosts(vec![
            offer(Some(&[3]), 4, true),
            offer(Some(&[0, 1, 2]), 4, false),
            offer(Some(&[0, 1]), 2, true),
            Offer {
                refused: Some("cannot be reached: connection refused".into()),
                free_gpus: None,
                gpu_count: None,
                image_present: false,
                unseen: None,
                seen_by: None,
            },
            offer(None, 0, true),
        ]);
        let choice = judge(&GpuRequest::Count(2), &offers);
        assert_eq!(choice.chosen, Some(2), "{choice:?}");
        let reasons: Vec<&str> = choice
            .hosts
            .iter()
            .map(|host| host.reason.as_str())
            .collect();
        assert_eq!(
            reasons,
            [
                "1 GPU free, the profile asks for 2",
                "3 GPUs free for 2, image to pull",
                "2 GPUs free for 2, image present",
                "cannot be reached: connection refused",
                "its GPUs cannot be seen from here",
            ]
        );
    }

    #[test]
    fn more_free_gpus_break_a_tie_and_the_team_order_breaks_the_rest() {
        let offers = hosts(vec![
            offer(Some(&[0, 1]), 2, false),
            offer(Some(&[0, 1, 2]), 4, false),
            offer(Some(&[0, 1, 2]), 4, false),
        ]);
        assert_eq!(judge(&GpuRequest::Count(1), &offers).chosen, Some(1));
        // No GPU asked: GPUs do not count, the first host with the image does.
        let offers = hosts(vec![offer(None, 0, false), offer(None, 0, true)]);
        assert_eq!(judge(&GpuRequest::None, &offers).chosen, Some(1));
    }

    #[test]
    fn an_unknown_free_count_ranks_below_a_known_one_and_says_it_is_unknown() {
        // The unknown host comes first in the team file: were its count taken for zero, the
        // order would choose it over the host known to have no free GPU.
        let offers = hosts(vec![offer(None, 0, false), offer(Some(&[]), 0, false)]);
        let choice = judge(&GpuRequest::None, &offers);
        assert_eq!(choice.chosen, Some(1), "{choice:?}");
        assert_eq!(
            choice.hosts[0].reason,
            "image to pull, free GPUs unknown (none needed)"
        );
        assert_eq!(choice.hosts[0].free_gpus, None);
        assert_eq!(choice.hosts[1].reason, "image to pull");
        // The image still counts first.
        let offers = hosts(vec![offer(Some(&[0]), 1, false), offer(None, 0, true)]);
        assert_eq!(judge(&GpuRequest::None, &offers).chosen, Some(1));
    }

    #[test]
    fn all_gpus_needs_every_gpu_free_and_no_room_anywhere_chooses_none() {
        let offers = hosts(vec![offer(Some(&[0]), 2, true), offer(Some(&[]), 0, true)]);
        let choice = judge(&GpuRequest::All, &offers);
        assert_eq!(choice.chosen, None);
        assert_eq!(
            choice.hosts[0].reason,
            "the profile asks for every GPU; 1 of 2 are free"
        );
        assert_eq!(choice.hosts[1].reason, "it has no GPU");
        let offers = hosts(vec![offer(Some(&[0, 1]), 2, false)]);
        assert_eq!(judge(&GpuRequest::All, &offers).chosen, Some(0));
    }

    #[test]
    fn another_machines_count_says_how_it_was_seen_and_an_unseen_one_says_why() {
        let probed = |free: &[u32]| Offer {
            seen_by: Some("seen by a probe through its daemon".into()),
            ..offer(Some(free), 4, true)
        };
        let unseen = Offer {
            unseen: Some("no image on the daemon can run the GPU probe".into()),
            seen_by: None,
            ..offer(None, 0, true)
        };
        let offers = hosts(vec![probed(&[3]), unseen, probed(&[1, 2, 3])]);
        let choice = judge(&GpuRequest::Count(2), &offers);
        assert_eq!(choice.chosen, Some(2), "{choice:?}");
        let reasons: Vec<&str> = choice
            .hosts
            .iter()
            .map(|host| host.reason.as_str())
            .collect();
        assert_eq!(
            reasons,
            [
                "1 GPU free, the profile asks for 2 (seen by a probe through its daemon)",
                "no image on the daemon can run the GPU probe",
                "3 GPUs free for 2 (seen by a probe through its daemon), image present",
            ]
        );
    }
}
