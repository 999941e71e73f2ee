//! The built binary, end to end: help, every `profiles` command, discovery order, exit
//! codes and JSON. Text output is pinned with insta snapshots (`tests/it/snapshots/`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::cli::envctl_in as envctl;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(directory: &Path, arguments: &[&str]) -> Output {
    let output = envctl(directory).args(arguments).output().unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn json(text: &str) -> Value {
    let value: Value = serde_json::from_str(text)
        .unwrap_or_else(|error| panic!("not one JSON document ({error}):\n{text}"));
    assert_eq!(
        value["schema_version"], 1,
        "every --json document carries schema_version 1"
    );
    value
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn help_and_version() {
    let directory = TempDir::new().unwrap();
    let help = run(directory.path(), &["--help"]);
    assert_eq!(help.code, 0);
    insta::assert_snapshot!("help", help.stdout);
    let profiles_help = run(directory.path(), &["profiles", "--help"]);
    assert_eq!(profiles_help.code, 0);
    insta::assert_snapshot!("profiles_help", profiles_help.stdout);
    let version = run(directory.path(), &["--version"]);
    assert_eq!(
        version.stdout.trim(),
        format!("envctl {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_2() {
    let directory = TempDir::new().unwrap();
    let unknown = run(directory.path(), &["profiles", "frobnicate"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("error:"), "{}", unknown.stderr);
    let missing = run(directory.path(), &["profiles", "check"]);
    assert_eq!(missing.code, 2);
    let bad_color = run(
        directory.path(),
        &["--color", "sometimes", "profiles", "list"],
    );
    assert_eq!(bad_color.code, 2);
    // Refused before any daemon is asked (DOCKER_HOST points nowhere), never a panic.
    for arguments in [
        &[
            "exec",
            "x",
            "nvidia-check",
            "--timeout",
            "18446744073709551615",
        ][..],
        &["exec", "x", "nvidia-check", "--timeout", "0"],
        // Duration flags are bounded: no panic on an instant overflow, no 30-year wait.
        &["stats", "--interval", "1e19"],
        &["stats", "--interval", "1e9"],
        &["stats", "--interval", "NaN"],
        &["down", "x", "--timeout", "86401"],
        &["exec", "x", "nvidia-check", "--", "ls"],
        &["exec", "x", "--quick", "--", "ls"],
    ] {
        let output = envctl(directory.path())
            .env("DOCKER_HOST", "unix:///nonexistent/envctl/docker.sock")
            .args(arguments)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains("error:"), "{arguments:?}: {stderr}");
        assert!(!stderr.contains("docker.sock"), "{arguments:?}: {stderr}");
    }
}

#[test]
fn list_shows_bundled_profiles() {
    let directory = TempDir::new().unwrap();
    let listed = run(directory.path(), &["profiles", "list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    insta::assert_snapshot!("profiles_list", listed.stdout);
    assert_eq!(listed.stderr, "", "no warnings about the bundled profiles");

    let listed = json(&run(directory.path(), &["profiles", "list", "--json"]).stdout);
    let profiles = listed["profiles"].as_array().unwrap();
    let names: Vec<&str> = profiles
        .iter()
        .map(|profile| profile["name"].as_str().unwrap())
        .collect();
    for required in [
        "pytorch-2.8",
        "pytorch-2.8-devel",
        "pytorch-2.8-cu126",
        "pytorch-2.7",
        "pytorch-2.9",
        "pytorch-2.10",
        "pytorch-2.11",
        "pytorch-2.12",
        "pytorch-2.13",
        "pytorch-2.14",
        "pytorch-2.15",
        "cuda-12.8-base",
        "cuda-13.0-base",
    ] {
        assert!(
            names.contains(&required),
            "bundled profile {required} missing from {names:?}"
        );
    }
    assert!(
        names.iter().any(|name| name.starts_with("ngc-")),
        "an NGC profile is bundled"
    );
    for profile in profiles {
        assert_eq!(profile["source"], "bundled");
        assert_eq!(
            profile["problems"], 0,
            "bundled profile is invalid: {profile}"
        );
    }
}

#[test]
fn bundled_profiles_are_sane() {
    let directory = TempDir::new().unwrap();
    let listed = json(&run(directory.path(), &["profiles", "list", "--json"]).stdout);
    for listed_profile in listed["profiles"].as_array().unwrap() {
        let name = listed_profile["name"].as_str().unwrap();
        let shown = run(directory.path(), &["profiles", "show", name, "--json"]);
        assert_eq!(shown.code, 0, "{name}: {}", shown.stderr);
        let profile = &json(&shown.stdout)["profile"]["profile"];
        assert!(
            profile["shm_size"].as_u64().unwrap_or(0) >= 1 << 30,
            "{name}: shm_size of at least 1g"
        );
        for port in profile["ports"].as_array().unwrap() {
            assert!(
                port["host_ip"] == "127.0.0.1" || port["host_ip"] == "::1",
                "{name}: bundled ports bind to loopback only: {port}"
            );
        }
        assert!(
            !profile["commands"].as_object().unwrap().is_empty(),
            "{name}: a [commands] example"
        );
        let stack = &profile["stack"];
        let image = profile["image"].as_str().unwrap();
        if let Some(cuda) = stack["cuda"].as_str() {
            assert!(
                image.contains(&format!("cuda{cuda}"))
                    || image.contains(&format!("cuda:{cuda}"))
                    || name.starts_with("ngc-"),
                "{name}: [stack] cuda {cuda} matches the tag {image}"
            );
        }
        if let Some(torch) = stack["torch"].as_str() {
            let release = torch.split('+').next().unwrap();
            assert!(
                image.contains(release) || name.starts_with("ngc-"),
                "{name}: [stack] torch {torch} matches the tag {image}"
            );
        }
    }
}

#[test]
fn show_resolves_extends_and_names_origins() {
    let directory = TempDir::new().unwrap();
    let shown = run(directory.path(), &["profiles", "show", "pytorch-2.8-devel"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    insta::assert_snapshot!("profiles_show_devel", shown.stdout);

    let document = json(
        &run(
            directory.path(),
            &["profiles", "show", "pytorch-2.8-devel", "--json"],
        )
        .stdout,
    );
    let resolved = &document["profile"];
    assert_eq!(resolved["chain"].as_array().unwrap().len(), 2);
    assert_eq!(
        resolved["origins"]["image"],
        "<bundled>/pytorch-2.8-devel.toml"
    );
    assert_eq!(
        resolved["origins"]["shm_size"],
        "<bundled>/pytorch-2.8.toml"
    );
    assert_eq!(resolved["config_hash"].as_str().unwrap().len(), 64);
}

/// Issue 40: `profiles show` (text) is the whole profile: written back as a file, it has
/// the same config hash (it left out `labels` and `placement`, both part of the hash).
#[test]
fn show_text_is_the_whole_profile_its_hash_included() {
    let directory = TempDir::new().unwrap();
    let profiles = directory.path().join("envctl");
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("labelled.toml"),
        "image = \"busybox:1.36\"\ngpus = 1\nplacement = \"idle\"\ncap_add = [\"IPC_LOCK\"]\n\n[labels]\n\"com.example.team\" = \"vision\"\nowner = \"ana\"\n\n[env]\nA = \"1\"\n",
    )
    .unwrap();
    let shown = run(directory.path(), &["profiles", "show", "labelled"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    for line in [
        "placement = \"idle\"",
        "[labels]",
        "\"com.example.team\" = \"vision\"",
    ] {
        assert!(
            shown.stdout.contains(line),
            "`{line}` in:\n{}",
            shown.stdout
        );
    }
    // The same name in another folder (the name is part of the hash).
    let copy = TempDir::new().unwrap();
    std::fs::create_dir_all(copy.path().join("envctl")).unwrap();
    std::fs::write(copy.path().join("envctl/labelled.toml"), &shown.stdout).unwrap();
    let hash = |folder: &Path| {
        json(&run(folder, &["profiles", "show", "labelled", "--json"]).stdout)["profile"]
            ["config_hash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(hash(copy.path()), hash(directory.path()));
}

#[test]
fn show_unknown_profile_suggests_a_name() {
    let directory = TempDir::new().unwrap();
    let shown = run(directory.path(), &["profiles", "show", "pytorch-2.88"]);
    // A name that names nothing: 1, as `docker exec nosuch` (issue 40).
    assert_eq!(shown.code, 1);
    assert_eq!(shown.stdout, "");
    insta::assert_snapshot!("profiles_show_unknown", shown.stderr);
}

#[test]
fn check_reports_every_problem_with_place_and_hint() {
    let directory = TempDir::new().unwrap();
    write(
        &directory.path().join("team.toml"),
        "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\nmemroy = \"16g\"\ngpus = \"al\"\nports = [\"8888:8888\", \"127.0.0.1:8888:9999\"]\n\n[stack]\npytorch = \"2.8.0\"\n",
    );
    let checked = run(directory.path(), &["profiles", "check", "team.toml"]);
    assert_eq!(checked.code, 2);
    insta::assert_snapshot!("profiles_check_invalid", checked.stderr);

    let report = json(
        &run(
            directory.path(),
            &["profiles", "check", "team.toml", "--json"],
        )
        .stdout,
    );
    assert_eq!(report["valid"], false);
    let diagnostics = report["files"][0]["diagnostics"].as_array().unwrap();
    let places: Vec<(u64, u64)> = diagnostics
        .iter()
        .map(|d| (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(places, [(2, 1), (3, 8), (4, 23), (7, 1)]);
}

#[test]
fn check_accepts_valid_files_and_names() {
    let directory = TempDir::new().unwrap();
    write(
        &directory.path().join("ok.toml"),
        "image = \"busybox:1.36\"\n",
    );
    let checked = run(
        directory.path(),
        &["profiles", "check", "ok.toml", "pytorch-2.8"],
    );
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    assert!(
        checked.stderr.contains("ok.toml is valid"),
        "{}",
        checked.stderr
    );
    let quiet = run(directory.path(), &["-q", "profiles", "check", "ok.toml"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
}

#[test]
fn discovery_order_project_path_user_bundled() {
    let directory = TempDir::new().unwrap();
    let root = directory.path();
    let profile = |image: &str| format!("image = \"{image}\"\n");
    write(&root.join("envctl/shared.toml"), &profile("project/shared"));
    write(&root.join("extra/shared.toml"), &profile("extra/shared"));
    write(&root.join("extra/only-extra.toml"), &profile("extra/only"));
    write(
        &root.join("xdg/envctl/profiles/shared.toml"),
        &profile("user/shared"),
    );
    write(
        &root.join("xdg/envctl/profiles/only-user.toml"),
        &profile("user/only"),
    );
    // A team override of a bundled profile that extends the bundled one of the same name.
    write(
        &root.join("envctl/pytorch-2.8.toml"),
        "extends = \"pytorch-2.8\"\nmemory = \"32g\"\n",
    );

    let listed = envctl(root)
        .env("ENVCTL_PROFILE_PATH", root.join("extra"))
        .args(["profiles", "list", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed = json(&String::from_utf8(listed.stdout).unwrap());
    let find = |name: &str| {
        listed["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|profile| profile["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .clone()
    };
    assert_eq!(
        (
            find("shared")["source"].clone(),
            find("shared")["image"].clone()
        ),
        ("project".into(), "project/shared".into())
    );
    assert_eq!(find("only-extra")["source"], "path");
    assert_eq!(find("only-user")["source"], "user");
    let overridden = find("pytorch-2.8");
    assert_eq!(overridden["source"], "project");
    assert_eq!(
        overridden["image"],
        "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime"
    );

    let shown = run(root, &["profiles", "show", "pytorch-2.8", "--json"]);
    let resolved = &json(&shown.stdout)["profile"];
    assert_eq!(resolved["profile"]["memory"], 32u64 << 30);
    assert_eq!(resolved["chain"][1], "<bundled>/pytorch-2.8.toml");
}

#[test]
fn new_writes_a_valid_profile_and_never_overwrites() {
    let directory = TempDir::new().unwrap();
    let root = directory.path();
    let created = run(root, &["profiles", "new", "team"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    assert!(
        created.stderr.contains("created envctl/team.toml"),
        "{}",
        created.stderr
    );
    let checked = run(root, &["profiles", "check", "envctl/team.toml"]);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    // The suggested next commands work as written: by name in ./envctl/, by path elsewhere.
    assert!(
        created.stderr.contains("`envctl profiles show team`"),
        "{}",
        created.stderr
    );
    let elsewhere = run(root, &["profiles", "new", "solo", "--directory", "dd"]);
    assert_eq!(elsewhere.code, 0, "{}", elsewhere.stderr);
    assert!(
        elsewhere
            .stderr
            .contains("`envctl profiles show dd/solo.toml`"),
        "{}",
        elsewhere.stderr
    );
    let shown = run(root, &["profiles", "show", "dd/solo.toml"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);

    std::fs::write(root.join("envctl/team.toml"), "# mine\nimage = \"x\"\n").unwrap();
    let again = run(root, &["profiles", "new", "team"]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(root.join("envctl/team.toml")).unwrap(),
        "# mine\nimage = \"x\"\n"
    );

    let invalid_name = run(root, &["profiles", "new", "Team Profile"]);
    assert_eq!(invalid_name.code, 2);
}

#[test]
fn new_from_copies_the_resolved_profile() {
    let directory = TempDir::new().unwrap();
    let root = directory.path();
    let created = run(
        root,
        &[
            "profiles",
            "new",
            "devel-copy",
            "--from",
            "pytorch-2.8-devel",
        ],
    );
    assert_eq!(created.code, 0, "{}", created.stderr);
    let copy = json(&run(root, &["profiles", "show", "devel-copy", "--json"]).stdout);
    let original = json(&run(root, &["profiles", "show", "pytorch-2.8-devel", "--json"]).stdout);
    let mut copied_profile = copy["profile"]["profile"].clone();
    copied_profile["name"] = original["profile"]["profile"]["name"].clone();
    // Issue 40: a project's copy asks for GPUs where there are some, so the README's quick
    // start `up`s on a laptop too; the rest is the bundled profile's.
    assert_eq!(original["profile"]["profile"]["gpus"], "all");
    assert_eq!(copied_profile["gpus"], "optional");
    copied_profile["gpus"] = original["profile"]["profile"]["gpus"].clone();
    // …and leaves out the unlimited memlock a daemon without CAP_SYS_RESOURCE refuses.
    let memlock = &original["profile"]["profile"]["ulimits"]["memlock"];
    assert_eq!(memlock["soft"], -1, "{memlock}");
    assert!(copied_profile["ulimits"].get("memlock").is_none());
    copied_profile["ulimits"]["memlock"] = memlock.clone();
    assert_eq!(
        copied_profile, original["profile"]["profile"],
        "the copy resolves to the same settings"
    );
    assert_eq!(copy["profile"]["source"], "project");
}

#[test]
fn color_follows_the_flag() {
    let directory = TempDir::new().unwrap();
    let always = run(
        directory.path(),
        &["--color", "always", "profiles", "show", "nope"],
    );
    assert!(
        always.stderr.contains("\u{1b}["),
        "colour when asked: {:?}",
        always.stderr
    );
    let never = run(directory.path(), &["profiles", "show", "nope"]);
    assert!(
        !never.stderr.contains("\u{1b}["),
        "NO_COLOR honoured: {:?}",
        never.stderr
    );
}

#[test]
fn symlink_loops_and_unreadable_files_in_profile_folders() {
    let directory = TempDir::new().unwrap();
    let root = directory.path();
    let folder = root.join("envctl");
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink("loop-b.toml", folder.join("loop-a.toml")).unwrap();
    std::os::unix::fs::symlink("loop-a.toml", folder.join("loop-b.toml")).unwrap();
    write(&folder.join("fine.toml"), "image = \"busybox:1.36\"\n");
    let listed = run(root, &["profiles", "list", "--json"]);
    assert_eq!(
        listed.code, 0,
        "one broken file does not break the listing: {}",
        listed.stderr
    );
    let listed = json(&listed.stdout);
    let problems = |name: &str| {
        listed["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|profile| profile["name"] == name)
            .unwrap()["problems"]
            .as_u64()
            .unwrap()
    };
    assert_eq!((problems("loop-a"), problems("fine")), (1, 0));
    let checked = run(root, &["profiles", "check", "envctl/loop-a.toml"]);
    assert_eq!(checked.code, 2);
    assert!(
        checked.stderr.contains("envctl/loop-a.toml:1:1"),
        "{}",
        checked.stderr
    );
    assert!(
        checked.stderr.contains("symbolic links"),
        "{}",
        checked.stderr
    );

    // Unreadable for a user who is not root (root reads everything, so run as `nobody`).
    write(&folder.join("secret.toml"), "image = \"busybox:1.36\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        folder.join("secret.toml"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    for path in [root, &folder] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|output| output.stdout == b"0\n")
        .unwrap_or(false);
    if is_root {
        let (_copy_folder, binary) = crate::support::cli::envctl_for_other_users();
        let output = std::process::Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(&binary)
            .args(["profiles", "check", "envctl/secret.toml"])
            .current_dir(root)
            .env("NO_COLOR", "1")
            .env("XDG_CONFIG_HOME", root.join("xdg"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("Permission denied") && stderr.contains("envctl/secret.toml:1:1"),
            "{stderr}"
        );
        assert!(stderr.contains("ls -l"), "{stderr}");
    } else {
        let checked = run(root, &["profiles", "check", "envctl/secret.toml"]);
        assert_eq!(checked.code, 2);
        assert!(
            checked.stderr.contains("Permission denied"),
            "{}",
            checked.stderr
        );
    }
}

/// Issue 12, class 16: `envctl … >&-` has nowhere to put its data; it says so and exits 1
/// instead of exiting 0 having shown nothing. A `/dev/null` the caller chose is not closed.
#[test]
fn a_closed_stdout_is_an_error_and_dev_null_is_not() {
    let folder = tempfile::tempdir().unwrap();
    let binary = assert_cmd::cargo::cargo_bin("envctl");
    let run = |redirect: &str| {
        let mut shell = std::process::Command::new("sh");
        crate::support::cli::hermetic(&mut shell, folder.path());
        shell
            .arg("-c")
            .arg(format!("exec \"$0\" profiles list {redirect}"))
            .arg(&binary)
            .output()
            .unwrap()
    };
    let closed = run(">&-");
    assert_eq!(closed.status.code(), Some(1), "{closed:?}");
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert!(stderr.contains("standard output is closed"), "{stderr}");

    for redirect in [">/dev/null", "1<>/dev/null"] {
        let null = run(redirect);
        assert_eq!(null.status.code(), Some(0), "{redirect}: {null:?}");
        assert!(null.stderr.is_empty(), "{redirect}: {null:?}");
    }
}

/// Issue 12, class 11: the limit on expanded port bindings holds for the profile with its
/// `-p` ports too, refused with the binding that crosses it before anything is expanded.
#[test]
fn ports_from_flags_count_against_the_binding_limit() {
    let folder = TempDir::new().unwrap();
    std::fs::create_dir(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/wide.toml"),
        "image = \"busybox:1\"\nports = [\"1-65535:1-65535\"]\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let output = envctl(folder.path())
        .args(["up", "wide", "--dry-run", "--json", "-p", "9:9/udp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "nothing may be printed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("more than 65535 port bindings") && stderr.contains("9:9/udp"),
        "{stderr}"
    );
    // The whole port space alone is allowed (the limit is one full space).
    let output = envctl(folder.path())
        .args(["up", "wide", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// Issue 15, item 11: `-q` and `--json` are honoured or refused, never ignored. `doctor -q`
/// prints only what needs attention (and the count); `completions` and `shell` refuse
/// `--json` with exit 2.
#[test]
fn quiet_doctor_prints_only_warnings_and_failures_and_json_is_refused_where_it_cannot_be() {
    let folder = TempDir::new().unwrap();
    std::fs::create_dir(folder.path().join("envctl")).unwrap();
    std::fs::write(
        folder.path().join("envctl/plain.toml"),
        "image = \"busybox:1\"\nmemory = \"64m\"\n",
    )
    .unwrap();
    let loud = envctl(folder.path())
        .args(["doctor", "plain"])
        .output()
        .unwrap();
    let quiet = envctl(folder.path())
        .args(["-q", "doctor", "plain"])
        .output()
        .unwrap();
    assert_eq!(loud.status.code(), quiet.status.code());
    let loud = String::from_utf8_lossy(&loud.stdout).to_string();
    let quiet = String::from_utf8_lossy(&quiet.stdout).to_string();
    assert!(quiet.lines().count() < loud.lines().count(), "{quiet}");
    for line in quiet.lines().filter(|line| line.starts_with("  ")) {
        assert!(
            line.starts_with("  !") || line.starts_with("  ✗") || line.starts_with("      hint:"),
            "-q printed a line that needs no attention: {line}\n{quiet}"
        );
    }
    assert_eq!(
        quiet.lines().last(),
        loud.lines().last(),
        "the summary still counts everything"
    );

    for arguments in [
        &["--json", "completions", "bash"][..],
        &["--json", "shell", "x"][..],
    ] {
        let output = envctl(folder.path()).args(arguments).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{arguments:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("--json is not available here"),
            "{arguments:?}: {output:?}"
        );
    }
}
