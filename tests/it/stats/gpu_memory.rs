//! GPU memory per container: a process's memory lands on its container's row, and memory that
//! cannot be read is unknown, not zero.

use super::*;

#[test]
fn gpu_memory_of_a_process_in_a_container_lands_on_its_row() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-gpu");
    let trainer = fleet.start(&[], &["sleep", "600"]);
    let bystander = fleet.start(&[], &["sleep", "600"]);
    let pid = fleet.pid(&trainer);
    let folder = TempDir::new().unwrap();
    let machine = folder.path().join("machine.conf");
    // The trainer holds 3 GiB on GPU 0 and 1 GiB on GPU 1; pid 1 (the host's init) 1 MiB.
    std::fs::write(
        &machine,
        format!(
            "driver_version=570.124.06\ncuda_driver_version=12080\ndevice_count=2\n\
             gpu.*.name=NVIDIA H100 80GB HBM3\ngpu.*.memory_total=85520809984\ngpu.*.memory_used=4294967296\n\
             gpu.*.power_limit_milliwatts=700000\ngpu.*.utilization_gpu=37\ngpu.*.utilization_memory=12\n\
             gpu.*.temperature=41\ngpu.*.power_usage_milliwatts=71234\ngpu.*.throttle_reasons=0x1\n\
             gpu.*.clock_sm_mhz=1980\ngpu.*.clock_memory_mhz=2619\n\
             gpu.0.uuid=GPU-0\ngpu.1.uuid=GPU-1\n\
             gpu.0.processes={pid}:3221225472,1:1048576\ngpu.1.processes={pid}:1073741824\n"
        ),
    )
    .unwrap();
    for (arguments, source) in [
        (vec!["stats", "--once", "--json"], "cgroup"),
        (
            vec!["stats", "--json", "--count", "1", "--interval", "0.3"],
            "api",
        ),
    ] {
        let result = envctl()
            .args(&arguments)
            .args([&trainer, &bystander])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine)
            .env("ENVCTL_STATS_SOURCE", source)
            .run();
        assert_eq!(result.code, 0, "{}", result.stderr);
        // `--once --json` is one (pretty) document, a stream one line per sample.
        let document = if source == "cgroup" {
            document(&result.stdout)
        } else {
            document(result.stdout.lines().last().unwrap())
        };
        assert_eq!(row(&document, &trainer)["gpu_memory_bytes"], 4 * 1024 * MIB);
        assert_eq!(row(&document, &trainer)["gpus"], serde_json::json!([0, 1]));
        assert_eq!(row(&document, &bystander)["gpu_memory_bytes"], 0);
        let gpu = &document["gpus"][0];
        assert_eq!(gpu["utilization_percent"], 37.0);
        assert_eq!(gpu["memory_total_bytes"], 85_520_809_984_u64);
        assert_eq!(gpu["temperature_c"], 41.0);
        assert_eq!(gpu["power_w"], 71.234);
        assert_eq!(gpu["power_limit_w"], 700.0);
        assert_eq!(gpu["sm_clock_mhz"], 1980);
        assert_eq!(gpu["throttle_reasons"], serde_json::json!(["gpu_idle"]));
        assert_eq!(gpu["uuid"], "GPU-0");
        assert_eq!(gpu["processes"][0]["container"], trainer.as_str());
        assert!(
            gpu["processes"][1]["container"].is_null(),
            "pid 1 is on the host"
        );
    }
    let table = envctl()
        .args(["stats", "--once", &trainer])
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", &machine)
        .run();
    assert!(table.stdout.contains("4.0GiB"), "{}", table.stdout);
    assert!(
        table.stdout.contains("NVIDIA H100 80GB HBM3"),
        "{}",
        table.stdout
    );
}

#[test]
fn gpu_memory_that_cannot_be_read_is_unknown_not_zero() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-gpu-unknown");
    let trainer = fleet.start(&[], &["sleep", "600"]);
    let bystander = fleet.start(&[], &["sleep", "600"]);
    let pid = fleet.pid(&trainer);
    let folder = TempDir::new().unwrap();
    let machine = folder.path().join("machine.conf");
    let base = "driver_version=570.124.06\ncuda_driver_version=12080\ndevice_count=2\n\
                gpu.*.name=NVIDIA H100 80GB HBM3\ngpu.*.memory_total=85520809984\n\
                gpu.*.memory_used=4294967296\ngpu.0.uuid=GPU-0\ngpu.1.uuid=GPU-1\n";
    for (case, lines) in [
        // GPU 1 does not list its processes (NVML_ERROR_NOT_SUPPORTED): the trainer, seen
        // on GPU 0, may hold memory there too.
        (
            "process list not supported",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.fail=processes:3\n"),
        ),
        (
            "process list failed",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.fail=processes:999\n"),
        ),
        // NVML_VALUE_NOT_AVAILABLE for one of the trainer's processes.
        (
            "memory unavailable",
            format!("gpu.0.processes={pid}:3221225472\ngpu.1.processes={pid}:0xffffffffffffffff\n"),
        ),
    ] {
        std::fs::write(&machine, format!("{base}{lines}")).unwrap();
        let result = envctl()
            .args(["stats", "--once", "--json", &trainer, &bystander])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine)
            .run();
        assert_eq!(result.code, 0, "{case}: {}", result.stderr);
        let document = document(&result.stdout);
        assert!(
            row(&document, &trainer)["gpu_memory_bytes"].is_null(),
            "{case}: {document:#}"
        );
        assert_eq!(
            row(&document, &bystander)["gpu_memory_bytes"],
            0,
            "{case}: a container with no GPU holds none"
        );
        let table = envctl()
            .args(["stats", "--once", &trainer])
            .env("ENVCTL_NVML_LIBRARY", stub_library())
            .env("ENVCTL_NVML_STUB_FIXTURE", &machine)
            .run();
        assert_eq!(table.code, 0, "{case}: {}", table.stderr);
        assert!(
            !table.stdout.contains("3.0GiB"),
            "{case}: the part that was read is not shown as the whole:\n{}",
            table.stdout
        );
    }
}
