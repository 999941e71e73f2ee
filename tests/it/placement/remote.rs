//! Clients on other machines: one is judged and placed by the daemon's facts, and clients of
//! one daemon from several machines never share a GPU.

use super::*;

/// envctl as a client on another machine runs it: in a UTS namespace of its own named
/// `envctl-laptop` (so the daemon, which names its host `vm`, is another machine's), with
/// no NVML library, a lock file of its own, and `DOCKER_HOST` pointing at `host`; in a
/// mount namespace of its own where `folder/server` (the server's files) is an empty tmpfs.
fn from_laptop(folder: &Path, host: &str, arguments: &[&str]) -> Run {
    let server_files = folder.join("server");
    std::fs::create_dir_all(server_files.join("data")).unwrap();
    let mut command = crate::support::cli::envctl_on_a_laptop_in(folder, Some(&server_files));
    command
        .args(arguments)
        .env(
            "ENVCTL_NVML_LIBRARY",
            folder.join("no-nvml-on-the-laptop.so"),
        )
        .env("ENVCTL_GPU_LOCK", folder.join("laptop.lock"))
        .env("DOCKER_HOST", host);
    Run::of(docker::run_with_timeout(&mut command, Duration::from_secs(120)).unwrap())
}

/// Removes the daemon's GPU record (`envctl-gpus`) an `up` on its machine wrote.
struct RecordGuard(crate::support::engines::TestEngine);

impl Drop for RecordGuard {
    fn drop(&mut self) {
        self.0.docker(["volume", "rm", "-f", "envctl-gpus"]);
    }
}

#[test]
fn a_client_on_another_machine_is_judged_and_placed_by_the_daemons_facts() {
    let Some(podman) =
        podman_5_4("a_client_on_another_machine_is_judged_and_placed_by_the_daemons_facts")
    else {
        return;
    };
    if !crate::remote_daemons::is_root() {
        docker::skip_or_panic(
            "not root: `unshare --uts` needs CAP_SYS_ADMIN",
            "a_client_on_another_machine_is_judged_and_placed_by_the_daemons_facts",
            "run the tests as root (.ci/run does)",
        );
        return;
    }
    let _turn = turn();
    let machine = Machine::new("");
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!("{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed");
    };
    let (server, laptop) = (unique_name("server"), unique_name("laptop"));
    let folder = project(
        &podman.test_image(),
        &[
            (&server, "gpus = 3\n"),
            (&laptop, "gpus = 2\nmounts = [\"./server/data:/data\"]\n"),
        ],
    );
    let _guards = [
        podman.container_guard(format!("envctl-{server}")),
        podman.container_guard(format!("envctl-{laptop}")),
    ];
    let _record = RecordGuard(podman.clone());
    let mine =
        |name: &str| name == format!("envctl-{server}") || name == format!("envctl-{laptop}");
    let (on_server, on_laptop, doctor, hint_run) = quietly(&podman.host, &mine, || {
        for name in [&server, &laptop] {
            podman.docker(["rm", "-f", &format!("envctl-{name}")]);
        }
        // On the daemon's machine, with its NVML: places and records the host's GPUs.
        let on_server = envctl(
            folder.path(),
            &machine,
            &podman.host,
            &["up", &server, "--force", "--json"],
        );
        // From the laptop: no NVML, its own lock file; not forced.
        let doctor = from_laptop(folder.path(), &podman.host, &["--json", "doctor", &laptop]);
        let on_laptop = from_laptop(folder.path(), &podman.host, &["up", &laptop, "--json"]);
        // doctor's hint, run where it says: `envctl doctor` on the daemon's machine.
        let hint_run = envctl(
            folder.path(),
            &machine,
            &podman.host,
            &["--json", "doctor", &laptop],
        );
        (on_server, on_laptop, doctor, hint_run)
    });
    assert_eq!(on_server.code, 0, "{on_server}");
    let server_gpus = pinned(&on_server.json());
    assert_eq!(server_gpus.len(), 3);
    let record = podman.inspect("volume", "envctl-gpus");
    let recorded = record["Labels"]["envctl.gpu-record"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for (index, uuid) in machine.uuids.iter().enumerate() {
        assert!(recorded.contains(&format!("{index}={uuid}")), "{record:#}");
    }
    assert_eq!(
        record["Labels"]["envctl.gpu-record.host"], "vm",
        "{record:#}"
    );

    // Judged by the daemon's facts: NVML is the other machine's, never a failure here.
    let report = doctor.json();
    let nvml = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "gpu.nvml")
        .unwrap_or_else(|| panic!("no gpu.nvml finding: {report:#}"))
        .clone();
    assert_eq!(nvml["status"], "info", "{nvml:#}");
    // Its driver and GPUs as the record the `up` on the server left (issue 38).
    assert_eq!(nvml["facts"]["from_record"], true, "{nvml:#}");
    assert_eq!(nvml["facts"]["seen_by"], "nvml", "{nvml:#}");
    let hint_report = hint_run.json();
    let there = hint_report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "gpu.nvml")
        .unwrap()
        .clone();
    assert_eq!(
        there["status"], "pass",
        "on the daemon's machine NVML is read: {there:#}"
    );

    // Placed on GPUs of the daemon's record, none of the server's container's, and given.
    assert_eq!(on_laptop.code, 0, "{on_laptop}");
    let laptop_gpus = pinned(&on_laptop.json());
    assert_eq!(laptop_gpus.len(), 2, "{on_laptop}");
    assert!(
        laptop_gpus
            .iter()
            .all(|uuid| machine.uuids.contains(uuid) && !server_gpus.contains(uuid)),
        "laptop {laptop_gpus:?}, server {server_gpus:?}"
    );
    assert!(
        on_laptop
            .stderr
            .contains("placing on vm's GPUs as its daemon records them"),
        "{on_laptop}"
    );
    assert!(
        on_laptop.stderr.contains(&format!(
            "bind source {} is not on this machine: it is vm's path",
            folder.path().join("server/data").display()
        )),
        "{on_laptop}"
    );
    let env = podman.inspect("container", &format!("envctl-{laptop}"))["Config"]["Env"].to_string();
    for uuid in &laptop_gpus {
        let index = machine
            .uuids
            .iter()
            .position(|known| known == uuid)
            .unwrap();
        assert!(
            env.contains(&format!("ENVCTL_TEST_GPU_{index}={uuid}")),
            "{env}"
        );
    }
    // Nothing of the laptop's own machine was used for the server's GPUs: not its lock file.
    assert!(!folder.path().join("laptop.lock").exists());
    // And the daemon's lock is gone once both are placed.
    assert!(
        !podman
            .docker(["container", "inspect", "envctl-gpu-placement-lock"])
            .status
            .success()
    );
}

#[test]
fn clients_of_one_daemon_from_several_machines_never_share_a_gpu() {
    let Some(podman) = podman_5_4("clients_of_one_daemon_from_several_machines_never_share_a_gpu")
    else {
        return;
    };
    if !crate::remote_daemons::is_root() {
        docker::skip_or_panic(
            "not root: `unshare --uts` needs CAP_SYS_ADMIN",
            "clients_of_one_daemon_from_several_machines_never_share_a_gpu",
            "run the tests as root (.ci/run does)",
        );
        return;
    }
    let _turn = turn();
    let machine = Machine::new("");
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!("{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed");
    };
    let names: Vec<String> = (0..3).map(|_| unique_name("race")).collect();
    let profiles: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "gpus = 4\n"))
        .collect();
    let folder = project(&podman.test_image(), &profiles);
    // Each client a machine of its own: two on the daemon's machine with lock files of
    // their own (as two machines sharing a socket would have), one from the laptop.
    let lock_folders: Vec<tempfile::TempDir> =
        (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let _guards: Vec<_> = names
        .iter()
        .map(|name| podman.container_guard(format!("envctl-{name}")))
        .collect();
    let _record = RecordGuard(podman.clone());
    let containers: Vec<String> = names.iter().map(|name| format!("envctl-{name}")).collect();
    let mine = |name: &str| containers.iter().any(|own| own == name);
    let run = |client: usize, name: &str| -> Run {
        if client == 2 {
            return from_laptop(folder.path(), &podman.host, &["up", name, "--json"]);
        }
        let mut command = crate::support::cli::envctl_in(folder.path());
        command
            .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine.fixture)
            .env(
                "ENVCTL_GPU_LOCK",
                lock_folders[client].path().join("gpus.lock"),
            )
            .env("DOCKER_HOST", &podman.host)
            .timeout(Duration::from_secs(120))
            .args(["up", name, "--force", "--json"]);
        Run::of(command.output().unwrap())
    };
    // The laptop places by the record the daemon's machine leaves: one `up` there first.
    let seed = quietly(&podman.host, &mine, || run(0, &names[0]));
    assert_eq!(seed.code, 0, "{seed}");
    for round in 0..10 {
        let clients = if round == 0 { 2 } else { 3 };
        let runs: Vec<Run> = quietly(&podman.host, &mine, || {
            for container in &containers {
                podman.docker(["rm", "-f", container.as_str()]);
            }
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..clients)
                    .map(|client| {
                        let name = &names[client];
                        let run = &run;
                        scope.spawn(move || {
                            run(
                                if client == 1 && clients == 2 {
                                    2
                                } else {
                                    client
                                },
                                name,
                            )
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| handle.join().unwrap())
                    .collect()
            })
        });
        let succeeded: Vec<&Run> = runs.iter().filter(|run| run.code == 0).collect();
        // Room for two of four GPUs each: both of two, and exactly two of three, succeed.
        assert_eq!(succeeded.len(), 2, "round {round}: {}", shown(&runs));
        let mut taken: Vec<String> = succeeded
            .iter()
            .flat_map(|run| pinned(&run.json()))
            .collect();
        let count = taken.len();
        taken.sort();
        taken.dedup();
        assert_eq!(
            taken.len(),
            count,
            "round {round}: a GPU given twice: {}",
            shown(&runs)
        );
        for failed in runs.iter().filter(|run| run.code != 0) {
            assert_eq!(failed.code, 1, "round {round}: {failed}");
            assert!(failed.stderr.contains("GPU"), "round {round}: {failed}");
        }
        // The daemon's lock is never left behind.
        assert!(
            !podman
                .docker(["container", "inspect", "envctl-gpu-placement-lock"])
                .status
                .success()
        );
    }
}
