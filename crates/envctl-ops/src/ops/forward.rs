//! `envctl forward TARGET [PORT…]`: a running container's published ports on a remote
//! daemon's host, reached from this machine (issue 38, item 5). envctl publishes ports on
//! the host's loopback by default, so a notebook on a GPU server is on the server's
//! 127.0.0.1; this opens `127.0.0.1:PORT` here through the ssh route the connection
//! already takes (`engine::forward`), for as long as the command runs.
//!
//! [`plan`] decides everything (which ports, where they lead, which local port each gets);
//! [`hold`] runs the forward until ssh ends or a signal comes.

use serde::Serialize;

use crate::context::Context;
use crate::engine::Engine;
use crate::engine::forward::{ForwardRoute, PortForward};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::facts::engine::DaemonHost;

/// One forwarded port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forwarded {
    /// The container's port, where the daemon said.
    pub container_port: Option<u16>,
    pub protocol: String,
    /// Where the port is published on the daemon's host.
    pub remote_ip: String,
    pub remote_port: u16,
    /// This machine's port (on 127.0.0.1).
    pub local_port: u16,
}

impl Forwarded {
    /// The address on this machine.
    pub fn local_address(&self) -> String {
        format!("127.0.0.1:{}", self.local_port)
    }

    /// `8888/tcp`, or the host port where the container's is unknown.
    pub fn container_words(&self) -> String {
        match self.container_port {
            Some(port) => format!("container port {port}/{}", self.protocol),
            None => format!("port {}/{}", self.remote_port, self.protocol),
        }
    }
}

/// What `forward` will do.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub container: String,
    /// The daemon's host, as it names itself.
    pub host: String,
    pub endpoint: String,
    /// `false`: the daemon runs on this machine and its ports are here already.
    pub needs_forward: bool,
    pub ports: Vec<Forwarded>,
}

/// The forward for `target`'s published ports (all of them, or those `wanted` names by the
/// container's port or the host's). Refuses a route ssh cannot forward over, a container
/// that does not run or publishes none of them, and a UDP port (ssh forwards TCP only).
pub async fn plan(
    engine: &Engine,
    target: &str,
    wanted: &[u16],
    context: &Context,
) -> Result<Plan, Error> {
    // The route first: over one that cannot forward, the container is not looked for
    // (whose it is can differ by route: a container made over ssh is its ssh user's).
    let host = engine.daemon_host().await?;
    let route = engine.forward_route();
    let needs_forward = needs_forward(engine, &host, &route, target)?;
    let container = crate::ops::target::running_container(engine, context, target).await?;
    let published = published_ports(engine, &container.id, &container.name, || {
        format!("`envctl forward {target}` again")
    })
    .await?;
    let chosen = chosen_ports(&published, wanted, &container.name, target)?;
    let mut ports = Vec::new();
    for port in chosen {
        if port.protocol != "tcp" {
            // ssh forwards TCP only; said, not dropped silently.
            context.printer.warn(&format!(
                "{}/{} is not forwarded: ssh forwards TCP only",
                port.container_port.unwrap_or(port.host_port),
                port.protocol
            ));
            continue;
        }
        ports.push(forwarded(port, needs_forward)?);
    }
    Ok(Plan {
        container: container.name,
        host: match host {
            DaemonHost::ThisHost => "this machine".into(),
            DaemonHost::Elsewhere { name } => name,
        },
        endpoint: engine.endpoint().to_string(),
        needs_forward,
        ports,
    })
}

/// Whether the daemon's ports must be forwarded to reach them here: not where it runs on
/// this machine; over ssh where it is another's; refused over a route ssh cannot forward.
fn needs_forward(
    engine: &Engine,
    host: &DaemonHost,
    route: &ForwardRoute,
    target: &str,
) -> Result<bool, Error> {
    match (host, route) {
        (DaemonHost::ThisHost, _) => Ok(false),
        (DaemonHost::Elsewhere { .. }, ForwardRoute::Ssh { .. }) => Ok(true),
        (DaemonHost::Elsewhere { name }, ForwardRoute::Socket | ForwardRoute::Tcp { .. }) => {
            Err(Error::NoPortRoute {
                endpoint: engine.endpoint().to_string(),
                host: name.clone(),
                target: target.to_string(),
            })
        }
    }
}

/// The published ports `wanted` names (all where it names none); refuses a wanted port the
/// container does not publish, naming those it does, and a container that publishes none.
fn chosen_ports<'ports>(
    published: &'ports [crate::facts::container::PublishedPort],
    wanted: &[u16],
    container: &str,
    target: &str,
) -> Result<Vec<&'ports crate::facts::container::PublishedPort>, Error> {
    let chosen: Vec<_> = published
        .iter()
        .filter(|port| {
            wanted.is_empty()
                || wanted.contains(&port.host_port)
                || port
                    .container_port
                    .is_some_and(|inside| wanted.contains(&inside))
        })
        .collect();
    let shown: Vec<String> = published
        .iter()
        .map(|port| match port.container_port {
            Some(inside) => format!("{inside}/{}", port.protocol),
            None => format!("{}/{}", port.host_port, port.protocol),
        })
        .collect();
    if let Some(missing) = wanted.iter().find(|asked| {
        !chosen
            .iter()
            .any(|port| port.host_port == **asked || port.container_port == Some(**asked))
    }) {
        return Err(Error::Usage {
            message: format!(
                "container `{container}` publishes no port {missing}{}",
                if shown.is_empty() {
                    String::new()
                } else {
                    format!(" (it publishes {})", shown.join(", "))
                }
            ),
            hint: Some(format!(
                "forward what it publishes: `envctl forward {target}`; a port is published with `ports = [\"{missing}:{missing}\"]` in the profile or `envctl up -p {missing}:{missing} --recreate PROFILE`"
            )),
        });
    }
    if chosen.is_empty() {
        return Err(Error::Usage {
            message: format!("container `{container}` publishes no port"),
            hint: Some(
                "publish one with `ports = [\"8888:8888\"]` in the profile, or `envctl up -p 8888:8888 --recreate PROFILE`"
                    .into(),
            ),
        });
    }
    Ok(chosen)
}

/// Where the TCP `port` leads on the daemon's host and the port it gets here: a free one on
/// this machine's loopback where it is forwarded, its own where it is here already.
fn forwarded(
    port: &crate::facts::container::PublishedPort,
    needs_forward: bool,
) -> Result<Forwarded, Error> {
    let remote_ip = match port.host_ip.as_str() {
        // Every address of the host: its loopback is one of them.
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        "::" => "::1".to_string(),
        address => address.to_string(),
    };
    let local_port = if needs_forward {
        crate::host::ports::free_loopback_port(port.host_port).map_err(|source| Error::Write {
            path: "a port on 127.0.0.1".into(),
            source,
        })?
    } else {
        port.host_port
    };
    Ok(Forwarded {
        container_port: port.container_port,
        protocol: port.protocol.clone(),
        remote_ip,
        remote_port: port.host_port,
        local_port,
    })
}

/// `forward`'s whole run: connects, plans, and where the daemon is another host's, holds
/// the forward until ssh ends or a signal comes; `opened` is called with the plan once
/// every port answers here (at once where no forward is needed).
pub async fn forward(
    target: &str,
    wanted: &[u16],
    context: &Context,
    opened: impl FnOnce(&Plan),
) -> Result<ExitStatus, Error> {
    let engine = context.engine().await?;
    let plan = plan(&engine, target, wanted, context).await?;
    if !plan.needs_forward {
        opened(&plan);
        return Ok(ExitStatus::Success);
    }
    hold(&engine, &plan, || opened(&plan)).await
}

/// How long ssh gets to open its forwards before `forward` gives up on it.
const OPEN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(35);

/// Runs the forward of `plan` until ssh ends (an error: the forward is gone) or SIGINT or
/// SIGTERM (its exit code, 130 or 143, with ssh stopped). `opened` is called once every
/// local port accepts connections.
pub async fn hold(
    engine: &Engine,
    plan: &Plan,
    opened: impl FnOnce(),
) -> Result<ExitStatus, Error> {
    let forwards: Vec<PortForward> = plan
        .ports
        .iter()
        .map(|port| PortForward {
            local_port: port.local_port,
            remote_ip: port.remote_ip.clone(),
            remote_port: port.remote_port,
        })
        .collect();
    let Some(spawned) = engine.spawn_forward(&forwards) else {
        return Err(Error::NoPortRoute {
            endpoint: plan.endpoint.clone(),
            host: plan.host.clone(),
            target: plan.container.clone(),
        });
    };
    let mut ssh = spawned.map_err(|source| Error::ForwardFailed {
        host: plan.host.clone(),
        message: format!("cannot start ssh: {source}"),
    })?;
    let signal = crate::ops::wait::termination_signal();
    tokio::pin!(signal);
    // Open: every local port answers.
    let started = std::time::Instant::now();
    let mut opened = Some(opened);
    loop {
        if opened.is_some()
            && plan
                .ports
                .iter()
                .all(|port| crate::host::ports::accepts(port.local_port))
            && let Some(opened) = opened.take()
        {
            opened();
        }
        if opened.is_some() && started.elapsed() > OPEN_DEADLINE {
            ssh.stop().await;
            return Err(Error::ForwardFailed {
                host: plan.host.clone(),
                message: format!("ssh opened no forward within {} s", OPEN_DEADLINE.as_secs()),
            });
        }
        let step = if opened.is_some() {
            std::time::Duration::from_millis(100)
        } else {
            std::time::Duration::from_secs(3600)
        };
        tokio::select! {
            code = &mut signal => {
                ssh.stop().await;
                return Ok(ExitStatus::External(code));
            }
            ended = ssh.ended() => {
                let message = ended.message;
                let status = ended.status.map_or_else(|error| error.to_string(), |status| status.to_string());
                return Err(Error::ForwardFailed {
                    host: plan.host.clone(),
                    message: if message.is_empty() {
                        format!("ssh ended ({status})")
                    } else {
                        format!("ssh ended ({status}): {message}")
                    },
                });
            }
            () = tokio::time::sleep(step) => {}
        }
    }
}

/// The ports the running container `id` publishes, as the daemon lists them. A container
/// missing from the list stopped or went as envctl looked: its ports are then not known,
/// which is an error naming it (`name`) with `again` as the command of its hint, never an
/// empty list taken for "publishes none".
async fn published_ports(
    engine: &Engine,
    id: &str,
    name: &str,
    again: impl FnOnce() -> String,
) -> Result<Vec<crate::facts::container::PublishedPort>, Error> {
    engine
        .list_containers(false, false)
        .await?
        .into_iter()
        .find(|summary| summary.id == id)
        .map(|summary| summary.published)
        .ok_or_else(|| Error::TargetNotFound {
            target: name.to_string(),
            hint: format!(
                "container `{name}` stopped or was removed as envctl looked (another envctl or docker at work?): run {}",
                again()
            ),
        })
}

/// The ports the container `id` publishes where its daemon is this machine's, as the
/// daemon lists them, for `up`'s last lines; none for another host's daemon, whose ports
/// [`reach`] says with the way to them.
pub async fn ports_here(
    engine: &Engine,
    id: &str,
) -> Result<Vec<crate::facts::container::PublishedPort>, Error> {
    if matches!(engine.daemon_host().await?, DaemonHost::Elsewhere { .. }) {
        return Ok(Vec::new());
    }
    let short = id.get(..12).unwrap_or(id);
    published_ports(engine, id, short, || {
        "`envctl ps` to see whether it still runs".to_string()
    })
    .await
}

/// How this machine reaches the ports a container publishes on a daemon of another host,
/// for `up`'s last lines; `None` where the daemon is this machine's or nothing is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub host: String,
    /// Through the connection's own ssh route (`envctl forward`), else only with the
    /// user's own ssh to the host.
    pub through_ssh: bool,
    /// `(container's port/protocol, host address:port)` of each TCP port.
    pub ports: Vec<(String, String)>,
}

/// [`Reach`] of the container `id`: one list of containers, asked only where the daemon
/// runs on another host.
pub async fn reach(engine: &Engine, id: &str) -> Result<Option<Reach>, Error> {
    let DaemonHost::Elsewhere { name } = engine.daemon_host().await? else {
        return Ok(None);
    };
    let short = id.get(..12).unwrap_or(id);
    let ports: Vec<(String, String)> = published_ports(engine, id, short, || {
        "`envctl ps` to see whether it still runs".to_string()
    })
    .await?
    .into_iter()
    .filter(|port| port.protocol == "tcp")
    .map(|port| {
        let inside = port.container_port.unwrap_or(port.host_port);
        let address = match port.host_ip.as_str() {
            "" | "0.0.0.0" | "::" => format!("*:{}", port.host_port),
            address => format!("{address}:{}", port.host_port),
        };
        (format!("{inside}/{}", port.protocol), address)
    })
    .collect();
    if ports.is_empty() {
        return Ok(None);
    }
    Ok(Some(Reach {
        host: name,
        through_ssh: matches!(engine.forward_route(), ForwardRoute::Ssh { .. }),
        ports,
    }))
}
