//! `envctl compat`: verdicts for a described host, through the built binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

fn compat(arguments: &[&str]) -> (i32, Value, String) {
    let directory = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("envctl")
        .unwrap()
        .current_dir(directory.path())
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", directory.path())
        .env_remove("ENVCTL_PROFILE_PATH")
        .arg("compat")
        .args(arguments)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap(),
        json,
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn finding<'a>(gpu: &'a Value, id: &str) -> &'a Value {
    gpu["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {gpu}"))
}

#[test]
fn pascal_with_a_cu128_build_fails_and_names_the_cu126_profile() {
    let (code, report, _) = compat(&[
        "--profile",
        "pytorch-2.8",
        "--driver",
        "570.124.06",
        "--gpu",
        "GTX 1080 Ti",
    ]);
    assert_eq!(code, 1);
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["verdict"], "fail");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .starts_with("sm_61 is not compatible with the current PyTorch installation")
    );
    assert!(
        torch["hint"]
            .as_str()
            .unwrap()
            .contains("pytorch-2.8-cu126")
    );
}

#[test]
fn blackwell_with_an_old_torch_fails() {
    let (code, report, _) = compat(&[
        "--image-cuda",
        "12.4",
        "--torch",
        "2.6.0+cu124",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 1);
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert!(
        torch["message"]
            .as_str()
            .unwrap()
            .contains("sm_120 is not compatible")
    );
}

#[test]
fn mixed_host_gets_one_verdict_per_gpu() {
    let (code, report, _) = compat(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "580.65.06",
        "--cc",
        "9.0",
        "--cc",
        "7.0",
    ]);
    assert_eq!(code, 1);
    let verdicts: Vec<&str> = report["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| gpu["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["ok", "fail"], "CUDA 13 dropped sm_70: {report}");
}

#[test]
fn driver_floors_on_both_sides() {
    let (_, just_below, _) = compat(&["--image-cuda", "12.8", "--driver", "524.99", "--cc", "9.0"]);
    assert_eq!(
        finding(&just_below["gpus"][0], "driver.cuda")["status"],
        "fail"
    );
    let (_, floor, _) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "525.60.13",
        "--cc",
        "9.0",
    ]);
    assert_eq!(finding(&floor["gpus"][0], "driver.cuda")["status"], "warn");
    let (code, minimum, _) = compat(&["--image-cuda", "12.8", "--driver", "570.26", "--cc", "9.0"]);
    assert_eq!(
        finding(&minimum["gpus"][0], "driver.cuda")["status"],
        "pass"
    );
    assert_eq!(code, 0);
}

#[test]
fn bad_input_is_a_usage_error() {
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "five-fifty",
        "--cc",
        "9.0",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not an NVIDIA driver version"), "{stderr}");
    let (code, _, stderr) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "550.54.15",
        "--gpu",
        "Voodoo 5",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--cc"), "{stderr}");
    let (code, _, _) = compat(&["--driver", "550.54.15", "--cc", "9.0"]);
    assert_eq!(code, 2, "neither --profile nor --image-cuda");
}
