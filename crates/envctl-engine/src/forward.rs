//! Reaching a remote container's published ports from this machine (issue 38, item 5):
//! through the same ssh route the connection to the daemon takes (`ssh://` endpoints), an
//! `ssh -N -L` of envctl's own that lives as long as `envctl forward` runs. A daemon over
//! TCP or TLS offers no such route: [`ForwardRoute`] says which the connection has, and
//! `ops::forward` refuses with the ssh alternative.
//!
//! The ssh words come from the endpoint's [`SshTarget`], already checked by
//! `SshTarget::parse` (no word reaches ssh that its options or the far shell could read
//! as anything but a user, host or port).

use std::io;
use std::process::Stdio;

use super::Engine;
use super::connector::{Route, SshTarget, read_ssh_stderr, ssh_stderr_text};

/// How a connection reaches its daemon, as far as forwarding a port is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardRoute {
    /// A socket on this machine: the daemon's ports are this machine's.
    Socket,
    /// ssh: the daemon's host as ssh reaches it, with its user and port.
    Ssh {
        user: Option<String>,
        host: String,
        port: Option<u16>,
    },
    /// TCP, with TLS or without: no route to the host's loopback.
    Tcp { address: String },
}

/// One port to forward: `127.0.0.1:local` here to `remote_ip:remote_port` as the daemon's
/// host sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortForward {
    pub local_port: u16,
    pub remote_ip: String,
    pub remote_port: u16,
}

impl Engine {
    /// How this connection reaches the daemon.
    pub fn forward_route(&self) -> ForwardRoute {
        match self.route.as_ref() {
            Route::Unix { .. } => ForwardRoute::Socket,
            Route::Ssh(target) => ForwardRoute::Ssh {
                user: target.user.clone(),
                host: target.host.clone(),
                port: target.port,
            },
            Route::Tcp { address } | Route::Tls { address, .. } => ForwardRoute::Tcp {
                address: address.clone(),
            },
        }
    }

    /// Starts `ssh -N` with a `-L` for each of `forwards` over this connection's ssh
    /// route; `None` where the route is not ssh. ssh's stderr is read (capped) for the
    /// message of its end, and the process is killed when the [`Forwarding`] is dropped.
    pub fn spawn_forward(&self, forwards: &[PortForward]) -> Option<io::Result<Forwarding>> {
        let Route::Ssh(target) = self.route.as_ref() else {
            return None;
        };
        Some(Forwarding::spawn(target, forwards))
    }
}

/// The most of a forward's ssh stderr kept for the message of its end.
const MAXIMUM_SSH_MESSAGE: usize = 4096;

/// A running `ssh -N -L …` of [`Engine::spawn_forward`]: killed when dropped.
#[derive(Debug)]
pub struct Forwarding {
    child: tokio::process::Child,
    /// ssh's stderr, read to its end by a task of its own; `None` once joined (a finished
    /// task is not polled again).
    stderr: Option<tokio::task::JoinHandle<String>>,
}

/// How a forward's ssh ended.
#[derive(Debug)]
pub struct ForwardEnd {
    /// Its exit status, or why it could not be had.
    pub status: io::Result<std::process::ExitStatus>,
    /// What it said on stderr (capped, trimmed; empty: nothing), or why that could not be
    /// read.
    pub message: String,
}

impl Forwarding {
    fn spawn(target: &SshTarget, forwards: &[PortForward]) -> io::Result<Forwarding> {
        let mut child = tokio::process::Command::new("ssh")
            .args(forward_arguments(target, forwards))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| io::Error::other("ssh's stderr was not piped"))?;
        Ok(Forwarding {
            child,
            stderr: Some(read_ssh_stderr(stderr, MAXIMUM_SSH_MESSAGE)),
        })
    }

    /// Stops ssh (and waits for it); one that already ended is no error.
    pub async fn stop(&mut self) {
        // Failing to kill means it has ended already: nothing is left to stop.
        let _ = self.child.kill().await;
    }

    /// Waits for ssh to end, then for all it said. Safe to cancel (in a `select!`) and
    /// call again.
    pub async fn ended(&mut self) -> ForwardEnd {
        let status = self.child.wait().await;
        let message = match self.stderr.as_mut() {
            Some(task) => {
                let message = ssh_stderr_text(task.await);
                self.stderr = None;
                message
            }
            None => "(its stderr was read already)".to_string(),
        };
        ForwardEnd { status, message }
    }
}

/// ssh's arguments for `forwards` to `target`: no command (`-N`), a failed forward ends
/// ssh (`ExitOnForwardFailure`) rather than leaving it running without it, each forward
/// bound to this machine's loopback only.
fn forward_arguments(target: &SshTarget, forwards: &[PortForward]) -> Vec<String> {
    let mut arguments: Vec<String> = [
        "-N",
        "-o",
        "ExitOnForwardFailure=yes",
        "-o",
        "ConnectTimeout=30",
        "-o",
        "ServerAliveInterval=30",
    ]
    .map(String::from)
    .to_vec();
    for forward in forwards {
        let remote = if forward.remote_ip.contains(':') {
            format!("[{}]", forward.remote_ip)
        } else {
            forward.remote_ip.clone()
        };
        arguments.push("-L".into());
        arguments.push(format!(
            "127.0.0.1:{}:{remote}:{}",
            forward.local_port, forward.remote_port
        ));
    }
    if let Some(user) = &target.user {
        arguments.extend(["-l".into(), user.clone()]);
    }
    if let Some(port) = target.port {
        arguments.extend(["-p".into(), port.to_string()]);
    }
    arguments.extend(["--".into(), target.host.clone()]);
    arguments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_forward_is_bound_to_loopback_and_the_host_comes_after_the_options() {
        let target = SshTarget::parse("ssh://alice@gpu2:2222").unwrap();
        let arguments = forward_arguments(
            &target,
            &[
                PortForward {
                    local_port: 8888,
                    remote_ip: "127.0.0.1".into(),
                    remote_port: 8888,
                },
                PortForward {
                    local_port: 40001,
                    remote_ip: "::1".into(),
                    remote_port: 6006,
                },
            ],
        );
        assert_eq!(
            arguments.join(" "),
            "-N -o ExitOnForwardFailure=yes -o ConnectTimeout=30 -o ServerAliveInterval=30 \
             -L 127.0.0.1:8888:127.0.0.1:8888 -L 127.0.0.1:40001:[::1]:6006 -l alice -p 2222 -- gpu2"
        );
    }
}
