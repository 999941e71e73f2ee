//! The test-support helpers (`tests/it/support/`) against the real Docker daemon: the busybox
//! test image, container and image guards, unique names, and the loopback registry.
//!
//! Without a daemon these tests print `SKIPPED (no Docker daemon): …` and pass, unless
//! `ENVCTL_REQUIRE_DOCKER=1` makes that a failure.

use std::collections::HashSet;
use std::path::Path;
use std::thread;
use std::time::Duration;

use crate::support::docker::{
    self, ContainerGuard, ImageGuard, container_exists, docker_output, docker_stdout, image_exists,
    image_id, test_image, unique_name,
};
use crate::support::registry::{self, Registry, http_get, push_test_image};

fn label_of(kind: &str, object: &str) -> String {
    docker_stdout([
        kind,
        "inspect",
        "--format",
        "{{index .Config.Labels \"envctl.test\"}}",
        object,
    ])
}

#[test]
fn unique_names_do_not_collide_and_are_valid_docker_names() {
    let handles: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(|| {
                (0..500)
                    .map(|_| unique_name("envctl-x"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for handle in handles {
        let names = handle
            .join()
            .unwrap_or_else(|_| panic!("name thread panicked"));
        for name in names {
            assert!(name.starts_with("envctl-x-"), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "not a valid container/repository name: {name}"
            );
            assert!(seen.insert(name.clone()), "duplicate name {name}");
        }
    }
    assert_eq!(seen.len(), 4000);
}

#[test]
fn test_image_is_labelled_and_runs_echo_hello() {
    if !docker::require_daemon() {
        return;
    }
    let image = test_image();
    assert!(image.starts_with("envctl-test/busybox:"), "{image}");
    assert_eq!(test_image(), image, "test_image() must be stable");
    assert!(image_exists(&image));
    assert_eq!(label_of("image", &image), "1");
    assert_eq!(
        docker_stdout([
            "image",
            "inspect",
            "--format",
            "{{json .Config.Cmd}}",
            &image
        ]),
        r#"["sh"]"#
    );

    let guard = ContainerGuard::unique("envctl-test-echo");
    let out = docker_stdout(["run", "--name", guard.name(), &image, "echo", "hello"]);
    assert_eq!(out, "hello");
    // Containers inherit the label, so the CI sweep finds them.
    assert_eq!(label_of("container", guard.name()), "1");
    let listed = docker_stdout([
        "ps",
        "-aq",
        "--no-trunc",
        "--filter",
        "label=envctl.test=1",
        "--filter",
        &format!("name=^/{}$", guard.name()),
    ]);
    assert_eq!(listed.lines().count(), 1, "{listed:?}");

    let name = guard.name().to_owned();
    drop(guard);
    assert!(
        !container_exists(&name),
        "ContainerGuard left {name} behind"
    );
}

#[test]
fn test_image_has_the_usual_applets_and_a_default_shell() {
    if !docker::require_daemon() {
        return;
    }
    let image = test_image();
    let guard = ContainerGuard::unique("envctl-test-applets");
    let script = "for a in sh ash sleep cat echo env ls true false id printf test head \
                  grep sed wc mkdir rm kill ps uname hostname; do \
                  command -v $a >/dev/null || { echo missing $a; exit 1; }; done; \
                  id -un; test -d /tmp && test -w /tmp; sleep 0; echo \"$PATH\"; echo ok";
    let out = docker_stdout(["run", "--name", guard.name(), &image, "sh", "-c", script]);
    assert_eq!(
        out,
        "root\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nok"
    );
    drop(guard);

    // CMD ["sh"] with no stdin exits 0 at once; exit codes pass through.
    let guard = ContainerGuard::unique("envctl-test-default-cmd");
    docker_stdout(["run", "--name", guard.name(), &image]);
    let guard = ContainerGuard::unique("envctl-test-exit-code");
    let out = docker_output(["run", "--name", guard.name(), &image, "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn container_guard_removes_the_container_when_the_test_panics() {
    if !docker::require_daemon() {
        return;
    }
    let image = test_image();
    let name = unique_name("envctl-test-guard");
    let inner = name.clone();
    let result = std::panic::catch_unwind(move || {
        let guard = ContainerGuard::new(inner.as_str());
        docker_stdout(["run", "-d", "--name", guard.name(), &image, "sleep", "300"]);
        assert!(container_exists(guard.name()));
        panic!("deliberate panic while a container runs");
    });
    assert!(result.is_err());
    assert!(
        !container_exists(&name),
        "ContainerGuard did not remove {name} on panic"
    );
}

#[test]
fn image_guard_removes_only_its_tag() {
    if !docker::require_daemon() {
        return;
    }
    let image = test_image();
    let tag = format!("envctl-test/guarded:{}", unique_name("t"));
    docker_stdout(["tag", &image, &tag]);
    let guard = ImageGuard::new(tag.as_str());
    assert!(image_exists(guard.reference()));
    assert_eq!(image_id(&tag), image_id(&image));
    drop(guard);
    assert!(!image_exists(&tag), "ImageGuard left {tag} behind");
    assert!(
        image_exists(&image),
        "ImageGuard removed the shared test image"
    );
}

#[test]
fn registry_accepts_a_push_lists_it_and_serves_a_pull() {
    if !docker::require_daemon() || !registry::require_registry() {
        return;
    }
    let reg = Registry::start();
    let repo = format!("envctl-test/{}", unique_name("pushed"));
    let reference = push_test_image(&reg, &repo, "v1");
    assert_eq!(reference, format!("{}/{repo}:v1", reg.host_port()));
    assert!(
        !image_exists(&reference),
        "push_test_image must remove the local tag"
    );

    let catalog = reg.catalog();
    assert!(catalog.contains(&repo), "{repo} not in catalog {catalog:?}");
    assert_eq!(reg.tags(&repo), vec!["v1".to_owned()]);

    let pulled = ImageGuard::new(reference.as_str());
    let out = docker_output(["pull", &reference]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "docker pull {reference}: {stdout}\n{}\n--- registry log ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        reg.log()
    );
    assert!(
        stdout.contains("Downloaded newer image") || stdout.contains("Pull complete"),
        "the pull did not download anything: {stdout}"
    );
    assert_eq!(image_id(&reference), image_id(&test_image()));

    let guard = ContainerGuard::unique("envctl-test-pulled");
    let out = docker_stdout(["run", "--name", guard.name(), &reference, "echo", "pulled"]);
    assert_eq!(out, "pulled");
    drop(guard);
    drop(pulled);
    assert!(!image_exists(&reference), "ImageGuard left {reference}");
    assert!(image_exists(&test_image()));
}

#[test]
fn registry_process_and_storage_are_gone_after_drop() {
    if !registry::require_registry() {
        return;
    }
    let reg = Registry::start();
    let other = Registry::start();
    assert_ne!(reg.host_port(), other.host_port());
    assert!(reg.host_port().starts_with("127.0.0.1:"));
    drop(other);

    let v2 = reg.get("/v2/");
    assert_eq!(v2.status, 200);
    assert_eq!(
        v2.header("Docker-Distribution-API-Version"),
        Some("registry/2.0")
    );
    assert_eq!(reg.catalog(), Vec::<String>::new());

    let pid = reg.pid();
    let root = reg.root_dir().to_path_buf();
    let addr = reg.addr();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    assert!(reg.storage_dir().is_dir());
    drop(reg);

    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "registry process {pid} still exists after drop"
    );
    assert!(!root.exists(), "{} still exists", root.display());
    assert!(
        http_get(addr, "/v2/", Duration::from_secs(1)).is_err(),
        "something still answers on {addr}"
    );
}
