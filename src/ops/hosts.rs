//! Several daemons in one view (issue 27, item 5): `ps --hosts a,b,c`. Each host is a
//! docker CLI context name or an endpoint URL (`tcp://…`, `ssh://…`, `unix://…`), chosen
//! as `--context NAME` or `-H URL` would choose it (so a URL takes TLS from
//! `DOCKER_TLS_VERIFY`/`DOCKER_CERT_PATH` as `-H` does), and every host is asked at once,
//! each with the deadlines one daemon gets. A host that cannot be chosen or reached is a
//! result that says why, never a failed command.

use std::future::Future;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::host::docker_config::DaemonChoice;

/// One host as the user named it, and the daemon that name chooses.
#[derive(Debug, Clone)]
pub struct Host {
    /// As given: `gpu2`, `ssh://me@gpu3`.
    pub name: String,
    pub choice: Result<DaemonChoice, crate::host::docker_config::DaemonChoiceError>,
}

impl Host {
    /// The endpoint, or the name when none could be chosen.
    pub fn endpoint(&self) -> &str {
        self.choice
            .as_ref()
            .map_or(self.name.as_str(), |choice| choice.endpoint.as_str())
    }
}

/// What one host answered: the value, or why there is none.
pub struct Answer<T> {
    pub host: Host,
    pub result: Result<T, Error>,
}

/// The hosts `names` name (the `--hosts` list, already split at commas): an empty name, a
/// name given twice, or `--hosts` with `-H`/`--context` is a usage error.
pub fn named(context: &Context, names: &[String]) -> Result<Vec<Host>, Error> {
    if context.host_flag.is_some() || context.context_flag.is_some() {
        return Err(Error::Usage {
            message: "--hosts names the daemons itself: give it, or -H/--context, not both".into(),
            hint: Some("put the daemon of -H/--context into the --hosts list".into()),
        });
    }
    let mut hosts: Vec<Host> = Vec::new();
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::Usage {
                message: "--hosts has an empty name".into(),
                hint: Some(
                    "--hosts takes context names or URLs separated by commas: `--hosts gpu1,ssh://me@gpu2`"
                        .into(),
                ),
            });
        }
        if hosts.iter().any(|host| host.name == name) {
            return Err(Error::Usage {
                message: format!("--hosts names `{name}` twice"),
                hint: Some("name each host once".into()),
            });
        }
        let (host_flag, context_flag) = if name.contains("://") {
            (Some(name.to_string()), None)
        } else {
            (None, Some(name.to_string()))
        };
        let choice = crate::host::docker_config::choose(
            &context.environment.daemon_inputs(host_flag, context_flag),
        );
        hosts.push(Host {
            name: name.to_string(),
            choice,
        });
    }
    Ok(hosts)
}

/// `ask` of every host at once: a connection each (checked with a ping and identified, as
/// `Context::engine` does for one), then `ask`. The answers come in the hosts' order.
pub async fn each<T, F, Fut>(hosts: &[Host], timeout: std::time::Duration, ask: F) -> Vec<Answer<T>>
where
    F: Fn(Engine) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let ask = &ask;
    futures_util::future::join_all(hosts.iter().map(|host| async move {
        let result = async {
            let choice = host
                .choice
                .clone()
                .map_err(|error| Error::Engine(error.into()))?;
            let engine = Engine::connect_to(&choice, timeout)?;
            engine.ping().await?;
            engine
                .identify_by_ping(crate::engine::PING_TIMEOUT.min(timeout))
                .await?;
            ask(engine).await
        }
        .await;
        Answer {
            host: host.clone(),
            result,
        }
    }))
    .await
}
