//! Numbers from recorded inputs: Docker's frames give the docker CLI's numbers, a one-shot
//! frame and an earlier reading give the CPU percent, and cgroup texts name their container.

use super::*;

struct Expected {
    file: &'static str,
    cpu_percent: Option<f64>,
    memory_bytes: u64,
    memory_limit_bytes: u64,
    block: (u64, u64),
    net: (Option<u64>, Option<u64>),
    pids: u64,
}

#[test]
fn recorded_frames_give_the_docker_cli_numbers() {
    let cases = [
        // Busy loop on 2 CPUs, --cpus 1.5: Δcontainer / Δsystem × 2 × 100.
        Expected {
            file: "v1-busy.json",
            cpu_percent: Some(89.060_282_288_557_22),
            memory_bytes: 544_768,
            memory_limit_bytes: 256 * MIB,
            block: (0, 0),
            net: (Some(516), Some(0)),
            pids: 1,
        },
        Expected {
            file: "v1-idle.json",
            cpu_percent: Some(0.0),
            memory_bytes: 593_920,
            memory_limit_bytes: 25_276_059_648,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // 66 MiB of page cache (`total_inactive_file`) is not the container's footprint.
        Expected {
            file: "v1-disk.json",
            cpu_percent: Some(0.0),
            memory_bytes: 2_228_224,
            memory_limit_bytes: 25_276_059_648,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // Read and Write entries of every device; Sync, Async, Discard, Total not added.
        Expected {
            file: "v1-blkio.json",
            cpu_percent: Some(0.0),
            memory_bytes: 2_228_224,
            memory_limit_bytes: 25_276_059_648,
            block: (1_052_672, 67_108_864),
            net: (Some(586), Some(0)),
            pids: 1,
        },
        // cgroup v2: `inactive_file`; 2 s of CPU in 1 s on 8 CPUs; two interfaces.
        Expected {
            file: "v2-training.json",
            cpu_percent: Some(200.0),
            memory_bytes: 942_141_440,
            memory_limit_bytes: 16 * 1024 * MIB,
            block: (11_386_880, 409_600),
            net: (Some(49_214), Some(12_100)),
            pids: 7,
        },
        // A stream's first frame: no previous reading, so no CPU %, never a made-up 0.
        Expected {
            file: "v2-cache-heavy-first-frame.json",
            cpu_percent: None,
            memory_bytes: 100 * MIB,
            memory_limit_bytes: 8 * 1024 * MIB,
            block: (0, 0),
            // `networks: {}`: no counters, so no figure, never 0 B.
            net: (None, None),
            pids: 3,
        },
        Expected {
            file: "v1-busy-one-shot.json",
            cpu_percent: None,
            memory_bytes: 544_768,
            memory_limit_bytes: 256 * MIB,
            block: (0, 0),
            net: (Some(586), Some(0)),
            pids: 1,
        },
    ];
    for case in cases {
        let sample = container_sample_from_api_json(&read_fixture(case.file), "x").unwrap();
        let usage = container_usage(&sample, None);
        match (usage.cpu_percent, case.cpu_percent) {
            (Some(actual), Some(expected)) => assert!(
                (actual - expected).abs() < 1e-9,
                "{}: CPU {actual} ≠ {expected}",
                case.file
            ),
            (actual, expected) => assert_eq!(actual, expected, "{}: CPU", case.file),
        }
        assert_eq!(usage.memory_bytes, Some(case.memory_bytes), "{}", case.file);
        assert_eq!(
            usage.memory_limit_bytes,
            Some(case.memory_limit_bytes),
            "{}",
            case.file
        );
        assert_eq!(
            (usage.block_read_bytes, usage.block_write_bytes),
            case.block,
            "{}",
            case.file
        );
        assert_eq!(
            (usage.net_rx_bytes, usage.net_tx_bytes),
            case.net,
            "{}",
            case.file
        );
        assert_eq!(usage.pids, Some(case.pids), "{}", case.file);
    }
}

#[test]
fn a_one_shot_frame_and_an_own_earlier_reading_give_cpu_percent() {
    // The one-shot frame came a moment after the two-sample one, from the same busy loop:
    // envctl keeps the earlier reading itself instead of waiting for the daemon's.
    let earlier = container_sample_from_api_json(&read_fixture("v1-busy.json"), "x").unwrap();
    let later =
        container_sample_from_api_json(&read_fixture("v1-busy-one-shot.json"), "x").unwrap();
    assert!(container_usage(&later, None).cpu_percent.is_none());
    let cpu = container_usage(&later, Some(&earlier.cpu))
        .cpu_percent
        .unwrap();
    assert!(
        (50.0..=110.0).contains(&cpu),
        "a busy loop on one core: {cpu}"
    );
}

#[test]
fn recorded_cgroup_texts_name_their_container() {
    use envctl_host::cgroup::{container_id_candidates, pick_container};
    const ID: &str = "e5fb59820be1185f00d4a5b52c24aeed78c44c1ad9f5a41244c1b8d02fdcf4be";
    const OUTER: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let cases: [(&str, &[&str]); 8] = [
        ("v1-cgroupfs.txt", &[ID]),
        ("v1-systemd.txt", &[ID]),
        ("v2-cgroupfs.txt", &[ID]),
        ("v2-systemd.txt", &[ID]),
        ("v2-rootless.txt", &[ID]),
        ("v2-docker-in-docker.txt", &[OUTER, ID]),
        ("v1-host-process.txt", &[]),
        ("v2-host-process.txt", &[]),
    ];
    for (file, expected) in cases {
        let text = read_fixture(&format!("cgroup/{file}"));
        let candidates = container_id_candidates(&text);
        assert_eq!(candidates, expected, "{file}");
        let picked = pick_container(&candidates, |id| id == ID);
        assert_eq!(picked.as_deref(), expected.last().map(|_| ID), "{file}");
    }
}
