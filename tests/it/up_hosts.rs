//! `up PROFILE --hosts` (issue 38, item 4) over real daemons: this machine's, with eight
//! stand-in GPUs (`placement::Machine`), the second daemon of `.ci/dockerd2.sh` (another
//! host: its GPUs are what the daemon itself tells), and an endpoint where nothing
//! listens. The chosen host is named with why, every other one with why not; the container
//! is made there as `up -H` makes it; no room anywhere is one error naming each host's
//! reason, and its hint, run, lists the hosts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::placement::Machine;
use crate::remote_daemons::{SOCKET, dockerd2, free_port};
use crate::support::cli::{Envctl, Run};
use crate::support::docker::{ContainerGuard, TEST_LABEL, docker_stdout, test_image, unique_name};
use crate::support::server::{Fixture, FixtureProcess, Server};

const LOCAL: &str = "unix:///var/run/docker.sock";

/// envctl in `folder` with this machine's eight stand-in GPUs and a GPU lock of the
/// folder's own, no `DOCKER_HOST`.
fn on_this_machine(folder: &Path, machine: &Machine) -> Envctl {
    Envctl::in_folder(folder)
        .nvml_file(&machine.fixture)
        .env("ENVCTL_GPU_LOCK", folder.join("gpus.lock"))
        .timeout(Duration::from_secs(120))
}

/// A folder whose `./envctl/NAME.toml` runs `image` with `gpus`.
fn project(name: &str, image: &str, gpus: &str) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{name}.toml")),
        format!(
            "image = \"{image}\"\ngpus = {gpus}\nmemory = \"64m\"\ncommand = [\"sleep\", \"600\"]\n\
             "
        ),
    )
    .unwrap();
    folder
}

/// The line `host NAME: …` of `run`'s stderr.
fn host_line<'a>(run: &'a Run, host: &str) -> &'a str {
    run.stderr
        .lines()
        .find(|line| line.starts_with(&format!("host {host}: ")))
        .unwrap_or_else(|| panic!("no line for {host}: {run}"))
}

/// A GPU profile fits where GPUs are seen free: this machine's daemon is chosen (with
/// `--force`, as `up` starts despite its failed check: it has no NVIDIA runtime), the
/// others are named with why not (the stopped one unreachable), and the dry run shows the
/// container it would make there, on GPUs of this machine's.
#[test]
fn up_hosts_chooses_where_the_gpus_are_free_and_says_why_not_elsewhere() {
    let test = "up_hosts_chooses_where_the_gpus_are_free_and_says_why_not_elsewhere";
    let Some(_engine) = dockerd2(test) else {
        return;
    };
    // The chooser learns the second daemon's GPUs (a probe, a record written).
    let _record = crate::support::docker::BuildLock::acquire_at(
        &crate::support::docker::dockerd2_record_lock(),
    );
    let machine = Machine::new("");
    let name = unique_name("hosts");
    let folder = project(&name, &test_image(), "2");
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let remote = format!("unix://{SOCKET}");
    let hosts = format!("{LOCAL},{remote},{stopped}");
    // This machine's daemon has no NVIDIA runtime: without `--force` its check fails.
    let checked = on_this_machine(folder.path(), &machine)
        .args(["up", &name, "--hosts", &hosts, "--dry-run"])
        .run();
    assert!(
        checked.stderr.contains("the daemon has no NVIDIA runtime")
            || host_line(&checked, LOCAL).contains("no NVIDIA runtime"),
        "{checked}"
    );
    let run = on_this_machine(folder.path(), &machine)
        .args([
            "up",
            &name,
            "--hosts",
            &hosts,
            "--dry-run",
            "--force",
            "--json",
        ])
        .run();
    assert_eq!(run.code, 0, "{run}");
    let chosen = host_line(&run, LOCAL);
    assert!(chosen.contains(": chosen: "), "{run}");
    assert!(chosen.contains("GPUs free for 2"), "{run}");
    assert!(
        host_line(&run, &stopped).contains("not chosen: cannot be reached"),
        "{run}"
    );
    assert!(!host_line(&run, &remote).contains(": chosen: "), "{run}");
    let plan = run.json();
    let pinned = plan["placement"]["gpus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(pinned.len(), 2, "{plan:#}");
    for gpu in pinned {
        let uuid = gpu["uuid"].as_str().unwrap_or_default().to_string();
        assert!(
            machine.uuids.contains(&uuid),
            "{uuid} is not this machine's: {plan:#}"
        );
    }
}

/// No host has room: one error naming each host's reason, exit 1; its hint is a command,
/// and run, it lists every host.
#[test]
fn up_hosts_with_no_room_anywhere_names_each_hosts_reason() {
    let test = "up_hosts_with_no_room_anywhere_names_each_hosts_reason";
    let Some(_engine) = dockerd2(test) else {
        return;
    };
    // The chooser learns the second daemon's GPUs (a probe, a record written).
    let _record = crate::support::docker::BuildLock::acquire_at(
        &crate::support::docker::dockerd2_record_lock(),
    );
    let machine = Machine::new("");
    let name = unique_name("hosts-full");
    let folder = project(&name, &test_image(), "12");
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let remote = format!("unix://{SOCKET}");
    let hosts = format!("{LOCAL},{remote},{stopped}");
    let run = on_this_machine(folder.path(), &machine)
        .args(["up", &name, "--hosts", &hosts])
        .run();
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr.contains(&format!(
            "error: profile `{name}` fits on none of the hosts"
        )),
        "{run}"
    );
    for host in [LOCAL, remote.as_str(), stopped.as_str()] {
        assert!(
            run.stderr
                .lines()
                .any(|line| line.starts_with(&format!("  {host}: "))),
            "no reason for {host}: {run}"
        );
    }
    let hint = run
        .stderr
        .lines()
        .find_map(|line| {
            line.split('`')
                .nth(1)
                .filter(|words| words.starts_with("envctl ps --hosts"))
        })
        .unwrap_or_else(|| panic!("no ps command in the hint: {run}"))
        .to_string();
    let words: Vec<&str> = hint.split(' ').skip(1).collect();
    let listed = on_this_machine(folder.path(), &machine).args(&words).run();
    assert!(listed.code <= 1, "{listed}");
    assert!(
        listed.stdout.contains("HOST") || listed.stderr.contains(&stopped),
        "{listed}"
    );
    // Nothing was made anywhere.
    assert!(
        docker_stdout(["ps", "-aq", "--filter", &format!("name=envctl-{name}")]).is_empty(),
        "{run}"
    );
}

/// A profile without GPUs goes where its image already is, and is started there for real
/// (as `up -H` would); `-H` beside `--hosts` is a usage error.
#[test]
fn up_hosts_prefers_the_image_present_and_starts_it_there() {
    let test = "up_hosts_prefers_the_image_present_and_starts_it_there";
    let Some(_engine) = dockerd2(test) else {
        return;
    };
    let machine = Machine::new("");
    let name = unique_name("hosts-image");
    // A tag only this machine's daemon has.
    let image = format!("envctl-test/{name}:1");
    docker_stdout(["tag", &test_image(), &image]);
    let _image = crate::support::docker::ImageGuard::new(image.clone());
    let folder = project(&name, &image, "\"none\"");
    let container = format!("envctl-{name}");
    let _container = ContainerGuard::new(container.clone());
    let remote = format!("unix://{SOCKET}");
    let hosts = format!("{remote},{LOCAL}");
    let run = on_this_machine(folder.path(), &machine)
        .args(["up", &name, "--hosts", &hosts])
        .run();
    assert_eq!(run.code, 0, "{run}");
    assert!(
        host_line(&run, LOCAL).contains(": chosen: image present"),
        "{run}"
    );
    assert!(host_line(&run, &remote).contains("image to pull"), "{run}");
    let labels = docker_stdout([
        "inspect",
        "--format",
        "{{index .Config.Labels \"envctl.profile\"}} {{.State.Running}}",
        &container,
    ]);
    assert_eq!(labels.trim(), format!("{name} true"));

    let both = on_this_machine(folder.path(), &machine)
        .args(["-H", LOCAL, "up", &name, "--hosts", &hosts])
        .run();
    assert_eq!(both.code, 2, "{both}");
    assert!(both.stderr.contains("leave out -H/--context"), "{both}");
    let down = on_this_machine(folder.path(), &machine)
        .args(["down", &name, "--rm"])
        .run();
    assert_eq!(down.code, 0, "{down}");
}

/// `up PROFILE --hosts @team` from a laptop (no NVML, a host name of its own) over three
/// servers of the tests' own (`support::server`), whose GPUs only their daemons can tell
/// (their stand-in nvidia-smi): `full` has its two GPUs held by a container; `busy` has
/// GPUs 0–1 held and GPU 2 running a compute process of no container holding it, and a
/// GPU record a laptop's `doctor` left there (which keeps no process: the chooser must not
/// believe it for room); `roomy` has GPU 0 held, three free. A `gpus = 2` profile goes to
/// `roomy`, every host says why, and the container there is given two GPUs none of whose
/// holders or processes were there (a dry run before it probes nothing where a record
/// tells the GPUs, and says so). Then a `gpus = 4` profile fits nowhere: one error naming
/// each server's reason, and nothing is made.
#[test]
fn up_hosts_from_a_laptop_counts_each_servers_free_gpus_through_its_daemon() {
    let test = "up_hosts_from_a_laptop_counts_each_servers_free_gpus_through_its_daemon";
    let Some(team) = set_up_team(test) else {
        return;
    };
    // A laptop's doctor leaves `busy` a GPU record (its GPUs, no processes).
    let doctor = team.laptop(Some(team.busy.host()), &["doctor", &team.name]);
    assert!(
        team.busy
            .docker(&["volume", "inspect", "envctl-gpus"])
            .status
            .success(),
        "no record on busy: {doctor}"
    );

    a_dry_run_judges_busy_by_its_record_and_probes_nothing(&team);
    let probed = two_gpus_go_to_roomy_counted_by_a_probe(&team);
    four_gpus_fit_nowhere_and_every_reason_is_named(&team, probed);
}

/// Three servers of the test's own, each with the GPUs it holds, and the laptop's project
/// folder with the two profiles and the team file naming them.
struct Team {
    full: Server,
    busy: Server,
    roomy: Server,
    roomy_fixture: Fixture,
    folder: tempfile::TempDir,
    /// The `gpus = 2` profile.
    name: String,
    /// The `gpus = 4` profile.
    wide: String,
}

impl Team {
    /// envctl on a laptop, against `DOCKER_HOST` when one is given.
    fn laptop(&self, docker_host: Option<String>, arguments: &[&str]) -> Run {
        let laptop = Envctl::on_a_laptop(self.folder.path(), None)
            .env(
                "ENVCTL_NVML_LIBRARY",
                self.folder.path().join("no-nvml-here.so"),
            )
            .args(arguments)
            .timeout(Duration::from_secs(180));
        match docker_host {
            Some(docker_host) => laptop.daemon(&docker_host),
            None => laptop,
        }
        .run()
    }
}

/// Starts `full` (both GPUs held), `busy` (GPUs 0–1 held, GPU 2 running a process of no
/// container holding it) and `roomy` (GPU 0 held), and writes the laptop's project.
fn set_up_team(test: &str) -> Option<Team> {
    let full_fixture = Fixture::gpus(
        "f0f0f0f0",
        2,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "535.161.08",
        "12.2",
    );
    let mut busy_fixture = Fixture::gpus(
        "b0b0b0b0",
        4,
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        "550.54.15",
        "12.4",
    );
    let roomy_fixture = Fixture::gpus(
        "a0a0a0a0",
        4,
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "550.54.15",
        "12.4",
    );
    let full = Server::start(test, "gpu-full", Some(&full_fixture))?;
    let busy = Server::start(test, "gpu-busy", Some(&busy_fixture))?;
    let roomy = Server::start(test, "gpu-roomy", Some(&roomy_fixture))?;
    let image = full.load_test_image();
    busy.load_test_image();
    roomy.load_test_image();
    let hold = |server: &Server, devices: &str| {
        let name = unique_name("holder");
        let gpus = format!("\"device={devices}\"");
        server.docker_ok(&[
            "run", "-d", "--name", &name, "--label", TEST_LABEL, "--gpus", &gpus, &image, "sleep",
            "600",
        ]);
        name
    };
    hold(&full, "0,1");
    hold(&busy, "0,1");
    hold(&roomy, "0");
    let other = unique_name("no-gpu");
    busy.docker_ok(&[
        "run", "-d", "--name", &other, "--label", TEST_LABEL, &image, "sleep", "600",
    ]);
    busy_fixture.processes.push(FixtureProcess {
        gpu_uuid: busy_fixture.gpus[2].uuid.clone(),
        pid: busy.container_pid(&other),
        used_memory: "4096".into(),
        name: "python".into(),
    });
    busy.set_fixture(&busy_fixture);

    let folder = tempfile::tempdir().unwrap();
    let name = unique_name("team-up");
    let wide = format!("{name}-wide");
    for (profile, gpus) in [(&name, 2), (&wide, 4)] {
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        std::fs::write(
            folder.path().join("envctl").join(format!("{profile}.toml")),
            format!("image = \"{image}\"\ngpus = {gpus}\ncommand = [\"sleep\", \"600\"]\n"),
        )
        .unwrap();
    }
    std::fs::write(
        folder.path().join("envctl").join("hosts.toml"),
        format!(
            "[hosts]\nfull = \"{}\"\nbusy = \"{}\"\nroomy = \"{}\"\n",
            full.host(),
            busy.host(),
            roomy.host()
        ),
    )
    .unwrap();
    Some(Team {
        full,
        busy,
        roomy,
        roomy_fixture,
        folder,
        name,
        wide,
    })
}

/// A dry run makes no probe where a record tells the GPUs: `busy` is judged by its record,
/// which knows no process (GPU 2 counts free there), and says so.
fn a_dry_run_judges_busy_by_its_record_and_probes_nothing(team: &Team) {
    let Team { busy, name, .. } = team;
    let since = crate::remote_facts::moment();
    let dry = team.laptop(None, &["up", name, "--hosts", "@team", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry}");
    assert!(
        host_line(&dry, "busy").contains(
            "2 GPUs free for 2 (as its daemon's GPU record keeps them, the processes on them unknown: a dry run probes nothing)"
        ),
        "{dry}"
    );
    assert!(host_line(&dry, "roomy").contains(": chosen: "), "{dry}");
    assert_eq!(crate::remote_facts::probes_since(busy, &since), 0, "{dry}");
}

/// The `gpus = 2` profile goes to `roomy`, every host says why, and the container there is
/// given two GPUs none of whose holders or processes were there; nothing is made elsewhere.
/// Returns what a host's line says of a count seen by a probe.
fn two_gpus_go_to_roomy_counted_by_a_probe(team: &Team) -> &'static str {
    let Team {
        full,
        busy,
        roomy,
        roomy_fixture,
        name,
        ..
    } = team;
    let run = team.laptop(None, &["up", name, "--hosts", "@team"]);
    assert_eq!(run.code, 0, "{run}");
    let probed = "(seen by a probe through its daemon)";
    let line = host_line(&run, "full");
    assert!(
        line.contains("not chosen: 0 GPUs free, the profile asks for 2") && line.contains(probed),
        "{run}"
    );
    // The record says four GPUs; the probe now finds GPU 2 in use as well.
    let line = host_line(&run, "busy");
    assert!(
        line.contains("not chosen: 1 GPU free, the profile asks for 2") && line.contains(probed),
        "{run}"
    );
    let line = host_line(&run, "roomy");
    assert!(
        line.contains(&format!(
            "chosen: 3 GPUs free for 2 {probed}, image present"
        )),
        "{run}"
    );
    let requests = roomy.docker_ok(&[
        "inspect",
        "--format",
        "{{json .HostConfig.DeviceRequests}}",
        &format!("envctl-{name}"),
    ]);
    let requests: serde_json::Value = serde_json::from_str(&requests).unwrap();
    let given: Vec<&str> = requests[0]["DeviceIDs"]
        .as_array()
        .unwrap_or_else(|| panic!("no GPUs named: {requests} {run}"))
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(given.len(), 2, "{requests}");
    for uuid in &given {
        assert!(
            roomy_fixture.gpus[1..].iter().any(|gpu| gpu.uuid == *uuid),
            "{uuid} is not one of roomy's free GPUs: {run}"
        );
    }
    for server in [full, busy] {
        assert_eq!(
            server
                .docker_ok(&["ps", "-aq", "--filter", "label=envctl.profile"])
                .trim(),
            "",
            "{run}"
        );
    }
    probed
}

/// Four GPUs fit nowhere now (roomy's two others are taken): one error naming every
/// server's reason, nothing made and no probe left behind.
fn four_gpus_fit_nowhere_and_every_reason_is_named(team: &Team, probed: &str) {
    let Team {
        full,
        busy,
        roomy,
        wide,
        ..
    } = team;
    let run = team.laptop(None, &["up", wide, "--hosts", "@team"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr.contains(&format!(
            "error: profile `{wide}` fits on none of the hosts"
        )),
        "{run}"
    );
    // `full` has two GPUs in all: doctor's check of the profile says so before any count.
    for (host, said) in [
        (
            "full",
            "the profile asks for 4 GPUs, this host has 2".to_string(),
        ),
        (
            "busy",
            format!("1 GPU free, the profile asks for 4 {probed}"),
        ),
        (
            "roomy",
            format!("1 GPU free, the profile asks for 4 {probed}"),
        ),
    ] {
        let said = format!("  {host}: {said}");
        assert!(
            run.stderr.lines().any(|line| line == said),
            "no `{said}`: {run}"
        );
    }
    for server in [full, busy, roomy] {
        assert_eq!(
            server
                .docker_ok(&["ps", "-aq", "--filter", &format!("name=envctl-{wide}")])
                .trim(),
            "",
            "{run}"
        );
        assert_eq!(
            crate::remote_facts::probes_left(server),
            "",
            "a probe was left behind: {run}"
        );
    }
}
