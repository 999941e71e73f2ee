//! Who runs envctl: filled by `host::user` (the local uid and name) and by the engine's
//! transport (`engine::identity`: who the daemon's connection proves), compared by
//! `container_plan::ownership` and the host policy.

/// The user envctl runs as.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct User {
    /// The real uid; `None` when `/proc/self/status` could not be read.
    pub uid: Option<u32>,
    /// The login name, the uid's number when no database names it, or `unknown user`.
    pub name: String,
    /// Who the chosen daemon's transport proves this user is (`Context::me`); `None`
    /// before a daemon is chosen, and wherever one process speaks to several daemons.
    pub identity: Option<Identity>,
}

impl User {
    /// The name a personal container name carries (`envctl-P-NAME`): the proven
    /// identity's short name (the ssh user, the certificate's CN), else the login name.
    pub fn name_for_containers(&self) -> String {
        self.identity
            .as_ref()
            .and_then(Identity::short_name)
            .unwrap_or_else(|| self.name.clone())
    }
}

/// Who a daemon's transport proves the client is, as `up` records it on a container
/// (`container_plan::ownership::IDENTITY_LABEL`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "proof", rename_all = "snake_case")]
pub enum Identity {
    /// A unix socket: the kernel's real uid of the client, on the machine (host name)
    /// the client runs on.
    LocalUid { uid: u32, host: String },
    /// `ssh://`: the login user the server's sshd admitted; `server` is the host as ssh
    /// resolves it, shown but not compared (one person reaching one daemon from two
    /// laptops under two aliases is one owner).
    Ssh { user: String, server: String },
    /// TLS with a client certificate: the certificate's subject (`CN=alice,O=team`),
    /// proven where the daemon verifies client certificates (`--tlsverify`).
    Tls { subject: String },
    /// A transport that proves no one (plain `tcp://`, TLS without a client certificate):
    /// what the client says of itself, `why` for messages.
    Unproven { claimed: String, why: String },
}

impl Identity {
    /// The value recorded on a container: `uid:1001@laptop`, `ssh:alice@gpu2`,
    /// `tls:CN=alice`, `unproven:uid:1001@laptop`.
    pub fn label(&self) -> String {
        match self {
            Identity::LocalUid { uid, host } => format!("uid:{uid}@{host}"),
            Identity::Ssh { user, server } => format!("ssh:{user}@{server}"),
            Identity::Tls { subject } => format!("tls:{subject}"),
            Identity::Unproven { claimed, .. } => format!("unproven:{claimed}"),
        }
    }

    /// Whether the transport proves it.
    pub fn proven(&self) -> bool {
        !matches!(self, Identity::Unproven { .. })
    }

    /// The name `up` puts in a personal container name (`envctl-P-NAME`): the login user
    /// for ssh, the subject's common name for TLS, else `None` (the local login name).
    pub fn short_name(&self) -> Option<String> {
        match self {
            Identity::Ssh { user, .. } => Some(user.clone()),
            Identity::Tls { subject } => subject
                .split(',')
                .find_map(|part| part.strip_prefix("CN="))
                .map(str::to_string),
            Identity::LocalUid { .. } | Identity::Unproven { .. } => None,
        }
    }
}

/// What two identity labels are compared by: the whole label, except that an `ssh:`
/// label's server part (after its last `@`: a user name may hold `@`, a host never does)
/// is left out.
pub fn identity_key(label: &str) -> &str {
    match label.strip_prefix("ssh:") {
        Some(rest) => match rest.rfind('@') {
            Some(at) => &label[..4 + at],
            None => label,
        },
        None => label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_their_keys() {
        let ssh = Identity::Ssh {
            user: "alice@corp".into(),
            server: "gpu2".into(),
        };
        assert_eq!(ssh.label(), "ssh:alice@corp@gpu2");
        assert_eq!(identity_key(&ssh.label()), "ssh:alice@corp");
        assert_eq!(
            identity_key("ssh:alice@gpu2"),
            identity_key("ssh:alice@10.0.0.2")
        );
        assert_ne!(identity_key("ssh:alice@gpu2"), identity_key("ssh:bob@gpu2"));
        let local = Identity::LocalUid {
            uid: 1001,
            host: "laptop".into(),
        };
        assert_eq!(identity_key(&local.label()), "uid:1001@laptop");
        assert_ne!(
            identity_key("uid:1001@laptop"),
            identity_key("uid:1001@other")
        );
        let tls = Identity::Tls {
            subject: "CN=alice,O=team".into(),
        };
        assert_eq!(tls.label(), "tls:CN=alice,O=team");
        assert_eq!(tls.short_name().as_deref(), Some("alice"));
        assert!(
            !Identity::Unproven {
                claimed: "uid:1@x".into(),
                why: "plain tcp".into()
            }
            .proven()
        );
    }
}
