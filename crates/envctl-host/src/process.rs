//! A process of the daemon's host as a container numbers it: `/proc/PID/status`'s
//! `NSpid` line lists its PID in each PID namespace it belongs to, outermost first, so the
//! last one is its PID inside the container. `exec` reads it to forward Ctrl-C to the
//! command it started (the daemon reports only the host's PID).

use std::path::Path;

/// The PID inside the innermost namespace of host process `host_pid`, read from
/// `proc/PID/status` under `proc_root` (`/`); `None` when the process is gone, `/proc` is
/// not this host's (a remote daemon), or it is in no namespace of its own.
/// Whether no process `pid` exists in this PID namespace (`/proc/PID` is gone): a lock
/// holder of this host that ended without releasing it.
pub fn has_ended(pid: u32) -> bool {
    !Path::new("/proc").join(pid.to_string()).exists()
}

pub fn namespace_pid(proc_root: &Path, host_pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(
        proc_root
            .join("proc")
            .join(host_pid.to_string())
            .join("status"),
    )
    .ok()?;
    innermost_pid(&status, host_pid)
}

/// The last `NSpid` entry, when the line starts with `host_pid` (so it is that process
/// as this host numbers it) and names a namespace below it.
fn innermost_pid(status: &str, host_pid: u32) -> Option<u32> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))?;
    let pids: Vec<u32> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match pids.as_slice() {
        [outer, .., inner] if *outer == host_pid => Some(*inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::innermost_pid;

    #[test]
    fn the_innermost_pid_is_the_containers() {
        let status = "Name:\tsleep\nPid:\t4242\nNSpid:\t4242\t17\n";
        assert_eq!(innermost_pid(status, 4242), Some(17));
        // Nested namespaces (a container in a container): the innermost.
        assert_eq!(innermost_pid("NSpid:\t900\t40\t7\n", 900), Some(7));
    }

    #[test]
    fn another_process_or_no_namespace_is_none() {
        // The host's /proc numbers another process 4242: not the daemon's.
        assert_eq!(innermost_pid("NSpid:\t5000\t17\n", 4242), None);
        assert_eq!(innermost_pid("NSpid:\t4242\n", 4242), None);
        assert_eq!(innermost_pid("Name:\tx\n", 4242), None);
        assert_eq!(innermost_pid("NSpid:\t4242\tx\n", 4242), None);
    }
}
