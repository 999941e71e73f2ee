//! The host policy (`ENVCTL_POLICY`, issue 18) through the built binary: `up --dry-run`
//! refused by each rule with the rule and the policy's line, a profile within the limits
//! passing, a malformed policy as invalid input with file:line, doctor showing the policy
//! in force, and on the real daemon: a refused `up` creates nothing, an allowed one labels
//! its container with the user.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, container_exists, docker_stdout, require_daemon, test_image, unique_name,
};
use crate::support::nvml::{fixture, stub_library};

/// A folder with `./policy.toml` and the profile `./envctl/<name>.toml`.
struct World {
    folder: tempfile::TempDir,
    profile: String,
}

impl World {
    fn new(policy: &str, profile: &str) -> World {
        World::named("box", policy, profile)
    }

    fn named(name: &str, policy: &str, profile: &str) -> World {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        std::fs::write(folder.path().join("policy.toml"), policy).unwrap();
        std::fs::write(
            folder.path().join("envctl").join(format!("{name}.toml")),
            profile,
        )
        .unwrap();
        World {
            folder,
            profile: name.to_string(),
        }
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// `envctl ARGUMENTS…` with `ENVCTL_POLICY=policy.toml` and `environment`.
    fn run(&self, arguments: &[&str], environment: &[(&str, &Path)]) -> Run {
        Envctl::in_folder(self.path())
            .env("ENVCTL_POLICY", "policy.toml")
            .envs(environment.iter().copied())
            .args(arguments)
            .run()
    }

    /// A dry run as `up --force` would go: the policy is judged whatever the host's
    /// doctor verdict (`--force` never passes a policy).
    fn dry_run(&self) -> Run {
        self.run(&["up", &self.profile, "--dry-run", "--force"], &[])
    }
}

/// Asserts that `run` is the policy's refusal naming `rule` on `line`, and returns the
/// refusal's `caused by:` line for that rule.
fn refused<'a>(run: &'a Run, rule: &str, line: usize) -> &'a str {
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout.is_empty(),
        "a refused dry run shows no body\n{run}"
    );
    // The error first, after nothing but the `--force` warnings of doctor's verdict (the
    // dry run judges before it places, as `up` does).
    let (before, _) = run
        .stderr
        .split_once("error: the host policy refuses this container\n")
        .unwrap_or_else(|| panic!("no policy refusal\n{run}"));
    assert!(
        before
            .lines()
            .all(|line| line.starts_with("warning: ")
                && line.ends_with("(would start anyway: --force)")),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("hint: the host's admin sets these limits in `policy.toml`"),
        "{run}"
    );
    let prefix = format!("  caused by: policy.toml:{line}: {rule} = ");
    run.stderr
        .lines()
        .find(|text| text.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}…` line\n{run}"))
}

#[test]
fn each_rule_refuses_a_dry_run_with_its_line() {
    let cases = [
        (
            "[limits]\nmax_gpus_per_container = 2\n",
            "image = \"busybox:1.36\"\ngpus = 3\n",
            "limits.max_gpus_per_container",
            2,
            "= 2: the container asks for 3 GPUs",
        ),
        (
            "[limits]\nmax_memory = \"1g\"\n",
            "image = \"busybox:1.36\"\nmemory = \"2g\"\n",
            "limits.max_memory",
            2,
            "= \"1g\": the container asks for memory = \"2g\"",
        ),
        (
            "[limits]\nmax_cpus = 2\n",
            "image = \"busybox:1.36\"\ncpus = 4\n",
            "limits.max_cpus",
            2,
            "= 2: the container asks for cpus = 4",
        ),
        (
            "[limits]\n\nrequire_memory_limit = true\n",
            "image = \"busybox:1.36\"\n",
            "limits.require_memory_limit",
            3,
            "= true: the container sets no memory limit",
        ),
        (
            "[images]\nregistries = [\"registry.example.com\"]\n",
            "image = \"busybox:1.36\"\n",
            "images.registries",
            2,
            "= [\"registry.example.com\"]: image `busybox:1.36` comes from registry `docker.io`",
        ),
        (
            "[ports]\nloopback_only = true\n",
            "image = \"busybox:1.36\"\nports = [\"0.0.0.0:8888:8888\"]\n",
            "ports.loopback_only",
            2,
            "= true: the container publishes port 8888/tcp on `0.0.0.0`",
        ),
    ];
    for (policy, profile, rule, line, said) in cases {
        let world = World::new(policy, profile);
        let run = world.dry_run();
        let cause = refused(&run, rule, line);
        assert!(cause.contains(said), "{rule}: {cause}\n{run}");
        // The same profile with no policy file is a dry run like any other.
        std::fs::remove_file(world.path().join("policy.toml")).unwrap();
        let allowed = world.dry_run();
        assert_eq!(allowed.code, 0, "{rule} without a policy\n{allowed}");
        assert!(allowed.stdout.starts_with("docker run "), "{allowed}");
    }
}

#[test]
fn all_gpus_count_as_many_as_nvml_sees_and_unknown_is_refused() {
    let world = World::new(
        "[limits]\nmax_gpus_per_container = 4\n",
        "image = \"busybox:1.36\"\ngpus = \"all\"\n",
    );
    let library = stub_library();
    let machine = fixture("healthy-8x-h100.conf");
    let eight = world.run(
        &["up", "box", "--dry-run", "--force"],
        &[
            ("ENVCTL_NVML_LIBRARY", library.as_path()),
            ("ENVCTL_NVML_STUB_FIXTURE", machine.as_path()),
        ],
    );
    let cause = refused(&eight, "limits.max_gpus_per_container", 2);
    assert!(cause.ends_with("the container asks for 8 GPUs"), "{eight}");
    let unknown = world.run(
        &["up", "box", "--dry-run", "--force"],
        &[(
            "ENVCTL_NVML_LIBRARY",
            Path::new("/nonexistent/libnvidia-ml.so.1"),
        )],
    );
    let cause = refused(&unknown, "limits.max_gpus_per_container", 2);
    assert!(
        cause.contains("how many this host has is unknown"),
        "{unknown}"
    );
}

#[test]
fn a_profile_within_every_limit_passes() {
    let world = World::new(
        "[limits]\nmax_gpus_per_container = 0\nmax_gpus_per_user = 0\nmax_memory = \"8g\"\nmax_cpus = 4\nrequire_memory_limit = true\n[images]\nregistries = [\"docker.io\"]\n[ports]\nloopback_only = true\n",
        "image = \"busybox:1.36\"\nmemory = \"8g\"\ncpus = 4\nports = [\"8888:8888\", \"[::1]:9000:9000\"]\n",
    );
    let run = world.dry_run();
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("--memory 8g"), "{run}");
    // Nothing refused: at most the doctor verdict's warnings (`cpus = 4` on a smaller
    // host), which a dry run judges as `up --force` would.
    assert!(
        run.stderr.lines().all(|line| line.starts_with("warning: ")),
        "{run}"
    );
}

#[test]
fn a_malformed_policy_is_invalid_input_with_its_place() {
    let world = World::new(
        "[limits]\nmax_memory = \"64g\"\nmax_gpus_per_containr = 2\nmax_cpus = -1\n",
        "image = \"busybox:1.36\"\n",
    );
    let run = world.dry_run();
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stdout.is_empty(), "{run}");
    for expected in [
        "error: unknown key `max_gpus_per_containr` in `[limits]`\n --> policy.toml:3:1\n",
        "= hint: did you mean `max_gpus_per_container`?",
        "error: `limits.max_cpus` must be greater than 0 and at most 4096, and at least 0.01 (Docker's smallest share)\n --> policy.toml:4:12\n",
        "error: invalid host policy: 2 problems in `policy.toml`",
    ] {
        assert!(run.stderr.contains(expected), "{expected}\n{run}");
    }
    let broken = World::new("[limits\n", "image = \"busybox:1.36\"\n").dry_run();
    assert_eq!(broken.code, 2, "{broken}");
    assert!(broken.stderr.contains("invalid TOML"), "{broken}");
    assert!(broken.stderr.contains("--> policy.toml:1:"), "{broken}");
    // A folder where the file should be is named, not taken for "no policy".
    let folder = World::new("", "image = \"busybox:1.36\"\n");
    std::fs::remove_file(folder.path().join("policy.toml")).unwrap();
    std::fs::create_dir(folder.path().join("policy.toml")).unwrap();
    let run = folder.dry_run();
    assert_eq!(run.code, 2, "{run}");
    assert!(
        run.stderr
            .contains("error: the host policy `policy.toml` is a folder, not a regular file"),
        "{run}"
    );
}

#[test]
fn doctor_shows_the_policy_in_force() {
    let world = World::new(
        "# the team's box\n[limits]\nmax_gpus_per_container = 2\nmax_memory = \"64g\"\n[ports]\nloopback_only = true\n",
        "image = \"busybox:1.36\"\n",
    );
    let human = world.run(&["doctor"], &[]);
    for line in [
        "Host policy (policy.toml)",
        "  · limits.max_gpus_per_container = 2 (line 3)",
        "  · limits.max_memory = \"64g\" (line 4)",
        "  · ports.loopback_only = true (line 6)",
    ] {
        assert!(
            human.stdout.lines().any(|text| text.ends_with(line)),
            "{line}\n{human}"
        );
    }
    let json = world.run(&["--json", "doctor"], &[]);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(
        report["policy"],
        serde_json::json!({
            "path": "policy.toml",
            "origin": {"kind": "file"},
            "rules": [
                {"rule": "limits.max_gpus_per_container", "value": 2, "line": 3},
                {"rule": "limits.max_memory", "value": "64g", "line": 4},
                {"rule": "ports.loopback_only", "value": true, "line": 6},
            ]
        })
    );
    std::fs::remove_file(world.path().join("policy.toml")).unwrap();
    let none = world.run(&["--json", "doctor"], &[]);
    let report: Value = serde_json::from_str(&none.stdout).unwrap();
    assert_eq!(report["policy"], Value::Null, "{none}");
    assert!(!none.stdout.contains("policy.invalid"), "{none}");
}

#[test]
fn doctor_fails_on_a_malformed_policy_without_crashing() {
    let world = World::new("[limits]\nmax_gpus = 2\n", "image = \"busybox:1.36\"\n");
    std::fs::remove_file(world.path().join("policy.toml")).unwrap();
    // Without a policy this host's doctor passes or fails on its own; with the bad policy
    // it must fail, and say where.
    let baseline = world.run(&["--json", "doctor"], &[]);
    std::fs::write(world.path().join("policy.toml"), "[limits]\nmax_gpus = 2\n").unwrap();
    let run = world.run(&["--json", "doctor"], &[]);
    assert_eq!(run.code, 1, "{run}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["verdict"], "fail", "{run}");
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "policy.invalid")
        .unwrap_or_else(|| panic!("no policy.invalid finding\n{run}"));
    assert_eq!(finding["status"], "fail");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("policy.toml:2:1: unknown key `max_gpus` in `[limits]`"),
        "{finding:#}"
    );
    assert!(run.stderr.contains("--> policy.toml:2:1"), "{run}");
    assert!(
        !baseline.stdout.contains("policy.invalid"),
        "{}",
        baseline.stdout
    );
    let human = world.run(&["doctor"], &[]);
    assert_eq!(human.code, 1, "{}", human.stdout);
    assert!(human.stdout.contains("✗ Host policy\n"), "{}", human.stdout);
}

/// The login name of this process's user, as `id -un` says it.
fn login_name() -> String {
    let output = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

#[test]
fn a_refused_up_creates_nothing_and_an_allowed_one_names_its_user() {
    if !require_daemon() {
        return;
    }
    let name = unique_name("policy");
    let container = format!("envctl-{name}");
    let _guard = ContainerGuard::new(container.as_str());
    let world = World::named(
        &name,
        "[limits]\nmax_memory = \"64m\"\n",
        &format!("image = \"{}\"\nmemory = \"128m\"\n", test_image()),
    );
    let run = world.run(&["up", &name, "--pull", "never", "--force"], &[]);
    refused(&run, "limits.max_memory", 2);
    assert!(
        !container_exists(&container),
        "a refused up made {container}\n{run}"
    );
    std::fs::write(
        world.path().join("policy.toml"),
        "[limits]\nmax_memory = \"128m\"\n",
    )
    .unwrap();
    let run = world.run(&["up", &name, "--pull", "never"], &[]);
    assert_eq!(run.code, 0, "{run}");
    let label = docker_stdout([
        "container",
        "inspect",
        "-f",
        "{{index .Config.Labels \"envctl.user\"}}",
        container.as_str(),
    ]);
    assert_eq!(label, login_name());
}

#[test]
fn the_per_user_limit_counts_the_gpus_the_users_other_containers_hold() {
    if !require_daemon() {
        return;
    }
    let user = login_name();
    // Another container of this user holds 2 GPUs (made as `up` makes them: labelled with
    // the user and its GPUs; created, not started).
    let holder = unique_name("policy-holder");
    let _guard = ContainerGuard::new(holder.clone());
    docker_stdout([
        "create",
        "--label",
        "envctl.test=1",
        "--label",
        &format!("envctl.user={user}"),
        "--label",
        "envctl.gpus=count=2",
        "--gpus",
        "2",
        "--name",
        &holder,
        &test_image(),
    ]);
    let world = World::new(
        "# shared box\n[limits]\nmax_gpus_per_user = 3\n",
        "image = \"busybox:1.36\"\ngpus = [\"0\", \"1\"]\n",
    );
    // One GPU fits beside the two held.
    let one = World::new(
        "# shared box\n[limits]\nmax_gpus_per_user = 3\n",
        "image = \"busybox:1.36\"\ngpus = [\"0\"]\n",
    );
    // Other tests' `up`s on this daemon run as the same user, and their GPU containers
    // count too while they exist: run again until only this test's holder is counted.
    let started = std::time::Instant::now();
    loop {
        let run = world.dry_run();
        let allowed = one.dry_run();
        let cause = refused(&run, "limits.max_gpus_per_user", 3).to_string();
        assert!(
            cause.contains(&format!("= 3: user `{user}`")),
            "{cause}\n{run}"
        );
        let alone = cause.contains("holds 2 GPUs already and the container asks for 2 more");
        if alone && allowed.code == 0 {
            break;
        }
        let others = !alone || allowed.stderr.contains("already and the container asks");
        assert!(
            others && started.elapsed() < std::time::Duration::from_secs(120),
            "the per-user count is not the holder's 2 GPUs:\n{run}\n{allowed}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Issue 28: doctor judges each profile by the policy, with the same rule, value and
/// file:line as `up`'s refusal, and fails where `up` would refuse.
#[test]
fn doctor_judges_each_profile_by_the_policy_as_up_does() {
    let world = World::new(
        "[limits]\nmax_gpus_per_container = 2\n[ports]\nloopback_only = true\n",
        "image = \"busybox:1.36\"\ngpus = 4\nports = [\"0.0.0.0:8888:8888\"]\n",
    );
    let refused_up = world.dry_run();
    let causes: Vec<&str> = refused_up
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix("  caused by: "))
        .collect();
    assert_eq!(causes.len(), 2, "{refused_up}");
    let json = world.run(&["--json", "doctor", "box"], &[]);
    assert_eq!(json.code, 1, "{json}");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    let said: Vec<&str> = report["profiles"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == "profile.policy")
        .map(|finding| {
            assert_eq!(finding["status"], "fail", "{finding}");
            finding["message"].as_str().unwrap()
        })
        .collect();
    assert_eq!(said, causes, "doctor and up word the refusal alike\n{json}");
    assert_eq!(report["profiles"][0]["verdict"], "fail", "{json}");
    // Within the limits: no policy finding.
    std::fs::write(
        world.path().join("envctl/box.toml"),
        "image = \"busybox:1.36\"\ngpus = 2\nports = [\"8888:8888\"]\n",
    )
    .unwrap();
    let json = world.run(&["--json", "doctor", "box"], &[]);
    assert!(!json.stdout.contains("profile.policy"), "{json}");
}

/// Issue 28: GPUs asked for through the environment count as the GPUs they name, and a
/// per-user limit refuses them (it counts users' GPUs by their requests).
#[test]
fn gpus_hidden_in_the_environment_count_and_a_per_user_limit_refuses_them() {
    let world = World::new(
        "[limits]\nmax_gpus_per_container = 2\n",
        "image = \"busybox:1.36\"\nenv = { NVIDIA_VISIBLE_DEVICES = \"0,1,2\" }\n",
    );
    let run = world.dry_run();
    let cause = refused(&run, "limits.max_gpus_per_container", 2);
    assert!(cause.ends_with("the container asks for 3 GPUs"), "{run}");
    let library = stub_library();
    let machine = fixture("healthy-8x-h100.conf");
    let per_user = World::new(
        "[limits]\nmax_gpus_per_user = 4\n",
        "image = \"busybox:1.36\"\n",
    );
    let run = per_user.run(
        &[
            "up",
            "box",
            "--dry-run",
            "--force",
            "-e",
            "NVIDIA_VISIBLE_DEVICES=all",
        ],
        &[
            ("ENVCTL_NVML_LIBRARY", library.as_path()),
            ("ENVCTL_NVML_STUB_FIXTURE", machine.as_path()),
        ],
    );
    let cause = refused(&run, "limits.max_gpus_per_user", 2);
    assert!(
        cause.contains("environment asks for GPUs (NVIDIA_VISIBLE_DEVICES=all)"),
        "{run}"
    );
    // `none` names no GPU.
    let run = per_user.run(
        &[
            "up",
            "box",
            "--dry-run",
            "--force",
            "-e",
            "NVIDIA_VISIBLE_DEVICES=none",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run}");
}
