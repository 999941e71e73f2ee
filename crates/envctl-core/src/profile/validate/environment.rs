//! `env` and `labels`: name-value tables, with the names a process environment takes.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::DeValue;

use super::{Checker, Value};

impl Checker<'_> {
    pub(super) fn env(&mut self, value: &Value<'_>) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        match value.get_ref() {
            DeValue::Table(table) => {
                for (key, item) in table {
                    let name = key.get_ref().to_string();
                    if !self.env_name(&name, key.span()) {
                        continue;
                    }
                    match item.get_ref().as_str() {
                        Some(text) => {
                            env.insert(name, text.to_string());
                        }
                        None => {
                            let shown = match item.get_ref() {
                                DeValue::Integer(integer) => Some(integer.as_str().to_string()),
                                DeValue::Float(float) => Some(float.as_str().to_string()),
                                DeValue::Boolean(flag) => Some(flag.to_string()),
                                _ => None,
                            };
                            let hint = match shown {
                                Some(shown) => format!("quote it: {name} = \"{shown}\""),
                                None => "environment values are strings".into(),
                            };
                            self.error(
                                item.span(),
                                format!(
                                    "`env.{name}` must be a string, found {}",
                                    item.get_ref().type_str()
                                ),
                                Some(hint),
                            );
                        }
                    }
                }
            }
            DeValue::Array(array) => {
                for item in array.iter() {
                    let Some(text) = item.get_ref().as_str() else {
                        self.error(
                            item.span(),
                            format!(
                                "`env` items must be \"KEY=VALUE\" strings, found {}",
                                item.get_ref().type_str()
                            ),
                            None,
                        );
                        continue;
                    };
                    let Some((name, variable)) = text.split_once('=') else {
                        self.error(
                            item.span(),
                            format!("`env` item \"{text}\" has no `=`"),
                            Some("write \"KEY=VALUE\"".into()),
                        );
                        continue;
                    };
                    if self.env_name(name, item.span())
                        && env.insert(name.to_string(), variable.to_string()).is_some()
                    {
                        self.error(item.span(), format!("`env` sets `{name}` twice"), None);
                    }
                }
            }
            _ => self.type_error(
                "env",
                value,
                "a table of strings",
                "env = { PYTHONUNBUFFERED = \"1\" }",
            ),
        }
        env
    }

    /// `labels = { "com.example.team" = "vision" }`: a table of strings, as compose's
    /// `labels`. envctl's own `envctl.*` labels are envctl's to write.
    pub(super) fn labels(&mut self, value: &Value<'_>) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        let Some(table) = value.get_ref().as_table() else {
            self.type_error(
                "labels",
                value,
                "a table of strings",
                "labels = { \"com.example.team\" = \"vision\" }",
            );
            return labels;
        };
        for (key, item) in table {
            let name = key.get_ref().to_string();
            let problem = if name.trim().is_empty() {
                Some(("a label name is empty".to_string(), None))
            } else if name.contains('\0') || name.chars().any(char::is_control) {
                Some((
                    format!(
                        "a label name cannot hold control characters: `{}`",
                        name.escape_debug()
                    ),
                    None,
                ))
            } else if name.starts_with("envctl.") {
                Some((
                    format!("`{name}`: labels under `envctl.` are envctl's own"),
                    Some("name it under your own prefix, e.g. `com.example.team`".to_string()),
                ))
            } else {
                None
            };
            if let Some((message, hint)) = problem {
                self.error(key.span(), message, hint);
                continue;
            }
            match item.get_ref().as_str() {
                Some(text) => {
                    labels.insert(name, text.to_string());
                }
                None => self.error(
                    item.span(),
                    format!(
                        "`labels.{name}` must be a string, found {}",
                        item.get_ref().type_str()
                    ),
                    Some("label values are strings: quote it".into()),
                ),
            }
        }
        labels
    }

    fn env_name(&mut self, name: &str, span: Range<usize>) -> bool {
        let problem = if name.is_empty() {
            Some("an environment variable name is empty")
        } else if name.contains('=') {
            Some("an environment variable name cannot contain `=`")
        } else if name.contains('\0') || name.chars().any(char::is_whitespace) {
            Some("an environment variable name cannot contain whitespace or NUL")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.error(span, format!("{problem}: `{}`", name.escape_debug()), None);
            return false;
        }
        true
    }
}
