//! One server, many users (issue 28), on the real Docker daemon: this process's user and a
//! second one (uid [`OTHER_UID`], in no password database, given the socket's group, as a
//! member of the `docker` group is) run the same profile side by side; neither one's
//! `up`, `up --recreate`, `down` (named, by profile, or with no TARGET) touches the
//! other's container; `ps` shows each their own and `--all-users` everyone's with the
//! owner; a name comes from the real uid, never from a `getent` on `PATH` or `USER`; and
//! an image's `envctl.*` labels make nothing envctl's, nor make envctl read and print a
//! file they name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::cli::{Envctl, Run, envctl_for_other_users, hermetic};
use crate::support::docker::{
    ContainerGuard, ImageGuard, TEST_LABEL, container_exists, docker_stdout, require_daemon,
    skip_or_panic, test_image, unique_name,
};

/// The second user: a uid no password database names (the normal case on LDAP or SSSD
/// servers), so its name is its number.
const OTHER_UID: u32 = 12345;

/// Whether this process can run commands as another user (it is root).
fn can_switch_users(test: &str) -> bool {
    let root = std::fs::metadata("/proc/self")
        .map(|metadata| metadata.uid() == 0)
        .unwrap_or(false);
    root || skip_or_panic(
        "the tests of another user need root (to run as a second uid with setpriv)",
        test,
        "run the tests as root, as .ci/run does",
    )
}

/// A project folder of one user: `./envctl/NAME.toml`, a home and a config folder, owned
/// by that user.
struct Desk {
    folder: tempfile::TempDir,
    uid: Option<u32>,
}

impl Desk {
    fn new(uid: Option<u32>, profiles: &[(&str, &str)]) -> Desk {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        for (name, text) in profiles {
            std::fs::write(
                folder.path().join("envctl").join(format!("{name}.toml")),
                text,
            )
            .unwrap();
        }
        for sub in ["home", "xdg"] {
            std::fs::create_dir_all(folder.path().join(sub)).unwrap();
        }
        if let Some(uid) = uid {
            for entry in walk(folder.path()) {
                std::os::unix::fs::chown(&entry, Some(uid), None).unwrap();
            }
            std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        Desk { folder, uid }
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// envctl run by this desk's user, with `environment` added.
    fn run(&self, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
        match self.uid {
            None => Envctl::in_folder(self.path())
                .envs(environment.iter().copied())
                .args(arguments)
                .run(),
            Some(uid) => {
                let (_copy, binary) = envctl_for_other_users();
                let socket_group = std::fs::metadata("/var/run/docker.sock")
                    .map(|metadata| metadata.gid())
                    .unwrap();
                let mut command = Command::new("setpriv");
                hermetic(&mut command, self.path());
                command
                    .args([
                        &format!("--reuid={uid}"),
                        &format!("--regid={socket_group}"),
                        "--clear-groups",
                        "--",
                    ])
                    .arg(&binary)
                    .args(arguments)
                    .env("PATH", "/usr/local/bin:/usr/bin:/bin");
                let run = Envctl::from_command(command)
                    .envs(environment.iter().copied())
                    .run();
                drop(_copy);
                run
            }
        }
    }
}

/// Every path under `root`, `root` included.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    let mut index = 0;
    while index < found.len() {
        if found[index].is_dir() {
            let mut children: Vec<PathBuf> = std::fs::read_dir(&found[index])
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            found.append(&mut children);
        }
        index += 1;
    }
    found
}

fn label(container: &str, key: &str) -> String {
    docker_stdout([
        "container",
        "inspect",
        "-f",
        &format!("{{{{index .Config.Labels \"{key}\"}}}}"),
        container,
    ])
}

fn container_id(container: &str) -> String {
    docker_stdout(["container", "inspect", "-f", "{{.Id}}", container])
}

fn names(ps: &Value) -> Vec<String> {
    ps["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["name"].as_str().unwrap().to_string())
        .collect()
}

/// A folder holding a `getent` that would name the other uid `alice`, and a PATH that
/// finds it first.
fn plant_a_getent_naming_alice() -> (tempfile::TempDir, String) {
    let planted = tempfile::tempdir().unwrap();
    std::fs::set_permissions(planted.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let getent = planted.path().join("getent");
    std::fs::write(
        &getent,
        format!("#!/bin/sh\necho 'alice:x:{OTHER_UID}:{OTHER_UID}::/home/alice:/bin/sh'\n"),
    )
    .unwrap();
    std::fs::set_permissions(&getent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted_path = format!("{}:/usr/local/bin:/usr/bin:/bin", planted.path().display());
    (planted, planted_path)
}

/// Each user's profile name reaches their own container, a plain `up` again meets it, and
/// `ps` and `stats` show each their own, or everyone's with `--all-users`.
fn each_user_reaches_and_lists_their_own(
    (me, my_id): (&Desk, &str),
    (other, their_id): (&Desk, &str),
    profile: &str,
    mine: &str,
    theirs: &str,
) {
    // Each user's profile name reaches their own container (the hostname is its id).
    for (desk, id) in [(me, my_id), (other, their_id)] {
        let run = desk.run(&["exec", profile, "--", "cat", "/etc/hostname"], &[]);
        assert_eq!(run.code, 0, "{run}");
        assert_eq!(run.stdout.trim(), &id[..12], "{run}");
    }
    // A plain `up` again meets the user's own container.
    let run = other.run(&["up", profile, "--pull", "never"], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stderr.contains("already running"), "{run}");

    // `ps` shows each their own; `--all-users` both, with the owner.
    let listed = other.run(&["ps", "--json"], &[]);
    assert_eq!(listed.code, 0, "{listed}");
    let listed = names(&listed.json());
    assert!(
        listed.iter().any(|name| name == theirs) && !listed.iter().any(|name| name == mine),
        "{listed:?}"
    );
    let everyone = other.run(&["ps", "--all-users", "--json"], &[]);
    let everyone = everyone.json();
    let rows = everyone["containers"].as_array().unwrap();
    let owner_of = |name: &str| {
        rows.iter()
            .find(|row| row["name"] == name)
            .map(|row| row["owner"].clone())
    };
    assert_eq!(owner_of(theirs), Some(Value::from(OTHER_UID.to_string())));
    assert!(owner_of(mine).is_some(), "{everyone:#}");
    let table = other.run(&["ps", "--all-users"], &[]);
    assert!(table.stdout.starts_with("OWNER"), "{table}");
    // `stats` likewise: the user's own, or with `--all-users` everyone's.
    let sampled = |arguments: &[&str]| {
        let run = other.run(arguments, &[]);
        assert_eq!(run.code, 0, "{run}");
        let snapshot = run.json();
        snapshot["containers"]
            .as_array()
            .unwrap_or_else(|| panic!("{run}"))
            .iter()
            .map(|row| row["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let own = sampled(&["stats", "--once", "--json"]);
    assert!(
        own.iter().any(|name| name == theirs) && !own.iter().any(|name| name == mine),
        "{own:?}"
    );
    let all = sampled(&["stats", "--once", "--json", "--all-users"]);
    assert!(
        all.iter().any(|name| name == theirs) && all.iter().any(|name| name == mine),
        "{all:?}"
    );
}

/// The other user names the first user's container: refused, whatever the command, and
/// the container is still the one the first user made.
fn the_other_user_is_refused_the_first_users_container(
    other: &Desk,
    profile: &str,
    mine: &str,
    my_id: &str,
) {
    // The other user names the first user's container: refused, whatever the command.
    let owner = label(mine, "envctl.user");
    for arguments in [
        vec![
            "up",
            profile,
            "--name",
            mine,
            "--recreate",
            "--pull",
            "never",
        ],
        vec!["down", mine, "--rm"],
        vec!["exec", mine, "--", "true"],
        vec!["logs", mine],
    ] {
        let run = other.run(&arguments, &[]);
        assert_eq!(run.code, 1, "{arguments:?}:\n{run}");
        assert!(
            run.stderr
                .contains(&format!("error: container `{mine}` belongs to {owner}")),
            "{arguments:?}:\n{run}"
        );
    }
    assert_eq!(
        container_id(mine),
        my_id,
        "the first user's container was replaced"
    );
}

#[test]
fn two_users_run_one_profile_side_by_side_and_never_touch_each_other() {
    if !require_daemon() || !can_switch_users("two_users_run_one_profile_side_by_side") {
        return;
    }
    let profile = unique_name("shared");
    let text = format!("image = \"{}\"\n", test_image());
    let plain = format!("envctl-{profile}");
    let root_name = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let root_name = String::from_utf8_lossy(&root_name.stdout)
        .trim()
        .to_string();
    let _guards = [
        ContainerGuard::new(plain.clone()),
        ContainerGuard::new(format!("{plain}-{OTHER_UID}")),
        ContainerGuard::new(format!("{plain}-{root_name}")),
    ];
    let me = Desk::new(None, &[(&profile, &text)]);
    let other = Desk::new(Some(OTHER_UID), &[(&profile, &text)]);
    // A `getent` on PATH that would name the uid `alice`, and `USER=alice`: neither is
    // asked; the uid is in no database, so its name is its number.
    let (_planted, planted_path) = plant_a_getent_naming_alice();
    let hostile = [("PATH", planted_path.as_str()), ("USER", "alice")];

    // Both users start the same profile at the same moment: both get a container, one
    // `envctl-PROFILE`, the other `envctl-PROFILE-USER`.
    let (mine_run, their_run) = std::thread::scope(|scope| {
        let first = scope.spawn(|| me.run(&["up", &profile, "--pull", "never"], &[]));
        let second = scope.spawn(|| other.run(&["up", &profile, "--pull", "never"], &hostile));
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(mine_run.code, 0, "{mine_run}");
    assert_eq!(
        their_run.code, 0,
        "the second user's up of the same profile:\n{their_run}"
    );
    let mine = mine_run.stdout.trim().to_string();
    let theirs = their_run.stdout.trim().to_string();
    assert!(
        (mine == plain && theirs == format!("{plain}-{OTHER_UID}"))
            || (theirs == plain && mine == format!("{plain}-{root_name}")),
        "{mine_run}\n{their_run}"
    );
    assert_eq!(label(&theirs, "envctl.uid"), OTHER_UID.to_string());
    assert_eq!(label(&theirs, "envctl.user"), OTHER_UID.to_string());
    let my_id = container_id(&mine);
    let their_id = container_id(&theirs);

    each_user_reaches_and_lists_their_own(
        (&me, &my_id),
        (&other, &their_id),
        &profile,
        &mine,
        &theirs,
    );

    the_other_user_is_refused_the_first_users_container(&other, &profile, &mine, &my_id);

    // `down --rm` with no TARGET, from an unrelated folder: the user's own only.
    let elsewhere = Desk::new(Some(OTHER_UID), &[]);
    let run = elsewhere.run(&["down", "--rm"], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(!container_exists(&theirs), "{run}");
    assert_eq!(
        container_id(&mine),
        my_id,
        "no-TARGET down took the first user's"
    );

    // The first user's `down --rm` of the profile is theirs to do.
    let run = other.run(&["up", &profile, "--pull", "never"], &[]);
    assert_eq!(run.code, 0, "{run}");
    let theirs = run.stdout.trim().to_string();
    let run = me.run(&["down", &theirs, "--rm"], &[]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr.contains(&format!("belongs to {OTHER_UID}")),
        "{run}"
    );
    assert!(run.stderr.contains("--other-user"), "{run}");
    // The hint is a command: named, with the flag that says so.
    let run = me.run(&["down", &theirs, "--rm", "--other-user"], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(!container_exists(&theirs), "{run}");
    let run = me.run(&["down", &profile, "--rm"], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(!container_exists(&mine), "{run}");
}

#[test]
fn an_images_envctl_labels_make_nothing_envctls_and_name_no_file_to_read() {
    if !require_daemon() {
        return;
    }
    let profile = unique_name("forged");
    let secrets = tempfile::tempdir().unwrap();
    let secret = secrets.path().join("token.toml");
    std::fs::write(&secret, "hf_SECRETVALUE1234567890\n").unwrap();
    // An image whose labels claim a profile, a profile file and a run.
    let image = format!("envctl-test/forged:{}", unique_name("t"));
    let _image_guard = ImageGuard::new(image.clone());
    let base = unique_name("forged-base");
    let _base_guard = ContainerGuard::new(base.clone());
    docker_stdout([
        "create",
        "--label",
        TEST_LABEL,
        "--name",
        &base,
        &test_image(),
    ]);
    docker_stdout([
        "commit",
        "--change",
        &format!("LABEL envctl.profile={profile}"),
        "--change",
        &format!("LABEL envctl.profile-file={}", secret.display()),
        "--change",
        "LABEL envctl.run=1-forged",
        "--change",
        "LABEL envctl.uid=0",
        "--change",
        &format!("LABEL {}", TEST_LABEL),
        &base,
        &image,
    ]);
    // A plain `docker run` of it.
    let plain = unique_name("plain");
    let _plain_guard = ContainerGuard::new(plain.clone());
    docker_stdout([
        "run", "-d", "--label", TEST_LABEL, "--name", &plain, &image, "sleep", "300",
    ]);
    let me = Desk::new(None, &[(&profile, &format!("image = \"{image}\"\n"))]);
    let listed = me.run(&["ps", "--all-users", "--json"], &[]);
    assert_eq!(listed.code, 0, "{listed}");
    assert!(!names(&listed.json()).contains(&plain), "{listed}");
    let run = me.run(&["down", &plain, "--rm"], &[]);
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stderr.contains("was not created by envctl"), "{run}");
    assert!(container_exists(&plain));
    // The profile's name does not reach it either.
    let run = me.run(&["down", &profile, "--rm"], &[]);
    assert!(container_exists(&plain), "{run}");
    // A command of it reads no file its image's label names, and prints none.
    let run = me.run(&["exec", &plain, "hello"], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        !run.stderr.contains("SECRETVALUE") && !run.stdout.contains("SECRETVALUE"),
        "{run}"
    );

    // envctl's own container from that image is envctl's, and the user's.
    let own = format!("envctl-{profile}");
    let _own_guard = ContainerGuard::new(own.clone());
    let run = me.run(&["up", &profile, "--pull", "never"], &[]);
    assert_eq!(run.code, 0, "{run}");
    let listed = me.run(&["ps", "--json"], &[]);
    let listed = names(&listed.json());
    assert!(
        listed.contains(&own) && !listed.contains(&plain),
        "{listed:?}"
    );
    // The profile file its label names turned into something else (a token): the user's
    // own container still reads it, but never prints it.
    std::fs::write(
        me.path().join("envctl").join(format!("{profile}.toml")),
        "hf_SECRETVALUE1234567890\n",
    )
    .unwrap();
    // `hello` is no named command it could find, so it runs as a command (127).
    let run = me.run(&["exec", &own, "hello"], &[]);
    assert_eq!(run.code, 127, "{run}");
    assert!(
        !run.stderr.contains("SECRETVALUE") && !run.stdout.contains("SECRETVALUE"),
        "{run}"
    );
    // nvidia-check reads the profile for its expectations: the file is named, not quoted.
    let run = me.run(
        &["exec", &own, "nvidia-check", "--quick", "--timeout", "30"],
        &[],
    );
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("is not a valid profile now"), "{run}");
    assert!(!said.contains("SECRETVALUE"), "{run}");
    let run = me.run(&["down", &own, "--rm"], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(!container_exists(&own) && container_exists(&plain), "{run}");
}
