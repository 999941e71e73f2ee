//! The keys whose values are strings or lists of them: `extends`, `name`, `image`,
//! `command` and `entrypoint`, `workdir`, `user`, `hostname`, and the `[commands]` table.

use std::collections::BTreeMap;

use super::{Checker, RESERVED_COMMANDS, Value};
use crate::profile::host_access::{self};
use crate::profile::layer::ExtendsReference;

impl Checker<'_> {
    pub(super) fn string(&mut self, key: &str, value: &Value<'_>) -> Option<String> {
        match value.get_ref().as_str() {
            Some(text) => Some(text.to_string()),
            None => {
                self.type_error(key, value, "a string", &format!("{key} = \"…\""));
                None
            }
        }
    }

    fn non_empty_string(&mut self, key: &str, value: &Value<'_>) -> Option<String> {
        let text = self.string(key, value)?;
        if text.trim().is_empty() {
            self.error(value.span(), format!("`{key}` is empty"), None);
            return None;
        }
        Some(text)
    }

    /// A profile extends profiles only: a name, or a path to a `.toml` file. Anything else
    /// (`/etc/shadow`) is refused here, before any lookup, so it is never opened.
    pub(super) fn extends(&mut self, value: &Value<'_>) -> Option<ExtendsReference> {
        let target = self.non_empty_string("extends", value)?;
        if crate::profile::resolve::is_path_argument(&target) && !target.ends_with(".toml") {
            self.error(
                value.span(),
                format!(
                    "`extends` = \"{}\" is neither a profile name nor a `.toml` file; a profile extends profiles only",
                    target.escape_debug()
                ),
                Some("write a profile name (extends = \"pytorch-2.8\") or the path of a profile file (extends = \"base.toml\")".into()),
            );
            return None;
        }
        Some(ExtendsReference {
            target,
            place: self.source.diagnostic(value.span(), String::new(), None),
        })
    }

    pub(super) fn profile_name(&mut self, value: &Value<'_>) -> Option<String> {
        let name = self.non_empty_string("name", value)?;
        if let Err(message) = check_profile_name(&name) {
            self.error(
                value.span(),
                message,
                Some("for example: name = \"pytorch-2.8-team\"".into()),
            );
            return None;
        }
        Some(name)
    }

    pub(super) fn image(
        &mut self,
        value: &Value<'_>,
    ) -> Option<crate::profile::image::ImageReference> {
        let text = self.string("image", value)?;
        match text.parse() {
            Ok(reference) => Some(reference),
            Err(message) => {
                self.error(
                    value.span(),
                    format!("`image` is not a valid image reference: {message}"),
                    Some("write [registry[:port]/]path[:tag][@sha256:digest], for example \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"".into()),
                );
                None
            }
        }
    }

    fn string_array(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<String>> {
        let example = format!("{key} = [\"python\", \"train.py\"]");
        let Some(array) = value.get_ref().as_array() else {
            self.type_error(key, value, "an array of strings", &example);
            return None;
        };
        if array.is_empty() {
            self.error(
                value.span(),
                format!("`{key}` is an empty array"),
                Some(format!("for example: {example}")),
            );
            return None;
        }
        let mut items = Vec::new();
        let mut valid = true;
        for item in array.iter() {
            match item.get_ref().as_str() {
                Some(text) => items.push(text.to_string()),
                None => {
                    valid = false;
                    self.error(
                        item.span(),
                        format!(
                            "`{key}` items must be strings, found {}",
                            item.get_ref().type_str()
                        ),
                        Some("quote each argument: [\"--epochs\", \"10\"]".into()),
                    );
                }
            }
        }
        valid.then_some(items)
    }

    pub(super) fn command(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<String>> {
        if value.get_ref().is_str() {
            self.error(
                value.span(),
                format!("`{key}` must be an array of strings, not a single string"),
                Some("split the words yourself, as exec form: [\"python\", \"train.py\"]; for a shell line use [\"sh\", \"-c\", \"…\"]".into()),
            );
            return None;
        }
        // `[command]` with names under it is a typo of the `[commands]` table (issue 40):
        // `command` itself is the main process, one array.
        if key == "command" && value.get_ref().is_table() {
            self.error(
                value.span(),
                "`command` is the container's main process (an array of strings), found a table".to_string(),
                Some("did you mean `[commands]`, the table of named commands (`envctl exec PROFILE NAME`)?".into()),
            );
            return None;
        }
        self.string_array(key, value)
    }

    pub(super) fn workdir(&mut self, value: &Value<'_>) -> Option<String> {
        let path = self.non_empty_string("workdir", value)?;
        if !path.starts_with('/') {
            self.error(
                value.span(),
                format!("`workdir` must be an absolute path in the container, found `{path}`"),
                Some("for example: workdir = \"/workspace\"".into()),
            );
            return None;
        }
        Some(path)
    }

    pub(super) fn user(&mut self, value: &Value<'_>) -> Option<String> {
        let user = self.non_empty_string("user", value)?;
        if let Err(message) = check_user(&user) {
            self.error(
                value.span(),
                message,
                Some("write a name, a uid, or uid:gid, for example \"1000:1000\"".into()),
            );
            return None;
        }
        Some(user)
    }

    pub(super) fn hostname(&mut self, value: &Value<'_>) -> Option<String> {
        let text = self.string("hostname", value)?;
        match host_access::check_hostname(&text) {
            Ok(()) => Some(text),
            Err(message) => {
                self.error(
                    value.span(),
                    message,
                    Some("for example: hostname = \"trainer-0\"".into()),
                );
                None
            }
        }
    }

    pub(super) fn commands(&mut self, value: &Value<'_>) -> BTreeMap<String, Vec<String>> {
        let mut commands = BTreeMap::new();
        let Some(table) = value.get_ref().as_table() else {
            self.type_error(
                "commands",
                value,
                "a table",
                "[commands] train = [\"python\", \"train.py\"]",
            );
            return commands;
        };
        for (key, item) in table {
            let name = key.get_ref().as_ref();
            if RESERVED_COMMANDS.contains(&name) {
                self.error(
                    key.span(),
                    format!("`{name}` is built into envctl and cannot be redefined"),
                    Some("choose another command name".into()),
                );
                continue;
            }
            if name.is_empty()
                || name.starts_with('-')
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                self.error(key.span(), format!("command name `{}` must be letters, digits, `-`, `_` or `.`, not starting with `-`", name.escape_debug()), None);
                continue;
            }
            if let Some(command) = self.command(&format!("commands.{name}"), item) {
                commands.insert(name.to_string(), command);
            }
        }
        commands
    }
}

/// Profile names: what `envctl up NAME` and the container name `envctl-NAME` accept.
pub fn check_profile_name(name: &str) -> Result<(), String> {
    let valid = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "profile name `{}` must be at most 64 lower-case letters, digits, `-`, `_` or `.`, starting with a letter or digit",
            name.escape_debug()
        ))
    }
}

pub(super) fn check_user(user: &str) -> Result<(), String> {
    let part_valid = |part: &str| {
        !part.is_empty()
            && (part.chars().all(|c| c.is_ascii_digit())
                || (part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    && part.len() <= 32))
    };
    let (name, group) = match user.split_once(':') {
        Some((name, group)) => (name, Some(group)),
        None => (user, None),
    };
    if part_valid(name) && group.is_none_or(part_valid) {
        Ok(())
    } else {
        Err(format!(
            "`user` = \"{}\" is not a user name, uid or uid:gid",
            user.escape_debug()
        ))
    }
}
