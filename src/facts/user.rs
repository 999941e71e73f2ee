//! Who runs envctl: filled by `host::user`, compared by `spec::ownership` and the host
//! policy.

/// The user envctl runs as.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct User {
    /// The real uid; `None` when `/proc/self/status` could not be read.
    pub uid: Option<u32>,
    /// The login name, the uid's number when no database names it, or `unknown user`.
    pub name: String,
}
