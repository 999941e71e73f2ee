//! `envctl compat` and the driver: CUDA floors on both sides of the line, forward
//! compatibility, a driver older than the GPU, per-SKU, MIG and pinned-runtime floors, and the
//! driver branch's lifecycle.

use super::*;

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

/// Forward compatibility shows in the verdict below a CUDA major's driver floor: what the
/// cuda-compat package offers on a data-center GPU (by name or --datacenter), that it does
/// not apply on GeForce, and that a bare --cc needs --datacenter to say which.
#[test]
fn forward_compatibility_shows_in_the_verdict() {
    let arguments = ["--image-cuda", "13.0", "--driver", "570.124.06"];
    let forward =
        |report: &Value| finding(&report["gpus"][0], "driver.forward-compatibility").clone();
    let run = |extra: &[&str]| {
        let all: Vec<&str> = arguments.iter().chain(extra).copied().collect();
        compat(&all)
    };
    let (code, datacenter, _) = run(&["--cc", "9.0", "--datacenter"]);
    assert_eq!(
        code, 1,
        "the driver still fails: the image may lack the package"
    );
    assert_eq!(datacenter["gpus"][0]["datacenter"], true);
    assert_eq!(forward(&datacenter)["status"], "info");
    assert_eq!(forward(&datacenter)["facts"]["package"], "cuda-compat-13-0");
    let (_, by_name, _) = run(&["--gpu", "H100"]);
    assert_eq!(by_name["gpus"][0]["datacenter"], true);
    assert_eq!(
        forward(&by_name)["message"],
        forward(&datacenter)["message"]
    );
    let (_, bare, _) = run(&["--cc", "9.0"]);
    assert_eq!(bare["gpus"][0]["datacenter"], Value::Null);
    assert!(
        forward(&bare)["message"]
            .as_str()
            .unwrap()
            .contains("pass --datacenter")
    );
    let (_, geforce, _) = run(&["--gpu", "RTX 4090"]);
    assert_eq!(geforce["gpus"][0]["datacenter"], false);
    assert!(
        forward(&geforce)["message"]
            .as_str()
            .unwrap()
            .contains("does not apply")
    );
    // Not below the floor: nothing to say.
    let (_, recent, _) = compat(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "580.65.06",
        "--cc",
        "9.0",
        "--datacenter",
    ]);
    assert!(
        recent["gpus"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|finding| finding["id"] != "driver.forward-compatibility")
    );
    // --datacenter does not make a GeForce card a data-center one.
    let (code, _, stderr) = compat_text(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 4090",
        "--datacenter",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not supported on GeForce"), "{stderr}");
    let (_, text, _) = compat_text(&[
        "--image-cuda",
        "13.0",
        "--driver",
        "570.124.06",
        "--cc",
        "9.0",
        "--datacenter",
    ]);
    // The lifecycle hint lists the branches still supported today, which changes with the
    // date: it is left out of the snapshot (`compat_gives_the_branch_lifecycle` checks it).
    let text: String = text
        .lines()
        .filter(|line| !line.contains("hint: move to a supported branch"))
        .map(|line| format!("{line}\n"))
        .collect();
    insta::assert_snapshot!("compat_datacenter_forward_compatibility", text);
}

/// A driver branch older than the GPU's architecture fails, naming the first branch that
/// supports it (issue 32's two cases), where it only warned before.
#[test]
fn a_driver_that_predates_the_gpu_fails() {
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.7.1+cu128",
        "--driver",
        "550.54.15",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["verdict"], "fail");
    let floor = finding(&report["gpus"][0], "driver.architecture");
    assert_eq!(floor["status"], "fail", "{floor}");
    let message = floor["message"].as_str().unwrap();
    assert!(
        message.contains("R550") && message.contains("12.8") && message.contains("branch R570"),
        "{message}"
    );
    assert_eq!(
        floor["facts"]["release_row"]["linux_minimum_driver"],
        "570.26"
    );
    assert!(floor["hint"].as_str().unwrap().contains("R570"));

    let (code, report, _) = compat(&[
        "--image-cuda",
        "11.8",
        "--driver",
        "470.82.01",
        "--gpu",
        "H100",
    ]);
    assert_eq!(code, 1);
    let floor = finding(&report["gpus"][0], "driver.architecture");
    assert_eq!(floor["status"], "fail");
    let message = floor["message"].as_str().unwrap();
    assert!(
        message.contains("predates sm_90 (Hopper") && message.contains("branch R520"),
        "{message}"
    );
    // A branch past the architecture's last one fails too: R590 dropped Volta.
    let (code, report, _) = compat(&[
        "--image-cuda",
        "12.8",
        "--driver",
        "590.44.01",
        "--gpu",
        "V100",
    ]);
    assert_eq!(code, 1);
    let dropped = finding(&report["gpus"][0], "driver.architecture");
    assert!(
        dropped["message"].as_str().unwrap().contains("R580"),
        "{dropped}"
    );
    // A driver of the GPU's time passes.
    let (code, report, stderr) = compat(&[
        "--torch",
        "2.7.1+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        finding(&report["gpus"][0], "driver.architecture")["status"],
        "pass"
    );
}

/// Issue 32: 2.15.0's wheel pins cuda-toolkit==13.2.2 (CUDA 13.2 Update 2), so a driver
/// that meets only 13.2 GA's minimum is not called enough for it: the verdict warns, names
/// the pin and the row it rests on.
#[test]
fn the_pinned_runtime_is_the_driver_floor_of_a_build() {
    let (code, report, _) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "595.45.04",
        "--gpu",
        "RTX 5090",
    ]);
    assert_eq!(code, 0, "a warning: {report}");
    let driver = finding(&report["gpus"][0], "driver.cuda");
    assert_eq!(driver["status"], "pass", "CUDA 13.2's own minimum is met");
    let torch = finding(&report["gpus"][0], "gpu.torch-arch");
    assert_eq!(torch["status"], "warn", "{torch}");
    let message = torch["message"].as_str().unwrap();
    assert!(
        message.contains("cuda-toolkit==13.2.2") && message.contains("595.71.05"),
        "{message}"
    );
    assert_eq!(torch["facts"]["runtime_row"]["release"], "13.2 Update 2");
    assert!(
        torch["facts"]["runtime_row"]["source"]
            .as_str()
            .unwrap()
            .contains("Table 3"),
        "{torch}"
    );
    assert!(
        torch["facts"]["build_row"]["source"]
            .as_str()
            .unwrap()
            .contains("torch-2.15.0.dist-info/METADATA"),
        "{torch}"
    );
    assert_eq!(torch["hint"], "upgrade the driver to 595.71.05 or newer");
}

/// Issue 41, held out: per-SKU and MIG driver floors (compat-facts §8: NVIDIA's MIG user
/// guide, Deployment Considerations; GPU Operator "HGX B200 requires … 570.133.20 or
/// later"). A B200 on 570.124.06 fails with MIG on or off; H200 with MIG needs 550.90.07;
/// B300 with MIG 580.82.07.
#[test]
fn per_sku_and_mig_driver_floors() {
    let model = |arguments: &[&str]| {
        let mut all = vec!["--image-cuda", "12.8"];
        all.extend_from_slice(arguments);
        let (code, report, stderr) = compat(&all);
        assert!(code == 0 || code == 1, "{stderr}");
        finding(&report["gpus"][0], "driver.gpu-model").clone()
    };
    for mig in [&[][..], &["--mig"][..]] {
        let mut arguments = vec!["--driver", "570.124.06", "--gpu", "NVIDIA B200"];
        arguments.extend_from_slice(mig);
        let b200 = model(&arguments);
        assert_eq!(b200["status"], "fail", "{b200}");
        assert!(
            b200["message"].as_str().unwrap().contains("570.133.20"),
            "{b200}"
        );
        assert_eq!(b200["hint"], "upgrade the driver to 570.133.20 or newer");
    }
    let b200 = model(&["--driver", "570.133.20", "--gpu", "NVIDIA B200", "--mig"]);
    assert_eq!(b200["status"], "pass", "{b200}");
    let h200 = model(&["--driver", "550.54.15", "--gpu", "NVIDIA H200", "--mig"]);
    assert_eq!(h200["status"], "fail", "{h200}");
    assert!(
        h200["message"]
            .as_str()
            .unwrap()
            .contains("MIG is enabled on NVIDIA H200")
            && h200["message"].as_str().unwrap().contains("550.90.07"),
        "{h200}"
    );
    assert!(
        h200["facts"]["floor_rows"][0]["source"]
            .as_str()
            .unwrap()
            .contains("mig-user-guide"),
        "{h200}"
    );
    let without = model(&["--driver", "550.54.15", "--gpu", "NVIDIA H200"]);
    assert_eq!(without["status"], "pass", "{without}");
    assert!(
        without["message"]
            .as_str()
            .unwrap()
            .contains("MIG on it needs 550.90.07"),
        "{without}"
    );
    let b300 = model(&["--driver", "575.57.08", "--gpu", "NVIDIA B300", "--mig"]);
    assert_eq!(b300["status"], "fail", "{b300}");
    assert!(
        b300["message"].as_str().unwrap().contains("580.82.07"),
        "{b300}"
    );
    // GB200's own floor is derived from B200's, and says so.
    let gb200 = model(&["--driver", "570.124.06", "--gpu", "NVIDIA GB200"]);
    assert_eq!(gb200["status"], "fail");
    assert!(
        gb200["message"]
            .as_str()
            .unwrap()
            .ends_with("(derived: not measured)"),
        "{gb200}"
    );
}

/// Issue 41, held out: 2.13/2.14 pin cuda-toolkit 13.0.3, whose runfile bundles driver
/// 580.126.20 (secondary: NVIDIA's runfile name `cuda_13.0.3_580.126.20_linux.run`,
/// compat-facts §8), so 580.95.05 is no longer passed without a word; and 2.15's hint names
/// 595.71.05 (13.2 Update 2, the pinned runtime), not 595.45.04 (13.2 GA).
#[test]
fn a_pinned_update_runtime_has_its_own_floor() {
    for torch in ["2.13.0+cu130", "2.14.1+cu130"] {
        let (code, report, _) =
            compat(&["--torch", torch, "--driver", "580.95.05", "--gpu", "H100"]);
        assert_eq!(code, 0, "{report}");
        let arch = finding(&report["gpus"][0], "gpu.torch-arch");
        assert_eq!(arch["status"], "warn", "{torch}: {arch}");
        let message = arch["message"].as_str().unwrap();
        assert!(
            message.contains("580.126.20")
                && message.contains("cuda-toolkit==13.0.3")
                && message.contains("(secondary:"),
            "{torch}: {message}"
        );
        assert_eq!(arch["facts"]["runtime_row"]["release"], "13.0 Update 3");
        assert_eq!(arch["facts"]["runtime_row"]["status"], "secondary");
        assert_eq!(arch["hint"], "upgrade the driver to 580.126.20 or newer");
    }
    let (_, report, _) = compat(&[
        "--torch",
        "2.15.0+cu132",
        "--driver",
        "590.48.01",
        "--gpu",
        "RTX 5090",
    ]);
    let driver = finding(&report["gpus"][0], "driver.cuda");
    assert_eq!(driver["status"], "warn", "{driver}");
    let hint = driver["hint"].as_str().unwrap();
    assert!(
        hint.starts_with("upgrade the driver to 595.71.05 or newer"),
        "{hint}"
    );
    assert!(!hint.contains("595.45.04"), "{hint}");
    assert_eq!(driver["facts"]["runtime_row"]["release"], "13.2 Update 2");
}

/// Issue 41: `compat` gives the data-center branch lifecycle as `doctor` does (R570 ended
/// 2026-02, compat-facts §6b), for data-center GPUs only.
#[test]
fn compat_gives_the_branch_lifecycle() {
    let (_, report, _) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "H100",
    ]);
    let lifecycle = finding(&report, "driver.branch-lifecycle");
    assert_eq!(lifecycle["status"], "warn", "{lifecycle}");
    assert!(
        lifecycle["message"].as_str().unwrap().contains("R570"),
        "{lifecycle}"
    );
    let (_, text, _) = compat_text(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "H100",
    ]);
    assert!(text.contains("which has reached end of life"), "{text}");
    let (_, report, _) = compat(&[
        "--torch",
        "2.8.0+cu128",
        "--driver",
        "570.124.06",
        "--gpu",
        "RTX 4090",
    ]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 0, "{report}");
}
