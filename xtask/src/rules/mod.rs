//! ARCHITECTURE.md's layering rules, checked by parsing envctl's source with `syn`.
//!
//! Each file's layer is its top-level module under `src/` (`engine` for
//! `src/engine/list.rs`, `files` for `src/files.rs`, `main` for `src/main.rs`). Every path
//! the judged code writes — a `use` leaf (through groups, renames, `self`, globs), a path in
//! an expression, type, pattern or attribute, a macro's name and the paths in its tokens —
//! is followed through the crate's own imports and re-exports to what it finally names, so
//! `use crate::ops::Daemon` that `ops` re-exports from `crate::engine` names the engine.
//! The rules ([`RULES`]) forbid such names by layer; [`EXCEPTIONS`] lists each allowed
//! break with its reason (ARCHITECTURE.md says the same); an exception that excuses nothing
//! is itself reported, so the list stays true.
//!
//! One rule is about calls rather than names: a command file may not call a function or
//! method, defined outside the adapters, whose return type names an adapter
//! (`Context::engine`, which returns `crate::engine::Engine`): that hands the command the
//! adapter the layer table keeps from it, without a `use` to see. Function paths are
//! matched once resolved; method calls by name, against the methods found that way (the
//! parser knows no types).

mod source;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use source::{Crate, Kind, Reference, names_adapter};

/// Why the source could not be checked.
#[derive(Debug, Error)]
pub enum RulesError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {}:{line}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// One break of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The file, as `src/commands/logs.rs` (the source root's own name first).
    pub file: String,
    pub line: usize,
    /// The rule's name (`commands-name-no-adapter`).
    pub rule: &'static str,
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}:{}: {}: {}",
            self.file, self.line, self.rule, self.what
        )
    }
}

/// Which files a rule judges, by layer (top-level module).
pub enum Layers {
    /// Only these layers.
    Only(&'static [&'static str]),
    /// Every layer but these.
    AllBut(&'static [&'static str]),
}

impl Layers {
    fn contains(&self, layer: &str) -> bool {
        match self {
            Layers::Only(layers) => layers.contains(&layer),
            Layers::AllBut(layers) => !layers.contains(&layer),
        }
    }
}

/// One layering rule: the layers it judges and the paths they may not name.
pub struct Rule {
    pub name: &'static str,
    pub layers: Layers,
    /// Path prefixes, as segments joined by `::` (`crate::engine`, `std::fs::write`).
    pub forbidden: &'static [&'static str],
    /// Method names forbidden when called with the single argument `true`
    /// (`.create(true)` on `OpenOptions`).
    pub forbidden_switches: &'static [&'static str],
    pub why: &'static str,
}

/// The pure core: verdicts, mappings and diagnoses over facts (ARCHITECTURE.md's table).
pub const CORE: &[&str] = &[
    "checks",
    "compat",
    "container_plan",
    "export",
    "nvcheck",
    "monitor",
    "profile",
    "lock",
    "policy",
    "facts",
];

/// The command layer: the commands, the command line they are parsed from, the shell
/// completions, and the entry point. None of it may see an adapter: `ops` connects for it.
pub const COMMAND_LAYER: &[&str] = &["commands", "cli", "complete", "main"];

/// The name of the rule about calls that hand a command an adapter.
pub const COMMANDS_GET_NO_ADAPTER: &str = "commands-get-no-adapter";

/// ARCHITECTURE.md's rules.
pub const RULES: &[Rule] = &[
    Rule {
        name: "bollard-only-in-engine",
        layers: Layers::AllBut(&["engine"]),
        forbidden: &["bollard"],
        forbidden_switches: &[],
        why: "only engine/ speaks the Docker Engine API",
    },
    Rule {
        name: "nvml-only-in-gpu",
        layers: Layers::AllBut(&["gpu"]),
        forbidden: &["nvml_wrapper", "nvml_wrapper_sys"],
        forbidden_switches: &[],
        why: "only gpu/ speaks NVML",
    },
    Rule {
        name: "terminal-only-in-ui",
        layers: Layers::AllBut(&["ui"]),
        forbidden: &[
            "std::println",
            "std::eprintln",
            "std::print",
            "std::eprint",
            "std::dbg",
            "std::io::stdout",
            "std::io::stderr",
        ],
        forbidden_switches: &[],
        why: "only ui/ writes to the terminal",
    },
    Rule {
        name: "core-names-no-adapter",
        layers: Layers::Only(CORE),
        forbidden: &[
            "crate::engine",
            "envctl_engine",
            "crate::gpu",
            "envctl_gpu",
            "crate::host",
            "envctl_host",
            "crate::registry",
            "crate::ops",
            "crate::commands",
            "crate::cli",
            "crate::context",
            "bollard",
            "nvml_wrapper",
        ],
        forbidden_switches: &[],
        why: "the core judges facts; it names no adapter, no application layer and no context",
    },
    Rule {
        name: "ops-never-calls-commands",
        layers: Layers::Only(&["ops"]),
        forbidden: &["crate::commands", "crate::cli"],
        forbidden_switches: &[],
        why: "commands call ops, never the other way",
    },
    Rule {
        name: "commands-name-no-adapter",
        layers: Layers::Only(COMMAND_LAYER),
        forbidden: &[
            "crate::engine",
            "envctl_engine",
            "crate::registry",
            "crate::gpu",
            "envctl_gpu",
            "crate::host",
            "envctl_host",
        ],
        forbidden_switches: &[],
        why: "commands reach the adapters through ops",
    },
    Rule {
        name: "facts-name-nothing-above",
        layers: Layers::Only(&["facts"]),
        forbidden: &[
            "crate::compat",
            "crate::profile",
            "crate::container_plan",
            "crate::checks",
            "crate::monitor",
            "crate::policy",
            "crate::error",
        ],
        forbidden_switches: &[],
        why: "facts/ is the floor: plain values every layer stands on",
    },
    Rule {
        name: "core-does-no-io",
        layers: Layers::Only(CORE),
        forbidden: &[
            "std::fs",
            // Sockets; an address (`IpAddr`) is a plain value the core may judge.
            "std::net::TcpStream",
            "std::net::TcpListener",
            "std::net::UdpSocket",
            "std::os::unix::net",
            "rustix::fs",
            "rustix::net",
            "std::process",
            "tokio::fs",
            "tokio::net",
            "tokio::process",
            "crate::files",
            "crate::untrusted",
        ],
        forbidden_switches: &[],
        why: "the core is pure: the adapters and ops do the I/O",
    },
    Rule {
        name: "writes-go-through-files",
        layers: Layers::AllBut(&["files"]),
        forbidden: &[
            "std::fs::write",
            "std::fs::File::create",
            "std::fs::File::create_new",
            "std::fs::rename",
            "std::fs::remove_file",
            "std::fs::copy",
            "std::fs::hard_link",
            // The flags that make an `open` create or write.
            "rustix::fs::OFlags::CREATE",
            "rustix::fs::OFlags::TRUNC",
            "rustix::fs::OFlags::APPEND",
            "rustix::fs::OFlags::WRONLY",
            "rustix::fs::OFlags::RDWR",
        ],
        forbidden_switches: &["write", "append", "create", "create_new"],
        why: "every file envctl writes goes through files.rs",
    },
];

/// An allowed break: the rule, the file (below `src/`) and why.
pub struct Exception {
    pub rule: &'static str,
    pub file: &'static str,
    pub why: &'static str,
}

/// The breaks the rules allow, each with its reason (ARCHITECTURE.md lists them too).
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        rule: "core-does-no-io",
        file: "profile/file.rs",
        why: "profile discovery and `extends` read the profile files they resolve",
    },
    Exception {
        rule: "core-does-no-io",
        file: "profile/resolve.rs",
        why: "resolution follows `extends` to the files it names",
    },
    Exception {
        rule: "core-does-no-io",
        file: "profile/confine.rs",
        why: "confinement compares real paths (`canonicalize`), which only the file system knows",
    },
    Exception {
        rule: "core-does-no-io",
        file: "lock/file.rs",
        why: "`envctl.lock` is read through `untrusted` and written through `files`, beside its model",
    },
    Exception {
        rule: "core-does-no-io",
        file: "lock/mod.rs",
        why: "the lock's reader names the `untrusted` refusals in its error",
    },
    Exception {
        rule: "core-does-no-io",
        file: "policy/mod.rs",
        why: "the host policy is read through `untrusted` where its rules are (a missing file is no policy)",
    },
    Exception {
        rule: "core-does-no-io",
        file: "profile/team.rs",
        why: "the team file is found as profiles are and read through `untrusted`, beside its parser",
    },
    Exception {
        rule: "writes-go-through-files",
        file: "gpu_lock.rs",
        why: "the placement lock is a file held open for `flock`, never written: created empty, mode 0666, and never replaced",
    },
];

/// One crate's source folder as the rules see it.
pub struct Source {
    /// The folder (`src`, `crates/envctl-core/src`).
    pub root: PathBuf,
    /// How its files are shown in a violation (`crates/envctl-core/src`).
    pub shown: String,
    /// The layer of every file in it, for a crate that is one layer (`envctl-facts` is
    /// `facts`); `None` where each file's layer is its top-level module, as in `src/`.
    pub layer: Option<&'static str>,
    /// Rules the compiler keeps for this crate, not judged here: a crate that depends on
    /// nothing of envctl's (and not on bollard or nvml-wrapper) cannot name what those
    /// rules forbid, and its own `crate::gpu` is not the GPU adapter.
    pub kept_by_the_compiler: &'static [&'static str],
}

impl Source {
    /// A folder whose files take their layer from their path, shown by its own name.
    pub fn by_path(root: &Path) -> Source {
        Source {
            root: root.to_path_buf(),
            shown: root.file_name().map_or_else(
                || "src".to_string(),
                |name| name.to_string_lossy().into_owned(),
            ),
            layer: None,
            kept_by_the_compiler: &[],
        }
    }
}

/// Checks the crate whose source folder is `root` against `rules`, allowing `exceptions`.
/// The violations come sorted by file and line; an exception that excuses nothing is one.
pub fn check(
    root: &Path,
    rules: &[Rule],
    exceptions: &[Exception],
) -> Result<Vec<Violation>, RulesError> {
    check_sources(&[Source::by_path(root)], rules, exceptions)
}

/// [`check`] over several crates at once (the workspace's), so an exception is stale only
/// when it excuses nothing in any of them.
pub fn check_sources(
    sources: &[Source],
    rules: &[Rule],
    exceptions: &[Exception],
) -> Result<Vec<Violation>, RulesError> {
    let mut violations = Vec::new();
    let mut used: HashSet<(&str, &str)> = HashSet::new();
    let crates = sources
        .iter()
        .map(|source| Crate::read(&source.root))
        .collect::<Result<Vec<Crate>, RulesError>>()?;
    // A command may call a getter another crate defines (the binary's commands, the
    // application crate's `Context::engine`): every crate's getters are looked for.
    let getters: Vec<&source::AdapterGetter> =
        crates.iter().flat_map(|krate| &krate.getters).collect();
    for (source, krate) in sources.iter().zip(&crates) {
        check_one(
            source,
            krate,
            &getters,
            rules,
            exceptions,
            &mut violations,
            &mut used,
        );
    }
    let shown_root = sources
        .first()
        .map_or("src", |source| source.shown.as_str());
    for exception in exceptions {
        if !used.contains(&(exception.rule, exception.file)) {
            violations.push(Violation {
                file: format!("{shown_root}/{}", exception.file),
                line: 0,
                rule: exception.rule,
                what: format!(
                    "an exception that excuses nothing (remove it from xtask/src/rules/mod.rs): {}",
                    exception.why
                ),
            });
        }
    }
    violations.sort_by(|a, b| (&a.file, a.line, a.rule).cmp(&(&b.file, b.line, b.rule)));
    Ok(violations)
}

/// The violations of one crate, and the exceptions they used.
fn check_one<'a>(
    source: &Source,
    krate: &Crate,
    getters: &[&source::AdapterGetter],
    rules: &[Rule],
    exceptions: &'a [Exception],
    violations: &mut Vec<Violation>,
    used: &mut HashSet<(&'a str, &'a str)>,
) {
    let shown_root = &source.shown;
    for file in &krate.files {
        let layer = source.layer.unwrap_or_else(|| layer_of(&file.relative));
        let references = krate.references(file);
        let mut found = Vec::new();
        for rule in rules {
            if !rule.layers.contains(layer) || source.kept_by_the_compiler.contains(&rule.name) {
                continue;
            }
            for reference in &references {
                if let Some((hit, what)) = breaks(rule, reference) {
                    found.push((rule.name, reference.line, hit, what));
                }
            }
        }
        if COMMAND_LAYER.contains(&layer) {
            for reference in &references {
                if let Some((getter, what)) = gets_adapter(getters, reference) {
                    found.push((COMMANDS_GET_NO_ADAPTER, reference.line, getter, what));
                }
            }
        }
        // One line per rule and forbidden thing in a file: its first place (the import,
        // not each use after it).
        found.sort_by_key(|found| found.1);
        let mut seen = HashSet::new();
        for (rule, line, hit, what) in found {
            if !seen.insert((rule, hit)) {
                continue;
            }
            if let Some(exception) = exceptions
                .iter()
                .find(|exception| exception.rule == rule && exception.file == file.relative)
            {
                used.insert((exception.rule, exception.file));
                continue;
            }
            violations.push(Violation {
                file: format!("{shown_root}/{}", file.relative),
                line,
                rule,
                what,
            });
        }
    }
}

/// `commands` for `commands/logs.rs`, `files` for `files.rs`.
pub fn layer_of(relative: &str) -> &str {
    relative
        .split('/')
        .next()
        .unwrap_or(relative)
        .trim_end_matches(".rs")
}

/// What `reference` names that `rule` forbids: the forbidden prefix (or switch) it hit,
/// and the message.
fn breaks(rule: &Rule, reference: &Reference) -> Option<(String, String)> {
    match &reference.kind {
        Kind::Method { name, literal_true } => {
            (*literal_true && rule.forbidden_switches.contains(&name.as_str())).then(|| {
                (
                    format!(".{name}(true)"),
                    format!("opens a file with `.{name}(true)` ({})", rule.why),
                )
            })
        }
        Kind::Use | Kind::Path => {
            let named = shown(&reference.resolved);
            let hit = rule.forbidden.iter().find(|forbidden| {
                named == **forbidden || named.starts_with(&format!("{forbidden}::"))
            })?;
            let through = if reference.written == named || reference.resolved.is_empty() {
                String::new()
            } else {
                format!(" (written `{}`)", reference.written)
            };
            Some((
                (*hit).to_string(),
                format!("names `{named}`{through}; {}", rule.why),
            ))
        }
    }
}

/// The adapter a command gets by calling `reference`: the getter, and the message.
fn gets_adapter(
    getters: &[&source::AdapterGetter],
    reference: &Reference,
) -> Option<(String, String)> {
    let getters: Vec<&source::AdapterGetter> = match &reference.kind {
        Kind::Method { name, .. } => getters
            .iter()
            .copied()
            .filter(|getter| getter.method && getter.path.last() == Some(name))
            .collect(),
        Kind::Use => Vec::new(),
        Kind::Path => getters
            .iter()
            .copied()
            .filter(|getter| getter.path == reference.resolved)
            .collect(),
    };
    let first = getters.first()?;
    let named: Vec<String> = getters
        .iter()
        .map(|getter| {
            format!(
                "`{}` returns `{}`",
                getter.path.join("::"),
                getter.returns.join("::")
            )
        })
        .collect();
    let called = match &reference.kind {
        Kind::Method { name, .. } => format!("`.{name}()`"),
        _ => format!("`{}`", first.path.join("::")),
    };
    Some((
        first.path.join("::"),
        format!(
            "calls {called} ({}): commands reach the adapters through ops",
            named.join(", ")
        ),
    ))
}

/// A path for a message: `::bollard::X` for one written with a leading `::`.
fn shown(path: &[String]) -> String {
    match path.split_first() {
        Some((first, rest)) if first == "::" => format!("::{}", rest.join("::")),
        _ => path.join("::"),
    }
}

/// envctl's `src/`, from the xtask crate's own folder.
pub fn envctl_source() -> PathBuf {
    workspace().join("src")
}

/// The workspace's folder, from the xtask crate's own.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Every crate of envctl's the rules judge: the binary's `src/`, the core (each file's
/// layer by its path, as in `src/`), the facts (all of it the `facts` layer) and the
/// fat-binary readers (all of it `compat`).
pub fn envctl_sources() -> Vec<Source> {
    let workspace = workspace();
    vec![
        Source::by_path(&workspace.join("src")),
        // The application layer: ops, the context, the errors, the registry, the printer
        // and the completions, each file's layer its top-level module as in `src/`.
        Source {
            root: workspace.join("crates/envctl-ops/src"),
            shown: "crates/envctl-ops/src".into(),
            layer: None,
            kept_by_the_compiler: &[],
        },
        Source {
            root: workspace.join("crates/envctl-core/src"),
            shown: "crates/envctl-core/src".into(),
            layer: None,
            kept_by_the_compiler: &[],
        },
        Source {
            root: workspace.join("crates/envctl-facts/src"),
            shown: "crates/envctl-facts/src".into(),
            layer: Some("facts"),
            kept_by_the_compiler: &["core-names-no-adapter", "facts-name-nothing-above"],
        },
        // The GPU adapter (re-exported as `envctl::gpu`): all of it the `gpu` layer, so
        // NVML may be named there and the rules of every other layer refuse its name.
        Source {
            root: workspace.join("crates/envctl-gpu/src"),
            shown: "crates/envctl-gpu/src".into(),
            layer: Some("gpu"),
            kept_by_the_compiler: &[],
        },
        // The engine adapter (re-exported as `envctl::engine`): the `engine` layer, the one
        // that may name bollard.
        Source {
            root: workspace.join("crates/envctl-engine/src"),
            shown: "crates/envctl-engine/src".into(),
            layer: Some("engine"),
            kept_by_the_compiler: &[],
        },
        // The host adapter (re-exported as `envctl::host`, with `interrupt`): the `host` layer.
        Source {
            root: workspace.join("crates/envctl-host/src"),
            shown: "crates/envctl-host/src".into(),
            layer: Some("host"),
            kept_by_the_compiler: &[],
        },
        // The byte-level half of `compat::fatbin` (re-exported there): judged as `compat`,
        // so the core's rules (no I/O, no terminal) hold in it; it depends on nothing of
        // envctl's, so it cannot name an adapter.
        Source {
            root: workspace.join("crates/envctl-fatbin/src"),
            shown: "crates/envctl-fatbin/src".into(),
            layer: Some("compat"),
            kept_by_the_compiler: &["core-names-no-adapter"],
        },
    ]
}
