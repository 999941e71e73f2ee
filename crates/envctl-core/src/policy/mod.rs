//! The host policy: limits the admins of a shared GPU server set for every container
//! `envctl up` makes there (`/etc/envctl/policy.toml`, or `ENVCTL_POLICY`), each rule kept
//! with the line it was written on so a refusal can point at it.
//!
//! A guard-rail for a team, not a security boundary: whoever may use the Docker socket may
//! run `docker run` without envctl, and the socket is root-equivalent. The policy keeps
//! honest mistakes (a profile asking for every GPU of a shared box) from happening.
//!
//! [`load`] reads the file (a missing file is no policy), `parse` turns its text into a
//! [`Policy`] with file:line:column diagnostics like a profile's, and `rules::check` is
//! the pure verdict over a [`PolicyRequest`] built from the create body.

mod parse;
mod rules;

use std::path::Path;

use serde::Serialize;
use thiserror::Error;

use crate::profile::Diagnostic;
use crate::profile::size::ByteSize;

pub use parse::parse;
pub use rules::{
    PolicyRequest, PublishedPort, Violation, asks_for_all_gpus, check, check_client,
    check_client_refuses,
};

/// Where the policy lies when `ENVCTL_POLICY` does not say.
pub const DEFAULT_POLICY_PATH: &str = "/etc/envctl/policy.toml";

/// `ENVCTL_POLICY`: the policy file instead of [`DEFAULT_POLICY_PATH`] (the context reads
/// it; the policy's messages name it).
pub const POLICY_VARIABLE: &str = "ENVCTL_POLICY";

/// A policy larger than this is refused: no real one comes near it.
const MAXIMUM_POLICY_BYTES: u64 = 1024 * 1024;

/// A rule's value and the 1-based line of its key in the policy file.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule<T> {
    pub value: T,
    pub line: usize,
}

/// The rules of one policy file; a rule left out does not apply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Policy {
    /// The file as the user named it, for messages (`envctl-policy@ENDPOINT` for the
    /// policy pushed to a daemon).
    pub path: String,
    /// Where the policy came from: this machine's file or a daemon.
    pub origin: Origin,
    pub max_gpus_per_container: Option<Rule<u32>>,
    pub max_gpus_per_user: Option<Rule<u32>>,
    pub max_memory: Option<Rule<ByteSize>>,
    pub max_cpus: Option<Rule<f64>>,
    pub require_memory_limit: Option<Rule<bool>>,
    /// Registries in their canonical names (`docker.io` for Docker Hub by any name).
    pub registries: Option<Rule<Vec<String>>>,
    pub loopback_only: Option<Rule<bool>>,
    /// The Xids that mark a GPU failed; left out, NVIDIA's list
    /// (`checks::health::DEFAULT_FATAL_XIDS`).
    pub fatal_xids: Option<Rule<Vec<u32>>>,
    /// `users.unproven`: whether a client whose transport proves no one (plain `tcp://`,
    /// TLS without a client certificate) may `up`; left out, it may (with a warning).
    pub unproven: Option<Rule<Unproven>>,
}

/// What `users.unproven` says of clients the daemon's transport proves nothing about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unproven {
    Allow,
    Refuse,
}

impl Unproven {
    /// As the policy file writes it.
    pub fn word(self) -> &'static str {
        match self {
            Unproven::Allow => "allow",
            Unproven::Refuse => "refuse",
        }
    }
}

/// Where a policy in force came from, for doctor, `policy show` and refusals' hints.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A file on the machine envctl runs on (`ENVCTL_POLICY`, `/etc/envctl/policy.toml`).
    #[default]
    File,
    /// Pushed to the daemon by its admin (`envctl policy push`): every client obeys it.
    Daemon {
        /// The daemon's endpoint, as the user chose it.
        endpoint: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        pushed_by: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pushed_at: Option<String>,
    },
}

/// Rule names, as the TOML keys are written (`table.key`).
pub const MAX_GPUS_PER_CONTAINER: &str = "limits.max_gpus_per_container";
pub const MAX_GPUS_PER_USER: &str = "limits.max_gpus_per_user";
pub const MAX_MEMORY: &str = "limits.max_memory";
pub const MAX_CPUS: &str = "limits.max_cpus";
pub const REQUIRE_MEMORY_LIMIT: &str = "limits.require_memory_limit";
pub const REGISTRIES: &str = "images.registries";
pub const LOOPBACK_ONLY: &str = "ports.loopback_only";
pub const FATAL_XIDS: &str = "gpus.fatal_xids";
pub const UNPROVEN: &str = "users.unproven";

/// One rule in force, as doctor shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleInForce {
    pub rule: &'static str,
    /// The value as JSON (a number, a boolean, a size string, a list of registries).
    pub value: serde_json::Value,
    pub line: usize,
}

impl RuleInForce {
    /// The value as the policy file would write it: `2`, `true`, `"64g"`, `["docker.io"]`.
    pub fn value_text(&self) -> String {
        self.value.to_string()
    }
}

impl Policy {
    /// Every rule the file sets, in the order of their lines.
    pub fn rules(&self) -> Vec<RuleInForce> {
        let mut rules = Vec::new();
        let mut add = |rule: &'static str, value: serde_json::Value, line: usize| {
            rules.push(RuleInForce { rule, value, line });
        };
        if let Some(rule) = &self.max_gpus_per_container {
            add(MAX_GPUS_PER_CONTAINER, rule.value.into(), rule.line);
        }
        if let Some(rule) = &self.max_gpus_per_user {
            add(MAX_GPUS_PER_USER, rule.value.into(), rule.line);
        }
        if let Some(rule) = &self.max_memory {
            add(MAX_MEMORY, rule.value.to_string().into(), rule.line);
        }
        if let Some(rule) = &self.max_cpus {
            add(MAX_CPUS, rule.value.into(), rule.line);
        }
        if let Some(rule) = &self.require_memory_limit {
            add(REQUIRE_MEMORY_LIMIT, rule.value.into(), rule.line);
        }
        if let Some(rule) = &self.registries {
            add(REGISTRIES, rule.value.clone().into(), rule.line);
        }
        if let Some(rule) = &self.loopback_only {
            add(LOOPBACK_ONLY, rule.value.into(), rule.line);
        }
        if let Some(rule) = &self.fatal_xids {
            add(FATAL_XIDS, rule.value.clone().into(), rule.line);
        }
        if let Some(rule) = &self.unproven {
            add(UNPROVEN, rule.value.word().into(), rule.line);
        }
        rules.sort_by_key(|rule| rule.line);
        rules
    }

    /// The Xids that mark a GPU failed: the policy's `gpus.fatal_xids`, else NVIDIA's list.
    pub fn fatal_xids(policy: Option<&Policy>) -> Vec<u32> {
        policy
            .and_then(|policy| policy.fatal_xids.as_ref())
            .map_or_else(
                || crate::checks::health::DEFAULT_FATAL_XIDS.to_vec(),
                |rule| rule.value.clone(),
            )
    }

    /// Whether a rule needs to know how many GPUs the container gets.
    pub fn has_gpu_rule(&self) -> bool {
        self.max_gpus_per_container.is_some() || self.max_gpus_per_user.is_some()
    }
}

/// The policy as doctor's `--json` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyReport {
    pub path: String,
    pub origin: Origin,
    pub rules: Vec<RuleInForce>,
}

impl From<&Policy> for PolicyReport {
    fn from(policy: &Policy) -> Self {
        PolicyReport {
            path: policy.path.clone(),
            origin: policy.origin.clone(),
            rules: policy.rules(),
        }
    }
}

/// Why there is no policy to apply although a file is there.
#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("cannot read the host policy `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the host policy `{path}` is {kind}, not a regular file")]
    NotRegular { path: String, kind: &'static str },
    #[error("the host policy `{path}` is {bytes} bytes; a policy is limited to 1 MiB")]
    TooLarge { path: String, bytes: u64 },
    #[error("invalid host policy: {} in `{path}`", crate::profile::error::plural(diagnostics.len(), "problem"))]
    Invalid {
        path: String,
        diagnostics: Vec<Diagnostic>,
    },
}

impl PolicyError {
    /// The per-line problems of a malformed policy.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PolicyError::Invalid { diagnostics, .. } => diagnostics,
            _ => &[],
        }
    }

    pub fn hint(&self) -> String {
        match self {
            PolicyError::Invalid { .. } => {
                "the host's admin keeps this file; docs/shared-servers.md (\"Policy\") describes its format".into()
            }
            PolicyError::Read { .. } | PolicyError::NotRegular { .. } | PolicyError::TooLarge { .. } => {
                format!(
                    "the policy must be a readable regular file (ask the host's admin); `{}` names another one",
                    POLICY_VARIABLE
                )
            }
        }
    }

    /// `path:line:column: message` of each problem, for a one-line finding.
    pub fn places(&self) -> Vec<String> {
        self.diagnostics()
            .iter()
            .map(|diagnostic| {
                format!(
                    "{}:{}:{}: {}",
                    diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.message
                )
            })
            .collect()
    }
}

/// Reads the policy at `path` (shown as `shown`): `None` when there is no such file,
/// an error when a file is there and cannot be read or is not a valid policy.
pub fn load(path: &Path, shown: &str) -> Result<Option<Policy>, PolicyError> {
    read_text(path, shown)?
        .map(|text| parse(shown, &text))
        .transpose()
}

/// The text of the policy file at `path` (shown as `shown`), not yet parsed: `None` when
/// there is no such file. `envctl policy push` sends this text to the daemon.
pub fn read_text(path: &Path, shown: &str) -> Result<Option<String>, PolicyError> {
    // One reader for files envctl did not write: a FIFO, a device or a link out of the
    // policy's folder is never read, and no more than the limit.
    let bytes =
        match crate::untrusted::read(path, MAXIMUM_POLICY_BYTES, crate::untrusted::Named::Found) {
            // No file, no policy: most hosts have none.
            Ok(None) => return Ok(None),
            Ok(Some(bytes)) => bytes,
            Err(crate::untrusted::ReadError::NotRegular { kind }) => {
                return Err(PolicyError::NotRegular {
                    path: shown.into(),
                    kind,
                });
            }
            Err(crate::untrusted::ReadError::TooLarge { seen, .. }) => {
                return Err(PolicyError::TooLarge {
                    path: shown.into(),
                    bytes: seen,
                });
            }
            Err(crate::untrusted::ReadError::Io(source)) => {
                return Err(PolicyError::Read {
                    path: shown.into(),
                    source,
                });
            }
            Err(refused) => {
                return Err(PolicyError::Read {
                    path: shown.into(),
                    source: std::io::Error::other(refused),
                });
            }
        };
    crate::profile::file::decode_profile_bytes(bytes, shown)
        .map(Some)
        .map_err(|diagnostic| PolicyError::Invalid {
            path: shown.into(),
            diagnostics: vec![diagnostic.with_message(
                "the policy is not valid UTF-8 (binary data or another encoding)".into(),
                Some("save the policy as UTF-8 text".into()),
            )],
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_no_policy_and_a_folder_is_an_error() {
        let folder = tempfile::tempdir().unwrap();
        let missing = folder.path().join("policy.toml");
        assert_eq!(load(&missing, "policy.toml").unwrap(), None);
        let error = load(folder.path(), "the-folder").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the host policy `the-folder` is a folder, not a regular file"
        );
    }

    #[test]
    fn a_file_is_read_and_its_rules_listed_with_their_lines() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("policy.toml");
        std::fs::write(
            &path,
            "# team box\n[limits]\nmax_gpus_per_container = 2\nmax_memory = \"64g\"\n[images]\nregistries = [\"index.docker.io\"]\n",
        )
        .unwrap();
        let policy = load(&path, "policy.toml").unwrap().unwrap();
        let rules: Vec<(&str, String, usize)> = policy
            .rules()
            .iter()
            .map(|rule| (rule.rule, rule.value_text(), rule.line))
            .collect();
        assert_eq!(
            rules,
            [
                (MAX_GPUS_PER_CONTAINER, "2".to_string(), 3),
                (MAX_MEMORY, "\"64g\"".to_string(), 4),
                (REGISTRIES, "[\"docker.io\"]".to_string(), 6),
            ]
        );
        assert!(policy.has_gpu_rule());
    }

    #[test]
    fn fatal_xids_default_to_nvidias_list_and_the_policy_replaces_it() {
        assert_eq!(
            Policy::fatal_xids(None),
            crate::checks::health::DEFAULT_FATAL_XIDS.to_vec()
        );
        let policy = parse("policy.toml", "[gpus]\nfatal_xids = [79, 94, 79]\n").unwrap();
        assert_eq!(Policy::fatal_xids(Some(&policy)), vec![79, 94]);
        let rules = policy.rules();
        assert_eq!(rules[0].rule, FATAL_XIDS);
        assert_eq!(rules[0].line, 2);
        let error = parse("policy.toml", "[gpus]\nfatal_xids = [79, \"x\"]\n").unwrap_err();
        assert_eq!(error.diagnostics()[0].line, 2, "{error:?}");
        assert!(parse("policy.toml", "[gpus]\nfatal_xid = [79]\n").is_err());
        assert!(parse("policy.toml", "[gpus]\nfatal_xids = 79\n").is_err());
    }

    #[test]
    fn binary_data_is_invalid_with_its_place() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("policy.toml");
        std::fs::write(&path, b"[limits]\nmax_cpus = \xff\n").unwrap();
        let error = load(&path, "policy.toml").unwrap_err();
        assert_eq!(error.diagnostics()[0].line, 2);
        assert!(
            error.places()[0].starts_with("policy.toml:2:12: "),
            "{:?}",
            error.places()
        );
    }
}
