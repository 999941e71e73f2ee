//! Checks one profile file's TOML and turns it into a [`Layer`], collecting every problem
//! (not only the first) with its line, column and a hint.
//!
//! Here: the walk over the top-level keys (`Checker::profile`) and what every key's check
//! shares (reporting, NUL strings, unknown keys, type errors, suggestions). Each key
//! group's checks are a file of their own: `strings` (names, image, command, user…),
//! `gpus`, `resources` (memory, cpus, ulimits), `access` (network, devices, capabilities,
//! ipc), `bindings` (ports, mounts), `environment` (env, labels), `stack`.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diagnostic::{Diagnostic, SourceText};
use super::layer::{Layer, LayerKey};

mod access;
mod bindings;
mod environment;
mod gpus;
mod resources;
mod stack;
mod strings;

pub use strings::check_profile_name;

/// Docker refuses a memory limit below 6 MiB.
pub const MINIMUM_MEMORY: u64 = 6 * 1024 * 1024;
/// Command names envctl itself handles in `envctl exec`.
pub const RESERVED_COMMANDS: [&str; 1] = ["nvidia-check"];

/// The top-level keys, declared with the [`Layer`] fields in `layer.rs`.
const TOP_LEVEL_KEYS: &[&str] = &LayerKey::NAMES;
const STACK_KEYS: [&str; 3] = ["cuda", "torch", "cudnn"];
const PORT_KEYS: [&str; 4] = ["host_ip", "host", "container", "protocol"];
const MOUNT_KEYS: [&str; 3] = ["source", "target", "read_only"];
const ULIMIT_KEYS: [&str; 2] = ["soft", "hard"];
const GPU_TABLE_KEYS: [&str; 2] = ["count", "devices"];

const PORT_HINT: &str = "write [HOST_IP:]HOST:CONTAINER[/tcp|udp|sctp], for example \"127.0.0.1:8888:8888\", or a table { host = 8888, container = 8888 }";
const MOUNT_HINT: &str = "write SOURCE:TARGET[:ro], for example \"./data:/data:ro\", or a table { source = \"./data\", target = \"/data\", read_only = true }";

/// Words people write for a key (often from compose or docker) and the key envctl uses.
const KEY_ALIASES: [(&str, &str); 23] = [
    ("network_mode", "network"),
    ("net", "network"),
    ("networks", "network"),
    ("device", "devices"),
    ("cap-add", "cap_add"),
    ("capabilities", "cap_add"),
    ("host_name", "hostname"),
    ("pytorch", "torch"),
    ("cudnn_version", "cudnn"),
    ("cuda_version", "cuda"),
    ("shm", "shm_size"),
    ("shm-size", "shm_size"),
    ("volumes", "mounts"),
    ("volume", "mounts"),
    ("environment", "env"),
    ("working_dir", "workdir"),
    ("workdir_path", "workdir"),
    ("mem_limit", "memory"),
    ("mem", "memory"),
    ("cpu", "cpus"),
    ("gpu", "gpus"),
    ("ipc_mode", "ipc"),
    ("port", "ports"),
];

/// Validates `text` (the contents of `path`) into a layer and the problems found.
pub fn validate(path: &str, text: &str) -> (Layer, Vec<Diagnostic>) {
    // A UTF-8 byte-order mark is not part of the TOML and must not count as a column.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source = SourceText::new(path.to_string(), text);
    let mut checker = Checker {
        source: &source,
        diagnostics: Vec::new(),
        nul_spans: Vec::new(),
    };
    if let Some(index) = text.find('\0') {
        checker.error(
            index..index + 1,
            "the file holds a NUL byte: it is binary data, not a TOML profile".into(),
            Some("profiles are UTF-8 text files; check that the path names the right file".into()),
        );
        return (Layer::default(), checker.diagnostics);
    }
    let (table, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        for error in syntax_errors {
            // The parser gives no place for a key nested past its recursion limit; find it.
            let span = error.span().or_else(|| deep_key_span(text)).unwrap_or(0..0);
            checker.error(
                span,
                format!("invalid TOML: {}", error.message().trim_end()),
                Some("see https://toml.io for the syntax".into()),
            );
        }
        let mut diagnostics = checker.diagnostics;
        diagnostics.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
        // A deep unclosed array repeats one error per level: say it once.
        diagnostics.dedup();
        return (Layer::default(), diagnostics);
    }
    checker.refuse_nul_strings(table.get_ref());
    let layer = checker.profile(table.get_ref());
    let mut diagnostics = checker.diagnostics;
    diagnostics.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    (layer, diagnostics)
}

type Value<'i> = Spanned<DeValue<'i>>;

struct Checker<'a> {
    source: &'a SourceText<'a>,
    diagnostics: Vec<Diagnostic>,
    /// Strings already refused for a NUL character: no second problem is reported there.
    nul_spans: Vec<Range<usize>>,
}

impl Checker<'_> {
    fn error(&mut self, span: Range<usize>, message: String, hint: Option<String>) {
        if self.nul_spans.contains(&span) {
            return;
        }
        self.diagnostics
            .push(self.source.diagnostic(span, message, hint));
    }

    /// NUL ends a C string: Docker and the kernel would cut the value there, or refuse it.
    /// One check over every string of the file, whatever its key, names each such string
    /// by its place (`command[1]`, `env.PATH`, `ports[0].host_ip`).
    fn refuse_nul_strings(&mut self, table: &DeTable<'_>) {
        let mut place = String::new();
        for (key, value) in table {
            place.clear();
            place.push_str(key.get_ref());
            self.refuse_nul_in(value, &mut place);
        }
    }

    fn refuse_nul_in(&mut self, value: &Value<'_>, place: &mut String) {
        let length = place.len();
        match value.get_ref() {
            DeValue::String(text) if text.contains('\0') => {
                self.diagnostics.push(self.source.diagnostic(
                    value.span(),
                    format!(
                        "`{}` contains a NUL character (U+0000); no profile string may",
                        place.escape_debug()
                    ),
                    Some("remove the `\\u0000` escape".into()),
                ));
                self.nul_spans.push(value.span());
            }
            DeValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    place.push_str(&format!("[{index}]"));
                    self.refuse_nul_in(item, place);
                    place.truncate(length);
                }
            }
            DeValue::Table(table) => {
                for (key, item) in table {
                    place.push('.');
                    place.push_str(key.get_ref());
                    self.refuse_nul_in(item, place);
                    place.truncate(length);
                }
            }
            _ => {}
        }
    }

    fn profile(&mut self, table: &DeTable<'_>) -> Layer {
        let mut layer = Layer::default();
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            let Some(known) = LayerKey::from_name(name) else {
                self.unknown_key(key, TOP_LEVEL_KEYS, None);
                continue;
            };
            match known {
                LayerKey::Name => layer.name = self.profile_name(value),
                LayerKey::Description => layer.description = self.string(name, value),
                LayerKey::Extends => layer.extends = self.extends(value),
                LayerKey::Image => layer.image = self.image(value),
                LayerKey::Command => layer.command = self.command(name, value),
                LayerKey::Workdir => layer.workdir = self.workdir(value),
                LayerKey::User => layer.user = self.user(value),
                LayerKey::Gpus => layer.gpus = self.gpus(value),
                LayerKey::Placement => layer.placement = self.placement(value),
                LayerKey::Memory => {
                    layer.memory = self.size(name, value).filter(|size| {
                        if size.bytes() < MINIMUM_MEMORY {
                            self.error(
                                value.span(),
                                format!("`memory` is {size}; Docker's minimum is 6m"),
                                Some("write at least `memory = \"6m\"`; PyTorch jobs usually need gigabytes".into()),
                            );
                            false
                        } else {
                            true
                        }
                    });
                }
                LayerKey::ShmSize => layer.shm_size = self.size(name, value),
                LayerKey::Cpus => layer.cpus = self.cpus(value),
                LayerKey::Ipc => layer.ipc = self.ipc(value),
                LayerKey::Ports => layer.ports = self.ports(value),
                LayerKey::Mounts => layer.mounts = self.mounts(value),
                LayerKey::Env => layer.env = self.env(value),
                LayerKey::Labels => layer.labels = self.labels(value),
                LayerKey::Ulimits => layer.ulimits = self.ulimits(value),
                LayerKey::Network => layer.network = self.network(value),
                LayerKey::Devices => layer.devices = self.devices(value),
                LayerKey::CapAdd => layer.cap_add = self.cap_add(value),
                LayerKey::Hostname => layer.hostname = self.hostname(value),
                LayerKey::Stack => self.stack(value, &mut layer.stack),
                LayerKey::Commands => layer.commands = self.commands(value),
            }
        }
        layer
    }

    fn unknown_key(
        &mut self,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        known: &[&str],
        table: Option<&str>,
    ) {
        use crate::profile::diagnostic::KeyPlace;
        let name = key.get_ref().as_ref();
        // A profile's top keys are its settings; its inner tables are values (`gpus = {…}`).
        let place = table.map_or(KeyPlace::TopKey, KeyPlace::In);
        let (message, hint) =
            crate::profile::diagnostic::unknown_key(name, place, did_you_mean(name, known), known);
        self.error(key.span(), message, Some(hint));
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
}

/// The first key or table header with more dotted parts than the TOML parser nests.
fn deep_key_span(text: &str) -> Option<Range<usize>> {
    const PARSER_KEY_DEPTH: usize = 80;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let key = if trimmed.starts_with('[') {
            trimmed.split(']').next().unwrap_or_default()
        } else {
            trimmed.split('=').next().unwrap_or_default()
        };
        if !trimmed.starts_with('#') && key.matches('.').count() + 1 >= PARSER_KEY_DEPTH {
            let start = offset + (line.len() - trimmed.len());
            return Some(start..start + key.trim_end().len());
        }
        offset += line.len();
    }
    None
}

/// A TOML integer's value in its own radix (`0x1F90`, `0o17620`, `0b11` are valid TOML).
fn integer_value(integer: &toml::de::DeInteger<'_>) -> Option<i64> {
    i64::from_str_radix(integer.as_str(), integer.radix()).ok()
}

/// The known key closest to `unknown`: the profile's key aliases first ([`KEY_ALIASES`]),
/// then the shared nearest-name rule ([`crate::suggest`]).
pub fn did_you_mean<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    crate::suggest::did_you_mean_with_aliases(unknown, known, &KEY_ALIASES)
}

#[cfg(test)]
mod tests;
