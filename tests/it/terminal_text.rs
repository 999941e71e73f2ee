//! Outside text on the terminal (issue 12, class 6): a profile's description, a
//! container's labels, a TARGET the user typed and a daemon's answer reach stdout and
//! stderr with ESC, OSC, CR, NUL and bidirectional characters escaped, and capped.

use std::fs;

use crate::support::cli::Envctl;
use crate::support::docker::{self, ContainerGuard, docker_succeeds, test_image};

/// What a terminal would act on: none of it may reach the screen raw.
fn assert_no_terminal_controls(stream: &str, text: &[u8]) {
    for (position, byte) in text.iter().enumerate() {
        let raw_control = matches!(byte, 0x00..=0x08 | 0x0b..=0x1f | 0x7f);
        assert!(
            !raw_control,
            "{stream} has the raw control byte {byte:#04x} at {position}: {:?}",
            String::from_utf8_lossy(text)
        );
    }
    let text = String::from_utf8_lossy(text);
    for bidi in ['\u{202e}', '\u{2066}', '\u{200f}', '\u{9b}'] {
        assert!(!text.contains(bidi), "{stream} has {bidi:?} raw: {text:?}");
    }
}

// NUL is refused in every profile string (class 7), so it is not among these.
const HOSTILE: &str = r#"hi \u001b]0;owned\u0007 \u001b[2J \u202e txt \u0008 over\rwrite"#;

#[test]
fn a_description_with_terminal_controls_is_listed_escaped() {
    let folder = tempfile::tempdir().unwrap();
    fs::create_dir(folder.path().join("envctl")).unwrap();
    fs::write(
        folder.path().join("envctl/hostile.toml"),
        format!("image = \"busybox:1\"\ndescription = \"{HOSTILE}\"\n"),
    )
    .unwrap();
    let output = Envctl::in_folder(folder.path())
        .args(["profiles", "list"])
        .output();
    assert!(output.status.success(), "{output:?}");
    assert_no_terminal_controls("stdout", &output.stdout);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r"hi \x1b]0;owned\x07 \x1b[2J \u{202e} txt \x08 over\rwrite"),
        "{stdout}"
    );
}

#[test]
fn a_megabyte_description_is_capped_in_the_list() {
    let folder = tempfile::tempdir().unwrap();
    fs::create_dir(folder.path().join("envctl")).unwrap();
    let long = "x".repeat(900 * 1024);
    fs::write(
        folder.path().join("envctl/long.toml"),
        format!("image = \"busybox:1\"\ndescription = \"{long}\"\n"),
    )
    .unwrap();
    let output = Envctl::in_folder(folder.path())
        .args(["profiles", "list"])
        .output();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|line| line.starts_with("long "))
        .unwrap_or_else(|| panic!("no row for `long`: {stdout:.2000}"));
    assert!(line.len() < 5000, "the row is {} bytes", line.len());
    assert!(
        line.ends_with(&format!("… {} bytes more", 900 * 1024 - 4096)),
        "{line:.200}…"
    );
}

#[test]
fn a_typed_target_with_terminal_controls_is_escaped_in_the_error() {
    if !docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let output = Envctl::in_folder(folder.path())
        .args(["logs", "no\u{1b}]0;owned\u{7}such\rthing\u{202e}"])
        .output();
    assert!(!output.status.success(), "{output:?}");
    assert_no_terminal_controls("stderr", &output.stderr);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r"no\x1b]0;owned\x07such\rthing\u{202e}"),
        "{stderr}"
    );
}

#[test]
fn container_labels_with_terminal_controls_are_escaped_in_ps() {
    if !docker::require_daemon() {
        return;
    }
    let image = test_image();
    let guard = ContainerGuard::unique("envctl-test-hostile-label");
    // A container envctl did not make can carry any label text: ps shows its profile.
    assert!(docker_succeeds([
        "create",
        "--name",
        guard.name(),
        "--label",
        "envctl.profile=evil\u{1b}]0;owned\u{7}\u{202e}name\r",
        &image,
        "true",
    ]));
    let folder = tempfile::tempdir().unwrap();
    let output = Envctl::in_folder(folder.path()).args(["ps", "-a"]).output();
    assert!(output.status.success(), "{output:?}");
    assert_no_terminal_controls("stdout", &output.stdout);
    assert_no_terminal_controls("stderr", &output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r"evil\x1b]0;owned\x07\u{202e}name\r"),
        "{stdout}"
    );
}

#[test]
fn the_dry_run_line_escapes_controls_and_bash_still_passes_the_exact_bytes() {
    let folder = tempfile::tempdir().unwrap();
    fs::create_dir(folder.path().join("envctl")).unwrap();
    fs::write(
        folder.path().join("envctl/ctl.toml"),
        "image = \"busybox:1\"\ncommand = [\"echo\", \"a\\u001b]0;x\\u0007b'c\\u202e\"]\n",
    )
    .unwrap();
    let output = Envctl::in_folder(folder.path())
        .args(["up", "ctl", "--dry-run"])
        .output();
    assert!(output.status.success(), "{output:?}");
    assert_no_terminal_controls("stdout", &output.stdout);
    let line = String::from_utf8(output.stdout).unwrap();
    // bash runs the line with `docker` printing its arguments, NUL-separated.
    let script = format!("docker() {{ printf '%s\\0' \"$@\"; }}; {}", line.trim_end());
    let run = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let arguments: Vec<&[u8]> = run.stdout.split(|byte| *byte == 0).collect();
    assert!(
        arguments.contains(&"a\u{1b}]0;x\u{7}b'c\u{202e}".as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&run.stdout)
    );
}
