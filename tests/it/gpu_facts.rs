//! `envctl_gpu::gather` against real NVML loading code and a fake driver: the stub
//! library (`tests/nvml-stub`, built by `cargo test` as `libenvctl_nvml_stub.so`) driven by
//! the fixtures in `tests/fixtures/nvml/`, plus a C library compiled here that truly lacks
//! NVML symbols.
//!
//! NVML state is process-global (one `dlopen` handle, one init count), so each scenario
//! runs in its own process: the parent test re-runs this test binary with `--exact
//! gpu_facts::child_gathers_facts_for_the_parent`, and that child prints the facts as JSON
//! between markers. Reading them back with `Deserialize` also proves a report replays.

// Helpers outside #[test] functions may unwrap: a failure here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::cli::Envctl;
use crate::support::nvml::{compile_old_driver_library, fixture, stub_library};
use envctl::compat::ComputeCapability;
use envctl::facts::gpu::{
    CudaDriverVersion, FailureKind, GpuDevice, GpuFacts, GpuMemory, LoadOutcome, MigMode,
    MigSetting, NvmlFacts,
};

/// Set in the child's environment; without it the child test does nothing.
const CHILD_VARIABLE: &str = "ENVCTL_GPU_FACTS_CHILD";
const CHILD_TEST: &str = "child_gathers_facts_for_the_parent";
const BEGIN_MARKER: &str = "----- begin gpu facts -----";
const END_MARKER: &str = "----- end gpu facts -----";

const H100: &str = "NVIDIA H100 80GB HBM3";
const V100: &str = "Tesla V100-SXM2-32GB";

/// The child half: gathers with the library and fixture the parent chose, and prints.
#[test]
fn child_gathers_facts_for_the_parent() {
    if std::env::var_os(CHILD_VARIABLE).is_none() {
        return;
    }
    let library = std::env::var_os(envctl_gpu::LIBRARY_VARIABLE).map(PathBuf::from);
    let started = std::time::Instant::now();
    let facts = envctl_gpu::gather(library.as_deref());
    let elapsed = started.elapsed();
    let envelope = serde_json::json!({
        "facts": facts,
        "elapsed_microseconds": elapsed.as_micros(),
    });
    println!("{BEGIN_MARKER}\n{envelope}\n{END_MARKER}");
}

/// The child test as the harness names it, for `--exact`: its path below the crate root
/// (`gpu_facts::child_…` in the one integration binary, the bare name were this module
/// the root of a binary of its own).
fn child_test_path() -> String {
    match module_path!().split_once("::") {
        Some((_crate, below_root)) => format!("{below_root}::{CHILD_TEST}"),
        None => CHILD_TEST.to_owned(),
    }
}

/// What a child process gathered.
struct Gathered {
    facts: GpuFacts,
    elapsed: Duration,
}

/// Runs `gather` in a fresh process with this library and (optionally) stub fixture.
fn gather_in_child(library: &Path, fixture: Option<&Path>) -> Gathered {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            &child_test_path(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VARIABLE, "1")
        .env(envctl_gpu::LIBRARY_VARIABLE, library)
        .env_remove("ENVCTL_NVML_STUB_FIXTURE");
    if let Some(fixture) = fixture {
        command.env("ENVCTL_NVML_STUB_FIXTURE", fixture);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child process failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    let json = stdout
        .split_once(BEGIN_MARKER)
        .and_then(|(_, rest)| rest.split_once(END_MARKER))
        .map(|(json, _)| json.trim())
        .unwrap_or_else(|| panic!("no facts in the child's output:\n{stdout}\n{stderr}"));
    let envelope: serde_json::Value = serde_json::from_str(json).unwrap();
    let facts: GpuFacts = serde_json::from_value(envelope["facts"].clone())
        .unwrap_or_else(|error| panic!("the facts do not replay ({error}):\n{json}"));
    // Replaying and writing again gives the same document: nothing is lost on the way.
    assert_eq!(serde_json::to_value(&facts).unwrap(), envelope["facts"]);
    let microseconds = envelope["elapsed_microseconds"].as_u64().unwrap();
    Gathered {
        facts,
        elapsed: Duration::from_micros(microseconds),
    }
}

fn gather_with_stub(fixture_name: &str) -> GpuFacts {
    gather_in_child(&stub_library(), Some(&fixture(fixture_name))).facts
}

fn loaded(facts: &GpuFacts) -> &NvmlFacts {
    facts
        .loaded()
        .unwrap_or_else(|| panic!("NVML did not load: {:?}", facts.nvml))
}

/// Asserts every fact of one GPU answered, with these values.
fn assert_gpu(gpu: &GpuDevice, name: &str, capability: (u32, u32), memory_total: u64, watts: f64) {
    assert_eq!(gpu.name.value().map(String::as_str), Some(name), "{gpu:?}");
    assert_eq!(
        gpu.compute_capability.value(),
        Some(&ComputeCapability::new(capability.0, capability.1)),
        "{gpu:?}"
    );
    let memory = gpu.memory.value().unwrap_or_else(|| panic!("{gpu:?}"));
    assert_eq!(memory.total_bytes, memory_total);
    assert_eq!(gpu.power_limit_watts.value(), Some(&watts), "{gpu:?}");
    let uuid = gpu.uuid.value().unwrap_or_else(|| panic!("{gpu:?}"));
    assert!(uuid.starts_with("GPU-"), "{uuid}");
    assert!(gpu.pci_bus_id.value().is_some(), "{gpu:?}");
}

fn assert_mig_not_supported(gpu: &GpuDevice) {
    let failure = gpu.mig_mode.failure().unwrap_or_else(|| panic!("{gpu:?}"));
    assert_eq!(failure.kind, FailureKind::NotSupported);
    assert_eq!(failure.function.as_deref(), Some("nvmlDeviceGetMigMode"));
}

#[test]
fn healthy_eight_h100_node() {
    let facts = gather_with_stub("healthy-8x-h100.conf");
    assert_eq!(facts.library, stub_library().to_string_lossy());
    let nvml = loaded(&facts);
    assert_eq!(
        nvml.driver_version.value().map(String::as_str),
        Some("570.124.06")
    );
    assert_eq!(
        nvml.cuda_driver_version.value(),
        Some(&CudaDriverVersion {
            major: 12,
            minor: 8
        })
    );
    assert_eq!(
        nvml.nvml_version.value().map(String::as_str),
        Some("12.570.124.06")
    );
    assert_eq!(nvml.device_count.value(), Some(&8));
    assert_eq!(nvml.gpus.len(), 8);
    let bus_ids = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"];
    for (index, gpu) in nvml.gpus.iter().enumerate() {
        assert_eq!(gpu.index as usize, index);
        assert_gpu(gpu, H100, (9, 0), 85_520_809_984, 700.0);
        assert_eq!(
            gpu.pci_bus_id.value().map(String::as_str),
            Some(format!("00000000:{}:00.0", bus_ids[index]).as_str())
        );
        assert_eq!(
            gpu.memory.value(),
            Some(&GpuMemory {
                total_bytes: 85_520_809_984,
                used_bytes: 1_048_576,
                reserved_bytes: 567_279_616,
                free_bytes: 85_520_809_984 - 1_048_576 - 567_279_616,
            })
        );
        assert_eq!(
            gpu.mig_mode.value(),
            Some(&MigMode {
                current: MigSetting::Disabled,
                pending: MigSetting::Disabled
            })
        );
    }
    let mut uuids: Vec<_> = nvml
        .gpus
        .iter()
        .filter_map(|gpu| gpu.uuid.value())
        .collect();
    uuids.sort();
    uuids.dedup();
    assert_eq!(uuids.len(), 8, "every GPU has its own UUID");
    assert_eq!(nvml.shutdown_failure, None);
}

#[test]
fn mixed_h100_and_v100_keep_their_own_capabilities() {
    let facts = gather_with_stub("mixed-h100-v100.conf");
    let nvml = loaded(&facts);
    assert_eq!(nvml.gpus.len(), 4);
    for gpu in &nvml.gpus[..2] {
        assert_gpu(gpu, H100, (9, 0), 85_520_809_984, 700.0);
        assert!(gpu.mig_mode.value().is_some(), "{gpu:?}");
    }
    for gpu in &nvml.gpus[2..] {
        assert_gpu(gpu, V100, (7, 0), 34_359_738_368, 300.0);
        // Volta has no MIG: that query fails and nothing else does.
        assert_mig_not_supported(gpu);
    }
}

#[test]
fn rtx_5090_reports_sm_120() {
    let facts = gather_with_stub("rtx-5090.conf");
    let nvml = loaded(&facts);
    assert_eq!(
        nvml.driver_version.value().map(String::as_str),
        Some("575.57.08")
    );
    assert_eq!(
        nvml.cuda_driver_version.value().map(ToString::to_string),
        Some("12.9".to_string())
    );
    assert_eq!(nvml.gpus.len(), 1);
    let gpu = &nvml.gpus[0];
    assert_gpu(
        gpu,
        "NVIDIA GeForce RTX 5090",
        (12, 0),
        34_190_917_632,
        575.0,
    );
    assert_eq!(
        gpu.compute_capability
            .value()
            .map(|capability| capability.sm()),
        Some("sm_120".to_string())
    );
    assert_mig_not_supported(gpu);
}

#[test]
fn gtx_1080_ti_reports_sm_61() {
    let facts = gather_with_stub("gtx-1080-ti.conf");
    let nvml = loaded(&facts);
    assert_eq!(
        nvml.driver_version.value().map(String::as_str),
        Some("535.183.01")
    );
    assert_eq!(
        nvml.cuda_driver_version.value().map(ToString::to_string),
        Some("12.2".to_string())
    );
    let gpu = &nvml.gpus[0];
    assert_gpu(
        gpu,
        "NVIDIA GeForce GTX 1080 Ti",
        (6, 1),
        11_811_160_064,
        250.0,
    );
    assert_mig_not_supported(gpu);
}

#[test]
fn driver_not_loaded_is_its_own_outcome() {
    let facts = gather_with_stub("driver-not-loaded.conf");
    assert_eq!(
        facts.nvml,
        LoadOutcome::DriverNotLoaded {
            message: "NVIDIA driver is not loaded".to_string()
        }
    );
    assert_eq!(facts.library, stub_library().to_string_lossy());
}

#[test]
fn driver_library_version_mismatch_is_its_own_outcome() {
    let facts = gather_with_stub("version-mismatch.conf");
    assert!(
        matches!(&facts.nvml, LoadOutcome::VersionMismatch { message } if message.contains("mismatch")),
        "{:?}",
        facts.nvml
    );
}

#[test]
fn no_permission_is_its_own_outcome() {
    let facts = gather_with_stub("no-permission.conf");
    assert!(
        matches!(facts.nvml, LoadOutcome::NoPermission { .. }),
        "{:?}",
        facts.nvml
    );
}

#[test]
fn an_unknown_init_error_keeps_nvml_words() {
    let facts = gather_with_stub("init-unknown-error.conf");
    assert_eq!(
        facts.nvml,
        LoadOutcome::Unknown {
            message: "an internal driver error occurred".to_string()
        }
    );
}

#[test]
fn an_absent_library_is_library_not_found_and_cheap() {
    let library = Path::new("/nonexistent/envctl-test/libnvidia-ml.so.1");
    let gathered = gather_in_child(library, None);
    assert_eq!(gathered.facts.library, library.to_string_lossy());
    let LoadOutcome::LibraryNotFound { message } = &gathered.facts.nvml else {
        panic!("{:?}", gathered.facts.nvml);
    };
    // The loader's own words, which name the path and the reason.
    assert!(message.contains(&*library.to_string_lossy()), "{message}");
    assert!(message.contains("No such file or directory"), "{message}");
    // The doctor has 150 ms in all; a failed dlopen is a tiny part of it.
    assert!(
        gathered.elapsed < Duration::from_millis(150),
        "gather took {:?} without a library",
        gathered.elapsed
    );
}

#[test]
fn a_function_the_driver_lacks_fails_only_its_own_fact() {
    let facts = gather_with_stub("missing-mig-symbol.conf");
    let nvml = loaded(&facts);
    assert_eq!(
        nvml.cuda_driver_version.value().map(ToString::to_string),
        Some("10.1".to_string())
    );
    let gpu = &nvml.gpus[0];
    assert_gpu(gpu, V100, (7, 0), 34_359_738_368, 300.0);
    let failure = gpu.mig_mode.failure().unwrap();
    assert_eq!(failure.kind, FailureKind::SymbolMissing);
    assert_eq!(failure.function.as_deref(), Some("nvmlDeviceGetMigMode"));
}

#[test]
fn a_library_without_the_init_function_is_symbol_missing() {
    let facts = gather_with_stub("missing-init-symbol.conf");
    assert!(
        matches!(facts.nvml, LoadOutcome::SymbolMissing { .. }),
        "{:?}",
        facts.nvml
    );
}

#[test]
fn one_gpu_failing_one_query_keeps_everything_else() {
    let facts = gather_with_stub("one-gpu-fails-one-query.conf");
    let nvml = loaded(&facts);
    assert_eq!(nvml.gpus.len(), 2);

    let healthy = &nvml.gpus[0];
    assert_gpu(healthy, H100, (9, 0), 85_520_809_984, 700.0);
    assert_eq!(
        healthy.mig_mode.value(),
        Some(&MigMode {
            current: MigSetting::Disabled,
            pending: MigSetting::Enabled
        })
    );

    let failing = &nvml.gpus[1];
    let failure = failing.memory.failure().unwrap();
    assert_eq!(failure.kind, FailureKind::Unknown);
    assert_eq!(
        failure.function.as_deref(),
        Some("nvmlDeviceGetMemoryInfo_v2")
    );
    assert_eq!(failing.name.value().map(String::as_str), Some(H100));
    assert_eq!(
        failing.uuid.value().map(String::as_str),
        Some("GPU-3c9d1e2f-0a4b-4c5d-8e6f-7a8b9c0d1e02")
    );
    assert_eq!(
        failing.pci_bus_id.value().map(String::as_str),
        Some("00000000:2A:00.0")
    );
    assert_eq!(
        failing.compute_capability.value(),
        Some(&ComputeCapability::new(9, 0))
    );
    assert!(failing.mig_mode.value().is_some());
    assert_eq!(failing.power_limit_watts.value(), Some(&700.0));
}

#[test]
fn a_lost_gpu_fails_every_fact_of_its_own_and_no_other() {
    let facts = gather_with_stub("gpu-lost.conf");
    let nvml = loaded(&facts);
    assert_gpu(&nvml.gpus[0], H100, (9, 0), 85_520_809_984, 700.0);
    let lost = &nvml.gpus[1];
    assert_eq!(lost.index, 1);
    for failure in [
        lost.name.failure(),
        lost.uuid.failure(),
        lost.pci_bus_id.failure(),
        lost.compute_capability.failure(),
        lost.memory.failure(),
        lost.mig_mode.failure(),
        lost.power_limit_watts.failure(),
    ] {
        let failure = failure.unwrap();
        assert_eq!(failure.kind, FailureKind::GpuLost);
        assert_eq!(
            failure.function.as_deref(),
            Some("nvmlDeviceGetHandleByIndex_v2")
        );
    }
}

#[test]
fn an_old_driver_library_lacking_symbols_fails_only_those_facts() {
    let library = compile_old_driver_library(
        "old-driver-nvml-complete",
        &["-DWITH_INIT", "-DWITH_SHUTDOWN"],
    );
    let facts = gather_in_child(&library, None).facts;
    let nvml = loaded(&facts);
    assert_eq!(
        nvml.driver_version.value().map(String::as_str),
        Some("418.226.00")
    );
    let cuda = nvml.cuda_driver_version.failure().unwrap();
    assert_eq!(cuda.kind, FailureKind::SymbolMissing);
    assert!(
        cuda.message
            .contains("undefined symbol: nvmlSystemGetCudaDriverVersion_v2"),
        "{}",
        cuda.message
    );
    assert_eq!(nvml.gpus.len(), 1);
    let gpu = &nvml.gpus[0];
    assert_eq!(gpu.name.value().map(String::as_str), Some(V100));
    assert_eq!(
        gpu.compute_capability.value(),
        Some(&ComputeCapability::new(7, 0))
    );
    let memory = gpu.memory.failure().unwrap();
    assert_eq!(memory.kind, FailureKind::SymbolMissing);
    assert!(
        memory
            .message
            .contains("undefined symbol: nvmlDeviceGetMemoryInfo_v2"),
        "{}",
        memory.message
    );
    for failure in [
        gpu.pci_bus_id.failure(),
        gpu.mig_mode.failure(),
        gpu.power_limit_watts.failure(),
    ] {
        assert_eq!(failure.unwrap().kind, FailureKind::SymbolMissing);
    }
    assert_eq!(nvml.shutdown_failure, None);
}

#[test]
fn a_library_without_shutdown_is_reported_not_a_panic() {
    let library = compile_old_driver_library("old-driver-nvml-no-shutdown", &["-DWITH_INIT"]);
    let facts = gather_in_child(&library, None).facts;
    let nvml = loaded(&facts);
    assert_eq!(nvml.gpus.len(), 1);
    let shutdown = nvml.shutdown_failure.as_ref().unwrap();
    assert_eq!(shutdown.kind, FailureKind::SymbolMissing);
    assert_eq!(shutdown.function.as_deref(), Some("nvmlShutdown"));
}

#[test]
fn a_library_without_init_is_symbol_missing() {
    let library = compile_old_driver_library("old-driver-nvml-no-init", &[]);
    let facts = gather_in_child(&library, None).facts;
    let LoadOutcome::SymbolMissing { message } = &facts.nvml else {
        panic!("{:?}", facts.nvml);
    };
    assert!(
        message.contains("undefined symbol: nvmlInit_v2"),
        "{message}"
    );
}

/// `envctl doctor --json` on a stub machine, with its findings.
fn doctor_findings(fixture_name: &str) -> Vec<serde_json::Value> {
    let directory = tempfile::tempdir().unwrap();
    let run = Envctl::in_folder(directory.path())
        .nvml(fixture_name)
        .args(["doctor", "--json"])
        .run();
    let report: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|_| panic!("doctor printed no JSON: {}", run.stderr));
    report["findings"].as_array().unwrap().clone()
}

/// Issue 41, held out: `doctor` reads MIG mode from NVML (nvmlDeviceGetMigMode) and judges
/// each GPU model's own and MIG driver floors (compat-facts §8: NVIDIA's MIG user guide,
/// Deployment Considerations; GPU Operator for HGX B200). A B200 on 570.124.06 fails with
/// MIG on and off; an H200 with MIG on 550.54.15 fails (MIG needs 550.90.07); an H100 on
/// 570.124.06 with MIG off meets its floor.
#[test]
fn doctor_judges_model_and_mig_driver_floors_with_nvmls_mig_mode() {
    let model = |fixture_name: &str| -> Vec<serde_json::Value> {
        doctor_findings(fixture_name)
            .into_iter()
            .filter(|finding| finding["id"] == "driver.gpu-model")
            .collect()
    };
    let b200 = model("b200-mig-r570.conf");
    assert_eq!(b200.len(), 2, "one per MIG state: {b200:#?}");
    for finding in &b200 {
        assert_eq!(finding["status"], "fail", "{finding}");
        assert!(
            finding["message"].as_str().unwrap().contains("570.133.20"),
            "{finding}"
        );
    }
    assert_eq!(b200[0]["facts"]["mig"], true, "GPU 0 has MIG enabled");
    assert_eq!(b200[0]["facts"]["gpu_indices"], serde_json::json!([0]));
    assert_eq!(b200[1]["facts"]["mig"], false);
    let h200 = model("h200-mig-r550.conf");
    assert_eq!(h200.len(), 1, "{h200:#?}");
    assert_eq!(h200[0]["status"], "fail", "{}", h200[0]);
    let message = h200[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("GPUs 0, 1: MIG is enabled on NVIDIA H200")
            && message.contains("550.90.07"),
        "{message}"
    );
    // A floor that is met is not said: the H100 node's 570.124.06 is above H100's MIG
    // floor 525.85.12, and its GPUs have MIG off.
    assert!(model("healthy-8x-h100.conf").is_empty());
}

/// Issue 43: the health facts come through the real nvml-wrapper calls: persistence, ECC
/// counts, retired pages, remapped rows (through NVML's field values), and "GPU is lost"
/// from a query after the handle was given.
#[test]
fn health_facts_are_read_and_not_supported_stays_unknown() {
    use envctl::facts::gpu::{EccCounts, RemappedRows, RetiredPages};
    let facts = gather_with_stub("gpu-health-faults.conf");
    let gpus = &loaded(&facts).gpus;
    assert_eq!(gpus.len(), 4);

    let sound = &gpus[0].health;
    assert_eq!(sound.persistence_mode.value(), Some(&false));
    assert_eq!(sound.ecc_enabled.value(), Some(&true));
    assert_eq!(
        sound.ecc_aggregate.value(),
        Some(&EccCounts {
            corrected: 12,
            uncorrected: 0
        })
    );
    assert_eq!(
        sound.retired_pages.value(),
        Some(&RetiredPages {
            single_bit: 0,
            double_bit: 0
        })
    );
    assert!(gpus[0].lost().is_none());

    let remap = &gpus[1].health;
    assert_eq!(remap.persistence_mode.value(), Some(&true));
    assert_eq!(
        remap.remapped_rows.value(),
        Some(&RemappedRows {
            correctable: 0,
            uncorrectable: 1,
            pending: true,
            failure: false
        })
    );
    assert_eq!(
        remap.ecc_volatile.value(),
        Some(&EccCounts {
            corrected: 0,
            uncorrected: 1
        })
    );

    // Lost after its handle was given: its name still reads, and the GPU is still lost.
    let lost = &gpus[2];
    assert_eq!(lost.name.value().map(String::as_str), Some(H100));
    let failure = lost.lost().unwrap_or_else(|| panic!("{lost:?}"));
    assert_eq!(failure.kind, FailureKind::GpuLost);
    assert_eq!(
        lost.health
            .ecc_volatile
            .failure()
            .map(|failure| failure.kind),
        Some(FailureKind::GpuLost)
    );

    // A V100 has no row remapping: unknown, not zero rows.
    let v100 = &gpus[3].health;
    assert_eq!(
        v100.remapped_rows.failure().map(|failure| failure.kind),
        Some(FailureKind::NotSupported),
        "{v100:?}"
    );
    assert_eq!(
        v100.retired_pages.value(),
        Some(&RetiredPages {
            single_bit: 0,
            double_bit: 2
        })
    );
    assert_eq!(v100.retired_pages_pending.value(), Some(&true));
}

/// A fixture without health keys (every older one) leaves each health fact unknown.
#[test]
fn health_a_fixture_without_health_keys_reads_not_supported() {
    let facts = gather_with_stub("healthy-8x-h100.conf");
    let health = &loaded(&facts).gpus[0].health;
    for failure in [
        health.persistence_mode.failure(),
        health.ecc_aggregate.failure(),
        health.retired_pages.failure(),
        health.remapped_rows.failure(),
    ] {
        assert_eq!(
            failure.map(|failure| failure.kind),
            Some(FailureKind::NotSupported),
            "{health:?}"
        );
    }
}
