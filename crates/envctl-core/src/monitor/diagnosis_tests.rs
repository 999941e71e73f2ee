//! Every diagnosis rule over synthetic windows: each fires on its pattern, names its
//! numbers, and stays quiet just on the other side of its thresholds.

use std::collections::BTreeMap;

use super::diagnosis::*;
use super::snapshot::{ContainerRow, GpuRow, ProcessRow, Snapshot};
use crate::units::binary_spaced as bytes;

const GIB: u64 = 1024 * 1024 * 1024;

/// A container with `cores` allowed, running on `gpus`.
fn container(cpu: f64, cores: f64, gpus: &[u32]) -> ContainerRow {
    ContainerRow {
        id: "c0ffee".into(),
        name: "train".into(),
        profile: Some("pytorch".into()),
        cpu_percent: Some(cpu),
        memory_bytes: Some(GIB),
        memory_limit_bytes: Some(16 * GIB),
        gpu_memory_bytes: Some(0),
        cpu_limit_cores: Some(cores),
        gpus: gpus.to_vec(),
        ..ContainerRow::default()
    }
}

fn gpu(index: u32, utilization: f64) -> GpuRow {
    GpuRow {
        index,
        name: Some("NVIDIA H100 80GB HBM3".into()),
        uuid: Some(format!("GPU-{index}")),
        utilization_percent: Some(utilization),
        memory_used_bytes: Some(10 * GIB),
        memory_total_bytes: Some(80 * GIB),
        temperature_c: Some(60.0),
        power_w: Some(300.0),
        power_limit_w: Some(700.0),
        throttle_reasons_mask: Some(0),
        ..GpuRow::default()
    }
}

/// `samples` snapshots a second apart, each made by `build(step)`.
fn window(
    samples: usize,
    build: impl Fn(usize) -> (Vec<ContainerRow>, Vec<GpuRow>),
) -> Vec<Snapshot> {
    (0..samples)
        .map(|step| {
            let (containers, gpus) = build(step);
            Snapshot {
                time: 1000.0 + step as f64,
                containers,
                gpus,
                ..Snapshot::default()
            }
        })
        .collect()
}

fn ids(diagnoses: &[Diagnosis]) -> Vec<&str> {
    diagnoses
        .iter()
        .map(|diagnosis| diagnosis.id.as_str())
        .collect()
}

fn find<'a>(diagnoses: &'a [Diagnosis], id: &str) -> &'a Diagnosis {
    diagnoses
        .iter()
        .find(|diagnosis| diagnosis.id == id)
        .unwrap_or_else(|| panic!("no `{id}` in {:?}", ids(diagnoses)))
}

#[test]
fn a_healthy_window_has_no_diagnosis() {
    let healthy = window(30, |_| {
        (
            vec![container(350.0, 8.0, &[0, 1])],
            vec![gpu(0, 92.0), gpu(1, 90.0)],
        )
    });
    assert!(
        diagnose(&healthy).is_empty(),
        "{:?}",
        ids(&diagnose(&healthy))
    );
    assert!(diagnose(&[]).is_empty());
}

#[test]
fn input_bound_when_the_cpu_is_at_its_limit_and_gpus_wait() {
    let starved = window(10, |_| {
        (vec![container(395.0, 4.0, &[0])], vec![gpu(0, 23.0)])
    });
    let diagnoses = diagnose(&starved);
    let found = find(&diagnoses, "input-bound");
    assert_eq!(found.subject, "train");
    assert_eq!(found.severity, Severity::Warning);
    assert_eq!(found.evidence["cpu_percent_mean"], 395.0);
    assert_eq!(found.evidence["cpu_limit_percent"], 400.0);
    assert_eq!(found.evidence["gpu_utilization_percent_mean"], 23.0);
    assert!(
        found.message.contains("395% of its 400% limit"),
        "{}",
        found.message
    );
    assert!(found.hint.contains("num_workers") && found.hint.contains("pin_memory"));
    assert!(
        !ids(&diagnoses).contains(&"gpu-idle"),
        "the more specific rule wins"
    );
}

#[test]
fn input_bound_when_one_core_is_saturated() {
    let single = window(10, |_| {
        (vec![container(99.0, 8.0, &[0])], vec![gpu(0, 30.0)])
    });
    let found = find(&diagnose(&single), "input-bound").clone();
    assert!(
        found.message.starts_with("one core is saturated"),
        "{}",
        found.message
    );
    assert!(found.hint.contains("num_workers=0"));
}

#[test]
fn input_bound_needs_a_sustained_window_and_starved_gpus() {
    // Too few samples.
    let short = window(SUSTAINED_MIN_SAMPLES - 1, |_| {
        (vec![container(395.0, 4.0, &[0])], vec![gpu(0, 23.0)])
    });
    assert!(diagnose(&short).is_empty());
    // Busy GPUs: the CPU is simply doing its share.
    let busy = window(10, |_| {
        (
            vec![container(395.0, 4.0, &[0])],
            vec![gpu(0, INPUT_BOUND_GPU_BELOW_PERCENT)],
        )
    });
    assert!(!ids(&diagnose(&busy)).contains(&"input-bound"));
    // CPU below 90 % of the limit and outside the one-core band.
    let relaxed = window(10, |_| {
        (vec![container(350.0, 4.0, &[0])], vec![gpu(0, 20.0)])
    });
    assert!(!ids(&diagnose(&relaxed)).contains(&"input-bound"));
    // Condition in only 7 of 10 samples (< 80 %).
    let bursty = window(10, |step| {
        let cpu = if step < 7 { 395.0 } else { 200.0 };
        (vec![container(cpu, 4.0, &[0])], vec![gpu(0, 20.0)])
    });
    assert!(!ids(&diagnose(&bursty)).contains(&"input-bound"));
    // No GPU: nothing to starve.
    let cpu_only = window(10, |_| {
        (vec![container(395.0, 4.0, &[])], vec![gpu(0, 0.0)])
    });
    assert!(!ids(&diagnose(&cpu_only)).contains(&"input-bound"));
}

fn growing(samples: usize, step_bytes: u64, plateau_after: Option<usize>) -> Vec<Snapshot> {
    window(samples, |step| {
        let steps = plateau_after.map_or(step, |after| step.min(after));
        let mut row = container(100.0, 8.0, &[]);
        row.memory_bytes = Some(GIB + steps as u64 * step_bytes);
        (vec![row], Vec::new())
    })
}

#[test]
fn steady_memory_growth_is_a_likely_leak() {
    // +8 MiB a second for 90 s: 720 MiB on 1 GiB.
    let diagnoses = diagnose(&growing(91, 8 << 20, None));
    let found = find(&diagnoses, "host-memory-growing");
    assert_eq!(
        found.evidence["growth_bytes_per_minute"],
        (480_u64 << 20) as f64
    );
    assert_eq!(found.evidence["seconds"], 90.0);
    assert!(found.evidence["fit_r2"] > 0.99);
    assert!(found.evidence.contains_key("minutes_to_limit"));
    assert!(found.message.contains("+480 MiB/min"), "{}", found.message);
    assert!(found.hint.contains(".item()"));
}

#[test]
fn a_container_the_oom_killer_ended_is_named_with_its_curve_up_to_it() {
    // Ten seconds of +64 MiB a second, then gone: too short for the leak rule, but the
    // kernel said why it ended.
    let mut snapshots = growing(10, 64 << 20, None);
    let mut last = Snapshot {
        time: 1010.0,
        ..Snapshot::default()
    };
    last.ended.push(crate::monitor::EndedContainer {
        id: "c0ffee".into(),
        name: "train".into(),
        profile: Some("pytorch".into()),
        time: 1010.0,
        status: "exited".into(),
        exit_code: Some(137),
        oom_killed: Some(true),
    });
    snapshots.push(last.clone());
    let diagnoses = diagnose(&snapshots);
    let found = find(&diagnoses, "host-memory-growing");
    assert_eq!(found.subject, "train");
    assert_eq!(found.evidence["oom_killed"], 1.0);
    assert_eq!(found.evidence["exit_code"], 137.0);
    assert_eq!(found.evidence["memory_limit_bytes"], (16 * GIB) as f64);
    assert_eq!(found.evidence["end_bytes"], (GIB + 9 * (64 << 20)) as f64);
    assert_eq!(
        found.evidence["growth_bytes_per_minute"],
        (60 * (64_u64 << 20)) as f64
    );
    assert!(
        found
            .message
            .starts_with("killed by the OOM killer (exit 137) at its 16.0 GiB limit"),
        "{}",
        found.message
    );
    // An exit of its own is no diagnosis; nor an OOM whose samples left the window.
    snapshots.last_mut().unwrap().ended[0].oom_killed = Some(false);
    assert!(!ids(&diagnose(&snapshots)).contains(&"host-memory-growing"));
    assert!(!ids(&diagnose(&[last])).contains(&"host-memory-growing"));
}

#[test]
fn memory_that_levels_off_or_grows_little_is_not_a_leak() {
    // Grows for 40 s, then flat for 50 s: a warm-up, not a leak.
    assert!(diagnose(&growing(91, 8 << 20, Some(40))).is_empty());
    // Under 64 MiB in 90 s.
    assert!(diagnose(&growing(91, 512 << 10, None)).is_empty());
    // Too short a window (59 s).
    assert!(diagnose(&growing(60, 8 << 20, None)).is_empty());
    // Noisy up and down: no line fits.
    let noisy = window(91, |step| {
        let mut row = container(100.0, 8.0, &[]);
        row.memory_bytes =
            Some(if step % 2 == 0 { GIB } else { 3 * GIB } + step as u64 * (1 << 20));
        (vec![row], Vec::new())
    });
    assert!(diagnose(&noisy).is_empty(), "{:?}", ids(&diagnose(&noisy)));
}

#[test]
fn gpu_memory_near_full_names_who_holds_it() {
    let full = window(1, |_| {
        let mut row = gpu(0, 90.0);
        row.memory_used_bytes = Some(79 * GIB);
        row.processes = vec![
            ProcessRow {
                pid: 10,
                used_memory_bytes: Some(70 * GIB),
                container: Some("train".into()),
            },
            ProcessRow {
                pid: 11,
                used_memory_bytes: Some(8 * GIB),
                container: None,
            },
        ];
        (Vec::new(), vec![row])
    });
    let diagnoses = diagnose(&full);
    let found = find(&diagnoses, "gpu-memory-near-full");
    assert_eq!(found.subject, "gpu 0");
    assert!(
        found
            .message
            .contains("held by train 70.0 GiB, pid 11 8.0 GiB"),
        "{}",
        found.message
    );
    assert_eq!(found.evidence["used_fraction"], 0.988);
    // 94 % is not near full.
    let roomy = window(1, |_| {
        let mut row = gpu(0, 90.0);
        row.memory_used_bytes = Some(75 * GIB);
        (Vec::new(), vec![row])
    });
    assert!(diagnose(&roomy).is_empty());
}

#[test]
fn gpu_memory_near_full_words_an_unknown_holding_as_unknown() {
    let process = |pid, used_memory_bytes, container: Option<&str>| ProcessRow {
        pid,
        used_memory_bytes,
        container: container.map(String::from),
    };
    let full = window(1, |_| {
        let mut row = gpu(0, 90.0);
        row.memory_used_bytes = Some(79 * GIB);
        row.processes = vec![
            // NVML gave no memory for this host process.
            process(1234, None, None),
            // One of the container's processes unknown makes its whole amount unknown.
            process(10, Some(70 * GIB), Some("train")),
            process(12, None, Some("train")),
            process(11, Some(GIB), None),
        ];
        (Vec::new(), vec![row])
    });
    let diagnoses = diagnose(&full);
    let found = find(&diagnoses, "gpu-memory-near-full");
    // Known amounts first, then the unknown ones in name order; none reads as 0 B.
    assert!(
        found.message.ends_with(
            "held by pid 11 1.0 GiB, pid 1234 an unknown amount, train an unknown amount"
        ),
        "{}",
        found.message
    );
    assert!(!found.message.contains("0 B"), "{}", found.message);
}

#[test]
fn uneven_load_across_one_containers_gpus() {
    let uneven = window(10, |_| {
        (
            vec![container(300.0, 8.0, &[0, 1, 2])],
            vec![gpu(0, 97.0), gpu(1, 60.0), gpu(2, 55.0)],
        )
    });
    let diagnoses = diagnose(&uneven);
    let found = find(&diagnoses, "gpu-uneven-load");
    assert_eq!(found.evidence["spread_points"], 42.0);
    assert_eq!(found.evidence["gpu_0_utilization_percent_mean"], 97.0);
    assert!(
        found
            .message
            .starts_with("GPU 0 averages 97% busy but GPU 2 only 55%"),
        "{}",
        found.message
    );
    assert!(found.hint.contains("DistributedDataParallel"));
    // 29 points apart: fine.
    let even = window(10, |_| {
        (
            vec![container(300.0, 8.0, &[0, 1])],
            vec![gpu(0, 90.0), gpu(1, 61.0)],
        )
    });
    assert!(!ids(&diagnose(&even)).contains(&"gpu-uneven-load"));
}

fn throttled_window(reasons: &[&str], hot_samples: usize) -> Vec<Snapshot> {
    window(10, |step| {
        let mut row = gpu(0, 95.0);
        if step < hot_samples {
            row.throttle_reasons = reasons.iter().map(|reason| reason.to_string()).collect();
            row.temperature_c = Some(91.0);
            row.power_w = Some(699.0);
        }
        (Vec::new(), vec![row])
    })
}

#[test]
fn thermal_throttling_is_a_warning_with_its_temperature() {
    let diagnoses = diagnose(&throttled_window(&["hw_thermal_slowdown"], 6));
    let found = find(&diagnoses, "gpu-thermal-throttle");
    assert_eq!(found.severity, Severity::Warning);
    assert_eq!(found.evidence["samples_throttled"], 6.0);
    assert_eq!(found.evidence["temperature_c_max"], 91.0);
    assert!(
        found
            .message
            .contains("hw_thermal_slowdown in 6 of 10 samples"),
        "{}",
        found.message
    );
    // 4 of 10 is under the threshold.
    assert!(diagnose(&throttled_window(&["hw_thermal_slowdown"], 4)).is_empty());
}

#[test]
fn power_capping_is_information_unless_the_brake_pulls() {
    let capped = diagnose(&throttled_window(&["sw_power_cap"], 10));
    let found = find(&capped, "gpu-power-throttle");
    assert_eq!(found.severity, Severity::Info);
    assert!(
        found.message.contains("699 W of its 700 W limit"),
        "{}",
        found.message
    );
    let braked = diagnose(&throttled_window(&["hw_power_brake_slowdown"], 10));
    assert_eq!(
        find(&braked, "gpu-power-throttle").severity,
        Severity::Warning
    );
    // A single snapshot (`--once`) reports the state it sees.
    let once = throttled_window(&["sw_thermal_slowdown"], 10);
    assert!(ids(&diagnose(&once[..1])).contains(&"gpu-thermal-throttle"));
    // `gpu_idle` alone is no throttling.
    assert!(diagnose(&throttled_window(&["gpu_idle"], 10)).is_empty());
}

#[test]
fn idle_gpus_while_the_container_runs() {
    let holding = window(30, |_| {
        let mut row = container(2.0, 8.0, &[0]);
        row.gpu_memory_bytes = Some(3 * GIB);
        (vec![row], vec![gpu(0, 0.0)])
    });
    let diagnoses = diagnose(&holding);
    let found = find(&diagnoses, "gpu-idle");
    assert!(
        found.message.contains("holds 3.0 GiB of GPU memory"),
        "{}",
        found.message
    );
    assert_eq!(found.evidence["seconds"], 29.0);
    assert!(found.hint.contains("py-spy"));
    let unused = window(30, |_| {
        (vec![container(50.0, 8.0, &[0])], vec![gpu(0, 3.0)])
    });
    let found = find(&diagnose(&unused), "gpu-idle").clone();
    assert!(found.hint.contains("nvidia-check"), "{}", found.hint);
    // 6 % is not idle; nor is a short window.
    let working = window(30, |_| {
        (vec![container(50.0, 8.0, &[0])], vec![gpu(0, 6.0)])
    });
    assert!(diagnose(&working).is_empty());
    let short = window(SUSTAINED_MIN_SAMPLES - 1, |_| {
        (vec![container(50.0, 8.0, &[0])], vec![gpu(0, 0.0)])
    });
    assert!(diagnose(&short).is_empty());
}

#[test]
fn the_window_keeps_its_span_and_drops_old_diagnoses() {
    let mut kept = Window::for_interval(1.0);
    let snapshot = Snapshot {
        diagnoses: vec![Diagnosis {
            id: "x".into(),
            severity: Severity::Info,
            subject: "y".into(),
            message: String::new(),
            evidence: BTreeMap::new(),
            hint: String::new(),
        }],
        ..Snapshot::default()
    };
    for _ in 0..500 {
        kept.push(&snapshot);
    }
    assert!(kept.diagnose().is_empty());
    assert_eq!(Window::for_interval(0.5).capacity(), 240);
    assert_eq!(Window::for_interval(60.0).capacity(), LEAK_MIN_SAMPLES);
    assert_eq!(Window::for_interval(1.0).len(), 0);
}

#[test]
fn byte_sizes_read_like_docker_stats() {
    assert_eq!(bytes(512.0), "512 B");
    assert_eq!(bytes(1536.0), "1.5 KiB");
    assert_eq!(bytes(3.0 * GIB as f64), "3.0 GiB");
    assert_eq!(bytes(200.0 * 1024.0 * 1024.0), "200 MiB");
}

#[test]
fn a_lost_or_failed_gpu_is_flagged_with_the_containers_on_it() {
    use super::snapshot::GpuHealthRow;
    use crate::checks::health::HealthState;
    let mut lost = gpu(2, 0.0);
    lost.health = Some(GpuHealthRow {
        state: HealthState::Lost,
        reasons: vec!["NVML says the GPU is lost (fell off the bus): GPU is lost".into()],
        ecc_volatile: None,
        ecc_aggregate: None,
        retired_pages: None,
        remapped_rows: None,
        xids: Vec::new(),
    });
    let snapshot = Snapshot {
        containers: vec![container(50.0, 4.0, &[2])],
        gpus: vec![lost, gpu(0, 90.0)],
        ..Snapshot::default()
    };
    let found = diagnose(std::slice::from_ref(&snapshot));
    let flagged: Vec<&Diagnosis> = found
        .iter()
        .filter(|diagnosis| diagnosis.id == "gpu-unhealthy")
        .collect();
    assert_eq!(flagged.len(), 1, "{found:#?}");
    assert_eq!(flagged[0].severity, Severity::Warning);
    assert_eq!(flagged[0].subject, "gpu 2");
    assert!(
        flagged[0].message.contains("running on it: train"),
        "{flagged:?}"
    );
    assert!(
        flagged[0].hint.contains("nvidia-smi -r -i 2"),
        "{flagged:?}"
    );
    // A healthy GPU, and one whose health was not read, are not flagged.
    let mut sound = gpu(2, 0.0);
    sound.health = Some(GpuHealthRow {
        state: HealthState::Ok,
        reasons: Vec::new(),
        ecc_volatile: None,
        ecc_aggregate: None,
        retired_pages: None,
        remapped_rows: None,
        xids: Vec::new(),
    });
    let quiet = Snapshot {
        gpus: vec![sound, gpu(0, 0.0)],
        ..Snapshot::default()
    };
    assert!(
        diagnose(std::slice::from_ref(&quiet))
            .iter()
            .all(|diagnosis| diagnosis.id != "gpu-unhealthy")
    );
}
