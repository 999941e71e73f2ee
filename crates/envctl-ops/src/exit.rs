//! envctl's exit codes, a documented contract: 0 ok (warnings allowed), 1 a check failed
//! or the request cannot be met, 2 usage error, invalid input or internal error.

/// How a command ended; `main` turns it into the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done, possibly with warnings.
    Success,
    /// 1: a check failed, or the request cannot be met.
    Failure,
    /// 2: usage error, invalid profile or input, internal error.
    Error,
    /// A child command's own code (`exec`).
    External(u8),
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
            ExitStatus::External(code) => code,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        std::process::ExitCode::from(status.code())
    }
}
