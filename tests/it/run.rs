//! `envctl run PROFILE [CMD…]` on the real daemon, without Slurm (`tests/it/slurm.rs` runs
//! it in jobs): the command's output and exit code pass through, and at its end or at
//! SIGTERM, SIGINT or SIGHUP the container is stopped and removed within the bound.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::cli::Envctl;
use crate::support::docker;
use crate::support::signal;

/// A folder with `./envctl/NAME.toml` on the test image.
fn project(name: &str) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{name}.toml")),
        format!("image = \"{}\"\n", docker::test_image()),
    )
    .unwrap();
    folder
}

fn containers_of(profile: &str) -> String {
    docker::docker_stdout([
        "ps",
        "-a",
        "--filter",
        &format!("label=envctl.profile={profile}"),
        "--format",
        "{{.Names}}",
    ])
}

#[test]
fn output_and_exit_code_pass_through_and_nothing_is_left() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runcode");
    let folder = project(&profile);
    let run = Envctl::in_folder(folder.path())
        .args([
            "run",
            &profile,
            "sh",
            "-c",
            "echo out; echo err >&2; exit 7",
        ])
        .run();
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(run.stdout, "out\n");
    assert!(run.stderr.contains("err\n"), "{}", run.stderr);
    assert!(
        containers_of(&profile).trim().is_empty(),
        "left: {}",
        containers_of(&profile)
    );
    // `--` before the command, and a flag of the command after the profile.
    let run = Envctl::in_folder(folder.path())
        .args(["run", &profile, "--", "ls", "-d", "/tmp"])
        .run();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "/tmp\n"),
        "{}",
        run.stderr
    );
    assert!(containers_of(&profile).trim().is_empty());
}

#[test]
fn each_ending_signal_stops_and_removes_the_container_with_its_code() {
    if !docker::require_daemon() {
        return;
    }
    for (name, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        let profile = docker::unique_name("runsignal");
        let folder = project(&profile);
        let mut child = Envctl::in_folder(folder.path())
            .command()
            .args([
                "run",
                &profile,
                "--stop-timeout",
                "5",
                "--",
                "sh",
                "-c",
                "trap 'echo last words; exit 3' TERM; while :; do sleep 0.1; done",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let running = crate::support::slurm::wait_until(Duration::from_secs(30), || {
            !docker::docker_stdout([
                "ps",
                "--filter",
                &format!("label=envctl.profile={profile}"),
                "-q",
            ])
            .trim()
            .is_empty()
        });
        assert!(running.is_some(), "SIG{name}: the container never ran");
        // The command's trap is set once its loop runs: a `sleep 0.1` of it is there.
        wait_for_the_loop(&profile);
        let sent = Instant::now();
        assert!(signal::send(&child, name));
        let status = signal::wait_within(&mut child, Duration::from_secs(15))
            .unwrap_or_else(|| panic!("SIG{name}: envctl did not end"));
        let took = sent.elapsed();
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(status.code(), Some(code), "SIG{name}: {stdout}");
        // The command got SIGTERM through docker-init and said its last words.
        assert!(stdout.contains("last words"), "SIG{name}: {stdout}");
        assert!(
            containers_of(&profile).trim().is_empty(),
            "SIG{name}: left {}",
            containers_of(&profile)
        );
        assert!(took < Duration::from_secs(5), "SIG{name}: took {took:?}");
    }
}

/// Waits until the profile's container runs the `sleep 0.1` of its command's loop, which
/// starts after the command's `trap`.
fn wait_for_the_loop(profile: &str) {
    let container = docker::docker_stdout([
        "ps",
        "--filter",
        &format!("label=envctl.profile={profile}"),
        "-q",
    ]);
    crate::support::wait::wait_for_new_process(
        container.trim(),
        "sleep 0.1",
        &[],
        Duration::from_secs(30),
    );
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_at_the_stop_timeout() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runstubborn");
    let folder = project(&profile);
    let mut child = Envctl::in_folder(folder.path())
        .command()
        .args([
            "run",
            &profile,
            "--stop-timeout",
            "2",
            "--",
            "sh",
            "-c",
            "trap '' TERM; while :; do sleep 0.1; done",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        crate::support::slurm::wait_until(Duration::from_secs(30), || {
            !docker::docker_stdout([
                "ps",
                "--filter",
                &format!("label=envctl.profile={profile}"),
                "-q",
            ])
            .trim()
            .is_empty()
        })
        .is_some()
    );
    // The command's trap is set once its loop runs: a `sleep 0.1` of it is there.
    wait_for_the_loop(&profile);
    let sent = Instant::now();
    assert!(signal::send(&child, "TERM"));
    let status = signal::wait_within(&mut child, Duration::from_secs(20)).expect("envctl ended");
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(143));
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(8),
        "took {took:?}"
    );
    assert!(containers_of(&profile).trim().is_empty());
}

#[test]
fn run_refuses_an_existing_name_and_bad_input_makes_nothing() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runname");
    let folder = project(&profile);
    let taken = docker::ContainerGuard::unique("envctl-test-taken");
    docker::docker_stdout([
        "create",
        "--name",
        taken.name(),
        "--label",
        docker::TEST_LABEL,
        &docker::test_image(),
        "true",
    ]);
    let run = Envctl::in_folder(folder.path())
        .args(["run", &profile, "--name", taken.name(), "true"])
        .run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("exists already"), "{}", run.stderr);
    assert!(
        docker::container_exists(taken.name()),
        "run touched the other container"
    );
    // A stop timeout out of range and --json are refused before anything is made.
    for arguments in [
        vec!["run", profile.as_str(), "--stop-timeout", "-1", "true"],
        vec!["--json", "run", profile.as_str(), "true"],
    ] {
        let run = Envctl::in_folder(folder.path()).args(&arguments).run();
        assert_eq!(run.code, 2, "{arguments:?}: {}", run.stderr);
    }
    assert!(containers_of(&profile).trim().is_empty());
}

#[test]
fn a_closed_output_stops_the_command_and_exits_141() {
    if !docker::require_daemon() {
        return;
    }
    use std::io::BufRead;
    let profile = docker::unique_name("runpipe");
    let folder = project(&profile);
    let mut child = Envctl::in_folder(folder.path())
        .command()
        .args([
            "run",
            &profile,
            "--stop-timeout",
            "2",
            "--",
            "sh",
            "-c",
            "while :; do echo y; done",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "y");
    // The reader goes away, as `| head -1` does.
    drop(lines);
    let status = signal::wait_within(&mut child, Duration::from_secs(20)).expect("envctl ended");
    assert_eq!(status.code(), Some(141));
    assert!(
        containers_of(&profile).trim().is_empty(),
        "left: {}",
        containers_of(&profile)
    );
}

/// Issue 40: `run` names its container after the profile as resolved, however it was
/// named — `./x.toml`, an absolute path, `x.toml` — as `up` does (`envctl-x`); a path
/// failed as "`envctl-/abs/x.toml-run-…` is not a valid container name".
#[test]
fn run_names_the_container_after_the_resolved_profile_for_a_path_too() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runpath");
    let folder = project(&profile);
    let file = folder.path().join("envctl").join(format!("{profile}.toml"));
    let relative = format!("./envctl/{profile}.toml");
    for named in [relative.as_str(), file.to_str().unwrap()] {
        let run = Envctl::in_folder(folder.path())
            .args(["-v", "run", named, "--", "echo", "ran"])
            .run();
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, "ran\n"),
            "{named}: {}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains(&format!("running envctl-{profile}-run-")),
            "{named}: {}",
            run.stderr
        );
    }
    assert!(
        containers_of(&profile).trim().is_empty(),
        "left: {}",
        containers_of(&profile)
    );
}

/// Issue 40: `run` passes piped input on to the command, as `docker run -i` (it was
/// dropped: `echo 'echo hi' | envctl run P sh` printed nothing); a command that does not
/// read it ends without waiting for the pipe to close; `/dev/null` passes nothing.
#[test]
fn run_passes_piped_input_on_to_the_command() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runstdin");
    let folder = project(&profile);
    let piped = Envctl::in_folder(folder.path())
        .args(["run", &profile, "sh"])
        .stdin_from(
            std::fs::File::open(write_input(
                folder.path(),
                "echo hi from the pipe; exit 5\n",
            ))
            .unwrap(),
        )
        .run();
    assert_eq!(
        (piped.code, piped.stdout.as_str()),
        (5, "hi from the pipe\n"),
        "{}",
        piped.stderr
    );
    // A pipe whose writer stays open: a command that never reads it still ends at once.
    let mut writer = std::process::Command::new("sleep")
        .arg("60")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let not_reading = Envctl::in_folder(folder.path())
        .args(["run", &profile, "echo", "done"])
        .stdin_from(writer.stdout.take().unwrap())
        .run();
    let took = started.elapsed();
    writer.kill().unwrap();
    writer.wait().unwrap();
    assert_eq!(
        (not_reading.code, not_reading.stdout.as_str()),
        (0, "done\n"),
        "{}",
        not_reading.stderr
    );
    assert!(
        took < Duration::from_secs(45),
        "ended without the pipe's end: {took:?}"
    );
    // `/dev/null` (a Slurm batch step's stdin) is no input: `cat` ends at once, as before.
    let none = Envctl::in_folder(folder.path())
        .args(["run", &profile, "cat"])
        .stdin_from(Stdio::null())
        .run();
    assert_eq!(
        (none.code, none.stdout.as_str()),
        (0, ""),
        "{}",
        none.stderr
    );
    assert!(
        containers_of(&profile).trim().is_empty(),
        "left: {}",
        containers_of(&profile)
    );
}

fn write_input(folder: &std::path::Path, text: &str) -> std::path::PathBuf {
    let path = folder.join("input.sh");
    std::fs::write(&path, text).unwrap();
    path
}

/// Issue 40: `run --ulimit` overrides a profile's ulimit as `up --ulimit` does (the way
/// past a bundled `memlock = -1` a daemon may not raise), and a misspelt name is a usage
/// error that makes nothing.
#[test]
fn run_ulimit_replaces_the_profiles_limit() {
    if !docker::require_daemon() {
        return;
    }
    let profile = docker::unique_name("runulimit");
    let folder = project(&profile);
    let file = folder.path().join("envctl").join(format!("{profile}.toml"));
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("[ulimits]\nmemlock = -1\n");
    std::fs::write(&file, text).unwrap();
    let run = Envctl::in_folder(folder.path())
        .args([
            "run",
            "--ulimit",
            "memlock=65536",
            &profile,
            "sh",
            "-c",
            "ulimit -l",
        ])
        .run();
    // `ulimit -l` counts KiB: 65536 bytes.
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "64\n"),
        "{}",
        run.stderr
    );
    let bad = Envctl::in_folder(folder.path())
        .args(["run", "--ulimit", "memlok=65536", &profile, "true"])
        .run();
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("did you mean `memlock`"),
        "{}",
        bad.stderr
    );
    assert!(
        containers_of(&profile).trim().is_empty(),
        "left: {}",
        containers_of(&profile)
    );
}
