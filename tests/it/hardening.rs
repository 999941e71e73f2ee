//! Hardening III (issue 30): what a hostile repository, a planted file in a shared folder,
//! a holder of a lock or a typo next to a secret can make envctl do. One test per class;
//! each fails on the code before its fix.
//!
//! The daemon and registry tests skip without Docker or a registry binary (`SKIPPED …`),
//! unless `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{ImageGuard, require_daemon, unique_name};
use crate::support::registry::{Registry, push_test_image, require_registry};

/// A project folder with `./envctl/NAME.toml` for each `(name, text)`, and empty config and
/// home folders.
fn project(profiles: &[(&str, &str)]) -> tempfile::TempDir {
    let directory = tempfile::Builder::new()
        .prefix("envctl-hardening-")
        .tempdir()
        .unwrap();
    for folder in ["envctl", "xdg", "home"] {
        std::fs::create_dir_all(directory.path().join(folder)).unwrap();
    }
    for (name, text) in profiles {
        std::fs::write(
            directory.path().join("envctl").join(format!("{name}.toml")),
            text,
        )
        .unwrap();
    }
    directory
}

/// envctl in `directory` with `arguments`, `environment` added; a run that does not end
/// within 20 s fails the test (a hang is one of the defects).
fn envctl(directory: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
    let envctl = Envctl::in_folder(directory)
        .args(arguments)
        .timeout(Duration::from_secs(20))
        .envs(environment.iter().copied());
    let started = Instant::now();
    let run = envctl.run();
    assert!(
        started.elapsed() < Duration::from_secs(19),
        "envctl {arguments:?} hung:\n{run}"
    );
    run
}

fn assert_shows_none(run: &Run, values: &[&str], what: &str) {
    for value in values {
        assert!(
            !run.stdout.contains(value) && !run.stderr.contains(value),
            "{what} shows `{value}`:\n{run}"
        );
    }
}

/// What a test plants at a path, and how it is said.
type Plant<'a> = (&'a str, &'a dyn Fn(&Path));

fn fifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
}

/// Class 1: an `envctl.lock` the repository planted (a link to a credentials file outside
/// the project, to `/proc/self/environ`, to `/dev/zero`, a FIFO) is never read through,
/// never hangs a command, is never echoed, and is an error for the commands that use it.
#[test]
fn a_planted_lock_file_is_never_read_through_echoed_or_waited_on() {
    let outside = tempfile::tempdir().unwrap();
    let credentials = outside.path().join("git-credentials");
    std::fs::write(
        &credentials,
        "https://user:ghp_plantedsecret@github.com\nversion = \"hf_secondsecret\"\n",
    )
    .unwrap();
    let environment = [("HF_TOKEN", "hf_environsecret")];
    let secrets = ["ghp_plantedsecret", "hf_secondsecret", "hf_environsecret"];
    let planted: [Plant; 4] = [
        ("a link to a credentials file", &|path: &Path| {
            std::os::unix::fs::symlink(&credentials, path).unwrap()
        }),
        ("a link to /proc/self/environ", &|path: &Path| {
            std::os::unix::fs::symlink("/proc/self/environ", path).unwrap()
        }),
        ("a link to /dev/zero", &|path: &Path| {
            std::os::unix::fs::symlink("/dev/zero", path).unwrap()
        }),
        ("a FIFO", &|path: &Path| fifo(path)),
    ];
    for (what, plant) in planted {
        let directory = project(&[("p", "image = \"busybox:1.36\"\n")]);
        plant(&directory.path().join("envctl.lock"));
        for arguments in [
            &["up", "p", "--dry-run"][..],
            &["export", "p", "--to", "k8s"][..],
            &["export", "p", "--to", "compose"][..],
            &["outdated"][..],
        ] {
            let run = envctl(directory.path(), arguments, &environment);
            let context = format!("{what}: envctl {arguments:?}");
            assert_shows_none(&run, &secrets, &context);
            assert_eq!(
                run.code, 2,
                "{context}: a planted lock file is an error\n{run}"
            );
            assert!(run.stderr.contains("envctl.lock"), "{context}\n{run}");
        }
        // Nothing was written where the link leads.
        assert!(
            std::fs::read_to_string(&credentials)
                .unwrap()
                .starts_with("https://user:")
        );
    }
}

/// Class 1: a lock file that is only wrong (not planted) is named by place, and the text
/// at that place is not quoted: the parser's words name the keys, not the values.
#[test]
fn a_lock_file_parse_error_names_the_place_not_the_text() {
    let directory = project(&[("p", "image = \"busybox:1.36\"\n")]);
    std::fs::write(
        directory.path().join("envctl.lock"),
        "version = 1\n[[image]]\nprofile = \"p\"\nimage = \"busybox:1.36\"\ndigest = \"sha256:x\"\ndate = \"d\"\nplatform = \"p\"\nsecret = \"hf_inlocksecret\"\n",
    )
    .unwrap();
    let run = envctl(directory.path(), &["up", "p", "--dry-run"], &[]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("line 8"), "{run}");
    assert_shows_none(&run, &["hf_inlocksecret"], "a lock file's parse error");
}

/// Class 1: a diagnostic about the user's own profile quotes the line it points at, but
/// never a secret's value on it: a typo'd table, a duplicate key, a NUL.
#[test]
fn profile_diagnostics_never_quote_a_secret_value() {
    for (problem, text) in [
        (
            "a typo'd table",
            "image = \"busybox:1.36\"\nenvv = { HF_TOKEN = \"hf_typosecret\" }\n",
        ),
        (
            "a duplicate key",
            "image = \"busybox:1.36\"\n[env]\nHF_TOKEN = \"hf_typosecret\"\nHF_TOKEN = \"hf_typosecret\"\n",
        ),
        (
            "a NUL in the value",
            "image = \"busybox:1.36\"\nenv = { HF_TOKEN = \"hf_typosecret\\u0000\" }\n",
        ),
        (
            "a password in a URL",
            "image = \"busybox:1.36\"\nenvv = { DATABASE_URL = \"postgres://u:hf_typosecret@h/d\" }\n",
        ),
    ] {
        let directory = project(&[("p", text)]);
        for arguments in [
            &["profiles", "check", "p"][..],
            &["up", "p", "--dry-run"][..],
        ] {
            let run = envctl(directory.path(), arguments, &[]);
            let context = format!("{problem}: envctl {arguments:?}");
            assert_eq!(run.code, 2, "{context}\n{run}");
            assert!(
                run.stderr.contains("-->"),
                "{context}: the place is named\n{run}"
            );
            assert_shows_none(&run, &["hf_typosecret"], &context);
        }
    }
}

/// Class 7: the credentials the secret rule missed are masked in `up --dry-run`, `profiles
/// show` and every export, by name (`MYSQL_PWD`, `GITHUB_PAT`, `SENTRY_DSN`, `SSH_PRIVKEY`,
/// `AWS_SECRETACCESSKEY`) and by value (a URL with a password).
#[test]
fn the_secret_rule_covers_common_credentials() {
    let values = [
        "mysqlsecret",
        "dburlsecret",
        "patsecret",
        "dsnsecret",
        "privkeysecret",
        "awssecret",
        "redissecret",
    ];
    let directory = project(&[(
        "p",
        "image = \"busybox:1.36\"\n[env]\nMYSQL_PWD = \"mysqlsecret\"\nDATABASE_URL = \"postgres://u:dburlsecret@db/app\"\nGITHUB_PAT = \"patsecret\"\nSENTRY_DSN = \"https://dsnsecret@o1.ingest.sentry.io/2\"\nSSH_PRIVKEY = \"privkeysecret\"\nAWS_SECRETACCESSKEY = \"awssecret\"\nCACHE = \"redis://:redissecret@cache:6379/0\"\nPLAIN_URL = \"https://example.com/visible\"\n",
    )]);
    for arguments in [
        &["up", "p", "--dry-run"][..],
        &["--json", "up", "p", "--dry-run"][..],
        &["profiles", "show", "p"][..],
        &["export", "p", "--to", "compose"][..],
        &["export", "p", "--to", "k8s"][..],
        &["export", "p", "--to", "devcontainer"][..],
        &["export", "p", "--to", "docker-run"][..],
    ] {
        let run = envctl(directory.path(), arguments, &[]);
        assert_eq!(run.code, 0, "envctl {arguments:?}\n{run}");
        assert_shows_none(&run, &values, &format!("envctl {arguments:?}"));
        assert!(
            run.stdout.contains("https://example.com/visible"),
            "a plain URL stays visible: envctl {arguments:?}\n{run}"
        );
    }
}

/// Class 4: completion offers only names that pass the profile-name rule, so a cloned
/// repository's `envctl/t;touch PWNED;.toml` is never typed into the user's shell.
#[test]
fn completion_offers_no_name_a_shell_would_act_on() {
    let directory = project(&[
        ("team", "image = \"busybox:1.36\"\n"),
        ("t;touch PWNED;", "image = \"busybox:1.36\"\n"),
        ("t$(touch PWNED)", "image = \"busybox:1.36\"\n"),
        ("t\u{1b}]0;title\u{7}", "image = \"busybox:1.36\"\n"),
    ]);
    let binary = assert_cmd::cargo::cargo_bin("envctl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/envctl.bash");
    for command in ["up", "exec"] {
        let program = format!(
            "source '{}'; COMP_WORDS=(envctl {command} t); COMP_CWORD=2; COMP_TYPE=9; \
             _clap_complete_envctl envctl t; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let mut bash = Command::new("bash");
        crate::support::cli::hermetic(&mut bash, directory.path());
        let output = bash
            .args(["-c", &program])
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    binary.parent().unwrap().display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("DOCKER_HOST", "unix:///nonexistent/envctl-completion.sock")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let offered = String::from_utf8(output.stdout).unwrap();
        assert_eq!(
            offered.trim(),
            "team",
            "envctl {command} t<TAB>: {offered:?}"
        );
    }
    assert!(!directory.path().join("PWNED").exists());
}

/// Class 2: `envctl lock` waiting on a lock another process holds on the project folder
/// says so after a second, and the first SIGINT ends it with 130 and no `envctl.lock`.
#[test]
fn envctl_lock_says_it_waits_and_stops_at_the_first_signal() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("hardening-lock");
    let reference = push_test_image(&registry, &repo, "1.0");
    let _pulled = ImageGuard::new(reference.as_str());
    let directory = project(&[("p", &format!("image = \"{reference}\"\n"))]);
    // Someone holds the folder's lock (as a second `envctl lock` would, or anyone).
    let folder = std::fs::File::open(directory.path()).unwrap();
    rustix::fs::flock(&folder, rustix::fs::FlockOperation::LockExclusive).unwrap();

    let mut child = Envctl::in_folder(directory.path())
        .command()
        .arg("lock")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    let started = Instant::now();
    let mut heard = Vec::new();
    while started.elapsed() < Duration::from_secs(60) {
        match said.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let waiting = line.contains("waiting for the lock");
                heard.push(line);
                if waiting {
                    break;
                }
            }
            Err(_) if child.try_wait().unwrap().is_some() => break,
            Err(_) => {}
        }
    }
    assert!(
        heard
            .iter()
            .any(|line| line.contains("waiting for the lock")),
        "the wait is said on stderr: {heard:?}"
    );
    assert!(crate::support::signal::send(&child, "INT"));
    let status = crate::support::signal::wait_within(&mut child, Duration::from_secs(2))
        .unwrap_or_else(|| panic!("envctl lock outlived SIGINT by 2 s: {heard:?}"));
    assert_eq!(status.code(), Some(130), "{heard:?}");
    assert!(
        !directory.path().join("envctl.lock").exists(),
        "nothing is written after the signal"
    );
}

/// `up` of a two-GPU profile on eight stand-in GPUs, with `lock` as the placement lock,
/// started in the background with stderr piped.
fn gpu_up(directory: &Path, name: &str, lock: &Path, extra: &[&str]) -> std::process::Child {
    Envctl::in_folder(directory)
        .command()
        .args(["up", name])
        .args(extra)
        .env("ENVCTL_NVML_LIBRARY", crate::support::nvml::stub_library())
        .env(
            "ENVCTL_NVML_STUB_FIXTURE",
            crate::support::nvml::fixture("healthy-8x-h100.conf"),
        )
        .env("ENVCTL_GPU_LOCK", lock)
        .env_remove("ENVCTL_PROFILE_PATH")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A project with one two-GPU profile of a name no other test uses, and that name.
fn gpu_project() -> (tempfile::TempDir, String) {
    let name = unique_name("gpulock");
    let directory = project(&[(
        name.as_str(),
        &format!(
            "image = \"{}\"\ngpus = 2\n",
            crate::support::docker::test_image()
        ),
    )]);
    (directory, name)
}

/// Class 2: `up` waiting for the GPU placement lock another process holds ends at the
/// first SIGTERM with 143 within two seconds, not when its 30 s wait runs out.
#[test]
fn up_waiting_for_the_placement_lock_stops_at_the_first_signal() {
    if !require_daemon() {
        return;
    }
    let (directory, name) = gpu_project();
    let _guard = crate::support::docker::ContainerGuard::new(format!("envctl-{name}"));
    let lock = directory.path().join("gpus.lock");
    std::fs::write(&lock, "").unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut child = gpu_up(directory.path(), &name, &lock, &["--force"]);
    let heard = crate::support::wait::Collected::start(child.stderr.take().unwrap());
    // It says so once it waits on the lock.
    assert!(
        heard.contains_within(
            "waiting for the GPU placement lock",
            Duration::from_secs(30)
        ),
        "up never said it waits for the lock:\n{}",
        heard.text()
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "up ended before the signal"
    );
    assert!(crate::support::signal::send(&child, "TERM"));
    let status = crate::support::signal::wait_within(&mut child, Duration::from_secs(2));
    let stderr = heard.finish();
    let status = status.unwrap_or_else(|| panic!("up outlived SIGTERM by 2 s:\n{stderr}"));
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(
        !crate::support::docker::container_exists(&format!("envctl-{name}")),
        "nothing is left: {stderr}"
    );
}

/// Class 3: a placement lock planted where envctl's belongs (a FIFO, a folder, a link) is
/// named as planted, with the admin's fix, and never with "point ENVCTL_GPU_LOCK
/// elsewhere", which would drop the exclusion between users.
#[test]
fn a_planted_placement_lock_is_named_as_planted() {
    if !require_daemon() {
        return;
    }
    let (directory, name) = gpu_project();
    let _guard = crate::support::docker::ContainerGuard::new(format!("envctl-{name}"));
    let outside = tempfile::tempdir().unwrap();
    let planted: [Plant; 3] = [
        ("a FIFO (named pipe)", &|path: &Path| fifo(path)),
        ("a folder", &|path: &Path| {
            std::fs::create_dir(path).unwrap()
        }),
        ("a symbolic link", &|path: &Path| {
            std::os::unix::fs::symlink(outside.path().join("made"), path).unwrap()
        }),
    ];
    for (what, plant) in planted {
        let lock = directory
            .path()
            .join(format!("planted-{}.lock", what.len()));
        plant(&lock);
        let child = gpu_up(directory.path(), &name, &lock, &["--force"]);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "is {what}, not the empty regular file envctl makes"
            )),
            "{what}: {stderr}"
        );
        assert!(stderr.contains("sudo rm -rf"), "{what}: {stderr}");
        assert!(!stderr.contains("ENVCTL_GPU_LOCK"), "{what}: {stderr}");
    }
    assert!(!outside.path().join("made").exists());
    assert!(!crate::support::docker::container_exists(&format!(
        "envctl-{name}"
    )));
}

/// Class 6: the stats sampler keeps a small pool of requests to the daemon, so fifty
/// running containers are sampled under `ulimit -n 40`, where one connection per
/// container at once ran out of file descriptors (and blamed the daemon).
#[test]
fn many_containers_are_sampled_under_a_small_file_limit() {
    use crate::support::docker::{ContainerGuard, TEST_LABEL, docker_output, test_image};
    if !require_daemon() {
        return;
    }
    let image = test_image();
    let mut guards = Vec::new();
    let names: Vec<String> = (0..50).map(|_| unique_name("fanout")).collect();
    let started: Vec<std::thread::JoinHandle<bool>> = names
        .iter()
        .map(|name| {
            let (name, image) = (name.clone(), image.clone());
            std::thread::spawn(move || {
                docker_output([
                    "run", "-d", "--name", &name, "--label", TEST_LABEL, &image, "sleep", "600",
                ])
                .status
                .success()
            })
        })
        .collect();
    for name in &names {
        guards.push(ContainerGuard::new(name.clone()));
    }
    for handle in started {
        assert!(handle.join().unwrap(), "a container did not start");
    }
    let directory = project(&[]);
    let binary = assert_cmd::cargo::cargo_bin("envctl");
    let mut shell = Command::new("sh");
    crate::support::cli::hermetic(&mut shell, directory.path());
    let run = Envctl::from_command(shell)
        .args([
            "-c",
            &format!(
                "ulimit -n 40 && exec '{}' stats --all --once --json",
                binary.display()
            ),
        ])
        .run();
    assert_eq!(run.code, 0, "{run}");
    assert!(
        !run.stdout.contains("open files") && !run.stderr.contains("open files"),
        "{run}"
    );
    let sampled = names
        .iter()
        .filter(|name| run.stdout.contains(&format!("\"{name}\"")))
        .count();
    assert_eq!(sampled, names.len(), "{run}");
}

/// Class 6: every answer read has a cap; `/info` had none (an 800 MB answer took 2 GB).
/// An `/info` past its limit is a bad answer, said as such, not read whole.
#[test]
fn an_info_answer_past_its_limit_is_refused_not_read_whole() {
    use crate::support::fake_daemon::{FakeDaemon, Reply};
    let warning = "w".repeat(1024);
    let body = format!(
        "{{\"OSType\":\"linux\",\"Warnings\":[{}]}}",
        vec![format!("\"{warning}\""); 6 * 1024].join(",")
    );
    let daemon = FakeDaemon::start(move |request| {
        (request.route() == "/info").then(|| Reply::json(200, body.clone()))
    });
    let directory = project(&[]);
    let run = envctl(
        directory.path(),
        &["doctor", "--json"],
        &[
            ("DOCKER_HOST", daemon.host().as_str()),
            ("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"),
        ],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stdout.contains("an answer over 4 MiB"), "{run}");
}

/// Class 2: `stats` writing into a pipe nobody reads any more still ends at the first
/// signal, 130 or 143 within two seconds, for both its views.
#[test]
fn stats_into_a_full_pipe_ends_at_the_first_signal() {
    if !require_daemon() {
        return;
    }
    for (json, signal, code) in [(true, "TERM", 143), (false, "INT", 130)] {
        let directory = project(&[]);
        let mut command = Envctl::in_folder(directory.path()).command();
        if json {
            command.arg("--json");
        }
        let mut child = command
            .args(["stats", "--all", "--interval", "100ms"])
            .env("ENVCTL_NVML_LIBRARY", crate::support::nvml::stub_library())
            .env(
                "ENVCTL_NVML_STUB_FIXTURE",
                crate::support::nvml::fixture("healthy-8x-h100.conf"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Nobody reads stdout: 64 KiB of snapshots fill the pipe within seconds.
        let pid = child.id();
        crate::support::wait::wait_for(
            &format!("stats to block writing its full stdout pipe (json: {json})"),
            Duration::from_secs(60),
            || crate::support::wait::blocked_writing_a_pipe(pid),
        );
        assert!(child.try_wait().unwrap().is_none(), "stats ended by itself");
        assert!(crate::support::signal::send(&child, signal));
        let status = crate::support::signal::wait_within(&mut child, Duration::from_secs(2))
            .unwrap_or_else(|| panic!("stats (json: {json}) outlived SIG{signal} by 2 s"));
        assert_eq!(status.code(), Some(code), "json: {json}");
    }
}

/// Every class at once: a cloned folder holding every planted file above (a lock file
/// linked to credentials, a FIFO profile, a profile linked to `/proc/self/environ`, a
/// profile named to run shell code, a secret beside a typo) and every command run in it:
/// nothing secret printed, nothing hung, nothing written outside the folder.
#[test]
fn a_hostile_repository_makes_no_command_print_hang_or_write_outside() {
    let outside = tempfile::tempdir().unwrap();
    let credentials = outside.path().join("git-credentials");
    let credentials_text = "https://user:ghp_hostilesecret@github.com\n";
    std::fs::write(&credentials, credentials_text).unwrap();
    let directory = project(&[
        ("p", "image = \"busybox:1.36\"\n"),
        (
            "typo",
            "image = \"busybox:1.36\"\nenvv = { HF_TOKEN = \"hf_hostiletypo\" }\n",
        ),
        ("t;touch PWNED;", "image = \"busybox:1.36\"\n"),
    ]);
    let folder = directory.path();
    std::os::unix::fs::symlink(&credentials, folder.join("envctl.lock")).unwrap();
    fifo(&folder.join("envctl/fifo.toml"));
    std::os::unix::fs::symlink("/proc/self/environ", folder.join("envctl/environ.toml")).unwrap();
    std::os::unix::fs::symlink(&credentials, folder.join("envctl/creds.toml")).unwrap();
    let environment = [
        ("HF_TOKEN", "hf_hostileenv"),
        ("DOCKER_HOST", "unix:///nonexistent/envctl.sock"),
    ];
    let secrets = ["ghp_hostilesecret", "hf_hostiletypo", "hf_hostileenv"];
    for arguments in [
        &["profiles", "list"][..],
        &["profiles", "check"][..],
        &["profiles", "show", "creds"][..],
        &["profiles", "show", "environ"][..],
        &["profiles", "show", "fifo"][..],
        &["doctor"][..],
        &["up", "p", "--dry-run"][..],
        &["up", "typo", "--dry-run"][..],
        &["export", "p", "--to", "compose"][..],
        &["export", "p", "--to", "k8s"][..],
        &["outdated"][..],
        &["lock"][..],
        &["ps"][..],
        &["stats", "--once"][..],
    ] {
        let run = envctl(folder, arguments, &environment);
        assert_shows_none(&run, &secrets, &format!("envctl {arguments:?}"));
    }
    assert!(!folder.join("PWNED").exists());
    assert_eq!(
        std::fs::read_to_string(&credentials).unwrap(),
        credentials_text
    );
    let mut left: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["git-credentials"], "nothing written outside");
}

/// Issue 30, class 2: `down --timeout 30` of a container that ignores SIGTERM ends at the
/// first SIGINT with 130 (it used to wait the whole 30 s and exit 0), and says the daemon
/// goes on with the stop.
#[test]
fn down_with_a_long_timeout_ends_at_the_first_signal() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let guard = crate::support::docker::ContainerGuard::unique("down-signal");
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|uids| uids.split_whitespace().next().map(str::to_string))
        })
        .unwrap();
    // PID 1 without a handler ignores SIGTERM: the stop waits its whole timeout.
    crate::support::docker::docker_stdout([
        "run",
        "-d",
        "--label",
        "envctl.test=1",
        "--label",
        "envctl.profile=down-signal",
        "--label",
        &format!("envctl.uid={uid}"),
        "--name",
        guard.name(),
        &crate::support::docker::test_image(),
        "sh",
        "-c",
        "while :; do sleep 1; done",
    ]);
    let folder = tempfile::tempdir().unwrap();
    let mut command = Envctl::in_folder(folder.path()).command();
    command
        .args(["down", guard.name(), "--timeout", "30"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let heard = crate::support::wait::Collected::start(child.stderr.take().unwrap());
    // Once it says it is stopping, the stop request is with the daemon.
    assert!(
        heard.contains_within("stopping", std::time::Duration::from_secs(30)),
        "down never said it is stopping:\n{}",
        heard.text()
    );
    let signalled = std::time::Instant::now();
    assert!(crate::support::signal::send(&child, "INT"));
    let status = crate::support::signal::wait_within(&mut child, std::time::Duration::from_secs(5))
        .unwrap_or_else(|| panic!("down outlived SIGINT by 5 s"));
    let stderr = heard.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        signalled.elapsed() < std::time::Duration::from_secs(3),
        "{stderr}"
    );
    assert!(
        stderr.contains("interrupted: the daemon goes on with the stop"),
        "{stderr}"
    );
}

/// Issue 30, class 2: a FIFO planted where placement keeps the GPU requests of other
/// containers is refused at once, never opened and waited on while the host-wide lock is
/// held.
#[test]
fn a_fifo_planted_as_the_gpu_request_cache_is_refused_not_waited_on() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/two.toml"),
        format!(
            "image = \"{}\"\ngpus = 2\n",
            crate::support::docker::test_image()
        ),
    )
    .unwrap();
    let cache = folder.path().join("cache/envctl");
    std::fs::create_dir_all(&cache).unwrap();
    let fifo = cache.join("gpu-requests.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let run = Envctl::in_folder(folder.path())
        .env("XDG_CACHE_HOME", folder.path().join("cache"))
        .nvml("healthy-8x-h100.conf")
        .env("ENVCTL_GPU_LOCK", folder.path().join("gpus.lock"))
        .args(["up", "two", "--dry-run", "--force", "--json"])
        .timeout(std::time::Duration::from_secs(60))
        .run();
    let stderr = &run.stderr;
    assert_eq!(run.code, 0, "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains("ignoring the GPU request cache"),
        "{stderr}"
    );
}

/// Issue 39: `cap_add = ["ALL"]` that the daemon cannot grant (a daemon without the
/// capabilities itself, as on this CI machine) is said as such — never a ulimit hint.
/// Where the daemon can grant it, the container starts and is removed again.
#[test]
fn capabilities_the_daemon_cannot_give_are_not_called_a_ulimit() {
    if !require_daemon() {
        return;
    }
    let name = unique_name("caps");
    let directory = project(&[(
        name.as_str(),
        &format!(
            "image = \"{}\"\nmemory = \"64m\"\ncap_add = [\"ALL\"]\n",
            crate::support::docker::test_image()
        ),
    )]);
    let container = crate::support::docker::ContainerGuard::new(format!("envctl-{name}"));
    let up = envctl(directory.path(), &["up", "--trust", &name], &[]);
    if up.code == 0 {
        drop(container);
        return;
    }
    assert!(
        up.stderr
            .contains("may not give the container these capabilities"),
        "{up}"
    );
    assert!(!up.stderr.contains("ulimit"), "{up}");
}
