//! Generated inputs that do not belong in git: deep nesting, files over 1 MiB, NUL bytes,
//! invalid UTF-8, a byte order mark, directories and missing files, and over-long `extends`
//! chains are refused at their place without crashing.

use super::*;

const IMAGE_LINE: &str = "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\n";

/// Writes `bytes` as `name` in a fresh folder and checks it; returns the run, its JSON
/// report and the path as passed.
fn check_generated(name: &str, bytes: &[u8]) -> (Run, Value, String, TempDir) {
    let sandbox = sandbox();
    let path = sandbox.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let shown = path.display().to_string();
    let plain = check(&sandbox, &shown);
    let (json_run, report) = check_json(&sandbox, &shown);
    let report = report
        .unwrap_or_else(|error| panic!("--json is not JSON ({error}):\n{}", json_run.describe()));
    assert_eq!(json_run.code, 2, "--json run:\n{}", json_run.describe());
    (plain, report, shown, sandbox)
}

/// Asserts a refusal: exit 2, and a diagnostic on `line` (at `column` when given) whose
/// message contains `message`, both on stderr and in the JSON report, each said once.
fn assert_refused(
    run: &Run,
    report: &Value,
    shown: &str,
    (line, column): (usize, Option<usize>),
    message: &str,
) {
    assert_eq!(run.code, 2, "expected exit code 2:\n{}", run.describe());
    let place = match column {
        Some(column) => format!("{shown}:{line}:{column}"),
        None => format!("{shown}:{line}:"),
    };
    let rendered = rendered_diagnostics(&run.stderr);
    assert!(
        rendered.iter().any(|d| d.message.contains(message)
            && match column {
                Some(_) => d.location == place,
                None => d.location.starts_with(&place),
            }),
        "expected `{message}` at {place}:\n{}",
        run.describe()
    );
    let diagnostics = json_diagnostics(report).unwrap();
    assert!(
        diagnostics.iter().any(|d| d["path"] == shown
            && d["line"] == line
            && column.is_none_or(|column| d["column"] == column)
            && d["message"].as_str().is_some_and(|m| m.contains(message))),
        "--json lacks `{message}` at {place}: {}",
        clip(&report.to_string())
    );
    let duplicates = duplicated_diagnostics(&diagnostics);
    assert!(
        duplicates.is_empty(),
        "diagnostics reported more than once ({} diagnostics in all): {duplicates:?}",
        diagnostics.len()
    );
}

const DEPTH: usize = 10_000;

#[test]
fn deeply_nested_arrays_are_refused_without_crashing() {
    let text = format!(
        "{IMAGE_LINE}command = {}{}\n",
        "[".repeat(DEPTH),
        "]".repeat(DEPTH)
    );
    let (run, report, shown, _sandbox) = check_generated("deep-arrays.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    assert!(run.stderr.contains("recurs"), "{}", run.describe());
}

#[test]
fn deeply_nested_inline_tables_are_refused_without_crashing() {
    let text = format!(
        "{IMAGE_LINE}env = {}\"1\"{}\n",
        "{ a = ".repeat(DEPTH),
        " }".repeat(DEPTH)
    );
    let (run, report, shown, _sandbox) = check_generated("deep-tables.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    assert!(run.stderr.contains("recurs"), "{}", run.describe());
}

/// 10,000 `[` and no `]`: one problem, said once (not once per nesting level).
#[test]
fn deeply_nested_unclosed_arrays_are_reported_once() {
    let text = format!("{IMAGE_LINE}command = {}\n", "[".repeat(DEPTH));
    let (run, report, shown, _sandbox) = check_generated("deep-unclosed.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
}

/// A table header or dotted key too deep for the parser is reported on its own line,
/// not at 1:1 (which points at an unrelated line).
#[test]
fn deeply_dotted_keys_are_refused_at_their_line() {
    let keys = vec!["a"; DEPTH].join(".");
    for (name, text) in [
        ("deep-header.toml", format!("{IMAGE_LINE}[{keys}]\nx = 1\n")),
        ("deep-dotted.toml", format!("{IMAGE_LINE}{keys} = 1\n")),
    ] {
        let (run, report, shown, _sandbox) = check_generated(name, text.as_bytes());
        assert_refused(&run, &report, &shown, (2, None), "invalid TOML");
    }
}

#[test]
fn files_over_one_mebibyte_are_refused_and_one_mebibyte_is_not() {
    let limit = usize::try_from(MAXIMUM_PROFILE_BYTES).unwrap();
    assert_eq!(limit, 1024 * 1024);
    let mut text = IMAGE_LINE.to_string();
    while text.len() + 64 < limit {
        text.push_str("# padding: a data file given by mistake looks much like this one.\n");
    }
    text.push_str(&"#".repeat(limit - 1 - text.len()));
    text.push('\n');
    assert_eq!(text.len(), limit);

    // Exactly at the limit: read and accepted.
    let sandbox = sandbox();
    let path = sandbox.path().join("at-limit.toml");
    std::fs::write(&path, &text).unwrap();
    let at_limit = check(&sandbox, &path.display().to_string());
    assert_eq!(at_limit.code, 0, "{}", at_limit.describe());

    // One byte over: refused, naming the size and the limit.
    text.push('\n');
    let (run, report, shown, _sandbox) = check_generated("over-limit.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (1, Some(1)), "1048576 bytes");
    assert!(run.stderr.contains("1048577"), "{}", run.describe());

    // Far over (a checkpoint given by mistake): refused as fast.
    let huge = vec![b'#'; 8 * limit];
    let (run, report, shown, _sandbox) = check_generated("huge.toml", &huge);
    assert_refused(
        &run,
        &report,
        &shown,
        (1, Some(1)),
        "limited to 1048576 bytes",
    );
}

#[test]
fn nul_bytes_are_refused_at_their_place() {
    let text = format!("{IMAGE_LINE}description = \"team\0profile\"\n");
    let (run, report, shown, _sandbox) = check_generated("nul.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (2, Some(20)), "NUL byte");

    // Binary data from the first byte (a tarball or checkpoint named .toml).
    let mut binary = b"\0\0\0\x01PK\x03\x04".to_vec();
    binary.extend(std::iter::repeat_n(0u8, 4096));
    let (run, report, shown, _sandbox) = check_generated("binary.toml", &binary);
    assert_refused(&run, &report, &shown, (1, Some(1)), "NUL byte");
}

#[test]
fn invalid_utf8_is_refused_at_the_first_bad_byte() {
    // Latin-1 `é` in a description.
    let mut latin1 = IMAGE_LINE.as_bytes().to_vec();
    latin1.extend(b"description = \"caf\xe9\"\n");
    let (run, report, shown, _sandbox) = check_generated("latin1.toml", &latin1);
    assert_refused(&run, &report, &shown, (2, Some(19)), "not valid UTF-8");

    // After multi-byte characters: the column counts characters, not bytes.
    let mut after_unicode = IMAGE_LINE.as_bytes().to_vec();
    after_unicode.extend("description = \"日本".as_bytes());
    after_unicode.extend(b"\xff\"\n");
    let (run, report, shown, _sandbox) = check_generated("after-unicode.toml", &after_unicode);
    assert_refused(&run, &report, &shown, (2, Some(18)), "not valid UTF-8");

    // A multi-byte sequence cut at the end of the file.
    let mut truncated = IMAGE_LINE.as_bytes().to_vec();
    truncated.extend("description = \"".as_bytes());
    truncated.extend(&"é".as_bytes()[..1]);
    let (run, report, shown, _sandbox) = check_generated("truncated.toml", &truncated);
    assert_refused(&run, &report, &shown, (2, Some(16)), "not valid UTF-8");

    // Notepad's "Unicode": UTF-16 with a byte-order mark.
    let utf16: Vec<u8> = [0xfeff_u16]
        .into_iter()
        .chain("image = \"ubuntu\"\n".encode_utf16())
        .flat_map(u16::to_le_bytes)
        .collect();
    let (run, report, shown, _sandbox) = check_generated("utf16.toml", &utf16);
    assert_refused(&run, &report, &shown, (1, Some(1)), "not valid UTF-8");
}

/// A UTF-8 byte-order mark is invisible: it takes no column.
#[test]
fn a_utf8_byte_order_mark_takes_no_column() {
    let text = format!("\u{feff}memroy = \"16g\"\n{IMAGE_LINE}");
    let (run, report, shown, _sandbox) = check_generated("bom.toml", text.as_bytes());
    assert_refused(&run, &report, &shown, (1, Some(1)), "unknown key `memroy`");
}

#[test]
fn directories_and_other_non_files_are_refused() {
    let sandbox = sandbox();
    let directory = sandbox.path().join("profile.toml");
    std::fs::create_dir(&directory).unwrap();
    let mut cases = vec![
        directory.display().to_string(),
        format!("{}/", sandbox.path().display()),
    ];
    #[cfg(unix)]
    {
        cases.push("/dev/null".to_string());
        // A FIFO would block a naive reader forever.
        let fifo = sandbox.path().join("fifo.toml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|status| status.success());
        if made {
            cases.push(fifo.display().to_string());
        }
    }
    for shown in &cases {
        let plain = check(&sandbox, shown);
        let (json_run, report) = check_json(&sandbox, shown);
        let report = report.unwrap_or_else(|error| {
            panic!("{shown}: not JSON ({error}):\n{}", json_run.describe())
        });
        assert_refused(&plain, &report, shown, (1, Some(1)), "not a regular file");
    }
}

#[test]
fn a_missing_file_is_refused() {
    let sandbox = sandbox();
    let shown = sandbox
        .path()
        .join("no-such-profile.toml")
        .display()
        .to_string();
    let plain = check(&sandbox, &shown);
    let (_, report) = check_json(&sandbox, &shown);
    assert_refused(
        &plain,
        &report.unwrap(),
        &shown,
        (1, Some(1)),
        "cannot read the profile",
    );
}

/// A chain of 32 files is fine; one more is refused at the `extends` that goes too far.
#[test]
fn extends_chains_longer_than_32_files_are_refused() {
    let sandbox = sandbox();
    let folder = sandbox.path().join("chain");
    std::fs::create_dir(&folder).unwrap();
    const FILES: usize = 40;
    for index in 0..FILES {
        let text = if index + 1 < FILES {
            format!("# link {index}\nextends = \"link-{}\"\n", index + 1)
        } else {
            IMAGE_LINE.to_string()
        };
        std::fs::write(folder.join(format!("link-{index}.toml")), text).unwrap();
    }
    let shown = |index: usize| {
        folder
            .join(format!("link-{index}.toml"))
            .display()
            .to_string()
    };

    let longest = check(&sandbox, &shown(FILES - 32));
    assert_eq!(longest.code, 0, "{}", longest.describe());

    let first = FILES - 33;
    let plain = check(&sandbox, &shown(first));
    let (json_run, report) = check_json(&sandbox, &shown(first));
    let report =
        report.unwrap_or_else(|error| panic!("not JSON ({error}):\n{}", json_run.describe()));
    // The 32nd file of the chain holds the `extends` that is one too many.
    assert_refused(
        &plain,
        &report,
        &shown(first + 31),
        (2, Some(11)),
        "`extends` chain is longer than 32",
    );
}
