//! Which engine answers (issue 13, item 1): against a fake daemon answering as Podman 4.3
//! does, doctor names Podman (not "Docker 4.3.1"), reads `Rootless` from Podman's own
//! `/info` field, and gives Podman's GPU fix (CDI), not Docker's runtime configure.

use std::time::Duration;

use serde_json::Value;

use crate::support::cli::Envctl;
use crate::support::fake_daemon::{FakeDaemon, Reply};

const PODMAN_VERSION: &str = r#"{"Platform":{"Name":"linux/amd64/debian-12"},"Components":[{"Name":"Podman Engine","Version":"4.3.1","Details":{"APIVersion":"4.3.1"}}],"Version":"4.3.1","ApiVersion":"1.41","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64","KernelVersion":"6.1.0"}"#;

const PODMAN_INFO: &str = r#"{"ID":"podman","OperatingSystem":"debian","OSType":"linux","KernelVersion":"6.1.0","SecurityOptions":["name=seccomp,profile=default"],"Rootless":true,"CgroupVersion":"2","CgroupDriver":"systemd","DockerRootDir":"/var/lib/containers/storage","Runtimes":{"crun":{"path":"/usr/bin/crun"}},"DefaultRuntime":"crun"}"#;

#[test]
fn podman_is_named_with_its_own_rootless_field_and_gpu_fix() {
    let daemon = FakeDaemon::start(|request| match request.route() {
        "/version" => Some(Reply::json(200, PODMAN_VERSION)),
        "/info" => Some(Reply::json(200, PODMAN_INFO)),
        _ => None,
    });
    let folder = tempfile::tempdir().unwrap();
    let run = Envctl::in_folder(folder.path())
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .daemon(&daemon.host())
        .args(["doctor", "--json"])
        .timeout(Duration::from_secs(60))
        .run();
    let report: Value = run.json();
    let engine = &report["host"]["engine"];
    assert_eq!(engine["kind"], "podman", "{engine}");
    assert_eq!(engine["rootless"], true, "{engine}");
    let findings = report["findings"].as_array().unwrap();
    let message = |id: &str| {
        findings
            .iter()
            .find(|finding| finding["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {findings:?}"))
            .clone()
    };
    let reachable = message("docker.reachable");
    assert!(
        reachable["message"]
            .as_str()
            .unwrap()
            .starts_with("Podman 4.3.1 at "),
        "{reachable}"
    );
    let gpu = message("docker.gpu-support");
    let hint = gpu["hint"].as_str().unwrap();
    assert!(hint.contains("nvidia-ctk cdi generate"), "{hint}");
    assert!(!hint.contains("--runtime=docker"), "{hint}");
}
