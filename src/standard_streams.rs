//! Whether stdout was closed when the process started (`envctl ps >&-`).
//!
//! Rust's runtime puts `/dev/null` on a closed standard stream before `main` runs (so
//! that no file the program opens takes descriptor 1), and from then on every write
//! "succeeds": `ps >&-` exited 0 having shown nothing. Afterwards the replacement cannot
//! be told from a `/dev/null` the caller chose (Python's `DEVNULL` and Go's nil stdout
//! open it the same way), so the question is asked earlier: a function in `.init_array`,
//! which the dynamic loader runs before the runtime's set-up, looks at descriptor 1 once.
//!
//! This is the crate's only unsafe code: placing a function in `.init_array` is unsafe
//! (the loader calls it with no Rust runtime around it) and so is naming a descriptor by
//! its number. The function only asks the kernel one question and stores the answer.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// Set before `main` when descriptor 1 was not open.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether descriptor 1 was closed when the process started.
pub fn stdout_was_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_STDOUT_BEFORE_THE_RUNTIME: extern "C" fn() = check_stdout;

#[cfg(target_os = "linux")]
extern "C" fn check_stdout() {
    // SAFETY: the descriptor is only borrowed for one `fcntl(F_GETFD)`, which reads its
    // flags and fails with EBADF when it is not open; nothing is read, written or closed.
    let stdout = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
    if rustix::io::fcntl_getfd(stdout) == Err(rustix::io::Errno::BADF) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}
