//! `stats report` and `stats --record` files: CSV and JSON-lines recordings drawn, output never
//! replaced unasked nor a device, a cut last line skipped and bad inputs named, extreme numbers
//! ending quickly, a JSON file it did not write refused, and the help naming the views.

use super::*;

fn recording_from_fixture(folder: &Path, name: &str, samples: usize) -> PathBuf {
    let snapshot: Snapshot = serde_json::from_str(&read_fixture("snapshot-two-gpus.json")).unwrap();
    let path = folder.join(name);
    let mut recorder = envctl::ops::stats::recording::Recorder::open(&path).unwrap();
    for step in 0..samples {
        let mut moment = snapshot.clone();
        moment.time += step as f64;
        moment.containers[0].cpu_percent = Some(100.0 + step as f64 * 10.0);
        moment.gpus[1].temperature_c = Some(80.0 + step as f64);
        recorder.append(&moment).unwrap();
    }
    path
}

#[test]
fn report_draws_csv_and_json_lines_recordings() {
    let folder = TempDir::new().unwrap();
    for recording in [
        recording_from_fixture(folder.path(), "run.csv", 6),
        recording_from_fixture(folder.path(), "run.jsonl", 6),
    ] {
        let extension = recording
            .extension()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let svg = folder.path().join(format!("out-{extension}.svg"));
        let result = envctl()
            .args(["stats", "report"])
            .arg(&recording)
            .arg("-o")
            .arg(&svg)
            .run();
        assert_eq!(result.code, 0, "{}", result.stderr);
        assert!(result.stderr.contains("6 samples"), "{}", result.stderr);
        let drawing = std::fs::read_to_string(&svg).unwrap();
        assert!(drawing.starts_with("<svg"), "{}", &drawing[..100]);
        for title in [
            "Container CPU",
            "Container memory",
            "GPU utilisation",
            "GPU memory used",
            "GPU temperature",
        ] {
            assert!(drawing.contains(title), "{title}");
        }
        let html = folder.path().join(format!("out-{extension}.html"));
        let result = envctl()
            .args(["stats", "report"])
            .arg(&recording)
            .args(["--output"])
            .arg(&html)
            .run();
        assert_eq!(result.code, 0, "{}", result.stderr);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("<svg") && page.contains("<td>GPU 1</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td>125.0</td><td>150.0</td>"),
            "CPU mean and max:\n{page}"
        );
    }
}

#[test]
fn report_output_is_never_replaced_unasked_and_never_a_device() {
    let folder = TempDir::new().unwrap();
    let recording = recording_from_fixture(folder.path(), "run.csv", 3);
    let svg = folder.path().join("out.svg");
    std::fs::write(&svg, "mine").unwrap();
    let report = |output: &Path, force: bool| {
        let mut command = envctl()
            .args(["stats", "report"])
            .arg(&recording)
            .arg("-o")
            .arg(output);
        if force {
            command = command.arg("--force");
        }
        command.run()
    };
    let refused = report(&svg, false);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "mine");
    let replaced = report(&svg, true);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // What is not a regular file is never replaced, --force or not: a symlink (to a file
    // that must survive) named like a drawing.
    let kept = folder.path().join("kept.txt");
    std::fs::write(&kept, "keep").unwrap();
    let link = folder.path().join("link.svg");
    std::os::unix::fs::symlink(&kept, &link).unwrap();
    let linked = report(&link, true);
    assert_eq!(linked.code, 1, "{}", linked.stderr);
    assert!(
        linked.stderr.contains("not a regular file"),
        "{}",
        linked.stderr
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "keep");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // `-o -` is stdout.
    let stdout = report(Path::new("-"), false);
    assert_eq!(stdout.code, 0, "{}", stdout.stderr);
    assert!(stdout.stdout.starts_with("<svg"), "{}", stdout.stdout);
}

#[test]
fn report_skips_a_cut_last_line_and_names_bad_inputs() {
    let folder = TempDir::new().unwrap();
    let recording = recording_from_fixture(folder.path(), "cut.jsonl", 3);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&recording)
        .unwrap();
    file.write_all(b"{\"schema_version\":1,\"time\":17")
        .unwrap();
    let svg = folder.path().join("out.svg");
    let result = envctl()
        .args(["stats", "report"])
        .arg(&recording)
        .arg("-o")
        .arg(&svg)
        .run();
    assert_eq!(result.code, 0, "{}", result.stderr);
    assert!(
        result.stderr.contains("cut.jsonl:4: skipped"),
        "{}",
        result.stderr
    );

    let missing = envctl()
        .args(["stats", "report", "/nonexistent/run.csv", "-o", "x.svg"])
        .run();
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/nonexistent/run.csv"),
        "{}",
        missing.stderr
    );
    let wrong = envctl()
        .args(["stats", "report"])
        .arg(&recording)
        .args(["-o", "x.png"])
        .run();
    assert_eq!(wrong.code, 2);
    assert!(
        wrong.stderr.contains("neither .svg nor .html"),
        "{}",
        wrong.stderr
    );
    let foreign = folder.path().join("foreign.csv");
    std::fs::write(&foreign, "a,b\n1,2\n").unwrap();
    let refused = envctl()
        .args(["stats", "report"])
        .arg(&foreign)
        .args(["-o", "x.svg"])
        .run();
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("not an envctl CSV recording"),
        "{}",
        refused.stderr
    );
}

/// `stats report` under a 10 s limit: extreme numbers once sent the chart's axis into
/// an endless loop. A run killed at the limit reads as code -1.
fn report_within_ten_seconds(recording: &Path, output: &Path) -> Run {
    let started = Instant::now();
    let command = envctl()
        .args(["stats", "report"])
        .arg(recording)
        .arg("-o")
        .arg(output)
        .command();
    let result = Run::of(
        Command::from_std(command)
            .timeout(Duration::from_secs(10))
            .output()
            .unwrap(),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10) && result.code != -1,
        "`stats report {}` did not end within 10 s:\n{}",
        recording.display(),
        result.stderr
    );
    result
}

#[test]
fn report_on_infinite_or_extreme_numbers_ends_quickly() {
    let folder = TempDir::new().unwrap();
    let svg = folder.path().join("out.svg");

    // CSV: `inf` and `NaN` parse as floats; their lines are skipped and named.
    let csv = recording_from_fixture(folder.path(), "extreme.csv", 3);
    let text = std::fs::read_to_string(&csv).unwrap();
    let container = text.lines().nth(1).unwrap().to_string();
    let gpu = text.lines().last().unwrap().to_string();
    let with_cell = |line: &str, column: usize, value: &str| {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        cells[0] = "1715677999".into();
        cells[column] = value.into();
        cells.join(",")
    };
    let column = |name: &str| {
        envctl::monitor::record::CSV_COLUMNS
            .iter()
            .position(|column| *column == name)
            .unwrap()
    };
    let extra = [
        with_cell(&container, column("cpu_percent"), "inf"),
        with_cell(&gpu, column("temperature_c"), "NaN"),
        with_cell(&gpu, column("time"), "-inf"),
    ];
    std::fs::write(&csv, format!("{text}{}\n", extra.join("\n"))).unwrap();
    let lines = text.lines().count();
    let result = report_within_ten_seconds(&csv, &svg);
    assert_eq!(result.code, 0, "{}", result.stderr);
    for (offset, why) in [
        (1, "cpu_percent is inf, not a finite number"),
        (2, "GPU 1: temperature_c is NaN"),
        (3, "time is -inf"),
    ] {
        let warning = format!("extreme.csv:{}: skipped: ", lines + offset);
        assert!(
            result
                .stderr
                .lines()
                .any(|line| line.contains(&warning) && line.contains(why)),
            "{warning}{why} in\n{}",
            result.stderr
        );
    }
    assert!(result.stderr.contains("3 samples"), "{}", result.stderr);

    // JSON lines: times or values whose span overflows a float are a clear error (2).
    let snapshot: Snapshot = serde_json::from_str(&read_fixture("snapshot-two-gpus.json")).unwrap();
    let far_apart = |name: &str, change: &dyn Fn(&mut Snapshot, f64)| {
        let path = folder.path().join(name);
        let mut text = String::new();
        for value in [-1.7e308, 1.7e308] {
            let mut moment = snapshot.clone();
            change(&mut moment, value);
            text.push_str(&envctl::monitor::record::json_line(&moment));
        }
        std::fs::write(&path, text).unwrap();
        path
    };
    let times = far_apart("times.jsonl", &|moment, value| moment.time = value);
    let cpu = far_apart("cpu.jsonl", &|moment, value| {
        moment.containers[0].cpu_percent = Some(value);
    });
    for (recording, message) in [
        (
            &times,
            "times run from -1.7e308 to 1.7e308 s, too far apart to draw",
        ),
        (&cpu, "Container CPU runs from -1.7e308 to 1.7e308"),
    ] {
        for output in ["refused.svg", "refused.html"] {
            let output = folder.path().join(output);
            let result = report_within_ten_seconds(recording, &output);
            assert_eq!(result.code, 2, "{}", result.stderr);
            assert!(
                result.stderr.contains("cannot draw the report") && result.stderr.contains(message),
                "{message} in\n{}",
                result.stderr
            );
            assert!(!output.exists(), "nothing written on an error");
        }
    }
}

#[test]
fn record_refuses_a_json_file_it_did_not_write() {
    let folder = TempDir::new().unwrap();
    let package = folder.path().join("package.json");
    let content = "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\"\n}\n";
    std::fs::write(&package, content).unwrap();
    // Refused before the daemon is asked anything: no daemon is needed here.
    let result = envctl()
        .args(["stats", "--once", "--record"])
        .arg(&package)
        .env("DOCKER_HOST", "unix:///nonexistent/envctl-test/docker.sock")
        .run();
    assert_eq!(result.code, 2, "{}", result.stderr);
    assert!(
        result
            .stderr
            .contains("is not an envctl JSON-lines recording: its first line is `{`"),
        "{}",
        result.stderr
    );
    assert!(result.stderr.contains("caused by:"), "{}", result.stderr);
    assert!(
        result.stderr.contains("record to a new file"),
        "{}",
        result.stderr
    );
    assert_eq!(std::fs::read(&package).unwrap(), content.as_bytes());
}

#[test]
fn help_shows_the_views_and_the_report() {
    let help = envctl().args(["stats", "--help"]).run();
    assert_eq!(help.code, 0);
    for text in [
        "report",
        "--once",
        "--interval",
        "--record",
        "--serve",
        "--all",
        "127.0.0.1:9400",
    ] {
        assert!(help.stdout.contains(text), "{text} in\n{}", help.stdout);
    }
    let usage = envctl().args(["stats", "--interval", "5ms"]).run();
    assert_eq!(usage.code, 2);
    assert!(
        usage.stderr.contains("shorter than 100 ms"),
        "{}",
        usage.stderr
    );
    let extension = envctl()
        .args(["stats", "--once", "--record", "/tmp/envctl-stats-test.txt"])
        .run();
    assert_eq!(extension.code, 2, "{}", extension.stderr);
    assert!(extension.stderr.contains(".jsonl"), "{}", extension.stderr);
}
