//! Checks one profile file's TOML and turns it into a [`Layer`], collecting every problem
//! (not only the first) with its line, column and a hint.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diagnostic::{
    CpuCount, Diagnostic, MAXIMUM_GPU_COUNT, SourceText, cpu_count, cpus_range_problem,
};
use super::host_access::{self, Device, Network};
use super::layer::{ExtendsReference, Layer, LayerKey};
use super::model::{
    GpuPlacement, GpuRequest, Ipc, Mount, PortBinding, Stack, ULIMIT_NAMES, Ulimit,
};
use super::size::ByteSize;
use super::{mounts, ports};

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
        let name = key.get_ref().as_ref();
        let place = match table {
            Some(table) => format!("unknown key `{name}` in `{table}`"),
            None => format!("unknown key `{name}`"),
        };
        let hint = crate::profile::diagnostic::unknown_key_hint(did_you_mean(name, known), known);
        self.error(key.span(), place, Some(hint));
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

    fn string(&mut self, key: &str, value: &Value<'_>) -> Option<String> {
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
    fn extends(&mut self, value: &Value<'_>) -> Option<ExtendsReference> {
        let target = self.non_empty_string("extends", value)?;
        if super::resolve::is_path_argument(&target) && !target.ends_with(".toml") {
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

    fn profile_name(&mut self, value: &Value<'_>) -> Option<String> {
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

    fn image(&mut self, value: &Value<'_>) -> Option<super::image::ImageReference> {
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

    fn command(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<String>> {
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

    fn workdir(&mut self, value: &Value<'_>) -> Option<String> {
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

    fn user(&mut self, value: &Value<'_>) -> Option<String> {
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

    /// `placement = "free" | "idle" | "first"`: how `up` picks the GPUs of a count.
    fn placement(&mut self, value: &Value<'_>) -> Option<GpuPlacement> {
        let example = "placement = \"free\" (GPUs no container holds), \"idle\" (and no other process uses) or \"first\" (Docker's first N)";
        let Some(text) = value.get_ref().as_str() else {
            self.type_error("placement", value, "a string", example);
            return None;
        };
        let placement = GpuPlacement::from_name(text);
        if placement.is_none() {
            self.error(
                value.span(),
                format!("`placement` = \"{text}\" is not a placement"),
                Some(example.into()),
            );
        }
        placement
    }

    fn gpus(&mut self, value: &Value<'_>) -> Option<GpuRequest> {
        let example = "gpus = \"all\", \"none\", \"optional\", 2, or [\"0\", \"1\"]";
        match value.get_ref() {
            DeValue::String(text) => match text.as_ref() {
                "all" => Some(GpuRequest::All),
                "none" => Some(GpuRequest::None),
                "optional" => Some(GpuRequest::Optional),
                other if other.chars().all(|c| c.is_ascii_digit()) && !other.is_empty() => {
                    self.gpu_count(value, other.parse().ok(), other)
                }
                other => {
                    let hint = did_you_mean(other, &["all", "none", "optional"]).map_or_else(
                        || example.to_string(),
                        |word| format!("did you mean \"{word}\"?"),
                    );
                    self.error(
                        value.span(),
                        format!("`gpus` = \"{other}\" is not a GPU selection"),
                        Some(hint),
                    );
                    None
                }
            },
            DeValue::Integer(integer) => {
                self.gpu_count(value, integer_value(integer), &integer.to_string())
            }
            DeValue::Array(array) => {
                let devices = self.gpu_devices(value, array)?;
                Some(GpuRequest::Devices(devices))
            }
            DeValue::Table(table) => {
                let mut count = None;
                let mut devices = None;
                for (key, item) in table {
                    match key.get_ref().as_ref() {
                        "count" => count = Some(item),
                        "devices" => devices = Some(item),
                        _ => self.unknown_key(key, &GPU_TABLE_KEYS, Some("gpus")),
                    }
                }
                match (count, devices) {
                    (Some(_), Some(devices)) => {
                        self.error(
                            devices.span(),
                            "`gpus` sets both `count` and `devices`; Docker takes one or the other"
                                .into(),
                            Some(
                                "keep `devices` to pick GPUs, or `count` to take the first N"
                                    .into(),
                            ),
                        );
                        None
                    }
                    (Some(count), None) => match count.get_ref() {
                        DeValue::Integer(integer) => {
                            self.gpu_count(count, integer_value(integer), &integer.to_string())
                        }
                        _ => {
                            self.type_error(
                                "gpus.count",
                                count,
                                "a positive integer",
                                "gpus = { count = 2 }",
                            );
                            None
                        }
                    },
                    (None, Some(devices)) => match devices.get_ref().as_array() {
                        Some(array) => self.gpu_devices(devices, array).map(GpuRequest::Devices),
                        None => {
                            self.type_error(
                                "gpus.devices",
                                devices,
                                "an array",
                                "gpus = { devices = [\"0\"] }",
                            );
                            None
                        }
                    },
                    (None, None) => {
                        self.error(
                            value.span(),
                            "`gpus` table needs `count` or `devices`".into(),
                            Some(example.into()),
                        );
                        None
                    }
                }
            }
            _ => {
                self.type_error("gpus", value, "a string, an integer or an array", example);
                None
            }
        }
    }

    fn gpu_count(
        &mut self,
        value: &Value<'_>,
        count: Option<i64>,
        shown: &str,
    ) -> Option<GpuRequest> {
        match count {
            Some(count) if count > 0 && count <= MAXIMUM_GPU_COUNT => {
                Some(GpuRequest::Count(count as u32))
            }
            Some(count) if count > MAXIMUM_GPU_COUNT => {
                self.error(
                    value.span(),
                    format!("`gpus` count {shown} is too large (at most {MAXIMUM_GPU_COUNT})"),
                    Some("use gpus = \"all\" for every GPU of the host".into()),
                );
                None
            }
            None if !shown.starts_with('-') => {
                self.error(
                    value.span(),
                    format!("`gpus` count {shown} is too large (at most {MAXIMUM_GPU_COUNT})"),
                    Some("use gpus = \"all\" for every GPU of the host".into()),
                );
                None
            }
            _ => {
                self.error(
                    value.span(),
                    format!("`gpus` count `{shown}` must be a positive number"),
                    Some("use gpus = \"none\" for no GPU, or a count of 1 or more".into()),
                );
                None
            }
        }
    }

    fn gpu_devices(&mut self, value: &Value<'_>, array: &[Value<'_>]) -> Option<Vec<String>> {
        if array.is_empty() {
            self.error(
                value.span(),
                "`gpus` lists no device".into(),
                Some("use gpus = \"none\" for no GPU".into()),
            );
            return None;
        }
        let mut devices = Vec::new();
        let mut seen = BTreeSet::new();
        let mut valid = true;
        for item in array {
            let text = match item.get_ref() {
                DeValue::String(text) => text.to_string(),
                DeValue::Integer(integer) => integer_value(integer)
                    .map_or_else(|| integer.to_string(), |index| index.to_string()),
                other => {
                    valid = false;
                    self.error(
                        item.span(),
                        format!(
                            "a `gpus` device must be an index or a UUID string, found {}",
                            other.type_str()
                        ),
                        None,
                    );
                    continue;
                }
            };
            if let Err(message) = check_gpu_device(&text) {
                valid = false;
                self.error(
                    item.span(),
                    message,
                    Some("write an index (\"0\"), a GPU UUID (\"GPU-…\") or a MIG UUID (\"MIG-…\"), as `nvidia-smi -L` prints them".into()),
                );
                continue;
            }
            if !seen.insert(text.clone()) {
                valid = false;
                self.error(item.span(), format!("GPU `{text}` is listed twice"), None);
                continue;
            }
            devices.push(text);
        }
        valid.then_some(devices)
    }

    fn size(&mut self, key: &str, value: &Value<'_>) -> Option<ByteSize> {
        let example = format!("{key} = \"16g\"");
        let size = match value.get_ref() {
            DeValue::String(text) => match text.parse::<ByteSize>() {
                Ok(size) => size,
                Err(message) => {
                    self.error(
                        value.span(),
                        format!("`{key}`: {message}"),
                        Some(format!("for example: {example}")),
                    );
                    return None;
                }
            },
            DeValue::Integer(integer) => {
                match u64::from_str_radix(integer.as_str(), integer.radix()) {
                    Ok(bytes) => ByteSize(bytes),
                    Err(_) => {
                        self.error(
                            value.span(),
                            format!("`{key}` must be a positive size"),
                            Some(format!("for example: {example}")),
                        );
                        return None;
                    }
                }
            }
            _ => {
                self.type_error(key, value, "a size string", &example);
                return None;
            }
        };
        if size.bytes() == 0 {
            self.error(
                value.span(),
                format!("`{key}` must be greater than zero"),
                Some(format!("for example: {example}")),
            );
            return None;
        }
        // Docker keeps sizes in a signed 64-bit integer: a larger one is invalid input
        // here, not a failure when the body is built.
        if i64::try_from(size.bytes()).is_err() {
            self.error(
                value.span(),
                format!(
                    "`{key}` = {} bytes does not fit Docker's 64-bit signed size",
                    size.bytes()
                ),
                Some(format!("for example: {example}")),
            );
            return None;
        }
        Some(size)
    }

    fn cpus(&mut self, value: &Value<'_>) -> Option<f64> {
        match (value.get_ref(), cpu_count(value.get_ref())) {
            (_, CpuCount::Cpus(cpus)) => Some(cpus),
            (DeValue::String(text), _) => {
                // `cpus = "8"` is a number without its quotes; `cpus = "eight"` is not one
                // at all, and `cpus = eight` would not even be TOML.
                let trimmed = text.trim();
                let hint = match trimmed.parse::<f64>() {
                    Ok(number) if number.is_finite() => {
                        format!("write it without quotes: cpus = {trimmed}")
                    }
                    _ => "write the number of CPUs as a number: cpus = 8 or cpus = 0.5".into(),
                };
                self.error(
                    value.span(),
                    format!("`cpus` must be a number, found the string \"{text}\""),
                    Some(hint),
                );
                None
            }
            (_, CpuCount::NotANumber) => {
                self.type_error("cpus", value, "a number", "cpus = 8 or cpus = 0.5");
                None
            }
            (_, CpuCount::OutOfRange) => {
                let (message, hint) = cpus_range_problem("cpus");
                self.error(value.span(), message, Some(hint));
                None
            }
        }
    }

    /// `network = "host"`, `"none"`, `"bridge"` or the name of a network.
    fn network(&mut self, value: &Value<'_>) -> Option<Network> {
        let example = "network = \"host\" (NCCL across nodes), \"none\", or a network's name";
        let Some(text) = value.get_ref().as_str() else {
            self.type_error("network", value, "a string", example);
            return None;
        };
        match Network::parse(text) {
            Ok(network) => Some(network),
            Err(message) => {
                let hint = did_you_mean(text, &["host", "none", "bridge"]).map_or_else(
                    || example.to_string(),
                    |word| format!("did you mean \"{word}\"?"),
                );
                self.error(value.span(), message, Some(hint));
                None
            }
        }
    }

    /// `devices = ["/dev/infiniband", "/dev/fuse:/dev/fuse:rw"]`, as `docker run --device`.
    fn devices(&mut self, value: &Value<'_>) -> Option<Vec<Device>> {
        let example = "devices = [\"/dev/infiniband\"]";
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("devices", value, "an array of strings", example);
            return None;
        };
        let mut devices: Vec<(Device, Range<usize>)> = Vec::new();
        let mut valid = true;
        for item in array.iter() {
            let Some(spec) = item.get_ref().as_str() else {
                valid = false;
                self.error(
                    item.span(),
                    format!(
                        "`devices` items must be strings, found {}",
                        item.get_ref().type_str()
                    ),
                    Some(format!("for example: {example}")),
                );
                continue;
            };
            match Device::parse(spec) {
                Ok(device) => {
                    if let Some((_, first)) = devices
                        .iter()
                        .find(|(earlier, _)| earlier.container == device.container)
                    {
                        valid = false;
                        let line = self
                            .source
                            .diagnostic(first.clone(), String::new(), None)
                            .line;
                        self.error(
                            item.span(),
                            format!(
                                "device path `{}` in the container is already given on line {line}",
                                device.container
                            ),
                            Some("give each container path one device".into()),
                        );
                    } else {
                        devices.push((device, item.span()));
                    }
                }
                Err(message) => {
                    valid = false;
                    self.error(
                        item.span(),
                        message,
                        Some("write HOST[:CONTAINER][:PERMISSIONS], for example \"/dev/infiniband\" or \"/dev/fuse:/dev/fuse:rw\"".into()),
                    );
                }
            }
        }
        valid.then(|| devices.into_iter().map(|(device, _)| device).collect())
    }

    /// `cap_add = ["IPC_LOCK"]`: Linux capability names, with or without `CAP_`, any case.
    fn cap_add(&mut self, value: &Value<'_>) -> Option<Vec<String>> {
        let example = "cap_add = [\"IPC_LOCK\"]";
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("cap_add", value, "an array of strings", example);
            return None;
        };
        let mut capabilities = Vec::new();
        let mut valid = true;
        for item in array.iter() {
            let Some(text) = item.get_ref().as_str() else {
                valid = false;
                self.error(
                    item.span(),
                    format!(
                        "`cap_add` items must be strings, found {}",
                        item.get_ref().type_str()
                    ),
                    Some(format!("for example: {example}")),
                );
                continue;
            };
            match host_access::capability(text) {
                Ok(name) if capabilities.contains(&name) => {
                    valid = false;
                    self.error(
                        item.span(),
                        format!("capability `{name}` is listed twice"),
                        None,
                    );
                }
                Ok(name) => capabilities.push(name),
                Err(suggestion) => {
                    valid = false;
                    let hint = match suggestion {
                        Some(name) => format!("did you mean \"{name}\"?"),
                        None => "write a Linux capability as capabilities(7) names it, without `CAP_`, like \"IPC_LOCK\" or \"SYS_NICE\"".into(),
                    };
                    self.error(
                        item.span(),
                        format!("`{}` is not a Linux capability", text.escape_debug()),
                        Some(hint),
                    );
                }
            }
        }
        valid.then_some(capabilities)
    }

    fn hostname(&mut self, value: &Value<'_>) -> Option<String> {
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

    fn ipc(&mut self, value: &Value<'_>) -> Option<Ipc> {
        let text = self.string("ipc", value)?;
        match text.as_str() {
            "private" => Some(Ipc::Private),
            "shareable" => Some(Ipc::Shareable),
            "host" => Some(Ipc::Host),
            other => {
                let hint = did_you_mean(other, &Ipc::NAMES).map_or_else(
                    || "use \"private\", \"shareable\" or \"host\"".to_string(),
                    |word| format!("did you mean \"{word}\"?"),
                );
                self.error(
                    value.span(),
                    format!("`ipc` = \"{other}\" is not private, shareable or host"),
                    Some(hint),
                );
                None
            }
        }
    }

    fn ports(&mut self, value: &Value<'_>) -> Option<Vec<PortBinding>> {
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("ports", value, "an array", "ports = [\"8888:8888\"]");
            return None;
        };
        let mut bindings: Vec<(PortBinding, Range<usize>)> = Vec::new();
        let mut claims = ports::HostPortClaims::default();
        let mut expanded: u32 = 0;
        let mut valid = true;
        for item in array.iter() {
            let binding = match item.get_ref() {
                DeValue::String(spec) => {
                    ports::parse_port_spec(spec).map_err(|message| Some((message, item.span())))
                }
                DeValue::Table(table) => self.port_table(table, item.span()),
                DeValue::Integer(integer) => ports::parse_port_spec(
                    &integer_value(integer)
                        .map_or_else(|| integer.to_string(), |port| port.to_string()),
                )
                .map_err(|message| Some((message, item.span()))),
                other => Err(Some((
                    format!(
                        "a port must be a string or a table, found {}",
                        other.type_str()
                    ),
                    item.span(),
                ))),
            };
            match binding {
                Ok(binding) => {
                    expanded = expanded.saturating_add(binding.container.len());
                    if expanded > ports::MAXIMUM_PORT_BINDINGS {
                        self.error(
                            item.span(),
                            format!(
                                "`ports` expands to more than {} port bindings: with `{binding}` it makes {expanded}",
                                ports::MAXIMUM_PORT_BINDINGS
                            ),
                            Some("Docker publishes each port of a range as a binding of its own; publish fewer or shorter ranges".into()),
                        );
                        // What follows is not expanded: the cost stays bounded.
                        return None;
                    }
                    if let Some(first_span) = claims
                        .conflict(&binding)
                        .map(|index: usize| bindings[index].1.clone())
                    {
                        valid = false;
                        let first = self
                            .source
                            .diagnostic(first_span.clone(), String::new(), None);
                        self.error(
                            item.span(),
                            format!("port `{binding}` binds a host address and port that line {} already binds", first.line),
                            Some("give each binding its own host port, or drop one".into()),
                        );
                    } else {
                        claims.claim(&binding, bindings.len());
                        bindings.push((binding, item.span()));
                    }
                }
                Err(None) => valid = false,
                Err(Some((message, span))) => {
                    valid = false;
                    self.error(span, message, Some(PORT_HINT.into()));
                }
            }
        }
        valid.then(|| bindings.into_iter().map(|(binding, _)| binding).collect())
    }

    /// A long-form port. Each key's problem is reported where it is; `Err(None)` means
    /// they are already reported, `Err(Some(..))` is a problem of the table as a whole.
    fn port_table(
        &mut self,
        table: &DeTable<'_>,
        span: Range<usize>,
    ) -> Result<PortBinding, Option<(String, Range<usize>)>> {
        let mut host_ip = None;
        let mut host = None;
        let mut container = None;
        let mut protocol = super::model::Protocol::Tcp;
        let mut failed = false;
        for (key, item) in table {
            let port_range = |item: &Value<'_>| match item.get_ref() {
                DeValue::Integer(integer) => ports::parse_port_range(
                    &integer_value(integer)
                        .map_or_else(|| integer.to_string(), |port| port.to_string()),
                ),
                DeValue::String(text) => ports::parse_port_range(text),
                other => Err(format!(
                    "a port must be a number or a \"start-end\" range, found {}",
                    other.type_str()
                )),
            };
            let as_text = |item: &Value<'_>| {
                item.get_ref()
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("must be a string, found {}", item.get_ref().type_str()))
            };
            let result = match key.get_ref().as_ref() {
                "host_ip" => as_text(item)
                    .and_then(|text| ports::parse_host_ip(&text))
                    .map(|ip| host_ip = Some(ip)),
                "host" => port_range(item).map(|range| host = Some(range)),
                "container" => port_range(item).map(|range| container = Some(range)),
                "protocol" => as_text(item)
                    .and_then(|text| ports::parse_protocol(&text))
                    .map(|parsed| protocol = parsed),
                _ => {
                    failed = true;
                    self.unknown_key(key, &PORT_KEYS, Some("ports"));
                    Ok(())
                }
            };
            if let Err(message) = result {
                failed = true;
                self.error(
                    item.span(),
                    format!("`{}`: {message}", key.get_ref()),
                    Some(PORT_HINT.into()),
                );
            }
        }
        if failed {
            return Err(None);
        }
        let container = container
            .ok_or_else(|| Some(("a port table needs `container`".to_string(), span.clone())))?;
        ports::make_binding(host_ip, host, container, protocol)
            .map_err(|message| Some((message, span)))
    }

    fn mounts(&mut self, value: &Value<'_>) -> Option<Vec<Mount>> {
        let Some(array) = value.get_ref().as_array() else {
            self.type_error(
                "mounts",
                value,
                "an array",
                "mounts = [\"./data:/data:ro\"]",
            );
            return None;
        };
        let mut mounts: Vec<(Mount, Range<usize>)> = Vec::new();
        // Each target's first mount, so that a duplicate is found in one look-up.
        let mut targets: HashMap<String, usize> = HashMap::new();
        let mut valid = true;
        for item in array.iter() {
            let mount = match item.get_ref() {
                DeValue::String(spec) => {
                    mounts::parse_mount_spec(spec).map_err(|message| Some((message, item.span())))
                }
                DeValue::Table(table) => self.mount_table(table, item.span()),
                other => Err(Some((
                    format!(
                        "a mount must be a string or a table, found {}",
                        other.type_str()
                    ),
                    item.span(),
                ))),
            };
            match mount {
                Ok(mount) => {
                    if let Some(&index) = targets.get(&mount.target) {
                        valid = false;
                        let first =
                            self.source
                                .diagnostic(mounts[index].1.clone(), String::new(), None);
                        self.error(
                            item.span(),
                            format!(
                                "mount target `{}` is already used on line {}",
                                mount.target, first.line
                            ),
                            Some("each container path can be mounted once".into()),
                        );
                    } else {
                        targets.insert(mount.target.clone(), mounts.len());
                        mounts.push((mount, item.span()));
                    }
                }
                Err(None) => valid = false,
                Err(Some((message, span))) => {
                    valid = false;
                    self.error(span, message, Some(MOUNT_HINT.into()));
                }
            }
        }
        valid.then(|| mounts.into_iter().map(|(mount, _)| mount).collect())
    }

    /// A long-form mount; like [`Self::port_table`], key problems are reported in place.
    fn mount_table(
        &mut self,
        table: &DeTable<'_>,
        span: Range<usize>,
    ) -> Result<Mount, Option<(String, Range<usize>)>> {
        let mut source = None;
        let mut target = None;
        let mut read_only = false;
        let mut failed = false;
        for (key, item) in table {
            let name = key.get_ref().as_ref();
            match name {
                "source" | "target" => match item.get_ref().as_str() {
                    Some(text) if name == "source" => source = Some(text.to_string()),
                    Some(text) => target = Some(text.to_string()),
                    None => {
                        failed = true;
                        self.error(
                            item.span(),
                            format!(
                                "`{name}` must be a string, found {}",
                                item.get_ref().type_str()
                            ),
                            Some(MOUNT_HINT.into()),
                        );
                    }
                },
                "read_only" => match item.get_ref().as_bool() {
                    Some(flag) => read_only = flag,
                    None => {
                        failed = true;
                        self.error(
                            item.span(),
                            format!(
                                "`read_only` must be true or false, found {}",
                                item.get_ref().type_str()
                            ),
                            Some(MOUNT_HINT.into()),
                        );
                    }
                },
                _ => {
                    failed = true;
                    self.unknown_key(key, &MOUNT_KEYS, Some("mounts"));
                }
            }
        }
        if failed {
            return Err(None);
        }
        let source = source
            .ok_or_else(|| Some(("a mount table needs `source`".to_string(), span.clone())))?;
        let target = target
            .ok_or_else(|| Some(("a mount table needs `target`".to_string(), span.clone())))?;
        mounts::make_mount(&source, &target, read_only).map_err(|message| Some((message, span)))
    }

    fn env(&mut self, value: &Value<'_>) -> BTreeMap<String, String> {
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
    fn labels(&mut self, value: &Value<'_>) -> BTreeMap<String, String> {
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

    fn ulimits(&mut self, value: &Value<'_>) -> BTreeMap<String, Ulimit> {
        let mut ulimits = BTreeMap::new();
        let Some(table) = value.get_ref().as_table() else {
            self.type_error("ulimits", value, "a table", "[ulimits] memlock = -1");
            return ulimits;
        };
        for (key, item) in table {
            let name = key.get_ref().as_ref();
            if !ULIMIT_NAMES.contains(&name) {
                self.unknown_key(key, &ULIMIT_NAMES, Some("ulimits"));
                continue;
            }
            let limit = match item.get_ref() {
                DeValue::Integer(_) => self.ulimit_value(name, item).map(|limit| Ulimit {
                    soft: limit,
                    hard: limit,
                }),
                DeValue::Table(limits) => {
                    let mut soft = None;
                    let mut hard = None;
                    for (limit_key, limit_value) in limits {
                        match limit_key.get_ref().as_ref() {
                            "soft" => soft = Some(self.ulimit_value(name, limit_value)),
                            "hard" => hard = Some(self.ulimit_value(name, limit_value)),
                            _ => self.unknown_key(limit_key, &ULIMIT_KEYS, Some("ulimits")),
                        }
                    }
                    match (soft, hard) {
                        (Some(Some(soft)), Some(Some(hard))) => {
                            let unlimited = |limit: i64| limit == -1;
                            if !unlimited(hard) && (unlimited(soft) || soft > hard) {
                                self.error(item.span(), format!("`ulimits.{name}`: soft limit {soft} is above hard limit {hard}"), Some("the soft limit must be at most the hard limit (-1 is unlimited)".into()));
                                None
                            } else {
                                Some(Ulimit { soft, hard })
                            }
                        }
                        (Some(None), _) | (_, Some(None)) => None,
                        _ => {
                            self.error(
                                item.span(),
                                format!("`ulimits.{name}` needs both `soft` and `hard`"),
                                Some(format!("{name} = {{ soft = 1024, hard = 4096 }}")),
                            );
                            None
                        }
                    }
                }
                _ => {
                    self.type_error(
                        &format!("ulimits.{name}"),
                        item,
                        "an integer or { soft, hard }",
                        &format!("{name} = -1"),
                    );
                    None
                }
            };
            if let Some(limit) = limit {
                ulimits.insert(name.to_string(), limit);
            }
        }
        ulimits
    }

    fn ulimit_value(&mut self, name: &str, value: &Value<'_>) -> Option<i64> {
        let parsed = value
            .get_ref()
            .as_integer()
            .and_then(|integer| i64::from_str_radix(integer.as_str(), integer.radix()).ok());
        match parsed {
            Some(limit) if limit >= -1 => Some(limit),
            _ => {
                self.error(
                    value.span(),
                    format!(
                        "`ulimits.{name}` must be an integer of 0 or more, or -1 for unlimited"
                    ),
                    None,
                );
                None
            }
        }
    }

    fn stack(&mut self, value: &Value<'_>, stack: &mut Stack) {
        let Some(table) = value.get_ref().as_table() else {
            self.type_error("stack", value, "a table", "[stack] cuda = \"12.8\"");
            return;
        };
        for (key, item) in table {
            match key.get_ref().as_ref() {
                "cuda" => {
                    if let Some(text) = self.string("stack.cuda", item) {
                        match text.parse() {
                            Ok(version) => stack.cuda = Some(version),
                            Err(message) => {
                                self.error(item.span(), format!("`stack.cuda`: {message}"), None)
                            }
                        }
                    }
                }
                "torch" => {
                    if let Some(text) = self.string("stack.torch", item) {
                        match text.parse() {
                            Ok(version) => stack.torch = Some(version),
                            Err(message) => {
                                self.error(item.span(), format!("`stack.torch`: {message}"), None)
                            }
                        }
                    }
                }
                "cudnn" => {
                    let major = match item.get_ref() {
                        DeValue::String(text) => text.parse::<u32>().ok(),
                        DeValue::Integer(integer) => {
                            integer_value(integer).and_then(|major| u32::try_from(major).ok())
                        }
                        _ => None,
                    };
                    match major {
                        Some(major) if (1..=99).contains(&major) => stack.cudnn = Some(major),
                        _ => self.error(
                            item.span(),
                            "`stack.cudnn` must be the cuDNN major version, like \"9\"".into(),
                            None,
                        ),
                    }
                }
                _ => self.unknown_key(key, &STACK_KEYS, Some("stack")),
            }
        }
    }

    fn commands(&mut self, value: &Value<'_>) -> BTreeMap<String, Vec<String>> {
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

fn check_user(user: &str) -> Result<(), String> {
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

fn check_gpu_device(device: &str) -> Result<(), String> {
    if !device.is_empty() && device.chars().all(|c| c.is_ascii_digit()) {
        return match device.parse::<u32>() {
            Ok(index) if index < 1024 => Ok(()),
            _ => Err(format!("GPU index `{device}` is out of range")),
        };
    }
    let is_uuid = |text: &str| {
        let groups: Vec<&str> = text.split('-').collect();
        groups.len() == 5
            && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, length)| {
                group.len() == length && group.chars().all(|c| c.is_ascii_hexdigit())
            })
    };
    if let Some(uuid) = device.strip_prefix("GPU-")
        && is_uuid(uuid)
    {
        return Ok(());
    }
    if let Some(rest) = device.strip_prefix("MIG-") {
        // Current drivers: `MIG-<uuid>`; before R470: `MIG-GPU-<uuid>/<gi>/<ci>`.
        if is_uuid(rest) {
            return Ok(());
        }
        if let Some(legacy) = rest.strip_prefix("GPU-") {
            let parts: Vec<&str> = legacy.split('/').collect();
            if parts.len() == 3
                && is_uuid(parts[0])
                && parts[1..]
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            {
                return Ok(());
            }
        }
    }
    Err(format!(
        "`{}` is not a GPU index, GPU UUID or MIG UUID",
        device.escape_debug()
    ))
}

/// The known key closest to `unknown`: the profile's key aliases first ([`KEY_ALIASES`]),
/// then the shared nearest-name rule ([`crate::suggest`]).
pub fn did_you_mean<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    crate::suggest::did_you_mean_with_aliases(unknown, known, &KEY_ALIASES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("memroy", TOP_LEVEL_KEYS), Some("memory"));
        assert_eq!(did_you_mean("pytorch", &STACK_KEYS), Some("torch"));
        assert_eq!(did_you_mean("volumes", TOP_LEVEL_KEYS), Some("mounts"));
        assert_eq!(did_you_mean("shm-size", TOP_LEVEL_KEYS), Some("shm_size"));
        assert_eq!(did_you_mean("zzzzzz", TOP_LEVEL_KEYS), None);
    }

    #[test]
    fn gpu_devices() {
        assert!(check_gpu_device("0").is_ok());
        assert!(check_gpu_device("GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc").is_ok());
        assert!(check_gpu_device("MIG-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc").is_ok());
        assert!(check_gpu_device("MIG-GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc/1/0").is_ok());
        assert!(check_gpu_device("GPU-xyz").is_err());
        assert!(check_gpu_device("first").is_err());
    }

    #[test]
    fn users() {
        for good in ["root", "1000", "1000:1000", "jovyan:users", "_svc"] {
            assert!(check_user(good).is_ok(), "{good}");
        }
        for bad in ["", ":", "1000:", "a b", "-x", "a:b:c"] {
            assert!(check_user(bad).is_err(), "{bad}");
        }
    }
}
