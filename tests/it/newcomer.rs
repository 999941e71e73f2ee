//! Issue 40: a docker user's first hour as one story, in the order a newcomer meets it —
//! `up` with docker's overrides, `exec -it` on a real terminal (through `script`) and
//! without one (the hint run as given), `run` with piped input, `down` then `up` again,
//! drift seen from another folder, and a misspelt `--hosts`. Each step is also tested
//! alone in its own area; here they must hold one after the other, on one container.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::{Envctl, Run, hermetic};
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};

/// envctl in `folder` with `stdin` as a pipe (never a terminal), as a newcomer's shell
/// script would run it.
fn step(folder: &Path, arguments: &[&str], stdin: &str) -> Run {
    Envctl::in_folder(folder)
        .args(arguments)
        .stdin(stdin)
        .timeout(Duration::from_secs(120))
        .run()
}

/// envctl in `folder` on a real terminal: `script` gives it one and returns its code.
fn on_a_terminal(folder: &Path, arguments: &str) -> (i32, String) {
    let binary = assert_cmd::cargo::cargo_bin("envctl");
    let mut script = std::process::Command::new("script");
    hermetic(&mut script, folder);
    let output = script
        .args([
            "-qec",
            &format!("{} {arguments}", binary.display()),
            "/dev/null",
        ])
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_docker_users_first_hour_holds_step_after_step() {
    if !require_daemon() {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let folder = project.path();
    let profile = unique_name("newcomer");
    let file = folder.join(format!("envctl/{profile}.toml"));
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::create_dir_all(folder.join("data")).unwrap();
    std::fs::write(
        &file,
        format!("image = \"{}\"\nmemory = \"64m\"\n", test_image()),
    )
    .unwrap();
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let name = container.name().to_string();

    // 1. `up` with docker's -p, -e and a mount (`--volume`: `-v` is envctl's --verbose).
    let port = crate::support::registry::free_loopback_port().to_string();
    let published = format!("127.0.0.1:{port}:8888");
    let up = step(
        folder,
        &[
            "up",
            "-p",
            &published,
            "-e",
            "FOO=bar",
            "--volume",
            "./data:/data:ro",
            &profile,
        ],
        "",
    );
    assert_eq!(up.code, 0, "up with overrides: {up}");

    // 2. `exec -it` on a terminal runs on that terminal and passes the code on.
    let (code, output) = on_a_terminal(
        folder,
        &format!("exec -it {profile} sh -c 'test -t 0 && echo on-a-tty; exit 5'"),
    );
    assert_eq!(code, 5, "exec -it on a terminal: {output:?}");
    assert!(output.contains("on-a-tty"), "{output:?}");
    // Without a terminal it is refused at once (docker's words), and the hint runs.
    let refused = step(folder, &["exec", "-it", &profile, "cat"], "typed\n");
    assert_eq!(refused.code, 2, "exec -it without a terminal: {refused}");
    assert!(
        refused.stderr.contains("the input device is not a TTY"),
        "{refused}"
    );
    let hint = refused
        .stderr
        .lines()
        .find(|line| line.contains("hint:"))
        .and_then(|line| line.split('`').find(|part| part.starts_with("envctl ")))
        .unwrap_or_else(|| panic!("no command in the hint: {refused}"))
        .to_string();
    let words: Vec<&str> = hint.split_whitespace().skip(1).collect();
    let hinted = step(folder, &words, "typed\n");
    assert_eq!(
        (hinted.code, hinted.stdout.as_str()),
        (0, "typed\n"),
        "the hint `{hint}`: {hinted}"
    );

    // 3. `run` with piped input: the command reads it, and nothing is left behind.
    let run = step(folder, &["run", &profile, "cat"], "piped\n");
    assert_eq!((run.code, run.stdout.as_str()), (0, "piped\n"), "{run}");

    // 4. `down`, then `up`: the container starts again as it was made.
    let down = step(folder, &["down", &profile], "");
    assert_eq!(down.code, 0, "{down}");
    let again = step(folder, &["up", &profile], "");
    assert_eq!(again.code, 0, "up after down: {again}");
    assert_eq!(
        docker_stdout([
            "exec",
            &name,
            "sh",
            "-c",
            "echo $FOO; test -d /data && echo mounted"
        ]),
        "bar\nmounted"
    );

    // 5. The profile changes; `ps` in another folder judges the file it was made from.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("memory = \"64m\"", "memory = \"96m\"");
    std::fs::write(&file, text).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let listed = step(elsewhere.path(), &["--json", "ps"], "");
    assert_eq!(listed.code, 0, "{listed}");
    let listing: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let row = listing["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {listed}"));
    assert_eq!(row["drift"], "changed", "{row}");
    assert_eq!(row["profile_file"], file.to_str().unwrap(), "{row}");

    // 6. A misspelt team name is a usage error with the nearest name.
    std::fs::write(
        folder.join("envctl/hosts.toml"),
        "[hosts]\ngpu1 = \"tcp://127.0.0.1:9\"\n",
    )
    .unwrap();
    let typo = step(folder, &["ps", "--hosts", "@tema"], "");
    assert_eq!(typo.code, 2, "{typo}");
    assert!(typo.stderr.contains("did you mean `@team`?"), "{typo}");

    // The story ends as a newcomer ends it: `down --rm` leaves nothing of this profile.
    let removed = step(folder, &["down", &profile, "--rm"], "");
    assert_eq!(removed.code, 0, "{removed}");
    assert!(
        docker_stdout([
            "ps",
            "-a",
            "--filter",
            &format!("label=envctl.profile={profile}"),
            "--format",
            "{{.Names}}"
        ])
        .is_empty()
    );
}
