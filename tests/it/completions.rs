//! `completions/` must match what the binary generates: fails when the CLI changed and
//! the committed scripts did not. Regenerate with `ENVCTL_UPDATE_COMPLETIONS=1 cargo test --test it completions::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::cli::Envctl;

const SCRIPTS: [(&str, &str); 5] = [
    ("bash", "envctl.bash"),
    ("zsh", "_envctl"),
    ("fish", "envctl.fish"),
    ("elvish", "envctl.elv"),
    ("powershell", "_envctl.ps1"),
];

#[test]
fn committed_completions_are_current() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
    let update = std::env::var_os("ENVCTL_UPDATE_COMPLETIONS").is_some();
    let mut stale = Vec::new();
    for (shell, file) in SCRIPTS {
        let run = Envctl::shared().args(["completions", shell]).run();
        assert!(run.success(), "envctl completions {shell} failed");
        let path = directory.join(file);
        if update {
            std::fs::create_dir_all(&directory).unwrap();
            std::fs::write(&path, &run.stdout).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(run.stdout.as_bytes()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale completion scripts: {stale:?}\nregenerate with: ENVCTL_UPDATE_COMPLETIONS=1 cargo test --test it completions::"
    );
}

/// Issue 15, item 14: bash, with the committed script sourced, completes `envctl up <TAB>`
/// with the profiles envctl finds in that folder (a project profile as well as the
/// bundled ones) and `envctl doctor --st<TAB>` with the flag, by asking envctl itself.
#[test]
fn bash_completes_the_profiles_envctl_finds_here() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/team-train.toml"),
        "image = \"busybox:1\"\n",
    )
    .unwrap();
    let complete = |words: &str| {
        bash_complete(
            folder.path(),
            words,
            Some("unix:///nonexistent/envctl-completion.sock"),
        )
    };
    let profiles = complete("envctl up team");
    assert_eq!(profiles.trim(), "team-train", "{profiles}");
    let all = complete("envctl up ''");
    assert!(all.lines().any(|line| line == "pytorch-2.8"), "{all}");
    assert!(all.lines().any(|line| line == "team-train"), "{all}");
    // A TARGET with no daemon to ask offers the profiles (and no error).
    let targets = complete("envctl exec team");
    assert_eq!(targets.trim(), "team-train", "{targets}");
    let flags = complete("envctl doctor --st");
    assert_eq!(flags.trim(), "--strict", "{flags}");
}

/// bash, with the committed script sourced, completing `words` in `folder`; `docker_host`:
/// the daemon the completion may ask (`None`: the default socket).
fn bash_complete(folder: &Path, words: &str, docker_host: Option<&str>) -> String {
    let binary = assert_cmd::cargo::cargo_bin("envctl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/envctl.bash");
    let program = format!(
        "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMP_TYPE=9; \
         _clap_complete_envctl envctl \"${{COMP_WORDS[COMP_CWORD]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let mut bash = std::process::Command::new("bash");
    crate::support::cli::hermetic(&mut bash, folder);
    bash.args(["-c", &program])
        .env(
            "PATH",
            format!(
                "{}:{}",
                binary.parent().unwrap().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("XDG_CONFIG_HOME", folder.join("xdg"));
    if let Some(host) = docker_host {
        bash.env("DOCKER_HOST", host);
    }
    let output = bash.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Issue 40: a TARGET completes what the command can act on — envctl's running containers
/// and their profiles — not every profile of the folder.
#[test]
fn a_target_completes_running_containers_and_their_profiles() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("envctl")).unwrap();
    let running = crate::support::docker::unique_name("cmpl-up");
    let idle = crate::support::docker::unique_name("cmpl-idle");
    for profile in [&running, &idle] {
        std::fs::write(
            folder.path().join(format!("envctl/{profile}.toml")),
            format!(
                "image = \"{}\"\nmemory = \"64m\"\n",
                crate::support::docker::test_image()
            ),
        )
        .unwrap();
    }
    let container = crate::support::docker::ContainerGuard::new(format!("envctl-{running}"));
    let up = Envctl::in_folder(folder.path())
        .args(["up", &running])
        .run();
    assert!(up.success(), "{up}");
    let offered = bash_complete(folder.path(), "envctl exec ''", None);
    let offered: Vec<&str> = offered.lines().collect();
    assert!(offered.contains(&running.as_str()), "{offered:?}");
    assert!(offered.contains(&container.name()), "{offered:?}");
    assert!(
        !offered.contains(&idle.as_str()),
        "not running: {offered:?}"
    );
    assert!(
        !offered.contains(&"pytorch-2.8"),
        "a bundled profile: {offered:?}"
    );
    // `down` completes the same; `up` still every profile.
    let down = bash_complete(folder.path(), "envctl down cmpl-up", None);
    assert!(down.lines().any(|line| line == running), "{down}");
    let up = bash_complete(folder.path(), "envctl up cmpl-idle", None);
    assert!(up.lines().any(|line| line == idle), "{up}");
}
