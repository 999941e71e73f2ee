//! The trust rule for profiles envctl did not make: a profile from a repository (`./envctl/`,
//! a folder of `ENVCTL_PROFILE_PATH`, a path on the command line) that asks for root on the
//! host — a mount of `/`, `/etc` or an engine's socket, `SYS_ADMIN` or `ALL`, a disk or
//! memory device, the host's network or IPC — gets it only with an explicit yes, `--trust`,
//! as an editor asks before it trusts a workspace. "Clone, `envctl up`" would otherwise hand
//! the repository's author root on the machine.
//!
//! What counts is `checks::safety::root_equivalent` (pure); here each setting is tied to the
//! file and line that wrote it, a bind source is judged on the real path a link in it leads
//! to, and [`gate`] is the one call `ops::up::plan` makes, so `up`, `up --dry-run` and `run`
//! all pass through it. Settings written by a bundled profile or one of the user's own
//! (`$XDG_CONFIG_HOME/envctl/profiles/`) are the user's choice and pass as before.
//!
//! `ENVCTL_PROFILE_PATH` counts as a repository: its folders are a team's shared files,
//! written by others, the way a cloned repository is.
//!
//! The yes is `--trust` for one command, or `envctl trust PROFILE` for as long as the files
//! stay as they are: it records each file that wrote such a setting by its real path and
//! the SHA-256 of its content in `$XDG_CONFIG_HOME/envctl/trusted.json` ([`TRUST_RECORD`]);
//! a changed file (or one moved elsewhere) needs trust again. The record is read through
//! `untrusted` and written through `files`.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checks::safety::{RootEquivalent, root_equivalent};
use crate::context::Context;
use crate::error::Error;
use crate::profile::{ResolvedProfile, SourceKind};

/// The flag that says yes.
pub const TRUST_FLAG: &str = "--trust";

/// The trust record's file name, in `$XDG_CONFIG_HOME/envctl/`.
pub const TRUST_RECORD: &str = "trusted.json";

/// The most a trust record may hold.
const MAXIMUM_RECORD_BYTES: u64 = 4 * 1024 * 1024;

/// The trust record: per profile file (its real path), the SHA-256 of the content trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    version: u32,
    files: BTreeMap<String, String>,
}

/// Where the trust record lies, when there is a config folder.
fn record_path(context: &Context) -> Option<PathBuf> {
    context
        .environment
        .config_home()
        .map(|folder| folder.join("envctl").join(TRUST_RECORD))
}

/// The record as it is now; an unreadable one trusts nothing, said once.
fn read_record(path: &Path, context: &Context) -> Record {
    match crate::untrusted::read_json::<Record>(path, MAXIMUM_RECORD_BYTES) {
        Ok(record) => record.unwrap_or_default(),
        Err(error) => {
            context.printer.warn(&format!(
                "the trust record {} cannot be read ({}); it trusts nothing until `envctl trust PROFILE` writes it again",
                path.display(),
                crate::ui::text::shown(&error)
            ));
            Record::default()
        }
    }
}

/// A profile file's real path and the SHA-256 of its content, when it can be read.
fn fingerprint(file: &str) -> Option<(String, String)> {
    let real = std::fs::canonicalize(file).ok()?;
    let bytes = crate::untrusted::read(
        &real,
        crate::profile::file::MAXIMUM_PROFILE_BYTES,
        crate::untrusted::Named::ByTheUser,
    )
    .ok()??;
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Some((real.display().to_string(), digest))
}

/// The distinct files of `grants`, in order.
fn files_of(grants: &[Grant]) -> Vec<&str> {
    let mut files: Vec<&str> = Vec::new();
    for grant in grants {
        if !files.contains(&grant.file.as_str()) {
            files.push(&grant.file);
        }
    }
    files
}

/// Whether the record trusts every file of `grants` as it is now.
fn recorded(grants: &[Grant], context: &Context) -> bool {
    let Some(path) = record_path(context) else {
        return false;
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return false;
    }
    let record = read_record(&path, context);
    files_of(grants).iter().all(|file| {
        fingerprint(file).is_some_and(|(real, digest)| record.files.get(&real) == Some(&digest))
    })
}

/// `envctl trust PROFILE`: records the files that give `profile` its root-equivalent
/// settings, as they are now; returns the settings (none: nothing was written).
pub fn trust(profile: &str, context: &Context) -> Result<Vec<Grant>, Error> {
    let resolved = context.search_path.resolve(profile)?;
    let grants = grants(&resolved, context);
    if grants.is_empty() {
        return Ok(grants);
    }
    let path = record_path(context).ok_or_else(|| Error::Usage {
        message: "no folder for the trust record: neither XDG_CONFIG_HOME nor HOME is set".into(),
        hint: Some(format!(
            "set HOME, or give `{TRUST_FLAG}` to each command instead"
        )),
    })?;
    let mut record = if std::fs::symlink_metadata(&path).is_ok() {
        read_record(&path, context)
    } else {
        Record::default()
    };
    record.version = 1;
    for file in files_of(&grants) {
        let (real, digest) = fingerprint(file).ok_or_else(|| Error::Usage {
            message: format!(
                "cannot read `{}` to record it",
                crate::ui::text::shown(file)
            ),
            hint: Some("check that the file exists and is readable".into()),
        })?;
        record.files.insert(real, digest);
    }
    let write_error = |source: std::io::Error| Error::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(write_error)?;
    }
    let mut text = serde_json::to_string_pretty(&record)
        .map_err(|error| Error::Internal(format!("the trust record: {error}")))?;
    text.push('\n');
    crate::files::write_atomically(&path, text.as_bytes(), crate::files::Existing::Replace)
        .map_err(|error| write_error(std::io::Error::other(error)))?;
    Ok(grants)
}

/// One root-equivalent setting of a profile envctl did not make, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    #[serde(flatten)]
    pub setting: RootEquivalent,
    /// The profile file that wrote it, as shown to the user.
    pub file: String,
    /// Its line in that file, when it could be found there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Grant {
    /// `envctl/p.toml:3: mounts "/:/host" gives …`: one line, outside text shown escaped.
    pub fn describe(&self) -> String {
        let place = match self.line {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.clone(),
        };
        crate::ui::text::shown(&format!(
            "{place}: `{}` = \"{}\" gives {}",
            self.setting.key, self.setting.value, self.setting.gives
        ))
        .into_owned()
    }
}

/// What `up`, its dry run and `run` were told about trust: whether `--trust` was given, and
/// the command line to run with it (the hint of the refusal).
#[derive(Debug, Clone, Default)]
pub struct Consent {
    pub given: bool,
    /// The command as the user would type it again with `--trust`.
    pub command: String,
}

impl Consent {
    /// The consent of a command given as `words` after `envctl` (its subcommand first),
    /// `--trust` among them or not: the command to suggest is the same words with
    /// `--trust` after the subcommand and its profile, behind the daemon the user chose (`-H`,
    /// `--context`). A `-e KEY=VALUE` whose value is secret is suggested as `-e KEY`.
    pub fn of(given: bool, words: &[String], context: &Context) -> Consent {
        let mut line = vec!["envctl".to_string()];
        if let Some(host) = &context.host_flag {
            line.extend(["-H".to_string(), host.clone()]);
        }
        if let Some(name) = &context.context_flag {
            line.extend(["--context".to_string(), name.clone()]);
        }
        // After the subcommand and its profile, before any `--` and the command behind it.
        let mut words = words.iter();
        line.extend(words.by_ref().take(2).cloned());
        line.push(TRUST_FLAG.to_string());
        let mut after_env_flag = false;
        for word in words {
            let shown = match word.split_once('=') {
                Some((key, value)) if after_env_flag && crate::secret::is_secret(key, value) => {
                    key.to_string()
                }
                _ => word.clone(),
            };
            after_env_flag = word == "-e" || word == "--env";
            line.push(shown);
        }
        Consent {
            given,
            command: line
                .iter()
                .map(|word| crate::container_plan::shell_quote(word))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The words after `envctl` that ask for the `run` of `request` again.
pub fn run_words(request: &crate::ops::run::RunRequest) -> Vec<String> {
    let mut words = vec!["run".to_string(), request.profile.clone()];
    if let Some(name) = &request.name {
        words.extend(["--name".to_string(), name.clone()]);
    }
    for (set, flag) in [(request.force, "--force"), (request.locked, "--locked")] {
        if set {
            words.push(flag.to_string());
        }
    }
    if request.pull != crate::ops::up::PullPolicy::Missing
        && let Some(value) = clap::ValueEnum::to_possible_value(&request.pull)
    {
        words.extend(["--pull".to_string(), value.get_name().to_string()]);
    }
    for (values, flag) in [
        (&request.env, "-e"),
        (&request.volume, "--volume"),
        (&request.ulimit, "--ulimit"),
    ] {
        for value in values {
            words.extend([flag.to_string(), value.clone()]);
        }
    }
    if let Some(gpus) = &request.gpus {
        words.extend(["--gpus".to_string(), gpus.clone()]);
    }
    if !request.command.is_empty() {
        words.push("--".to_string());
        words.extend(request.command.iter().cloned());
    }
    words
}

/// The root-equivalent settings of `resolved` that a file envctl did not make wrote, each
/// once, with its file and line.
pub fn grants(resolved: &ResolvedProfile, context: &Context) -> Vec<Grant> {
    let home = context.environment.home();
    let working_directory = context.working_directory().ok();
    let real_source = |mount: &crate::profile::model::Mount| -> Option<PathBuf> {
        let working_directory = working_directory.as_deref()?;
        let absolute = crate::container_plan::resolve_bind_source(
            &mount.source,
            working_directory,
            home.as_deref(),
        )
        .ok()?;
        std::fs::canonicalize(absolute).ok()
    };
    let user_folders: Vec<&Path> = context
        .search_path
        .locations
        .iter()
        .filter(|location| location.kind == SourceKind::User)
        .filter_map(|location| location.directory.as_deref())
        .collect();
    root_equivalent(&resolved.profile, home.as_deref(), &real_source)
        .into_iter()
        .filter_map(|setting| {
            let file = resolved
                .origins
                .get(setting.key)
                .cloned()
                .unwrap_or_else(|| resolved.file.clone());
            if is_envctls_or_the_users(&file, &user_folders) {
                return None;
            }
            let line = line_of(&file, setting.key, &setting.value);
            Some(Grant {
                setting,
                file,
                line,
            })
        })
        .collect()
}

/// `up`'s, the dry run's and `run`'s gate: the settings that need trust are said one line
/// each (as warnings when `--trust` was given) and, without it, refused with every one
/// named and the command to run with `--trust` as the hint. Returns what was trusted.
pub fn gate(
    resolved: &ResolvedProfile,
    consent: &Consent,
    context: &Context,
) -> Result<Vec<Grant>, Error> {
    let grants = grants(resolved, context);
    if grants.is_empty() {
        return Ok(grants);
    }
    let how = if consent.given {
        TRUST_FLAG
    } else if recorded(&grants, context) {
        "envctl trust"
    } else {
        return Err(refusal(resolved, &grants, &consent.command));
    };
    for grant in &grants {
        context
            .printer
            .warn(&format!("trusted ({how}): {}", grant.describe()));
    }
    Ok(grants)
}

/// The refusal: each setting on a line of its own, the hint the exact command with `--trust`.
fn refusal(resolved: &ResolvedProfile, grants: &[Grant], command: &str) -> Error {
    let message = format!(
        "profile `{}` ({}) asks for root-equivalent access to this host, which a profile envctl did not make gets only with {TRUST_FLAG}:",
        crate::ui::text::shown(&resolved.profile.name),
        crate::ui::text::shown(&resolved.file),
    );
    Error::TrustRequired {
        message,
        settings: grants.iter().map(Grant::describe).collect(),
        hint: format!(
            "read the settings above; if you trust whoever wrote the profile, run `{command}` (this once), or `envctl trust {}` (until the file changes)",
            crate::container_plan::shell_quote(&resolved_argument(resolved))
        ),
    }
}

/// How `envctl trust` finds the profile again: the file's path (it is never a bundled or
/// user profile here).
fn resolved_argument(resolved: &ResolvedProfile) -> String {
    let file = &resolved.file;
    if crate::profile::resolve::is_path_argument(file) {
        file.clone()
    } else {
        format!("./{file}")
    }
}

/// A bundled profile, or a file in the user's own profile folder.
fn is_envctls_or_the_users(file: &str, user_folders: &[&Path]) -> bool {
    file.starts_with("<bundled>/")
        || user_folders
            .iter()
            .any(|folder| Path::new(file).starts_with(folder))
}

/// The line of `file` that writes `value` under `key` (`mounts = [` … `"/:/host"`), else
/// the line of the key itself; `None` when the file cannot be read again or says neither.
fn line_of(file: &str, key: &str, value: &str) -> Option<usize> {
    let bytes = crate::untrusted::read(
        Path::new(file),
        crate::profile::file::MAXIMUM_PROFILE_BYTES,
        crate::untrusted::Named::ByTheUser,
    )
    .ok()??;
    line_in(&String::from_utf8_lossy(&bytes), key, value)
}

/// [`line_of`] over the file's text: 1-based.
fn line_in(text: &str, key: &str, value: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let key_line = lines.iter().position(|line| {
        line.trim_start()
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    })?;
    // A capability may be written in lower case or with `CAP_`, a device without its
    // container path: the first line from the key on that holds the value (case aside), else
    // the device's host path, is the place.
    let wanted = value.to_ascii_lowercase();
    let host_part =
        (key == "devices").then(|| wanted.split(':').next().unwrap_or(&wanted).to_string());
    let find = |needle: &str| {
        lines[key_line..]
            .iter()
            .take(64)
            .position(|line| line.to_ascii_lowercase().contains(needle))
            .map(|offset| key_line + offset)
    };
    let found = find(&wanted).or_else(|| host_part.as_deref().and_then(find));
    Some(found.unwrap_or(key_line) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_of_a_setting_is_its_entry_else_its_key() {
        let text = "image = \"x\"\nmounts = [\n  \"./:/w\",\n  \"/:/host\",\n]\ncap_add = [\"sys_admin\"]\nnetwork = \"host\"\n";
        assert_eq!(line_in(text, "mounts", "/:/host"), Some(4));
        assert_eq!(line_in(text, "cap_add", "SYS_ADMIN"), Some(6));
        assert_eq!(line_in(text, "network", "host"), Some(7));
        assert_eq!(line_in(text, "ipc", "host"), None);
        // `mounts_extra` is not `mounts`.
        assert_eq!(line_in("mounts_extra = 1\n", "mounts", "x"), None);
    }

    #[test]
    fn bundled_and_user_files_need_no_trust() {
        let user = Path::new("/home/ada/.config/envctl/profiles");
        assert!(is_envctls_or_the_users("<bundled>/pytorch.toml", &[user]));
        assert!(is_envctls_or_the_users(
            "/home/ada/.config/envctl/profiles/p.toml",
            &[user]
        ));
        assert!(!is_envctls_or_the_users("/src/repo/envctl/p.toml", &[user]));
        assert!(!is_envctls_or_the_users(
            "/home/ada/.config/envctl/profiles-evil/p.toml",
            &[user]
        ));
    }
}
