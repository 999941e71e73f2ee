//! Running a command in this environment, bounded in time and in output: `envctl
//! nvidia-check` without a container (issue 29) runs the same embedded scripts here that
//! `exec TARGET nvidia-check` runs in a container. The command inherits envctl's
//! environment and working directory (that environment is what is checked).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one bounded run gave back.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The exit code; 127 when the program is not there (as a shell says it); none when it
    /// was killed at the deadline or by a signal.
    pub code: Option<i64>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
}

/// Runs `command` until it ends or `deadline` passes (then it is killed), keeping at most
/// `limit` bytes of each stream. stdin is empty.
pub fn run_bounded(
    command: &[String],
    deadline: Instant,
    limit: usize,
) -> std::io::Result<Outcome> {
    let Some((program, arguments)) = command.split_first() else {
        return Ok(Outcome {
            code: Some(127),
            ..Outcome::default()
        });
    };
    let spawned = Command::new(program)
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Outcome {
                code: Some(127),
                stderr: format!("{program}: not found").into_bytes(),
                ..Outcome::default()
            });
        }
        Err(error) => return Err(error),
    };
    let stdout = read_in_background(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        limit,
    );
    let stderr = read_in_background(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        limit,
    );
    let status = wait_until(&mut child, deadline)?;
    Ok(Outcome {
        code: status.and_then(|status| status.code()).map(i64::from),
        stdout: collect(stdout),
        stderr: collect(stderr),
        timed_out: status.is_none(),
    })
}

/// A thread that reads `stream` to the end (a writer blocked on a full pipe would never
/// end), keeping only the first `limit` bytes.
fn read_in_background(
    stream: Option<Box<dyn Read + Send>>,
    limit: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut stream) = stream {
            let mut buffer = [0_u8; 8192];
            while let Ok(read @ 1..) = stream.read(&mut buffer) {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
        kept
    })
}

/// Waits for `child` to end; kills it at `deadline` and gives `None` then.
fn wait_until(
    child: &mut std::process::Child,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a reader thread read. A child of the script that still holds the pipes open would
/// keep the readers going: they are given a moment, then left with what they read.
fn collect(handle: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    let waited = Instant::now();
    while !handle.is_finished() && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if handle.is_finished() {
        handle.join().unwrap_or_default()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_string()).collect()
    }

    #[test]
    fn codes_output_and_missing_programs() {
        let later = Instant::now() + Duration::from_secs(10);
        let ran = run_bounded(
            &words(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
            later,
            1024,
        )
        .unwrap();
        assert_eq!(ran.code, Some(3));
        assert_eq!(ran.stdout, b"out\n");
        assert_eq!(ran.stderr, b"err\n");
        let missing = run_bounded(&words(&["envctl-no-such-program"]), later, 1024).unwrap();
        assert_eq!(missing.code, Some(127));
    }

    #[test]
    fn the_deadline_kills_and_the_output_is_bounded() {
        let soon = Instant::now() + Duration::from_millis(300);
        let started = Instant::now();
        let ran = run_bounded(
            &words(&["sh", "-c", "head -c 100000 /dev/zero; exec sleep 30"]),
            soon,
            10,
        )
        .unwrap();
        assert!(ran.timed_out);
        assert_eq!(ran.code, None);
        assert_eq!(ran.stdout.len(), 10);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
