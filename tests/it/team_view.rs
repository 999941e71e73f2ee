//! The team view of issue 27 (item 5): `stats --hosts` over the local daemon, the second
//! daemon of `.ci/dockerd2.sh` over TLS and a stopped endpoint, named through a team file
//! (`envctl/hosts.toml`); the team file's resolution order and its errors. Issue 38 (item
//! 6): the same hosts streamed live, and a daemon reached through a forwarder the test
//! kills becoming a row that says why within the host's deadline, the others' rows going
//! on meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::remote_daemons::{CERTIFICATES, TLS_ENDPOINT, Way, dockerd2, envctl, free_port};
use crate::support::cli::{Envctl, Run};
use crate::support::docker::{TEST_LABEL, unique_name};

/// A container of a made-up profile (so it counts as envctl's) that sleeps, started with
/// `docker` arguments `run`'s.
pub(crate) fn sleeper(name: &str, profile: &str, image: &str) -> Vec<String> {
    [
        "run",
        "-d",
        "--name",
        name,
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.profile={profile}"),
        "--memory",
        "64m",
        image,
        "sleep",
        "600",
    ]
    .iter()
    .map(|word| word.to_string())
    .collect()
}

/// Whether the second daemon's `/info` names this machine's host.
fn dockerd2_is_this_machine(engine: &crate::support::engines::TestEngine) -> bool {
    let name = engine.docker_stdout(["info", "--format", "{{.Name}}"]);
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    name.trim() == here.trim()
}

/// A [`sleeper`] of one made-up profile on each daemon, this machine's and the second
/// one, removed when the guards go.
struct Sleepers {
    profile: String,
    local: String,
    remote: String,
    guards: (
        crate::support::docker::ContainerGuard,
        crate::support::engines::ContainerGuard,
    ),
}

impl Sleepers {
    /// Names from `word`: profile `word-…`, containers `envctl-word-local-…` and
    /// `envctl-word-remote-…`.
    fn start(engine: &crate::support::engines::TestEngine, word: &str) -> Sleepers {
        let profile = unique_name(word);
        let local = unique_name(&format!("envctl-{word}-local"));
        let remote = unique_name(&format!("envctl-{word}-remote"));
        // Guarded before they are made, so a failed start is cleaned up too.
        let guards = (
            crate::support::docker::ContainerGuard::new(local.clone()),
            engine.container_guard(remote.clone()),
        );
        crate::support::docker::docker_stdout(sleeper(
            &local,
            &profile,
            &crate::support::docker::test_image(),
        ));
        engine.docker_stdout(sleeper(&remote, &profile, &engine.test_image()));
        Sleepers {
            profile,
            local,
            remote,
            guards,
        }
    }
}

fn write_team_file(folder: &Path, text: &str) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(folder.join("envctl").join("hosts.toml"), text).unwrap();
}

/// The local daemon, the second one over TLS (named in the team file, TLS from the
/// variables as `-H` takes it) and a stopped endpoint, in one snapshot: a container on each
/// reachable daemon under its host, the second daemon's GPUs unknown (never this machine's
/// stand-in GPUs, which only the local daemon's rows get), the stopped one a row saying
/// why, exit 0, all within one host's deadline.
#[test]
fn stats_hosts_shows_every_daemon_and_says_why_one_cannot_be() {
    let Some(engine) = dockerd2("stats_hosts_shows_every_daemon_and_says_why_one_cannot_be") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let Sleepers {
        profile,
        local: local_name,
        remote: remote_name,
        guards: _guards,
    } = Sleepers::start(&engine, "team");
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    write_team_file(
        folder.path(),
        &format!(
            "[hosts]\nlocal = \"unix:///var/run/docker.sock\"\nsecond = \"{TLS_ENDPOINT}\"\nstopped = \"{stopped}\"\n"
        ),
    );
    let way = Way {
        name: "team",
        variables: vec![
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
            (
                "ENVCTL_NVML_LIBRARY".into(),
                crate::support::nvml::stub_library().into(),
            ),
            (
                "ENVCTL_NVML_STUB_FIXTURE".into(),
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/nvml/healthy-8x-h100.conf")
                    .into(),
            ),
        ],
    };
    let started = Instant::now();
    let json = envctl(
        folder.path(),
        &way,
        &["--json", "stats", "--hosts", "@team", "--once"],
    );
    let took = started.elapsed();
    assert_eq!(json.code, 0, "{json}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {json}");
    the_json_has_each_host_and_container_under_it(
        &engine,
        &json,
        &profile,
        &local_name,
        &remote_name,
    );
    let table = the_table_has_a_row_per_container_under_its_host(
        folder.path(),
        &way,
        &stopped,
        &local_name,
        &remote_name,
    );
    from_another_machine_both_daemons_gpus_are_unknown(folder.path(), &way);
    assert!(
        table.stderr.contains(&format!(
            "warning: host `{stopped}` could not be sampled (hint:"
        )),
        "{table}"
    );
    // `ps --hosts` reads the same team file.
    let ps = envctl(folder.path(), &way, &["--json", "ps", "--hosts", "second"]);
    assert_eq!(ps.code, 0, "{ps}");
    assert!(
        ps.json()["containers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["host"] == "second" && row["name"] == remote_name.as_str()),
        "{ps}"
    );
}

/// The JSON names each host in the team file's order, the second daemon's GPUs as what its
/// `/info` decides, the stopped one a row saying why, each container under its own daemon
/// only, and this machine's stand-in GPUs once, under the local daemon.
fn the_json_has_each_host_and_container_under_it(
    engine: &crate::support::engines::TestEngine,
    json: &Run,
    profile: &str,
    local_name: &str,
    remote_name: &str,
) {
    let document = json.json();
    assert_eq!(document["schema_version"], 1, "{json}");
    let states = document["hosts"].as_array().unwrap();
    let named: Vec<&str> = states
        .iter()
        .map(|state| state["host"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["local", "second", "stopped"], "{json}");
    assert_eq!(states[0]["reachable"], true, "{json}");
    assert_eq!(states[0]["gpus"], "this_machine", "{json}");
    assert_eq!(states[1]["reachable"], true, "{json}");
    assert_eq!(states[1]["endpoint"], TLS_ENDPOINT, "{json}");
    // The second daemon's GPUs are this machine's only when it names its host as this
    // one's (`.ci/dockerd2.sh` may give it a UTS namespace and a name of its own): what
    // its `/info` answers decides, never a name written here.
    let expected = if dockerd2_is_this_machine(engine) {
        "this_machine"
    } else {
        "unknown"
    };
    assert_eq!(states[1]["gpus"], expected, "{json}");
    assert_eq!(states[2]["reachable"], false, "{json}");
    assert_eq!(states[2]["error_kind"], "connection_refused", "{json}");
    assert!(states[2]["error"].as_str().is_some(), "{json}");
    let containers = document["containers"].as_array().unwrap();
    let row = |host: &str, name: &str| {
        containers
            .iter()
            .find(|row| row["host"] == host && row["name"] == name)
            .unwrap_or_else(|| panic!("no {name} on {host}: {json}"))
            .clone()
    };
    let local_row = row("local", local_name);
    let remote_row = row("second", remote_name);
    // Each container under its own daemon only.
    assert!(
        !containers
            .iter()
            .any(|row| row["host"] == "local" && row["name"] == remote_name),
        "{json}"
    );
    for row in [&local_row, &remote_row] {
        assert_eq!(row["profile"], profile, "{json}");
        assert_eq!(row["memory_limit_bytes"], 64 * 1024 * 1024, "{json}");
        assert!(row["pids"].as_u64().unwrap() >= 1, "{json}");
    }
    // This machine's stand-in GPUs once, under the first of its daemons.
    let gpus = document["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 8, "{json}");
    assert!(gpus.iter().all(|gpu| gpu["host"] == "local"), "{json}");
}

/// The table: a HOST column, a row per container under its host, the stopped host a row
/// that says why. Returns the run, whose stderr the test reads last.
fn the_table_has_a_row_per_container_under_its_host(
    folder: &Path,
    way: &Way,
    stopped: &str,
    local_name: &str,
    remote_name: &str,
) -> Run {
    let table = envctl(
        folder,
        way,
        &[
            "stats",
            "--hosts",
            &format!("local,second,{stopped}"),
            "--once",
        ],
    );
    assert_eq!(table.code, 0, "{table}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("second ") && line.contains(remote_name)),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("local ") && line.contains(local_name)),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers at")),
        "{table}"
    );
    table
}

/// From another machine (a UTS namespace named `envctl-laptop`), both daemons are
/// another machine's: their GPUs are unknown, never this machine's stand-in ones.
fn from_another_machine_both_daemons_gpus_are_unknown(folder: &Path, way: &Way) {
    let far = Envctl::on_a_laptop(folder, None)
        .args(["--json", "stats", "--hosts", "local,second", "--once"])
        .envs(way.variables.iter().map(|(key, value)| (key, value)))
        .timeout(Duration::from_secs(60))
        .run();
    assert_eq!(far.code, 0, "{far}");
    let far_document = far.json();
    for state in far_document["hosts"].as_array().unwrap() {
        assert_eq!(state["gpus"], "unknown", "{far}");
    }
    for row in far_document["containers"].as_array().unwrap() {
        assert!(row["gpu_memory_bytes"].is_null(), "{far}");
    }
    assert!(
        far_document["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .all(|gpu| gpu["uuid"].is_null() || gpu["uuid"].as_str().is_none()),
        "{far}"
    );
}

/// The team file's order: a name of `[hosts]` first (here it hides a context of the same
/// name), then a context name; `@team` is every host of it; a malformed file is an error
/// with its file, line and column (exit 2) before any daemon is asked; without one,
/// `@team` is a usage error naming where it is looked for; `hosts` is never a profile.
#[test]
fn the_team_file_names_hosts_first_and_says_where_it_is_wrong() {
    let folder = tempfile::tempdir().unwrap();
    let run = |arguments: &[&str]| {
        Envctl::in_folder(folder.path())
            .timeout(Duration::from_secs(60))
            .args(arguments)
            .run()
    };
    let missing = run(&["ps", "--hosts", "@team"]);
    assert_eq!(missing.code, 2, "{missing}");
    assert!(
        missing.stderr.contains("envctl/hosts.toml"),
        "where it is looked for: {missing}"
    );
    write_team_file(
        folder.path(),
        "[hosts]\ngpu1 = \"ssh://me@gpu1\"\ngpu2 = 3\n\"bad,name\" = \"x\"\n",
    );
    for command in ["ps", "doctor", "stats"] {
        let mut arguments = vec![command, "--hosts", "gpu1"];
        if command == "stats" {
            arguments.push("--once");
        }
        let invalid = run(&arguments);
        assert_eq!(invalid.code, 2, "{command}: {invalid}");
        assert!(
            invalid.stderr.contains("--> envctl/hosts.toml:3:8")
                && invalid.stderr.contains("--> envctl/hosts.toml:4:1")
                && invalid.stderr.contains("invalid team file: 2 problems"),
            "{command}: {invalid}"
        );
    }
    // Through the table first: `gpu1` is the table's URL, not a docker context `gpu1`
    // (which this empty DOCKER_CONFIG does not have: as a context it would be refused).
    let port = free_port();
    write_team_file(
        folder.path(),
        &format!("[hosts]\ngpu1 = \"tcp://127.0.0.1:{port}\"\n"),
    );
    let config = folder.path().join("docker-config");
    std::fs::create_dir_all(&config).unwrap();
    let ps = |list: &str| {
        Envctl::in_folder(folder.path())
            .env("DOCKER_CONFIG", &config)
            .timeout(Duration::from_secs(60))
            .args(["--json", "ps", "--hosts", list])
            .run()
    };
    let listed = ps("@team");
    assert_eq!(listed.code, 0, "{listed}");
    let document = listed.json();
    let hosts = document["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["host"], "gpu1", "{listed}");
    assert_eq!(
        hosts[0]["endpoint"],
        format!("tcp://127.0.0.1:{port}"),
        "{listed}"
    );
    assert_eq!(hosts[0]["error_kind"], "connection_refused", "{listed}");
    // Not in the table, and a context name this DOCKER_CONFIG does not know: a typo,
    // refused before anything is asked (issue 40), never a row of an unreachable host.
    let refused = ps("@team,nocontext");
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("`nocontext`"), "{refused}");
    // `hosts.toml` is the team file, never a profile.
    let profiles = run(&["--json", "profiles", "list"]);
    assert_eq!(profiles.code, 0, "{profiles}");
    assert!(!profiles.stdout.contains("\"hosts\""), "{profiles}");
}

/// A TCP forwarder (socat) to the second daemon's TLS port, in a process group of its own:
/// [`Forwarder::kill`] ends it and every connection it forked, as a server that goes away.
pub(crate) struct Forwarder {
    child: Child,
    pub endpoint: String,
}

impl Forwarder {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to the TLS
    /// endpoint (the certificate names 127.0.0.1, so TLS holds through it).
    pub(crate) fn start() -> Forwarder {
        use std::os::unix::process::CommandExt as _;
        let port = free_port();
        let child = Command::new("socat")
            .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
            .arg(format!("TCP:{}", TLS_ENDPOINT.trim_start_matches("tcp://")))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("socat (`sudo apt-get install socat`; .ci/run installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "socat never listened on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Forwarder {
            child,
            endpoint: format!("tcp://127.0.0.1:{port}"),
        }
    }

    /// Kills the forwarder and the connections it forked (its whole process group).
    pub(crate) fn kill(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The variables the team's hosts need: TLS for the `tcp://` ones (as `-H` takes it), the
/// stand-in NVML for this machine's GPUs.
pub(crate) fn team_variables() -> Vec<(String, std::ffi::OsString)> {
    vec![
        ("DOCKER_TLS_VERIFY".into(), "1".into()),
        ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
        (
            "ENVCTL_NVML_LIBRARY".into(),
            crate::support::nvml::stub_library().into(),
        ),
        (
            "ENVCTL_NVML_STUB_FIXTURE".into(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/nvml/healthy-8x-h100.conf")
                .into(),
        ),
    ]
}

/// `stats --hosts` without `--once` streams: a JSON line a second, each with every host —
/// the local daemon and the second one (each container under its host), a stopped
/// endpoint a row with its error's kind and cause, and the second daemon again through a
/// forwarder. When the forwarder is killed mid-run, that host becomes unreachable, with
/// the cause, within its deadline (2 intervals + 3 s, and the 5 s between listings), while
/// a line keeps coming every interval with the other hosts' rows. The plain table streams
/// too, a HOST column and a row per host.
#[test]
fn stats_hosts_streams_and_a_daemon_that_goes_away_becomes_a_row() {
    let Some(engine) = dockerd2("stats_hosts_streams_and_a_daemon_that_goes_away_becomes_a_row")
    else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let Sleepers {
        local: local_name,
        remote: remote_name,
        guards: _guards,
        ..
    } = Sleepers::start(&engine, "stream");
    let mut forwarder = Forwarder::start();
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let hosts = format!(
        "unix:///var/run/docker.sock,{TLS_ENDPOINT},{},{stopped}",
        forwarder.endpoint
    );
    let stream = Stream::start(folder.path(), &hosts);
    every_host_answers_with_its_rows(
        &stream,
        &local_name,
        &remote_name,
        &forwarder.endpoint,
        &stopped,
    );
    // The forwarded daemon goes away.
    a_killed_forwarder_becomes_an_unreachable_row(
        &stream,
        &mut forwarder,
        &local_name,
        &remote_name,
    );
    drop(stream);
    the_table_streams_with_a_row_per_host(folder.path(), &stopped, &local_name, &remote_name);
}

/// The envctl that streams `stats --json` lines (killed on drop) and the lines it wrote,
/// each with when it came.
struct Stream {
    received: std::sync::mpsc::Receiver<(Instant, serde_json::Value)>,
    _envctl: Killed,
}

/// A child process killed (and waited for) on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Stream {
    /// Starts `stats --json --all --interval 1s --hosts HOSTS` in `folder`, its lines read
    /// by a thread of their own.
    fn start(folder: &Path, hosts: &str) -> Stream {
        let mut command = Envctl::in_folder(folder).command();
        command
            .args([
                "--json",
                "stats",
                "--all",
                "--interval",
                "1s",
                "--hosts",
                hosts,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in team_variables() {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines, received) = std::sync::mpsc::channel::<(Instant, serde_json::Value)>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let document: serde_json::Value = serde_json::from_str(&line).unwrap();
                if lines.send((Instant::now(), document)).is_err() {
                    return;
                }
            }
        });
        Stream {
            received,
            _envctl: Killed(child),
        }
    }

    /// The next line, within `limit`.
    fn next(&self, limit: Duration) -> (Instant, serde_json::Value) {
        self.received
            .recv_timeout(limit)
            .unwrap_or_else(|error| panic!("no line within {limit:?}: {error}"))
    }
}

/// The state of host `name` in a `stats --json` line.
fn host_state(document: &serde_json::Value, name: &str) -> serde_json::Value {
    document["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|state| state["host"] == name)
        .unwrap_or_else(|| panic!("no host {name}: {document}"))
        .clone()
}

/// Whether a `stats --json` line has a row for `container` under host `name`.
fn has_row(document: &serde_json::Value, name: &str, container: &str) -> bool {
    document["containers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["host"] == name && row["name"] == container)
}

/// Every host answered: its rows under it (never under another daemon), and the stopped
/// endpoint a row with its error's kind and cause.
fn every_host_answers_with_its_rows(
    stream: &Stream,
    local_name: &str,
    remote_name: &str,
    forwarder_endpoint: &str,
    stopped: &str,
) {
    let started = Instant::now();
    let mut document = stream.next(Duration::from_secs(30)).1;
    while !(has_row(&document, "unix:///var/run/docker.sock", local_name)
        && has_row(&document, TLS_ENDPOINT, remote_name)
        && has_row(&document, forwarder_endpoint, remote_name))
    {
        assert!(started.elapsed() < Duration::from_secs(30), "{document}");
        document = stream.next(Duration::from_secs(10)).1;
    }
    assert_eq!(document["schema_version"], 1, "{document}");
    assert!(
        !has_row(&document, "unix:///var/run/docker.sock", remote_name),
        "{document}"
    );
    let refused = host_state(&document, stopped);
    assert_eq!(refused["reachable"], false, "{document}");
    assert_eq!(refused["error_kind"], "connection_refused", "{document}");
    // The error with its cause: `nothing answers at …: <the OS's word>`.
    assert!(
        refused["error"].as_str().unwrap().contains("): "),
        "{document}"
    );
}

/// Once the forwarder is killed, its host becomes unreachable with the cause within its
/// deadline, while a line keeps coming every interval with the other hosts' rows.
fn a_killed_forwarder_becomes_an_unreachable_row(
    stream: &Stream,
    forwarder: &mut Forwarder,
    local_name: &str,
    remote_name: &str,
) {
    forwarder.kill();
    let killed = Instant::now();
    let mut previous = killed;
    loop {
        let (at, document) = stream.next(Duration::from_secs(5));
        // A slow or lost host never holds the others' lines up.
        assert!(
            at.duration_since(previous) < Duration::from_secs(3),
            "a line {:?} after the one before",
            at.duration_since(previous)
        );
        previous = at;
        assert!(has_row(&document, TLS_ENDPOINT, remote_name), "{document}");
        assert!(
            has_row(&document, "unix:///var/run/docker.sock", local_name),
            "{document}"
        );
        let gone = host_state(&document, &forwarder.endpoint);
        if gone["reachable"] == false {
            let error = gone["error"].as_str().unwrap();
            assert!(
                error.contains(&forwarder.endpoint) || error.contains("stopped answering"),
                "{document}"
            );
            assert!(gone["error_kind"].as_str().is_some(), "{document}");
            assert!(
                !has_row(&document, &forwarder.endpoint, remote_name),
                "{document}"
            );
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(12),
            "still reachable {:?} after its forwarder was killed: {document}",
            killed.elapsed()
        );
    }
}

/// The table streams too: a HOST column, each host's rows, the stopped one saying why.
fn the_table_streams_with_a_row_per_host(
    folder: &Path,
    stopped: &str,
    local_name: &str,
    remote_name: &str,
) {
    let table = Envctl::in_folder(folder)
        .envs(team_variables())
        .timeout(Duration::from_secs(60))
        .args([
            "stats",
            "--all",
            "--interval",
            "1s",
            "--count",
            "3",
            "--hosts",
            &format!("unix:///var/run/docker.sock,{TLS_ENDPOINT},{stopped}"),
        ])
        .run();
    assert_eq!(table.code, 0, "{table}");
    // Each view's containers' table starts with its header (the GPUs' has no CONTAINER).
    let is_containers = |view: &&str| {
        view.lines()
            .next()
            .is_some_and(|header| header.starts_with("HOST ") && header.contains("CONTAINER"))
    };
    let views: Vec<&str> = table.stdout.split("\n\n").filter(is_containers).collect();
    assert_eq!(views.len(), 3, "three views: {table}");
    let last = views.last().unwrap();
    assert!(
        last.lines()
            .any(|line| line.starts_with("unix:///var/run/docker.sock ")
                && line.contains(local_name)),
        "{table}"
    );
    assert!(
        last.lines().any(
            |line| line.starts_with(&format!("{TLS_ENDPOINT} ")) && line.contains(remote_name)
        ),
        "{table}"
    );
    assert!(
        last.lines()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers at")),
        "{table}"
    );
}

/// A daemon that hangs mid-run (a fake one: its container list answered once, then never
/// again) is a row `stopped answering` within its deadline (2 intervals + 3 s after its last
/// snapshot), while the local daemon's row keeps coming every interval.
#[test]
fn a_daemon_that_hangs_becomes_a_row_within_its_deadline() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    use crate::support::fake_daemon::{FakeDaemon, Reply};
    let lists = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&lists);
    let daemon = FakeDaemon::start(move |request| match request.route() {
        "/containers/json" => {
            if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                Some(Reply::json(200, "[]"))
            } else {
                Some(Reply::Silent {
                    r#for: Duration::from_secs(120),
                })
            }
        }
        _ => None,
    });
    let hung = daemon.host();
    let folder = tempfile::tempdir().unwrap();
    let mut command = Envctl::in_folder(folder.path()).command();
    command
        .args([
            "--json",
            "stats",
            "--interval",
            "1s",
            "--hosts",
            &format!("unix:///var/run/docker.sock,{hung}"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _envctl = Killed(child);
    let started = Instant::now();
    let mut previous = started;
    let mut answered_at = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let document: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let now = Instant::now();
        assert!(
            now.duration_since(previous) < Duration::from_secs(3),
            "a line {:?} after the one before",
            now.duration_since(previous)
        );
        previous = now;
        let hosts = document["hosts"].as_array().unwrap();
        assert_eq!(hosts[0]["reachable"], true, "{document}");
        if hosts[1]["reachable"] == true {
            answered_at.get_or_insert(now);
        }
        if let Some(error) = hosts[1]["error"].as_str()
            && error.starts_with("stopped answering: no sample for")
        {
            assert!(answered_at.is_some(), "it answered first: {document}");
            assert_eq!(hosts[1]["error_kind"], "timeout", "{document}");
            // Listed again 5 s in, then 2 intervals + 3 s: well under 15 s.
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{:?}: {document}",
                started.elapsed()
            );
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no `stopped answering` row within 15 s: {document}"
        );
    }
    panic!("envctl ended");
}

/// On a terminal (tmux), `stats --hosts` is the live screen: it refreshes with a HOST
/// column, the stopped endpoint a row saying why, quits on `q` with exit 0 and gives the
/// terminal back as it found it.
#[test]
fn the_team_view_is_live_on_a_terminal_and_quits_on_q() {
    use crate::support::tmux::{MAIN_SCREEN_MARKER, Recording, Tmux, shell_quote};
    if !crate::support::docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let recording = Recording::new(
        folder.path(),
        &format!(
            "NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent {envctl} stats --interval 0.5 --hosts unix:///var/run/docker.sock,{stopped}",
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };
    let screen = tmux.wait_for_sample(3);
    assert!(screen.contains("q quits"), "{screen}");
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        lines.iter().any(|line| line.starts_with("HOST ")),
        "{screen}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("unix:///var/run/docker.sock ")),
        "{screen}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers")),
        "{screen}"
    );
    assert!(!screen.contains(MAIN_SCREEN_MARKER), "{screen}");
    tmux.keys("q");
    let screen = tmux.wait_for("exit=0");
    assert!(screen.contains(MAIN_SCREEN_MARKER), "{screen}");
    let (before, after) = recording.settings();
    assert_eq!(before, after, "terminal settings restored");
}

/// Issue 40 (item 6): another machine's containers show their GPUs by that machine's
/// index, read from the GPU record its daemon keeps, in `ps -H` and `ps --hosts` alike
/// (never this machine's NVML, never a list of UUIDs), and a count the engine places
/// says its unit (`2 GPUs`), never read as GPU index 2.
#[test]
fn another_machines_gpus_show_by_its_index_and_a_count_says_gpus() {
    let test = "another_machines_gpus_show_by_its_index_and_a_count_says_gpus";
    let fixture = crate::support::server::Fixture::gpus(
        "dddddddd",
        4,
        "NVIDIA L4",
        "8.9",
        "550.54.15",
        "12.4",
    );
    let Some(server) = crate::support::server::Server::start(test, "gpu-ps", Some(&fixture)) else {
        return;
    };
    let image = server.load_test_image();
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("psindex");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join(format!("envctl/{profile}.toml")),
        format!("image = \"{image}\"\ngpus = 2\ncommand = [\"sleep\", \"600\"]\n"),
    )
    .unwrap();
    write_team_file(
        folder.path(),
        &format!("[hosts]\ngpu-ps = \"{}\"\n", server.host()),
    );
    let run = |arguments: &[&str]| {
        Envctl::in_folder(folder.path())
            .env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"))
            .args(arguments)
            .timeout(Duration::from_secs(120))
            .run()
    };
    let up = run(&["-H", &server.host(), "up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    // A container the engine places by count, as `docker run --gpus 2` makes it.
    let counted = unique_name("counted");
    server.docker_ok(&[
        "run",
        "-d",
        "--name",
        &counted,
        "--label",
        TEST_LABEL,
        "--label",
        &format!("envctl.profile={counted}"),
        "--gpus",
        "2",
        &image,
        "sleep",
        "600",
    ]);
    let placed = server.docker_ok(&[
        "inspect",
        "-f",
        "{{range .HostConfig.DeviceRequests}}{{join .DeviceIDs \",\"}}{{end}}",
        &format!("envctl-{profile}"),
    ]);
    let indexes: Vec<String> = placed
        .trim()
        .split(',')
        .map(|uuid| {
            let index = fixture
                .gpus
                .iter()
                .position(|gpu| gpu.uuid == uuid)
                .unwrap_or_else(|| panic!("{uuid} is none of the fixture's GPUs"));
            index.to_string()
        })
        .collect();
    let expected = indexes.join(",");
    let host = server.host();
    for arguments in [
        vec!["--json", "-H", host.as_str(), "ps", "-a", "--all-users"],
        vec!["--json", "ps", "-a", "--all-users", "--hosts", "gpu-ps"],
    ] {
        let listed = run(&arguments);
        assert_eq!(listed.code, 0, "{arguments:?}: {listed}");
        let text = listed.stdout.as_str();
        let document: serde_json::Value = serde_json::from_str(text).unwrap();
        // Both shapes list every row under `containers` (with `--hosts`, each with its host).
        let rows = document["containers"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no rows in {text}"));
        let row = |name: &str| {
            rows.iter()
                .find(|row| row["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("no {name} in {text}"))
        };
        let ours = row(&format!("envctl-{profile}"));
        assert_eq!(ours["gpus"], expected.as_str(), "{arguments:?}: {ours}");
        assert_eq!(ours["gpu_ids"], placed.trim(), "{arguments:?}: {ours}");
        assert_eq!(row(&counted)["gpus"], "2 GPUs", "{arguments:?}: {text}");
    }
    for name in [format!("envctl-{profile}"), counted] {
        server.docker(&["rm", "-f", &name]);
    }
}
