//! Waiting for what a test stands on, not for a while: a condition polled with a deadline
//! ([`wait_for`], [`within`]), a child's output gathered as it comes ([`Collected`]), and
//! the observables the signal and pipe tests wait on (the processes of a container, the
//! writer blocked on a full pipe, the queues of a TCP connection, a process below another).
//!
//! A `sleep(N)` followed by an assumption is right on an idle machine and wrong on a
//! loaded one; a wait on the condition itself is as fast as the machine and, when it
//! fails, says what never happened.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a condition is looked at again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `done` until it holds, for at most `limit`: how long it took, or `None`.
pub fn within(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if done() {
            return Some(started.elapsed());
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Polls `done` until it holds; panics naming `what` once `limit` has passed.
pub fn wait_for(what: &str, limit: Duration, done: impl FnMut() -> bool) -> Duration {
    within(limit, done).unwrap_or_else(|| panic!("waited {limit:?} for {what}: it never came"))
}

/// The text a child writes on one of its pipes, gathered by a thread of its own as it
/// comes, so that a test can wait for a line and still read everything at the end.
pub struct Collected {
    bytes: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Collected {
    pub fn start(mut pipe: impl Read + Send + 'static) -> Collected {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let gathered = Arc::clone(&bytes);
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(read @ 1..) = pipe.read(&mut buffer) {
                gathered
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend_from_slice(&buffer[..read]);
            }
        });
        Collected {
            bytes,
            reader: Some(reader),
        }
    }

    /// What has come so far.
    pub fn text(&self) -> String {
        let bytes = self
            .bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Whether `needle` comes within `limit`.
    pub fn contains_within(&self, needle: &str, limit: Duration) -> bool {
        within(limit, || self.text().contains(needle)).is_some()
    }

    /// Everything, once the pipe has closed (the child has ended): waits for the reader
    /// to take the last bytes rather than for a while.
    pub fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.text()
    }
}

/// The host PIDs of the processes in `container` whose command line contains `needle`
/// (`docker top`, which reads the host's `ps`, so any image will do); none when the
/// container is not there.
pub fn container_processes(container: &str, needle: &str) -> Vec<String> {
    let output = super::docker::docker_output(["top", container, "-o", "pid,args"]);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .skip(1)
        .filter(|line| line.contains(needle))
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Waits until `container` runs a process whose command line contains `needle` and whose
/// PID is not in `before` (the ones a previous round left); panics after `limit`.
pub fn wait_for_new_process(container: &str, needle: &str, before: &[String], limit: Duration) {
    wait_for(
        &format!("a new `{needle}` process in {container}"),
        limit,
        || {
            container_processes(container, needle)
                .iter()
                .any(|pid| !before.contains(pid))
        },
    );
}

/// Whether a thread of process `pid` is blocked writing into a full pipe: the kernel's
/// wait channel of the thread (`/proc/PID/task/TID/wchan`) is `pipe_write`
/// (`anon_pipe_write` on newer kernels). Unread bytes alone do not say it: a pipe of 64 KiB
/// that holds 54 KiB is full to a writer of 11 KiB lines.
pub fn blocked_writing_a_pipe(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        std::fs::read_to_string(task.path().join("wchan"))
            .is_ok_and(|channel| channel.contains("pipe_write"))
    })
}

/// The send and receive queues (bytes) of the IPv4 TCP socket from `local` to `remote`,
/// from `/proc/net/tcp`; `None` when there is no such socket.
pub fn tcp_queues(local: SocketAddr, remote: SocketAddr) -> Option<(u64, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let port = |field: &str| {
        let hex = field.rsplit(':').next()?;
        u16::from_str_radix(hex, 16).ok()
    };
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (from, to, queues) = (fields.get(1)?, fields.get(2)?, fields.get(4)?);
        if port(from)? != local.port() || port(to)? != remote.port() {
            return None;
        }
        let (send, receive) = queues.split_once(':')?;
        Some((
            u64::from_str_radix(send, 16).ok()?,
            u64::from_str_radix(receive, 16).ok()?,
        ))
    })
}

/// Whether a process below `ancestor` (its child, their children…) has a command line
/// containing `needle`, by a walk of `/proc`.
pub fn has_descendant(ancestor: u32, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    // Each process and its parent, from the field after the name in `/proc/PID/stat`.
    let parents: Vec<(u32, u32)> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, after) = stat.rsplit_once(')')?;
            Some((pid, after.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let mut below = vec![ancestor];
    let mut index = 0;
    while let Some(&parent) = below.get(index) {
        below.extend(
            parents
                .iter()
                .filter(|(_, of)| *of == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    below[1..].iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
            String::from_utf8_lossy(&line)
                .replace('\0', " ")
                .contains(needle)
        })
    })
}
