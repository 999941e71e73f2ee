//! Real containers: busy and idle ones give plausible numbers, streaming gives JSON lines from
//! both sources, an unknown target is named, fifty containers at once, and a recording appends and
//! survives a kill.

use super::*;

/// A busy loop on one core and an idle container with a 64 MiB limit.
fn busy_and_idle(fleet: &mut Fleet) -> (String, String) {
    let busy = fleet.start(&["--cpus", "1"], &["sh", "-c", "while :; do :; done"]);
    let idle = fleet.start(&["-m", "64m"], &["sleep", "600"]);
    (busy, idle)
}

/// The CPU time a host process has used, in clock ticks (10 ms): `utime` and `stime` of
/// `/proc/PID/stat`; 0 when it cannot be read.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's name, which ends at the last ')'; utime and stime
    // are the 14th and 15th fields of the line, the 12th and 13th after the name.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|ticks| ticks.parse::<u64>().ok())
        .sum()
}

fn check_plausible(document: &Value, busy: &str, idle: &str, profile: &str) {
    let busy_row = row(document, busy);
    let idle_row = row(document, idle);
    let cpu = busy_row["cpu_percent"].as_f64().unwrap();
    let idle_cpu = idle_row["cpu_percent"].as_f64().unwrap();
    // A busy loop on a machine shared with compilers may get little of a core, but never
    // none, and never more than its 1-CPU limit (plus the 10 ms tick's slack); `sleep`
    // uses nothing.
    assert!(idle_cpu < 1.0, "idle CPU {idle_cpu}: {idle_row:#}");
    assert!(
        (idle_cpu + 1.0..=115.0).contains(&cpu),
        "busy CPU {cpu}: {busy_row:#}"
    );
    assert_eq!(idle_row["memory_limit_bytes"], 64 * MIB);
    let memory = idle_row["memory_bytes"].as_u64().unwrap();
    assert!(memory > 0 && memory < 64 * MIB, "idle memory {memory}");
    for row in [busy_row, idle_row] {
        assert_eq!(row["profile"], profile);
        assert!(row["pids"].as_u64().unwrap() >= 1, "{row:#}");
        assert!(
            row["net_rx_bytes"].is_u64() && row["block_write_bytes"].is_u64(),
            "{row:#}"
        );
        assert_eq!(row["id"].as_str().unwrap().len(), 64);
        // No NVML here: unknown, not zero.
        assert!(row["gpu_memory_bytes"].is_null(), "{row:#}");
    }
    assert_eq!(busy_row["cpu_limit_cores"], 1.0);
    assert!(
        document["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|failure| failure["subject"] == "nvml" && failure["kind"] == "library_not_found"),
        "{document:#}"
    );
}

#[test]
fn busy_and_idle_containers_give_plausible_numbers_once() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-once");
    let (busy, idle) = busy_and_idle(&mut fleet);
    // The busy loop has been given CPU (its own, by the host's account).
    let busy_pid = fleet.pid(&busy);
    crate::support::wait::wait_for(
        "the busy loop to have run 20 ms",
        Duration::from_secs(30),
        || cpu_ticks(busy_pid) >= 2,
    );
    // Both sources: the cgroup files (fast path) and the Engine API (a remote daemon's).
    for source in ["cgroup", "api"] {
        let started = Instant::now();
        let result = envctl()
            .args(["stats", "--once", "--json", &busy, &idle])
            .env("ENVCTL_STATS_SOURCE", source)
            .run();
        let elapsed = started.elapsed();
        assert_eq!(result.code, 0, "{source}: {}", result.stderr);
        check_plausible(&document(&result.stdout), &busy, &idle, &fleet.profile);
        if source == "cgroup" {
            assert!(
                elapsed < Duration::from_millis(1500),
                "--once took {elapsed:?}"
            );
        }
    }
    // The table: both rows, and the NVML absence only said with -v.
    let table = envctl().args(["stats", "--once", &busy, &idle]).run();
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(table.stdout.starts_with("CONTAINER"), "{}", table.stdout);
    assert!(
        table.stdout.contains(&busy) && table.stdout.contains(&idle),
        "{}",
        table.stdout
    );
    assert!(!table.stderr.contains("nvml"), "{}", table.stderr);
    let conflicting = envctl()
        .args(["stats", "--once", "--json", "--all", &busy])
        .run();
    assert_eq!(
        conflicting.code, 2,
        "TARGETs and --all conflict: {}",
        conflicting.stderr
    );
}

#[test]
fn streaming_gives_json_lines_from_both_sources() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-stream");
    let (busy, idle) = busy_and_idle(&mut fleet);
    for source in ["cgroup", "api"] {
        let result = envctl()
            .args([
                "stats",
                "--json",
                "--count",
                "6",
                "--interval",
                "0.7",
                &busy,
                &idle,
            ])
            .env("ENVCTL_STATS_SOURCE", source)
            .run();
        assert_eq!(result.code, 0, "{source}: {}", result.stderr);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            6,
            "{source}: one line per sample:\n{}",
            result.stdout
        );
        let documents: Vec<Value> = lines.iter().map(|line| document(line)).collect();
        let times: Vec<f64> = documents
            .iter()
            .map(|document| document["time"].as_f64().unwrap())
            .collect();
        assert!(times.windows(2).all(|pair| pair[1] > pair[0]), "{times:?}");
        // The daemon's stream has no CPU % in its first frame (and a daemon busy with the
        // other tests may send the second late): the latest line where both have one.
        let complete = documents
            .iter()
            .rev()
            .find(|document| {
                row(document, &busy)["cpu_percent"].is_f64()
                    && row(document, &idle)["cpu_percent"].is_f64()
            })
            .unwrap_or_else(|| panic!("{source}: no line with both CPU %:\n{}", result.stdout));
        check_plausible(complete, &busy, &idle, &fleet.profile);
    }
    // Not a terminal, no --json: a plain table per interval.
    let plain = envctl()
        .args(["stats", "--count", "2", "--interval", "0.3", &busy])
        .run();
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        plain.stdout.matches("CONTAINER").count(),
        2,
        "{}",
        plain.stdout
    );
}

#[test]
fn an_unknown_target_is_named() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let name = unique_name("envctl-stats-missing");
    let result = envctl().args(["stats", "--once", &name]).run();
    assert_eq!(result.code, 1, "{}", result.stderr);
    assert!(result.stderr.contains(&name), "{}", result.stderr);
}

#[test]
fn fifty_containers_once_and_streaming() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-fifty");
    fleet.start_many(50);
    let ours = |document: &Value| -> Vec<Value> {
        document["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["profile"] == fleet.profile.as_str())
            .cloned()
            .collect()
    };
    let started = Instant::now();
    let once = envctl().args(["stats", "--once", "--json"]).run();
    let elapsed = started.elapsed();
    assert_eq!(once.code, 0, "{}", once.stderr);
    let rows = ours(&document(&once.stdout));
    assert_eq!(rows.len(), 50, "envctl's containers include all 50");
    for row in &rows {
        assert!(
            row["cpu_percent"].is_f64() && row["memory_bytes"].as_u64().unwrap() > 0,
            "{row:#}"
        );
    }
    assert!(
        elapsed < Duration::from_secs(3),
        "--once with 50 containers took {elapsed:?}"
    );
    let stream = envctl()
        .args(["stats", "--json", "--count", "2", "--interval", "0.5"])
        .run();
    assert_eq!(stream.code, 0, "{}", stream.stderr);
    let last = document(stream.stdout.lines().last().unwrap());
    assert_eq!(ours(&last).len(), 50);
}

#[test]
fn record_appends_and_survives_a_kill() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-record");
    let name = fleet.start(&[], &["sleep", "600"]);
    let folder = TempDir::new().unwrap();
    let csv = folder.path().join("run.csv");
    for count in ["3", "2"] {
        let result = envctl()
            .args(["stats", "--count", count, "--interval", "0.2", "--record"])
            .arg(&csv)
            .arg(&name)
            .run();
        assert_eq!(result.code, 0, "{}", result.stderr);
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        text.matches("time,kind,id,name").count(),
        1,
        "one header:\n{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|line| line.contains(",container,"))
            .count(),
        5,
        "{text}"
    );

    // Killed mid-run: every line written before the kill is whole.
    let jsonl = folder.path().join("killed.jsonl");
    let mut child = envctl()
        .command()
        .args(["stats", "--interval", "0.2", "--record"])
        .arg(&jsonl)
        .arg(&name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has recorded three intervals, while it goes on writing.
    crate::support::wait::wait_for("three lines in the record", Duration::from_secs(30), || {
        std::fs::read_to_string(&jsonl).is_ok_and(|text| text.matches('\n').count() >= 3)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() >= 2,
        "{} lines before the kill at 0.2 s",
        lines.len()
    );
    let whole = if text.ends_with('\n') {
        lines.len()
    } else {
        lines.len() - 1
    };
    for line in &lines[..whole] {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["schema_version"], 1);
        assert_eq!(line["containers"][0]["name"], name.as_str());
    }
    let svg = folder.path().join("killed.svg");
    let report = envctl()
        .args(["stats", "report"])
        .arg(&jsonl)
        .arg("-o")
        .arg(&svg)
        .run();
    assert_eq!(report.code, 0, "{}", report.stderr);
}
