//! `stats --hosts a,b,c` without `--once`: the live team view. Every host is followed on
//! its own, as plain `stats` follows one daemon (`follow::follow`: the interval loop, its
//! streams and cgroup reads, its reconnection schedule), and each host's latest snapshot
//! is kept on a board. Every interval the board is read as it stands (`HostsSnapshot`):
//! a host's rows when its snapshot is fresh, else a row saying why there are none — it
//! could not be reached (the error with its causes, tried again on the `reconnect`
//! schedule), its daemon was lost (the follow loop's failure), or no snapshot came within
//! the host's deadline (a daemon that hangs). A slow host therefore never delays the
//! others' rows: nothing waits for it but its own loop.
//!
//! Connections are made [`HOSTS_AT_ONCE`](crate::ops::hosts::HOSTS_AT_ONCE) at a time (the
//! `--hosts` fan-out bound: an ssh host's handshake is a process), each with the deadlines
//! one daemon gets; once connected, a host costs what one `stats` of it costs.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use super::follow::{self, DaemonState, Ended, FollowOptions, FollowView, Outputs};
use super::hosts::Choice;
use super::reconnect::{RECONNECT_CAP, RECONNECT_FIRST};
use super::sampler::{self, CounterSource, Gpus, Selection};
use super::serve::StatsServer;
use crate::error::Error;
use crate::monitor::Snapshot;
use crate::monitor::team::{self, HostsSnapshot, Unreachable};
use crate::ops::hosts::{HOSTS_AT_ONCE, Host};

/// How the team view runs.
pub struct TeamOptions {
    pub interval: Duration,
    /// Stop after this many views.
    pub count: Option<u64>,
    pub choice: Choice,
    pub source: CounterSource,
    /// The deadline of each connection and request, as one daemon gets.
    pub timeout: Duration,
    /// How old a host's latest snapshot may be before its row says it stopped answering.
    pub deadline: Duration,
    /// This machine's name (the metrics' `Hostname` of a daemon of this machine).
    pub hostname: Option<String>,
    pub clock: crate::context::Clock,
}

/// How long a host may go without a snapshot before its row says it stopped answering:
/// two intervals and the time one request to it may take, so a daemon that answers late
/// now and then is not flagged, and a hung one is within seconds.
pub fn deadline_for(interval: Duration) -> Duration {
    (interval * 2 + Duration::from_secs(3)).max(Duration::from_secs(5))
}

/// Where the team view's results go.
pub trait TeamView {
    /// View number `taken` (from 1); an error ends the loop with it.
    fn show(&mut self, team: &HostsSnapshot, taken: u64) -> Result<(), Error>;
    /// A write [`TeamView::show`] left to another thread (`FollowView::pending_write`).
    fn pending_write(&mut self) -> Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
        None
    }
}

/// One host on the board.
struct Member {
    host: Host,
    state: MemberState,
    /// When its state last changed (a snapshot, a failure).
    updated: Instant,
    /// The name of the machine its daemon runs on, once connected.
    hostname: Option<String>,
    here: bool,
}

enum MemberState {
    Waiting,
    Sampled(Box<Snapshot>),
    Failed(Unreachable),
}

type Board = RefCell<Vec<Member>>;

/// The board as it stands at `time`.
fn read_board(board: &Board, time: f64, deadline: Duration) -> HostsSnapshot {
    let mut team = HostsSnapshot::new(time);
    for member in board.borrow().iter() {
        let name = member.host.name.as_str();
        let endpoint = member.host.endpoint();
        let silent = member.updated.elapsed();
        match &member.state {
            MemberState::Sampled(_) if silent > deadline => team.push_unreachable(
                name,
                endpoint,
                team::stopped_answering(true, silent.as_secs(), deadline.as_secs()),
            ),
            MemberState::Waiting if silent > deadline => team.push_unreachable(
                name,
                endpoint,
                team::stopped_answering(false, silent.as_secs(), deadline.as_secs()),
            ),
            MemberState::Sampled(snapshot) => team.push_sampled(
                name,
                endpoint,
                member.hostname.as_deref(),
                (**snapshot).clone(),
                member.here,
            ),
            MemberState::Waiting => team.push_waiting(name, endpoint),
            MemberState::Failed(why) => team.push_unreachable(name, endpoint, why.clone()),
        }
    }
    team
}

/// Why `error` keeps a host from being sampled: its chain, kind and hint.
pub fn unreachable(error: &Error) -> Unreachable {
    Unreachable {
        error: crate::error::error_chain(error),
        kind: match error {
            Error::Engine(engine) => engine.kind(),
            _ => "other",
        },
        hint: error.hint(),
    }
}

/// Follows every host until `stop` finishes or `options.count` views are shown; each
/// view goes to `view` and, with `--serve`, to `server`.
pub async fn follow_team<S>(
    hosts: &[Host],
    local_gpus: &Gpus,
    options: &TeamOptions,
    server: Option<&StatsServer>,
    view: &mut dyn TeamView,
    stop: impl Future<Output = S>,
) -> Result<Ended<S>, Error> {
    let board: Board = RefCell::new(
        hosts
            .iter()
            .map(|host| Member {
                host: host.clone(),
                state: MemberState::Waiting,
                updated: Instant::now(),
                hostname: None,
                here: false,
            })
            .collect(),
    );
    let connecting = tokio::sync::Semaphore::new(HOSTS_AT_ONCE);
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let members = futures_util::future::join_all(hosts.iter().enumerate().map(|(index, host)| {
        let mut stopped = stopped.clone();
        let board = &board;
        let connecting = &connecting;
        async move {
            let stop = async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            watch_host(index, host, board, connecting, local_gpus, options, stop).await;
        }
    }));
    let shown = async {
        let outcome = show_board(&board, options, server, view, stop).await;
        // Every host's loop is told to end with the view…
        let _ = stopping.send(true);
        outcome
    };
    // …and is not waited for: a host in the middle of a request that hangs (its container
    // list waits up to 10 s) must not hold `q` or a signal up. The hosts' loops end with
    // this future, their streams with the runtime.
    let members = async move {
        members.await;
        std::future::pending::<std::convert::Infallible>().await
    };
    match futures_util::future::select(std::pin::pin!(shown), std::pin::pin!(members)).await {
        futures_util::future::Either::Left((outcome, _)) => outcome,
        futures_util::future::Either::Right((never, _)) => match never {},
    }
}

/// Every interval, the board to `view` and `server`, until `stop` or the count.
async fn show_board<S>(
    board: &Board,
    options: &TeamOptions,
    server: Option<&StatsServer>,
    view: &mut dyn TeamView,
    stop: impl Future<Output = S>,
) -> Result<Ended<S>, Error> {
    // Half an interval after the hosts' own loops, whose first snapshots come one interval
    // in: the first view has them.
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + options.interval + options.interval / 2,
        options.interval,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop = std::pin::pin!(stop);
    let mut taken = 0_u64;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            stopped = &mut stop => return Ok(Ended::Stopped(stopped)),
        }
        let team = read_board(board, sampler::now(options.clock), options.deadline);
        taken += 1;
        if let Some(server) = server {
            server.publish_team(&team);
        }
        view.show(&team, taken)?;
        if let Some(pending) = view.pending_write() {
            let written = tokio::select! {
                written = pending => written,
                stopped = &mut stop => return Ok(Ended::Stopped(stopped)),
            };
            match written {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Err(Error::Output(error)),
                Err(_) => return Err(Error::Internal("the stdout writer thread ended".into())),
            }
        }
        if options.count.is_some_and(|count| taken >= count) {
            return Ok(Ended::Counted);
        }
    }
}

/// One host's loop: connect (a turn among [`HOSTS_AT_ONCE`]), choose its containers and
/// follow them, its snapshots to the board; a failure to the board, and a new try on the
/// `reconnect` schedule, until `stop`.
async fn watch_host(
    index: usize,
    host: &Host,
    board: &Board,
    connecting: &tokio::sync::Semaphore,
    local_gpus: &Gpus,
    options: &TeamOptions,
    stop: impl Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    let mut delay = RECONNECT_FIRST;
    let elsewhere = Gpus::Elsewhere;
    // "Yours" on this host: who its transport proves the user to be (learnt once).
    let owner = tokio::select! {
        owner = super::hosts::owner_on(host, &options.choice) => owner,
        () = &mut stop => return,
    };
    let owner = &owner;
    loop {
        let connected = tokio::select! {
            connected = connect(host, connecting, options, owner.as_ref()) => connected,
            () = &mut stop => return,
        };
        let failure = match connected {
            Ok((engine, where_, selection)) => {
                delay = RECONNECT_FIRST;
                let here = place_on_board(board, index, &where_, options);
                let gpus = if here { local_gpus } else { &elsewhere };
                let follow_options = FollowOptions {
                    interval: options.interval,
                    count: None,
                    all: !options.choice.only_envctl,
                    owner: owner.clone(),
                    source: options.source,
                    hostname: None,
                    clock: options.clock,
                };
                let mut member_view = MemberView { board, index };
                let followed = follow::follow(
                    &engine,
                    gpus,
                    selection,
                    &follow_options,
                    Outputs::default(),
                    &mut member_view,
                    &mut stop,
                )
                .await;
                match followed {
                    Ok(_) => return,
                    Err(error) => error,
                }
            }
            Err(error) => error,
        };
        mark_failed(board, index, &failure);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = &mut stop => return,
        }
        delay = (delay * 2).min(RECONNECT_CAP);
    }
}

/// A connection to one host, where its daemon runs, and the containers chosen on it.
type Connected = (
    crate::engine::Engine,
    Result<crate::facts::engine::DaemonHost, crate::engine::EngineError>,
    Selection,
);

/// One try at `host`: waits for a connection turn, connects, and asks where its daemon
/// runs and which containers to follow (those of `owner`, or envctl's, as chosen).
async fn connect(
    host: &Host,
    connecting: &tokio::sync::Semaphore,
    options: &TeamOptions,
    owner: Option<&crate::facts::user::User>,
) -> Result<Connected, Error> {
    // A closed semaphore cannot happen (it is never closed); going on unbounded
    // would be the wrong answer to it, so it counts as a failed try.
    let _turn = connecting
        .acquire()
        .await
        .map_err(|_| Error::Internal("the connection turns ended".into()))?;
    let mut answers = crate::ops::hosts::each(
        std::slice::from_ref(host),
        options.timeout,
        |engine| async move {
            let where_ = engine.daemon_host().await;
            let selection = Selection {
                targets: sampler::list_targets(&engine, options.choice.only_envctl, None, owner)
                    .await?,
                fixed: None,
                failures: Vec::new(),
            };
            Ok::<_, Error>((engine, where_, selection))
        },
    )
    .await;
    answers.pop().map_or_else(
        || Err(Error::Internal("no answer for the host".into())),
        |answer| answer.result,
    )
}

/// Puts where the host's daemon runs (`where_`) on its row of the board; `true` where it
/// is this machine.
fn place_on_board(
    board: &Board,
    index: usize,
    where_: &Result<crate::facts::engine::DaemonHost, crate::engine::EngineError>,
    options: &TeamOptions,
) -> bool {
    let (here, hostname) = match where_ {
        Ok(crate::facts::engine::DaemonHost::ThisHost) => (true, options.hostname.clone()),
        Ok(crate::facts::engine::DaemonHost::Elsewhere { name }) => (false, Some(name.clone())),
        // Where it runs is unknown: its GPUs are not this machine's to show.
        Err(_) => (false, None),
    };
    let mut members = board.borrow_mut();
    members[index].here = here;
    members[index].hostname = hostname;
    here
}

/// Marks the host's row failed with why, as of now.
fn mark_failed(board: &Board, index: usize, failure: &Error) {
    let mut members = board.borrow_mut();
    members[index].state = MemberState::Failed(unreachable(failure));
    members[index].updated = Instant::now();
}

/// A followed host's snapshots, onto its place on the board.
struct MemberView<'a> {
    board: &'a Board,
    index: usize,
}

impl FollowView for MemberView<'_> {
    // The loss and the return are in the snapshots' failures, which the board reads.
    fn daemon_lost(&mut self, _lost: &DaemonState) {}
    fn daemon_back(&mut self, _back: &DaemonState) {}

    fn show(&mut self, snapshot: &Snapshot, _taken: u64) -> Result<(), Error> {
        let mut members = self.board.borrow_mut();
        members[self.index].state = MemberState::Sampled(Box::new(snapshot.clone()));
        members[self.index].updated = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_leaves_room_for_two_intervals_and_a_request() {
        assert_eq!(deadline_for(Duration::from_secs(1)), Duration::from_secs(5));
        assert_eq!(
            deadline_for(Duration::from_secs(5)),
            Duration::from_secs(13)
        );
    }
}
