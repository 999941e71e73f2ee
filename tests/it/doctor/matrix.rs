//! The compatibility matrix: a user's row changes a verdict, a malformed matrix is exit 2 with
//! file:line:column and each problem once, a missing matrix file is named as one, and
//! `doctor --matrix-info` lists the date and the sources.

use super::*;

const LAB_MATRIX: &str = r#"# Our lab's torch 2.8 cu128 build, rebuilt with Pascal kernels.
[[torch_build]]
torch = "2.8"
variant = "cu128"
targets = ["sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
status = "verified"
source = "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)"
read = "2026-11-20"
"#;

#[test]
fn user_matrix_row_changes_a_verdict() {
    let scenario = Scenario::new(Nvml::Stub("gtx-1080-ti.conf"));
    let torch_verdict = |report: &Value| {
        finding(
            &profile(report, "pytorch-2.8")["gpus"][0]["findings"],
            "gpu.torch-arch",
        )
        .clone()
    };
    let (bundled, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(torch_verdict(&bundled)["status"], "fail");

    scenario.write("lab.toml", LAB_MATRIX);
    let (overlaid, _) = scenario.doctor_json(&["--matrix", "lab.toml", "pytorch-2.8"]);
    let verdict = torch_verdict(&overlaid);
    assert_eq!(verdict["status"], "pass", "{verdict:#}");
    assert_eq!(
        verdict["facts"]["build_row"]["source"],
        "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)",
        "the verdict names the row it rests on"
    );
    assert!(
        overlaid["matrix"].as_str().unwrap().contains("lab.toml"),
        "{}",
        overlaid["matrix"]
    );

    // The same file as $XDG_CONFIG_HOME/envctl/matrix.toml is picked up without a flag.
    scenario.write("xdg/envctl/matrix.toml", LAB_MATRIX);
    let (user, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(torch_verdict(&user)["status"], "pass");
}

const BAD_MATRIX: &str = r#"[[torch_build]]
torch = "2.8"
varient = "cu128"
targets = ["sm_61"]
status = "verified"
source = "typo"
"#;

#[test]
fn malformed_matrix_is_exit_2_with_file_line_column() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write("bad.toml", BAD_MATRIX);
    for arguments in [
        &["doctor", "--matrix", "bad.toml"][..],
        &["doctor", "--json", "--matrix", "bad.toml", "pytorch-2.8"][..],
        &["doctor", "--matrix-info", "--matrix", "bad.toml"][..],
    ] {
        let output = scenario.run(arguments);
        assert_eq!(output.code, 2, "{arguments:?}: {}", output.stderr);
        assert_eq!(output.stdout, "", "nothing on stdout for an invalid matrix");
        assert!(
            output.stderr.contains("bad.toml:3:1"),
            "the unknown key is at its line and column: {}",
            output.stderr
        );
        assert!(
            output.stderr.contains("did you mean `variant`?"),
            "{}",
            output.stderr
        );
        assert!(
            output.stderr.contains("missing field `variant`"),
            "{}",
            output.stderr
        );
    }
}

#[test]
fn malformed_matrix_problems_are_reported_once() {
    let scenario = Scenario::new(Nvml::System);
    scenario.write("bad.toml", BAD_MATRIX);
    let output = scenario.run(&["doctor", "--matrix", "bad.toml"]);
    assert_eq!(output.code, 2);
    // Each problem is drawn once with its source line, as `profiles check` does; the
    // closing `error:` line sums them up instead of listing them all again.
    assert_eq!(
        output.stderr.matches("did you mean `variant`?").count(),
        1,
        "{}",
        output.stderr
    );
}

#[test]
fn missing_matrix_file_is_named_as_a_matrix() {
    let scenario = Scenario::new(Nvml::System);
    let output = scenario.run(&["doctor", "--matrix", "no-such-matrix.toml"]);
    assert_eq!(output.code, 2);
    assert_eq!(output.stdout, "");
    assert!(
        output.stderr.contains("no-such-matrix.toml"),
        "{}",
        output.stderr
    );
    assert!(
        !output.stderr.contains("profile"),
        "a matrix file is not a profile; the hint should not point at `profiles list`:\n{}",
        output.stderr
    );
}

#[test]
fn matrix_info_lists_date_and_sources() {
    let scenario = Scenario::new(Nvml::System);
    // --matrix-info only reads the matrix: no daemon, no NVML.
    let scenario = scenario.docker_host(format!(
        "unix://{}",
        Path::new("/nonexistent/envctl-doctor-test/docker.sock").display()
    ));
    let info = scenario.run(&["doctor", "--json", "--matrix-info"]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    let document = info.json();
    let matrix = &document["matrix"];
    let date = matrix["date"].as_str().unwrap();
    assert!(
        date.len() == 10
            && date.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }),
        "the matrix date is YYYY-MM-DD: {date}"
    );
    assert_eq!(
        matrix["origins"],
        serde_json::json!(["<bundled>/matrix.toml"])
    );
    let sources: Vec<&str> = matrix["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source.as_str().unwrap())
        .collect();
    assert!(sources.len() >= 10, "{sources:?}");
    assert!(
        sources
            .iter()
            .any(|source| source.contains("NVIDIA CUDA Toolkit Release Notes")),
        "{sources:?}"
    );
    let rows = |table: &str| {
        matrix["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["table"] == table)
            .unwrap_or_else(|| panic!("no table {table} in {matrix:#}"))["rows"]
            .as_u64()
            .unwrap()
    };
    for table in [
        "cuda_driver",
        "cuda_targets",
        "torch_build",
        "gpu",
        "branch_lifecycle",
    ] {
        assert!(rows(table) > 0, "{table}");
    }

    let human = scenario.run(&["doctor", "--matrix-info"]);
    assert_eq!(human.code, 0);
    assert!(
        human
            .stdout
            .starts_with(&format!("compatibility matrix, sources read {date}\n")),
        "{}",
        human.stdout
    );
    // An installed binary has no source tree: the bundled matrix is named as such
    // (issue 17).
    assert!(human.stdout.contains("files: <bundled>/matrix.toml\n"));
    let (_, listed) = human.stdout.split_once("\nsources:\n").unwrap();
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(listed.len(), sources.len());
    assert!(listed.iter().all(|line| line.starts_with("  - ")));
    let torch_build_line = human
        .stdout
        .lines()
        .find(|line| line.starts_with("torch_build "))
        .unwrap_or_else(|| panic!("no torch_build row:\n{}", human.stdout));
    assert_eq!(
        torch_build_line.split_whitespace().collect::<Vec<_>>(),
        ["torch_build", rows("torch_build").to_string().as_str()]
    );

    // A user matrix shows up among the files and the sources.
    scenario.write("lab.toml", LAB_MATRIX);
    let with_lab = scenario
        .run(&["doctor", "--json", "--matrix-info", "--matrix", "lab.toml"])
        .json();
    assert_eq!(
        with_lab["matrix"]["origins"],
        serde_json::json!(["<bundled>/matrix.toml", "lab.toml"])
    );
    assert!(
        with_lab["matrix"]["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|source| source == "lab build 2026-11 (TORCH_CUDA_ARCH_LIST includes 6.1)")
    );
}
