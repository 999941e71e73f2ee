//! `envctl lock`, `up --locked` and `envctl outdated` against a real registry on loopback:
//! pins, a tag moved to new bytes, newer tags of the same family.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::docker::{
    ContainerGuard, ImageGuard, docker_output, docker_stdout, require_daemon, test_image,
    unique_name,
};
use crate::support::registry::{Registry, push_test_image, require_registry};
use serde_json::Value;

use crate::support::cli::{Envctl, Run};

/// How long one envctl run may take before the test calls it hung.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn write_profile(directory: &Path, name: &str, image: &str) {
    std::fs::create_dir_all(directory.join("envctl")).unwrap();
    std::fs::write(
        directory.join("envctl").join(format!("{name}.toml")),
        format!("image = \"{image}\"\nmemory = \"64m\"\n"),
    )
    .unwrap();
}

/// Pushes an image that differs from the test image (one extra file) under `repo:tag`.
fn push_variant(registry: &Registry, repo: &str, tag: &str, content: &str) -> String {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("variant.txt"), content).unwrap();
    std::fs::write(
        folder.path().join("Dockerfile"),
        format!("FROM {}\nCOPY variant.txt /variant.txt\n", test_image()),
    )
    .unwrap();
    let reference = registry.reference(repo, tag);
    let built = docker_output([
        "build",
        "-q",
        "-t",
        reference.as_str(),
        folder.path().to_str().unwrap(),
    ]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let _local = ImageGuard::new(reference.as_str());
    let pushed = docker_output(["push", reference.as_str()]);
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    reference
}

fn lock_json(directory: &Path) -> Value {
    let text = std::fs::read_to_string(directory.join("envctl.lock")).unwrap();
    serde_json::to_value(toml::from_str::<toml::Value>(&text).unwrap()).unwrap()
}

#[test]
fn lock_pins_the_digest_and_up_locked_uses_it() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("lock");
    let reference = push_test_image(&registry, &repo, "1.0");
    let _pulled = ImageGuard::new(reference.as_str());
    let directory = tempfile::tempdir().unwrap();
    let profile = unique_name("locked");
    write_profile(directory.path(), &profile, &reference);
    let _container = ContainerGuard::new(format!("envctl-{profile}"));

    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["up", &profile, "--locked"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 1, "no lock yet: {stderr}");
    assert!(stderr.contains("no envctl.lock"), "{stderr}");

    let Run {
        code,
        stdout,
        stderr,
    } = Envctl::in_folder(directory.path())
        .args(["lock", "--json"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let digest = report["locked"][0]["digest"].as_str().unwrap().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    let lock = lock_json(directory.path());
    assert_eq!(lock["version"], 1);
    assert_eq!(lock["image"][0]["profile"], profile.as_str());
    assert_eq!(lock["image"][0]["image"], reference.as_str());
    assert_eq!(lock["image"][0]["digest"], digest.as_str());
    assert_eq!(lock["image"][0]["platform"], "linux/amd64");

    // Issue 31: locked again with nothing changed, it says so and leaves the file alone.
    let written = std::fs::read(directory.path().join("envctl.lock")).unwrap();
    let modified = std::fs::metadata(directory.path().join("envctl.lock"))
        .unwrap()
        .modified()
        .unwrap();
    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["lock"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("envctl.lock is unchanged") && !stderr.contains("wrote"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(directory.path().join("envctl.lock")).unwrap(),
        written
    );
    assert_eq!(
        std::fs::metadata(directory.path().join("envctl.lock"))
            .unwrap()
            .modified()
            .unwrap(),
        modified,
        "not even rewritten"
    );

    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["up", &profile, "--locked"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    let image = docker_stdout([
        "inspect",
        "--format",
        "{{.Config.Image}}",
        &format!("envctl-{profile}"),
    ]);
    assert_eq!(
        image.trim(),
        format!("{reference}@{digest}"),
        "the container runs the locked digest"
    );

    // The profile moves on: the lock is stale and --locked refuses.
    write_profile(
        directory.path(),
        &profile,
        &registry.reference(&repo, "2.0"),
    );
    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["up", &profile, "--locked"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 1);
    assert!(stderr.contains("now uses"), "{stderr}");
}

#[test]
fn lock_on_a_full_disk_says_so_and_keeps_the_previous_file() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let Some(disk) = crate::support::disk::FullDisk::new() else {
        return;
    };
    let registry = Registry::start();
    let repo = unique_name("lock-full");
    let reference = push_test_image(&registry, &repo, "1.0");
    let _pulled = ImageGuard::new(reference.as_str());
    let profile = unique_name("full");
    write_profile(disk.path(), &profile, &reference);
    let previous = "version = 1\n";
    std::fs::write(disk.path().join("envctl.lock"), previous).unwrap();
    disk.fill();

    let Run { code, stderr, .. } = Envctl::in_folder(disk.path())
        .args(["lock"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 1, "the request cannot be met: {stderr}");
    assert!(stderr.contains("cannot write `envctl.lock`"), "{stderr}");
    assert!(stderr.contains("caused by:"), "{stderr}");
    assert!(stderr.contains("disk has room"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(disk.path().join("envctl.lock")).unwrap(),
        previous,
        "the previous lock file is intact"
    );
}

#[test]
fn outdated_sees_a_moved_tag_and_newer_tags_of_the_family() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("outdated");
    let first = push_variant(&registry, &repo, "1.0.0-cuda12.8-runtime", "first");
    push_variant(&registry, &repo, "1.1.0-cuda12.8-runtime", "newer");
    push_variant(&registry, &repo, "2.0.0-cuda13.0-runtime", "other family");
    let directory = tempfile::tempdir().unwrap();
    let profile = unique_name("outdated");
    write_profile(directory.path(), &profile, &first);
    let pulled = ImageGuard::new(first.as_str());

    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["lock"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    // The tag moves below (a rebuild, then `lock PROFILE`): the bytes `lock` pulled
    // are then nameless, removed by id.
    let first_bytes = ImageGuard::by_id_of(&first);
    let Run {
        code,
        stdout,
        stderr,
    } = Envctl::in_folder(directory.path())
        .args(["outdated", "--json"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let entry = &report["profiles"][0];
    assert_eq!(
        entry["newer_tags"],
        serde_json::json!(["1.1.0-cuda12.8-runtime"])
    );
    assert_eq!(entry["digest_moved"], false);
    assert_eq!(entry["current_digest"], entry["locked_digest"]);

    // New bytes behind the same tag.
    push_variant(&registry, &repo, "1.0.0-cuda12.8-runtime", "rebuilt");
    let Run { stdout, .. } = Envctl::in_folder(directory.path())
        .args(["outdated", "--json"])
        .timeout(LIMIT)
        .run();
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["profiles"][0]["digest_moved"], true, "{report}");
    let Run { stdout: human, .. } = Envctl::in_folder(directory.path())
        .args(["outdated"])
        .timeout(LIMIT)
        .run();
    // Issue 40: the hint names the command that moves this pin, and only this one (plain
    // `lock` re-pins every profile of the folder; `--update` is for registries that
    // cannot be asked). The hint is run.
    let hinted = format!("envctl lock {profile}");
    assert!(
        human.contains(&format!("`{hinted}` pins the new one")),
        "{human}"
    );
    let old_digest = report["profiles"][0]["locked_digest"].clone();
    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["lock", &profile])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    let lock = lock_json(directory.path());
    assert_ne!(lock["image"][0]["digest"], old_digest);
    assert_eq!(
        lock["image"][0]["digest"],
        report["profiles"][0]["current_digest"]
    );

    // Nothing of the repository stays behind, not even the untagged first pull.
    drop(pulled);
    drop(first_bytes);
    let repository = format!("{}/{repo}", registry.host_port());
    let left = docker_stdout(["images", "-a", "-q", repository.as_str()]);
    assert!(left.is_empty(), "images of {repository} left: {left}");
}

#[test]
fn outdated_names_an_unreachable_registry_and_keeps_going() {
    let directory = tempfile::tempdir().unwrap();
    let port = crate::support::registry::free_loopback_port();
    write_profile(
        directory.path(),
        "gone",
        &format!("127.0.0.1:{port}/nothing/here:1.0"),
    );
    let Run {
        code,
        stdout,
        stderr,
    } = Envctl::in_folder(directory.path())
        .args(["outdated", "--json"])
        .timeout(LIMIT)
        .run();
    assert_eq!(
        code, 1,
        "a registry that cannot be asked is a failed check: {stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let error = report["profiles"][0]["error"].as_str().unwrap();
    assert!(error.contains("cannot be reached"), "{error}");
    assert!(
        stderr.contains("gone: cannot ask the registry") && stderr.contains("cannot be reached"),
        "said on stderr too: {stderr}"
    );
    let Run {
        code,
        stdout: table,
        stderr,
    } = Envctl::in_folder(directory.path())
        .args(["outdated"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 1, "{stderr}");
    assert!(table.contains("error"), "{table}");
    assert!(stderr.contains("cannot be reached"), "{stderr}");
    // Issue 31: what makes the exit code 1 is an error, not a warning.
    assert!(
        stderr.contains("error: gone: cannot ask the registry") && !stderr.contains("warning:"),
        "{stderr}"
    );
}

/// Issue 31: an image built on this machine (no registry digest) has no registry to ask:
/// `outdated` says so and does not fail for it.
#[test]
fn outdated_of_a_local_only_image_says_so_and_passes() {
    if !require_daemon() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    write_profile(directory.path(), "local", &test_image());
    let Run {
        code,
        stdout: table,
        stderr,
    } = Envctl::in_folder(directory.path())
        .args(["outdated"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0, "{stderr}");
    assert!(table.contains("local image, no registry"), "{table}");
    assert!(
        stderr.contains("is only on this machine") && !stderr.contains("cannot be reached"),
        "{stderr}"
    );
    let Run { code, stdout, .. } = Envctl::in_folder(directory.path())
        .args(["outdated", "--json"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["profiles"][0]["local_only"], true);
}

#[test]
fn a_corrupt_lock_file_is_an_error_not_a_guess() {
    let directory = tempfile::tempdir().unwrap();
    write_profile(directory.path(), "p", "busybox:1.36");
    std::fs::write(
        directory.path().join("envctl.lock"),
        "version = 1\n[[image]]\nprofile = 3\n",
    )
    .unwrap();
    // Invalid input (2), with a hint that does not send the user in a circle.
    for arguments in [
        &["up", "p", "--dry-run"][..],
        &["lock", "p"],
        &["outdated", "p"],
    ] {
        let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
            .args(arguments)
            .timeout(LIMIT)
            .run();
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("`envctl.lock` is not a valid envctl lock file"),
            "{arguments:?}: {stderr}"
        );
        assert!(
            stderr.contains("delete it and run `envctl lock`"),
            "{arguments:?}: {stderr}"
        );
    }
}

#[test]
fn parallel_locks_keep_every_entry() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("parallel");
    let reference = push_test_image(&registry, &repo, "1.0");
    let _pulled = ImageGuard::new(reference.as_str());
    let directory = tempfile::tempdir().unwrap();
    let profiles: Vec<String> = (1..=6).map(|n| format!("p{n}")).collect();
    for profile in &profiles {
        write_profile(directory.path(), profile, &reference);
    }
    // Six `envctl lock P` at once: each reads, changes and writes envctl.lock. Without a
    // lock around that, runs overwrote each other's entries (1–3 of 6 kept, all exit 0).
    let children: Vec<_> = profiles
        .iter()
        .map(|profile| {
            Envctl::shared()
                .command()
                .current_dir(directory.path())
                .env("XDG_CONFIG_HOME", directory.path().join("xdg"))
                .env("HOME", directory.path().join("home"))
                .env_remove("ENVCTL_PROFILE_PATH")
                .args(["lock", profile])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let lock = lock_json(directory.path());
    let mut locked: Vec<&str> = lock["image"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["profile"].as_str().unwrap())
        .collect();
    locked.sort_unstable();
    assert_eq!(
        locked,
        profiles.iter().map(String::as_str).collect::<Vec<_>>()
    );
}

/// Issue 15, item 6: `lock A B C` where A cannot be read and B has no registry digest says
/// both, still locks C, and exits 1 (before: it stopped at A and never reported the rest).
#[test]
fn lock_goes_on_past_a_failing_profile_and_exits_1() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("lock-goes-on");
    let reference = push_test_image(&registry, &repo, "1.0");
    let _pulled = ImageGuard::new(reference.as_str());
    let directory = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(directory.path().join("envctl")).unwrap();
    std::fs::write(
        directory.path().join("envctl/broken.toml"),
        "image = \"busybox:1\"\nmemroy = \"1g\"\n",
    )
    .unwrap();
    write_profile(directory.path(), "local-only", &test_image());
    write_profile(directory.path(), "pushed", &reference);

    let Run { code, stderr, .. } = Envctl::in_folder(directory.path())
        .args(["lock", "broken", "local-only", "pushed"])
        .timeout(LIMIT)
        .run();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("unknown key `memroy`"), "{stderr}");
    assert!(stderr.contains("has no registry digest"), "{stderr}");
    assert!(
        stderr.contains("pulling the image instead"),
        "the registry that cannot answer is said before the engine is asked: {stderr}"
    );
    assert!(stderr.contains("2 profiles not locked"), "{stderr}");
    let lock = lock_json(directory.path());
    let entries = lock["image"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{lock}");
    assert_eq!(entries[0]["profile"], "pushed");
}

/// Whether the engine has an image under `reference`.
fn present(reference: &str) -> bool {
    docker_output(["image", "inspect", reference])
        .status
        .success()
}

/// Issue 31: `lock` asks the registry's API where each tag points and pulls nothing, for
/// one image and for a multi-platform index; the pins are what `docker pull` then records
/// (`RepoDigests`), so `docker pull IMAGE@DIGEST` gets the same bytes.
#[test]
fn lock_asks_the_registry_and_pulls_nothing() {
    if !require_daemon() || !require_registry() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("lock-api");
    // Bytes of their own, so that the pulls below record digests of this repository only.
    let single = push_variant(&registry, &repo, "1.0", &unique_name("content"));
    let index_digest = registry.put_index(
        &repo,
        "1.0",
        "multi",
        &[("linux", "amd64"), ("linux", "arm64")],
    );
    let multi = registry.reference(&repo, "multi");
    assert!(
        !present(&single) && !present(&multi),
        "nothing local before"
    );
    let directory = tempfile::tempdir().unwrap();
    write_profile(directory.path(), "single", &single);
    write_profile(directory.path(), "multi", &multi);

    // No daemon is needed when every registry answers: DOCKER_HOST leads nowhere.
    let run = Envctl::in_folder(directory.path())
        .args(["-v", "lock", "--json"])
        .daemon("unix:///nonexistent/envctl-no-daemon.sock")
        .timeout(LIMIT)
        .run();
    let stderr = &run.stderr;
    assert_eq!(run.code, 0, "{stderr}");
    assert!(!stderr.contains("pulling"), "{stderr}");
    assert!(
        stderr.contains("as an image index") && stderr.contains("pinned without a pull"),
        "-v says what the registry served: {stderr}"
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let pinned = |profile: &str| {
        report["locked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["profile"] == profile)
            .unwrap_or_else(|| panic!("{profile} not locked: {report}"))
            .clone()
    };
    for profile in ["single", "multi"] {
        assert_eq!(pinned(profile)["source"], "registry", "{report}");
    }
    assert_eq!(pinned("multi")["digest"], index_digest.as_str());
    let lock = lock_json(directory.path());
    let entry = |profile: &str| {
        lock["image"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["profile"] == profile)
            .unwrap()
            .clone()
    };
    assert_eq!(entry("single")["platform"], "linux/amd64");
    assert_eq!(entry("multi")["platform"], "linux/amd64, linux/arm64");
    assert!(
        !present(&single) && !present(&multi),
        "lock pulled nothing: both are still absent"
    );

    // What docker records at pull is the pin, for the image and for the index.
    let repository = format!("{}/{repo}", registry.host_port());
    for (profile, reference) in [("single", &single), ("multi", &multi)] {
        let _pulled = ImageGuard::new(reference.as_str());
        let pulled = docker_output(["pull", reference.as_str()]);
        assert!(
            pulled.status.success(),
            "{}",
            String::from_utf8_lossy(&pulled.stderr)
        );
        let recorded = docker_stdout([
            "inspect",
            "--format",
            "{{index .RepoDigests 0}}",
            reference.as_str(),
        ]);
        assert_eq!(
            recorded.trim(),
            format!(
                "{repository}@{}",
                pinned(profile)["digest"].as_str().unwrap()
            ),
            "{profile}"
        );
        drop(_pulled);
        assert!(!present(reference), "{reference} removed again");
    }
}
