//! Identity across machines (issue 38, item 2), through real daemons: the second daemon
//! over its unix socket, over TLS with client certificates made here (signed by the CI's
//! CA), over plain tcp, and over ssh through Debian's sshd on loopback. "Laptops" are
//! envctl runs in a UTS and mount namespace of their own, with a host name of their own
//! and an `/etc/passwd` that names uid 0 as another user: the same uid on another machine
//! is another owner; the same ssh user or certificate from two laptops is one; plain tcp
//! proves no one, says so, and the policy can refuse it; the per-user GPU limit counts
//! per identity.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::remote_daemons::{
    CERTIFICATES, PLAIN_ENDPOINT, SOCKET, Sshd, TLS_ENDPOINT, Way, dockerd2, envctl, is_root,
    project,
};
use crate::support::cli::{Envctl, Run, hermetic};
use crate::support::docker::{skip_or_panic, unique_name};
use crate::support::engines::TestEngine;

/// One "laptop": its host name and the login name its `/etc/passwd` gives uid 0.
struct Laptop {
    host: String,
    login: String,
    passwd: tempfile::TempDir,
}

impl Laptop {
    fn new(host: &str, login: &str) -> Laptop {
        let passwd = tempfile::tempdir().unwrap();
        std::fs::write(
            passwd.path().join("passwd"),
            format!("{login}:x:0:0:{login}:/root:/bin/sh\n"),
        )
        .unwrap();
        Laptop {
            host: host.to_string(),
            login: login.to_string(),
            passwd,
        }
    }

    /// envctl ARGUMENTS on this laptop, in `folder`, reaching the daemon `way` names.
    fn envctl(&self, folder: &Path, way: &Way, arguments: &[&str]) -> Run {
        let mut command = Command::new("unshare");
        command
            .args(["--uts", "--mount", "--", "sh", "-c"])
            .arg("hostname \"$0\" && mount --bind \"$1\" /etc/passwd && shift && exec \"$@\"")
            .arg(&self.host)
            .arg(self.passwd.path().join("passwd"))
            .arg(assert_cmd::cargo::cargo_bin("envctl"))
            .args(arguments);
        hermetic(&mut command, folder);
        way.apply(&mut command);
        Envctl::from_command(command)
            .timeout(Duration::from_secs(120))
            .run()
    }
}

/// The second daemon and root (namespaces, bind mounts), or `None` after saying why.
fn setting(test: &str) -> Option<TestEngine> {
    let engine = dockerd2(test)?;
    if !is_root() {
        skip_or_panic(
            "the laptops need namespaces of their own (`unshare --uts --mount`), which need root",
            test,
            "run the tests as root (.ci/run does)",
        );
        return None;
    }
    Some(engine)
}

/// A TLS client certificate with subject `CN=common_name`, signed by the CI's CA, in a
/// folder of its own laid out as `DOCKER_CERT_PATH` wants it.
fn client_certificate(common_name: &str) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let ca = Path::new(CERTIFICATES);
    std::fs::copy(ca.join("ca.pem"), at("ca.pem")).unwrap();
    std::fs::write(at("extensions"), "extendedKeyUsage=clientAuth\n").unwrap();
    let openssl = |arguments: &[&std::ffi::OsStr]| {
        let output = Command::new("openssl").args(arguments).output().unwrap();
        assert!(output.status.success(), "openssl {arguments:?}: {output:?}");
    };
    let path = |name: &str| at(name).into_os_string();
    let text = |text: &str| OsString::from(text);
    openssl(&[
        &text("req"),
        &text("-new"),
        &text("-newkey"),
        &text("rsa:2048"),
        &text("-nodes"),
        &text("-keyout"),
        &path("key.pem"),
        &text("-subj"),
        &text(&format!("/CN={common_name}")),
        &text("-out"),
        &path("request.csr"),
    ]);
    openssl(&[
        &text("x509"),
        &text("-req"),
        &text("-in"),
        &path("request.csr"),
        &text("-CA"),
        &ca.join("ca.pem").into_os_string(),
        &text("-CAkey"),
        &ca.join("ca-key.pem").into_os_string(),
        &text("-set_serial"),
        // A serial of its own per certificate: the time in nanoseconds.
        &text(&format!(
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        )),
        &text("-days"),
        &text("2"),
        &text("-extfile"),
        &path("extensions"),
        &text("-out"),
        &path("cert.pem"),
    ]);
    folder
}

/// The way to the second daemon over TLS with the client files in `folder`.
fn tls_way(folder: &Path) -> Way {
    Way {
        name: "tls",
        variables: vec![
            ("DOCKER_HOST".into(), TLS_ENDPOINT.into()),
            ("DOCKER_TLS_VERIFY".into(), "1".into()),
            ("DOCKER_CERT_PATH".into(), folder.as_os_str().to_owned()),
        ],
    }
}

fn way_to(name: &'static str, host: &str) -> Way {
    Way {
        name,
        variables: vec![("DOCKER_HOST".into(), host.into())],
    }
}

/// `way` with the host policy `policy` (a file written in `folder`) in force.
fn with_policy(way: &Way, folder: &Path, policy: &str) -> Way {
    let path: PathBuf = folder.join("policy.toml");
    std::fs::write(&path, policy).unwrap();
    let mut variables = way.variables.clone();
    variables.push(("ENVCTL_POLICY".into(), path.into()));
    Way {
        name: way.name,
        variables,
    }
}

/// The label `key` of container `name` on the second daemon.
fn label(name: &str, key: &str) -> String {
    let output = Command::new("docker")
        .args(["-H", &format!("unix://{SOCKET}"), "inspect", "--format"])
        .arg(format!("{{{{index .Config.Labels \"{key}\"}}}}"))
        .arg(name)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Whether container `name` runs on the second daemon.
fn running(name: &str) -> bool {
    let output = Command::new("docker")
        .args(["-H", &format!("unix://{SOCKET}"), "inspect", "--format"])
        .arg("{{.State.Running}}")
        .arg(name)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim() == "true"
}

/// The owner's laptop made the container over `way`; carol's laptop (same uid, another
/// machine) is refused `down`, `exec` and `logs` with the owner named, until she runs
/// the hint's `--other-user`.
fn another_laptop_is_refused(engine: &TestEngine, way: &Way, owner_host: &str, proof: &str) {
    let (folder, profile) = project(engine, &format!("identity-{}", way.name), "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let owner = Laptop::new(owner_host, "dave");
    let carol = Laptop::new(&unique_name("carol-laptop"), "carol");

    let up = owner.envctl(folder.path(), way, &["up", &profile, "--pull", "never"]);
    assert_eq!(up.code, 0, "{}: {up}", way.name);
    let identity = label(&container, "envctl.identity");
    assert_eq!(
        identity,
        format!("{proof}uid:0@{owner_host}"),
        "{}",
        way.name
    );
    assert_eq!(label(&container, "envctl.uid"), "0");

    // By the profile's name: carol has no container of it, and the owner's is left.
    let by_profile = carol.envctl(folder.path(), way, &["down", &profile]);
    assert_eq!(by_profile.code, 0, "{}: {by_profile}", way.name);
    assert!(
        by_profile.stderr.contains("nothing to stop"),
        "{}: {by_profile}",
        way.name
    );
    assert!(running(&container), "{}", way.name);
    // By the container's name (as the carol did): refused, the owner named.
    for arguments in [
        vec!["down", container.as_str()],
        vec!["exec", container.as_str(), "--", "true"],
        vec!["logs", container.as_str()],
    ] {
        let refused = carol.envctl(folder.path(), way, &arguments);
        assert_eq!(refused.code, 1, "{}: {arguments:?}: {refused}", way.name);
        assert!(
            refused.stderr.contains(&format!(
                "error: container `{container}` belongs to dave ({identity})"
            )),
            "{}: {refused}",
            way.name
        );
        assert!(
            refused.stderr.contains("add `--other-user`"),
            "{}: {refused}",
            way.name
        );
        assert!(running(&container), "{}: {arguments:?}", way.name);
    }
    // carol's own `ps` does not list it; the owner's laptop does.
    let ps = carol.envctl(folder.path(), way, &["--json", "ps"]);
    assert!(!ps.stdout.contains(&container), "{ps}");
    let ps = owner.envctl(folder.path(), way, &["--json", "ps"]);
    assert!(ps.stdout.contains(&container), "{ps}");
    // carol's `up --recreate` of the same profile makes her own beside it, and never
    // replaces the owner's, even named.
    let before = label(&container, "envctl.run");
    let _hers = engine.container_guard(format!("{container}-carol"));
    let hers = carol.envctl(
        folder.path(),
        way,
        &["up", &profile, "--pull", "never", "--recreate"],
    );
    assert_eq!(hers.code, 0, "{}: {hers}", way.name);
    assert_eq!(label(&format!("{container}-carol"), "envctl.user"), "carol");
    let named = carol.envctl(
        folder.path(),
        way,
        &[
            "up",
            &profile,
            "--pull",
            "never",
            "--recreate",
            "--name",
            &container,
        ],
    );
    assert_eq!(named.code, 1, "{}: {named}", way.name);
    assert!(
        named.stderr.contains("belongs to dave"),
        "{}: {named}",
        way.name
    );
    assert_eq!(label(&container, "envctl.run"), before, "{}", way.name);
    assert!(running(&container), "{}", way.name);
    // The hint, run: named with `--other-user`, it is stopped.
    let down = carol.envctl(
        folder.path(),
        way,
        &["down", &container, "--other-user", "--rm"],
    );
    assert_eq!(down.code, 0, "{}: {down}", way.name);
    assert!(!running(&container));
}

#[test]
fn the_same_uid_on_another_laptop_is_another_owner_over_the_unix_socket() {
    let test = "the_same_uid_on_another_laptop_is_another_owner_over_the_unix_socket";
    let Some(engine) = setting(test) else {
        return;
    };
    let way = way_to("unix", &format!("unix://{SOCKET}"));
    another_laptop_is_refused(&engine, &way, &unique_name("dave-laptop"), "");
}

#[test]
fn the_same_uid_on_another_laptop_is_another_owner_over_plain_tcp() {
    let test = "the_same_uid_on_another_laptop_is_another_owner_over_plain_tcp";
    let Some(engine) = setting(test) else {
        return;
    };
    let way = way_to("tcp", PLAIN_ENDPOINT);
    another_laptop_is_refused(&engine, &way, &unique_name("dave-laptop"), "unproven:");
}

#[test]
fn plain_tcp_proves_no_one_and_the_policy_can_refuse_it() {
    let test = "plain_tcp_proves_no_one_and_the_policy_can_refuse_it";
    let Some(engine) = setting(test) else {
        return;
    };
    let (folder, profile) = project(&engine, "identity-unproven", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let plain = way_to("tcp", PLAIN_ENDPOINT);

    // Said by doctor (a warning) and by up.
    let doctor = envctl(folder.path(), &plain, &["--json", "doctor"]);
    let report = doctor.json();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "docker.identity")
        .unwrap_or_else(|| panic!("no identity finding\n{doctor}"))
        .clone();
    assert_eq!(finding["status"], "warn", "{doctor}");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("proves no one"),
        "{doctor}"
    );
    let dry = envctl(
        folder.path(),
        &plain,
        &["up", &profile, "--pull", "never", "--dry-run"],
    );
    assert_eq!(dry.code, 0, "{dry}");
    assert!(
        dry.stderr.contains(&format!(
            "warning: plain tcp to {PLAIN_ENDPOINT} proves no one"
        )),
        "{dry}"
    );

    // The policy refuses such clients: nothing is made, and doctor fails.
    let refusing = with_policy(&plain, folder.path(), "[users]\nunproven = \"refuse\"\n");
    let refused = envctl(
        folder.path(),
        &refusing,
        &["up", &profile, "--pull", "never"],
    );
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("users.unproven = \"refuse\": plain tcp to"),
        "{refused}"
    );
    assert!(
        !Command::new("docker")
            .args(["-H", &format!("unix://{SOCKET}"), "inspect", &container])
            .output()
            .unwrap()
            .status
            .success(),
        "a refused up made {container}"
    );
    let doctor = envctl(folder.path(), &refusing, &["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor}");
    assert!(
        doctor
            .stdout
            .contains("the host policy refuses such clients")
            || doctor
                .stderr
                .contains("the host policy refuses such clients"),
        "{doctor}"
    );
    // TLS with a client certificate is proven: the same policy lets it up.
    let tls = with_policy(
        &Way::tls(),
        folder.path(),
        "[users]\nunproven = \"refuse\"\n",
    );
    let up = envctl(folder.path(), &tls, &["up", &profile, "--pull", "never"]);
    assert_eq!(up.code, 0, "{up}");
    assert_eq!(
        label(&container, "envctl.identity"),
        "tls:CN=envctl-ci-client"
    );
    let down = envctl(folder.path(), &tls, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
}

#[test]
fn a_certificate_is_one_owner_from_any_laptop_and_another_subject_is_another() {
    let test = "a_certificate_is_one_owner_from_any_laptop_and_another_subject_is_another";
    let Some(engine) = setting(test) else {
        return;
    };
    let (folder, profile) = project(&engine, "identity-tls", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    let alice_name = unique_name("alice");
    let alice = client_certificate(&alice_name);
    let carol = client_certificate(&unique_name("carol"));
    let alice_way = tls_way(alice.path());
    let carol_way = tls_way(carol.path());
    let first = Laptop::new(&unique_name("laptop-one"), "alice");
    let second = Laptop::new(&unique_name("laptop-two"), "al");

    let up = first.envctl(
        folder.path(),
        &alice_way,
        &["up", &profile, "--pull", "never"],
    );
    assert_eq!(up.code, 0, "{up}");
    assert_eq!(
        label(&container, "envctl.identity"),
        format!("tls:CN={alice_name}")
    );
    // Another certificate, same uid, same machine: not hers.
    let refused = first.envctl(folder.path(), &carol_way, &["down", &container]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains(&format!("belongs to alice (tls:CN={alice_name})")),
        "{refused}"
    );
    assert!(running(&container));
    // The same certificate from another laptop (another host and login name): hers.
    let exec = second.envctl(
        folder.path(),
        &alice_way,
        &["exec", &profile, "--", "echo", "same-owner"],
    );
    assert_eq!((exec.code, exec.stdout.trim()), (0, "same-owner"), "{exec}");
    let down = second.envctl(folder.path(), &alice_way, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
    assert!(!running(&container));
    assert_eq!(second.login, "al");
}

#[test]
fn the_same_ssh_user_from_two_laptops_is_one_owner() {
    let test = "the_same_ssh_user_from_two_laptops_is_one_owner";
    let Some(engine) = setting(test) else {
        return;
    };
    let Some(sshd) = Sshd::start(test, &engine.host) else {
        return;
    };
    let (folder, profile) = project(&engine, "identity-ssh", "");
    let container = format!("envctl-{profile}");
    let _guard = engine.container_guard(container.clone());
    // The ssh_config's alias: the login user (`root`) comes from there, as `ssh -G` says.
    let by_alias = sshd.way("ssh://gpu2");
    let by_address = sshd.way(&format!("ssh://root@127.0.0.1:{}", sshd.port));
    let first = Laptop::new(&unique_name("laptop-one"), "alice");
    let second = Laptop::new(&unique_name("laptop-two"), "bob");

    let up = first.envctl(
        folder.path(),
        &by_alias,
        &["up", &profile, "--pull", "never"],
    );
    assert_eq!(up.code, 0, "{up}\n{}", sshd.log());
    assert_eq!(label(&container, "envctl.identity"), "ssh:root@gpu2");
    let doctor = first.envctl(folder.path(), &by_alias, &["--json", "doctor"]);
    assert!(
        doctor
            .stdout
            .contains("you are `ssh:root@gpu2` to this daemon"),
        "{doctor}"
    );
    // The same login from another laptop, under another name for the server: one owner.
    let exec = second.envctl(
        folder.path(),
        &by_address,
        &["exec", &profile, "--", "echo", "same-owner"],
    );
    assert_eq!((exec.code, exec.stdout.trim()), (0, "same-owner"), "{exec}");
    let ps = second.envctl(folder.path(), &by_address, &["--json", "ps"]);
    let row = ps.json()["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == container.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{container} not listed as the owner's\n{ps}"));
    assert_eq!(row["identity"], "ssh:root@gpu2", "{ps}");
    // The same daemon through its unix socket on this machine is a local uid: another
    // identity, refused without `--other-user`.
    let local = way_to("unix", &format!("unix://{SOCKET}"));
    let refused = envctl(folder.path(), &local, &["down", &container]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("(ssh:root@gpu2)"), "{refused}");
    let down = second.envctl(folder.path(), &by_address, &["down", &profile, "--rm"]);
    assert_eq!(down.code, 0, "{down}");
    assert!(!running(&container));
}

#[test]
fn the_per_user_gpu_limit_counts_per_identity() {
    let test = "the_per_user_gpu_limit_counts_per_identity";
    let Some(engine) = setting(test) else {
        return;
    };
    let alice_name = unique_name("alice");
    let alice = client_certificate(&alice_name);
    let carol = client_certificate(&unique_name("carol"));
    // alice's other container holds 2 GPUs (labelled as `up` labels them; created only).
    let holder = unique_name("identity-holder");
    let _holder_guard = engine.container_guard(holder.clone());
    let made = Command::new("docker")
        .args(["-H", &format!("unix://{SOCKET}"), "create"])
        .args(["--label", "envctl.test=1", "--label", "envctl.profile=held"])
        .args(["--label", "envctl.uid=0", "--label", "envctl.user=alice"])
        .arg("--label")
        .arg(format!("envctl.identity=tls:CN={alice_name}"))
        .args([
            "--label",
            "envctl.gpus=count=2",
            "--gpus",
            "2",
            "--name",
            &holder,
        ])
        .arg(engine.test_image())
        .arg("true")
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (folder, profile) = project(&engine, "identity-gpus", "gpus = 2\n");
    let policy = "# shared box\n[limits]\nmax_gpus_per_user = 3\n";
    let dry = |way: &Way| {
        envctl(
            folder.path(),
            &with_policy(way, folder.path(), policy),
            &["up", &profile, "--pull", "never", "--dry-run", "--force"],
        )
    };
    // Same uid (0) for both: the identity, not the uid, decides whose GPUs they are.
    let refused = dry(&tls_way(alice.path()));
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("holds 2 GPUs already and the container asks for 2 more"),
        "{refused}"
    );
    let allowed = dry(&tls_way(carol.path()));
    assert_eq!(allowed.code, 0, "{allowed}");
}
