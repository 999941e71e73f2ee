//! What `envctl export` does around the text: `docker-run` is `up --dry-run`, the output file is
//! written whole and kept unless forced, is a regular file or stdout, `--json` and the flags, and
//! a missing bind source is a warning for file exports.

use super::*;

#[test]
fn docker_run_export_is_up_dry_run() {
    let project = Project::new();
    project.folder("data");
    project.write(
        "envctl/runner.toml",
        "image = \"busybox\"\nmemory = \"1g\"\nports = [\"8888:8888\"]\nmounts = [\"./data:/data\"]\n",
    );
    let exported = project
        .envctl(&["export", "runner", "--to", "docker-run"])
        .expect(0, "export --to docker-run");
    let dry_run = project
        .envctl(&["up", "runner", "--dry-run"])
        .expect(0, "up --dry-run");
    assert_eq!(exported.stdout, dry_run.stdout);
    assert!(
        exported
            .stdout
            .starts_with("docker run -d --name envctl-runner ")
    );
    // Like `up`, it refuses a bind source that is not there.
    std::fs::remove_dir(project.path().join("data")).unwrap();
    let missing = project.envctl(&["export", "runner", "--to", "docker-run"]);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("does not exist"),
        "{}",
        missing.stderr
    );
}

#[test]
fn output_file_is_written_whole_and_kept_unless_forced() {
    let project = Project::new();
    let run = project
        .envctl(&[
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "-o",
            "deploy/job.yaml",
        ])
        .expect(0, "first export");
    assert!(
        run.stdout.is_empty(),
        "the file, not stdout: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("warning: k8s: `ulimits`"),
        "{}",
        run.stderr
    );
    let written = std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap();
    assert_eq!(yaml_documents(&written).len(), 1);

    std::fs::write(project.path().join("deploy/job.yaml"), "mine\n").unwrap();
    let refused = project.envctl(&[
        "export",
        "pytorch-2.8",
        "--to",
        "k8s",
        "-o",
        "deploy/job.yaml",
    ]);
    // Like `profiles new` onto an existing file: the request cannot be met (1), not misuse.
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap(),
        "mine\n"
    );
    project
        .envctl(&[
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "-o",
            "deploy/job.yaml",
            "--force",
        ])
        .expect(0, "--force");
    assert_eq!(
        std::fs::read_to_string(project.path().join("deploy/job.yaml")).unwrap(),
        written
    );
    let leftovers: Vec<String> = std::fs::read_dir(project.path().join("deploy"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "job.yaml")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn stdout_json_and_flags() {
    let project = Project::new();
    let run = project
        .envctl(&["export", "pytorch-2.8", "--to", "devcontainer"])
        .expect(0, "export to stdout");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["name"], "pytorch-2.8");

    let json = project
        .envctl(&[
            "--json",
            "export",
            "pytorch-2.8",
            "--to",
            "k8s",
            "--kind",
            "Pod",
        ])
        .expect(0, "--json export");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["target"], "k8s");
    assert!(report["output"].is_null());
    assert!(report["content"].as_str().unwrap().contains("kind: Pod"));
    assert!(
        report["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|notice| notice["setting"] == "ulimits")
    );

    let wrong = project.envctl(&["export", "pytorch-2.8", "--to", "compose", "--service"]);
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
    assert!(wrong.stderr.contains("--to k8s"), "{}", wrong.stderr);

    // envctl.lock in the working directory pins the Kubernetes image.
    let image = bundled_profile("pytorch-2.8").profile.image.to_string();
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"{image}\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    let pinned = project
        .envctl(&["export", "pytorch-2.8", "--to", "k8s"])
        .expect(0, "export with a lock");
    assert!(
        pinned
            .stdout
            .contains(&format!("image: \"{image}@{DIGEST}\""))
            || pinned.stdout.contains(&format!("image: {image}@{DIGEST}")),
        "{}",
        pinned.stdout
    );
    // Every target runs what `up` runs: the same pin, and `up --dry-run` names it too.
    let reference = format!("{image}@{DIGEST}");
    for target in ["compose", "devcontainer", "docker-run"] {
        let run = project
            .envctl(&["export", "pytorch-2.8", "--to", target])
            .expect(0, "export with a lock");
        assert!(run.stdout.contains(&reference), "{target}: {}", run.stdout);
    }
    let dry_run = project
        // `--force`: this host has no NVIDIA runtime, and a dry run judges what `up` would.
        .envctl(&["up", "pytorch-2.8", "--dry-run", "--force"])
        .expect(0, "dry run with a lock");
    assert!(dry_run.stdout.contains(&reference), "{}", dry_run.stdout);

    // A lock that pins another image keeps the tag and says so, for every file target.
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"busybox:1.0\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    for target in ["compose", "devcontainer", "k8s"] {
        let run = project
            .envctl(&["export", "pytorch-2.8", "--to", target])
            .expect(0, "export with a stale lock");
        assert!(!run.stdout.contains(DIGEST), "{target}: {}", run.stdout);
        assert!(
            run.stderr.contains("envctl.lock pins `busybox:1.0`"),
            "{target}: {}",
            run.stderr
        );
    }
    // A digest `up` would refuse is refused by doctor too, not reported as "locked".
    project.write(
        "envctl.lock",
        &format!(
            "version = 1\n\n[[image]]\nprofile = \"pytorch-2.8\"\nimage = \"{image}\"\ndigest = \"latest\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        ),
    );
    let refused = project.envctl(&["up", "pytorch-2.8", "--dry-run"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("not a `sha256:` digest"),
        "{}",
        refused.stderr
    );
    let doctor = project.envctl(&["--json", "doctor", "pytorch-2.8"]);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let findings = report["profiles"][0]["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|finding| finding["id"] == "profile.lock" && finding["status"] == "fail"),
        "{findings:?}"
    );
}

#[test]
fn export_output_is_a_regular_file_or_stdout() {
    let project = Project::new();
    // As root this once replaced /dev/null (and /dev/stdout's target) with a regular file.
    for device in ["/dev/null", "/dev/stdout"] {
        let run = project.envctl(&[
            "export",
            "cuda-12.8-base",
            "--to",
            "compose",
            "-o",
            device,
            "--force",
        ]);
        assert_eq!(run.code, 1, "{device}: {}", run.stderr);
        assert!(
            run.stderr.contains("not a regular file"),
            "{device}: {}",
            run.stderr
        );
    }
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &std::fs::metadata("/dev/null").unwrap().file_type()
    ));
    let stdout = project
        .envctl(&["export", "cuda-12.8-base", "--to", "compose", "-o", "-"])
        .expect(0, "export to stdout");
    assert!(stdout.stdout.contains("services:"), "{}", stdout.stdout);
    // A symlink planted where the file goes is not followed or replaced either.
    project.write("elsewhere.yaml", "keep\n");
    std::os::unix::fs::symlink(
        project.path().join("elsewhere.yaml"),
        project.path().join("compose.yaml"),
    )
    .unwrap();
    let linked = project.envctl(&[
        "export",
        "cuda-12.8-base",
        "--to",
        "compose",
        "-o",
        "compose.yaml",
        "--force",
    ]);
    assert_eq!(linked.code, 1, "{}", linked.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("elsewhere.yaml")).unwrap(),
        "keep\n"
    );
}

#[test]
fn a_missing_bind_source_is_a_warning_for_file_exports() {
    let project = Project::new();
    project.write(
        "envctl/absent.toml",
        "image = \"busybox\"\nmounts = [\"./nowhere:/data\"]\n",
    );
    let run = project
        .envctl(&["export", "absent", "--to", "compose"])
        .expect(0, "export with a missing source");
    assert!(run.stderr.contains("does not exist here"), "{}", run.stderr);
    assert!(
        run.stdout.contains("source: \"./nowhere\""),
        "{}",
        run.stdout
    );
}
