//! The terminal itself: whether a stream is one, its size, and raw mode for interactive
//! sessions (restored on drop, also when the session ends with an error).

use std::io::IsTerminal;

/// Puts the terminal in raw mode until dropped.
pub struct RawMode {
    enabled: bool,
}

impl RawMode {
    /// Raw mode when stdin is a terminal; a no-op otherwise.
    pub fn enable() -> RawMode {
        let enabled =
            std::io::stdin().is_terminal() && crossterm::terminal::enable_raw_mode().is_ok();
        RawMode { enabled }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if self.enabled {
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }
}

/// (rows, columns) of the controlling terminal, or a classic 24×80.
pub fn size() -> (u16, u16) {
    crossterm::terminal::size().map_or((24, 80), |(columns, rows)| (rows, columns))
}

pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Whether stdin is a pipe, a socket or a regular file: input someone means to pass on
/// (`echo … | envctl run P sh`, `< file`), unlike a terminal or `/dev/null`.
pub fn stdin_is_pipe_or_file() -> bool {
    use std::os::fd::AsFd;
    rustix::fs::fstat(std::io::stdin().as_fd()).is_ok_and(|stat| {
        matches!(
            rustix::fs::FileType::from_raw_mode(stat.st_mode),
            rustix::fs::FileType::Fifo
                | rustix::fs::FileType::Socket
                | rustix::fs::FileType::RegularFile
        )
    })
}

pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}
