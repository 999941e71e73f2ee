//! A policy file's TOML → [`Policy`], every problem collected with its line, column and a
//! hint, as a profile's are (`profile::diagnostic`, `crate::suggest` for unknown keys).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Policy, PolicyError, Rule};
use crate::profile::diagnostic::{
    CpuCount, Diagnostic, MAXIMUM_GPU_COUNT, SourceText, cpu_count, cpus_range_problem,
};
use crate::profile::image::ImageReference;
use crate::profile::size::ByteSize;

const TABLES: [&str; 5] = ["limits", "images", "ports", "gpus", "users"];
const LIMIT_KEYS: [&str; 5] = [
    "max_gpus_per_container",
    "max_gpus_per_user",
    "max_memory",
    "max_cpus",
    "require_memory_limit",
];
const IMAGE_KEYS: [&str; 1] = ["registries"];
const PORT_KEYS: [&str; 1] = ["loopback_only"];
const GPU_KEYS: [&str; 1] = ["fatal_xids"];
const USER_KEYS: [&str; 1] = ["unproven"];

type Value<'i> = Spanned<DeValue<'i>>;
type Key<'i> = Spanned<std::borrow::Cow<'i, str>>;

/// Parses `text`, the policy file `path` (as the user should read it).
pub fn parse(path: &str, text: &str) -> Result<Policy, PolicyError> {
    // A UTF-8 byte-order mark is not part of the TOML and must not count as a column.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source = SourceText::new(path.to_string(), text);
    let mut parser = Parser {
        source: &source,
        diagnostics: Vec::new(),
    };
    let (table, syntax_errors) = DeTable::parse_recoverable(text);
    let mut policy = Policy {
        path: path.to_string(),
        ..Policy::default()
    };
    if syntax_errors.is_empty() {
        parser.policy(table.get_ref(), &mut policy);
    } else {
        for error in syntax_errors {
            parser.error(
                error.span().unwrap_or(0..0),
                format!("invalid TOML: {}", error.message().trim_end()),
                Some("see https://toml.io for the syntax".into()),
            );
        }
    }
    let mut diagnostics = parser.diagnostics;
    if diagnostics.is_empty() {
        return Ok(policy);
    }
    diagnostics.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    diagnostics.dedup();
    Err(PolicyError::Invalid {
        path: path.to_string(),
        diagnostics,
    })
}

struct Parser<'a> {
    source: &'a SourceText<'a>,
    diagnostics: Vec<Diagnostic>,
}

impl Parser<'_> {
    fn error(&mut self, span: Range<usize>, message: String, hint: Option<String>) {
        self.diagnostics
            .push(self.source.diagnostic(span, message, hint));
    }

    fn line(&self, key: &Key<'_>) -> usize {
        self.source.diagnostic(key.span(), String::new(), None).line
    }

    fn unknown_key(&mut self, key: &Key<'_>, known: &[&str], table: Option<&str>) {
        use crate::profile::diagnostic::KeyPlace;
        let name = key.get_ref().as_ref();
        // The policy's top keys are its tables, named as a header writes them (`[limits]`).
        let header = table.map(|table| format!("[{table}]"));
        let place = header.as_deref().map_or(KeyPlace::TopTable, KeyPlace::In);
        let (message, hint) = crate::profile::diagnostic::unknown_key(
            name,
            place,
            crate::suggest::did_you_mean(name, known),
            known,
        );
        self.error(key.span(), message, Some(hint));
    }

    fn policy(&mut self, table: &DeTable<'_>, policy: &mut Policy) {
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            if !TABLES.contains(&name) {
                self.unknown_key(key, &TABLES, None);
                continue;
            }
            let DeValue::Table(entries) = value.get_ref() else {
                self.error(
                    value.span(),
                    format!(
                        "`{name}` must be a table, found {}",
                        value.get_ref().type_str()
                    ),
                    Some(format!(
                        "write `[{name}]` on a line of its own, its keys below"
                    )),
                );
                continue;
            };
            for (key, value) in entries {
                let line = self.line(key);
                match (name, key.get_ref().as_ref()) {
                    ("limits", "max_gpus_per_container") => {
                        policy.max_gpus_per_container = self
                            .gpus("max_gpus_per_container", value)
                            .map(|value| Rule { value, line });
                    }
                    ("limits", "max_gpus_per_user") => {
                        policy.max_gpus_per_user = self
                            .gpus("max_gpus_per_user", value)
                            .map(|value| Rule { value, line });
                    }
                    ("limits", "max_memory") => {
                        policy.max_memory = self.memory(value).map(|value| Rule { value, line });
                    }
                    ("limits", "max_cpus") => {
                        policy.max_cpus = self.cpus(value).map(|value| Rule { value, line })
                    }
                    ("limits", "require_memory_limit") => {
                        policy.require_memory_limit = self
                            .boolean("limits.require_memory_limit", value)
                            .map(|value| Rule { value, line });
                    }
                    ("images", "registries") => {
                        policy.registries =
                            self.registries(value).map(|value| Rule { value, line });
                    }
                    ("ports", "loopback_only") => {
                        policy.loopback_only = self
                            .boolean("ports.loopback_only", value)
                            .map(|value| Rule { value, line });
                    }
                    ("gpus", "fatal_xids") => {
                        policy.fatal_xids = self.xids(value).map(|value| Rule { value, line });
                    }
                    ("users", "unproven") => {
                        policy.unproven = self.unproven(value).map(|value| Rule { value, line });
                    }
                    ("users", _) => self.unknown_key(key, &USER_KEYS, Some(name)),
                    ("limits", _) => self.unknown_key(key, &LIMIT_KEYS, Some(name)),
                    ("images", _) => self.unknown_key(key, &IMAGE_KEYS, Some(name)),
                    ("gpus", _) => self.unknown_key(key, &GPU_KEYS, Some(name)),
                    _ => self.unknown_key(key, &PORT_KEYS, Some(name)),
                }
            }
        }
    }

    fn type_error(&mut self, key: &str, value: &Value<'_>, expected: &str, example: &str) {
        let (message, hint) = crate::profile::diagnostic::type_problem(
            key,
            value.get_ref().type_str(),
            expected,
            example,
        );
        self.error(value.span(), message, Some(hint));
    }

    fn gpus(&mut self, key: &str, value: &Value<'_>) -> Option<u32> {
        let example = format!("{key} = 2");
        let DeValue::Integer(integer) = value.get_ref() else {
            self.type_error(&format!("limits.{key}"), value, "a whole number", &example);
            return None;
        };
        match i64::from_str_radix(integer.as_str(), integer.radix()) {
            Ok(count @ 0..=MAXIMUM_GPU_COUNT) => u32::try_from(count).ok(),
            _ => {
                self.error(
                    value.span(),
                    format!("`limits.{key}` must be a whole number from 0 to {MAXIMUM_GPU_COUNT}"),
                    Some(format!("for example: {example} (0 allows no GPU at all)")),
                );
                None
            }
        }
    }

    fn memory(&mut self, value: &Value<'_>) -> Option<ByteSize> {
        let example = "max_memory = \"64g\"";
        let DeValue::String(text) = value.get_ref() else {
            self.type_error(
                "limits.max_memory",
                value,
                "a size string as profiles write it",
                example,
            );
            return None;
        };
        match text.parse::<ByteSize>() {
            Ok(size) if size.bytes() > 0 => Some(size),
            Ok(_) => {
                self.error(
                    value.span(),
                    "`limits.max_memory` must be more than 0".into(),
                    Some(format!("for example: {example}")),
                );
                None
            }
            Err(message) => {
                self.error(
                    value.span(),
                    format!("`limits.max_memory`: {message}"),
                    Some(format!("for example: {example}")),
                );
                None
            }
        }
    }

    fn cpus(&mut self, value: &Value<'_>) -> Option<f64> {
        match cpu_count(value.get_ref()) {
            CpuCount::Cpus(cpus) => Some(cpus),
            CpuCount::NotANumber => {
                self.type_error("limits.max_cpus", value, "a number", "max_cpus = 16");
                None
            }
            CpuCount::OutOfRange => {
                let (message, hint) = cpus_range_problem("limits.max_cpus");
                self.error(value.span(), message, Some(hint));
                None
            }
        }
    }

    fn boolean(&mut self, key: &str, value: &Value<'_>) -> Option<bool> {
        match value.get_ref() {
            DeValue::Boolean(flag) => Some(*flag),
            _ => {
                let short = key.rsplit('.').next().unwrap_or(key);
                self.type_error(key, value, "true or false", &format!("{short} = true"));
                None
            }
        }
    }

    /// `users.unproven`: `"refuse"` or `"allow"`.
    fn unproven(&mut self, value: &Value<'_>) -> Option<super::Unproven> {
        match value.get_ref() {
            DeValue::String(word) if word == "refuse" => Some(super::Unproven::Refuse),
            DeValue::String(word) if word == "allow" => Some(super::Unproven::Allow),
            _ => {
                self.type_error(
                    "users.unproven",
                    value,
                    "\"refuse\" or \"allow\"",
                    "unproven = \"refuse\"",
                );
                None
            }
        }
    }

    /// `gpus.fatal_xids`: the Xids that mark a GPU failed (issue 43), each a whole number
    /// NVIDIA could give (1 to 999); an empty list marks none.
    fn xids(&mut self, value: &Value<'_>) -> Option<Vec<u32>> {
        let example = "fatal_xids = [48, 64, 74, 79, 92, 95, 119, 120]";
        let DeValue::Array(items) = value.get_ref() else {
            self.type_error("gpus.fatal_xids", value, "an array of Xid numbers", example);
            return None;
        };
        let mut xids = Vec::new();
        for item in items {
            let number = match item.get_ref() {
                DeValue::Integer(integer) => {
                    u32::from_str_radix(integer.as_str(), integer.radix()).ok()
                }
                _ => None,
            };
            match number {
                Some(xid) if (1..=999).contains(&xid) => {
                    if !xids.contains(&xid) {
                        xids.push(xid);
                    }
                }
                _ => {
                    self.error(
                        item.span(),
                        "`gpus.fatal_xids` takes Xid numbers from 1 to 999".into(),
                        Some(format!(
                            "for example: {example} (NVIDIA's list, the default)"
                        )),
                    );
                    return None;
                }
            }
        }
        Some(xids)
    }

    /// Registry host names, each in the canonical name an image's registry is compared
    /// in: Docker Hub by any of its names is `docker.io`, as `profile::image` says.
    fn registries(&mut self, value: &Value<'_>) -> Option<Vec<String>> {
        let example = "registries = [\"registry.example.com\", \"docker.io\"]";
        let Some(items) = value.get_ref().as_array() else {
            self.type_error(
                "images.registries",
                value,
                "an array of registry names",
                example,
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                value.span(),
                "`images.registries` is empty: no image could be used".into(),
                Some(format!(
                    "name the registries images may come from, {example}; leave the key out to allow any"
                )),
            );
            return None;
        }
        let mut registries = Vec::new();
        let mut valid = true;
        for item in items.iter() {
            let Some(text) = item.get_ref().as_str() else {
                self.type_error("images.registries", item, "an array of strings", example);
                valid = false;
                continue;
            };
            match canonical_registry(text) {
                Ok(registry) => {
                    if !registries.contains(&registry) {
                        registries.push(registry);
                    }
                }
                Err(message) => {
                    self.error(
                        item.span(),
                        message,
                        Some("write a registry's host, with its port if it has one: \"registry.example.com\", \"localhost:5000\", \"docker.io\"".into()),
                    );
                    valid = false;
                }
            }
        }
        valid.then_some(registries)
    }
}

/// The canonical, lower-case name of registry `text`: parsed as the registry of an image
/// reference, so the rule for what is a registry (a `.`, a `:port`, or `localhost`) and
/// Docker Hub's other names is the one of `profile::image`.
pub fn canonical_registry(text: &str) -> Result<String, String> {
    let shown = text.escape_debug();
    if text.is_empty() || text.contains(['/', '@']) || text.chars().any(char::is_whitespace) {
        return Err(format!(
            "`{shown}` is not a registry name: write the host only, no path, tag or spaces"
        ));
    }
    let reference: ImageReference = format!("{}/image", text.to_ascii_lowercase())
        .parse()
        .map_err(|message| format!("`{shown}` is not a registry name: {message}"))?;
    if reference.registry.is_none() {
        return Err(format!(
            "`{shown}` is not a registry name: a registry has a `.` or a `:port`, or is `localhost` (Docker reads `{shown}/image` as an image on Docker Hub)"
        ));
    }
    Ok(reference.canonical().registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<(usize, usize, String, Option<String>)> {
        match parse("policy.toml", text) {
            Ok(policy) => panic!("accepted: {policy:?}"),
            Err(error) => error
                .diagnostics()
                .iter()
                .map(|diagnostic| {
                    (
                        diagnostic.line,
                        diagnostic.column,
                        diagnostic.message.clone(),
                        diagnostic.hint.clone(),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn every_rule_is_read_with_its_line() {
        let policy = parse(
            "policy.toml",
            "[limits]\nmax_gpus_per_container = 2\nmax_gpus_per_user = 4\nmax_memory = \"64g\"\nmax_cpus = 16.5\nrequire_memory_limit = true\n\n[images]\nregistries = [\"Registry.Example.com\", \"index.docker.io\", \"docker.io\", \"localhost:5000\"]\n[ports]\nloopback_only = true\n",
        )
        .unwrap();
        assert_eq!(
            policy.max_gpus_per_container,
            Some(Rule { value: 2, line: 2 })
        );
        assert_eq!(policy.max_gpus_per_user, Some(Rule { value: 4, line: 3 }));
        assert_eq!(
            policy.max_memory,
            Some(Rule {
                value: ByteSize(64 << 30),
                line: 4
            })
        );
        assert_eq!(
            policy.max_cpus,
            Some(Rule {
                value: 16.5,
                line: 5
            })
        );
        assert_eq!(
            policy.require_memory_limit,
            Some(Rule {
                value: true,
                line: 6
            })
        );
        assert_eq!(
            policy.registries,
            Some(Rule {
                value: vec![
                    "registry.example.com".into(),
                    "docker.io".into(),
                    "localhost:5000".into()
                ],
                line: 9
            })
        );
        assert_eq!(
            policy.loopback_only,
            Some(Rule {
                value: true,
                line: 11
            })
        );
    }

    #[test]
    fn unproven_clients_are_refused_or_allowed_by_word() {
        let policy = parse("policy.toml", "# box\n[users]\nunproven = \"refuse\"\n").unwrap();
        assert_eq!(
            policy.unproven,
            Some(Rule {
                value: crate::policy::Unproven::Refuse,
                line: 3
            })
        );
        assert_eq!(policy.rules()[0].value_text(), "\"refuse\"");
        let allow = parse("policy.toml", "[users]\nunproven = \"allow\"\n").unwrap();
        assert_eq!(
            allow.unproven.map(|rule| rule.value),
            Some(crate::policy::Unproven::Allow)
        );
        for bad in [
            "unproven = true\n",
            "unproven = \"deny\"\n",
            "unprovn = \"refuse\"\n",
        ] {
            let found = problems(&format!("[users]\n{bad}"));
            assert_eq!(found.len(), 1, "{bad}: {found:?}");
            assert_eq!(found[0].0, 2, "{bad}: {found:?}");
        }
    }

    #[test]
    fn an_empty_file_is_a_policy_without_rules() {
        let policy = parse("policy.toml", "# nothing yet\n").unwrap();
        assert!(policy.rules().is_empty());
        let integers = parse(
            "policy.toml",
            "[limits]\nmax_cpus = 8\nmax_memory = \"1.5g\"\n",
        )
        .unwrap();
        assert_eq!(integers.max_cpus.map(|rule| rule.value), Some(8.0));
        assert_eq!(
            integers.max_memory.map(|rule| rule.value),
            Some(ByteSize(3 << 29))
        );
    }

    #[test]
    fn registries_are_named_as_images_name_them() {
        assert_eq!(canonical_registry("docker.io").unwrap(), "docker.io");
        assert_eq!(canonical_registry("index.docker.io").unwrap(), "docker.io");
        assert_eq!(
            canonical_registry("registry-1.docker.io").unwrap(),
            "docker.io"
        );
        assert_eq!(canonical_registry("NVCR.io").unwrap(), "nvcr.io");
        assert_eq!(canonical_registry("localhost").unwrap(), "localhost");
        assert_eq!(canonical_registry("[::1]:5000").unwrap(), "[::1]:5000");
        for bad in ["", "team", "nvcr.io/nvidia", "a b.io", "x.io@sha256"] {
            assert!(canonical_registry(bad).is_err(), "{bad} was taken");
        }
    }

    #[test]
    fn bad_toml_is_refused_with_its_line() {
        let found = problems("[limits]\nmax_gpus_per_container = \n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 2);
        assert!(found[0].2.starts_with("invalid TOML: "), "{found:?}");
    }

    #[test]
    fn unknown_keys_and_tables_are_refused_with_a_suggestion() {
        let found = problems("[limits]\nmax_gpu_per_container = 2\n[image]\nregistries = []\n");
        assert_eq!(
            found,
            [
                (
                    2,
                    1,
                    "unknown key `max_gpu_per_container` in `[limits]`".into(),
                    Some("did you mean `max_gpus_per_container`?".into())
                ),
                (
                    3,
                    2,
                    "unknown table `image`".into(),
                    Some("did you mean `images`?".into())
                ),
            ]
        );
        let far = problems("[ports]\nbind = \"x\"\n");
        assert_eq!(far[0].3.as_deref(), Some("known keys: loopback_only"));
    }

    #[test]
    fn wrong_types_are_refused_with_their_line() {
        let found = problems(
            "[limits]\nmax_gpus_per_container = \"2\"\nmax_memory = 64\nmax_cpus = \"8\"\nrequire_memory_limit = \"yes\"\n[images]\nregistries = \"docker.io\"\n[ports]\nloopback_only = 1\n",
        );
        let lines: Vec<usize> = found.iter().map(|problem| problem.0).collect();
        assert_eq!(lines, [2, 3, 4, 5, 7, 9], "{found:?}");
        assert_eq!(
            found[0].2,
            "`limits.max_gpus_per_container` must be a whole number, found string"
        );
        assert_eq!(
            found[4].2,
            "`images.registries` must be an array of registry names, found string"
        );
        assert_eq!(
            found[5].2,
            "`ports.loopback_only` must be true or false, found integer"
        );
        let table = problems("limits = 3\n");
        assert_eq!(table[0].2, "`limits` must be a table, found integer");
    }

    #[test]
    fn negative_zero_and_huge_numbers_are_refused() {
        let found = problems(
            "[limits]\nmax_gpus_per_user = -1\nmax_cpus = -2.0\nmax_memory = \"0\"\nmax_gpus_per_container = 5000\n",
        );
        assert_eq!(
            found.iter().map(|problem| problem.0).collect::<Vec<_>>(),
            [2, 3, 4, 5]
        );
        assert_eq!(
            found[0].2,
            "`limits.max_gpus_per_user` must be a whole number from 0 to 1024"
        );
        assert!(found[1].2.contains("greater than 0"), "{found:?}");
        assert!(
            problems("[limits]\nmax_cpus = 0\n")[0]
                .2
                .contains("greater than 0")
        );
        assert!(
            problems("[limits]\nmax_memory = \"-5g\"\n")[0]
                .2
                .contains("is not a size")
        );
        // Zero GPUs is a rule: no GPU for anyone.
        let none = parse("policy.toml", "[limits]\nmax_gpus_per_container = 0\n").unwrap();
        assert_eq!(none.max_gpus_per_container.map(|rule| rule.value), Some(0));
    }

    #[test]
    fn bad_registries_are_refused_each_at_its_place() {
        let found = problems("[images]\nregistries = [\"nvcr.io\", \"team\", 3]\n");
        assert_eq!(
            found
                .iter()
                .map(|problem| (problem.0, problem.1))
                .collect::<Vec<_>>(),
            [(2, 26), (2, 34)]
        );
        assert!(found[0].2.contains("a registry has a `.`"), "{found:?}");
        let empty = problems("[images]\nregistries = []\n");
        assert!(empty[0].2.contains("is empty"), "{empty:?}");
    }
}
