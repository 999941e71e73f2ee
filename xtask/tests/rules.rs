//! The layering rules' checker (`xtask::rules`), proven on planted violations, on a clean
//! tree, and run over envctl's own `src/` (so `cargo test --workspace` keeps the rules).
//!
//! Each planted violation sits in `tests/fixtures/rules/refused/src/`, one small file per
//! kind, its line marked `// refused: RULE[, RULE]`: the checker must report exactly those
//! rules on exactly those lines, and nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use xtask::rules::{
    EXCEPTIONS, Exception, RULES, Source, Violation, check, check_sources, envctl_sources,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rules")
        .join(name)
        .join("src")
}

/// Every `.rs` file under `root`, as its path below `root`'s parent (`src/…`).
fn files(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let shown = path
                    .strip_prefix(root.parent().unwrap())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.push((shown, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// The `// refused: RULE` marks of the planted tree, as (file, line, rule).
fn marked(root: &Path) -> BTreeSet<(String, usize, String)> {
    let mut marks = BTreeSet::new();
    for (file, text) in files(root) {
        for (index, line) in text.lines().enumerate() {
            if let Some((_, rules)) = line.split_once("// refused: ") {
                for rule in rules.split(", ") {
                    marks.insert((file.clone(), index + 1, rule.trim().to_string()));
                }
            }
        }
    }
    marks
}

fn reported(violations: &[Violation]) -> BTreeSet<(String, usize, String)> {
    violations
        .iter()
        .map(|violation| {
            (
                violation.file.clone(),
                violation.line,
                violation.rule.to_string(),
            )
        })
        .collect()
}

#[test]
fn every_planted_violation_is_refused_by_rule_and_line() {
    let root = fixture("refused");
    let violations = check(&root, RULES, &[]).unwrap();
    let marks = marked(&root);
    assert_eq!(
        reported(&violations),
        marks,
        "the checker said:\n{}",
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every kind the issue names is planted: a fixture that loses a plant fails here.
    let planted: BTreeSet<&str> = marks.iter().map(|(file, _, _)| file.as_str()).collect();
    assert_eq!(planted.len(), 27, "{planted:#?}");
    let rules: BTreeSet<&str> = marks.iter().map(|(_, _, rule)| rule.as_str()).collect();
    let mut every_rule: BTreeSet<&str> = RULES.iter().map(|rule| rule.name).collect();
    every_rule.insert(xtask::rules::COMMANDS_GET_NO_ADAPTER);
    assert_eq!(rules, every_rule, "a rule with no plant");
}

#[test]
fn the_messages_name_the_file_line_rule_and_what_was_named() {
    let violations = check(&fixture("refused"), RULES, &[]).unwrap();
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    for expected in [
        "src/commands/through_ops.rs:2: commands-name-no-adapter: names `crate::engine::Engine` (written `crate::ops::Daemon`)",
        "src/commands/context_engine.rs:5: commands-get-no-adapter: calls `.engine()` (`crate::context::Context::engine` returns `crate::engine::Engine`)",
        "src/monitor/mod.rs:2: bollard-only-in-engine: names `bollard::models::ContainerStatsResponse` (written `::bollard::models::ContainerStatsResponse`)",
        "src/ops/opens_for_writing.rs:4: writes-go-through-files: opens a file with `.append(true)`",
    ] {
        assert!(
            lines.iter().any(|line| line.starts_with(expected)),
            "no line starts with {expected:?} in:\n{}",
            lines.join("\n")
        );
    }
}

#[test]
fn a_clean_tree_is_accepted_with_its_exception_used() {
    let exception = Exception {
        rule: "core-does-no-io",
        file: "profile/file.rs",
        why: "a profile is read where its rules are",
    };
    assert_eq!(
        check(&fixture("clean"), RULES, &[exception]).unwrap(),
        Vec::<Violation>::new()
    );
}

#[test]
fn an_exception_that_excuses_nothing_is_reported() {
    let stale = Exception {
        rule: "core-does-no-io",
        file: "compat/mod.rs",
        why: "no longer needed",
    };
    let excused = Exception {
        rule: "core-does-no-io",
        file: "profile/file.rs",
        why: "a profile is read where its rules are",
    };
    let violations = check(&fixture("clean"), RULES, &[excused, stale]).unwrap();
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0].file, "src/compat/mod.rs");
    assert!(
        violations[0].what.contains("excuses nothing"),
        "{}",
        violations[0]
    );
}

#[test]
fn envctl_keeps_its_layering_rules() {
    let sources = envctl_sources();
    // Every crate of the workspace that holds envctl's code is judged.
    for source in &sources {
        assert!(source.root.is_dir(), "{}", source.root.display());
    }
    let violations = check_sources(&sources, RULES, EXCEPTIONS).unwrap();
    assert!(
        violations.is_empty(),
        "ARCHITECTURE.md's rules are broken (or an exception is stale):\n{}",
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The crate graph is the architecture: the core and the facts can name only what they
/// depend on, so their manifests must never gain an adapter's crate (bollard, NVML, the
/// async runtime and HTTP stack, the terminal) or a crate of envctl above them.
#[test]
fn the_core_and_the_facts_depend_on_no_adapter() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let forbidden_everywhere = [
        "bollard",
        "nvml-wrapper",
        "tokio",
        "hyper",
        "hyper-util",
        "console",
        "indicatif",
        "crossterm",
        "clap",
        "envctl",
    ];
    for (manifest, also_forbidden) in [
        ("crates/envctl-core/Cargo.toml", &[][..]),
        ("crates/envctl-facts/Cargo.toml", &["envctl-core"][..]),
        (
            "crates/envctl-fatbin/Cargo.toml",
            &["envctl-core", "envctl-facts"][..],
        ),
        (
            "crates/envctl-core/Cargo.toml",
            &["envctl-gpu", "envctl-host"][..],
        ),
        (
            "crates/envctl-facts/Cargo.toml",
            &["envctl-gpu", "envctl-host"][..],
        ),
        ("crates/envctl-host/Cargo.toml", &["envctl-gpu"][..]),
    ] {
        let text = std::fs::read_to_string(workspace.join(manifest)).unwrap();
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let dependencies = parsed["dependencies"].as_table().unwrap();
        assert!(!dependencies.is_empty(), "{manifest}");
        for name in forbidden_everywhere.iter().chain(also_forbidden) {
            assert!(
                !dependencies.contains_key(*name),
                "{manifest} depends on `{name}`: the layer below may not name it"
            );
        }
    }
}

/// The GPU adapter's crate stands on the facts alone: NVML and the facts, nothing else.
#[test]
fn the_gpu_adapter_names_nvml_and_the_facts_only() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(workspace.join("crates/envctl-gpu/Cargo.toml")).unwrap();
    let parsed: toml::Table = toml::from_str(&text).unwrap();
    let names: BTreeSet<&str> = parsed["dependencies"]
        .as_table()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, BTreeSet::from(["envctl-facts", "nvml-wrapper"]));
}

/// The engine adapter's crate names no other adapter, no terminal crate and not the binary.
#[test]
fn the_engine_adapter_names_no_other_adapter_and_no_terminal() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(workspace.join("crates/envctl-engine/Cargo.toml")).unwrap();
    let parsed: toml::Table = toml::from_str(&text).unwrap();
    let dependencies = parsed["dependencies"].as_table().unwrap();
    assert!(dependencies.contains_key("bollard"));
    for name in [
        "nvml-wrapper",
        "envctl-gpu",
        "envctl",
        "console",
        "indicatif",
        "crossterm",
        "clap",
    ] {
        assert!(
            !dependencies.contains_key(name),
            "crates/envctl-engine/Cargo.toml depends on `{name}`"
        );
    }
    let root = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    let root: toml::Table = toml::from_str(&root).unwrap();
    assert!(
        !root["dependencies"]
            .as_table()
            .unwrap()
            .contains_key("bollard"),
        "the binary's library names bollard: only the engine crate may"
    );
}

/// A crate judged as one layer (as `envctl-fatbin` is `compat`) keeps that layer's rules:
/// I/O and the terminal in a core crate are refused, with the crate's path in the report.
#[test]
fn a_core_crate_that_does_io_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().join("src");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("lib.rs"),
        "//! A reader.\n\npub fn read() -> Vec<u8> {\n    println!(\"reading\");\n    std::fs::read(\"x\").unwrap_or_default()\n}\n",
    )
    .unwrap();
    let source = Source {
        root,
        shown: "crates/planted/src".into(),
        layer: Some("compat"),
        kept_by_the_compiler: &["core-names-no-adapter"],
    };
    let violations = check_sources(&[source], RULES, &[]).unwrap();
    let found: Vec<(String, usize, &str)> = violations
        .iter()
        .map(|violation| (violation.file.clone(), violation.line, violation.rule))
        .collect();
    assert_eq!(
        found,
        [
            (
                "crates/planted/src/lib.rs".to_string(),
                4,
                "terminal-only-in-ui"
            ),
            (
                "crates/planted/src/lib.rs".to_string(),
                5,
                "core-does-no-io"
            ),
        ]
    );
}

/// The binary (cli, commands) stands on the application crate, the core and the facts:
/// its manifest names no adapter crate and no outside crate only an adapter may use, so a
/// command cannot name the engine, NVML or the host, and the application crate is the one
/// that names them all.
#[test]
fn the_binary_names_no_adapter_crate() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let root = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    let root: toml::Table = toml::from_str(&root).unwrap();
    let dependencies = root["dependencies"].as_table().unwrap();
    assert!(dependencies.contains_key("envctl-ops"));
    for name in [
        "envctl-engine",
        "envctl-gpu",
        "envctl-host",
        "bollard",
        "nvml-wrapper",
        "hyper",
        "hyper-util",
        "tokio-rustls",
    ] {
        assert!(
            !dependencies.contains_key(name),
            "the binary's manifest names `{name}`: only envctl-ops (and the adapters) may"
        );
    }
    let ops = std::fs::read_to_string(workspace.join("crates/envctl-ops/Cargo.toml")).unwrap();
    let ops: toml::Table = toml::from_str(&ops).unwrap();
    let ops = ops["dependencies"].as_table().unwrap();
    for name in ["envctl-engine", "envctl-gpu", "envctl-host", "envctl-core"] {
        assert!(ops.contains_key(name), "envctl-ops must name `{name}`");
    }
    assert!(
        !ops.contains_key("envctl"),
        "envctl-ops names the binary above it"
    );
}
