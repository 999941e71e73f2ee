//! `envctl forward` and `up`'s words on a remote container's ports (issue 38, item 5),
//! from a "laptop": envctl in a UTS namespace of its own (`Envctl::on_a_laptop`), so the
//! daemon of this machine is another host's to it. The laptop reaches that daemon over
//! Debian's sshd on loopback (`remote_daemons::Sshd`, whose far side is this machine's
//! daemon), and a container there publishes a web server on the server's 127.0.0.1: curl on
//! the laptop's side gets its answer through envctl's forward; SIGINT ends it (130) and
//! its ssh with it. Over plain TCP there is no ssh route: a refusal whose hint, run, works.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::remote_daemons::{Sshd, free_port};
use crate::support::cli::{Envctl, Run};
use crate::support::docker::{ContainerGuard, require_daemon_for, test_image, unique_name};

/// The local daemon, as ssh's far side reaches it.
const FAR_SIDE: &str = "unix:///var/run/docker.sock";

/// A profile whose container serves `hello from the server` on port 8888, published on
/// the server's loopback at `host_port`.
fn web_profile(folder: &Path, profile: &str, host_port: u16) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join("envctl").join(format!("{profile}.toml")),
        format!(
            "image = \"{image}\"\ngpus = \"none\"\nmemory = \"64m\"\nports = [\"127.0.0.1:{host_port}:8888\"]\n\
             command = [\"sh\", \"-c\", \"mkdir -p /www && echo hello from the server > /www/index.html && exec httpd -f -p 8888 -h /www\"]\n\
             ",
            image = test_image()
        ),
    )
    .unwrap();
}

/// envctl on the laptop with `variables`, bounded.
fn on_laptop(folder: &Path, variables: &[(&str, &std::ffi::OsStr)], arguments: &[&str]) -> Run {
    Envctl::on_a_laptop(folder, None)
        .envs(variables.iter().copied())
        .args(arguments)
        .timeout(Duration::from_secs(120))
        .run()
}

/// An HTTP GET of `/` on 127.0.0.1:`port`, as curl gives it.
fn curl(port: u16) -> std::process::Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap()
}

#[test]
fn forward_brings_a_remote_notebook_to_the_laptop_and_ends_with_its_signal() {
    let test = "forward_brings_a_remote_notebook_to_the_laptop_and_ends_with_its_signal";
    if !require_daemon_for(test) {
        return;
    }
    let Some(sshd) = Sshd::start(test, FAR_SIDE) else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("forward");
    let container = format!("envctl-{profile}");
    let _guard = ContainerGuard::new(container.clone());
    let server_port = free_port();
    web_profile(folder.path(), &profile, server_port);
    let path = sshd.path();
    let way = [
        ("DOCKER_HOST", std::ffi::OsStr::new("ssh://gpu2")),
        ("PATH", path.as_os_str()),
    ];

    // `up` from the laptop says where the port is and how to reach it.
    let up = on_laptop(folder.path(), &way, &["up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    assert!(up.stderr.contains("port 8888/tcp is on "), "{up}");
    assert!(
        up.stderr.contains(&format!("at 127.0.0.1:{server_port}")),
        "{up}"
    );
    let hint = format!("reach it from here: envctl forward {container}");
    assert!(up.stderr.contains(&hint), "{up}");

    // The hint, run: the first stdout line is the laptop's address, once it answers.
    let mut command = Envctl::on_a_laptop(folder.path(), None).command();
    for (key, value) in &way {
        command.env(key, value);
    }
    let mut child = command
        .args(["forward", &container])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("forward printed no address within 60 s")
        });
    let local_port: u16 = line
        .trim()
        .strip_prefix("127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not an address: {line:?}"));
    // The server's port is taken on this loopback (laptop and server share it here), so
    // the forward took another one rather than failing.
    assert_ne!(local_port, server_port);
    let answer = curl(local_port);
    assert_eq!(
        String::from_utf8_lossy(&answer.stdout).trim(),
        "hello from the server",
        "{answer:?}"
    );

    // SIGINT ends the forward: 130, and the local port no longer answers.
    let pid = child.id() as i32;
    assert_eq!(signal(pid, "INT"), 0);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "forward did not end within 15 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", local_port)).is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the forward's port still answers after envctl ended: its ssh outlived it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // A port the container does not publish is invalid input, naming what it publishes.
    let wrong = on_laptop(folder.path(), &way, &["forward", &container, "9999"]);
    assert_eq!(wrong.code, 2, "{wrong}");
    assert!(wrong.stderr.contains("it publishes 8888/tcp"), "{wrong}");

    let down = on_laptop(folder.path(), &way, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
}

/// Over plain TCP (a socat to this machine's daemon) there is no ssh route: exit 1, the
/// daemon's host named, and the hint's `envctl -H ssh://HOST forward TARGET`, run through
/// an ssh that knows that host, forwards.
#[test]
fn forward_over_tcp_is_refused_with_the_ssh_command_that_works() {
    let test = "forward_over_tcp_is_refused_with_the_ssh_command_that_works";
    if !require_daemon_for(test) {
        return;
    }
    let Some(sshd) = Sshd::start(test, FAR_SIDE) else {
        return;
    };
    let tcp_port = free_port();
    let mut socat = Command::new("socat")
        .arg(format!(
            "TCP-LISTEN:{tcp_port},bind=127.0.0.1,reuseaddr,fork"
        ))
        .arg("UNIX-CONNECT:/var/run/docker.sock")
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", tcp_port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "socat did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let folder = tempfile::tempdir().unwrap();
    let profile = unique_name("forward-tcp");
    let container = format!("envctl-{profile}");
    let _guard = ContainerGuard::new(container.clone());
    web_profile(folder.path(), &profile, free_port());
    // The daemon's host name, which the hint names, is an alias of the test's sshd.
    let daemon = crate::support::docker::docker_stdout(["info", "--format", "{{.Name}}"]);
    let path = sshd.path_with_alias(daemon.trim());
    // Made over ssh (the container is the ssh user's), then asked for over plain TCP.
    let over_ssh = format!("ssh://{}", daemon.trim());
    let ssh_way = [
        ("DOCKER_HOST", std::ffi::OsStr::new(over_ssh.as_str())),
        ("PATH", path.as_os_str()),
    ];
    let up = on_laptop(folder.path(), &ssh_way, &["up", &profile]);
    assert_eq!(up.code, 0, "{up}");
    let endpoint = format!("tcp://127.0.0.1:{tcp_port}");
    let way = [("DOCKER_HOST", std::ffi::OsStr::new(endpoint.as_str()))];
    let listed = on_laptop(folder.path(), &way, &["ps", "--all-users"]);
    assert!(listed.stdout.contains(&container), "{listed}");

    let refused = on_laptop(folder.path(), &way, &["forward", &container]);
    let _ = socat.kill();
    let _ = socat.wait();
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused.stderr.contains("envctl reaches it without ssh"),
        "{refused}"
    );
    let hint = refused
        .stderr
        .lines()
        .find_map(|line| {
            line.split('`')
                .nth(1)
                .filter(|words| words.starts_with("envctl -H ssh://"))
        })
        .unwrap_or_else(|| panic!("no ssh command in the hint: {refused}"))
        .to_string();
    assert!(
        hint.starts_with(&format!("envctl -H {over_ssh} forward ")),
        "{refused}"
    );
    let words: Vec<&str> = hint.split(' ').skip(1).collect();
    let mut command = Envctl::on_a_laptop(folder.path(), None).command();
    command.env("PATH", &path);
    let mut child = command
        .args(&words)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver.recv_timeout(Duration::from_secs(60));
    let answer = line.as_ref().ok().and_then(|line| {
        let port: u16 = line.trim().strip_prefix("127.0.0.1:")?.parse().ok()?;
        Some(curl(port))
    });
    let _ = signal(child.id() as i32, "TERM");
    let output = child.wait_with_output().unwrap();
    let status = output.status;
    let said = String::from_utf8_lossy(&output.stderr).to_string();
    let line = line.unwrap_or_else(|_| panic!("the hint's forward printed no address: {said}"));
    let answer = answer.unwrap_or_else(|| panic!("not an address: {line:?}: {said}"));
    assert_eq!(
        String::from_utf8_lossy(&answer.stdout).trim(),
        "hello from the server",
        "{answer:?}"
    );
    assert_eq!(status.code(), Some(143));
    let down = on_laptop(folder.path(), &ssh_way, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
}

/// `kill -SIGNAL pid`, through the kill program: the tests use no libc.
fn signal(pid: i32, signal: &str) -> i32 {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .code()
        .unwrap_or(-1)
}
