//! Waiting: for a termination signal, and for what another process holds (a lock) by one
//! rule — bounded, said on stderr after a second, ended by the first SIGINT or SIGTERM
//! with nothing taken. In `ops` so that both commands (`envctl lock`'s project lock) and
//! operations (`up`'s GPU placement lock) wait the same way.

use crate::context::Context;

/// Waits for SIGINT or SIGTERM and gives the exit code a shell would report: 130 or 143.
/// Never ends when the handlers cannot be installed.
pub async fn termination_signal() -> u8 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending::<u8>().await;
    };
    let code = tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    };
    // Waits on threads of their own (the GPU placement lock) see it and give up.
    crate::interrupt::note(code);
    code
}

/// How a [`wait_for`] ended, when it did not fail.
pub enum Waited<T> {
    Got(T),
    /// A termination signal arrived first: its exit code (130 or 143). Nothing was taken.
    Signalled(u8),
}

/// A wait says so on stderr once it has lasted this long.
const SAY_WAITING_AFTER: std::time::Duration = std::time::Duration::from_secs(1);
/// How often a wait tries again.
const WAIT_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// Waits for what another process holds (a lock) by one rule: `try_take` is tried until it
/// gives it, for at most `limit` (then `timed_out` is the error); after a second `waiting`
/// is said on stderr, so a wait is never silent; the first SIGINT or SIGTERM ends it with
/// nothing taken.
pub async fn wait_for<T, E>(
    waiting: &str,
    limit: std::time::Duration,
    context: &Context,
    mut try_take: impl FnMut() -> Result<Option<T>, E>,
    timed_out: impl FnOnce() -> E,
) -> Result<Waited<T>, E> {
    let started = std::time::Instant::now();
    let signal = termination_signal();
    tokio::pin!(signal);
    let mut said = false;
    loop {
        if let Some(taken) = try_take()? {
            return Ok(Waited::Got(taken));
        }
        let waited = started.elapsed();
        if waited >= limit {
            return Err(timed_out());
        }
        if !said && waited >= SAY_WAITING_AFTER {
            context.printer.warn(waiting);
            said = true;
        }
        tokio::select! {
            () = tokio::time::sleep(WAIT_RETRY) => {}
            code = &mut signal => return Ok(Waited::Signalled(code)),
        }
    }
}
