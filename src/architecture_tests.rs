//! ARCHITECTURE.md's rules, checked over the source: the seams (bollard only in
//! `engine/`, nvml-wrapper only in `gpu/`, the terminal only through `ui/`), the pure
//! core that names no adapter and does no I/O, `commands` that name no adapter, `ops`
//! that never calls back into `commands`, `facts/` on a floor of plain values, and the
//! files written only through `files.rs`. A rule with a stated exception lists it here
//! with its reason, as ARCHITECTURE.md does; a new exception is a change to both.
//!
//! Code under `#[cfg(test)]` (a module's tests, test-only files) is not judged: tests
//! may build fixtures with `std::fs` and print.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The crate's `src/` folder.
fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, as (path relative to `src/`, code outside tests and
/// comments).
fn sources() -> Vec<(String, String)> {
    let root = source_root();
    let mut found = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let relative = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&path).unwrap();
                if is_test_file(&relative, &text) {
                    continue;
                }
                found.push((relative, code_outside_tests(&text)));
            }
        }
    }
    found.sort();
    found
}

/// Files that hold only tests: `tests.rs`, `*_tests.rs`, or a module declared
/// `#[cfg(test)]` by its parent (this file among them).
fn is_test_file(relative: &str, text: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || text.starts_with("#![cfg(test)]")
        || relative == "architecture_tests.rs"
}

/// The code of `text` before its first `#[cfg(test)]` item (the tests module closes
/// every file that has one), without comment lines.
fn code_outside_tests(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            !(trimmed.starts_with("//") || trimmed.starts_with("*"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module a file belongs to: `engine` for `engine/list.rs`, `files` for
/// `files.rs`.
fn module_of(relative: &str) -> &str {
    relative
        .split('/')
        .next()
        .unwrap_or(relative)
        .trim_end_matches(".rs")
}

/// The files outside `allowed` modules (and not in `exceptions`) whose code contains any
/// of `needles`.
fn offenders(
    needles: &[&str],
    allowed: &[&str],
    exceptions: &[(&str, &str)],
    only_in: Option<&[&str]>,
) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(relative, _)| !allowed.contains(&module_of(relative)))
        .filter(|(relative, _)| {
            only_in.is_none_or(|modules| modules.contains(&module_of(relative)))
        })
        .filter(|(relative, _)| !exceptions.iter().any(|(file, _)| file == relative))
        .filter_map(|(relative, code)| {
            let found: Vec<&str> = needles
                .iter()
                .copied()
                .filter(|needle| code.contains(needle))
                .collect();
            (!found.is_empty()).then(|| format!("{relative}: {}", found.join(", ")))
        })
        .collect()
}

/// The pure core: verdicts, mappings and diagnoses over facts.
const CORE: [&str; 10] = [
    "checks", "compat", "spec", "export", "nvcheck", "monitor", "profile", "lock", "policy",
    "facts",
];

#[test]
fn only_the_engine_adapter_imports_bollard_and_only_the_gpu_adapter_nvml() {
    assert_eq!(
        offenders(&["bollard::"], &["engine"], &[], None),
        Vec::<String>::new()
    );
    assert_eq!(
        offenders(&["nvml_wrapper"], &["gpu"], &[], None),
        Vec::<String>::new()
    );
}

#[test]
fn only_ui_writes_to_the_terminal() {
    assert_eq!(
        offenders(
            &[
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "io::stdout()",
                "io::stderr()",
            ],
            &["ui"],
            &[],
            None,
        ),
        Vec::<String>::new()
    );
}

#[test]
fn the_core_names_no_adapter_no_application_layer_and_no_context() {
    assert_eq!(
        offenders(
            &[
                "crate::engine",
                "crate::gpu",
                "crate::host",
                "crate::registry",
                "crate::ops",
                "crate::commands",
                "crate::context",
            ],
            &[],
            &[],
            Some(&CORE),
        ),
        Vec::<String>::new()
    );
}

#[test]
fn the_application_layer_never_calls_back_into_the_commands() {
    // `commands/` parse, call `ops`, render; `ops` never reaches back up.
    assert_eq!(
        offenders(&["crate::commands", "crate::cli"], &[], &[], Some(&["ops"])),
        Vec::<String>::new()
    );
}

#[test]
fn commands_parse_call_ops_and_render() {
    // The adapters are reached through `ops`, never from a command file.
    assert_eq!(
        offenders(
            &[
                "crate::engine",
                "crate::registry",
                "crate::gpu",
                "crate::host",
            ],
            &[],
            &[],
            Some(&["commands"]),
        ),
        Vec::<String>::new()
    );
}

#[test]
fn facts_stand_on_plain_values() {
    // `facts/` is the floor every layer stands on: it names nothing above it.
    assert_eq!(
        offenders(
            &[
                "crate::compat",
                "crate::profile",
                "crate::spec",
                "crate::checks",
                "crate::monitor",
                "crate::policy",
                "crate::error",
            ],
            &[],
            &[],
            Some(&["facts"]),
        ),
        Vec::<String>::new()
    );
}

/// The core modules that read files, each with why (ARCHITECTURE.md says the same):
/// a profile and a lock are read where they are resolved, because what may be read
/// (confinement to the search folders, `extends`, the lock beside the project) is itself
/// the rule those modules state.
const CORE_READERS: [(&str, &str); 6] = [
    (
        "profile/file.rs",
        "profile discovery and `extends` read the profile files they resolve",
    ),
    (
        "profile/resolve.rs",
        "resolution follows `extends` to the files it names",
    ),
    (
        "profile/confine.rs",
        "confinement compares real paths (`canonicalize`), which only the file system knows",
    ),
    (
        "lock/file.rs",
        "`envctl.lock` is read through `untrusted` and written through `files`, beside its model",
    ),
    (
        "lock/mod.rs",
        "the lock's reader names the `untrusted` refusals in its error",
    ),
    (
        "policy/mod.rs",
        "the host policy is read through `untrusted` where its rules are (a missing file is no policy)",
    ),
];

#[test]
fn the_core_does_no_io_but_reading_profiles() {
    assert_eq!(
        offenders(
            &[
                "std::fs",
                "File::",
                "OpenOptions",
                "crate::files",
                "crate::untrusted",
                "TcpStream",
                "TcpListener",
                "UdpSocket",
                "UnixStream",
                "std::process",
            ],
            &[],
            &CORE_READERS,
            Some(&CORE),
        ),
        Vec::<String>::new()
    );
}

/// Files that open a file for writing outside `files.rs`, each with why.
const OTHER_WRITERS: [(&str, &str); 1] = [(
    "host/gpu_lock.rs",
    "the placement lock is a file held open for `flock`, never written: created empty, mode 0666, and never replaced",
)];

#[test]
fn every_file_envctl_writes_goes_through_files_rs() {
    assert_eq!(
        offenders(
            &[
                "fs::write",
                "File::create",
                ".write(true)",
                ".append(true)",
                ".create(true)",
                "fs::rename",
                "fs::remove_file",
            ],
            &["files"],
            &OTHER_WRITERS,
            None,
        ),
        Vec::<String>::new()
    );
}
