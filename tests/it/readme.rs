//! The console examples of README.md and of every page of docs/, run (issue 15, item 15;
//! issue 31): every ```` ```console ```` block is `$ envctl ARGUMENTS` and what envctl
//! prints, stdout then stderr. `…` alone on a line stands for any number of lines, and
//! inside a line for any text — what differs between hosts (the Docker version, free
//! space). A block this file does not know how to set up still runs, with no set-up; the
//! count of blocks is checked, so a new one is never silently left out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::cli::Envctl;

/// One console example of the README or a page of docs/.
struct Example {
    /// `README.md` or `docs/NAME.md`.
    file: String,
    line: usize,
    arguments: Vec<String>,
    expected: Vec<String>,
}

/// README.md, then the pages of docs/ by name.
fn documents() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    pages.insert(0, "README.md".into());
    pages
}

fn examples() -> Vec<Example> {
    documents()
        .iter()
        .flat_map(|file| examples_of(file))
        .collect()
}

fn examples_of(file: &str) -> Vec<Example> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let mut examples = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        if line.trim() != "```console" {
            continue;
        }
        let (_, command) = lines.next().unwrap();
        let command = command.strip_prefix("$ envctl ").unwrap_or_else(|| {
            panic!(
                "{file}:{}: a console example starts with `$ envctl `",
                number + 2
            )
        });
        let expected = lines
            .by_ref()
            .map(|(_, line)| line)
            .take_while(|line| line.trim() != "```")
            .map(str::to_string)
            .collect();
        examples.push(Example {
            file: file.to_string(),
            line: number + 1,
            arguments: split_words(command),
            expected,
        });
    }
    examples
}

/// Words as a shell splits them, with double quotes (all the README uses).
fn split_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for character in command.chars() {
        match character {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            character => {
                word.push(character);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Whether `actual` is `expected` with each `…` standing for any text.
fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the lines match, a line `…` standing for any number of lines.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "…" => {
            (0..=actual.len()).any(|skipped| lines_match(rest, &actual[skipped..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, others)| line_matches(first, line) && lines_match(rest, others)),
    }
}

#[test]
fn the_matcher_reads_ellipses_as_the_readme_means_them() {
    assert!(line_matches(
        "Docker … at x (API …)",
        "Docker 20.10.24+dfsg1 at x (API 1.41)"
    ));
    assert!(!line_matches("Docker … at x", "Docker 20 at y"));
    assert!(line_matches("a", "a") && !line_matches("a", "ab"));
    let expected: Vec<String> = ["h", "…", "x", "…"].map(String::from).to_vec();
    assert!(lines_match(&expected, &["h", "1", "2", "x", "3"]));
    assert!(lines_match(&expected, &["h", "x"]));
    assert!(!lines_match(&expected, &["h", "1"]));
    assert_eq!(
        split_words(r#"compat --gpu "GTX 1080 Ti" --cc 6.1"#),
        ["compat", "--gpu", "GTX 1080 Ti", "--cc", "6.1"]
    );
}

/// The example policy, as the ```` ```toml ```` block under "Policy" in
/// docs/shared-servers.md writes it (checked below, so the two cannot drift apart).
const README_POLICY: &str = "# /etc/envctl/policy.toml\n[limits]\nmax_gpus_per_container = 2\nmax_gpus_per_user = 4\nmax_memory = \"64g\"\nmax_cpus = 16\nrequire_memory_limit = true\n\n[images]\nregistries = [\"registry.example.com\", \"docker.io\"]\n\n[ports]\nloopback_only = true\n";

#[test]
fn the_docs_show_the_policy_their_example_runs_with() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/shared-servers.md"),
    )
    .unwrap();
    assert!(
        page.contains(&format!("```toml\n{README_POLICY}```\n")),
        "docs/shared-servers.md's policy block differs from README_POLICY"
    );
}

#[test]
fn every_console_example_prints_what_the_readme_shows() {
    let examples = examples();
    // The console examples today; a new one is run too, and counted here.
    assert_eq!(
        examples.len(),
        13,
        "console examples of README.md and docs/: update this count"
    );
    // The quick start runs as shown in one folder (issue 40): `profiles new train --from
    // pytorch-2.8` writes envctl/train.toml, and `up`, `exec`, `stats` and `down` use it,
    // on this host without GPUs. The one change is the image line — the small test image
    // for PyTorch's gigabytes; gpus, ulimits, shm and mounts are what `profiles new` wrote.
    let quick_start = tempfile::tempdir().unwrap();
    let mut _train = None;
    for example in examples {
        let folder = tempfile::tempdir().unwrap();
        let mut envctl = Envctl::in_folder(folder.path());
        let words: Vec<&str> = example.arguments.iter().map(String::as_str).collect();
        if example.file == "README.md" && words.contains(&"train") {
            if words[..2] == ["profiles", "new"] {
                envctl = Envctl::in_folder(quick_start.path());
            } else {
                if !crate::support::docker::require_daemon() {
                    continue;
                }
                if _train.is_none() {
                    let file = quick_start.path().join("envctl/train.toml");
                    let written = std::fs::read_to_string(&file).expect(
                        "the README's `profiles new train` example comes before `up train`",
                    );
                    let image = written
                        .lines()
                        .find(|line| line.starts_with("image = "))
                        .expect("profiles new writes an image line");
                    std::fs::write(
                        &file,
                        written.replacen(
                            image,
                            &format!("image = \"{}\"", crate::support::docker::test_image()),
                            1,
                        ),
                    )
                    .unwrap();
                    _train = Some(crate::support::docker::ContainerGuard::new("envctl-train"));
                }
                envctl = Envctl::in_folder(quick_start.path());
            }
        }
        match example
            .arguments
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()[..]
        {
            ["doctor", ..] => {
                if !crate::support::docker::require_daemon() {
                    continue;
                }
                envctl = envctl.nvml("healthy-8x-h100.conf");
            }
            // The policy of "Shared hosts: policy", and a profile breaking two rules.
            ["up", "./train.toml", "--dry-run"] => {
                std::fs::write(folder.path().join("policy.toml"), README_POLICY).unwrap();
                std::fs::write(
                    folder.path().join("train.toml"),
                    "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\ngpus = 4\nmemory = \"32g\"\ncpus = 8\nports = [\"0.0.0.0:8888:8888\"]\n",
                )
                .unwrap();
                envctl = envctl.env("ENVCTL_POLICY", "policy.toml");
            }
            ["profiles", "check", file] => std::fs::write(
                folder.path().join(file),
                "image = \"pytorch/pytorch:2.8.0\"\nmemroy = \"16g\"\n",
            )
            .unwrap(),
            _ => {}
        }
        let run = envctl.args(&example.arguments).run();
        let text = format!("{}{}", run.stdout, run.stderr);
        let actual: Vec<&str> = text.trim_end().lines().collect();
        assert!(
            lines_match(&example.expected, &actual),
            "{}:{}: `envctl {}` printed\n{}\n--- the page shows ---\n{}",
            example.file,
            example.line,
            example.arguments.join(" "),
            text,
            example.expected.join("\n")
        );
    }
    // The same quick start on a host whose NVML presents eight GPUs (the stand-in) and
    // whose daemon has no NVIDIA runtime: the file `profiles new` wrote still starts as
    // shown (issue 40), without GPUs, and says why.
    // (A daemon with an NVIDIA runtime would hand the stand-in's GPUs over, which it does not
    // have: there the scenario cannot happen, and is said to be skipped.)
    let nvidia_runtime =
        crate::support::docker::docker_stdout(["info", "--format", "{{json .Runtimes}}"])
            .contains("nvidia");
    if nvidia_runtime && _train.is_some() {
        eprintln!(
            "\n*** SKIPPED the stand-in GPU run of the quick start: the daemon has an NVIDIA runtime"
        );
    }
    if _train.is_some() && !nvidia_runtime {
        let up = Envctl::in_folder(quick_start.path())
            .nvml("healthy-8x-h100.conf")
            .args(["up", "train"])
            .run();
        let said = format!("{}{}", up.stdout, up.stderr);
        assert_eq!(up.code, 0, "{said}");
        assert!(said.contains("started envctl-train ("), "{said}");
        let down = Envctl::in_folder(quick_start.path())
            .args(["down", "train", "--rm"])
            .run();
        assert_eq!(down.code, 0, "{down}");
    }
}

/// Issue 40: the README names the two commands a contributor needs, and they are the ones
/// CI runs: `bash .ci/run`, and the test command `.ci/run` runs (its marked line).
#[test]
fn the_readme_names_the_commands_ci_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let commands: Vec<&str> = readme
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .collect();
    let marked = ci
        .lines()
        .skip_while(|line| !line.contains("---- TEST COMMAND"))
        .find(|line| line.starts_with("cargo test"))
        .expect(".ci/run marks its test command");
    assert!(
        commands.contains(&marked.trim()),
        "README.md shows `{marked}`, the test command of .ci/run"
    );
    assert!(
        commands.contains(&"bash .ci/run"),
        "README.md shows `bash .ci/run`"
    );
    // The script named is runnable as shown: an unknown argument is refused with its usage.
    let refused = std::process::Command::new("bash")
        .args([".ci/run", "--no-such-flag"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("hint: `bash .ci/run`"),
        "{refused:?}"
    );
}
