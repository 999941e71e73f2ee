//! Which daemon the user chose, read as the docker CLI reads it: `-H/--host`, then
//! `--context`, then `DOCKER_HOST`, then `DOCKER_CONTEXT`, then `currentContext` in
//! `$DOCKER_CONFIG/config.json` (default `~/.docker`), else the default socket. A context
//! is read from the CLI's context store: `contexts/meta/<sha256 of the name>/meta.json`
//! names its Docker endpoint, and `contexts/tls/<sha256>/docker/` holds its TLS material.
//!
//! TLS is chosen as the CLI 28 chooses it, and only for a `tcp://` endpoint (a socket or
//! ssh is reached as it is): for `-H`, `DOCKER_HOST` and the default context, when
//! `DOCKER_TLS_VERIFY` or `DOCKER_TLS` is set, with `ca.pem` (required), `cert.pem` and
//! `key.pem` (when they exist) from `DOCKER_CERT_PATH`, else the configuration folder, the
//! daemon verified only under `DOCKER_TLS_VERIFY`; for a context, when it has TLS files or
//! `SkipTLSVerify` (then not verified). Where TLS was asked for, envctl never falls back to
//! cleartext (`engine::connector`).

use std::path::{Path, PathBuf};

use sha2::Digest;

/// The socket of a daemon when nothing else is chosen.
pub const DEFAULT_ENDPOINT: &str = "unix:///var/run/docker.sock";

/// The largest `config.json` or `meta.json` envctl reads (the CLI's own are a few KiB).
const MAXIMUM_BYTES: u64 = 1 << 20;

/// What chose the daemon, for messages (`doctor`'s first line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChosenBy {
    HostFlag,
    /// `--context NAME`, `DOCKER_CONTEXT=NAME` or `currentContext`: the context's name and
    /// which of the three named it.
    Context {
        name: String,
        by: &'static str,
    },
    DockerHost,
    Default,
}

/// The daemon to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonChoice {
    pub endpoint: String,
    pub chosen_by: ChosenBy,
    /// TLS for a `tcp://` endpoint, when asked for.
    pub tls: Option<TlsChoice>,
}

/// How a `tcp://` daemon is reached over TLS: the files the docker CLI would read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsChoice {
    /// The CA the daemon's certificate is verified with; `None`: the system's roots.
    pub ca: Option<PathBuf>,
    /// The client certificate and its key, when both are there.
    pub certificate: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Whether the daemon's certificate is verified (`DOCKER_TLS_VERIFY`, a context
    /// without `SkipTLSVerify`).
    pub verify: bool,
    /// What asked for TLS, for messages: `DOCKER_TLS_VERIFY is set`, `context gpu2 has TLS
    /// settings`.
    pub why: String,
}

impl DaemonChoice {
    /// `context gpu2 (DOCKER_CONTEXT)`, `DOCKER_HOST`, `-H`, or `the default socket`.
    pub fn described(&self) -> String {
        match &self.chosen_by {
            ChosenBy::HostFlag => "-H".into(),
            ChosenBy::Context { name, by } => format!("context {name} ({by})"),
            ChosenBy::DockerHost => "DOCKER_HOST".into(),
            ChosenBy::Default => "the default socket".into(),
        }
    }
}

/// Why no daemon could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DaemonChoiceError {
    #[error("conflicting options: either give --host or --context, not both")]
    Conflict,
    #[error("context `{name}` ({by}) does not exist in {store}")]
    UnknownContext {
        name: String,
        by: &'static str,
        store: String,
    },
    #[error("cannot read {path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("context `{name}` has no Docker endpoint")]
    NoEndpoint { name: String },
    /// An `ssh://` endpoint with a word that must not reach ssh, said where it was
    /// written: `context gpu2 (…/meta.json)`, `-H`, `DOCKER_HOST`, or the team file's line.
    #[error("{source_place} names `{}`, which envctl does not give to ssh: {refusal}", envctl_core::secret::masked_url(.endpoint))]
    SshEndpoint {
        source_place: String,
        endpoint: String,
        refusal: envctl_facts::ssh::SshRefusal,
    },
}

impl DaemonChoiceError {
    /// A command that works.
    pub fn hint(&self) -> String {
        match self {
            DaemonChoiceError::Conflict => "give one of them".into(),
            DaemonChoiceError::UnknownContext { .. } => {
                "`docker context ls` lists the contexts; `docker context use default` goes back to the local daemon".into()
            }
            DaemonChoiceError::Unreadable { .. } | DaemonChoiceError::NoEndpoint { .. } => {
                "`docker context inspect` shows what the docker CLI reads there".into()
            }
            DaemonChoiceError::SshEndpoint { source_place, .. } => format!(
                "fix {source_place}: `ssh://[USER@]HOST[:PORT][/SOCKET]` with plain words (a host of ~/.ssh/config may stand for the rest)"
            ),
        }
    }
}

/// What the choice is made from: the flags and the process environment's variables
/// (`Context` reads them), and the CLI's configuration folder.
#[derive(Debug, Clone, Default)]
pub struct ChoiceInputs {
    pub host_flag: Option<String>,
    pub context_flag: Option<String>,
    pub docker_host: Option<String>,
    pub docker_context: Option<String>,
    /// `$DOCKER_CONFIG`, else `~/.docker`; `None` without either (no context can be read).
    pub config_dir: Option<PathBuf>,
    /// `DOCKER_TLS_VERIFY` or `DOCKER_TLS`, when set to something: which one (the first
    /// when both are).
    pub tls_variable: Option<&'static str>,
    /// `DOCKER_CERT_PATH`, unless unset or empty.
    pub cert_path: Option<PathBuf>,
}

/// The daemon the docker CLI would talk to with these inputs.
pub fn choose(inputs: &ChoiceInputs) -> Result<DaemonChoice, DaemonChoiceError> {
    let nonempty = |value: &Option<String>| value.clone().filter(|text| !text.is_empty());
    let (host_flag, context_flag) = (nonempty(&inputs.host_flag), nonempty(&inputs.context_flag));
    if host_flag.is_some() && context_flag.is_some() {
        return Err(DaemonChoiceError::Conflict);
    }
    let plain = |endpoint: String,
                 chosen_by: ChosenBy|
     -> Result<DaemonChoice, DaemonChoiceError> {
        // The default context: TLS from the variables, for TCP only.
        let tls = match inputs.tls_variable {
            Some(variable) if takes_tls(&endpoint) => {
                let folder = inputs
                    .cert_path
                    .clone()
                    .or_else(|| inputs.config_dir.clone())
                    .unwrap_or_default();
                // The CLI reads the client files only where they exist.
                let existing = |name: &str| Some(folder.join(name)).filter(|path| path.exists());
                let (certificate, key) = match (existing("cert.pem"), existing("key.pem")) {
                    (Some(certificate), Some(key)) => (Some(certificate), Some(key)),
                    _ => (None, None),
                };
                Some(TlsChoice {
                    ca: Some(folder.join("ca.pem")),
                    certificate,
                    key,
                    verify: variable == "DOCKER_TLS_VERIFY",
                    why: format!("{variable} is set"),
                })
            }
            _ => None,
        };
        refuse_unsafe_ssh(&endpoint, || match &chosen_by {
            ChosenBy::HostFlag => "-H".to_string(),
            ChosenBy::DockerHost => "DOCKER_HOST".to_string(),
            other => format!("{other:?}"),
        })?;
        Ok(DaemonChoice {
            endpoint: envctl_core::secret::masked_url(&endpoint).into_owned(),
            chosen_by,
            tls,
        })
    };
    if let Some(host) = host_flag {
        return plain(host, ChosenBy::HostFlag);
    }
    let named = match context_flag {
        Some(name) => Some((name, "--context")),
        None => match nonempty(&inputs.docker_host) {
            Some(host) => return plain(host, ChosenBy::DockerHost),
            None => match nonempty(&inputs.docker_context) {
                Some(name) => Some((name, "DOCKER_CONTEXT")),
                None => current_context(inputs.config_dir.as_deref())?
                    .map(|name| (name, "currentContext")),
            },
        },
    };
    match named {
        Some((name, _)) if name == "default" => {
            plain(DEFAULT_ENDPOINT.to_string(), ChosenBy::Default)
        }
        Some((name, by)) => context(inputs.config_dir.as_deref(), &name, by),
        None => plain(DEFAULT_ENDPOINT.to_string(), ChosenBy::Default),
    }
}

/// The names of the contexts in the store under `config_dir` (as `docker context ls`
/// lists them, less `default`), for a did-you-mean; a context that cannot be read is left
/// out, and at most a few hundred are read.
pub fn context_names(config_dir: Option<&Path>) -> Vec<String> {
    const AT_MOST: usize = 256;
    let Some(folder) = config_dir.map(|folder| folder.join("contexts").join("meta")) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .take(AT_MOST)
        .filter_map(Result::ok)
        .filter_map(|entry| read_json(&entry.path().join("meta.json")).ok().flatten())
        .filter_map(|meta| meta.get("Name")?.as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// `currentContext` of `config.json`; `None` without the file or the key.
fn current_context(config_dir: Option<&Path>) -> Result<Option<String>, DaemonChoiceError> {
    let Some(folder) = config_dir else {
        return Ok(None);
    };
    let Some(config) = read_json(&folder.join("config.json"))? else {
        return Ok(None);
    };
    Ok(config
        .get("currentContext")
        .and_then(serde_json::Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_string))
}

/// The Docker endpoint of context `name` in the store under `config_dir`.
fn context(
    config_dir: Option<&Path>,
    name: &str,
    by: &'static str,
) -> Result<DaemonChoice, DaemonChoiceError> {
    let store = config_dir.map(|folder| folder.join("contexts"));
    let unknown = || DaemonChoiceError::UnknownContext {
        name: name.to_string(),
        by,
        store: store.as_ref().map_or_else(
            || "(no DOCKER_CONFIG or HOME)".into(),
            |path| path.display().to_string(),
        ),
    };
    let Some(store) = &store else {
        return Err(unknown());
    };
    let hash = hex(&sha2::Sha256::digest(name.as_bytes()));
    let Some(meta) = read_json(&store.join("meta").join(&hash).join("meta.json"))? else {
        return Err(unknown());
    };
    let docker = meta
        .get("Endpoints")
        .and_then(|endpoints| endpoints.get("docker"));
    let Some(endpoint) = docker
        .and_then(|docker| docker.get("Host"))
        .and_then(serde_json::Value::as_str)
        .filter(|host| !host.is_empty())
    else {
        return Err(DaemonChoiceError::NoEndpoint {
            name: name.to_string(),
        });
    };
    let skips_verify = docker
        .and_then(|docker| docker.get("SkipTLSVerify"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    let meta_path = store.join("meta").join(&hash).join("meta.json");
    refuse_unsafe_ssh(endpoint, || {
        format!("context `{name}` ({by}, {})", meta_path.display())
    })?;
    let tls_folder = store.join("tls").join(&hash).join("docker");
    let file = |name: &str| Some(tls_folder.join(name)).filter(|path| path.is_file());
    let (ca, certificate, key) = (file("ca.pem"), file("cert.pem"), file("key.pem"));
    let has_files = ca.is_some() || certificate.is_some() || key.is_some();
    let tls = ((has_files || skips_verify) && takes_tls(endpoint)).then(|| TlsChoice {
        ca,
        certificate,
        key,
        verify: !skips_verify,
        why: format!("context `{name}` has TLS settings"),
    });
    Ok(DaemonChoice {
        endpoint: envctl_core::secret::masked_url(endpoint).into_owned(),
        chosen_by: ChosenBy::Context {
            name: name.to_string(),
            by,
        },
        tls,
    })
}

/// An `ssh://` endpoint whose words may not reach ssh, refused where it was written
/// (`place` says where, asked only then), before any connection is tried.
fn refuse_unsafe_ssh(
    endpoint: &str,
    place: impl FnOnce() -> String,
) -> Result<(), DaemonChoiceError> {
    match envctl_facts::ssh::ssh_refusal(endpoint) {
        None => Ok(()),
        Some(refusal) => Err(DaemonChoiceError::SshEndpoint {
            source_place: place(),
            endpoint: endpoint.to_string(),
            refusal,
        }),
    }
}

/// Whether TLS applies to `endpoint`: TCP only (the CLI reaches a socket or ssh as it is).
fn takes_tls(endpoint: &str) -> bool {
    endpoint.starts_with("tcp://") || endpoint.starts_with("http://")
}

/// A JSON file of the CLI's, at most [`MAXIMUM_BYTES`]; `None` when it does not exist.
/// Read through `untrusted` as every file envctl did not write: a FIFO, a device or a
/// folder in its place is named, never opened to block (a FIFO `meta.json` once hung
/// envctl past Ctrl-C). Links are followed, as the CLI follows them: the folder is the
/// user's own (`DOCKER_CONFIG`, `~/.docker`), often linked from a dotfiles repository.
fn read_json(path: &Path) -> Result<Option<serde_json::Value>, DaemonChoiceError> {
    let unreadable = |message: String| DaemonChoiceError::Unreadable {
        path: path.display().to_string(),
        message,
    };
    let bytes = match envctl_core::untrusted::read(
        path,
        MAXIMUM_BYTES,
        envctl_core::untrusted::Named::ByTheUser,
    ) {
        Ok(None) => return Ok(None),
        Ok(Some(bytes)) => bytes,
        Err(error) => return Err(unreadable(envctl_core::text::error_chain(&error))),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|error| {
        unreadable(format!(
            "not JSON: line {}, column {}: {}",
            error.line(),
            error.column(),
            envctl_core::untrusted::redacted(&error.to_string(), &[])
        ))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(context: &str, meta: &str) -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        let hash = hex(&sha2::Sha256::digest(context.as_bytes()));
        let meta_folder = folder.path().join("contexts/meta").join(hash);
        std::fs::create_dir_all(&meta_folder).unwrap();
        std::fs::write(meta_folder.join("meta.json"), meta).unwrap();
        folder
    }

    #[test]
    fn the_order_is_the_docker_clis() {
        let store = store_with(
            "gpu2",
            r#"{"Name":"gpu2","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///run/gpu2.sock","SkipTLSVerify":false}}}"#,
        );
        std::fs::write(
            store.path().join("config.json"),
            r#"{"currentContext":"gpu2"}"#,
        )
        .unwrap();
        let inputs = ChoiceInputs {
            config_dir: Some(store.path().to_path_buf()),
            ..ChoiceInputs::default()
        };
        let chosen = choose(&inputs).unwrap();
        assert_eq!(chosen.endpoint, "unix:///run/gpu2.sock");
        assert_eq!(chosen.described(), "context gpu2 (currentContext)");
        // DOCKER_HOST wins over every context but --context.
        let host = ChoiceInputs {
            docker_host: Some("unix:///run/other.sock".into()),
            docker_context: Some("gpu2".into()),
            ..inputs.clone()
        };
        assert_eq!(choose(&host).unwrap().chosen_by, ChosenBy::DockerHost);
        let flag = ChoiceInputs {
            context_flag: Some("gpu2".into()),
            ..host.clone()
        };
        assert_eq!(choose(&flag).unwrap().endpoint, "unix:///run/gpu2.sock");
        let both = ChoiceInputs {
            host_flag: Some("unix:///x".into()),
            ..flag
        };
        assert_eq!(choose(&both), Err(DaemonChoiceError::Conflict));
        // `default` is the local daemon; an unknown name is an error naming it.
        let default = ChoiceInputs {
            docker_context: Some("default".into()),
            ..inputs.clone()
        };
        assert_eq!(choose(&default).unwrap().endpoint, DEFAULT_ENDPOINT);
        let unknown = ChoiceInputs {
            docker_context: Some("gpu9".into()),
            ..inputs.clone()
        };
        assert!(matches!(
            choose(&unknown),
            Err(DaemonChoiceError::UnknownContext { name, by: "DOCKER_CONTEXT", .. }) if name == "gpu9"
        ));
        // Nothing chosen anywhere: the default socket.
        assert_eq!(
            choose(&ChoiceInputs::default()).unwrap().chosen_by,
            ChosenBy::Default
        );
    }

    #[test]
    fn tls_is_chosen_as_the_cli_chooses_it() {
        let certificates = tempfile::tempdir().unwrap();
        std::fs::write(certificates.path().join("cert.pem"), "").unwrap();
        std::fs::write(certificates.path().join("key.pem"), "").unwrap();
        let variables = ChoiceInputs {
            docker_host: Some("tcp://127.0.0.1:2376".into()),
            tls_variable: Some("DOCKER_TLS_VERIFY"),
            cert_path: Some(certificates.path().to_path_buf()),
            ..ChoiceInputs::default()
        };
        let tls = choose(&variables).unwrap().tls.unwrap();
        assert_eq!(tls.ca, Some(certificates.path().join("ca.pem")));
        assert_eq!(tls.key, Some(certificates.path().join("key.pem")));
        assert!(tls.verify);
        // DOCKER_TLS alone: TLS, not verified; no client files where there are none.
        let unverified = ChoiceInputs {
            tls_variable: Some("DOCKER_TLS"),
            cert_path: Some(certificates.path().join("elsewhere")),
            ..variables.clone()
        };
        let tls = choose(&unverified).unwrap().tls.unwrap();
        assert!(!tls.verify && tls.certificate.is_none());
        // A socket or ssh takes no TLS, as for the CLI.
        for endpoint in ["unix:///run/d.sock", "ssh://me@gpu2"] {
            let other = ChoiceInputs {
                docker_host: Some(endpoint.into()),
                ..variables.clone()
            };
            assert_eq!(choose(&other).unwrap().tls, None, "{endpoint}");
        }
        let store = store_with(
            "secure",
            r#"{"Name":"secure","Endpoints":{"docker":{"Host":"tcp://127.0.0.1:2376"}}}"#,
        );
        let hash = hex(&sha2::Sha256::digest(b"secure"));
        let tls_folder = store.path().join("contexts/tls").join(hash).join("docker");
        std::fs::create_dir_all(&tls_folder).unwrap();
        // Client files and no CA: verified with the system's roots, as the CLI does.
        std::fs::write(tls_folder.join("cert.pem"), "").unwrap();
        let context = ChoiceInputs {
            context_flag: Some("secure".into()),
            config_dir: Some(store.path().to_path_buf()),
            ..ChoiceInputs::default()
        };
        let tls = choose(&context).unwrap().tls.unwrap();
        assert_eq!(tls.ca, None);
        assert!(tls.verify);
        let skipping = store_with(
            "skipping",
            r#"{"Name":"skipping","Endpoints":{"docker":{"Host":"tcp://127.0.0.1:2376","SkipTLSVerify":true}}}"#,
        );
        let context = ChoiceInputs {
            context_flag: Some("skipping".into()),
            config_dir: Some(skipping.path().to_path_buf()),
            ..ChoiceInputs::default()
        };
        assert!(!choose(&context).unwrap().tls.unwrap().verify);
        let broken = store_with("broken", "{not json");
        let context = ChoiceInputs {
            context_flag: Some("broken".into()),
            config_dir: Some(broken.path().to_path_buf()),
            ..ChoiceInputs::default()
        };
        assert!(matches!(
            choose(&context),
            Err(DaemonChoiceError::Unreadable { .. })
        ));
    }
}
