//! Several daemons at once: the lock pins what a remote daemon pulls, `ps --hosts` lists every
//! daemon and says why one cannot be reached, `doctor --hosts` marks where setups differ, and a
//! GPU profile from a machine without NVML starts on the remote GPU daemon.

use super::*;

/// The host's loopback port `port` reachable at 127.0.0.1:`port` inside the second
/// daemon's network namespace (for pulls from the test registry): a socat there to a unix
/// socket, and one here from that socket to the port. Both are killed on drop.
struct IntoTheNamespace {
    _folder: tempfile::TempDir,
    children: Vec<std::process::Child>,
}

impl IntoTheNamespace {
    fn forward(port: u16) -> IntoTheNamespace {
        let folder = tempfile::tempdir().unwrap();
        let socket = folder.path().join("forward.sock");
        let outside = Command::new("socat")
            .arg(format!("UNIX-LISTEN:{},fork", socket.display()))
            .arg(format!("TCP:127.0.0.1:{port}"))
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "socat did not listen"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let inside = Command::new("nsenter")
            .arg("--net=/run/netns/envctl-dockerd2")
            .arg("socat")
            .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
            .arg(format!("UNIX-CONNECT:{}", socket.display()))
            .spawn()
            .unwrap();
        let forward = IntoTheNamespace {
            _folder: folder,
            children: vec![outside, inside],
        };
        let started = Instant::now();
        loop {
            let reached = Command::new("nsenter")
                .arg("--net=/run/netns/envctl-dockerd2")
                .args(["socat", "-u", "/dev/null"])
                .arg(format!("TCP:127.0.0.1:{port}"))
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            if reached.success() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "no forward into the netns"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        forward
    }
}

impl Drop for IntoTheNamespace {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `lock` with TLS, ssh or a context chosen: the registry answers the digest (nothing is
/// pulled, on the remote daemon either), and it is the digest the remote daemon records
/// when it pulls the tag, as `docker image inspect` there reads it.
#[test]
fn lock_pins_what_the_remote_daemon_pulls() {
    let test = "lock_pins_what_the_remote_daemon_pulls";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    if !crate::support::registry::require_registry() {
        return;
    }
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let registry = crate::support::registry::Registry::start();
    let _forward = IntoTheNamespace::forward(registry.addr().port());
    let repo = unique_name("remote-lock");
    let reference = crate::support::registry::push_test_image(&registry, &repo, "1.0");
    let _pulled = engine.image_guard(reference.clone());
    let config = tempfile::tempdir().unwrap();
    let name = unique_name("gpu2");
    let created = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "create", &name, "--docker"])
        .arg(format!(
            "host={TLS_ENDPOINT},ca={CERTIFICATES}/ca.pem,cert={CERTIFICATES}/cert.pem,key={CERTIFICATES}/key.pem"
        ))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let context = Way {
        name: "context",
        variables: vec![
            ("DOCKER_CONFIG".into(), config.path().into()),
            ("DOCKER_CONTEXT".into(), name.clone().into()),
        ],
    };
    for way in [Way::tls(), sshd.way("ssh://gpu2"), context] {
        // Each way pulls afresh.
        let _ = engine.docker(["rmi", "-f", reference.as_str()]);
        let folder = tempfile::tempdir().unwrap();
        let profile = unique_name("locked");
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        std::fs::write(
            folder.path().join("envctl").join(format!("{profile}.toml")),
            format!("image = \"{reference}\"\n"),
        )
        .unwrap();
        let lock = envctl(folder.path(), &way, &["--json", "lock"]);
        assert_eq!(lock.code, 0, "{}: {lock}", way.name);
        let pin = &lock.json()["locked"][0];
        let digest = pin["digest"].as_str().unwrap().to_string();
        // The registry answered: nothing was pulled, here or on the remote daemon.
        assert_eq!(pin["source"], "registry", "{}: {lock}", way.name);
        let absent = engine.docker(["image", "inspect", reference.as_str()]);
        assert!(
            !absent.status.success(),
            "{}: lock pulled the image onto the remote daemon",
            way.name
        );
        // What the remote daemon gets when it pulls the tag is what the lock pins.
        let pulled = engine.docker(["pull", "-q", reference.as_str()]);
        assert!(pulled.status.success(), "{pulled:?}");
        let recorded = engine.docker_stdout([
            "image",
            "inspect",
            "--format",
            "{{json .RepoDigests}}",
            reference.as_str(),
        ]);
        assert!(
            recorded.contains(&digest),
            "{}: the lock pins {digest}, the remote daemon recorded {recorded}",
            way.name
        );
        let text = std::fs::read_to_string(folder.path().join("envctl.lock")).unwrap();
        assert!(text.contains(&digest), "{text}");
    }
}

/// The reference for `host`: the names of envctl's containers there, as the docker CLI
/// lists them (through a context or `-H`).
fn docker_cli_lists_envctl_containers(
    host: &str,
    config: &Path,
    path: std::ffi::OsString,
) -> std::process::Output {
    let mut cli = Command::new("docker");
    cli.env("DOCKER_CONFIG", config)
        .env("PATH", path)
        .env_remove("DOCKER_HOST")
        .env_remove("DOCKER_CONTEXT");
    if host.contains("://") {
        cli.args(["-H", host]);
    } else {
        cli.args(["--context", host]);
    }
    cli.args([
        "ps",
        "--filter",
        "label=envctl.profile",
        "--format",
        "{{.Names}}",
    ])
    .output()
    .unwrap()
}

/// The table: a HOST column, the container under both names of the second daemon, each
/// unreachable host a row saying why with its hint on stderr; bad lists are usage errors.
fn the_table_has_a_host_column_and_bad_lists_are_usage_errors(
    folder: &Path,
    way: &Way,
    list: &str,
    context: &str,
    container: &str,
    stopped: &str,
) {
    // The table: a HOST column, the container under both names of the second daemon,
    // each unreachable host a row saying why, and its hint on stderr.
    let table = envctl(folder, way, &["ps", "--all-users", "--hosts", list]);
    assert_eq!(table.code, 0, "{table}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    for host in [context, "ssh://gpu2"] {
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with(&format!("{host} ")) && line.contains(container)),
            "{host}: {table}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{stopped} "))
                && line.contains("unreachable: nothing answers at")),
        "{table}"
    );
    assert!(
        table.stderr.contains(&format!(
            "warning: host `{stopped}` could not be listed (hint:"
        )),
        "{table}"
    );
    // Bad lists are usage errors, before anything is asked.
    for bad in [",", &format!("{context},{context}")] {
        let run = envctl(folder, way, &["ps", "--hosts", bad]);
        assert_eq!(run.code, 2, "{bad}: {run}");
    }
    let run = envctl(
        folder,
        way,
        &[
            "-H",
            "unix:///var/run/docker.sock",
            "ps",
            "--hosts",
            context,
        ],
    );
    assert_eq!(run.code, 2, "{run}");
}

/// `ps --hosts` over the local daemon, the second one through a context (TLS) and over
/// ssh, one stopped and one that accepts and never answers: one table with a HOST column,
/// each host's containers as `docker -H` lists them there, the stopped and the silent one
/// rows that say why, exit 0, and the whole within one host's deadline (asked at once, not
/// one after another).
#[test]
fn ps_hosts_lists_every_daemon_and_says_why_one_cannot_be() {
    let test = "ps_hosts_lists_every_daemon_and_says_why_one_cannot_be";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let (folder, profile) = project(&engine, "hosts", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let up = envctl(
        folder.path(),
        &Way::tls(),
        &["up", &profile, "--pull", "never"],
    );
    assert_eq!(up.code, 0, "{up}");
    let config = tempfile::tempdir().unwrap();
    let context = unique_name("gpu2");
    let created = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "create", &context, "--docker"])
        .arg(format!(
            "host={TLS_ENDPOINT},ca={CERTIFICATES}/ca.pem,cert={CERTIFICATES}/cert.pem,key={CERTIFICATES}/key.pem"
        ))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    // Accepts connections (the kernel's backlog) and never answers.
    let silent_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!(
        "tcp://127.0.0.1:{}",
        silent_listener.local_addr().unwrap().port()
    );
    let hosts = [
        "unix:///var/run/docker.sock".to_string(),
        context.clone(),
        "ssh://gpu2".to_string(),
        stopped.clone(),
        silent.clone(),
    ];
    let way = Way {
        name: "hosts",
        variables: vec![
            ("DOCKER_CONFIG".into(), config.path().into()),
            ("PATH".into(), sshd.path()),
        ],
    };
    let list = hosts.join(",");
    let started = Instant::now();
    // Every user's containers, as the docker CLI's reference lists them: whose they are on
    // each host (the identity each transport proves) is `team_identity`'s test.
    let json = envctl(
        folder.path(),
        &way,
        &["--json", "ps", "--all-users", "--hosts", &list],
    );
    let took = started.elapsed();
    assert_eq!(json.code, 0, "{json}");
    // The silent host costs its ping deadline (3 s), once: not one host after another.
    assert!(took < Duration::from_secs(6), "took {took:?}: {json}");
    let document = json.json();
    let states = document["hosts"].as_array().unwrap();
    let listed: Vec<&str> = states
        .iter()
        .map(|state| state["host"].as_str().unwrap())
        .collect();
    assert_eq!(listed, hosts.iter().map(String::as_str).collect::<Vec<_>>());
    for state in states {
        let host = state["host"].as_str().unwrap();
        let reachable = state["reachable"].as_bool().unwrap();
        if host == stopped || host == silent {
            assert!(!reachable, "{host}: {json}");
            assert!(state["error"].as_str().is_some(), "{json}");
            let kind = state["error_kind"].as_str().unwrap();
            let expected = if host == stopped {
                "connection_refused"
            } else {
                "timeout"
            };
            assert_eq!(kind, expected, "{host}: {json}");
            continue;
        }
        assert!(reachable, "{host}: {json}");
        // The reference: what the docker CLI lists there, of envctl's containers.
        let cli = docker_cli_lists_envctl_containers(host, config.path(), sshd.path());
        assert!(cli.status.success(), "{host}: {cli:?}");
        // Only this test's container: other tests make and remove theirs meanwhile.
        let expected: Vec<String> = String::from_utf8_lossy(&cli.stdout)
            .lines()
            .filter(|name| *name == container)
            .map(str::to_string)
            .collect();
        let names: Vec<String> = document["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["host"] == host && row["name"] == container.as_str())
            .map(|row| row["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, expected, "{host}: {json}");
        let on_second = host != "unix:///var/run/docker.sock";
        assert_eq!(names.contains(&container), on_second, "{host}: {json}");
    }
    the_table_has_a_host_column_and_bad_lists_are_usage_errors(
        folder.path(),
        &way,
        &list,
        &context,
        &container,
        &stopped,
    );
    let down = envctl(folder.path(), &Way::tls(), &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
    drop(silent_listener);
}

/// `doctor --hosts`: the local daemon and the second one side by side; a profile's image
/// on one of them only is a marked difference (exit 1); once the same image is on both,
/// they agree (exit 0); a stopped host is a column saying why and no difference.
#[test]
fn doctor_hosts_marks_where_the_setups_differ() {
    let Some(engine) = dockerd2("doctor_hosts_marks_where_the_setups_differ") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    // An image of its own on the second daemon only, then copied to the local one.
    let image = format!("{}:1", unique_name("envctl-test-hosts"));
    let _remote_image = engine.image_guard(image.clone());
    let _local_image = crate::support::docker::ImageGuard::new(image.as_str());
    engine.docker_stdout(["tag", engine.test_image().as_str(), image.as_str()]);
    let profile = unique_name("compared");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();
    let stopped = format!("tcp://127.0.0.1:{}", free_port());
    let list = format!("unix:///var/run/docker.sock,{TLS_ENDPOINT},{stopped}");
    let way = Way {
        name: "hosts",
        variables: vec![
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), CERTIFICATES.into()),
        ],
    };
    // The GPUs the second daemon's own fixture gives a probe, not a record another test's
    // stand-in NVML kept there meanwhile (the Slurm tests run envctl on that machine).
    let _record = crate::support::docker::BuildLock::acquire_at(
        &crate::support::docker::dockerd2_record_lock(),
    );
    engine.docker(["volume", "rm", "envctl-gpus"]);
    let run = envctl(folder.path(), &way, &["--json", "doctor", "--hosts", &list]);
    assert_eq!(run.code, 1, "{run}");
    let report = run.json();
    let facts = report["facts"].as_array().unwrap();
    let row = |name: &str| {
        facts
            .iter()
            .find(|fact| fact["fact"] == name)
            .unwrap_or_else(|| panic!("no {name}: {run}"))
            .clone()
    };
    let image_row = row(&format!("{profile}: image id"));
    assert_eq!(image_row["differs"], true, "{run}");
    assert_eq!(image_row["cells"][0]["text"], "absent", "{run}");
    assert_eq!(image_row["cells"][2]["state"], "unknown", "{run}");
    assert_eq!(row("engine")["differs"], false, "{run}");
    // The second daemon is another machine whose GPUs its stand-in nvidia-smi tells (four
    // A100s on driver 550), where this machine has no NVML.
    let branch = row("NVIDIA driver branch");
    assert_eq!(branch["differs"], true, "{run}");
    assert_eq!(branch["cells"][0]["text"], "no NVML", "{run}");
    assert_eq!(branch["cells"][1]["text"], "550", "{run}");
    assert_eq!(
        row("GPUs")["cells"][1]["text"],
        "4 × NVIDIA A100-SXM4-80GB",
        "{run}"
    );
    assert_eq!(report["differences"], 4, "{run}");
    assert_eq!(report["hosts"][2]["reachable"], false, "{run}");
    // The table marks it.
    let table = envctl(folder.path(), &way, &["doctor", "--hosts", &list]);
    assert_eq!(table.code, 1, "{table}");
    assert!(
        table
            .stdout
            .lines()
            .any(|line| line.starts_with('≠') && line.contains(&profile)),
        "{table}"
    );
    // The same image on both: they agree.
    let saved = tempfile::tempdir().unwrap();
    let tarball = saved.path().join("image.tar");
    engine.docker_stdout(["save", "-o", tarball.to_str().unwrap(), image.as_str()]);
    crate::support::docker::docker_stdout(["load", "-i", tarball.to_str().unwrap()]);
    let run = envctl(folder.path(), &way, &["--json", "doctor", "--hosts", &list]);
    let report = run.json();
    let image_row = report["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|fact| fact["fact"] == format!("{profile}: image id"))
        .unwrap()
        .clone();
    assert_eq!(image_row["differs"], false, "{run}");
    // Only the GPUs differ now.
    assert_eq!(report["differences"], 3, "{run}");
}

/// A laptop without NVML (a UTS namespace named `envctl-laptop`, no NVML library) asks
/// the second daemon, over TLS, for a GPU profile: that daemon's stand-in hook gives GPUs,
/// which the laptop cannot see. It is judged by the daemon's facts (NVML: that machine's,
/// not a failure here), not refused, and the container starts there with its GPU request.
#[test]
fn a_gpu_profile_from_a_machine_without_nvml_starts_on_the_remote_gpu_daemon() {
    let test = "a_gpu_profile_from_a_machine_without_nvml_starts_on_the_remote_gpu_daemon";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    if !is_root() {
        skip_or_panic(
            "not root: `unshare --uts` needs CAP_SYS_ADMIN",
            test,
            "run the tests as root (.ci/run does)",
        );
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("laptop-gpu");
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl").join(format!("{profile}.toml")),
        format!(
            "image = \"{}\"\ngpus = 1\nmemory = \"64m\"\ncommand = [\"sleep\", \"600\"]\n",
            engine.test_image()
        ),
    )
    .unwrap();
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let laptop = |arguments: &[&str]| {
        let mut command = crate::support::cli::envctl_on_a_laptop_in(folder.path(), None);
        command.args(arguments);
        Way::tls().apply(&mut command);
        command.env("ENVCTL_NVML_LIBRARY", folder.path().join("no-nvml-here.so"));
        Run::of(
            crate::support::docker::run_with_timeout(&mut command, Duration::from_secs(120))
                .unwrap(),
        )
    };
    let doctor = laptop(&["--json", "doctor", &profile]);
    let report = doctor.json();
    let finding = |id: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .chain(
                report["profiles"][0]["findings"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .find(|finding| finding["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {doctor}"))
            .clone()
    };
    assert_eq!(finding("gpu.nvml")["status"], "info", "{doctor}");
    assert_eq!(finding("host.elsewhere")["status"], "info", "{doctor}");
    assert_ne!(finding("profile.gpus")["status"], "fail", "{doctor}");
    let up = laptop(&["up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    let inspected = Way::tls().docker(&[
        "inspect",
        "--format",
        "{{.State.Running}} {{json .HostConfig.DeviceRequests}}",
        &container,
    ]);
    let line = String::from_utf8_lossy(&inspected.stdout).to_string();
    assert!(line.starts_with("true "), "{line}");
    assert!(line.contains("\"gpu\""), "{line}");
    // Not on this machine's daemon.
    assert!(
        !docker_names(
            &Way {
                name: "local",
                variables: vec![]
            },
            true
        )
        .contains(&container)
    );
}
