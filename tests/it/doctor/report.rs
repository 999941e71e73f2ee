//! The report as a whole: `--json` is one document with its schema version, verdict, host,
//! findings and profiles; `--strict` turns a warning-only report into exit 1; profiles checked
//! with no argument, an invalid profile argument is exit 2 with diagnostics, and an invalid
//! profile is reported beside the host and the others.

use super::*;

/// The exit code a report of this verdict gives (without `--strict`).
fn exit_code_for(report: &Value) -> i32 {
    i32::from(report["verdict"] == "fail")
}

#[test]
fn json_is_one_document_with_schema_version_verdict_host_findings_and_profiles() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    for arguments in [
        &["doctor", "--json"][..],
        &["doctor", "--json", "pytorch-2.8", "pytorch-2.8-cu126"][..],
        &["--json", "doctor"][..],
    ] {
        let output = scenario.run(arguments);
        let report = output.json();
        assert_report_shape(&report);
        assert_eq!(
            output.code,
            exit_code_for(&report),
            "the exit code follows the verdict ({arguments:?})"
        );
        assert_eq!(
            output.stderr, "",
            "stdout is data, stderr is talk: nothing to say with --json"
        );
        assert!(report["findings"].is_array());
        assert_eq!(
            report["host"]["gpu"]["nvml"]["outcome"], "loaded",
            "{:#}",
            report["host"]["gpu"]
        );
    }
    let (report, _) = scenario.doctor_json(&["pytorch-2.8", "pytorch-2.8-cu126"]);
    let names: Vec<&str> = report["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|profile| profile["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pytorch-2.8", "pytorch-2.8-cu126"]);
    let (empty, _) = scenario.doctor_json(&[]);
    assert_eq!(
        empty["profiles"],
        serde_json::json!([]),
        "no profile named and no ./envctl/: no profile is checked"
    );
    assert!(
        empty["matrix"]
            .as_str()
            .unwrap()
            .starts_with("the bundled matrix (dated "),
        "{}",
        empty["matrix"]
    );
}

#[test]
fn strict_turns_a_warning_only_report_into_exit_1() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let notebook = test_profile("notebook-exposed.toml");
    let (report, code) = scenario.doctor_json(&[&notebook]);
    let exposed = finding(
        &profile(&report, "notebook-exposed")["findings"],
        "profile.service-exposed",
    );
    assert_eq!(exposed["status"], "warn");
    assert!(message(exposed).starts_with("Jupyter (container port 8888)"));
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(
        report["verdict"], "warn",
        "precondition: warnings and no failure: {report:#}"
    );
    assert_eq!(code, 0, "warnings alone exit 0");
    let (strict, strict_code) = scenario.doctor_json(&["--strict", &notebook]);
    assert_eq!(strict["verdict"], "warn");
    assert_eq!(strict_code, 1, "--strict turns warnings into exit 1");
    let human = scenario.run(&["doctor", "--strict", &notebook]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.ends_with(" 0 failed\n"), "{}", human.stdout);
}

#[test]
fn no_profile_argument_checks_the_project_profiles() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    scenario.write(
        "envctl/train.toml",
        "extends = \"pytorch-2.8\"\nuser = \"1000:1000\"\nmemory = \"32g\"\n",
    );
    scenario.write(
        "envctl/notebook.toml",
        "image = \"python:3.12-slim\"\nuser = \"1000:1000\"\nmemory = \"4g\"\nmounts = [\"./:/work\"]\n",
    );
    scenario.write("envctl/README.md", "not a profile\n");
    // A user profile is found by name, but is not the project's: doctor leaves it alone.
    scenario.write("xdg/envctl/profiles/personal.toml", "image = \"busybox\"\n");

    let (report, _) = scenario.doctor_json(&[]);
    let mut found: Vec<(&str, &str)> = report["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|profile| {
            (
                profile["name"].as_str().unwrap(),
                profile["file"].as_str().unwrap(),
            )
        })
        .collect();
    found.sort_unstable();
    assert_eq!(
        found,
        [
            ("notebook", "envctl/notebook.toml"),
            ("train", "envctl/train.toml")
        ]
    );
    let train = profile(&report, "train");
    assert_eq!(
        train["image"],
        "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime"
    );
    assert_eq!(gpu_rows(train).len(), 8, "`extends` brings gpus = \"all\"");
    assert_eq!(profile(&report, "notebook")["gpus"], serde_json::json!([]));

    let human = scenario.run(&["doctor"]);
    assert!(
        human
            .stdout
            .contains("Profile train (pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime)")
    );
    assert!(human.stdout.contains("Profile notebook (python:3.12-slim)"));
    assert!(!human.stdout.contains("personal"));

    // A broken project profile stops doctor: exit 2, at its line.
    scenario.write("envctl/broken.toml", "image = \"x\"\ngpus = \"al\"\n");
    let broken = scenario.run(&["doctor"]);
    assert_eq!(broken.code, 2, "{}", broken.stderr);
    assert!(
        broken.stderr.contains("envctl/broken.toml:2:8"),
        "{}",
        broken.stderr
    );
}

#[test]
fn invalid_profile_argument_is_exit_2_with_diagnostics() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    scenario.write(
        "team.toml",
        "image = \"pytorch/pytorch:2.8.0\"\ngpus = \"all\"\nshm_sise = \"8g\"\nmemory = \"lots\"\n",
    );
    for arguments in [
        &["doctor", "team.toml"][..],
        &["doctor", "--json", "team.toml"][..],
        &["doctor", "pytorch-2.8", "team.toml"][..],
    ] {
        let output = scenario.run(arguments);
        assert_eq!(output.code, 2, "{arguments:?}");
        // The host and the valid profiles are still reported (issue 15, item 6); the
        // invalid one is named in the report, its problems on stderr.
        assert!(output.stdout.contains("team.toml"), "{}", output.stdout);
        if arguments.contains(&"pytorch-2.8") {
            assert!(output.stdout.contains("pytorch-2.8"), "{}", output.stdout);
        }
        assert!(
            output.stderr.contains(" --> team.toml:3:1"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains("did you mean `shm_size`?"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains(" --> team.toml:4:10"),
            "{}",
            output.stderr
        );
        assert!(
            output
                .stderr
                .contains("error: invalid profile: 2 problems in `team.toml`"),
            "{}",
            output.stderr
        );
    }

    let unknown = scenario.run(&["doctor", "no-such-profile"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stdout
            .contains("Profile no-such-profile (not judged)"),
        "{}",
        unknown.stdout
    );
    assert!(
        unknown
            .stderr
            .starts_with("error: profile `no-such-profile` not found"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("envctl profiles list"),
        "{}",
        unknown.stderr
    );
}

/// Issue 15, item 6: one invalid profile in ./envctl/ is reported on its own (exit 2, its
/// problems on stderr) and the host and the other profiles are still judged.
#[test]
fn an_invalid_profile_is_reported_beside_the_host_and_the_others() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write(
        "envctl/broken.toml",
        "image = \"busybox:1\"\nmemroy = \"1g\"\n",
    );
    scenario.write(
        "envctl/fine.toml",
        "image = \"busybox:1\"\nmemory = \"64m\"\n",
    );
    let human = scenario.run(&["doctor"]);
    assert_eq!(human.code, 2, "{}", human.stderr);
    assert!(
        human.stderr.contains("unknown key `memroy`"),
        "{}",
        human.stderr
    );
    assert!(human.stdout.contains("Docker"), "{}", human.stdout);
    assert!(
        human.stdout.contains("Profile fine (busybox:1)"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("Profile envctl/broken.toml (not judged)"),
        "{}",
        human.stdout
    );

    let json = scenario.run(&["doctor", "--json"]);
    assert_eq!(json.code, 2, "{}", json.stderr);
    let report = json.json();
    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["profiles"][0]["name"], "fine");
    let invalid = &report["invalid_profiles"][0];
    assert_eq!(invalid["profile"], "envctl/broken.toml");
    assert_eq!(invalid["diagnostics"][0]["line"], 2);
    assert!(
        invalid["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("memroy")
    );
}
