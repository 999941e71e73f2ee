//! Placement under concurrency: four concurrent ups never share a GPU, eight never pass the
//! per-user limit, and another tool's CDI container on Podman holds its GPU.

use super::*;

/// `envctl up NAME --force --json` for every name at the same moment on `podman` (its
/// `envctl-NAME` containers removed first), when no other container holds a GPU
/// ([`quietly`]); each run's outcome, in the order of `names`.
fn ups_at_once(
    podman: &crate::support::engines::TestEngine,
    folder: &Path,
    machine: &Machine,
    names: &[String],
    environment: &[(&str, &Path)],
) -> Vec<Run> {
    let containers: Vec<String> = names.iter().map(|name| format!("envctl-{name}")).collect();
    let mine = |name: &str| containers.iter().any(|own| own == name);
    quietly(&podman.host, &mine, || {
        for container in &containers {
            podman.docker(["rm", "-f", container.as_str()]);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = names
                .iter()
                .map(|name| {
                    let host = podman.host.as_str();
                    scope.spawn(move || {
                        envctl_with(
                            folder,
                            machine,
                            host,
                            environment,
                            &["up", name, "--force", "--json"],
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap())
                .collect()
        })
    })
}

#[test]
fn four_concurrent_ups_never_share_a_gpu() {
    let Some(podman) = podman_5_4("four_concurrent_ups_never_share_a_gpu") else {
        return;
    };
    let _turn = turn();
    let machine = Machine::new("");
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!(
            "{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed (.ci/podman.sh exports it)"
        );
    };
    let image = podman.test_image();
    let names: Vec<String> = (0..4).map(|_| unique_name("place")).collect();
    let profiles: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "gpus = 2\n"))
        .collect();
    let folder = project(&image, &profiles);
    let _guards: Vec<_> = names
        .iter()
        .map(|name| podman.container_guard(format!("envctl-{name}")))
        .collect();
    let containers: Vec<String> = names.iter().map(|name| format!("envctl-{name}")).collect();
    let scene = Scene {
        podman: &podman,
        machine: &machine,
        folder: folder.path(),
        image: &image,
        names: &names,
    };
    four_ups_take_eight_distinct_gpus(&scene);
    ps_shows_each_containers_gpus_by_index(&scene);
    // What Podman records of a CDI device: its nodes, not its name (so other tools'
    // containers on Podman are seen only through requests they keep, and envctl's by label).
    let first = format!("envctl-{}", names[0]);
    let inspected = podman.inspect("container", &first);
    eprintln!(
        "Podman HostConfig.Devices: {}, DeviceRequests: {}",
        inspected["HostConfig"]["Devices"], inspected["HostConfig"]["DeviceRequests"]
    );
    let first_uuid = a_stopped_container_keeps_its_pinned_gpus(&scene, &inspected);
    on_a_full_host_up_meets_a_running_one(&scene);
    a_fifth_finds_no_room_and_makes_nothing(&scene);
    recreate_places_afresh_away_from_a_held_gpu(&scene, &containers, &first_uuid);
}

/// What the four-GPU-user scenario runs against: Podman 5.4, the stand-in machine, the
/// project folder and its four `gpus = 2` profiles.
struct Scene<'a> {
    podman: &'a crate::support::engines::TestEngine,
    machine: &'a Machine,
    folder: &'a Path,
    image: &'a str,
    names: &'a [String],
}

/// Four ups at once each get two GPUs, given by the engine as CDI edits of exactly those,
/// and no GPU twice.
fn four_ups_take_eight_distinct_gpus(scene: &Scene) {
    // --force: doctor's checks (no NVIDIA driver here) would refuse before placement.
    let runs = ups_at_once(scene.podman, scene.folder, scene.machine, scene.names, &[]);
    let mut taken: Vec<String> = Vec::new();
    for (name, run) in scene.names.iter().zip(&runs) {
        assert_eq!(run.code, 0, "[{}] up {name}:\n{run}", scene.podman.name);
        let report = run.json();
        assert_eq!(report["placement"]["placement"], "free", "{report:#}");
        let inspected = scene.podman.inspect("container", &format!("envctl-{name}"));
        let label = inspected["Config"]["Labels"]["envctl.gpus"]
            .as_str()
            .unwrap_or_else(|| panic!("no envctl.gpus label: {inspected:#}"))
            .to_string();
        let uuids: Vec<String> = label
            .trim_start_matches("devices=")
            .split(',')
            .map(str::to_string)
            .collect();
        assert_eq!(uuids.len(), 2, "{label}");
        // The engine really gave them: the CDI edits of exactly those GPUs.
        let env = inspected["Config"]["Env"].to_string();
        for uuid in &uuids {
            let index = scene
                .machine
                .uuids
                .iter()
                .position(|known| known == uuid)
                .unwrap();
            assert!(
                env.contains(&format!("ENVCTL_TEST_GPU_{index}={uuid}")),
                "{env}"
            );
        }
        taken.extend(uuids);
    }
    let mut distinct = taken.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 8, "GPUs shared between the four: {taken:?}");
}

/// `ps` shows each container's GPUs by index.
fn ps_shows_each_containers_gpus_by_index(scene: &Scene) {
    let ps = envctl(
        scene.folder,
        scene.machine,
        &scene.podman.host,
        &["ps", "--json"],
    );
    assert_eq!(ps.code, 0, "{ps}");
    let ps = ps.json();
    for row in ps["containers"].as_array().unwrap() {
        if scene
            .names
            .iter()
            .any(|name| row["name"] == format!("envctl-{name}").as_str())
        {
            let shown = row["gpus"].as_str().unwrap();
            assert!(
                shown
                    .split(',')
                    .all(|index| index.parse::<u32>().is_ok_and(|index| index < 8)),
                "{row:#}"
            );
            assert!(row["gpu_ids"].as_str().unwrap().contains("GPU-"), "{row:#}");
        }
    }
}

/// A stopped container keeps its pinned GPUs: while another holds one of them, `up` does
/// not start it again; once that one is gone, it does. `inspected` is its inspection
/// before it stopped. Returns the first of its GPUs.
fn a_stopped_container_keeps_its_pinned_gpus(scene: &Scene, inspected: &Value) -> String {
    let first = format!("envctl-{}", scene.names[0]);
    // A stopped container keeps its pinned GPUs: while another holds one of them, `up`
    // does not start it again; once that one is gone, it does.
    let first_gpus = inspected["Config"]["Labels"]["envctl.gpus"]
        .as_str()
        .unwrap()
        .trim_start_matches("devices=")
        .to_string();
    let first_uuid = first_gpus.split(',').next().unwrap().to_string();
    scene
        .podman
        .docker_stdout(["stop", "-t", "1", first.as_str()]);
    let squatter = unique_name("squatter");
    let _squatter_guard = scene.podman.container_guard(squatter.clone());
    scene.podman.docker_stdout([
        "create",
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.gpus=devices={first_uuid}"),
        "--name",
        &squatter,
        scene.image,
    ]);
    let blocked = envctl(
        scene.folder,
        scene.machine,
        &scene.podman.host,
        &["up", &scene.names[0], "--force"],
    );
    assert_eq!(blocked.code, 1, "{blocked}");
    assert!(
        blocked.stderr.contains(&format!(
            "`{first}` is pinned to GPUs that another container holds now"
        )),
        "{blocked}"
    );
    assert!(
        blocked.stderr.contains("also on: GPU ") && blocked.stderr.contains(&squatter),
        "{blocked}"
    );
    let stopped = scene.podman.inspect("container", &first);
    assert_eq!(stopped["State"]["Running"], false, "{blocked}");
    scene.podman.docker_stdout(["rm", "-f", squatter.as_str()]);
    let again = envctl(
        scene.folder,
        scene.machine,
        &scene.podman.host,
        &["up", &scene.names[0], "--force"],
    );
    assert_eq!(again.code, 0, "{again}");
    assert!(again.stderr.contains("started the existing"), "{again}");

    first_uuid
}

/// On a full host, `up` of a running one meets it rather than placing it again.
fn on_a_full_host_up_meets_a_running_one(scene: &Scene) {
    let met = envctl(
        scene.folder,
        scene.machine,
        &scene.podman.host,
        &["up", &scene.names[1], "--force"],
    );
    assert_eq!(met.code, 0, "{met}");
    assert!(met.stderr.contains("already running"), "{met}");
}

/// A fifth finds no room, and makes nothing.
fn a_fifth_finds_no_room_and_makes_nothing(scene: &Scene) {
    let fifth = unique_name("place");
    let fifth_folder = project(scene.image, &[(&fifth, "gpus = 1\n")]);
    let _fifth_guard = scene.podman.container_guard(format!("envctl-{fifth}"));
    let refused = envctl(
        fifth_folder.path(),
        scene.machine,
        &scene.podman.host,
        &["up", &fifth, "--force"],
    );
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("no room on this host's GPUs: 1 GPU asked for, 0 free"),
        "{refused}"
    );
    assert!(
        !scene.podman.container_exists(&format!("envctl-{fifth}")),
        "{refused}"
    );
}

/// `up --recreate` of a changed profile places the new container afresh: with one of the
/// old one's GPUs held by another container now, the new one avoids it.
fn recreate_places_afresh_away_from_a_held_gpu(
    scene: &Scene,
    containers: &[String],
    first_uuid: &str,
) {
    let first = format!("envctl-{}", scene.names[0]);
    scene
        .podman
        .docker_stdout(["rm", "-f", containers[3].as_str()]);
    let squatter = unique_name("squatter");
    let _squatter_guard = scene.podman.container_guard(squatter.clone());
    scene.podman.docker_stdout([
        "create",
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.gpus=devices={first_uuid}"),
        "--name",
        &squatter,
        scene.image,
    ]);
    std::fs::write(
        scene
            .folder
            .join("envctl")
            .join(format!("{}.toml", scene.names[0])),
        format!(
            "image = \"{}\"\ngpus = 2\nenv = {{ CHANGED = \"1\" }}\n",
            scene.image
        ),
    )
    .unwrap();
    let recreated = envctl(
        scene.folder,
        scene.machine,
        &scene.podman.host,
        &["up", &scene.names[0], "--force", "--recreate"],
    );
    assert_eq!(recreated.code, 0, "{recreated}");
    assert!(
        recreated.stderr.contains("recreated and started"),
        "{recreated}"
    );
    let now = scene.podman.inspect("container", &first);
    let label = now["Config"]["Labels"]["envctl.gpus"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !label.contains(first_uuid),
        "placed on the held GPU again: {label}\n{recreated}"
    );
    assert_eq!(
        label.trim_start_matches("devices=").split(',').count(),
        2,
        "{label}"
    );
}

/// `POST path` with a JSON body to the engine's unix socket; the status and the body.
fn post_json(socket: &str, path: &str, body: &Value) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(socket)
        .unwrap_or_else(|error| panic!("{socket}: {error}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: engine\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer}"));
    (status, answer)
}

/// On Podman a CDI device shows in inspect only once the container started, and then as
/// its node (`/dev/nvidia<minor>`), not its name. Another tool's started CDI container
/// (created through the API with a `cdi` request, as `docker run --device
/// nvidia.com/gpu=…` sends it) holds its GPU all the same, and `up` places around it.
#[test]
fn another_tools_cdi_container_on_podman_holds_its_gpu() {
    let Some(podman) = podman_5_4("another_tools_cdi_container_on_podman_holds_its_gpu") else {
        return;
    };
    let _turn = turn();
    let machine = Machine::new(&minor_numbers());
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!("{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed");
    };
    let image = podman.test_image();
    let holder = unique_name("cdi-holder");
    let _holder_guard = podman.container_guard(holder.clone());
    let socket = podman
        .host
        .strip_prefix("unix://")
        .unwrap_or_else(|| panic!("not a unix socket: {}", podman.host));
    let (status, answer) = post_json(
        socket,
        &format!("/v1.41/containers/create?name={holder}"),
        &serde_json::json!({
            "Image": image,
            "Cmd": ["sleep", "300"],
            "Labels": {"envctl.test": "1"},
            "HostConfig": {
                "DeviceRequests": [{
                    "Driver": "cdi",
                    "DeviceIDs": [format!("nvidia.com/gpu={}", machine.uuids[2])]
                }],
                "Ulimits": [
                    {"Name": "nofile", "Soft": 1024, "Hard": 1024},
                    {"Name": "nproc", "Soft": 1024, "Hard": 1024}
                ]
            }
        }),
    );
    assert_eq!(status, 201, "{answer}");
    podman.docker_stdout(["start", holder.as_str()]);
    let devices = podman.inspect("container", &holder)["HostConfig"]["Devices"].to_string();
    assert!(
        devices.contains(&format!("/dev/nvidia{}", MINOR_BASE + 2)),
        "Podman no longer records a started CDI device as its node: {devices}"
    );
    let folder = project(&image, &[("three", "gpus = 3\n")]);
    let placed = quietly(&podman.host, &|name| name == holder, || {
        envctl(
            folder.path(),
            &machine,
            &podman.host,
            &["up", "three", "--dry-run", "--force", "--json"],
        )
    });
    assert_eq!(placed.code, 0, "{placed}");
    assert_eq!(chosen(&placed.json()), [0, 1, 3], "{placed}");
}

/// Issue 28: the per-user GPU limit holds under a race. Eight `up`s of one user start
/// together under `max_gpus_per_user = 4`, each asking for one GPU of a host with eight
/// free: exactly four start, each on a GPU of its own, and the other four are refused by
/// the policy (its rule and line), with nothing made. Podman 5.4 starts the containers
/// through a CDI spec, so they really hold their GPUs.
#[test]
fn eight_concurrent_ups_never_pass_the_per_user_limit() {
    let Some(podman) = podman_5_4("eight_concurrent_ups_never_pass_the_per_user_limit") else {
        return;
    };
    let _turn = turn();
    let machine = Machine::new("");
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!(
            "{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed (.ci/podman.sh exports it)"
        );
    };
    let image = podman.test_image();
    let names: Vec<String> = (0..8).map(|_| unique_name("limit")).collect();
    let profiles: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "gpus = 1\n"))
        .collect();
    let folder = project(&image, &profiles);
    std::fs::write(
        folder.path().join("policy.toml"),
        "# the team's box\n[limits]\nmax_gpus_per_user = 4\n",
    )
    .unwrap();
    let containers: Vec<String> = names.iter().map(|name| format!("envctl-{name}")).collect();
    let _guards: Vec<_> = containers
        .iter()
        .map(|name| podman.container_guard(name.clone()))
        .collect();
    let policy = folder.path().join("policy.toml");
    let runs = ups_at_once(
        &podman,
        folder.path(),
        &machine,
        &names,
        &[("ENVCTL_POLICY", policy.as_path())],
    );
    let started: Vec<&Run> = runs.iter().filter(|run| run.code == 0).collect();
    let refused: Vec<&Run> = runs.iter().filter(|run| run.code != 0).collect();
    let all: Vec<String> = runs.iter().map(ToString::to_string).collect();
    assert_eq!(started.len(), 4, "{}", all.join("\n"));
    for run in &refused {
        assert_eq!(run.code, 1, "{run}");
        assert!(
            run.stderr
                .contains("error: the host policy refuses this container")
                && run
                    .stderr
                    .contains("policy.toml:3: limits.max_gpus_per_user = 4: user `")
                && run.stderr.contains("holds 4 GPUs already"),
            "{run}"
        );
    }
    let mut taken: Vec<String> = started
        .iter()
        .map(|run| {
            run.json()["placement"]["gpus"][0]["uuid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), 4, "GPUs shared: {taken:?}");
    let existing = containers
        .iter()
        .filter(|name| {
            podman
                .docker(["container", "inspect", name.as_str()])
                .status
                .success()
        })
        .count();
    assert_eq!(existing, 4, "a refused up left a container");
}
