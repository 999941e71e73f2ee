//! Issue 31: a profile's `labels` reach the container `up` makes and every export, as
//! compose's `labels` do; a label Kubernetes cannot take is an annotation, said in a notice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::cli::{Run, envctl_in};
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};

fn envctl(folder: &Path, arguments: &[&str]) -> Run {
    Run::of(envctl_in(folder).args(arguments).output().unwrap())
}

fn write_profile(folder: &Path, name: &str, image: &str) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join(format!("envctl/{name}.toml")),
        format!(
            "image = \"{image}\"\nmemory = \"64m\"\nlabels = {{ \"com.example.team\" = \"vision\", \"com.example.note\" = \"night runs\" }}\n"
        ),
    )
    .unwrap();
}

#[test]
fn labels_reach_every_export() {
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    write_profile(folder, "labelled", "busybox:1.36");
    let compose = envctl(folder, &["export", "labelled", "--to", "compose"]);
    assert_eq!(compose.code, 0, "{compose}");
    assert!(
        compose.stdout.contains("com.example.team: vision")
            && compose.stdout.contains("com.example.note: \"night runs\""),
        "{compose}"
    );
    let run = envctl(folder, &["export", "labelled", "--to", "docker-run"]);
    assert!(
        run.stdout.contains("--label com.example.team=vision")
            && run.stdout.contains("--label 'com.example.note=night runs'"),
        "{run}"
    );
    let devcontainer = envctl(folder, &["export", "labelled", "--to", "devcontainer"]);
    assert!(
        devcontainer.stdout.contains("com.example.team=vision"),
        "{devcontainer}"
    );
    let k8s = envctl(folder, &["export", "labelled", "--to", "k8s"]);
    assert_eq!(k8s.code, 0, "{k8s}");
    assert!(k8s.stdout.contains("com.example.team: vision"), "{k8s}");
    // `night runs` has a space: no Kubernetes label value, so an annotation, said so.
    assert!(
        k8s.stdout.contains("com.example.note: \"night runs\""),
        "{k8s}"
    );
    assert!(
        k8s.stderr
            .contains("label `com.example.note` is not a valid Kubernetes label"),
        "{k8s}"
    );
}

#[test]
fn labels_reach_the_container_and_a_change_is_drift() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let profile = unique_name("labels");
    write_profile(folder, &profile, &test_image());
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let up = envctl(folder, &["up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    assert_eq!(
        docker_stdout([
            "inspect",
            "--format",
            "{{index .Config.Labels \"com.example.team\"}}",
            container.name()
        ]),
        "vision"
    );
    // The label is part of the container's shape: a change is named, not ignored.
    let text = std::fs::read_to_string(folder.join(format!("envctl/{profile}.toml"))).unwrap();
    std::fs::write(
        folder.join(format!("envctl/{profile}.toml")),
        text.replace("vision", "speech"),
    )
    .unwrap();
    let again = envctl(folder, &["up", &profile]);
    assert_eq!(again.code, 1, "{again}");
    let recreated = envctl(folder, &["up", &profile, "--recreate"]);
    assert_eq!(recreated.code, 0, "{recreated}");
    assert_eq!(
        docker_stdout([
            "inspect",
            "--format",
            "{{index .Config.Labels \"com.example.team\"}}",
            container.name()
        ]),
        "speech"
    );
}
