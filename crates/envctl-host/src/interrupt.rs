//! The first SIGINT or SIGTERM, as waits that cannot select on a signal see it.
//!
//! `ops::wait::termination_signal` notes the signal here when it receives it. A wait that
//! runs on a thread of its own (the GPU placement lock, taken in `spawn_blocking`) polls
//! [`received`] between its tries and gives up at once: tokio's runtime waits for such
//! threads when it is dropped, so a wait that did not look would keep the process alive
//! past the signal, for as long as it was willing to wait.

use std::sync::atomic::{AtomicU8, Ordering};

/// The exit code of the signal received (130 for SIGINT, 143 for SIGTERM); 0 for none.
static RECEIVED: AtomicU8 = AtomicU8::new(0);

/// Notes that a termination signal arrived; `code` is the exit code it gives (130 or 143).
/// The first one counts.
pub fn note(code: u8) {
    let _first = RECEIVED.compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
}

/// The exit code of the termination signal received so far, if any.
pub fn received() -> Option<u8> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        code => Some(code),
    }
}
