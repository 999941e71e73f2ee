//! `envctl policy push|show|remove`: the admin's policy kept at the daemon
//! (`engine::daemon_policy`), so that every client of a GPU server obeys it from any
//! machine (issue 38, item 3), where a file on the server binds only those who run envctl
//! there. What is in force for a container is `ops::policy::all_in_force`: the daemon's
//! and this machine's file, each of which it must pass.
//!
//! Whoever may use the daemon's socket may push, as they may run any container: the
//! socket is root-equivalent, and the policy is a team's guard-rail, not a boundary
//! (docs/shared-servers.md).

use serde::Serialize;

use crate::context::Context;
use crate::engine::Engine;
use crate::engine::daemon_policy::{DaemonPolicyVolume, POLICY_NAME};
use crate::error::Error;
use crate::policy::{self, Policy, PolicyReport};

/// What `policy push` did.
#[derive(Debug, Serialize)]
pub struct Pushed {
    /// The file pushed, as the user named it.
    pub file: String,
    /// The daemon's endpoint.
    pub endpoint: String,
    /// Whether it replaced an earlier pushed policy.
    pub replaced: bool,
    pub policy: PolicyReport,
}

/// Checks the policy at `file` and keeps it at the daemon, replacing envctl's earlier one;
/// a volume of the policy's name that envctl did not make is never replaced.
pub async fn push(file: &str, context: &Context) -> Result<Pushed, Error> {
    let Some(text) = policy::read_text(std::path::Path::new(file), file)? else {
        return Err(Error::Usage {
            message: format!("no policy file `{}`", crate::ui::text::shown(file)),
            hint: Some(
                "name the policy file to push: `envctl policy push policy.toml` (docs/shared-servers.md describes its format)"
                    .into(),
            ),
        });
    };
    if text.len() > crate::ops::policy::MAXIMUM_PUSHED_BYTES {
        return Err(Error::Usage {
            message: format!(
                "the policy `{}` is {} bytes; a policy pushed to a daemon is limited to {} KiB",
                crate::ui::text::shown(file),
                text.len(),
                crate::ops::policy::MAXIMUM_PUSHED_BYTES / 1024
            ),
            hint: Some("a policy needs a few lines: remove what is not a rule".into()),
        });
    }
    // A policy no client could use is refused here, with its places, not at every `up`.
    let mut checked = policy::parse(file, &text)?;
    let engine = context.engine().await?;
    let replaced = match engine.daemon_policy().await? {
        DaemonPolicyVolume::NotEnvctls => return Err(taken(&engine)),
        DaemonPolicyVolume::Envctls { .. } => true,
        DaemonPolicyVolume::Missing => false,
    };
    let pushed_by = format!(
        "{}@{}",
        context.user.name,
        crate::host::hostname().unwrap_or_else(|_| "an unnamed host".into())
    );
    let pushed_at = crate::time::timestamp(context.environment.now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    engine
        .write_daemon_policy(&text, &pushed_by, &pushed_at)
        .await?;
    checked.origin = policy::Origin::Daemon {
        endpoint: engine.endpoint().to_string(),
        pushed_by: Some(pushed_by),
        pushed_at: Some(pushed_at),
    };
    Ok(Pushed {
        file: file.to_string(),
        endpoint: engine.endpoint().to_string(),
        replaced,
        policy: PolicyReport::from(&checked),
    })
}

/// The policies in force for a container made through this command's daemon, as
/// `policy show` lists them: the daemon's pushed one, then this machine's file.
#[derive(Debug, Serialize)]
pub struct Shown {
    pub endpoint: String,
    pub policies: Vec<PolicyReport>,
}

/// Reads every policy in force. A policy that cannot be used is an error, as `up` would
/// refuse for it.
pub async fn show(context: &Context) -> Result<Shown, Error> {
    let engine = context.engine().await?;
    let policies: Vec<Policy> = crate::ops::policy::all_in_force(context, Some(&engine)).await?;
    Ok(Shown {
        endpoint: engine.endpoint().to_string(),
        policies: policies.iter().map(PolicyReport::from).collect(),
    })
}

/// What `policy remove` did.
#[derive(Debug, Serialize)]
pub struct Removed {
    pub endpoint: String,
    /// Whether a pushed policy was there to remove.
    pub removed: bool,
}

/// Removes the daemon's pushed policy; none there is not an error. A volume of the
/// policy's name that envctl did not make is never removed.
pub async fn remove(context: &Context) -> Result<Removed, Error> {
    let engine = context.engine().await?;
    let removed = match engine.daemon_policy().await? {
        DaemonPolicyVolume::NotEnvctls => return Err(taken(&engine)),
        DaemonPolicyVolume::Missing => false,
        DaemonPolicyVolume::Envctls { .. } => {
            engine.remove_daemon_policy().await?;
            true
        }
    };
    Ok(Removed {
        endpoint: engine.endpoint().to_string(),
        removed,
    })
}

/// The refusal for a volume of the policy's name that envctl did not make.
fn taken(engine: &Engine) -> Error {
    Error::VolumeTaken {
        name: POLICY_NAME.to_string(),
        endpoint: engine.endpoint().to_string(),
        cli: engine.known_kind().cli(),
    }
}
