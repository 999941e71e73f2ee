//! Every command reaches the second daemon over TLS, over SSH and through a Docker context.

use super::*;

/// doctor, up, ps, exec, logs, stats, down over `way`, each checked against the docker CLI
/// with the same settings and against the local daemon, which must see nothing.
fn every_command(engine: &TestEngine, way: &Way) {
    let (folder, profile) = project(engine, &format!("remote-{}", way.name), "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let run = |arguments: &[&str]| envctl(folder.path(), way, arguments);

    let doctor = run(&["--json", "doctor"]);
    let report = doctor.json();
    assert_eq!(
        report["host"]["engine"]["status"], "reachable",
        "{}: {doctor}",
        way.name
    );
    assert_eq!(
        report["host"]["engine"]["server_version"].as_str(),
        Some(engine.version.as_str()),
        "{}: {doctor}",
        way.name
    );

    let up = run(&["up", &profile, "--pull", "never"]);
    assert_eq!(up.code, 0, "{}: {up}", way.name);
    // The reference: the CLI with the same settings lists it; the local daemon has none.
    assert!(
        docker_names(way, false).contains(&container),
        "{}",
        way.name
    );
    let local = crate::support::docker::docker_stdout(["ps", "-a", "--format", "{{.Names}}"]);
    assert!(!local.lines().any(|name| name == container), "{local}");

    let ps = run(&["--json", "ps"]);
    assert_eq!(ps.code, 0, "{}: {ps}", way.name);
    assert!(ps.stdout.contains(&container), "{}: {ps}", way.name);

    let exec = run(&["exec", &profile, "--", "echo", "hello-from-far"]);
    assert_eq!(
        (exec.code, exec.stdout.trim()),
        (0, "hello-from-far"),
        "{}: {exec}",
        way.name
    );
    let failing = run(&["exec", &profile, "--", "sh", "-c", "exit 7"]);
    assert_eq!(failing.code, 7, "{}: {failing}", way.name);

    let logs = run(&["logs", &profile]);
    assert_eq!(logs.code, 0, "{}: {logs}", way.name);
    assert!(
        logs.stdout.contains("started-remotely"),
        "{}: {logs}",
        way.name
    );

    let stats = run(&["--json", "stats", "--once", &profile]);
    assert_eq!(stats.code, 0, "{}: {stats}", way.name);
    assert!(stats.stdout.contains(&container), "{}: {stats}", way.name);

    let down = run(&["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{}: {down}", way.name);
    assert!(
        !docker_names(way, true).contains(&container),
        "{}",
        way.name
    );
}

#[test]
fn every_command_reaches_the_daemon_over_tls() {
    let Some(engine) = dockerd2("every_command_reaches_the_daemon_over_tls") else {
        return;
    };
    every_command(&engine, &Way::tls());
}

#[test]
fn every_command_reaches_the_daemon_over_ssh() {
    let test = "every_command_reaches_the_daemon_over_ssh";
    let Some(engine) = dockerd2(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    // The alias of the test's ssh_config: host, port and user come from there, as for
    // the docker CLI.
    let way = sshd.way("ssh://gpu2");
    every_command(&engine, &way);
    // The port and user in the URL itself.
    let way = sshd.way(&format!("ssh://root@127.0.0.1:{}", sshd.port));
    let folder = tempfile::tempdir().unwrap();
    let ps = envctl(folder.path(), &way, &["--json", "doctor"]);
    assert_eq!(
        ps.json()["host"]["engine"]["status"],
        "reachable",
        "{ps}\n{}",
        sshd.log()
    );
    // Every ssh envctl started has ended with the command.
    let pids = sshd.ssh_pids();
    assert!(!pids.is_empty());
    let started = Instant::now();
    while !pids.iter().all(|pid| gone(*pid)) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<&i32> = pids.iter().filter(|pid| !gone(**pid)).collect();
    assert!(left.is_empty(), "ssh processes outlived envctl: {left:?}");
}

#[test]
fn every_command_reaches_the_daemon_through_a_context() {
    let Some(engine) = dockerd2("every_command_reaches_the_daemon_through_a_context") else {
        return;
    };
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
    let used = Command::new("docker")
        .env("DOCKER_CONFIG", config.path())
        .args(["context", "use", &name])
        .output()
        .unwrap();
    assert!(used.status.success(), "{used:?}");
    // `docker context use`: no variable but DOCKER_CONFIG names the daemon.
    let way = Way {
        name: "context",
        variables: vec![("DOCKER_CONFIG".into(), config.path().into())],
    };
    every_command(&engine, &way);
    // doctor's first line names the context and its endpoint.
    let folder = tempfile::tempdir().unwrap();
    let doctor = envctl(folder.path(), &way, &["doctor"]);
    assert!(
        doctor.stdout.contains(&format!(
            "daemon {TLS_ENDPOINT} chosen by context {name} (currentContext)"
        )),
        "{doctor}"
    );
}
