//! Which containers hold GPUs, as the engine stored their requests: what GPU placement
//! and doctor's occupancy read. Filled by `engine::occupancy`; judged by the pure
//! `container_plan::placement`.

use serde::Serialize;

use super::container::GpuAssignment;

/// One container that was given GPUs and may use them: created, running, paused or
/// restarting (an exited container holds nothing until it is started again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuHolder {
    pub id: String,
    pub name: String,
    /// The engine's word: `created`, `running`, `paused`, `restarting`.
    pub state: String,
    /// The envctl profile it was made from, when envctl made it.
    pub profile: Option<String>,
    /// The user whose `envctl up` made it (label `envctl.user`), when envctl made it.
    pub user: Option<String>,
    /// The real uid of whoever made it (label `envctl.uid`), when envctl made it; the uid
    /// decides whose it is, the name is for messages.
    pub uid: Option<u32>,
    /// Who the daemon's transport proved its maker to be (label `envctl.identity`): when
    /// there, it decides whose it is, before the uid.
    pub identity: Option<String>,
    /// What it asked for: `all`, a count, or device names (indexes, `GPU-…` UUIDs, or
    /// `MIG-…` instances), from `DeviceRequests` and CDI names (`nvidia.com/gpu=…`).
    pub gpus: GpuAssignment,
}
