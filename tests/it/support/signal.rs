//! Signalling a child envctl and waiting for it with a limit: what the signal tests of
//! `up`, `exec` and `stats` share.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// `kill -SIGNAL PID` (`INT`, `TERM`); whether it was delivered (false once the process
/// has ended).
pub fn send(child: &Child, signal: &str) -> bool {
    std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .is_ok_and(|status| status.success())
}

/// The child's exit status if it ends within `limit`; otherwise it is killed, reaped, and
/// `None` comes back for the caller to fail with its own words.
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if started.elapsed() <= limit => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
