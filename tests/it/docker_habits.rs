//! Issue 31: what a docker user types first works, or is answered with a command that
//! does — and each such hint is run here to prove it works. `exec`'s docker grammar
//! (`-i/-t/-d/-e/-w/-u`, `exec C CMD ARGS…`), `shell` without a terminal, `run`, `stat`,
//! and `up -v SRC:DST`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};

/// envctl in `folder`, with `stdin` (a pipe, never a terminal).
fn envctl(folder: &Path, arguments: &[&str], stdin: &str) -> Run {
    Envctl::in_folder(folder)
        .args(arguments)
        .stdin(stdin)
        .timeout(Duration::from_secs(120))
        .run()
}

/// The last `…` command a hint line gives, as its words (hints here quote nothing).
fn hinted_command(stderr: &str) -> Vec<String> {
    let hint = stderr
        .lines()
        .find(|line| line.contains("hint:"))
        .unwrap_or_else(|| panic!("no hint in:\n{stderr}"));
    let command = hint
        .split('`')
        .rfind(|part| part.starts_with("envctl "))
        .unwrap_or_else(|| panic!("no command in the hint: {hint}"));
    command
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Runs the command a hint gives, with `stdin`.
fn run_hint(folder: &Path, stderr: &str, stdin: &str) -> Run {
    let words = hinted_command(stderr);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    envctl(folder, &words, stdin)
}

struct Started {
    folder: tempfile::TempDir,
    profile: String,
    container: ContainerGuard,
}

/// A busybox container started by `envctl up`, with a `hello` command.
fn started() -> Started {
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("habits");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join(format!("envctl/{profile}.toml")),
        format!(
            "image = \"{}\"\nmemory = \"64m\"\n\n[commands]\nhello = [\"echo\", \"hello\"]\n",
            test_image()
        ),
    )
    .unwrap();
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let up = envctl(folder.path(), &["up", &profile], "");
    assert_eq!(up.code, 0, "{up}");
    Started {
        folder,
        profile,
        container,
    }
}

#[test]
fn exec_takes_dockers_grammar() {
    if !require_daemon() {
        return;
    }
    let target = started();
    let folder = target.folder.path();
    let profile = target.profile.as_str();
    // `exec C ls -la /`: the flags are the command's.
    let listed = envctl(folder, &["exec", profile, "ls", "-la", "/"], "");
    assert_eq!(listed.code, 0, "{listed}");
    assert!(listed.stdout.contains("bin"), "{listed}");
    // `exec C sh -c '…'`, and `-v` says it ran the command itself.
    let shell = envctl(
        folder,
        &["-v", "exec", profile, "sh", "-c", "echo hi; exit 3"],
        "",
    );
    assert_eq!((shell.code, shell.stdout.as_str()), (3, "hi\n"), "{shell}");
    assert!(
        shell
            .stderr
            .contains("`sh` is not a command of the profile's [commands]"),
        "{shell}"
    );
    // `-e -w -u` before TARGET, as docker has them.
    let flags = envctl(
        folder,
        &[
            "exec",
            "-e",
            "A=1",
            "-w",
            "/tmp",
            "-u",
            "1000",
            profile,
            "sh",
            "-c",
            "echo $A $(pwd) $(id -u)",
        ],
        "",
    );
    assert_eq!(flags.stdout, "1 /tmp 1000\n", "{flags}");
    // `-i` with a pipe: the input reaches the command.
    let piped = envctl(folder, &["exec", "-i", profile, "cat"], "through\n");
    assert_eq!(piped.stdout, "through\n", "{piped}");
    // `-it` with stdin not a terminal: refused at once, as docker's "the input device is
    // not a TTY" (issue 40: it hung on `</dev/null`); the hint, without `-t`, runs.
    let tty = envctl(
        folder,
        &["exec", "-it", profile, "--", "sh", "-c", "exit 4"],
        "",
    );
    assert_eq!(tty.code, 2, "{tty}");
    assert!(
        tty.stderr.contains("the input device is not a TTY"),
        "{tty}"
    );
    // `-t` alone parses and runs, as docker's does.
    let tty = envctl(
        folder,
        &["exec", "-t", profile, "--", "sh", "-c", "exit 4"],
        "",
    );
    assert_eq!(tty.code, 4, "{tty}");
    // A named command still wins, with its words; `--` makes the word the command.
    let named = envctl(folder, &["-v", "exec", profile, "hello", "there"], "");
    assert_eq!(named.stdout, "hello there\n", "{named}");
    assert!(
        named.stderr.contains("`hello` is a command of the profile"),
        "{named}"
    );
    let plain = envctl(folder, &["exec", profile, "--", "hello"], "");
    assert_eq!(plain.code, 127, "the image has no `hello`: {plain}");
    // `-d`: returns at once, the command goes on.
    let detached = envctl(
        folder,
        &[
            "exec",
            "-d",
            profile,
            "sh",
            "-c",
            "sleep 1; echo done > /tmp/detached",
        ],
        "",
    );
    assert_eq!(detached.code, 0, "{detached}");
    let mut found = String::new();
    for _ in 0..50 {
        let output = crate::support::docker::docker_output([
            "exec",
            target.container.name(),
            "cat",
            "/tmp/detached",
        ]);
        found = String::from_utf8_lossy(&output.stdout).into_owned();
        if found.contains("done") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(found.trim(), "done", "the detached command ran");
    // A flag after TARGET: the hint moves it before TARGET, and that works.
    let late = envctl(folder, &["exec", profile, "-u", "1000", "id", "-u"], "");
    assert_eq!(late.code, 2, "{late}");
    let moved = run_hint(folder, &late.stderr, "");
    assert_eq!(
        (moved.code, moved.stdout.as_str()),
        (0, "1000\n"),
        "{moved}"
    );
    // A typo of a named command after TARGET runs (127, as docker), then names the command.
    let typo = envctl(folder, &["exec", profile, "helo"], "");
    assert_eq!(typo.code, 127, "{typo}");
    assert!(typo.stderr.contains("did you mean `hello`"), "{typo}");
    let fixed = run_hint(folder, &typo.stderr, "");
    assert_eq!(fixed.stdout, "hello\n", "{fixed}");
}

#[test]
fn shell_without_a_terminal_says_so_and_its_hint_works() {
    if !require_daemon() {
        return;
    }
    let target = started();
    let folder = target.folder.path();
    let shell = envctl(folder, &["shell", &target.profile], "echo in-the-shell\n");
    assert_eq!(shell.code, 2, "{shell}");
    assert!(
        shell.stderr.contains("the input device is not a TTY"),
        "{shell}"
    );
    let hinted = run_hint(folder, &shell.stderr, "echo in-the-shell\n");
    assert_eq!(
        (hinted.code, hinted.stdout.as_str()),
        (0, "in-the-shell\n"),
        "{hinted}"
    );
}

#[test]
fn up_with_dockers_v_gets_volume_and_the_hint_mounts() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("habits-v");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::create_dir_all(folder.path().join("data")).unwrap();
    std::fs::write(folder.path().join("data/marker"), "mounted\n").unwrap();
    std::fs::write(
        folder.path().join(format!("envctl/{profile}.toml")),
        format!("image = \"{}\"\nmemory = \"64m\"\n", test_image()),
    )
    .unwrap();
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let refused = envctl(folder.path(), &["up", "-v", "./data:/x", &profile], "");
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused
            .stderr
            .contains("did you mean `--volume ./data:/x`?"),
        "{refused}"
    );
    let up = run_hint(folder.path(), &refused.stderr, "");
    assert_eq!(up.code, 0, "{up}");
    assert_eq!(
        docker_stdout(["exec", container.name(), "cat", "/x/marker"]),
        "mounted"
    );
}

/// `run`, `stat` and an unknown flag: no daemon needed, and each hint runs.
#[test]
fn docker_words_and_unknown_flags_get_commands_that_work() {
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let stat = envctl(folder, &["stat", "--help"], "");
    assert_eq!(stat.code, 2, "{stat}");
    assert!(stat.stderr.contains("did you mean `stats`?"), "{stat}");
    let stats = run_hint(folder, &stat.stderr, "");
    assert_eq!(stats.code, 0, "{stats}");
    assert!(stats.stdout.contains("Usage: envctl stats"), "{stats}");

    // `run` is envctl's own (issue 29): docker's `run IMAGE CMD…` with a profile for the
    // image, the command after it.
    let run = envctl(folder, &["run", "--help"], "");
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .contains("Usage: envctl run [OPTIONS] <PROFILE> [CMD]..."),
        "{run}"
    );

    let flag = envctl(folder, &["profiles", "list", "--al"], "");
    assert_eq!(flag.code, 2, "{flag}");
    assert!(!flag.stderr.contains("use '--"), "no separator tip: {flag}");
    let unknown = envctl(folder, &["ps", "--al"], "");
    assert!(
        unknown.stderr.contains("did you mean `--all`?"),
        "{unknown}"
    );

    // Issue 40: a typo one level down is answered from that level (it re-ran `profiles`).
    let nested = envctl(folder, &["profiles", "lst"], "");
    assert_eq!(nested.code, 2, "{nested}");
    assert!(
        nested
            .stderr
            .contains("`envctl profiles` has no command `lst`"),
        "{nested}"
    );
    assert!(nested.stderr.contains("did you mean `list`?"), "{nested}");
    let listed = run_hint(folder, &nested.stderr, "");
    assert_eq!(listed.code, 0, "{listed}");
    assert_eq!(hinted_command(&nested.stderr), ["profiles", "list"]);
}

/// Issue 31: `exec -d` is a detached exec of the engine's, not a command wrapped in the
/// image's `sh`: it works in an image that has no `/bin/sh`, returns while the command
/// goes on, and a command that cannot start is the daemon's error.
#[test]
fn exec_detached_needs_no_shell_in_the_image() {
    if !require_daemon() {
        return;
    }
    let busybox = crate::support::docker::busybox_path().expect("the test image's busybox");
    let context = tempfile::tempdir().unwrap();
    std::fs::copy(&busybox, context.path().join("busybox")).unwrap();
    std::fs::write(
        context.path().join("Dockerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\n",
    )
    .unwrap();
    let image = format!("envctl-test-no-shell:{}", unique_name("d"));
    let _image = crate::support::docker::ImageGuard::new(image.as_str());
    docker_stdout([
        "build",
        "-q",
        "--label",
        "envctl.test=1",
        "-t",
        image.as_str(),
        context.path().to_str().unwrap(),
    ]);
    let container = ContainerGuard::unique("envctl-no-shell");
    docker_stdout([
        "run",
        "-d",
        "--name",
        container.name(),
        "--label",
        "envctl.test=1",
        image.as_str(),
        "/bin/busybox",
        "sleep",
        "600",
    ]);
    let no_shell =
        crate::support::docker::docker_output(["exec", container.name(), "sh", "-c", ":"]);
    assert!(!no_shell.status.success(), "the image has no sh");

    let folder = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let detached = envctl(
        folder.path(),
        &[
            "-v",
            "exec",
            "-d",
            container.name(),
            "/bin/busybox",
            "ash",
            "-c",
            "/bin/busybox sleep 3; /bin/busybox touch /detached",
        ],
        "",
    );
    let took = started.elapsed();
    assert_eq!(detached.code, 0, "{detached}");
    assert_eq!(detached.stdout, "", "{detached}");
    assert!(detached.stderr.contains("detached in"), "{detached}");
    assert!(
        took < Duration::from_secs(3),
        "returned while the command goes on ({took:?})"
    );
    let mut found = false;
    for _ in 0..100 {
        let output = crate::support::docker::docker_output([
            "exec",
            container.name(),
            "/bin/busybox",
            "ls",
            "/detached",
        ]);
        if output.status.success() {
            found = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(found, "the detached command ran to its end");

    let missing = envctl(
        folder.path(),
        &["exec", "-d", container.name(), "/bin/nope"],
        "",
    );
    assert_ne!(missing.code, 0, "{missing}");
    assert!(
        missing.stderr.contains("/bin/nope") && missing.stderr.contains("no such file"),
        "the daemon's words name the missing command: {missing}"
    );
}

/// Issue 40: `docker run`'s flags on `up` are answered with what envctl does instead —
/// a profile key (`--cpus` is no `--gpus`), or `up` without `-d`/`-it` — and each hint
/// runs.
#[test]
fn docker_run_flags_on_up_name_the_profile_key_or_the_command_without_them() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("habits-flags");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    let file = folder.path().join(format!("envctl/{profile}.toml"));
    std::fs::write(
        &file,
        format!("image = \"{}\"\nmemory = \"64m\"\n", test_image()),
    )
    .unwrap();
    let cpus = envctl(folder.path(), &["up", "--cpus", "2", &profile], "");
    assert_eq!(cpus.code, 2, "{cpus}");
    assert!(
        cpus.stderr.contains("the profile key `cpus`") && !cpus.stderr.contains("--gpus"),
        "{cpus}"
    );
    // The hinted command names the file to edit.
    let shown = run_hint(folder.path(), &cpus.stderr, "");
    assert_eq!(shown.code, 0, "{shown}");
    assert!(shown.stdout.contains(&format!("{profile}.toml")), "{shown}");
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let terminal = envctl(folder.path(), &["up", "-it", &profile], "");
    assert_eq!(terminal.code, 2, "{terminal}");
    assert!(
        terminal.stderr.contains(&format!(
            "`envctl up {profile}`, then `envctl shell {profile}`"
        )),
        "{terminal}"
    );
    for habit in ["-d", "--rm"] {
        let refused = envctl(folder.path(), &["up", habit, &profile], "");
        assert_eq!(refused.code, 2, "{habit}: {refused}");
        assert_eq!(
            hinted_command(&refused.stderr)[..2],
            ["up".to_string(), profile.clone()],
            "{habit}: {refused}"
        );
    }
    let refused = envctl(folder.path(), &["up", "-d", &profile], "");
    let up = run_hint(folder.path(), &refused.stderr, "");
    assert_eq!(up.code, 0, "{up}");
    assert_eq!(
        docker_stdout(["inspect", "-f", "{{.State.Running}}", container.name()]),
        "true"
    );
}

/// Issue 40: `--gpus` is what is judged, as the profile's `gpus` is: an index or count the
/// host does not have is the same failed check, a malformed spec names `--gpus`'s own
/// forms, and `--gpus none` overrides `gpus = "all"` on a host without GPUs.
#[test]
fn gpus_overrides_are_judged_as_the_profiles_gpus_are() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("habits-gpus");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join(format!("envctl/{profile}.toml")),
        format!(
            "image = \"{}\"\nmemory = \"64m\"\ngpus = \"all\"\n",
            test_image()
        ),
    )
    .unwrap();
    let on_eight = |arguments: &[&str]| {
        Envctl::in_folder(folder.path())
            .nvml("healthy-8x-h100.conf")
            .args(arguments)
            .timeout(Duration::from_secs(120))
            .run()
    };
    for (spec, said) in [
        ("device=9", "GPU 9 not found on this host"),
        ("abc", "GPU abc not found on this host"),
        ("9", "asks for 9 GPUs, this host has 8"),
    ] {
        for dry_run in [true, false] {
            let mut arguments = vec!["up", &profile, "--gpus", spec];
            if dry_run {
                arguments.push("--dry-run");
            }
            let run = on_eight(&arguments);
            assert_eq!(run.code, 1, "{arguments:?}: {run}");
            assert!(run.stderr.contains(said), "{arguments:?}: {run}");
            assert!(!run.stderr.contains("no room"), "{arguments:?}: {run}");
        }
    }
    let zero = on_eight(&["up", &profile, "--gpus", "0", "--dry-run"]);
    assert_eq!(zero.code, 2, "{zero}");
    assert!(
        zero.stderr.contains("`--gpus none`") && !zero.stderr.contains("-v ./data"),
        "{zero}"
    );
    // Without GPUs (no NVML here): the file's `all` fails, `--gpus none` is what is judged.
    let without = |arguments: &[&str]| envctl(folder.path(), arguments, "");
    let all = without(&["up", &profile, "--dry-run"]);
    assert_eq!(all.code, 1, "{all}");
    let none = without(&["up", &profile, "--gpus", "none", "--dry-run"]);
    assert_eq!(none.code, 0, "{none}");
    assert!(!none.stdout.contains("--gpus"), "{none}");
}

/// Issue 40: a container made with `-p/-e/--volume` starts again with a plain `up`, as
/// `docker start` would, with what it was made with (it was "an earlier version" of an
/// unchanged profile); other overrides than it was made with are a change.
#[test]
fn a_container_made_with_overrides_is_started_again_as_it_was_made() {
    if !require_daemon() {
        return;
    }
    let started = started();
    let folder = started.folder.path();
    let profile = started.profile.as_str();
    let name = started.container.name().to_string();
    let down = envctl(folder, &["down", profile, "--rm"], "");
    assert_eq!(down.code, 0, "{down}");
    std::fs::create_dir_all(folder.join("data")).unwrap();
    let port = crate::support::registry::free_loopback_port().to_string();
    let published = format!("127.0.0.1:{port}:8888");
    let made = envctl(
        folder,
        &[
            "up",
            "-p",
            &published,
            "--volume",
            "./data:/data:ro",
            "-e",
            "FOO=bar",
            profile,
        ],
        "",
    );
    assert_eq!(made.code, 0, "{made}");
    let down = envctl(folder, &["down", profile], "");
    assert_eq!(down.code, 0, "{down}");
    let again = envctl(folder, &["up", profile], "");
    assert_eq!(again.code, 0, "{again}");
    assert!(again.stderr.contains("started the existing"), "{again}");
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
    // Asking for other overrides than it was made with is a change, named in words.
    let other = envctl(folder, &["up", "-e", "FOO=baz", profile], "");
    assert_eq!(other.code, 1, "{other}");
    assert!(other.stderr.contains("FOO=bar → FOO=baz"), "{other}");
}

/// Issue 40: drift is judged against the profile file the container records
/// (`envctl.profile-file`), not whatever the name resolves to in the folder asking: from
/// another folder, where the name is another profile, `ps` says `current`; once the
/// container's own file changes it says `changed`, and its hint applies that file from
/// its own project (the relative mounts are that folder's), which works.
#[test]
fn drift_is_judged_against_the_file_the_container_was_made_from() {
    if !require_daemon() {
        return;
    }
    let started = started();
    let project = started.folder.path();
    let profile = started.profile.as_str();
    let name = started.container.name().to_string();
    let file = project.join(format!("envctl/{profile}.toml"));
    // Another folder, where the profile's name is another profile.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(elsewhere.path().join("envctl")).unwrap();
    std::fs::write(
        elsewhere.path().join(format!("envctl/{profile}.toml")),
        format!("image = \"{}\"\nmemory = \"128m\"\n", test_image()),
    )
    .unwrap();
    let row = |run: &Run| {
        let listing: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        listing["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {run}"))
    };
    let listed = envctl(elsewhere.path(), &["--json", "ps"], "");
    assert_eq!(listed.code, 0, "{listed}");
    let found = row(&listed);
    assert_eq!(found["drift"], "current", "{found}");
    assert_eq!(found["profile_file"], file.to_str().unwrap(), "{found}");
    let quiet = envctl(elsewhere.path(), &["ps"], "");
    assert!(!quiet.stderr.contains(&name), "{quiet}");
    // `up` there names the file the container was made from before offering `--recreate`.
    let refused = envctl(elsewhere.path(), &["up", profile], "");
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains(&format!("made from: {}", file.display()))
            && refused.stderr.contains(&format!(
                "`cd {} && envctl up {profile}` judges it against the file it was made from",
                project.display()
            ))
            && refused.stderr.contains("memory: 64 MiB → 128 MiB"),
        "{refused}"
    );

    // Its own file changes: `changed`, from any folder, with the command that applies it.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("memory = \"64m\"", "memory = \"96m\"");
    std::fs::write(&file, text).unwrap();
    let listed = envctl(elsewhere.path(), &["--json", "ps"], "");
    assert_eq!(row(&listed)["drift"], "changed", "{listed}");
    let warned = envctl(elsewhere.path(), &["ps"], "");
    let command = format!("cd {} && envctl up {profile} --recreate", project.display());
    assert!(
        warned.stderr.contains(&format!("`{command}` applies it")),
        "{warned}"
    );
    // The hint, run as written (`cd` into the project, then envctl there).
    let applied = envctl(project, &["up", profile, "--recreate"], "");
    assert_eq!(applied.code, 0, "{applied}");
    assert_eq!(
        docker_stdout(["inspect", "-f", "{{.HostConfig.Memory}}", &name]),
        (96u64 << 20).to_string()
    );
    let listed = envctl(elsewhere.path(), &["--json", "ps"], "");
    assert_eq!(row(&listed)["drift"], "current", "{listed}");
}

/// Issue 40: a `--hosts` name that is no team host, docker context or URL is a typo, said
/// at once (exit 2) with the nearest name — `@tema` is `@team`, `gpu9` the team's `gpu1`,
/// `gpu-tow` the context `gpu-two` — never listed as a host that cannot be reached (exit 0).
#[test]
fn a_misspelt_host_is_an_error_with_the_nearest_name() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/hosts.toml"),
        "[hosts]\ngpu1 = \"tcp://127.0.0.1:9\"\n",
    )
    .unwrap();
    let config = folder.path().join("docker-config");
    // The docker CLI's store: a folder named by the SHA-256 of the context's name.
    let meta = config
        .join("contexts/meta/a87cedb2c6eccbab704bbf9f6049c886974406a72ee3f705dc8f3cce3a8ea578");
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        r#"{"Name":"gpu-two","Endpoints":{"docker":{"Host":"tcp://127.0.0.1:9"}}}"#,
    )
    .unwrap();
    let hosts = |list: &str, command: &str| {
        let mut arguments = vec![command, "--hosts", list];
        if command == "stats" {
            arguments.push("--once");
        }
        Envctl::in_folder(folder.path())
            .env("DOCKER_CONFIG", &config)
            .args(&arguments)
            .timeout(Duration::from_secs(60))
            .run()
    };
    for command in ["ps", "doctor", "stats"] {
        for (typo, near) in [("@tema", "@team"), ("gpu9", "gpu1"), ("gpu-tow", "gpu-two")] {
            let run = hosts(&format!("gpu1,{typo}"), command);
            assert_eq!(run.code, 2, "{command} --hosts {typo}: {run}");
            assert!(
                run.stderr
                    .contains(&format!("`{typo}` is no host of the team file"))
                    && run.stderr.contains(&format!("did you mean `{near}`?")),
                "{command} --hosts {typo}: {run}"
            );
        }
    }
    // The names themselves are hosts: listed, each unreachable one a row saying why.
    let run = hosts("gpu1,gpu-two", "ps");
    assert_eq!(run.code, 0, "{run}");
}

/// Issue 40: a name that names nothing exits 1 whichever command it is given to, as
/// `docker exec nosuch` does: a profile (`up`, `profiles show`, `export`, a missing file)
/// as a container (`exec`, `down`); each says the nearest name where there is one.
#[test]
fn a_name_that_names_nothing_exits_1_everywhere() {
    if !require_daemon() {
        return;
    }
    let started = started();
    let folder = started.folder.path();
    let profile = started.profile.as_str();
    // One letter off the started profile's name.
    let typo = format!("{profile}x");
    for arguments in [
        vec!["up", typo.as_str()],
        vec!["up", "./no-such-file.toml"],
        vec!["profiles", "show", typo.as_str()],
        vec!["export", typo.as_str(), "--to", "compose"],
        vec!["exec", typo.as_str(), "echo", "hi"],
        vec!["down", typo.as_str()],
    ] {
        let run = envctl(folder, &arguments, "");
        assert_eq!(run.code, 1, "{arguments:?}: {run}");
        assert!(run.stderr.starts_with("error: "), "{arguments:?}: {run}");
    }
    // Malformed input stays a usage error.
    let run = envctl(folder, &["up", profile, "--ulimit", "memlok=1"], "");
    assert_eq!(run.code, 2, "{run}");
}
