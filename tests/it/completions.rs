//! `completions/` must match what the binary generates: fails when the CLI changed and
//! the committed scripts did not. Regenerate with `ENVCTL_UPDATE_COMPLETIONS=1 cargo test --test it completions::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;

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
        let output = Command::cargo_bin("envctl")
            .unwrap()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "envctl completions {shell} failed");
        let path = directory.join(file);
        if update {
            std::fs::create_dir_all(&directory).unwrap();
            std::fs::write(&path, &output.stdout).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(output.stdout.as_slice()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale completion scripts: {stale:?}\nregenerate with: ENVCTL_UPDATE_COMPLETIONS=1 cargo test --test it completions::"
    );
}
