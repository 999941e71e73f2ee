//! GPU placement on a shared host, against the real daemons with eight stand-in GPUs:
//! other containers are created (not started: Docker without an NVIDIA runtime creates
//! them, it cannot start them) holding GPUs through real `DeviceRequests`, and envctl's
//! `up --dry-run --json`, `doctor --json` and `ps` are read. On Podman 5.4, whose CDI path
//! starts GPU containers from a CDI spec the test writes, four `up`s run at once and the
//! containers they made are inspected.
//!
//! Placement sees every container on the daemon, and other test modules create GPU
//! containers too. So each Docker scenario runs when no other container holds a GPU, and
//! again if one appeared while it ran ([`quietly`]); the tests of this file take turns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::Run;
use crate::support::docker::{self, TEST_LABEL, unique_name};
use crate::support::engines::{CDI_DIR_ENV, Family, engines};
use crate::support::nvml;

/// The tests of this file take turns: each counts the others' containers as holders.
static TURN: Mutex<()> = Mutex::new(());

/// The first GPU's device minor number in the fixtures that give them: not its index, so
/// a node is never matched to a GPU by index by mistake.
const MINOR_BASE: usize = 20;

/// `gpu.N.minor_number=MINOR_BASE + N` for eight GPUs.
fn minor_numbers() -> String {
    (0..8)
        .map(|index| format!("gpu.{index}.minor_number={}\n", MINOR_BASE + index))
        .collect()
}

pub(crate) fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Eight H100s with UUIDs no other test uses (`GPU-<prefix>-…-00N`), `extra` appended.
pub(crate) struct Machine {
    _folder: tempfile::TempDir,
    pub(crate) fixture: PathBuf,
    pub(crate) uuids: Vec<String>,
}

impl Machine {
    pub(crate) fn new(extra: &str) -> Machine {
        let folder = tempfile::tempdir().unwrap();
        let prefix = format!(
            "{:08x}",
            std::process::id() ^ unique_name("m").len() as u32 ^ nanos()
        );
        let uuids: Vec<String> = (0..8)
            .map(|index| format!("GPU-{prefix}-2c1e-4b8e-9a57-0c3f1e2d4a0{index}"))
            .collect();
        let base = std::fs::read_to_string(nvml::fixture("healthy-8x-h100.conf")).unwrap();
        let mut text: String = base
            .lines()
            .filter(|line| !line.contains(".uuid="))
            .map(|line| format!("{line}\n"))
            .collect();
        for (index, uuid) in uuids.iter().enumerate() {
            text.push_str(&format!("gpu.{index}.uuid={uuid}\n"));
        }
        text.push_str(extra);
        let fixture = folder.path().join("machine.conf");
        std::fs::write(&fixture, text).unwrap();
        Machine {
            _folder: folder,
            fixture,
            uuids,
        }
    }
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

pub(crate) fn envctl(folder: &Path, machine: &Machine, host: &str, arguments: &[&str]) -> Run {
    envctl_with(folder, machine, host, &[], arguments)
}

/// [`envctl`] with `environment` added (`ENVCTL_POLICY`, …).
fn envctl_with(
    folder: &Path,
    machine: &Machine,
    host: &str,
    environment: &[(&str, &Path)],
    arguments: &[&str],
) -> Run {
    let mut command = crate::support::cli::envctl_in(folder);
    for (key, value) in environment {
        command.env(key, value);
    }
    command
        .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", &machine.fixture)
        .env("ENVCTL_GPU_LOCK", folder.join("gpus.lock"))
        .timeout(Duration::from_secs(120))
        .args(arguments);
    if !host.is_empty() {
        command.env("DOCKER_HOST", host);
    }
    Run::of(command.output().unwrap())
}

/// A folder with `./envctl/NAME.toml` for each `(name, rest)`.
pub(crate) fn project(image: &str, profiles: &[(&str, &str)]) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    for (name, rest) in profiles {
        std::fs::write(
            folder.path().join("envctl").join(format!("{name}.toml")),
            format!("image = \"{image}\"\n{rest}"),
        )
        .unwrap();
    }
    folder
}

/// Containers created on Docker with `--gpus SPEC`, labelled as this test's, removed on drop.
pub(crate) struct Holders {
    pub(crate) names: Vec<String>,
}

impl Holders {
    pub(crate) fn create(specs: &[&str]) -> Holders {
        let given: Vec<Vec<&str>> = specs.iter().map(|spec| vec!["--gpus", *spec]).collect();
        Holders::given(&given)
    }

    /// One container per entry, created with those `docker create` options.
    pub(crate) fn given(options: &[Vec<&str>]) -> Holders {
        let image = docker::test_image();
        let names = options
            .iter()
            .map(|options| {
                let name = unique_name("holder");
                let mut arguments = vec!["create", "--label", TEST_LABEL, "--name", &name];
                arguments.extend(options.iter().copied());
                arguments.push(&image);
                docker::docker_stdout(arguments);
                name
            })
            .collect();
        Holders { names }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = docker::run_with_timeout(
                &mut docker::docker_command(["rm", "-f", name.as_str()]),
                Duration::from_secs(60),
            );
        }
    }
}

/// The containers on the engine at `host` (empty: Docker's own) that hold GPUs (not
/// exited, with a GPU request or CDI GPU devices) and that `mine` does not claim by name.
fn others_holding_gpus(host: &str, mine: &dyn Fn(&str) -> bool) -> Vec<String> {
    let command = |arguments: &[&str]| {
        let mut command = std::process::Command::new("docker");
        if !host.is_empty() {
            command.args(["-H", host]);
        }
        command.args(arguments);
        command
    };
    let listed = command(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        "status=created",
        "--filter",
        "status=running",
        "--filter",
        "status=paused",
        "--filter",
        "status=restarting",
    ])
    .output()
    .unwrap_or_else(|error| panic!("docker ps: {error}"));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|id| {
            // One removed since the list holds nothing.
            let output = command(&[
                "inspect",
                "--format",
                "{{.Name}} {{json .HostConfig.DeviceRequests}} {{json .HostConfig.Devices}}",
                id,
            ])
            .output()
            .ok()?;
            let line = String::from_utf8_lossy(&output.stdout).trim().to_string();
            let (name, rest) = line.split_once(' ')?;
            let name = name.trim_start_matches('/');
            let holds = rest.contains("\"gpu\"")
                || rest.contains("nvidia.com/gpu")
                || rest.contains("\"PathInContainer\":\"/dev/nvidia");
            (holds && !mine(name)).then(|| line.clone())
        })
        .collect()
}

/// Runs `scenario` while no other container holds a GPU on the engine at `host`: waits
/// for quiet, runs, and runs again when another module's GPU container appeared meanwhile.
pub(crate) fn quietly<T>(
    host: &str,
    mine: &dyn Fn(&str) -> bool,
    mut scenario: impl FnMut() -> T,
) -> T {
    let started = Instant::now();
    loop {
        while !others_holding_gpus(host, mine).is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "other containers have held GPUs for 4 minutes: {:?}",
                others_holding_gpus(host, mine)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let outcome = scenario();
        if others_holding_gpus(host, mine).is_empty() {
            return outcome;
        }
    }
}

pub(crate) fn chosen(dry_run: &Value) -> Vec<u64> {
    dry_run["placement"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no placement.gpus in {dry_run}"))
        .iter()
        .map(|gpu| gpu["index"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_count_lands_on_the_least_used_free_gpus_pinned_by_uuid() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPU 0: free but busy (a process outside any container, 40 GiB); 1 held by UUID;
    // 2 and 3 by index.
    let machine = Machine::new("gpu.0.memory_used=42949672960\ngpu.0.processes=4242:42949672960\n");
    let image = docker::test_image();
    let folder = project(
        &image,
        &[
            ("two", "gpus = 2\n"),
            ("first", "gpus = { count = 2 }\nplacement = \"first\"\n"),
        ],
    );
    let holders = Holders::create(&[&format!("device={}", machine.uuids[1]), "\"device=2,3\""]);
    let (two, first, three, given, doctor) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
            (
                run(&["up", "two", "--dry-run", "--force", "--json"]),
                run(&["up", "first", "--dry-run", "--force", "--json"]),
                run(&["up", "two", "--dry-run", "--force", "--json", "--gpus", "3"]),
                run(&[
                    "up",
                    "two",
                    "--dry-run",
                    "--force",
                    "--json",
                    "--gpus",
                    "device=0",
                ]),
                run(&["doctor", "--json"]),
            )
        },
    );
    assert_eq!(two.code, 0, "{two}");
    let placed = two.json();
    assert_eq!(chosen(&placed), [4, 5], "{placed:#}");
    assert_eq!(placed["placement"]["placement"], "free");
    let request = &placed["body"]["HostConfig"]["DeviceRequests"][0];
    assert_eq!(
        request["DeviceIDs"],
        serde_json::json!([machine.uuids[4], machine.uuids[5]]),
        "{placed:#}"
    );
    assert_eq!(request["Count"], 0);
    assert_eq!(
        placed["body"]["Labels"]["envctl.gpus"],
        format!("devices={},{}", machine.uuids[4], machine.uuids[5])
    );
    // The human dry run says the same, on stderr.
    let said = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force"],
    );
    assert!(
        said.stderr
            .contains("placement: GPUs 4 and 5: no container holds them"),
        "{said}"
    );
    assert!(said.stdout.contains(&machine.uuids[4]), "{said}");

    // `placement = "first"`: Docker's own choice, a bare count.
    assert_eq!(first.code, 0, "{first}");
    let first = first.json();
    assert_eq!(first["placement"]["placement"], "first");
    let request = &first["body"]["HostConfig"]["DeviceRequests"][0];
    assert_eq!(request["Count"], 2, "{first:#}");
    assert!(request["DeviceIDs"].is_null(), "{first:#}");

    // `--gpus 3` is placed too; `--gpus device=0` names its GPU, shared or not.
    assert_eq!(three.code, 0, "{three}");
    assert_eq!(chosen(&three.json()), [4, 5, 6]);
    assert_eq!(given.code, 0, "{given}");
    let given = given.json();
    assert_eq!(given["placement"]["placement"], "given");
    assert_eq!(
        given["body"]["HostConfig"]["DeviceRequests"][0]["DeviceIDs"],
        serde_json::json!(["0"])
    );

    // doctor's occupancy: holders by name, GPU 0's process, free flags.
    let doctor = doctor.json();
    let gpus = doctor["occupancy"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{doctor:#}"));
    assert_eq!(gpus.len(), 8);
    let free: Vec<bool> = gpus
        .iter()
        .map(|gpu| gpu["free"].as_bool().unwrap())
        .collect();
    // GPU 0 is held by no container, but its 40 GiB foreign process makes it busy, and
    // busy is not free (issue 40: the words and the fields agree).
    assert_eq!(free, [false, false, false, false, true, true, true, true]);
    assert!(gpus[0]["busy"].as_str().is_some(), "{doctor:#}");
    assert_eq!(gpus[1]["holders"][0]["name"], holders.names[0].as_str());
    assert_eq!(gpus[2]["holders"][0]["name"], holders.names[1].as_str());
    assert_eq!(gpus[3]["holders"][0]["state"], "created");
    assert_eq!(gpus[0]["processes"][0]["pid"], 4242);
    assert_eq!(gpus[0]["memory_used_bytes"], 42_949_672_960_u64);
}

/// Another tool's container given GPU device nodes (`docker create --device
/// HOST:/dev/nvidiaM`, as scripts did before the NVIDIA runtime, and what Podman records
/// of a CDI device) holds the GPUs whose minor number is M: NVML's minor number, which
/// here is not the index. A node no GPU has is said as unmapped; the driver's own nodes
/// hold nothing.
#[test]
fn device_nodes_hold_the_gpus_of_their_minor_numbers() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new(&minor_numbers());
    let image = docker::test_image();
    let folder = project(&image, &[("two", "gpus = 2\n")]);
    let holders = Holders::given(&[
        vec![
            "--device",
            "/dev/null:/dev/nvidia20",
            "--device",
            "/dev/null:/dev/nvidiactl",
        ],
        vec![
            "--device",
            "/dev/null:/dev/nvidia21",
            "--device",
            "/dev/zero:/dev/nvidia99",
        ],
        vec!["--device", "/dev/null:/dev/nvidia-uvm"],
    ]);
    let (two, doctor) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
            (
                run(&["up", "two", "--dry-run", "--force", "--json"]),
                run(&["doctor", "--json"]),
            )
        },
    );
    assert_eq!(two.code, 0, "{two}");
    assert_eq!(chosen(&two.json()), [2, 3], "{two}");
    let doctor = doctor.json();
    let gpus = doctor["occupancy"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{doctor:#}"));
    let free: Vec<bool> = gpus
        .iter()
        .map(|gpu| gpu["free"].as_bool().unwrap())
        .collect();
    assert_eq!(
        free,
        [false, false, true, true, true, true, true, true],
        "{doctor:#}"
    );
    assert_eq!(gpus[0]["holders"][0]["name"], holders.names[0].as_str());
    assert_eq!(gpus[1]["holders"][0]["name"], holders.names[1].as_str());
    assert_eq!(
        doctor["occupancy"]["unmapped"],
        serde_json::json!([format!("/dev/nvidia99 ({})", holders.names[1])]),
        "{doctor:#}"
    );
}

#[test]
fn no_room_is_refused_naming_the_holders_and_unreadable_gpus_are_skipped() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPU 7's memory cannot be read: never picked, and said.
    let machine = Machine::new("gpu.7.fail=memory_info:999\n");
    let image = docker::test_image();
    let folder = project(&image, &[("two", "gpus = 2\n"), ("one", "gpus = 1\n")]);
    let holders = Holders::create(&["\"device=0,1,2,3,4,5\""]);
    let (two, one) = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            (
                envctl(
                    folder.path(),
                    &machine,
                    "",
                    &["up", "two", "--dry-run", "--force"],
                ),
                envctl(
                    folder.path(),
                    &machine,
                    "",
                    &["up", "one", "--dry-run", "--force", "--json"],
                ),
            )
        },
    );
    assert_eq!(two.code, 1, "{two}");
    assert!(
        two.stderr
            .contains("error: no room on this host's GPUs: 2 GPUs asked for, 1 free"),
        "{two}"
    );
    assert!(
        two.stderr
            .contains(&format!("held: GPU 0: {} (created)", holders.names[0])),
        "{two}"
    );
    assert!(
        two.stderr
            .contains("skipped: GPU 7: NVML could not read its memory"),
        "{two}"
    );
    assert!(
        two.stderr
            .contains("hint: `envctl doctor` shows who holds each GPU"),
        "{two}"
    );
    assert!(two.stdout.is_empty(), "{two}");
    assert_eq!(one.code, 0, "{one}");
    let one = one.json();
    assert_eq!(chosen(&one), [6]);
    assert!(
        one["placement"]["skipped"][0]
            .as_str()
            .is_some_and(|line| line.starts_with("GPU 7: NVML could not read its memory")),
        "{one:#}"
    );
}

/// A CDI spec naming each GPU of `machine` by UUID, so Podman 5.4 starts containers placed
/// on them: each adds `ENVCTL_TEST_GPU_<index>=<uuid>` and, as NVIDIA's specs do, the
/// GPU's node `/dev/nvidia<minor>` in the container (minor [`MINOR_BASE`] + index, as the
/// machine's `minor_number`s say when it has them), made with `mknod` as /dev/null's 1:3
/// in `nodes`; and `all`, every GPU's edits at once. Removed on drop.
struct CdiSpec(PathBuf);

impl CdiSpec {
    fn write(machine: &Machine, nodes: &Path) -> Option<CdiSpec> {
        let folder = std::env::var_os(CDI_DIR_ENV)?;
        let devices: Vec<Value> = machine
            .uuids
            .iter()
            .enumerate()
            .map(|(index, uuid)| {
                let node = nodes.join(format!("gpu{index}"));
                crate::support::engines::null_device_node(&node);
                serde_json::json!({
                    "name": uuid,
                    "containerEdits": {
                        "env": [format!("ENVCTL_TEST_GPU_{index}={uuid}")],
                        "deviceNodes": [{
                            "path": format!("/dev/nvidia{}", MINOR_BASE + index),
                            "hostPath": node,
                            "permissions": "rw"
                        }]
                    }
                })
            })
            .collect();
        // `all`, as `nvidia-ctk cdi generate` writes it: every GPU's edits at once.
        let mut devices = devices;
        let every: Vec<Value> = devices
            .iter()
            .map(|device| device["containerEdits"].clone())
            .collect();
        devices.push(serde_json::json!({
            "name": "all",
            "containerEdits": {
                "env": every.iter().flat_map(|edits| edits["env"].as_array().unwrap().clone()).collect::<Vec<_>>(),
                "deviceNodes": every.iter().flat_map(|edits| edits["deviceNodes"].as_array().unwrap().clone()).collect::<Vec<_>>()
            }
        }));
        let spec = serde_json::json!({
            "cdiVersion": "0.6.0",
            "kind": "nvidia.com/gpu",
            "devices": devices
        });
        std::fs::create_dir_all(&folder).unwrap();
        let path =
            Path::new(&folder).join(format!("envctl-test-placement-{}.json", std::process::id()));
        std::fs::write(&path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
        Some(CdiSpec(path))
    }
}

impl Drop for CdiSpec {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The Podman 5.4 service these tests need: `None` (said as a skip) only where no engine
/// is required; with `ENVCTL_REQUIRE_DOCKER=1` its absence fails `test`.
fn podman_5_4(test: &str) -> Option<crate::support::engines::TestEngine> {
    let podman = engines()?
        .into_iter()
        .find(|engine| engine.family == Family::Podman && engine.version_pair() >= (5, 4));
    if podman.is_none() {
        docker::skip_or_panic(
            "no Podman 5.4 service",
            test,
            "ENVCTL_TEST_PODMAN names no Podman 5.4 or newer (.ci/podman.sh starts one)",
        );
    }
    podman
}

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
    // --force: doctor's checks (no NVIDIA driver here) would refuse before placement.
    let runs = ups_at_once(&podman, folder.path(), &machine, &names, &[]);
    let mut taken: Vec<String> = Vec::new();
    for (name, run) in names.iter().zip(&runs) {
        assert_eq!(run.code, 0, "[{}] up {name}:\n{run}", podman.name);
        let report = run.json();
        assert_eq!(report["placement"]["placement"], "free", "{report:#}");
        let inspected = podman.inspect("container", &format!("envctl-{name}"));
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
        taken.extend(uuids);
    }
    let mut distinct = taken.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 8, "GPUs shared between the four: {taken:?}");

    // `ps` shows each container's GPUs by index.
    let ps = envctl(folder.path(), &machine, &podman.host, &["ps", "--json"]);
    assert_eq!(ps.code, 0, "{ps}");
    let ps = ps.json();
    for row in ps["containers"].as_array().unwrap() {
        if names
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

    // What Podman records of a CDI device: its nodes, not its name (so other tools'
    // containers on Podman are seen only through requests they keep, and envctl's by label).
    let first = format!("envctl-{}", names[0]);
    let inspected = podman.inspect("container", &first);
    eprintln!(
        "Podman HostConfig.Devices: {}, DeviceRequests: {}",
        inspected["HostConfig"]["Devices"], inspected["HostConfig"]["DeviceRequests"]
    );

    // A stopped container keeps its pinned GPUs: while another holds one of them, `up`
    // does not start it again; once that one is gone, it does.
    let first_gpus = inspected["Config"]["Labels"]["envctl.gpus"]
        .as_str()
        .unwrap()
        .trim_start_matches("devices=")
        .to_string();
    let first_uuid = first_gpus.split(',').next().unwrap().to_string();
    podman.docker_stdout(["stop", "-t", "1", first.as_str()]);
    let squatter = unique_name("squatter");
    let _squatter_guard = podman.container_guard(squatter.clone());
    podman.docker_stdout([
        "create",
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.gpus=devices={first_uuid}"),
        "--name",
        &squatter,
        &image,
    ]);
    let blocked = envctl(
        folder.path(),
        &machine,
        &podman.host,
        &["up", &names[0], "--force"],
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
    let stopped = podman.inspect("container", &first);
    assert_eq!(stopped["State"]["Running"], false, "{blocked}");
    podman.docker_stdout(["rm", "-f", squatter.as_str()]);
    let again = envctl(
        folder.path(),
        &machine,
        &podman.host,
        &["up", &names[0], "--force"],
    );
    assert_eq!(again.code, 0, "{again}");
    assert!(again.stderr.contains("started the existing"), "{again}");

    // On a full host, `up` of a running one meets it rather than placing it again.
    let met = envctl(
        folder.path(),
        &machine,
        &podman.host,
        &["up", &names[1], "--force"],
    );
    assert_eq!(met.code, 0, "{met}");
    assert!(met.stderr.contains("already running"), "{met}");

    // A fifth finds no room, and makes nothing.
    let fifth = unique_name("place");
    let fifth_folder = project(&image, &[(&fifth, "gpus = 1\n")]);
    let _fifth_guard = podman.container_guard(format!("envctl-{fifth}"));
    let refused = envctl(
        fifth_folder.path(),
        &machine,
        &podman.host,
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
        !podman.container_exists(&format!("envctl-{fifth}")),
        "{refused}"
    );

    // `up --recreate` of a changed profile places the new container afresh: with one of
    // the old one's GPUs held by another container now, the new one avoids it.
    podman.docker_stdout(["rm", "-f", containers[3].as_str()]);
    let squatter = unique_name("squatter");
    let _squatter_guard = podman.container_guard(squatter.clone());
    podman.docker_stdout([
        "create",
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.gpus=devices={first_uuid}"),
        "--name",
        &squatter,
        &image,
    ]);
    std::fs::write(
        folder
            .path()
            .join("envctl")
            .join(format!("{}.toml", names[0])),
        format!("image = \"{image}\"\ngpus = 2\nenv = {{ CHANGED = \"1\" }}\n"),
    )
    .unwrap();
    let recreated = envctl(
        folder.path(),
        &machine,
        &podman.host,
        &["up", &names[0], "--force", "--recreate"],
    );
    assert_eq!(recreated.code, 0, "{recreated}");
    assert!(
        recreated.stderr.contains("recreated and started"),
        "{recreated}"
    );
    let now = podman.inspect("container", &first);
    let label = now["Config"]["Labels"]["envctl.gpus"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !label.contains(&first_uuid),
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

#[test]
fn doctor_names_the_container_each_gpu_process_runs_in() {
    if !docker::require_daemon() {
        return;
    }
    // A real running container's main process stands in for a training process on GPU 3
    // (NVML's answer is the stand-in's; the PID and its cgroup are the kernel's).
    let name = unique_name("gpu-process");
    let _guard = docker::ContainerGuard::new(name.clone());
    docker::docker_stdout([
        "run",
        "-d",
        "--label",
        TEST_LABEL,
        "--name",
        &name,
        &docker::test_image(),
        "sleep",
        "600",
    ]);
    let pid = docker::docker_stdout(["inspect", "--format", "{{.State.Pid}}", &name]);
    let machine = Machine::new(&format!(
        "gpu.3.processes={}:1073741824,999999:1024\n",
        pid.trim()
    ));
    let folder = tempfile::tempdir().unwrap();
    let doctor = envctl(folder.path(), &machine, "", &["doctor", "--json"]);
    let report = doctor.json();
    let processes = &report["occupancy"]["gpus"][3]["processes"];
    assert_eq!(
        processes[0]["pid"].as_u64(),
        pid.trim().parse::<u64>().ok(),
        "{report:#}"
    );
    assert_eq!(processes[0]["container"], name.as_str(), "{report:#}");
    assert_eq!(processes[0]["used_memory_bytes"], 1_073_741_824_u64);
    // A PID that is no process now belongs to no container, and says so.
    assert!(processes[1]["container"].is_null(), "{report:#}");
    let human = envctl(folder.path(), &machine, "", &["doctor"]);
    assert!(
        human.stdout.contains(&format!(
            "2 processes ({} in {name}, 999999 in no running container)",
            pid.trim()
        )),
        "{human}"
    );
}

#[test]
fn a_placed_up_that_docker_cannot_start_leaves_nothing() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // Docker without an NVIDIA runtime creates the placed container and refuses to start
    // it: `up` says where it placed it, then why it failed, and removes what it made.
    let machine = Machine::new("");
    let name = unique_name("placed");
    let folder = project(&docker::test_image(), &[(&name, "gpus = 2\n")]);
    let container = format!("envctl-{name}");
    let _guard = docker::ContainerGuard::new(container.clone());
    let up = envctl(folder.path(), &machine, "", &["up", &name, "--force"]);
    assert_eq!(up.code, 1, "{up}");
    assert!(up.stderr.contains("placement: GPUs "), "{up}");
    assert!(up.stderr.contains("could not select device driver"), "{up}");
    assert!(!docker::container_exists(&container), "{up}");
}

#[test]
fn a_bad_cache_a_bad_flag_and_a_planted_link_hurt_nothing() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new("");
    let folder = project(&docker::test_image(), &[("two", "gpus = 2\n")]);
    // `--gpus` is read as `docker run --gpus` reads it; anything else is invalid input.
    let bad_flag = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force", "--gpus", "two gpus"],
    );
    assert_eq!(bad_flag.code, 2, "{bad_flag}");
    assert!(bad_flag.stderr.contains("--gpus"), "{bad_flag}");
    // A cache that is not JSON is said and ignored: the holders are the engine's.
    let cache = folder.path().join("home/.cache/envctl");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("gpu-requests.json"), "not json {").unwrap();
    let holders = Holders::create(&["device=0"]);
    let run = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            envctl(
                folder.path(),
                &machine,
                "",
                &["up", "two", "--dry-run", "--force", "--json"],
            )
        },
    );
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stderr.contains("ignoring the GPU request cache"),
        "{run}"
    );
    assert_eq!(chosen(&run.json()), [1, 2], "{run}");
    // Rewritten by envctl, now JSON with the holder's request.
    let written = std::fs::read_to_string(cache.join("gpu-requests.json")).unwrap();
    assert!(written.contains("\"devices\":[\"0\"]"), "{written}");
    // A link planted in its place is never written through.
    let victim = folder.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(cache.join("gpu-requests.json")).unwrap();
    std::os::unix::fs::symlink(&victim, cache.join("gpu-requests.json")).unwrap();
    let _more = Holders::create(&["device=3"]);
    let linked = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force"],
    );
    assert_eq!(linked.code, 0, "{linked}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "keep",
        "{linked}"
    );
}

/// Issue 28: a GPU no container holds but a process uses (another user's script) or
/// whose memory is in use is busy, not free: doctor says whose and how much, placement
/// takes an idle GPU first and says so when it must share a busy one, and
/// `placement = "idle"` refuses instead.
#[test]
fn busy_gpus_are_said_placed_last_and_refused_by_idle_placement() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // GPUs 0–5 run another user's process (57 GiB each), GPU 6 has 60 GB in use by no
    // process NVML lists, GPU 7 is idle.
    let mut extra: String = (0..6)
        .map(|index| format!("gpu.{index}.processes={}:61203283968\n", 4_000_000 + index))
        .collect();
    extra.push_str("gpu.6.memory_used=60000000000\n");
    let machine = Machine::new(&extra);
    let image = docker::test_image();
    let folder = project(
        &image,
        &[
            ("two", "gpus = 2\n"),
            ("one", "gpus = 1\n"),
            ("strict", "gpus = 2\nplacement = \"idle\"\n"),
        ],
    );
    let (doctor, two, one, strict) = quietly("", &|_| false, || {
        let run = |arguments: &[&str]| envctl(folder.path(), &machine, "", arguments);
        (
            run(&["doctor", "--json"]),
            run(&["up", "two", "--dry-run", "--force", "--json"]),
            run(&["up", "one", "--dry-run", "--force", "--json"]),
            run(&["up", "strict", "--dry-run", "--force"]),
        )
    });
    let report = doctor.json();
    let gpus = report["occupancy"]["gpus"].as_array().unwrap();
    let busy = gpus[0]["busy"]
        .as_str()
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        busy.contains("1 compute process")
            && busy.contains("PID 4000000")
            && busy.contains("57.0 GiB"),
        "{busy}"
    );
    assert!(
        gpus[6]["busy"]
            .as_str()
            .unwrap()
            .contains("55.9 GiB of its memory"),
        "{report:#}"
    );
    assert!(gpus[7]["busy"].is_null(), "{report:#}");
    let human = envctl(folder.path(), &machine, "", &["doctor"]);
    assert!(
        human
            .stdout
            .contains("! GPU 0: busy (no container holds it)"),
        "{human}"
    );

    // One GPU: the idle one, without a word of sharing.
    assert_eq!(one.code, 0, "{one}");
    assert_eq!(chosen(&one.json()), [7], "{one}");
    assert!(!one.stderr.contains("busy"), "{one}");
    // Two: the idle one and the least used busy one, said.
    assert_eq!(two.code, 0, "{two}");
    assert_eq!(chosen(&two.json()), [0, 7], "{two}");
    let said = two.json()["placement"]["skipped"].to_string();
    assert!(
        said.contains("GPU 0 is busy but no idle GPU is left, so it is shared"),
        "{two}"
    );
    // `placement = "idle"`: no room rather than sharing.
    assert_eq!(strict.code, 1, "{strict}");
    assert!(
        strict.stderr.contains("2 GPUs asked for, 1 free"),
        "{strict}"
    );
    assert!(
        strict
            .stderr
            .contains("GPU 6 is busy (`placement = \"idle\"`)"),
        "{strict}"
    );
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

/// `up --dry-run --json` shows the body `up` then sends, for each GPU form each engine
/// here can take: the GPU request decided once (`gpus = "optional"` by NVML *and* the
/// daemon), placed and written in the engine's form by the same code. Docker without an
/// NVIDIA runtime: `optional` on a host whose NVML sees eight GPUs runs without them, in
/// the dry run as in `up`. Podman 4.3 (drops GPU requests): a count is refused by both,
/// `optional` runs without. Podman 5.4 (CDI, a spec naming the GPUs by UUID): a count
/// pinned to the same GPUs, a named GPU and `optional` (every GPU) are what the container
/// was given.
#[test]
fn the_dry_run_body_is_the_body_up_sends_for_every_gpu_form() {
    let Some(engines) = engines() else {
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
    let named = format!("gpus = [\"{}\"]\n", machine.uuids[5]);
    for engine in &engines {
        let forms: Vec<(&str, &str)> = match (engine.family, engine.version_pair() >= (5, 4)) {
            (Family::Docker, _) => vec![("optional", "gpus = \"optional\"\n")],
            (Family::Podman, false) => vec![
                ("optional", "gpus = \"optional\"\n"),
                ("count", "gpus = 2\n"),
            ],
            (Family::Podman, true) => vec![
                ("optional", "gpus = \"optional\"\n"),
                ("count", "gpus = 2\n"),
                ("named", named.as_str()),
            ],
        };
        let image = engine.test_image();
        let names: Vec<String> = forms.iter().map(|_| unique_name("plan")).collect();
        // Podman 4.3 raises `nofile` past what this sandbox allows (no CAP_SYS_RESOURCE).
        let texts: Vec<String> = forms
            .iter()
            .map(|(_, rest)| format!("{rest}[ulimits]\nnofile = 1024\nnproc = 1024\n"))
            .collect();
        let profiles: Vec<(&str, &str)> = names
            .iter()
            .zip(&texts)
            .map(|(name, rest)| (name.as_str(), rest.as_str()))
            .collect();
        let folder = project(&image, &profiles);
        for (name, (form, _)) in names.iter().zip(&forms) {
            let container = format!("envctl-{name}");
            let _guard = engine.container_guard(container.clone());
            let mine = |other: &str| other == container;
            let (dry_run, up) = quietly(&engine.host, &mine, || {
                engine.docker(["rm", "-f", container.as_str()]);
                // --force: doctor's checks (no NVIDIA driver here) would refuse first.
                let dry_run = envctl(
                    folder.path(),
                    &machine,
                    &engine.host,
                    &["up", name, "--dry-run", "--force", "--json"],
                );
                let up = envctl(
                    folder.path(),
                    &machine,
                    &engine.host,
                    &["up", name, "--force", "--json"],
                );
                (dry_run, up)
            });
            let said = format!("[{} {form}]\ndry run:\n{dry_run}\nup:\n{up}", engine.name);
            assert_eq!(dry_run.code, up.code, "the dry run and up disagree: {said}");
            if up.code != 0 {
                assert_eq!(
                    (engine.family, *form),
                    (Family::Podman, "count"),
                    "only a count on Podman 4.3 is refused: {said}"
                );
                continue;
            }
            let planned = dry_run.json()["body"].clone();
            let inspected = engine.inspect("container", &container);
            let (config, host) = (&inspected["Config"], &inspected["HostConfig"]);
            assert_eq!(
                config["Labels"]["envctl.gpus"], planned["Labels"]["envctl.gpus"],
                "the GPUs held: {said}"
            );
            // Unset is the engine's default (Docker writes its 64 MiB).
            if !planned["HostConfig"]["ShmSize"].is_null() {
                assert_eq!(host["ShmSize"], planned["HostConfig"]["ShmSize"], "{said}");
            }
            let env = config["Env"].to_string();
            for entry in planned["Env"].as_array().into_iter().flatten() {
                assert!(env.contains(entry.as_str().unwrap()), "{entry}: {said}");
            }
            let requested = &planned["HostConfig"]["DeviceRequests"];
            let gives_gpus = !(*form == "optional" && engine.version_pair() < (5, 4))
                && engine.family == Family::Podman;
            if !gives_gpus {
                // No GPUs in either: the dry run shows none, and the container has none.
                assert!(
                    requested.as_array().is_none_or(Vec::is_empty),
                    "the dry run asks for GPUs up does not give: {said}"
                );
                assert!(
                    host["DeviceRequests"].as_array().is_none_or(Vec::is_empty),
                    "{said}"
                );
                continue;
            }
            // Podman resolved the CDI names the dry run showed into exactly these GPUs.
            let names: Vec<&str> = requested[0]["DeviceIDs"]
                .as_array()
                .unwrap_or_else(|| panic!("no CDI names: {said}"))
                .iter()
                .map(|name| name.as_str().unwrap())
                .collect();
            let given: Vec<usize> = (0..8)
                .filter(|index| env.contains(&format!("ENVCTL_TEST_GPU_{index}=")))
                .collect();
            let shown: Vec<usize> = if names == ["nvidia.com/gpu=all"] {
                (0..8).collect()
            } else {
                names
                    .iter()
                    .map(|name| {
                        let uuid = name.trim_start_matches("nvidia.com/gpu=");
                        machine
                            .uuids
                            .iter()
                            .position(|known| known == uuid)
                            .unwrap()
                    })
                    .collect()
            };
            assert_eq!(given, shown, "{said}");
        }
    }
}

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

/// The UUIDs an `up --json` report says placement pinned.
fn pinned(report: &Value) -> Vec<String> {
    report["placement"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no pinned GPUs: {report:#}"))
        .iter()
        .map(|gpu| gpu["uuid"].as_str().unwrap().to_string())
        .collect()
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

/// Every run of a round, for a failure's message.
fn shown(runs: &[Run]) -> String {
    runs.iter().map(|run| format!("{run}\n")).collect()
}

/// A container of the daemon lock's name that envctl did not make (no
/// `envctl.placement-lock` label: someone's own) is never broken as a dead holder's lock:
/// `up` stops at once naming it, and nothing is removed. A fake daemon answers, so no
/// other test's placement meets the planted name.
#[test]
fn a_lock_name_taken_by_someone_elses_container_is_named_never_removed() {
    use crate::support::fake_daemon::Reply;
    let daemon = fake_daemon_of_this_host(|request| {
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create") => Some(Reply::json(
                409,
                r#"{"message":"Conflict. The container name \"/envctl-gpu-placement-lock\" is already in use"}"#,
            )),
            ("GET", "/containers/envctl-gpu-placement-lock/json") => Some(Reply::json(
                200,
                r#"{"Id":"planted0","Name":"/envctl-gpu-placement-lock","Image":"sha256:0","State":{"Status":"created","Running":false,"ExitCode":0},"Config":{"Image":"busybox:1","Labels":{"com.example.owner":"mallory"}},"HostConfig":{},"Mounts":[]}"#,
            )),
            _ => None,
        }
    });
    let _turn = turn();
    let machine = Machine::new("");
    let profile = unique_name("planted");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .contains("a container named `envctl-gpu-placement-lock` that envctl did not make"),
        "{run}"
    );
    let requests = daemon.requests();
    assert!(
        !requests.iter().any(|request| request.starts_with("DELETE")),
        "{requests:#?}"
    );
}

/// A volume named as the daemon's GPU record that envctl did not make (no
/// `envctl.gpu-record` label) is someone's: an `up` that places on this host says so and
/// never removes it to write its record.
#[test]
fn a_record_name_taken_by_someone_elses_volume_is_left_as_it_is() {
    use crate::support::fake_daemon::Reply;
    let daemon = fake_daemon_of_this_host(|request| {
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create")
                if request.target.contains("envctl-gpu-placement-lock") =>
            {
                Some(Reply::json(201, r#"{"Id":"lock0","Warnings":[]}"#))
            }
            ("DELETE", "/containers/lock0") => Some(Reply::no_content()),
            ("GET", "/volumes/envctl-gpus") => Some(Reply::json(
                200,
                r#"{"Name":"envctl-gpus","Driver":"local","Mountpoint":"/x","Labels":{"com.example.owner":"mallory"},"Scope":"local","Options":{}}"#,
            )),
            _ => None,
        }
    });
    let _turn = turn();
    let machine = Machine::new("");
    let profile = unique_name("record");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    assert!(
        run.stderr
            .contains("the volume envctl-gpus on this daemon is not envctl's GPU record"),
        "{run}"
    );
    let requests = daemon.requests();
    assert!(
        !requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("/volumes/")),
        "{requests:#?}"
    );
    // The lock it took is released whatever became of the rest.
    assert!(
        requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("/containers/lock0")),
        "{requests:#?}"
    );
}

/// A fake daemon that names its host as this machine (so `up` places with the stand-in
/// NVML under both locks), has the image `busybox:1` and no container; `route` answers
/// first.
fn fake_daemon_of_this_host(
    route: impl Fn(&crate::support::fake_daemon::Request) -> Option<crate::support::fake_daemon::Reply>
    + Send
    + Sync
    + 'static,
) -> crate::support::fake_daemon::FakeDaemon {
    use crate::support::fake_daemon::{FakeDaemon, Reply, standard};
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let info = format!(
        r#"{{"Name":"{hostname}","OperatingSystem":"Debian","OSType":"linux","Runtimes":{{"runc":{{}}}},"DefaultRuntime":"runc","NCPU":2,"MemTotal":1000000000,"SecurityOptions":[],"CgroupDriver":"cgroupfs","CgroupVersion":"1"}}"#
    );
    let image = r#"{"Id":"sha256:0","RepoTags":["busybox:1"],"RepoDigests":[],"Config":{"Env":[],"Labels":{}}}"#;
    FakeDaemon::start(move |request| {
        if let Some(reply) = standard(request).or_else(|| route(request)) {
            return Some(reply);
        }
        match (request.method.as_str(), request.route()) {
            ("GET", "/info") => Some(Reply::json(200, info.clone())),
            ("GET", "/images/busybox:1/json" | "/images/sha256:0/json") => {
                Some(Reply::json(200, image))
            }
            ("GET", "/containers/json") => Some(Reply::json(200, "[]")),
            _ => None,
        }
    })
}
