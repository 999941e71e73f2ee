//! What one run made, and its removal when the run ends before it started it: on an
//! error, on Ctrl-C or SIGTERM ([`clean_up`]), or on a refusing preflight
//! ([`discard_unstarted`]). [`RunState`] records the container created, the creates still
//! in flight and the daemon's placement lock held, so that only this run's own
//! half-made container is removed.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::RUN_LABEL;
use crate::context::Context;
use crate::engine::Engine;
use crate::ops::placement;

/// How long an interrupted run waits for a create already sent, so that it can remove
/// what the daemon made (a create takes ~20 ms; the 2 s exit promise leaves room).
const IN_FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// What this run created, so an interruption removes only its own half-made container.
#[derive(Debug)]
pub struct RunState {
    pub(super) created: Option<String>,
    pub(super) started: bool,
    /// This run's value of [`RUN_LABEL`]: the process id and 64 random bits.
    pub(super) run_id: String,
    /// Creates sent and not yet answered. They run as tasks of their own, so an
    /// interruption that drops `up` cannot drop a create the daemon is carrying out.
    pub(super) creates_in_flight: Arc<AtomicUsize>,
    /// `--recreate` removed the old container of this name: an interruption before the new
    /// one starts leaves neither, which is said.
    pub(super) replaced: Option<String>,
    /// The daemon's placement lock this run holds (`ops::placement::Held::daemon`), until
    /// released: whatever ends the run releases it.
    pub(super) placement_lock: Option<String>,
}

impl RunState {
    /// What an interruption leaves behind, when it is more than "nothing was made".
    pub fn interrupted_summary(&self) -> Option<String> {
        let name = self.replaced.as_ref()?;
        (!self.started).then(|| {
            format!(
                "interrupted: `--recreate` had removed the old `{name}`, and the new one was not started (nothing of that name is left); run the same `envctl up` again"
            )
        })
    }
}

impl Default for RunState {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded from the operating system's randomness once per process.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        RunState {
            created: None,
            started: false,
            run_id: format!("{}-{random:016x}", std::process::id()),
            creates_in_flight: Arc::new(AtomicUsize::new(0)),
            replaced: None,
            placement_lock: None,
        }
    }
}

/// Removes the container this run created when it did not get to start it: the one whose
/// id came back, and any carrying this run's [`RUN_LABEL`] (a create whose answer was
/// lost to the interruption), after waiting briefly for creates still in flight.
pub async fn clean_up(engine: &Engine, state: &Rc<RefCell<RunState>>, context: &Context) {
    let (started, created, run_id, in_flight) = {
        let state = state.borrow();
        (
            state.started,
            state.created.clone(),
            state.run_id.clone(),
            state.creates_in_flight.clone(),
        )
    };
    release_placement_lock(engine, state, context).await;
    // A lock whose create a signal cut short is found by this run's label.
    match engine.placement_locks_of(&run_id).await {
        Ok(locks) => {
            for id in locks {
                placement::release_daemon_lock(engine, &id, context).await;
            }
        }
        Err(error) => context.printer.warn(&format!(
            "could not look for a GPU placement lock this run took: {error}"
        )),
    }
    if started {
        return;
    }
    let waited_from = tokio::time::Instant::now();
    while in_flight.load(Ordering::SeqCst) > 0 && waited_from.elapsed() < IN_FLIGHT_WAIT {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let mut ours: Vec<String> = created.into_iter().collect();
    match engine
        .containers_labelled(&format!("{RUN_LABEL}={run_id}"))
        .await
    {
        Ok(labelled) => {
            for id in labelled {
                if !ours.iter().any(|known| known == &id) {
                    ours.push(id);
                }
            }
        }
        Err(error) => context.printer.warn(&format!(
            "could not look for containers this run created (label {RUN_LABEL}={run_id}): {error}"
        )),
    }
    for id in ours {
        match engine.remove_container(&id, true, true).await {
            Ok(()) => context
                .printer
                .info("removed the container this run created but did not start"),
            Err(error) => context.printer.warn(&format!(
                "could not remove the half-made container {id}: {error} (`{} rm -f {id}`)",
                engine.known_kind().cli()
            )),
        }
    }
}

/// Releases the daemon's placement lock when this run still holds it.
pub(super) async fn release_placement_lock(
    engine: &Engine,
    state: &Rc<RefCell<RunState>>,
    context: &Context,
) {
    let held = state.borrow_mut().placement_lock.take();
    if let Some(id) = held {
        placement::release_daemon_lock(engine, &id, context).await;
    }
}

/// The preflight refused: remove what `prepare` created, quietly (the user never asked
/// for it to exist), and say so only when the daemon would not remove it.
pub(super) async fn discard_unstarted(
    engine: &Engine,
    state: &Rc<RefCell<RunState>>,
    context: &Context,
) {
    let created = state.borrow_mut().created.take();
    if let Some(id) = created
        && let Err(error) = engine.remove_container(&id, true, true).await
    {
        context.printer.warn(&format!(
            "could not remove the container {id} created before the preflight refused: {error} (`{} rm -f {id}`)",
            engine.known_kind().cli()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a `--recreate` that removed the old container and did not start the new one
    /// leaves something to say after an interruption.
    #[test]
    fn an_interrupted_recreate_is_said() {
        let mut state = RunState::default();
        assert_eq!(state.interrupted_summary(), None);
        state.replaced = Some("envctl-web".into());
        let said = state.interrupted_summary().unwrap();
        assert!(said.contains("`envctl-web`"), "{said}");
        assert!(said.contains("run the same `envctl up` again"), "{said}");
        state.started = true;
        assert_eq!(state.interrupted_summary(), None);
    }

    /// Each run's label value is its own, led by the process id: a clean-up never takes
    /// another run's containers for its own.
    #[test]
    fn each_run_labels_what_it_makes_with_its_own_value() {
        let (first, second) = (RunState::default(), RunState::default());
        assert_ne!(first.run_id, second.run_id);
        let (pid, random) = first.run_id.split_once('-').unwrap();
        assert_eq!(pid, std::process::id().to_string());
        assert_eq!(random.len(), 16);
        assert!(random.chars().all(|digit| digit.is_ascii_hexdigit()));
        assert!(first.created.is_none() && !first.started && first.placement_lock.is_none());
        assert_eq!(first.creates_in_flight.load(Ordering::SeqCst), 0);
    }
}
