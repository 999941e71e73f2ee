//! A server's facts from any client (issue 38, item 1): daemons of the tests' own
//! (`support::server`), each in a network and UTS namespace of its own, whose stand-in
//! NVIDIA hook gives containers an `nvidia-smi` answering from the server's fixture.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::docker::TEST_LABEL;
use crate::support::server::{Fixture, FixtureProcess, Server};

/// The infrastructure itself: a test server names its own host, and a `--gpus` container
/// on it runs the stand-in nvidia-smi, which answers the fixture for the GPUs the
/// container was given; a server without the toolkit refuses `--gpus`.
#[test]
fn a_test_server_is_another_machine_with_the_fixtures_gpus() {
    let test = "a_test_server_is_another_machine_with_the_fixtures_gpus";
    let mut fixture = Fixture::gpus(
        "aaaa",
        4,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "535.161.08",
        "12.2",
    );
    fixture.processes.push(FixtureProcess {
        gpu_uuid: fixture.gpus[3].uuid.clone(),
        pid: 4242,
        used_memory: "2048".into(),
        name: "python".into(),
    });
    let Some(server) = Server::start(test, "gpu-infra", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    assert_eq!(
        server.docker_ok(&["info", "--format", "{{.Name}}"]).trim(),
        "gpu-infra"
    );
    let query = "PATH=/usr/bin:$PATH; nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv,noheader,nounits && nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits && nvidia-smi -q";
    let all = server.docker_ok(&[
        "run", "--rm", "--label", TEST_LABEL, "--gpus", "all", &image, "sh", "-c", query,
    ]);
    assert!(
        all.contains("0, GPU-aaaa-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 535.161.08"),
        "{all}"
    );
    assert!(
        all.contains("3, GPU-aaaa-0000-0000-0000-000000000003"),
        "{all}"
    );
    assert!(
        all.contains("GPU-aaaa-0000-0000-0000-000000000003, 4242, 2048"),
        "{all}"
    );
    assert!(
        all.contains("CUDA Version                              : 12.2"),
        "{all}"
    );
    let two = server.docker_ok(&[
        "run",
        "--rm",
        "--label",
        TEST_LABEL,
        "--gpus",
        "\"device=1,2\"",
        &image,
        "sh",
        "-c",
        query,
    ]);
    assert!(
        two.contains("1, GPU-aaaa") && two.contains("2, GPU-aaaa"),
        "{two}"
    );
    assert!(
        !two.contains("0, GPU-aaaa") && !two.contains("4242"),
        "{two}"
    );

    let Some(bare) = Server::start(test, "gpu-bare", None) else {
        return;
    };
    let image = bare.load_test_image();
    let refused = bare.docker(&[
        "run", "--rm", "--label", TEST_LABEL, "--gpus", "all", &image, "true",
    ]);
    assert!(!refused.status.success(), "{refused:?}");
}
