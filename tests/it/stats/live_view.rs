//! The live view and what it shows: it quits on q and gives the terminal back, draws a minute
//! of sparklines within the terminal, names a container the OOM killer ended (in stats, its
//! recording and ps), and shows missing network counters as unknown.

use super::*;

#[test]
fn the_live_view_quits_on_q_and_gives_the_terminal_back() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-live");
    let name = fleet.start(&[], &["sleep", "600"]);
    let folder = TempDir::new().unwrap();
    let recording = Recording::new(
        folder.path(),
        &format!(
            "NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent {envctl} stats --interval 0.3 {name}",
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };
    let screen = tmux.wait_for_sample(2);
    assert!(
        screen.contains("envctl stats ·") && screen.contains("q quits"),
        "{screen}"
    );
    assert!(
        screen.contains(&name) && screen.contains("CPU %"),
        "{screen}"
    );
    assert!(
        !screen.contains(MAIN_SCREEN_MARKER),
        "the alternate screen hides the shell:\n{screen}"
    );
    tmux.keys("q");
    let screen = tmux.wait_for("exit=0");
    assert!(
        screen.contains(MAIN_SCREEN_MARKER),
        "the main screen is back:\n{screen}"
    );
    let (before, after) = recording.settings();
    assert_eq!(before, after, "terminal settings restored");
    // Ctrl-C, which raw mode turns into a key, quits too.
    let Some(again) = Tmux::start(&format!(
        "sh -c 'NO_COLOR=1 ENVCTL_NVML_LIBRARY=/nonexistent {} stats --interval 0.3 {name}; echo exit=$?; sleep 30'",
        env!("CARGO_BIN_EXE_envctl")
    )) else {
        return;
    };
    again.wait_for_sample(1);
    again.keys("C-c");
    again.wait_for("exit=0");
}

#[test]
fn a_container_the_oom_killer_ends_is_named_by_stats_its_recording_and_ps() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-oom");
    // 32 MiB and no swap beyond it; a string doubled every 0.3 s passes that in seconds,
    // after some samples of its memory growing.
    let name = fleet.start(
        &["--memory", "32m", "--memory-swap", "32m"],
        &[
            "sh",
            "-c",
            "x=aaaaaaaaaaaaaaaa; while :; do x=\"$x$x\"; sleep 0.3; done",
        ],
    );
    let folder = TempDir::new().unwrap();
    let recording = folder.path().join("run.jsonl");
    // A second recorder writes CSV alongside; its file is read once the end is in it.
    let csv = folder.path().join("run.csv");
    let csv_child = envctl()
        .command()
        .args(["stats", "--interval", "0.3", "--record"])
        .arg(&csv)
        .arg(&name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    json_stdout_and_its_recording_name_the_oom_end(&name, &recording);
    the_csv_recording_marks_the_end(&csv, csv_child, &name);
    stats_report_marks_it_on_the_curve_and_the_page(folder.path(), &csv, &recording, &name);
    ps_and_a_named_stats_say_it_was_oom_killed(&name);
}

/// `stats --json --record` names the end on stdout: OOM killed, exit 137, a memory
/// diagnosis at its limit, after samples of its memory growing; the recording keeps the
/// same line.
fn json_stdout_and_its_recording_name_the_oom_end(name: &str, recording: &Path) {
    let mut child = envctl()
        .command()
        .args(["stats", "--interval", "0.3", "--json", "--record"])
        .arg(recording)
        .arg(name)
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut grew = Vec::new();
    let named = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = receiver
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no OOM named within 60 s; memory seen: {grew:?}"));
        let snapshot: Value = serde_json::from_str(&line).unwrap();
        if let Some(row) = snapshot["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
        {
            grew.push(row["memory_bytes"].as_u64());
        }
        let ended = snapshot["ended"].as_array().cloned().unwrap_or_default();
        if ended.iter().any(|end| end["name"] == name) {
            break snapshot;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let end = named["ended"]
        .as_array()
        .unwrap()
        .iter()
        .find(|end| end["name"] == name)
        .unwrap()
        .clone();
    assert_eq!(end["oom_killed"], true, "{end}");
    assert_eq!(end["exit_code"], 137, "{end}");
    let diagnosis = named["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|diagnosis| diagnosis["id"] == "host-memory-growing" && diagnosis["subject"] == name)
        .unwrap_or_else(|| panic!("no memory diagnosis: {named}"));
    let message = diagnosis["message"].as_str().unwrap();
    assert!(
        message.starts_with("killed by the OOM killer (exit 137) at its 32.0 MiB limit"),
        "{message}"
    );
    assert_eq!(diagnosis["evidence"]["oom_killed"], 1.0);
    assert_eq!(
        diagnosis["evidence"]["memory_limit_bytes"],
        (32_u64 << 20) as f64
    );
    assert!(
        grew.iter().flatten().count() >= 2,
        "the curve up to it has samples: {grew:?}"
    );
    // The recording keeps it, the same line as stdout's.
    let recorded = std::fs::read_to_string(recording).unwrap();
    assert!(
        recorded
            .lines()
            .any(|line| line.contains("\"oom_killed\":true")
                && line.contains("killed by the OOM killer (exit 137)")),
        "{recorded}"
    );
}

/// The CSV recording marks it: an `ended` row at the sample it was seen stopped, after the
/// rows of its memory growing.
fn the_csv_recording_marks_the_end(csv: &Path, mut csv_child: std::process::Child, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let csv_text = loop {
        let text = match std::fs::read_to_string(csv) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => panic!("{}: {error}", csv.display()),
        };
        let marked = text
            .lines()
            .any(|line| line.contains(",ended,") && line.contains(name));
        if marked || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = csv_child.kill();
    let _ = csv_child.wait();
    assert_eq!(
        csv_text.lines().next(),
        Some(envctl::monitor::record::CSV_COLUMNS.join(",").as_str())
    );
    let ended_rows: Vec<&str> = csv_text
        .lines()
        .filter(|line| line.contains(",ended,") && line.contains(name))
        .collect();
    assert_eq!(ended_rows.len(), 1, "one end, named once:\n{csv_text}");
    assert!(
        ended_rows[0].ends_with(",exited,137,true"),
        "status, exit code, the OOM killer: {}",
        ended_rows[0]
    );
    let curve = csv_text
        .lines()
        .take_while(|line| !line.contains(",ended,"))
        .filter(|line| line.contains(",container,") && line.contains(name))
        .count();
    assert!(curve >= 2, "the curve up to it:\n{csv_text}");
}

/// `stats report` of either recording marks it on the memory curve; the page names it in
/// the summary and (made from the CSV, which keeps no diagnoses) the diagnoses.
fn stats_report_marks_it_on_the_curve_and_the_page(
    folder: &Path,
    csv: &Path,
    recording: &Path,
    name: &str,
) {
    for (source, output) in [(csv, "csv.svg"), (recording, "jsonl.svg")] {
        let svg = folder.join(output);
        let drawn = envctl()
            .args(["stats", "report"])
            .arg(source)
            .arg("-o")
            .arg(&svg)
            .command()
            .output()
            .unwrap();
        assert_eq!(drawn.status.code(), Some(0), "{drawn:?}");
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert!(
            svg.contains("fill=\"#B22222\">\nOOM killed\n</text>"),
            "{output}: the mark's words:\n{svg}"
        );
        assert!(
            svg.contains("\nOOM killed at ") && svg.contains(&format!("s: {}", &name[..10])),
            "{output}: the legend names it:\n{svg}"
        );
    }
    let page = folder.join("csv.html");
    let drawn = envctl()
        .args(["stats", "report"])
        .arg(csv)
        .arg("-o")
        .arg(&page)
        .command()
        .output()
        .unwrap();
    assert_eq!(drawn.status.code(), Some(0), "{drawn:?}");
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("<td>killed by the OOM killer (exit 137) at "),
        "the summary's ended column:\n{page}"
    );
    assert!(
        page.contains(&format!(
            "<li><b>host-memory-growing</b> {name}: killed by the OOM killer (exit 137) at its 32.0 MiB limit"
        )),
        "{page}"
    );
}

/// `ps` says so, in its JSON and its table, and a named target found stopped says why.
fn ps_and_a_named_stats_say_it_was_oom_killed(name: &str) {
    let output = envctl()
        .args(["ps", "--all", "--json"])
        .command()
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = listing["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{listing}"))
        .clone();
    assert_eq!(row["oom_killed"], true, "{row}");
    let table = envctl().args(["ps", "--all"]).command().output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.lines().any(|line| line.contains(name)
            && line.contains("Exited (137)")
            && line.contains("(OOM killed)")),
        "{table}"
    );
    // A named target found stopped says why.
    let once = envctl()
        .args(["stats", "--once", "--json", name])
        .env("ENVCTL_NVML_LIBRARY", "/nonexistent")
        .command()
        .output()
        .unwrap();
    let once: Value = serde_json::from_slice(&once.stdout).unwrap();
    assert!(
        once["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|failure| failure["message"]
                .as_str()
                .unwrap()
                .ends_with("is exited: killed by the OOM killer (exit 137)")),
        "{once}"
    );
}

#[test]
fn the_live_view_draws_a_minute_of_sparklines_within_the_terminal() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let mut fleet = Fleet::new("stats-spark");
    let name = fleet.start(&["--cpus", "1"], &["sh", "-c", "while :; do :; done"]);
    let folder = TempDir::new().unwrap();
    let recording = Recording::new(
        folder.path(),
        &format!(
            "NO_COLOR=1 ENVCTL_NVML_LIBRARY={stub} ENVCTL_NVML_STUB_FIXTURE={fixture} {envctl} stats --interval 0.3 {name}",
            stub = shell_quote(&stub_library().to_string_lossy()),
            fixture = shell_quote(
                &crate::support::nvml::fixture("healthy-8x-h100.conf").to_string_lossy()
            ),
            envctl = shell_quote(env!("CARGO_BIN_EXE_envctl")),
        ),
    );
    let Some(tmux) = Tmux::start(&recording.command()) else {
        return;
    };
    let screen = tmux.wait_for_sample(8);
    let lines: Vec<&str> = screen.lines().collect();
    let header = lines
        .iter()
        .find(|line| line.starts_with("CONTAINER"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        header.contains("CPU 1m") && header.contains("MEM 1m"),
        "{screen}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("GPU") && line.contains("UTIL 1m")),
        "{screen}"
    );
    // The busy container's CPU curve: several samples of block characters.
    let row = lines
        .iter()
        .find(|line| line.starts_with(name.as_str()))
        .unwrap_or_else(|| panic!("{screen}"));
    let blocks = row.chars().filter(|c| ('▁'..='█').contains(c)).count();
    assert!(blocks >= 5, "{row}");
    for line in &lines {
        assert!(
            console::measure_text_width(line) <= usize::from(crate::support::tmux::COLUMNS),
            "wider than the terminal: `{line}`"
        );
    }
    tmux.keys("q");
    tmux.wait_for("exit=0");
}

/// A container without a network has no network counters: its NET I/O is unknown in the
/// JSON (null) and the table (`-`), through the cgroup files and through the Engine API
/// alike, never a measured-looking 0 B.
#[test]
fn a_container_without_network_counters_shows_them_unknown() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let container = crate::support::docker::ContainerGuard::unique("envctl-stats-nonet");
    crate::support::docker::docker_stdout([
        "run",
        "-d",
        "--name",
        container.name(),
        "--label",
        crate::support::docker::TEST_LABEL,
        "--network",
        "none",
        &test_image(),
        "sleep",
        "600",
    ]);
    for source in ["cgroup", "api"] {
        let run = crate::support::cli::Run::of(
            crate::support::cli::envctl_in(folder.path())
                .env("ENVCTL_STATS_SOURCE", source)
                .args(["stats", "--once", "--json", container.name()])
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap(),
        );
        assert_eq!(run.code, 0, "{source}: {run}");
        let document = run.json();
        let row = row(&document, container.name());
        assert!(
            row["net_rx_bytes"].is_null() && row["net_tx_bytes"].is_null(),
            "{source}: {row:#}"
        );
        // The rest is still read.
        assert!(row["memory_bytes"].is_u64(), "{source}: {row:#}");
        let table = crate::support::cli::Run::of(
            crate::support::cli::envctl_in(folder.path())
                .env("ENVCTL_STATS_SOURCE", source)
                .args(["stats", "--once", container.name()])
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap(),
        );
        assert_eq!(table.code, 0, "{source}: {table}");
        let header = table.stdout.lines().next().unwrap();
        let line = table
            .stdout
            .lines()
            .find(|line| line.starts_with(container.name()))
            .unwrap_or_else(|| panic!("{table}"));
        let column = header.find("NET I/O").unwrap_or_else(|| panic!("{table}"));
        // Right-aligned under its header: the cell ends where `NET I/O` ends.
        let cell = &line[..column + "NET I/O".len()];
        assert!(cell.ends_with('-'), "{source}: {table}");
    }
}
