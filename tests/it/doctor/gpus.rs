//! GPU verdicts from NVML fixtures: a healthy 8x H100, mixed H100/V100 hosts on CUDA 13 and on
//! R580, an RTX 5090 with an old torch, a GTX 1080 Ti with a cu128 build, GPUs NVML could not count
//! and a driver version it would not give.

use super::*;

/// The bundled profile a hint like "use profile `pytorch-2.10` (…)" names.
fn hinted_profile(hint: &str) -> &str {
    hint.strip_prefix("use profile `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name)
        .unwrap_or_else(|| panic!("the hint names no profile: {hint}"))
}

#[test]
fn healthy_8x_h100_runs_pytorch_2_8_on_every_gpu() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);

    let nvml = &report["host"]["gpu"]["nvml"];
    assert_eq!(nvml["outcome"], "loaded", "{nvml:#}");
    assert_eq!(
        report["host"]["gpu"]["library"],
        stub_library().to_str().unwrap()
    );
    let host_gpu = finding(&report["findings"], "gpu.nvml");
    assert_eq!(host_gpu["status"], "pass");
    assert_eq!(
        message(host_gpu),
        "NVIDIA driver 570.124.06 (CUDA 12.8), 8 GPUs"
    );
    let devices = all_with_id(&report["findings"], "gpu.device");
    assert_eq!(devices.len(), 8);
    for (index, device) in devices.iter().enumerate() {
        assert_eq!(device["status"], "pass", "{device:#}");
        assert_eq!(device["facts"]["index"], index);
        assert_eq!(
            message(device),
            format!("GPU {index}: NVIDIA H100 80GB HBM3, sm_90 (compute 9.0), 80 GiB")
        );
    }
    // R570 (Production) reached its end of life in 2026-02.
    let lifecycle = finding(&report["findings"], "driver.branch-lifecycle");
    assert_eq!(lifecycle["status"], "warn", "{lifecycle:#}");
    assert!(
        message(lifecycle).contains("R570"),
        "{}",
        message(lifecycle)
    );

    let pytorch = profile(&report, "pytorch-2.8");
    assert_eq!(pytorch["file"], "<bundled>/pytorch-2.8.toml");
    assert_eq!(pytorch["stack"]["cuda"], "12.8");
    assert_eq!(pytorch["stack"]["torch"], "2.8.0+cu128");
    assert_eq!(
        message(finding(&pytorch["findings"], "profile.gpus")),
        "all 8 GPUs of this host"
    );
    let rows = gpu_rows(pytorch);
    assert_eq!(rows.len(), 8);
    for (index, row) in rows.iter().enumerate() {
        assert_eq!(
            row,
            &(
                index as u64,
                "NVIDIA H100 80GB HBM3".to_string(),
                "9.0".to_string(),
                "ok".to_string()
            )
        );
    }
    for gpu in pytorch["gpus"].as_array().unwrap() {
        for id in ["driver.cuda", "gpu.cuda-arch", "gpu.torch-arch"] {
            let verdict = finding(&gpu["findings"], id);
            assert_eq!(verdict["status"], "pass", "{verdict:#}");
        }
    }
    // Nothing about the GPUs or the stack stands in the way: only the daemon may.
    let failing: Vec<&str> = ids_with_status(&pytorch["findings"], "fail");
    assert!(
        failing
            .iter()
            .all(|id| *id == "profile.gpu-runtime" || *id == "profile.daemon"),
        "{failing:?}"
    );

    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_gpu_runtime_verdict(&report, pytorch);
    if !daemon_has_gpu_path(&report) {
        assert_eq!(
            failing,
            ["profile.gpu-runtime"],
            "exactly one thing fails: no NVIDIA runtime"
        );
        assert_eq!(pytorch["verdict"], "fail");
        assert_eq!(report["verdict"], "fail");
        assert_eq!(code, 1);
    }
}

#[test]
fn healthy_8x_h100_human_report() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let output = scenario.run(&["doctor", "pytorch-2.8"]);
    // GPUs of one model and one outcome fold into one line per finding.
    assert!(
        output.stdout.contains(
            "✓ GPU 0-7 (NVIDIA H100 80GB HBM3): torch 2.8.0+cu128 (x86_64 wheel) has sm_90 kernels"
        ),
        "{}",
        output.stdout
    );
    assert_eq!(output.stderr, "");
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert_human_snapshot("healthy_8x_h100_pytorch_2_8", &output.stdout);
}

#[test]
fn mixed_h100_v100_with_cuda_13_judges_each_gpu() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.11"]);
    let pytorch = profile(&report, "pytorch-2.11");
    assert_eq!(pytorch["stack"]["cuda"], "13.0");
    let h100 = ("NVIDIA H100 80GB HBM3", "9.0");
    let v100 = ("Tesla V100-SXM2-32GB", "7.0");
    // Driver 570 is below CUDA 13's floor of 580: every GPU fails on the driver alone.
    assert_eq!(
        gpu_rows(pytorch),
        [h100, h100, v100, v100]
            .iter()
            .enumerate()
            .map(|(index, (name, capability))| (
                index as u64,
                name.to_string(),
                capability.to_string(),
                "fail".to_string()
            ))
            .collect::<Vec<_>>()
    );
    let gpus = pytorch["gpus"].as_array().unwrap();
    for gpu in &gpus[..2] {
        let driver = finding(&gpu["findings"], "driver.cuda");
        assert_eq!(driver["status"], "fail", "{driver:#}");
        assert!(
            hint(driver).contains("cuda-compat-13-0"),
            "a data-center GPU gets the forward-compatibility package: {}",
            hint(driver)
        );
        for id in ["gpu.cuda-arch", "gpu.torch-arch"] {
            assert_eq!(
                finding(&gpu["findings"], id)["status"],
                "pass",
                "the H100's architecture is fine with CUDA 13: {gpu:#}"
            );
        }
    }
    for gpu in &gpus[2..] {
        let arch = finding(&gpu["findings"], "gpu.cuda-arch");
        assert_eq!(arch["status"], "fail", "{arch:#}");
        assert!(
            message(arch).starts_with("CUDA 13.0 cannot target sm_70 (Volta"),
            "{}",
            message(arch)
        );
        assert!(hint(arch).contains("CUDA 12.9 or older"), "{}", hint(arch));
        let torch = finding(&gpu["findings"], "gpu.torch-arch");
        assert_eq!(torch["status"], "fail");
        assert!(
            message(torch)
                .starts_with("sm_70 is not compatible with the current PyTorch installation"),
            "{}",
            message(torch)
        );
    }
    assert_eq!(pytorch["verdict"], "fail");
    assert_eq!(code, 1);

    // The profile the V100's hint names runs on every GPU of this host.
    let suggested = hinted_profile(hint(finding(&gpus[2]["findings"], "gpu.torch-arch")));
    let (suggested_report, _) = scenario.doctor_json(&[suggested]);
    for (index, _, _, verdict) in gpu_rows(profile(&suggested_report, suggested)) {
        assert_ne!(verdict, "fail", "GPU {index} with `{suggested}`");
    }
}

#[test]
fn mixed_h100_v100_on_r580_fails_only_the_v100s() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100-r580.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.11"]);
    let pytorch = profile(&report, "pytorch-2.11");
    let verdicts: Vec<(u64, String)> = gpu_rows(pytorch)
        .into_iter()
        .map(|(index, _, _, verdict)| (index, verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            (0, "ok".to_string()),
            (1, "ok".to_string()),
            (2, "fail".to_string()),
            (3, "fail".to_string())
        ]
    );
    for gpu in pytorch["gpus"].as_array().unwrap() {
        assert_eq!(
            finding(&gpu["findings"], "driver.cuda")["status"],
            "pass",
            "driver 580.95.05 meets CUDA 13.0: {gpu:#}"
        );
    }
    let v100 = &pytorch["gpus"][2];
    assert_eq!(
        ids_with_status(&v100["findings"], "fail"),
        ["gpu.cuda-arch", "gpu.torch-arch"]
    );
}

#[test]
fn mixed_h100_v100_human_report() {
    let scenario = Scenario::new(Nvml::Stub("mixed-h100-v100.conf"));
    let output = scenario.run(&["doctor", "pytorch-2.11"]);
    assert_eq!(output.code, 1);
    assert!(
        output
            .stdout
            .contains("✗ GPU 2-3 (Tesla V100-SXM2-32GB): CUDA 13.0 cannot target sm_70 (Volta"),
        "{}",
        output.stdout
    );
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_human_snapshot("mixed_h100_v100_pytorch_2_11", &output.stdout);
}

#[test]
fn rtx_5090_with_an_old_torch_is_not_compatible_and_names_a_profile_that_works() {
    let scenario = Scenario::new(Nvml::Stub("rtx-5090.conf"));
    let old = test_profile("pytorch-2.6-cu124.toml");
    let (report, code) = scenario.doctor_json(&[&old]);
    let pytorch = profile(&report, "pytorch-2.6-cu124");
    assert_eq!(pytorch["stack"]["torch"], "2.6.0+cu124");
    assert_eq!(pytorch["stack"]["source"], "profile");
    assert_eq!(
        gpu_rows(pytorch),
        [(
            0,
            "NVIDIA GeForce RTX 5090".to_string(),
            "12.0".to_string(),
            "fail".to_string()
        )]
    );
    let gpu = &pytorch["gpus"][0];
    let torch = finding(&gpu["findings"], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        message(torch)
            .starts_with("sm_120 is not compatible with the current PyTorch installation"),
        "{}",
        message(torch)
    );
    assert_eq!(torch["facts"]["build_row"]["torch"], "2.6");
    assert_eq!(torch["facts"]["build_row"]["variant"], "cu124");
    assert_eq!(
        finding(&gpu["findings"], "driver.cuda")["status"],
        "pass",
        "driver 575 runs CUDA 12.4: only the kernels are missing"
    );
    assert_eq!(code, 1);

    // The hint names a bundled profile, and that profile works on this GPU and driver.
    let suggested = hinted_profile(hint(torch)).to_string();
    let listed = scenario.run(&["profiles", "list", "--json"]).json();
    let bundled: Vec<&str> = listed["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["source"] == "bundled")
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert!(
        bundled.contains(&suggested.as_str()),
        "`{suggested}` is not a bundled profile: {bundled:?}"
    );
    let (fixed, _) = scenario.doctor_json(&[&suggested]);
    let fixed_gpu = &profile(&fixed, &suggested)["gpus"][0];
    assert_eq!(
        finding(&fixed_gpu["findings"], "gpu.torch-arch")["status"],
        "pass",
        "{fixed_gpu:#}"
    );
    assert_eq!(fixed_gpu["verdict"], "ok", "{fixed_gpu:#}");
}

#[test]
fn gtx_1080_ti_with_a_cu128_build_is_told_to_use_cu126() {
    let scenario = Scenario::new(Nvml::Stub("gtx-1080-ti.conf"));
    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&report, "pytorch-2.8");
    assert_eq!(
        gpu_rows(pytorch),
        [(
            0,
            "NVIDIA GeForce GTX 1080 Ti".to_string(),
            "6.1".to_string(),
            "fail".to_string()
        )]
    );
    let torch = finding(&pytorch["gpus"][0]["findings"], "gpu.torch-arch");
    assert_eq!(torch["status"], "fail");
    assert!(
        message(torch).starts_with("sm_61 is not compatible with the current PyTorch installation"),
        "{}",
        message(torch)
    );
    assert!(
        hint(torch).starts_with("use profile `pytorch-2.8-cu126`"),
        "{}",
        hint(torch)
    );
    assert_eq!(hinted_profile(hint(torch)), "pytorch-2.8-cu126");
    assert_eq!(code, 1);

    let (fixed, _) = scenario.doctor_json(&["pytorch-2.8-cu126"]);
    let fixed_gpu = &profile(&fixed, "pytorch-2.8-cu126")["gpus"][0];
    assert_eq!(
        finding(&fixed_gpu["findings"], "gpu.torch-arch")["status"],
        "pass",
        "{fixed_gpu:#}"
    );
    assert_ne!(fixed_gpu["verdict"], "fail", "{fixed_gpu:#}");
}

/// NVML that loaded but could not count the GPUs is not "0 GPUs": doctor fails its
/// `gpu.nvml` line in NVML's words, a profile asking for GPUs is told that whether the
/// host has them is unknown, and `gpus = "optional"` is warned that it may run without.
#[test]
fn gpus_nvml_could_not_count_are_unknown_not_zero() {
    let scenario = Scenario::new(Nvml::Stub("count-fails.conf"));
    scenario.write(
        "envctl/two.toml",
        "image = \"busybox:1.36\"\ngpus = 2\n[stack]\ncuda = \"12.8\"\n",
    );
    scenario.write(
        "envctl/maybe.toml",
        "image = \"busybox:1.36\"\ngpus = \"optional\"\n",
    );
    let (report, code) = scenario.doctor_json(&["two", "maybe", "pytorch-2.8"]);
    assert_eq!(code, 1, "{report:#}");
    let nvml = finding(&report["findings"], "gpu.nvml");
    assert_eq!(nvml["status"], "fail", "{nvml:#}");
    assert!(
        message(nvml).contains("NVML could not count the GPUs")
            && !message(nvml).contains("0 GPUs"),
        "{nvml:#}"
    );
    for name in ["two", "pytorch-2.8"] {
        let gpus = finding(&profile(&report, name)["findings"], "profile.gpus");
        assert_eq!(gpus["status"], "fail", "{name}: {gpus:#}");
        assert!(message(gpus).contains("is unknown"), "{name}: {gpus:#}");
    }
    let optional = finding(&profile(&report, "maybe")["findings"], "profile.gpus");
    assert_eq!(optional["status"], "warn", "{optional:#}");
    assert!(message(optional).contains("unknown"), "{optional:#}");
}

/// A driver version NVML would not give leaves the driver-vs-CUDA check undone, and doctor
/// says so (`driver.cuda` warns) rather than pass a profile whose check never ran.
#[test]
fn a_driver_version_nvml_would_not_give_is_said_not_skipped() {
    let scenario = Scenario::new(Nvml::Stub("driver-version-fails.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    let profile = profile(&report, "pytorch-2.8");
    let unchecked = finding(&profile["findings"], "driver.cuda");
    assert_eq!(unchecked["status"], "warn", "{unchecked:#}");
    assert!(
        message(unchecked).contains("the driver version is unknown")
            && message(unchecked).contains("CUDA 12.8 was not checked"),
        "{unchecked:#}"
    );
    assert_ne!(profile["verdict"], "ok", "{profile:#}");
}
