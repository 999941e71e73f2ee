//! Unit tests of placement: occupancy as the daemon resolves each holder's request,
//! the choice of the least used free GPUs, and placement over a daemon's GPU record.

use super::*;
use crate::facts::gpu::{Fact, FailureKind, GpuMemory, NvmlFailure};
use crate::facts::gpu_sample::GpuProcess;
use std::collections::BTreeMap;

fn gpu(index: u32, used_mib: u64, processes: usize) -> GpuDevice {
    GpuDevice {
        index,
        name: Fact::Value("NVIDIA H100 80GB HBM3".into()),
        uuid: Fact::Value(format!("GPU-{index}0000000-0000-0000-0000-000000000000")),
        pci_bus_id: Fact::Value(String::new()),
        compute_capability: Fact::Value("9.0".parse().unwrap()),
        memory: Fact::Value(GpuMemory {
            total_bytes: 80 << 30,
            used_bytes: used_mib << 20,
            reserved_bytes: 0,
            free_bytes: (80 << 30) - (used_mib << 20),
        }),
        mig_mode: Fact::Error(NvmlFailure::new(FailureKind::NotSupported, "no")),
        power_limit_watts: Fact::Value(700.0),
        processes: Fact::Value(
            (0..processes)
                .map(|pid| GpuProcess {
                    pid: 100 + u32::try_from(pid).unwrap(),
                    used_memory_bytes: Some(1 << 20),
                })
                .collect(),
        ),
        // Not the index: a node names the GPU by its minor number.
        health: Default::default(),
        minor_number: Fact::Value(index + 10),
    }
}

fn eight() -> Vec<GpuDevice> {
    (0..8).map(|index| gpu(index, 0, 0)).collect()
}

fn holder(name: &str, gpus: GpuAssignment) -> GpuHolder {
    GpuHolder {
        id: format!("{name}-id"),
        name: name.into(),
        state: "running".into(),
        profile: None,
        user: None,
        uid: None,
        identity: None,
        gpus,
    }
}

fn chosen(count: u32, gpus: &[GpuDevice], holders: &[GpuHolder]) -> Vec<u32> {
    let (rows, _) = occupancy(gpus, holders);
    choose(count, &rows, false)
        .unwrap()
        .gpus
        .iter()
        .map(|gpu| gpu.index)
        .collect()
}

#[test]
fn busy_gpus_come_last_are_said_and_idle_placement_refuses_them() {
    // GPUs 0–5 run a process no container holds; 6 has 20 GiB in use; 7 is idle.
    let mut gpus: Vec<GpuDevice> = (0..6).map(|index| gpu(index, 10, 1)).collect();
    gpus.push(gpu(6, 20 << 10, 0));
    gpus.push(gpu(7, 10, 0));
    let (rows, _) = occupancy(&gpus, &[]);
    assert!(
        rows[0]
            .busy
            .as_deref()
            .unwrap()
            .contains("PID 100 in no container")
    );
    assert!(
        rows[6]
            .busy
            .as_deref()
            .unwrap()
            .contains("20.0 GiB of its memory")
    );
    assert!(rows[7].busy.is_none() && rows.iter().all(|row| row.free));
    let one = choose(1, &rows, false).unwrap();
    assert_eq!(one.gpus[0].index, 7);
    assert!(one.skipped.is_empty(), "{:?}", one.skipped);
    let two = choose(2, &rows, false).unwrap();
    let picked: Vec<u32> = two.gpus.iter().map(|gpu| gpu.index).collect();
    assert_eq!(picked, [0, 7]);
    assert_eq!(two.skipped.len(), 1, "{:?}", two.skipped);
    assert!(two.skipped[0].starts_with("GPU 0 is busy but no idle GPU is left"));
    let refused = choose(2, &rows, true).unwrap_err();
    assert_eq!(refused.free, [7]);
    assert_eq!(refused.skipped.len(), 7);
    // A GPU a container holds is never "busy": its processes are the holder's.
    let holders = [holder("train", GpuAssignment::Devices(vec!["0".into()]))];
    let (rows, _) = occupancy(&gpus, &holders);
    assert!(!rows[0].free && rows[0].busy.is_none());
}

#[test]
fn an_idle_host_gives_the_first_gpus() {
    assert_eq!(chosen(2, &eight(), &[]), [0, 1]);
}

#[test]
fn counts_resolve_as_the_daemon_resolves_them() {
    // `--gpus 2` holds GPUs 0 and 1; `device=3` and a UUID hold those GPUs.
    let holders = [
        holder("count", GpuAssignment::Count(2)),
        holder("index", GpuAssignment::Devices(vec!["3".into()])),
        holder(
            "uuid",
            GpuAssignment::Devices(vec!["gpu-50000000-0000-0000-0000-000000000000".into()]),
        ),
    ];
    assert_eq!(chosen(3, &eight(), &holders), [2, 4, 6]);
    let (rows, unmapped) = occupancy(&eight(), &holders);
    assert!(unmapped.is_empty());
    assert_eq!(rows[5].holders[0].name, "uuid");
    assert!(!rows[0].free && !rows[1].free && rows[2].free);
}

#[test]
fn all_holds_every_gpu_and_there_is_no_room() {
    let holders = [holder("everything", GpuAssignment::All)];
    let (rows, _) = occupancy(&eight(), &holders);
    let refused = choose(1, &rows, false).unwrap_err();
    assert_eq!(refused.free, Vec::<u32>::new());
    assert_eq!(refused.held.len(), 8);
    assert_eq!(refused.held[0], "GPU 0: everything (running)");
    assert_eq!(refused.to_string(), "1 GPU asked for, 0 free");
    // A CDI `all` holds every GPU too.
    let cdi = [holder("cdi", GpuAssignment::Devices(vec!["all".into()]))];
    let (rows, _) = occupancy(&eight(), &cdi);
    assert!(rows.iter().all(|row| !row.free));
}

#[test]
fn the_least_used_free_gpus_win_and_ties_go_by_index() {
    let mut gpus = eight();
    gpus[0] = gpu(0, 40_000, 1); // a process outside any container
    gpus[1] = gpu(1, 0, 2);
    gpus[2] = gpu(2, 10, 0);
    assert_eq!(chosen(2, &gpus, &[]), [3, 4]);
    // GPUs 0 and 1 run processes no container holds: busy, so after every idle one
    // (issue 28), however little memory they use.
    assert_eq!(chosen(6, &gpus, &[]), [2, 3, 4, 5, 6, 7]);
    assert_eq!(chosen(7, &gpus, &[]), [1, 2, 3, 4, 5, 6, 7]);
    let (rows, _) = occupancy(&gpus, &[]);
    let choice = choose(2, &rows, false).unwrap();
    assert_eq!(
        choice.reason,
        "GPUs 3 and 4: no container holds them; the least used of 8 free (GPU memory in use, then processes, then index)"
    );
    assert_eq!(
        choice.gpus[0].uuid,
        "GPU-30000000-0000-0000-0000-000000000000"
    );
}

#[test]
fn a_gpu_nvml_cannot_read_is_never_picked_and_is_named() {
    let mut gpus = eight();
    gpus[0].memory = Fact::Error(NvmlFailure::new(FailureKind::Unknown, "Unknown Error"));
    gpus[1].uuid = Fact::Error(NvmlFailure::new(FailureKind::GpuLost, "GPU is lost"));
    let (rows, _) = occupancy(&gpus, &[]);
    let choice = choose(2, &rows, false).unwrap();
    assert_eq!(
        choice.gpus.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
        [2, 3]
    );
    assert_eq!(
        choice.skipped,
        [
            "GPU 0: NVML could not read its memory: Unknown Error",
            "GPU 1: NVML could not read its uuid: GPU is lost"
        ]
    );
    let refused = choose(7, &rows, false).unwrap_err();
    assert_eq!(refused.free.len(), 6);
    assert_eq!(refused.skipped.len(), 2);
}

#[test]
fn processes_name_their_container_where_it_is_known() {
    let mut gpus = eight();
    gpus[3] = gpu(3, 2048, 2);
    let owners = BTreeMap::from([(100, "alice-train".to_string())]);
    let (rows, _) = occupancy_with_owners(&gpus, &[], &owners);
    let processes = rows[3].processes.as_ref().unwrap();
    assert_eq!(processes[0].container.as_deref(), Some("alice-train"));
    assert_eq!(processes[1].container, None);
    // A process is busy-ness, not a hold: the GPU stays free of containers.
    assert!(rows[3].free);
}

#[test]
fn names_of_no_gpu_here_are_unmapped_not_guessed() {
    let holders = [holder(
        "mig",
        GpuAssignment::Devices(vec!["MIG-1111".into(), "9".into(), "2".into()]),
    )];
    let (rows, unmapped) = occupancy(&eight(), &holders);
    assert_eq!(unmapped, ["MIG-1111 (mig)", "9 (mig)"]);
    assert!(!rows[2].free);
    assert_eq!(rows.iter().filter(|row| !row.free).count(), 1);
}

/// A device node names its GPU by minor number (here index + 10), never by index; a
/// minor no GPU has, or one NVML could not read, is unmapped.
#[test]
fn device_nodes_hold_the_gpu_of_their_minor_number() {
    let mut gpus = eight();
    gpus[5].minor_number = Fact::Error(NvmlFailure::new(FailureKind::Other, "no"));
    let holders = [holder("nodes", GpuAssignment::Nodes(vec![3, 12, 15]))];
    let (rows, unmapped) = occupancy(&gpus, &holders);
    assert_eq!(unmapped, ["/dev/nvidia3 (nodes)", "/dev/nvidia15 (nodes)"]);
    let held: Vec<u32> = rows
        .iter()
        .filter(|row| !row.free)
        .map(|row| row.index)
        .collect();
    assert_eq!(held, [2]);
    assert_eq!(gpus_held(None, &holders), Ok(3));
}

#[test]
fn ps_shows_uuids_of_gpus_here_by_index() {
    let gpus = eight();
    assert_eq!(
        by_index(
            "GPU-20000000-0000-0000-0000-000000000000,GPU-50000000-0000-0000-0000-000000000000",
            &gpus
        ),
        "2,5"
    );
    assert_eq!(by_index("all", &gpus), "all");
    assert_eq!(by_index("GPU-elsewhere,3", &gpus), "GPU-elsewhere,3");
}

#[test]
fn a_pinned_container_shares_only_the_gpus_others_hold() {
    let pinned = indexes_of(
        &GpuAssignment::Devices(vec![
            "GPU-30000000-0000-0000-0000-000000000000".into(),
            "5".into(),
        ]),
        &eight(),
    );
    assert_eq!(pinned, [3, 5]);
    let others = [holder(
        "squatter",
        GpuAssignment::Devices(vec!["5".into(), "6".into()]),
    )];
    assert_eq!(
        shared_with(&eight(), &others, &pinned),
        ["GPU 5: squatter (running)"]
    );
    assert!(shared_with(&eight(), &[], &pinned).is_empty());
}

#[test]
fn gpus_held_are_counted_once_or_said_unknown() {
    let holders = [
        holder("two", GpuAssignment::Count(2)),
        holder(
            "overlap",
            GpuAssignment::Devices(vec!["1".into(), "5".into()]),
        ),
    ];
    assert_eq!(gpus_held(Some(&eight()), &holders), Ok(3));
    assert_eq!(gpus_held(None, &holders), Ok(4));
    let everything = [holder("all", GpuAssignment::All)];
    assert_eq!(gpus_held(Some(&eight()), &everything), Ok(8));
    assert!(
        gpus_held(None, &everything)
            .unwrap_err()
            .contains("`all` holds all GPUs")
    );
    assert!(gpus_held(None, &[holder("minus", GpuAssignment::Count(-1))]).is_err());
}

#[test]
fn lists_read_as_english() {
    assert_eq!(list(&["0".into()]), "0");
    assert_eq!(list(&["0".into(), "1".into()]), "0 and 1");
    assert_eq!(list(&["0".into(), "1".into(), "5".into()]), "0, 1 and 5");
}

#[test]
fn a_gpu_record_round_trips_and_places_by_its_holders_only() {
    let gpus: Vec<GpuDevice> = (0..4).map(|index| gpu(index, 0, 0)).collect();
    let record = GpuRecord::of(&gpus).unwrap();
    let written = record.written();
    assert_eq!(GpuRecord::parse(&written).unwrap(), record);
    // A holder of GPU 0 by UUID and one of the first two by count: 2 and 3 are free.
    let uuid = gpus[0].uuid.value().unwrap().clone();
    let holders = [
        holder("a", GpuAssignment::Devices(vec![uuid])),
        holder("b", GpuAssignment::Count(2)),
    ];
    let rows = record.occupancy(&holders);
    let picked = choose(2, &rows, false).unwrap();
    assert_eq!(
        picked.gpus.iter().map(|gpu| gpu.index).collect::<Vec<_>>(),
        [2, 3]
    );
    assert!(choose(3, &rows, false).is_err());
    // What is not the record's form is named, never read as no GPU.
    for bad in ["", "0=GPU-a,0=GPU-b", "x=GPU-a", "0=notauuid", "0"] {
        assert!(GpuRecord::parse(bad).is_err(), "{bad:?}");
    }
    // Forgeries of a record in the right form: one UUID under several indexes, an
    // index twice, a UUID that is a shell command, one of the wrong length.
    let uuid = "GPU-5d5b4f7a-2c1e-4b8e-9a57-0c3f1e2d4a01";
    let other = "GPU-5d5b4f7a-2c1e-4b8e-9a57-0c3f1e2d4a02";
    for (forged, why) in [
        (format!("0={uuid},1={uuid}"), "the same UUID"),
        (
            format!("0={uuid},1=GPU-{}", uuid["GPU-".len()..].to_uppercase()),
            "the same UUID",
        ),
        (format!("0={uuid},0={other}"), "index 0 twice"),
        ("0=GPU-$(id)".to_string(), "not a GPU UUID"),
        (format!("0={uuid}0"), "not a GPU UUID"),
        (format!("0={uuid}\nerror: x"), "not a GPU UUID"),
    ] {
        let error = GpuRecord::parse(&forged).unwrap_err();
        assert!(error.contains(why), "{forged:?}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
    assert!(GpuRecord::tied_to(Some("vm"), "vm").is_ok());
    assert!(
        GpuRecord::tied_to(Some("other"), "vm")
            .unwrap_err()
            .contains("\"other\"")
    );
    assert!(GpuRecord::tied_to(None, "vm").is_err());
    // A GPU whose UUID NVML could not read leaves no record at all.
    let mut unread = gpus.clone();
    unread[1].uuid = Fact::Error(NvmlFailure::new(FailureKind::Unknown, "no"));
    assert_eq!(GpuRecord::of(&unread), None);
}

/// Issue 43: a GPU kept out for its health is never chosen, even when it is the least
/// used, and the reason (with how to clear it) is in `skipped` and in the refusal.
#[test]
fn a_gpu_kept_out_for_its_health_is_never_chosen_and_said() {
    let row = |index: u32, kept_out: Option<&str>| GpuOccupancy {
        index,
        uuid: Some(format!("GPU-{index}")),
        holders: Vec::new(),
        processes: Some(Vec::new()),
        memory_used_bytes: Some(if index == 2 { 0 } else { 1 << 20 }),
        memory_total_bytes: Some(80 << 30),
        free: true,
        busy: None,
        unreadable: Vec::new(),
        kept_out: kept_out.map(str::to_string),
    };
    let rows = vec![
        row(0, None),
        row(1, None),
        row(2, Some("GPU 2 is kept out (fatal): Xid 79")),
    ];
    let choice = choose(2, &rows, false).unwrap();
    let chosen: Vec<u32> = choice.gpus.iter().map(|gpu| gpu.index).collect();
    assert_eq!(chosen, vec![0, 1]);
    assert!(
        choice.skipped.iter().any(|said| said.contains("Xid 79")),
        "{choice:?}"
    );
    let refused = choose(3, &rows, false).unwrap_err();
    assert_eq!(refused.free, vec![0, 1]);
    assert!(
        refused
            .skipped
            .iter()
            .any(|said| said.contains("GPU 2 is kept out"))
    );
}
