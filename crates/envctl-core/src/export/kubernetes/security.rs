//! How the container's process runs: its user as a `securityContext` (numeric ids only),
//! `--init` as `shareProcessNamespace`, the IPC namespace, and the ulimits a pod cannot
//! set; each setting Kubernetes cannot say as `up` does gets a notice.

use super::Notices;
use super::objects::SecurityContext;
use crate::export::view::BodyView;
use crate::profile::model::Ipc;

/// The pod- and container-level settings of the process.
#[derive(Debug)]
pub(super) struct Process {
    pub(super) security_context: Option<SecurityContext>,
    /// The pause process as PID 1, in place of `--init`.
    pub(super) share_process_namespace: Option<bool>,
    /// `hostIPC`.
    pub(super) host_ipc: bool,
}

pub(super) fn process(view: &BodyView<'_>, notices: &mut Notices) -> Process {
    let security_context = security_context(view.user, notices);
    let share_process_namespace = share_process_namespace(view.init, notices);
    ipc_notices(view, notices);
    ulimit_notice(view, notices);
    Process {
        security_context,
        share_process_namespace,
        host_ipc: view.host_ipc(),
    }
}

fn security_context(user: Option<&str>, notices: &mut Notices) -> Option<SecurityContext> {
    let user = user?;
    match numeric_user(user) {
        Some((uid, gid)) => Some(SecurityContext {
            capabilities: None,
            run_as_user: Some(uid),
            run_as_group: gid,
        }),
        None => {
            notices.add(
                "user",
                format!(
                    "Kubernetes runs as numeric ids only: `{user}` is not set, the image's user runs; write `user = \"UID:GID\"`"
                ),
            );
            None
        }
    }
}

fn share_process_namespace(init: Option<bool>, notices: &mut Notices) -> Option<bool> {
    if init != Some(true) {
        return None;
    }
    notices.add(
        "init",
        "Kubernetes has no `--init`: `shareProcessNamespace` makes the pod's pause process PID 1 instead, so the command still stops at once on SIGTERM",
    );
    Some(true)
}

fn ipc_notices(view: &BodyView<'_>, notices: &mut Notices) {
    match view.ipc {
        Some(Ipc::Shareable) => notices.add(
            "ipc",
            "a pod's IPC namespace is shared by its own containers only; other pods cannot join it",
        ),
        Some(Ipc::Host) if view.profile_sets_shm_size => notices.add(
            "shm_size",
            "with `ipc = \"host\"` the pod uses the node's /dev/shm (`hostIPC`), whose size the pod cannot set",
        ),
        _ => {}
    }
}

fn ulimit_notice(view: &BodyView<'_>, notices: &mut Notices) {
    if view.ulimits.is_empty() {
        return;
    }
    notices.add(
        "ulimits",
        format!(
            "a pod cannot set ulimits ({}): the node's container runtime defaults apply; configure them there",
            view.written_ulimits().join(", ")
        ),
    );
}

/// `uid` or `uid:gid` as numbers; names have no Kubernetes field.
pub(super) fn numeric_user(user: &str) -> Option<(i64, Option<i64>)> {
    let (uid, gid) = match user.split_once(':') {
        Some((uid, gid)) => (uid, Some(gid)),
        None => (user, None),
    };
    let uid = uid.parse::<i64>().ok()?;
    let gid = match gid {
        Some(gid) => Some(gid.parse::<i64>().ok()?),
        None => None,
    };
    Some((uid, gid))
}
