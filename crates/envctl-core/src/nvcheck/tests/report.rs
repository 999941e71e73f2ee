//! Unit tests of nvidia-check's The run itself and its report: timeouts, a missing report, the
//! output parser among stray lines, the readings of raw text and the embedded scripts.

use super::*;

#[test]
fn timeouts_are_named_with_the_option_to_raise_them() {
    let mut report = RawReport {
        run: RunFacts {
            timeout_seconds: 2,
            timed_out: true,
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let findings = judge(&report, &expectations());
    let timeout = one(&findings, TIMEOUT);
    assert_eq!(timeout.status, Status::Fail);
    assert!(timeout.message.contains("within its timeout of 2 s"));
    assert!(timeout.hint.as_deref().unwrap().contains("--timeout 60"));
    assert!(with_id(&findings, REPORT).is_empty());

    report.run.timed_out = false;
    report.shell = Some(shell(H100_SMI));
    report.python_run = Some(PythonRun {
        path: Some("/usr/bin/python3".into()),
        budget_seconds: Some(1),
        exit_status: Some(137),
        timed_out: true,
        stderr: Some(String::new()),
    });
    let findings = judge(&report, &expectations());
    let timeout = one(&findings, TIMEOUT);
    assert!(
        timeout
            .message
            .contains("within its 1 s of the 2 s timeout")
    );
    // The shell's facts are still judged, and the Python part's absence is not blamed twice.
    assert_eq!(status_of(&findings, DEVICES), Status::Pass);
    assert!(with_id(&findings, PYTHON).is_empty());
}

#[test]
fn no_report_at_all() {
    let report = RawReport {
        run: RunFacts {
            timeout_seconds: 120,
            exit_code: Some(1),
            stderr_tail: "sh: syntax error\n".into(),
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let finding = one(&judge(&report, &expectations()), REPORT).clone();
    assert_eq!(finding.status, Status::Fail);
    assert!(finding.message.contains("(exit code 1): sh: syntax error"));

    let bare = RawReport {
        run: RunFacts {
            shell_missing: true,
            ..RunFacts::default()
        },
        ..RawReport::default()
    };
    let finding = one(&judge(&bare, &expectations()), REPORT).clone();
    assert!(finding.message.contains("neither `sh` nor `python3`"));
}

#[test]
fn the_output_parser_finds_every_part_among_stray_lines() {
    let shell_json = serde_json::to_string(&shell(H100_SMI)).unwrap();
    let output = format!(
        "welcome to the image!\n{SHELL_MARKER}\n{shell_json}\n{PYTHON_RUN_MARKER}\n{{\"path\":\"/usr/bin/python3\",\"budget_seconds\":118,\"exit_status\":0,\"timed_out\":false,\"stderr\":\"\"}}\n{PYTHON_OUTPUT_MARKER}\nsitecustomize says hi\n{{not json\n\n{PYTHON_MARKER}\n{}\n\n{END_MARKER}\n",
        serde_json::to_string(&python(H100_PYTHON)).unwrap()
    );
    let parsed = parse_output(&output);
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    assert_eq!(parsed.shell.unwrap().devices.len(), 5);
    assert_eq!(parsed.python_run.unwrap().budget_seconds, Some(118));
    assert_eq!(parsed.python.unwrap().devices.len(), 2);

    // A recording printed by a stand-in: pretty JSON after a stray line, no marker.
    let recorded =
        format!("{PYTHON_OUTPUT_MARKER}\na stray line\n{RTX_5090_PYTHON}\n{END_MARKER}\n");
    let parsed = parse_output(&recorded);
    assert_eq!(
        parsed.python.unwrap().torch.unwrap().version.as_deref(),
        Some("2.6.0+cu124")
    );

    // Cut short (a timeout): the shell part alone, and garbage where JSON should be.
    let cut = format!("{SHELL_MARKER}\n{shell_json}\n{PYTHON_RUN_MARKER}\n{{\"path\": \n");
    let parsed = parse_output(&cut);
    assert!(parsed.shell.is_some());
    assert!(parsed.python_run.is_none());
    assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
    assert!(parse_output("").shell.is_none());
    assert_eq!(python_document("no json here\n"), Ok(None));
}

#[test]
fn text_readings() {
    let size = df_size(
        "Filesystem           1024-blocks    Used Available Capacity Mounted on\nshm                      65536         0     65536   0% /dev/shm\n",
    )
    .unwrap();
    assert_eq!(size.total_bytes, 64 << 20);
    assert_eq!(df_size("df: /dev/shm: No such file or directory"), None);
    assert_eq!(ulimit_value("unlimited"), Some(Limit::Unlimited));
    assert_eq!(ulimit_value("8192\n"), Some(Limit::Bytes(8 << 20)));
    assert_eq!(ulimit_value("sh: ulimit: bad"), None);
    assert_eq!(crate::units::binary_limit(64 << 20), "64 MiB");
    assert_eq!(crate::units::binary_limit(8 << 30), "8.0 GiB");
    assert_eq!(crate::units::index_ranges(&[3, 0, 1, 2, 5]), "0-3, 5");
    let gpus = smi_gpus(QUERY, "No devices were found\n");
    assert!(gpus.is_empty());
}

#[test]
fn the_embedded_scripts_are_the_files() {
    assert!(SHELL_SCRIPT.contains(SHELL_MARKER) && SHELL_SCRIPT.contains(END_MARKER));
    assert!(PYTHON_SCRIPT.contains(PYTHON_MARKER));
    let command = shell_command(120, true);
    assert_eq!(command[..2], ["sh", "-c"]);
    assert_eq!(command[5..], ["120", "1"]);
    let python = python_command("python3", 99, false);
    assert_eq!(python[3..], ["--envctl-wrapped", "--budget", "99"]);
}
