//! Issue 31: a profile's `labels` reach the container `up` makes and every export, as
//! compose's `labels` do; a label Kubernetes cannot take is an annotation, said in a notice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::cli::Envctl;
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};

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
    let compose = Envctl::in_folder(folder)
        .args(["export", "labelled", "--to", "compose"])
        .run();
    assert_eq!(compose.code, 0, "{compose}");
    assert!(
        compose.stdout.contains("com.example.team: vision")
            && compose.stdout.contains("com.example.note: \"night runs\""),
        "{compose}"
    );
    let run = Envctl::in_folder(folder)
        .args(["export", "labelled", "--to", "docker-run"])
        .run();
    assert!(
        run.stdout.contains("--label com.example.team=vision")
            && run.stdout.contains("--label 'com.example.note=night runs'"),
        "{run}"
    );
    let devcontainer = Envctl::in_folder(folder)
        .args(["export", "labelled", "--to", "devcontainer"])
        .run();
    assert!(
        devcontainer.stdout.contains("com.example.team=vision"),
        "{devcontainer}"
    );
    let k8s = Envctl::in_folder(folder)
        .args(["export", "labelled", "--to", "k8s"])
        .run();
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
    let up = Envctl::in_folder(folder).args(["up", &profile]).run();
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
    let again = Envctl::in_folder(folder).args(["up", &profile]).run();
    assert_eq!(again.code, 1, "{again}");
    let recreated = Envctl::in_folder(folder)
        .args(["up", &profile, "--recreate"])
        .run();
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

/// A named volume removed when the test ends (after the container that mounts it, which
/// is declared later and so dropped first).
struct VolumeGuard(String);

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = crate::support::docker::docker_output(["volume", "rm", "-f", self.0.as_str()]);
    }
}

fn volume_labels(name: &str) -> serde_json::Value {
    serde_json::from_str(&docker_stdout([
        "volume",
        "inspect",
        "--format",
        "{{json .Labels}}",
        name,
    ]))
    .unwrap()
}

/// Issue 31: the named volumes a profile mounts are made before the container, with the
/// profile's labels and envctl's own (which profile, whose), not the container's; a volume
/// that exists already is left as it is.
#[test]
fn labels_reach_the_named_volumes_and_an_existing_one_is_left_alone() {
    if !require_daemon() {
        return;
    }
    let fresh = VolumeGuard(unique_name("envctl-labels-fresh"));
    let existing = VolumeGuard(unique_name("envctl-labels-existing"));
    docker_stdout([
        "volume",
        "create",
        "--label",
        "envctl.test=1",
        "--label",
        "keep=me",
        existing.0.as_str(),
    ]);
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let profile = unique_name("volume-labels");
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join(format!("envctl/{profile}.toml")),
        format!(
            "image = \"{}\"\nmemory = \"64m\"\nlabels = {{ \"com.example.team\" = \"vision\" }}\nmounts = [\"{}:/data\", \"{}:/old\"]\n",
            test_image(),
            fresh.0,
            existing.0
        ),
    )
    .unwrap();
    let container = ContainerGuard::new(format!("envctl-{profile}"));
    let up = Envctl::in_folder(folder).args(["up", &profile]).run();
    assert_eq!(up.code, 0, "{up}");

    let labels = volume_labels(&fresh.0);
    assert_eq!(labels["com.example.team"], "vision", "{labels}");
    assert_eq!(labels["envctl.profile"], profile.as_str(), "{labels}");
    assert_eq!(
        labels["envctl.uid"],
        {
            use std::os::unix::fs::MetadataExt as _;
            // The test's own uid, as a file it just made carries it.
            std::fs::metadata(folder).unwrap().uid().to_string()
        }
        .as_str(),
        "{labels}"
    );
    assert!(
        labels.get("envctl.config-hash").is_none() && labels.get("envctl.run").is_none(),
        "nothing of one container's on a volume: {labels}"
    );
    assert_eq!(
        volume_labels(&existing.0),
        serde_json::json!({"envctl.test": "1", "keep": "me"}),
        "an existing volume is not relabelled"
    );
    // The container mounts the very volumes.
    let mounted = docker_stdout([
        "inspect",
        "--format",
        "{{range .Mounts}}{{.Name}} {{end}}",
        container.name(),
    ]);
    assert!(
        mounted.contains(fresh.0.as_str()) && mounted.contains(existing.0.as_str()),
        "{mounted}"
    );
}
