//! The team file: `hosts.toml` in a profile folder, whose `[hosts]` table names the team's
//! daemons for `--hosts` (`ps`, `doctor`, `stats`):
//!
//! ```toml
//! [hosts]
//! gpu1 = "ssh://me@gpu1"   # a URL: tcp://, ssh://, unix://
//! gpu2 = "gpu2-context"    # a docker CLI context name
//! ```
//!
//! It is found as profiles are (`SearchPath`): `./envctl/hosts.toml`, then each
//! `ENVCTL_PROFILE_PATH` folder's, then `$XDG_CONFIG_HOME/envctl/profiles/hosts.toml`; the
//! first one there is the team file, so a project's hosts come before the team's shared
//! folder's, and those before the user's own. `hosts` is therefore no profile name. A
//! name of `--hosts` resolves through this table first, then as a context name, then as a
//! URL; `@team` is every host of the table, in its order (`@` starts no context name, URL
//! or key, so it never hides one). The file is read as every file envctl did not write
//! (`untrusted`), and a malformed one is an error with its file, line and column.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::profile::diagnostic::{Diagnostic, SourceText};

/// The team file's name in each profile folder.
pub const TEAM_FILE: &str = crate::profile::TEAM_FILE;

/// The word of `--hosts` for every host of the team file.
pub const EVERY_HOST: &str = "@team";

/// The largest team file read (a few lines a host).
const MAXIMUM_TEAM_FILE_BYTES: u64 = 1024 * 1024;

/// One host of the table: its name and what it stands for (a URL or a context name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamHost {
    pub name: String,
    pub target: String,
}

/// A team file read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamFile {
    /// As the user should read it.
    pub path: String,
    /// In the file's order.
    pub hosts: Vec<TeamHost>,
}

impl TeamFile {
    pub fn get(&self, name: &str) -> Option<&TeamHost> {
        self.hosts.iter().find(|host| host.name == name)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("cannot read the team file `{path}`")]
    Read {
        path: String,
        #[source]
        source: crate::untrusted::ReadError,
    },
    #[error("invalid team file: {} in `{path}`", crate::profile::error::plural(diagnostics.len(), "problem"))]
    Invalid {
        path: String,
        diagnostics: Vec<Diagnostic>,
    },
}

impl TeamError {
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            TeamError::Invalid { diagnostics, .. } => diagnostics,
            TeamError::Read { .. } => &[],
        }
    }

    pub fn hint(&self) -> String {
        match self {
            TeamError::Read { .. } => {
                "the team file must be a readable regular file inside its profile folder".into()
            }
            TeamError::Invalid { .. } => {
                "docs/shared-servers.md (\"Several servers\") describes the team file: `[hosts]` with `name = \"ssh://user@host\"` or `name = \"context\"`".into()
            }
        }
    }
}

/// The team file of `search_path`: the first `hosts.toml` of its folders, in their order;
/// `None` when no folder has one.
pub fn find(search_path: &crate::profile::SearchPath) -> Result<Option<TeamFile>, TeamError> {
    for directory in search_path
        .locations
        .iter()
        .filter_map(|location| location.directory.as_deref())
    {
        let path = directory.join(TEAM_FILE);
        if let Some(team) = load(&path)? {
            return Ok(Some(team));
        }
    }
    Ok(None)
}

/// The team file at `path`, `None` when there is none.
pub fn load(path: &Path) -> Result<Option<TeamFile>, TeamError> {
    let shown = path.display().to_string();
    let bytes = match crate::untrusted::read(
        path,
        MAXIMUM_TEAM_FILE_BYTES,
        crate::untrusted::Named::Found,
    ) {
        Ok(None) => return Ok(None),
        Ok(Some(bytes)) => bytes,
        Err(source) => {
            return Err(TeamError::Read {
                path: shown,
                source,
            });
        }
    };
    let text = crate::profile::file::decode_profile_bytes(bytes, &shown).map_err(|diagnostic| {
        TeamError::Invalid {
            path: shown.clone(),
            diagnostics: vec![diagnostic],
        }
    })?;
    parse(&shown, &text).map(Some)
}

/// Whether `name` may be a key of `[hosts]`: a docker CLI context name's characters
/// (`^[a-zA-Z0-9][a-zA-Z0-9_.+-]*$`), so it never holds the `,` of `--hosts` lists, a
/// scheme's `://` or the `@` of [`EVERY_HOST`].
pub fn is_host_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric())
        && characters.all(|character| {
            character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '+' | '-')
        })
}

/// Parses `text`, the team file `path`; every problem with its line and column.
pub fn parse(path: &str, text: &str) -> Result<TeamFile, TeamError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source = SourceText::new(path.to_string(), text);
    let mut diagnostics = Vec::new();
    let mut error = |span: Range<usize>, message: String, hint: Option<String>| {
        diagnostics.push(source.diagnostic(span, message, hint));
    };
    let mut hosts: Vec<TeamHost> = Vec::new();
    let (table, syntax_errors) = DeTable::parse_recoverable(text);
    if syntax_errors.is_empty() {
        for (key, value) in table.get_ref() {
            let name = key.get_ref().as_ref();
            if name != "hosts" {
                error(
                    key.span(),
                    format!("unknown table `{name}`"),
                    Some(crate::profile::diagnostic::unknown_key_hint(
                        crate::suggest::did_you_mean(name, &["hosts"]),
                        &["hosts"],
                    )),
                );
                continue;
            }
            let DeValue::Table(entries) = value.get_ref() else {
                error(
                    value.span(),
                    "`hosts` must be a table".into(),
                    Some("write `[hosts]` and a line per host: `gpu1 = \"ssh://me@gpu1\"`".into()),
                );
                continue;
            };
            for (key, value) in entries {
                host_entry(key, value, &mut hosts, &mut error);
            }
        }
    } else {
        for syntax in syntax_errors {
            error(
                syntax.span().unwrap_or(0..0),
                format!("invalid TOML: {}", syntax.message().trim_end()),
                Some("see https://toml.io for the syntax".into()),
            );
        }
    }
    if diagnostics.is_empty() {
        return Ok(TeamFile {
            path: path.to_string(),
            hosts,
        });
    }
    diagnostics.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    diagnostics.dedup();
    Err(TeamError::Invalid {
        path: path.to_string(),
        diagnostics,
    })
}

fn host_entry(
    key: &Spanned<std::borrow::Cow<'_, str>>,
    value: &Spanned<DeValue<'_>>,
    hosts: &mut Vec<TeamHost>,
    error: &mut impl FnMut(Range<usize>, String, Option<String>),
) {
    let name = key.get_ref().as_ref();
    if !is_host_name(name) {
        error(
            key.span(),
            format!("`{name}` cannot name a host"),
            Some(
                "a host's name is letters, digits and `_ . + -`, beginning with a letter or digit (as a docker context's)"
                    .into(),
            ),
        );
        return;
    }
    let DeValue::String(target) = value.get_ref() else {
        error(
            value.span(),
            format!("host `{name}` must be a string"),
            Some(format!(
                "a URL or a docker context name: `{name} = \"ssh://me@{name}\"`"
            )),
        );
        return;
    };
    let target = target.as_ref().trim();
    let valid = if target.contains("://") {
        !target.contains(',')
    } else {
        is_host_name(target)
    };
    if !valid {
        error(
            value.span(),
            format!("host `{name}` is neither a URL nor a docker context name"),
            Some(
                "give a URL (`ssh://user@host`, `tcp://host:2376`, `unix:///path`) or a context name of `docker context ls`"
                    .into(),
            ),
        );
        return;
    }
    // A word that would reach ssh unquoted (a socket path the far side's shell runs, a
    // user name with shell syntax) is refused here, with this line, before any ssh runs:
    // a cloned repository's team file is the repository author's text.
    if let Some(refusal) = crate::facts::ssh::ssh_refusal(target) {
        error(
            value.span(),
            format!("host `{name}`: envctl does not give this endpoint to ssh: {refusal}"),
            Some(
                "write `ssh://[USER@]HOST[:PORT][/SOCKET]` with plain words, or a host of ~/.ssh/config: `gpu1 = \"ssh://gpu1\"`"
                    .into(),
            ),
        );
        return;
    }
    hosts.push(TeamHost {
        name: name.to_string(),
        target: target.to_string(),
    });
}

/// Where the team file is looked for, for messages: each profile folder's `hosts.toml`.
pub fn looked(search_path: &crate::profile::SearchPath) -> Vec<PathBuf> {
    search_path
        .locations
        .iter()
        .filter_map(|location| location.directory.as_deref())
        .map(|directory| directory.join(TEAM_FILE))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_in_order_with_urls_and_context_names() {
        let team = parse(
            "envctl/hosts.toml",
            "[hosts]\ngpu1 = \"ssh://me@gpu1\"\ngpu2 = \"gpu2-context\"\n",
        )
        .unwrap();
        assert_eq!(
            team.hosts,
            vec![
                TeamHost {
                    name: "gpu1".into(),
                    target: "ssh://me@gpu1".into()
                },
                TeamHost {
                    name: "gpu2".into(),
                    target: "gpu2-context".into()
                },
            ]
        );
        assert_eq!(parse("h.toml", "").unwrap().hosts, Vec::new());
    }

    #[test]
    fn ssh_words_a_shell_would_read_are_refused_on_their_line() {
        for (line, hostile) in [
            (
                2,
                "ssh://root@127.0.0.1/run/docker.sock;touch$IFS/tmp/PWN;true",
            ),
            (3, "ssh://a%3Bb@gpu1"),
            (4, "ssh://gpu1/run/d.sock`id`"),
            (5, "ssh://gpu1/run/$(id).sock"),
            (6, "ssh://-oProxyCommand=x"),
            (7, "ssh://me:pw@gpu1"),
        ] {
            let mut text = "[hosts]\n".to_string();
            for _ in 2..line {
                text.push_str("# spacer\n");
            }
            text.push_str(&format!("gpu = {hostile:?}\n"));
            let error = parse("envctl/hosts.toml", &text).unwrap_err();
            let diagnostic = &error.diagnostics()[0];
            assert_eq!(
                (diagnostic.line, diagnostic.column),
                (line, 7),
                "{hostile}: {error:?}"
            );
            assert!(
                diagnostic
                    .message
                    .contains("does not give this endpoint to ssh"),
                "{diagnostic:?}"
            );
        }
        // Plain words pass: a user, a port, a socket path.
        let team = parse(
            "h.toml",
            "[hosts]\ngpu = \"ssh://me.x@gpu-1.lab:2222/run/user/1000/docker.sock\"\n",
        )
        .unwrap();
        assert_eq!(team.hosts.len(), 1);
    }

    #[test]
    fn each_problem_has_its_line_and_column() {
        let error = parse(
            "envctl/hosts.toml",
            "[hosts]\ngpu1 = 3\n\"@x\" = \"ssh://a\"\ngpu3 = \"a,b\"\n[host]\n",
        )
        .unwrap_err();
        let places: Vec<(usize, usize)> = error
            .diagnostics()
            .iter()
            .map(|diagnostic| (diagnostic.line, diagnostic.column))
            .collect();
        assert_eq!(places, vec![(2, 8), (3, 1), (4, 8), (5, 2)], "{error:?}");
        assert!(error.to_string().contains("envctl/hosts.toml"), "{error}");
        let syntax = parse("h.toml", "[hosts]\ngpu1 = \n").unwrap_err();
        assert_eq!(syntax.diagnostics()[0].line, 2, "{syntax:?}");
    }

    #[test]
    fn the_every_host_word_can_name_no_host() {
        assert!(!is_host_name(EVERY_HOST));
        assert!(is_host_name("gpu-2.lab"));
        assert!(!is_host_name("-x"));
    }
}
