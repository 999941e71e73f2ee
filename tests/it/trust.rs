//! The trust rule for repository profiles (issue 39): a profile of `./envctl/`, of
//! `ENVCTL_PROFILE_PATH` or given as a path that asks for root on the host (host mounts,
//! engine sockets, root capabilities, disk and memory devices, the host's network or IPC)
//! is refused by `up`, `up --dry-run` and `run` with each setting named at its file and
//! line, until `--trust` says yes; the hint is that command, and it is run here. The user's
//! own and the bundled profiles pass as before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, container_exists, docker_stdout, require_daemon, test_image, unique_name,
};

/// A daemon that is never there: the refusals come before any connection.
const NO_DAEMON: &str = "unix:///nonexistent/envctl-trust-test.sock";

/// How long one envctl run may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The command of the refusal's hint (`… run `envctl up P --trust``), as words after `envctl`.
fn hinted_command(run: &Run) -> Vec<String> {
    let hint = run
        .stderr
        .lines()
        .find(|line| line.trim_start().starts_with("hint:"))
        .unwrap_or_else(|| panic!("no hint:\n{}", run.stderr));
    let command = hint
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in the hint: {hint}"));
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    assert_eq!(words[0], "envctl", "{hint}");
    assert!(words.iter().any(|word| word == "--trust"), "{hint}");
    words[1..].to_vec()
}

fn write_profile(directory: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(directory.join("envctl")).unwrap();
    std::fs::write(directory.join("envctl").join(format!("{name}.toml")), text).unwrap();
}

/// The issue's reproduction: `/`, the Docker socket, `SYS_ADMIN`, host network and host IPC
/// from `./envctl/`. Refused (exit 2) by `up` and `--dry-run` with a line per setting and
/// nothing made; the hint, run, starts it and says what it trusted.
#[test]
fn a_repository_profile_asking_for_root_is_refused_until_trusted() {
    if !require_daemon() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let profile = unique_name("trust-root");
    let _guard = ContainerGuard::new(format!("envctl-{profile}"));
    write_profile(
        directory.path(),
        &profile,
        &format!(
            "image = \"{}\"\nmounts = [\n  \"/:/host:ro\",\n  \"/var/run/docker.sock:/var/run/docker.sock\",\n]\ncap_add = [\"SYS_ADMIN\"]\nnetwork = \"host\"\nports = []\nipc = \"host\"\n",
            test_image()
        ),
    );
    let file = format!("envctl/{profile}.toml");
    for arguments in [
        vec!["up", profile.as_str()],
        vec!["up", profile.as_str(), "--dry-run"],
    ] {
        let run = Envctl::in_folder(directory.path())
            .args(&arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(run.code, 2, "{arguments:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        for (line, key, value) in [
            (3, "mounts", "/:/host:ro"),
            (4, "mounts", "/var/run/docker.sock:/var/run/docker.sock"),
            (6, "cap_add", "SYS_ADMIN"),
            (7, "network", "host"),
            (9, "ipc", "host"),
        ] {
            let said = format!("{file}:{line}: `{key}` = \"{value}\" gives ");
            // Each setting on a line of its own (outside text never starts a line, so the
            // lines are envctl's own structure, not a message's line feeds).
            assert!(
                run.stderr
                    .lines()
                    .any(|shown| shown.starts_with(&format!("  {said}"))),
                "{said}\n{}",
                run.stderr
            );
        }
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(!container_exists(&format!("envctl-{profile}")));
    }
    // The hint of the plain `up`, run as it is.
    let refused = Envctl::in_folder(directory.path())
        .args(["up", &profile])
        .timeout(LIMIT)
        .run();
    let hinted = hinted_command(&refused);
    assert_eq!(hinted, ["up", profile.as_str(), "--trust"]);
    let words: Vec<&str> = hinted.iter().map(String::as_str).collect();
    let trusted = Envctl::in_folder(directory.path())
        .args(&words)
        .timeout(LIMIT)
        .run();
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(
        trusted.stderr.contains(&format!(
            "trusted (--trust): {file}:6: `cap_add` = \"SYS_ADMIN\""
        )),
        "{}",
        trusted.stderr
    );
    let capabilities = docker_stdout([
        "inspect",
        "--format",
        "{{json .HostConfig.CapAdd}} {{.HostConfig.NetworkMode}}",
        &format!("envctl-{profile}"),
    ]);
    assert!(capabilities.contains("SYS_ADMIN"), "{capabilities}");
    assert!(capabilities.contains("host"), "{capabilities}");
    // `--json` names what was trusted, with file and line.
    let json = Envctl::in_folder(directory.path())
        .args(["--json", "up", &profile, "--dry-run", "--trust"])
        .timeout(LIMIT)
        .run();
    assert_eq!(json.code, 0, "{}", json.stderr);
    let trusted = &json.json()["trusted"];
    assert_eq!(trusted.as_array().map(Vec::len), Some(5), "{trusted}");
    assert_eq!(trusted[2]["key"], "cap_add");
    assert_eq!(trusted[2]["line"], 6);
    assert_eq!(trusted[2]["file"], file.as_str());
}

/// Root-equivalent settings the issue does not name: a link in the repository to `/`, the
/// `ALL` and `SYS_MODULE` capabilities (written as `cap_sys_module`), a disk and
/// `/dev/mem`, Podman's socket folder, the host's programs, one file of `/etc`, `~/.ssh`.
/// Each is refused at its line; the harmless neighbours (`IPC_LOCK`, `/dev/infiniband`,
/// the project folder) are not named.
#[test]
fn other_root_equivalent_settings_are_refused_at_their_line() {
    let directory = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/", directory.path().join("rootfs")).unwrap();
    for (text, line, key, value) in [
        (
            "mounts = [\"./:/w\", \"./rootfs:/r\"]\n",
            2,
            "mounts",
            "./rootfs:/r",
        ),
        ("cap_add = [\"IPC_LOCK\", \"ALL\"]\n", 2, "cap_add", "ALL"),
        (
            "cap_add = [\n\"ipc_lock\",\n\"cap_sys_module\",\n]\n",
            4,
            "cap_add",
            "SYS_MODULE",
        ),
        (
            "devices = [\"/dev/infiniband\", \"/dev/sda\"]\n",
            2,
            "devices",
            "/dev/sda",
        ),
        ("devices = [\"/dev/mem\"]\n", 2, "devices", "/dev/mem"),
        (
            "mounts = [\"/run/podman:/run/podman\"]\n",
            2,
            "mounts",
            "/run/podman:/run/podman",
        ),
        (
            "mounts = [\"/usr/bin:/usr/bin\"]\n",
            2,
            "mounts",
            "/usr/bin:/usr/bin",
        ),
        (
            "mounts = [\"/etc/shadow:/s:ro\"]\n",
            2,
            "mounts",
            "/etc/shadow:/s:ro",
        ),
        (
            "mounts = [\"~/.ssh:/root/.ssh\"]\n",
            2,
            "mounts",
            "~/.ssh:/root/.ssh",
        ),
    ] {
        let profile = unique_name("trust-variant");
        write_profile(
            directory.path(),
            &profile,
            &format!("image = \"busybox:1.36\"\n{text}"),
        );
        let run = Envctl::in_folder(directory.path())
            .daemon(NO_DAEMON)
            .args(["up", &profile, "--dry-run"])
            .timeout(LIMIT)
            .run();
        assert_eq!(run.code, 2, "{text}: {}", run.stderr);
        let said = format!("envctl/{profile}.toml:{line}: `{key}` = \"{value}\" gives ");
        assert!(run.stderr.contains(&said), "{said}\n{}", run.stderr);
        assert_eq!(
            run.stderr.matches(" gives ").count(),
            1,
            "only the root-equivalent entry: {}",
            run.stderr
        );
        let trusted = Envctl::in_folder(directory.path())
            .daemon(NO_DAEMON)
            .args(["up", &profile, "--dry-run", "--trust"])
            .timeout(LIMIT)
            .run();
        // Trusted, the gate passes (a source missing on this machine is another error).
        assert!(
            trusted.stderr.contains(&format!(
                "trusted (--trust): {}",
                &said[..said.len() - " gives ".len()]
            )) && !trusted.stderr.contains("only with --trust"),
            "{text}: {}",
            trusted.stderr
        );
    }
    let harmless = unique_name("trust-harmless");
    write_profile(
        directory.path(),
        &harmless,
        "image = \"busybox:1.36\"\nmounts = [\"./:/w\", \"data:/data\"]\ncap_add = [\"IPC_LOCK\", \"SYS_NICE\"]\ndevices = [\"/dev/infiniband\"]\nipc = \"shareable\"\n",
    );
    let run = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", &harmless, "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("--trust"), "{}", run.stderr);
}

/// The user's own profiles and the bundled ones pass as before; `ENVCTL_PROFILE_PATH` (a
/// team's shared folder) and a path on the command line count as a repository; a user
/// profile that takes the setting from a project profile through `extends` is judged by
/// the file that wrote it.
#[test]
fn the_users_own_profiles_pass_and_shared_folders_and_paths_do_not() {
    let directory = tempfile::tempdir().unwrap();
    let root = "image = \"busybox:1.36\"\ncap_add = [\"SYS_ADMIN\"]\n";
    let user_folder = directory.path().join("xdg/envctl/profiles");
    std::fs::create_dir_all(&user_folder).unwrap();
    std::fs::write(user_folder.join("mine.toml"), root).unwrap();
    let mine = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", "mine", "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(mine.code, 0, "{}", mine.stderr);
    assert!(!mine.stderr.contains("trust"), "{}", mine.stderr);
    let bundled = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", "pytorch-2.8", "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(bundled.code, 0, "{}", bundled.stderr);

    let shared = tempfile::tempdir().unwrap();
    std::fs::write(shared.path().join("team.toml"), root).unwrap();
    let team = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .env("ENVCTL_PROFILE_PATH", shared.path())
        .args(["up", "team", "--dry-run"])
        .run();
    assert_eq!(team.code, 2, "{}", team.stderr);
    assert!(
        team.stderr.contains("team.toml:2: `cap_add`"),
        "{}",
        team.stderr
    );

    let path = shared.path().join("team.toml").display().to_string();
    let by_path = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", &path, "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(by_path.code, 2, "{}", by_path.stderr);

    // The user's `wrapper` extends the project's `base`, which adds the capability.
    write_profile(directory.path(), "base", root);
    std::fs::write(
        user_folder.join("wrapper.toml"),
        "extends = \"base\"\nmemory = \"1g\"\n",
    )
    .unwrap();
    let wrapped = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", "wrapper", "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(wrapped.code, 2, "{}", wrapped.stderr);
    assert!(
        wrapped.stderr.contains("envctl/base.toml:2: `cap_add`"),
        "{}",
        wrapped.stderr
    );
}

/// `envctl run` passes through the same gate; its hint keeps the command after `--`, and
/// runs.
#[test]
fn run_is_refused_until_trusted_and_its_hint_runs() {
    if !require_daemon() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let profile = unique_name("trust-run");
    write_profile(
        directory.path(),
        &profile,
        &format!("image = \"{}\"\nipc = \"host\"\n", test_image()),
    );
    let refused = Envctl::in_folder(directory.path())
        .args(["run", &profile, "--", "echo", "ran"])
        .timeout(LIMIT)
        .run();
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("envctl/{profile}.toml:2: `ipc` = \"host\"")),
        "{}",
        refused.stderr
    );
    assert!(!refused.stdout.contains("ran"), "{}", refused.stdout);
    let hinted = hinted_command(&refused);
    assert_eq!(
        hinted,
        ["run", profile.as_str(), "--trust", "--", "echo", "ran"]
    );
    let words: Vec<&str> = hinted.iter().map(String::as_str).collect();
    let ran = Envctl::in_folder(directory.path())
        .args(&words)
        .timeout(LIMIT)
        .run();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("ran"), "{}", ran.stdout);
}

/// Removes a volume (`docker volume rm -f`) when dropped.
struct VolumeGuard(String);

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = crate::support::docker::docker_output(["volume", "rm", "-f", self.0.as_str()]);
    }
}

fn volume_exists(name: &str) -> bool {
    crate::support::docker::docker_output(["volume", "inspect", name])
        .status
        .success()
}

/// The issue's reproduction and two variants: `down --volumes` removes the volume `up`
/// made with the container, and keeps a team's volume that was there before (unlabelled),
/// one with forged envctl labels (this user's uid, the profile, a made-up run id), and one
/// envctl made with another container; each kept one is named, and the hint removes it.
#[test]
fn down_volumes_removes_only_the_volumes_envctl_made_with_the_container() {
    if !require_daemon() {
        return;
    }
    use std::os::unix::fs::MetadataExt as _;
    let directory = tempfile::tempdir().unwrap();
    let uid = std::fs::metadata(directory.path())
        .unwrap()
        .uid()
        .to_string();
    let profile = unique_name("trust-vol");
    let other = unique_name("trust-vol-other");
    let fresh = VolumeGuard(unique_name("envctl-trust-fresh"));
    let team = VolumeGuard(unique_name("envctl-trust-team"));
    let forged = VolumeGuard(unique_name("envctl-trust-forged"));
    let others = VolumeGuard(unique_name("envctl-trust-others"));
    // Declared after the volumes, so dropped before them: a volume in use by a container
    // cannot be removed (a failed assertion left `others` behind).
    let _guards = (
        ContainerGuard::new(format!("envctl-{profile}")),
        ContainerGuard::new(format!("envctl-{other}")),
    );
    docker_stdout([
        "volume",
        "create",
        "--label",
        "envctl.test=1",
        team.0.as_str(),
    ]);
    docker_stdout([
        "volume",
        "create",
        "--label",
        "envctl.test=1",
        "--label",
        &format!("envctl.profile={profile}"),
        "--label",
        &format!("envctl.uid={uid}"),
        "--label",
        "envctl.volume-run=1-0000000000000000",
        forged.0.as_str(),
    ]);
    // The team's data, which must outlive every `down`.
    docker_stdout([
        "run",
        "--rm",
        "--label",
        "envctl.test=1",
        "-v",
        &format!("{}:/v", team.0),
        &test_image(),
        "sh",
        "-c",
        "echo results > /v/data",
    ]);
    // `other`'s `up` makes `others`; `profile` then meets it as an existing volume.
    write_profile(
        directory.path(),
        &other,
        &format!(
            "image = \"{}\"\nmounts = [\"{}:/o\"]\n",
            test_image(),
            others.0
        ),
    );
    let made = Envctl::in_folder(directory.path())
        .args(["up", &other])
        .timeout(LIMIT)
        .run();
    assert_eq!(made.code, 0, "{}", made.stderr);
    write_profile(
        directory.path(),
        &profile,
        &format!(
            "image = \"{}\"\nmounts = [\"{}:/fresh\", \"{}:/team\", \"{}:/forged\", \"{}:/others\"]\n",
            test_image(),
            fresh.0,
            team.0,
            forged.0,
            others.0
        ),
    );
    let up = Envctl::in_folder(directory.path())
        .args(["up", &profile])
        .timeout(LIMIT)
        .run();
    assert_eq!(up.code, 0, "{}", up.stderr);
    let down = Envctl::in_folder(directory.path())
        .args(["--json", "down", &profile, "--volumes"])
        .timeout(LIMIT)
        .run();
    assert_eq!(down.code, 0, "{}", down.stderr);
    let report = down.json();
    assert_eq!(
        report["volumes_removed"],
        serde_json::json!([fresh.0]),
        "{report}"
    );
    // By name (the daemon lists mounts in no stable order).
    let mut kept = vec![team.0.clone(), forged.0.clone(), others.0.clone()];
    kept.sort();
    assert_eq!(report["volumes_kept"], serde_json::json!(kept), "{report}");
    assert!(!volume_exists(&fresh.0));
    for kept in [&team.0, &forged.0, &others.0] {
        assert!(volume_exists(kept), "{kept}");
        assert!(
            down.stderr.contains(&format!(
                "kept volume {kept}: not made by envctl with this container"
            )),
            "{}",
            down.stderr
        );
    }
    assert_eq!(
        docker_stdout([
            "run",
            "--rm",
            "--label",
            "envctl.test=1",
            "-v",
            &format!("{}:/v", team.0),
            &test_image(),
            "cat",
            "/v/data",
        ]),
        "results"
    );
    // The hint, run as it is, removes the one it names.
    let line = down
        .stderr
        .lines()
        .find(|line| line.contains(&format!("kept volume {}", forged.0)))
        .unwrap();
    let command = line.split('`').nth(1).unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..3], ["docker", "volume", "rm"], "{line}");
    docker_stdout(&words[1..]);
    assert!(!volume_exists(&forged.0));
    // `other`'s own `down --volumes` still removes the volume made with it.
    let down_other = Envctl::in_folder(directory.path())
        .args(["--json", "down", &other, "--volumes"])
        .timeout(LIMIT)
        .run();
    assert_eq!(down_other.code, 0, "{}", down_other.stderr);
    assert_eq!(
        down_other.json()["volumes_removed"],
        serde_json::json!([others.0])
    );
}

/// The refusal's second hint, `envctl trust FILE`, run as it is: `up --dry-run` then passes
/// without `--trust` (saying what it trusted) until the file changes, and a changed file is
/// refused again; `envctl trust --json` lists the settings; a profile with nothing to trust
/// writes no record.
#[test]
fn envctl_trust_records_the_file_until_it_changes() {
    let directory = tempfile::tempdir().unwrap();
    let profile = unique_name("trust-record");
    let text = "image = \"busybox:1.36\"\ncap_add = [\"SYS_ADMIN\"]\n";
    write_profile(directory.path(), &profile, text);
    let quiet = unique_name("trust-quiet");
    write_profile(directory.path(), &quiet, "image = \"busybox:1.36\"\n");
    let nothing = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["trust", &quiet])
        .timeout(LIMIT)
        .run();
    assert_eq!(nothing.code, 0, "{}", nothing.stderr);
    assert!(
        nothing.stderr.contains("nothing to trust"),
        "{}",
        nothing.stderr
    );
    let record = directory.path().join("xdg/envctl/trusted.json");
    assert!(!record.exists());

    let refused = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", &profile, "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let hint = refused
        .stderr
        .lines()
        .find(|line| line.trim_start().starts_with("hint:"))
        .unwrap();
    let command = hint.split('`').nth(3).unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..2], ["envctl", "trust"], "{hint}");
    let trusted = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(&words[1..])
        .timeout(LIMIT)
        .run();
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let file = format!("envctl/{profile}.toml");
    assert!(
        trusted
            .stderr
            .contains(&format!("trusted: {file}:2: `cap_add` = \"SYS_ADMIN\"")),
        "{}",
        trusted.stderr
    );
    let recorded = std::fs::read_to_string(&record).unwrap();
    let real = std::fs::canonicalize(directory.path().join(&file)).unwrap();
    assert!(recorded.contains(&real.display().to_string()), "{recorded}");

    let passes = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", &profile, "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(passes.code, 0, "{}", passes.stderr);
    assert!(
        passes
            .stderr
            .contains(&format!("trusted (envctl trust): {file}:2:")),
        "{}",
        passes.stderr
    );
    let json = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["--json", "trust", &profile])
        .timeout(LIMIT)
        .run();
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert_eq!(json.json()["trusted"][0]["key"], "cap_add");

    // One changed byte, and the record no longer speaks for the file.
    write_profile(
        directory.path(),
        &profile,
        &format!("{text}cap_add = [\"SYS_ADMIN\", \"SYS_MODULE\"]\n").replacen(
            "cap_add = [\"SYS_ADMIN\"]\n",
            "",
            1,
        ),
    );
    let changed = Envctl::in_folder(directory.path())
        .daemon(NO_DAEMON)
        .args(["up", &profile, "--dry-run"])
        .timeout(LIMIT)
        .run();
    assert_eq!(changed.code, 2, "{}", changed.stderr);
    assert!(
        changed.stderr.contains("`cap_add` = \"SYS_MODULE\""),
        "{}",
        changed.stderr
    );
}

/// Issue 39: `stats --serve` on an address off loopback (`0.0.0.0`, and `[::]`, which the
/// issue does not name) says on stderr, before it serves, that the unauthenticated server
/// is on the network and what it shows; on loopback it says nothing of the kind.
#[test]
fn serving_off_loopback_warns_that_the_dashboard_is_on_the_network() {
    use std::io::BufRead as _;
    if !require_daemon() {
        return;
    }
    for (address, warned) in [
        ("0.0.0.0:0", true),
        ("[::]:0", true),
        ("127.0.0.1:0", false),
    ] {
        let mut child = Envctl::shared()
            .command()
            .args(["stats", "--interval", "0.5", "--serve", address])
            .env("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        // Up to the line that says where it serves.
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                break;
            }
            said.push_str(&line);
            if line.starts_with("serving Prometheus metrics") {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        if address.starts_with("[::]") && said.contains("cannot") {
            // A host without IPv6 cannot bind `[::]`: nothing served, nothing to say.
            continue;
        }
        assert!(
            said.contains("serving Prometheus metrics"),
            "{address}: {said}"
        );
        assert_eq!(
            said.contains("without authentication on the network"),
            warned,
            "{address}: {said}"
        );
        if warned {
            assert!(said.starts_with("warning: the dashboard"), "{said}");
            assert!(said.contains("names, images, users, GPUs"), "{said}");
        }
    }
}
