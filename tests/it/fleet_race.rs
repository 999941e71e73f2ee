//! Racing clients from several machines on one server (issue 38, "Double-booking"): three
//! "laptops" (each envctl in a UTS namespace of its own, without NVML) `up` a GPU profile
//! at the same moment against one server daemon of the test's own (`support::server`),
//! ten rounds over, and every round the GPUs the daemon gave (its containers' device
//! requests, read from the daemon itself) are disjoint and none is held by the container
//! that was there before them. One server serves every round: each round's containers are
//! removed before the next.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{TEST_LABEL, unique_name};
use crate::support::server::{Fixture, Server};

/// The racing laptops.
const LAPTOPS: usize = 3;

/// The rounds raced.
const ROUNDS: usize = 10;

/// A profile `name` in `folder`: `image`, `gpus` GPUs, a sleeper.
fn gpu_profile(folder: &Path, name: &str, image: &str, gpus: usize) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join("envctl").join(format!("{name}.toml")),
        format!("image = \"{image}\"\ngpus = {gpus}\ncommand = [\"sleep\", \"600\"]\n"),
    )
    .unwrap();
}

/// envctl `up PROFILE` on a laptop of its own (a host name of its own, no NVML) in
/// `folder`, against `server`: started by the caller, so racing laptops start at once.
fn laptop_up(folder: &Path, server: &Server, profile: &str) -> Envctl {
    Envctl::on_a_laptop(folder, None)
        .daemon(&server.host())
        .env("ENVCTL_NVML_LIBRARY", folder.join("no-nvml-here.so"))
        .args(["up", profile])
        .timeout(Duration::from_secs(180))
}

/// The GPU UUIDs container `name` on `server` was given, from its device requests.
fn given_to(server: &Server, name: &str, run: &Run) -> Vec<String> {
    let requests = server.docker_ok(&[
        "inspect",
        "--format",
        "{{json .HostConfig.DeviceRequests}}",
        name,
    ]);
    let requests: serde_json::Value = serde_json::from_str(&requests).unwrap();
    requests[0]["DeviceIDs"]
        .as_array()
        .unwrap_or_else(|| panic!("{name} names no GPUs ({requests}): {run}"))
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect()
}

/// Ten rounds of three laptops racing `up` of a one- or two-GPU profile on a server of
/// eight GPUs whose GPUs 0 and 1 a container holds: each round every `up` succeeds, the
/// GPUs given are disjoint, and none is 0 or 1.
#[test]
fn ten_rounds_of_racing_clients_from_three_machines_give_disjoint_gpus() {
    let test = "ten_rounds_of_racing_clients_from_three_machines_give_disjoint_gpus";
    let fixture = Fixture::gpus(
        "ffffffff",
        8,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "550.54.15",
        "12.4",
    );
    let Some(server) = Server::start(test, "gpu-fleet", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    let holder = unique_name("holder");
    server.docker_ok(&[
        "run",
        "-d",
        "--name",
        &holder,
        "--label",
        TEST_LABEL,
        "--gpus",
        "\"device=0,1\"",
        &image,
        "sleep",
        "600",
    ]);
    let held: Vec<&str> = fixture.gpus[..2]
        .iter()
        .map(|gpu| gpu.uuid.as_str())
        .collect();
    let index_of = |uuid: &str| {
        fixture
            .gpus
            .iter()
            .find(|gpu| gpu.uuid == uuid)
            .map(|gpu| gpu.index)
    };
    let folders: Vec<tempfile::TempDir> =
        (0..LAPTOPS).map(|_| tempfile::tempdir().unwrap()).collect();
    for round in 0..ROUNDS {
        // One or two GPUs each, alternating, so the rounds ask for five or four of the six
        // free GPUs: a double-booking has room to show, a fair placement always fits.
        let wanted: Vec<usize> = (0..LAPTOPS)
            .map(|laptop| 1 + (round + laptop) % 2)
            .collect();
        let profiles: Vec<String> = (0..LAPTOPS)
            .map(|laptop| unique_name(&format!("race{round}-{laptop}")))
            .collect();
        for ((folder, profile), count) in folders.iter().zip(&profiles).zip(&wanted) {
            gpu_profile(folder.path(), profile, &image, *count);
        }
        // Every laptop starts its `up` at the same moment.
        let start = Barrier::new(LAPTOPS);
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let handles: Vec<_> = folders
                .iter()
                .zip(&profiles)
                .map(|(folder, profile)| {
                    let (server, start) = (&server, &start);
                    scope.spawn(move || {
                        let laptop = laptop_up(folder.path(), server, profile);
                        start.wait();
                        laptop.run()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap())
                .collect()
        });
        let mut owners: BTreeMap<String, String> = BTreeMap::new();
        for ((run, profile), count) in runs.iter().zip(&profiles).zip(&wanted) {
            assert_eq!(run.code, 0, "round {round}, {profile}: {run}");
            let container = format!("envctl-{profile}");
            let given = given_to(&server, &container, run);
            assert_eq!(given.len(), *count, "round {round}, {container}: {run}");
            for uuid in given {
                let index = index_of(&uuid)
                    .unwrap_or_else(|| panic!("{uuid} is none of the server's GPUs: {run}"));
                assert!(
                    !held.contains(&uuid.as_str()),
                    "round {round}: {container} was given GPU {index}, which {holder} holds: {run}"
                );
                if let Some(first) = owners.insert(uuid.clone(), container.clone()) {
                    panic!(
                        "round {round}: GPU {index} ({uuid}) was given to both {first} and {container}:\n{}",
                        runs.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                }
            }
        }
        for profile in &profiles {
            server.docker_ok(&["rm", "-f", "-v", &format!("envctl-{profile}")]);
        }
    }
    // The holder is untouched, and no lock or probe of the races is left behind.
    assert_eq!(
        server
            .docker_ok(&["inspect", "--format", "{{.State.Running}}", &holder])
            .trim(),
        "true"
    );
    assert_eq!(crate::remote_facts::probes_left(&server), "");
    assert_eq!(
        server
            .docker_ok(&["ps", "-aq", "--filter", "name=envctl-gpu-placement-lock"])
            .trim(),
        ""
    );
}

/// Another client's GPU probe running on the server (a `doctor` from another laptop: a
/// container labelled `envctl.probe`, given every GPU) holds no GPU: an `up` meanwhile
/// still places on the server's GPUs (found by the race above, whose first round's checks
/// probe outside the placement lock).
#[test]
fn another_clients_running_probe_holds_no_gpu() {
    let test = "another_clients_running_probe_holds_no_gpu";
    let fixture = Fixture::gpus(
        "fefefefe",
        2,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "550.54.15",
        "12.4",
    );
    let Some(server) = Server::start(test, "gpu-probed", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    server.docker_ok(&[
        "run",
        "-d",
        "--label",
        "envctl.probe=1",
        "--gpus",
        "all",
        &image,
        "sleep",
        "600",
    ]);
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("beside-probe");
    gpu_profile(folder.path(), &profile, &image, 2);
    let run = laptop_up(folder.path(), &server, &profile).run();
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(
        given_to(&server, &format!("envctl-{profile}"), &run).len(),
        2,
        "{run}"
    );
}
