//! NVML that cannot be used: a driver not loaded, a library/driver version mismatch, a library
//! named by the environment that is absent, missing symbols, and no NVIDIA stack at all, where
//! doctor still works and says so.

use super::*;

/// A note on the real stderr (libtest captures `eprintln!` of passing tests).
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "\n*** {text}");
}

/// Runs doctor with no profile and with `pytorch-2.8` on an NVML that fails to load, and
/// checks the host finding and the profile's GPU finding. Returns the host finding.
fn assert_nvml_load_failure(nvml: Nvml, outcome: &str, words: &str, hint_words: &str) -> Value {
    let scenario = Scenario::new(nvml);
    let (report, code) = scenario.doctor_json(&[]);
    assert_eq!(
        report["host"]["gpu"]["nvml"]["outcome"], outcome,
        "{:#}",
        report["host"]["gpu"]
    );
    let host = finding(&report["findings"], "gpu.nvml").clone();
    assert_eq!(host["status"], "fail", "{host:#}");
    assert!(message(&host).contains(words), "{}", message(&host));
    assert!(hint(&host).contains(hint_words), "{}", hint(&host));
    assert!(
        all_with_id(&report["findings"], "gpu.device").is_empty(),
        "no GPU facts without NVML"
    );
    assert_eq!(code, 1, "a broken driver fails doctor even with no profile");

    let (report, code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&report, "pytorch-2.8");
    let gpus = finding(&pytorch["findings"], "profile.gpus");
    assert_eq!(gpus["status"], "fail");
    assert!(
        message(gpus).contains("no usable GPU (NVML could not be loaded"),
        "the profile says why there is no GPU: {}",
        message(gpus)
    );
    // NVML's own words are kept, as the cause under envctl's.
    assert!(
        gpus["facts"]["caused_by"]
            .as_str()
            .is_some_and(|cause| !cause.is_empty()),
        "{gpus:#}"
    );
    assert_eq!(pytorch["gpus"], serde_json::json!([]));
    assert_eq!(code, 1);
    host
}

#[test]
fn driver_not_loaded() {
    assert_nvml_load_failure(
        Nvml::Stub("driver-not-loaded.conf"),
        "driver_not_loaded",
        "the NVIDIA driver is installed but not loaded",
        "sudo modprobe nvidia",
    );
}

#[test]
fn driver_library_version_mismatch() {
    assert_nvml_load_failure(
        Nvml::Stub("version-mismatch.conf"),
        "version_mismatch",
        "driver/library version mismatch",
        "reboot",
    );
}

#[test]
fn driver_library_version_mismatch_human_report() {
    let scenario = Scenario::new(Nvml::Stub("version-mismatch.conf"));
    let output = scenario.run(&["doctor"]);
    assert_eq!(output.code, 1);
    assert!(
        output
            .stdout
            .contains("✗ NVIDIA\n  ✗ driver/library version mismatch"),
        "{}",
        output.stdout
    );
    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_human_snapshot("version_mismatch", &output.stdout);
}

#[test]
fn library_named_by_the_environment_is_absent() {
    let missing = PathBuf::from("/nonexistent/envctl-doctor-test/libnvidia-ml.so.1");
    let host = assert_nvml_load_failure(
        Nvml::Library(missing.clone()),
        "library_not_found",
        "ENVCTL_NVML_LIBRARY names a library that cannot be loaded",
        "unset ENVCTL_NVML_LIBRARY",
    );
    assert!(
        message(&host).contains(missing.to_str().unwrap()),
        "the message names the file: {}",
        message(&host)
    );
    assert_eq!(host["facts"]["library"], missing.to_str().unwrap());
}

#[test]
fn missing_symbol_reported_by_nvml() {
    let host = assert_nvml_load_failure(
        Nvml::Stub("missing-init-symbol.conf"),
        "symbol_missing",
        "the NVIDIA driver is too old for envctl's NVML calls",
        "upgrade the driver",
    );
    // Errors name their cause: which function the driver lacks.
    assert!(
        message(&host).contains("nvmlInit_v2"),
        "the message should name the missing function nvmlInit_v2: {}",
        message(&host)
    );
}

#[test]
fn missing_symbol_in_a_library_that_truly_lacks_it() {
    let library = compile_old_driver_library("doctor-old-driver-no-init", &[]);
    let host = assert_nvml_load_failure(
        Nvml::Library(library),
        "symbol_missing",
        "the NVIDIA driver is too old for envctl's NVML calls",
        "upgrade the driver",
    );
    assert!(
        message(&host).contains("undefined symbol: nvmlInit_v2"),
        "{}",
        message(&host)
    );

    // An R418 library that loads but lacks newer per-GPU symbols: the GPU is still listed,
    // with what could not be read, and its architecture is still judged.
    let library = compile_old_driver_library(
        "doctor-old-driver-complete",
        &["-DWITH_INIT", "-DWITH_SHUTDOWN"],
    );
    let scenario = Scenario::new(Nvml::Library(library));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    assert_eq!(finding(&report["findings"], "gpu.nvml")["status"], "pass");
    let device = finding(&report["findings"], "gpu.device");
    assert_eq!(device["status"], "warn", "{device:#}");
    assert!(
        message(device).contains("undefined symbol: nvmlDeviceGetMemoryInfo_v2"),
        "{}",
        message(device)
    );
    let gpu = &profile(&report, "pytorch-2.8")["gpus"][0];
    assert_eq!(gpu["compute_capability"], "7.0");
    assert_eq!(
        finding(&gpu["findings"], "gpu.torch-arch")["status"],
        "pass"
    );
    assert_eq!(
        finding(&gpu["findings"], "driver.cuda")["status"],
        "fail",
        "driver 418 is below CUDA 12's floor"
    );
}

#[test]
fn no_nvidia_stack_doctor_still_works_and_says_so() {
    let scenario = Scenario::new(Nvml::System);
    let (report, code) = scenario.doctor_json(&[]);
    let outcome = report["host"]["gpu"]["nvml"]["outcome"].as_str().unwrap();
    if outcome == "loaded" {
        // A machine with a real driver cannot show this scenario; it shows the driver.
        note("this host has a real NVIDIA driver: the no-NVIDIA-stack scenario cannot be shown");
        assert_eq!(finding(&report["findings"], "gpu.nvml")["status"], "pass");
        return;
    }
    assert_eq!(outcome, "library_not_found", "{:#}", report["host"]["gpu"]);
    assert_eq!(report["host"]["gpu"]["library"], "libnvidia-ml.so.1");
    let host = finding(&report["findings"], "gpu.nvml");
    assert_eq!(host["status"], "info", "no driver is a fact, not a failure");
    assert_eq!(
        message(host),
        "no NVIDIA driver on this host: only profiles without GPUs can run here"
    );
    let human = scenario.run(&["doctor"]);
    assert!(
        human.stdout.contains(
            "· NVIDIA\n  · no NVIDIA driver on this host: only profiles without GPUs can run here\n"
        ),
        "{}",
        human.stdout
    );
    assert_eq!(human.code, code);

    // A GPU profile cannot run here, whatever the daemon says.
    let (gpu_report, gpu_code) = scenario.doctor_json(&["pytorch-2.8"]);
    let pytorch = profile(&gpu_report, "pytorch-2.8");
    let gpus = finding(&pytorch["findings"], "profile.gpus");
    assert_eq!(gpus["status"], "fail");
    assert!(
        message(gpus).starts_with("the profile asks for all GPUs, but this host has no usable GPU"),
        "{}",
        message(gpus)
    );
    assert_eq!(gpu_code, 1);

    if !crate::support::docker::require_daemon() {
        return;
    }
    assert_eq!(
        ids_with_status(&report["findings"], "fail"),
        Vec::<&str>::new(),
        "{:#}",
        report["findings"]
    );
    assert_eq!(code, 0, "no GPU and no profile: nothing failed");
    // A CPU-only profile runs here.
    let (cpu, cpu_code) = scenario.doctor_json(&[&test_profile("cpu-only.toml")]);
    let cpu_profile = profile(&cpu, "cpu-only");
    assert_eq!(cpu_profile["verdict"], "ok", "{cpu_profile:#}");
    assert_eq!(cpu_profile["gpus"], serde_json::json!([]));
    assert_eq!(cpu_code, 0);
}
