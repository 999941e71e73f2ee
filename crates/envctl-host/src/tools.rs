//! The NVIDIA container tools on `PATH` (found with `which`) and their versions, parsed
//! with semver from each tool's own `--version` output, into `envctl_facts::host::ToolFacts`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use envctl_facts::host::ToolFacts;

/// The tools doctor looks for, and the flag that prints each one's version (`None`: the
/// tool has no version flag worth running).
pub const TOOLS: [(&str, Option<&str>); 6] = [
    ("nvidia-smi", None),
    ("nvidia-ctk", Some("--version")),
    ("nvidia-container-cli", Some("--version")),
    ("nvidia-container-runtime-hook", None),
    ("nvidia-cdi-hook", None),
    ("nvidia-container-runtime", None),
];

/// A tool that hangs must not hang doctor.
const VERSION_TIMEOUT: Duration = Duration::from_secs(2);

pub fn gather(path: Option<&OsStr>, working_directory: &Path) -> Vec<ToolFacts> {
    TOOLS
        .iter()
        .map(|(name, version_flag)| {
            let found = which::which_in(name, path, working_directory).ok();
            let (version, version_error) = match (&found, version_flag) {
                (Some(binary), Some(flag)) => match run_version(binary, flag) {
                    Ok(output) => match parse_version(&output) {
                        Some(version) => (Some(version), None),
                        None => (None, Some(format!("no version in `{name} {flag}` output"))),
                    },
                    Err(error) => (None, Some(error)),
                },
                _ => (None, None),
            };
            ToolFacts {
                name: name.to_string(),
                path: found.map(|binary| binary.display().to_string()),
                version,
                version_error,
            }
        })
        .collect()
}

fn run_version(binary: &PathBuf, flag: &str) -> Result<String, String> {
    // A script written a moment ago can still be open in a process forked meanwhile
    // (ETXTBSY); that clears within milliseconds.
    let mut attempts = 0;
    let mut child = loop {
        let spawned = Command::new(binary)
            .arg(flag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match spawned {
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 5 =>
            {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => {
                break other
                    .map_err(|error| format!("cannot run {}: {error}", binary.display()))?;
            }
        }
    };
    let deadline = Instant::now() + VERSION_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} {flag} did not finish within {} s",
                    binary.display(),
                    VERSION_TIMEOUT.as_secs()
                ));
            }
            Err(error) => return Err(format!("waiting for {}: {error}", binary.display())),
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(text)
}

/// The first `X.Y.Z` in a tool's output: `NVIDIA Container Toolkit CLI version 1.17.8` or
/// `cli-version: 1.17.8`.
pub fn parse_version(output: &str) -> Option<semver::Version> {
    output
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .map(|word| word.trim_start_matches('v'))
        .find_map(|word| semver::Version::parse(word).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_toolkit_version_lines() {
        assert_eq!(
            parse_version("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: abc"),
            Some(semver::Version::new(1, 17, 8))
        );
        assert_eq!(
            parse_version("cli-version: 1.16.2\nlib-version: 1.16.2"),
            Some(semver::Version::new(1, 16, 2))
        );
        assert_eq!(parse_version("no version here"), None);
    }

    #[test]
    fn runs_a_found_tool_for_its_version() {
        let folder = tempfile::tempdir().unwrap();
        let script = folder.path().join("nvidia-ctk");
        std::fs::write(
            &script,
            "#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version 1.16.1'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tools = gather(Some(folder.path().as_os_str()), folder.path());
        let ctk = tools.iter().find(|tool| tool.name == "nvidia-ctk").unwrap();
        assert_eq!(ctk.version, Some(semver::Version::new(1, 16, 1)));
        assert!(
            tools
                .iter()
                .filter(|tool| tool.name != "nvidia-ctk")
                .all(|tool| tool.path.is_none())
        );
    }
}
