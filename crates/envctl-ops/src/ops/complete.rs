//! What the shell completions (`crate::complete`) ask of the daemon: envctl's running
//! containers on the daemon the user chose, within a short wait, and whether a container's
//! name is one Docker accepts. Kept here so the completions, like the commands, reach the
//! engine and the docker CLI's configuration only through `ops`.
//!
//! A completion has nowhere to report an error: every failure here is `None`, and the
//! completions then offer the profiles alone.

use std::time::Duration;

use crate::context::Environment;
use crate::facts::container::ContainerSummary;

/// How long a completion may wait for the daemon before offering profiles alone.
const DAEMON_WAIT: Duration = Duration::from_millis(500);

/// envctl's running containers on the daemon the user chose, as `environment` chooses it
/// (no `-H`/`--context`: a completion sees no flags); `None` when no daemon can be chosen
/// or it cannot be asked in time. A choice that cannot be followed offers no containers,
/// never the default socket's in its place.
pub fn running_containers(environment: &Environment) -> Option<Vec<ContainerSummary>> {
    let choice = crate::host::docker_config::choose(&environment.daemon_inputs(None, None)).ok()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    runtime.block_on(async {
        // Over TLS where the choice asks for it: never a request in cleartext there.
        let engine = crate::engine::Engine::connect_to(&choice, DAEMON_WAIT).ok()?;
        match tokio::time::timeout(DAEMON_WAIT, engine.list_containers(false, true)).await {
            Ok(Ok(containers)) => Some(containers),
            _ => None,
        }
    })
}

/// Whether `name` passes Docker's container-name rule (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`, with
/// the optional leading `/` the daemon's lists write): past that `/`, such a name has no
/// meaning to a shell.
pub fn is_plain_container_name(name: &str) -> bool {
    crate::engine::reference::is_plain_name(name)
}
