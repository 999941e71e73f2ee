//! Which container a host process belongs to, from `/proc/PID/cgroup`.
//!
//! NVML lists the processes using a GPU by their host PIDs, and no NVIDIA tool maps them
//! to containers (the driver is not PID-namespace aware: NVIDIA/nvidia-docker#179). The
//! kernel does, through the process's cgroup path, which names the container id whatever
//! the layout:
//!
//! | layout | line |
//! |---|---|
//! | v1, cgroupfs driver | `4:memory:/docker/<id>` (one line per hierarchy) |
//! | v1, systemd driver | `4:memory:/system.slice/docker-<id>.scope` |
//! | v2, cgroupfs driver | `0::/docker/<id>` |
//! | v2, systemd driver | `0::/system.slice/docker-<id>.scope` |
//! | rootless, systemd | `0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-<id>.scope` |
//! | Docker in Docker | `0::/docker/<outer id>/docker/<inner id>` |
//!
//! Parsing is pure ([`container_id_candidates`]) and keeps every id it sees, innermost
//! last; the caller picks the one its daemon knows, which settles nesting. This needs no
//! `--pid=host` and no access to the container: only the host's `/proc`.
//!
//! The same paths lead to the counters the daemon itself reads for `docker stats`: CPU
//! time (`cpuacct.usage` on v1, `cpu.stat` on v2), memory and its `memory.stat`, block
//! I/O, PIDs, the network namespace's `/proc/PID/net/dev`, and `/proc/stat` for the host.
//! [`LocalContainer::read`] fills the same [`ContainerSample`] a stats frame fills, so the
//! formulas in `monitor::usage` cannot tell the two apart. It is the fast path of `envctl
//! stats`: Engine 20.10 answers stats requests (one-shot included) only on its one-second
//! collector tick. A container found here is checked to be the daemon's (its main PID's
//! cgroup names its id), so a remote daemon's PIDs are never read on this host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use envctl_facts::container::{
    BlockIoEntry, ContainerSample, CpuCounters, MemoryCounters, NetworkCounters,
};

/// Prefixes runtimes put before the id in a systemd scope name.
const SCOPE_PREFIXES: &[&str] = &["docker-", "libpod-", "cri-containerd-", "crio-"];

/// Container ids are 64 lowercase hexadecimal digits.
const ID_LENGTH: usize = 64;

/// Every container id in a `/proc/PID/cgroup` text, outermost first, each once.
pub fn container_id_candidates(cgroup_text: &str) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    for line in cgroup_text.lines() {
        // `hierarchy-id:controllers:path`; the path may itself hold colons, so split twice.
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(_), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        for segment in path.split('/') {
            if let Some(id) = id_in_segment(segment)
                && !candidates.iter().any(|known| known == id)
            {
                candidates.push(id.to_string());
            }
        }
    }
    candidates
}

/// `<id>`, `docker-<id>.scope`, `libpod-<id>.scope`, …; not `docker-<id>.scope`'s
/// siblings such as `libpod-conmon-<id>.scope` (the monitor process, not the container).
fn id_in_segment(segment: &str) -> Option<&str> {
    let trimmed = segment.strip_suffix(".scope").unwrap_or(segment);
    let id = SCOPE_PREFIXES
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix))
        .unwrap_or(trimmed);
    is_container_id(id).then_some(id)
}

fn is_container_id(text: &str) -> bool {
    text.len() == ID_LENGTH
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The innermost candidate the daemon knows (`is_known` gets full ids).
pub fn pick_container(candidates: &[String], is_known: impl Fn(&str) -> bool) -> Option<String> {
    candidates
        .iter()
        .rev()
        .find(|candidate| is_known(candidate))
        .cloned()
}

/// `/proc/PID/cgroup` under `proc_root` (`/proc` on a real machine). The error is the
/// kernel's: the process exited (`NotFound`) or belongs to another user namespace.
pub fn read_process_cgroup(proc_root: &Path, pid: u32) -> Result<String, std::io::Error> {
    std::fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup"))
}

/// The container (the full id of one `is_known` accepts) each of `pids` runs in, by its
/// cgroup. A process that ended before its cgroup was read is left out; any other failure
/// to read it comes back with its PID.
pub fn process_containers(
    proc_root: &Path,
    pids: impl IntoIterator<Item = u32>,
    is_known: impl Fn(&str) -> bool,
) -> (BTreeMap<u32, String>, Vec<(u32, std::io::Error)>) {
    let mut owners = BTreeMap::new();
    let mut failures = Vec::new();
    for pid in pids {
        match read_process_cgroup(proc_root, pid) {
            Ok(text) => {
                if let Some(id) = pick_container(&container_id_candidates(&text), &is_known) {
                    owners.insert(pid, id);
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => failures.push((pid, error)),
        }
    }
    (owners, failures)
}

/// The kernel's `USER_HZ`: `/proc/stat` counts in hundredths of a second on every Linux
/// ABI, and dockerd converts with the same constant.
const CLOCK_TICKS_PER_SECOND: u64 = 100;

/// Where the cgroup hierarchies are mounted, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupMounts {
    /// v1 hierarchies by controller (`cpuacct`, `memory`, `blkio`, `pids`, …): (mount
    /// point, root of the mount).
    pub v1: BTreeMap<String, (PathBuf, String)>,
    /// The v2 (unified) hierarchy: (mount point, root of the mount).
    pub unified: Option<(PathBuf, String)>,
}

/// Reads the cgroup mounts out of a `mountinfo` text.
pub fn parse_mountinfo(text: &str) -> CgroupMounts {
    let mut mounts = CgroupMounts::default();
    for line in text.lines() {
        // `ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS`
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = before.split(' ').collect();
        let (Some(root), Some(point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let mut after = after.split(' ');
        let (Some(kind), _, Some(options)) = (after.next(), after.next(), after.next()) else {
            continue;
        };
        let mount = (PathBuf::from(unescape_mount(point)), unescape_mount(root));
        match kind {
            "cgroup" => {
                for controller in options
                    .split(',')
                    .filter(|option| V1_CONTROLLERS.contains(option))
                {
                    mounts.v1.insert(controller.to_string(), mount.clone());
                }
            }
            "cgroup2" => mounts.unified = Some(mount),
            _ => {}
        }
    }
    mounts
}

/// The v1 controllers whose files `envctl stats` reads.
const V1_CONTROLLERS: &[&str] = &["cpuacct", "memory", "blkio", "pids"];

/// `mountinfo` writes spaces and a few other bytes as octal escapes (`\040`).
fn unescape_mount(text: &str) -> String {
    let mut result = String::new();
    let mut rest = text;
    while let Some(position) = rest.find('\\') {
        result.push_str(&rest[..position]);
        let code = rest.get(position + 1..position + 4);
        match code.and_then(|code| u8::from_str_radix(code, 8).ok()) {
            Some(byte) => {
                result.push(char::from(byte));
                rest = &rest[position + 4..];
            }
            None => {
                result.push('\\');
                rest = &rest[position + 1..];
            }
        }
    }
    result.push_str(rest);
    result
}

/// A process's cgroup paths: per v1 controller, and in the unified hierarchy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessCgroups {
    pub v1: BTreeMap<String, String>,
    pub unified: Option<String>,
}

/// Reads a `/proc/PID/cgroup` text into paths per controller.
pub fn parse_process_cgroups(cgroup_text: &str) -> ProcessCgroups {
    let mut cgroups = ProcessCgroups::default();
    for line in cgroup_text.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(hierarchy), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if hierarchy == "0" && controllers.is_empty() {
            cgroups.unified = Some(path.to_string());
            continue;
        }
        for controller in controllers.split(',') {
            cgroups.v1.insert(controller.to_string(), path.to_string());
        }
    }
    cgroups
}

/// Where one container's counters are, on a v1 or a v2 host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerCgroup {
    /// Folders of the container's cgroup in the `cpuacct`, `memory`, `blkio` and `pids`
    /// hierarchies (the CPU and memory ones are required, the others optional).
    V1 {
        cpuacct: PathBuf,
        memory: PathBuf,
        blkio: Option<PathBuf>,
        pids: Option<PathBuf>,
    },
    /// The container's folder in the unified hierarchy.
    V2(PathBuf),
}

/// The container's cgroup folders: v1's hierarchies when `cpuacct` and `memory` are
/// mounted (what the daemon reads on v1 hosts, also in hybrid mode), else the unified one.
pub fn container_cgroup(
    cgroups: &ProcessCgroups,
    mounts: &CgroupMounts,
) -> Option<ContainerCgroup> {
    let folder = |controller: &str| {
        let path = cgroups.v1.get(controller)?;
        let (point, root) = mounts.v1.get(controller)?;
        Some(inside(point, root, path))
    };
    if let (Some(cpuacct), Some(memory)) = (folder("cpuacct"), folder("memory")) {
        return Some(ContainerCgroup::V1 {
            cpuacct,
            memory,
            blkio: folder("blkio"),
            pids: folder("pids"),
        });
    }
    let (point, root) = mounts.unified.as_ref()?;
    Some(ContainerCgroup::V2(inside(
        point,
        root,
        cgroups.unified.as_deref()?,
    )))
}

/// A cgroup path as the process sees it, under a mount whose root may be a sub-tree
/// (cgroup namespaces, nested containers).
fn inside(point: &Path, root: &str, path: &str) -> PathBuf {
    let relative = path
        .strip_prefix(root.trim_end_matches('/'))
        .unwrap_or(path)
        .trim_start_matches('/');
    point.join(relative)
}

fn invalid(path: &Path, text: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "`{}` holds `{}`, not what the kernel writes there",
            path.display(),
            text.trim().chars().take(40).collect::<String>()
        ),
    )
}

fn read_text(path: &Path) -> Result<String, std::io::Error> {
    std::fs::read_to_string(path)
}

fn read_number(path: &Path) -> Result<u64, std::io::Error> {
    let text = read_text(path)?;
    text.trim().parse().map_err(|_| invalid(path, &text))
}

/// `usage_usec` from a v2 `cpu.stat`.
pub fn parse_cpu_stat_usage(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("usage_usec "))
        .and_then(|value| value.trim().parse().ok())
}

/// The host's CPU time and online CPUs, as dockerd reads them from `/proc/stat`: the
/// first seven fields of the `cpu` line (user … softirq) in nanoseconds, and the number
/// of `cpuN` lines.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u32)> {
    let mut total = None;
    let mut online = 0_u32;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("cpu") => {
                let ticks: Option<Vec<u64>> =
                    fields.take(7).map(|field| field.parse().ok()).collect();
                let ticks = ticks.filter(|ticks| ticks.len() == 7)?;
                total = Some(
                    ticks
                        .iter()
                        .sum::<u64>()
                        .saturating_mul(1_000_000_000 / CLOCK_TICKS_PER_SECOND),
                );
            }
            Some(name) if name.starts_with("cpu") => online += 1,
            _ => {}
        }
    }
    Some((total?, online))
}

/// `/proc/stat` under `proc_root`, read into (host CPU nanoseconds, online CPUs).
pub fn read_system_cpu(proc_root: &Path) -> Result<(u64, u32), std::io::Error> {
    let path = proc_root.join("stat");
    let text = std::fs::read_to_string(&path)?;
    parse_proc_stat(&text).ok_or_else(|| invalid(&path, &text))
}

/// The cgroup mounts this process sees (`/proc/self/mountinfo` under `proc_root`).
pub fn read_mounts(proc_root: &Path) -> Result<CgroupMounts, std::io::Error> {
    Ok(parse_mountinfo(&std::fs::read_to_string(
        proc_root.join("self/mountinfo"),
    )?))
}

/// A container whose counters this host can read directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalContainer {
    /// The full container id.
    pub id: String,
    /// The container's main process, whose network namespace `/proc/PID/net/dev` shows.
    pub pid: u32,
    pub cgroup: ContainerCgroup,
}

/// Finds container `id`'s cgroup through its main process `pid`, and checks that the
/// process really is in it: a PID from a remote daemon, or from another PID namespace,
/// names some other process here, and that process's cgroup does not name the container.
pub fn locate_container(
    proc_root: &Path,
    mounts: &CgroupMounts,
    id: &str,
    pid: u32,
) -> Result<Option<LocalContainer>, std::io::Error> {
    let text = read_process_cgroup(proc_root, pid)?;
    if !container_id_candidates(&text)
        .iter()
        .any(|candidate| candidate == id)
    {
        return Ok(None);
    }
    Ok(
        container_cgroup(&parse_process_cgroups(&text), mounts).map(|cgroup| LocalContainer {
            id: id.to_string(),
            pid,
            cgroup,
        }),
    )
}

impl LocalContainer {
    /// The container's counters, read from its cgroup files and its network namespace,
    /// into the same plain sample the daemon's stats fill. `host_memory` (bytes) caps the
    /// memory limit as the daemon does for containers without one.
    pub fn read(
        &self,
        proc_root: &Path,
        host_memory: Option<u64>,
        system: (u64, u32),
    ) -> Result<ContainerSample, std::io::Error> {
        let mut sample = ContainerSample {
            id: self.id.clone(),
            ..ContainerSample::default()
        };
        sample.cpu = CpuCounters {
            system_usage: Some(system.0),
            online_cpus: Some(system.1),
            ..CpuCounters::default()
        };
        let cap = |limit: Option<u64>| match (limit, host_memory) {
            (Some(limit), Some(host)) => Some(limit.min(host)),
            (None, host) => host,
            (limit, None) => limit,
        };
        match &self.cgroup {
            ContainerCgroup::V1 {
                cpuacct,
                memory,
                blkio,
                pids,
            } => {
                sample.cpu.total_usage = Some(read_number(&cpuacct.join("cpuacct.usage"))?);
                sample.memory = MemoryCounters {
                    usage: Some(read_number(&memory.join("memory.usage_in_bytes"))?),
                    limit: cap(Some(read_number(&memory.join("memory.limit_in_bytes"))?)),
                    stats: parse_flat_keyed(&read_text(&memory.join("memory.stat"))?),
                };
                if let Some(blkio) = blkio {
                    // The daemon's choice (containerd's cgroups package): CFQ's recursive
                    // counters where the kernel has them, else the throttle ones.
                    let file = if blkio.join("blkio.io_serviced_recursive").exists() {
                        "blkio.io_service_bytes_recursive"
                    } else {
                        "blkio.throttle.io_service_bytes"
                    };
                    sample.block_io = parse_blkio_v1(&read_text(&blkio.join(file))?);
                }
                if let Some(pids) = pids {
                    sample.pids = Some(read_number(&pids.join("pids.current"))?);
                }
            }
            ContainerCgroup::V2(folder) => {
                let cpu_path = folder.join("cpu.stat");
                let cpu_text = read_text(&cpu_path)?;
                sample.cpu.total_usage = Some(
                    parse_cpu_stat_usage(&cpu_text)
                        .ok_or_else(|| invalid(&cpu_path, &cpu_text))?
                        .saturating_mul(1000),
                );
                let maximum = read_text(&folder.join("memory.max"))?;
                sample.memory = MemoryCounters {
                    usage: Some(read_number(&folder.join("memory.current"))?),
                    // `max` means no limit.
                    limit: cap(maximum.trim().parse().ok()),
                    stats: parse_flat_keyed(&read_text(&folder.join("memory.stat"))?),
                };
                // `io.stat` is absent when the io controller is not enabled for the group.
                if let Ok(text) = read_text(&folder.join("io.stat")) {
                    sample.block_io = parse_io_stat(&text);
                }
                sample.pids = Some(read_number(&folder.join("pids.current"))?);
            }
        }
        sample.networks = parse_net_dev(&read_text(
            &proc_root.join(self.pid.to_string()).join("net/dev"),
        )?);
        Ok(sample)
    }
}

/// The host's memory, from `/proc/meminfo` under `proc_root`.
pub fn read_host_memory(proc_root: &Path) -> Result<u64, std::io::Error> {
    let path = proc_root.join("meminfo");
    let text = read_text(&path)?;
    parse_memory_total(&text).ok_or_else(|| invalid(&path, &text))
}

/// `MemTotal` from `/proc/meminfo`, in bytes: the daemon's limit for unlimited containers.
pub fn parse_memory_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kibibytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kibibytes * 1024)
}

/// `key value` lines (`memory.stat`).
pub fn parse_flat_keyed(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(' ')?;
            Some((key.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// v1 `blkio.*io_service_bytes*`: `MAJOR:MINOR Operation bytes` lines and a `Total` line,
/// which is left out as the daemon does.
pub fn parse_blkio_v1(text: &str) -> Vec<BlockIoEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [_device, operation, bytes] => Some(BlockIoEntry {
                    operation: (*operation).to_string(),
                    bytes: bytes.parse().ok()?,
                }),
                _ => None,
            }
        })
        .collect()
}

/// v2 `io.stat`: `MAJOR:MINOR rbytes=… wbytes=… …` into `read`/`write` entries, the
/// names the daemon gives them on v2.
pub fn parse_io_stat(text: &str) -> Vec<BlockIoEntry> {
    let mut entries = Vec::new();
    for line in text.lines() {
        for field in line.split_whitespace().skip(1) {
            let operation = match field.split_once('=') {
                Some(("rbytes", value)) => value.parse().ok().map(|bytes| ("read", bytes)),
                Some(("wbytes", value)) => value.parse().ok().map(|bytes| ("write", bytes)),
                _ => None,
            };
            if let Some((operation, bytes)) = operation {
                entries.push(BlockIoEntry {
                    operation: operation.to_string(),
                    bytes,
                });
            }
        }
    }
    entries
}

/// `/proc/PID/net/dev`: bytes received and sent per interface, loopback left out (the
/// daemon reports the container's endpoints only).
pub fn parse_net_dev(text: &str) -> BTreeMap<String, NetworkCounters> {
    text.lines()
        .filter_map(|line| {
            let (interface, counters) = line.split_once(':')?;
            let interface = interface.trim();
            if interface == "lo" {
                return None;
            }
            let fields: Vec<u64> = counters
                .split_whitespace()
                .map(|field| field.parse().ok())
                .collect::<Option<Vec<u64>>>()?;
            Some((
                interface.to_string(),
                NetworkCounters {
                    rx_bytes: *fields.first()?,
                    tx_bytes: *fields.get(8)?,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "e5fb59820be1185f00d4a5b52c24aeed78c44c1ad9f5a41244c1b8d02fdcf4be";
    const OUTER: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn cgroup_v1_with_the_cgroupfs_driver() {
        // Recorded on Docker 20.10 with cgroup v1 (a busybox container's first process).
        let text = format!(
            "9:name=systemd:/docker/{ID}\n8:pids:/docker/{ID}\n4:memory:/docker/{ID}\n\
             2:cpuacct:/docker/{ID}\n1:cpu:/docker/{ID}\n0::/docker/{ID}\n"
        );
        assert_eq!(container_id_candidates(&text), vec![ID.to_string()]);
    }

    #[test]
    fn cgroup_v1_with_the_systemd_driver() {
        let text = format!(
            "12:memory:/system.slice/docker-{ID}.scope\n11:cpu,cpuacct:/system.slice/docker-{ID}.scope\n\
             1:name=systemd:/system.slice/docker-{ID}.scope\n"
        );
        assert_eq!(container_id_candidates(&text), vec![ID.to_string()]);
    }

    #[test]
    fn cgroup_v2_with_either_driver() {
        assert_eq!(
            container_id_candidates(&format!("0::/docker/{ID}\n")),
            vec![ID.to_string()]
        );
        assert_eq!(
            container_id_candidates(&format!("0::/system.slice/docker-{ID}.scope\n")),
            vec![ID.to_string()]
        );
        // A process in a sub-cgroup of the container (systemd inside it, or a nested
        // cgroup made by the workload).
        assert_eq!(
            container_id_candidates(&format!("0::/system.slice/docker-{ID}.scope/init.scope\n")),
            vec![ID.to_string()]
        );
    }

    #[test]
    fn rootless_docker_under_a_user_slice() {
        let text = format!(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{ID}.scope\n"
        );
        assert_eq!(container_id_candidates(&text), vec![ID.to_string()]);
    }

    #[test]
    fn nested_daemons_keep_both_ids_and_the_known_one_wins() {
        let text = format!("0::/docker/{OUTER}/docker/{ID}\n");
        let candidates = container_id_candidates(&text);
        assert_eq!(candidates, vec![OUTER.to_string(), ID.to_string()]);
        assert_eq!(
            pick_container(&candidates, |id| id == OUTER),
            Some(OUTER.to_string())
        );
        assert_eq!(
            pick_container(&candidates, |_| true),
            Some(ID.to_string()),
            "the innermost wins when both are known"
        );
        assert_eq!(pick_container(&candidates, |_| false), None);
    }

    #[test]
    fn host_processes_and_other_shapes_have_no_container() {
        assert!(
            container_id_candidates("0::/user.slice/user-1000.slice/session-2.scope\n").is_empty()
        );
        assert!(container_id_candidates("0::/\n").is_empty());
        assert!(container_id_candidates("").is_empty());
        assert!(container_id_candidates("garbage without colons").is_empty());
        // Upper case, too short, or the runtime's monitor process are not containers.
        let upper = ID.to_uppercase();
        assert!(container_id_candidates(&format!("0::/docker/{upper}\n")).is_empty());
        assert!(container_id_candidates(&format!("0::/docker/{}\n", &ID[..63])).is_empty());
        assert!(
            container_id_candidates(&format!("0::/machine.slice/libpod-conmon-{ID}.scope\n"))
                .is_empty()
        );
        // Podman and containerd scopes are read too.
        assert_eq!(
            container_id_candidates(&format!("0::/machine.slice/libpod-{ID}.scope/container\n")),
            vec![ID.to_string()]
        );
        assert_eq!(
            container_id_candidates(&format!(
                "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope\n"
            )),
            vec![ID.to_string()]
        );
    }

    #[test]
    fn reading_an_absent_process_names_the_kernels_error() {
        let root = std::env::temp_dir().join("envctl-cgroup-unit-test-absent");
        let error = read_process_cgroup(&root, 4_000_000).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }

    const MOUNTINFO_V1: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n\
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn mountinfo_names_the_v1_controllers_and_the_unified_hierarchy() {
        let mounts = parse_mountinfo(MOUNTINFO_V1);
        let root = |point: &str| Some((PathBuf::from(point), "/".to_string()));
        assert_eq!(
            mounts.v1.get("cpuacct").cloned(),
            root("/sys/fs/cgroup/cpu,cpuacct")
        );
        assert_eq!(
            mounts.v1.get("memory").cloned(),
            root("/sys/fs/cgroup/memory")
        );
        assert_eq!(
            mounts.v1.get("cpu"),
            None,
            "only the controllers envctl reads"
        );
        assert_eq!(
            mounts.unified,
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_string()))
        );
        let v2 = parse_mountinfo(
            "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        assert!(v2.v1.is_empty());
        assert_eq!(
            v2.unified,
            Some((PathBuf::from("/sys/fs/cgroup"), "/".to_string()))
        );
        assert_eq!(unescape_mount("/mnt/with\\040space"), "/mnt/with space");
    }

    #[test]
    fn the_container_cgroup_is_found_on_v1_then_v2() {
        let v1 = parse_mountinfo(MOUNTINFO_V1);
        let text = format!(
            "8:pids:/docker/{ID}\n4:memory:/docker/{ID}\n2:cpu,cpuacct:/docker/{ID}\n0::/docker/{ID}\n"
        );
        assert_eq!(
            container_cgroup(&parse_process_cgroups(&text), &v1),
            Some(ContainerCgroup::V1 {
                cpuacct: PathBuf::from(format!("/sys/fs/cgroup/cpu,cpuacct/docker/{ID}")),
                memory: PathBuf::from(format!("/sys/fs/cgroup/memory/docker/{ID}")),
                blkio: None,
                pids: None,
            })
        );
        let v2 = parse_mountinfo("30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
        let text = format!("0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(
            container_cgroup(&parse_process_cgroups(&text), &v2),
            Some(ContainerCgroup::V2(PathBuf::from(format!(
                "/sys/fs/cgroup/system.slice/docker-{ID}.scope"
            ))))
        );
        // A mount whose root is a sub-tree (a cgroup namespace) drops that prefix.
        let nested =
            parse_mountinfo("30 1 0:26 /docker/outer /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
        let text = format!("0::/docker/outer/docker/{ID}\n");
        assert_eq!(
            container_cgroup(&parse_process_cgroups(&text), &nested),
            Some(ContainerCgroup::V2(PathBuf::from(format!(
                "/sys/fs/cgroup/docker/{ID}"
            ))))
        );
        assert_eq!(
            container_cgroup(&parse_process_cgroups(&text), &CgroupMounts::default()),
            None
        );
    }

    #[test]
    fn a_pid_that_is_not_in_the_container_is_not_read() {
        // Our own process: its cgroup names no container, whatever the host.
        let mounts = read_mounts(Path::new("/proc")).unwrap_or_default();
        let located =
            locate_container(Path::new("/proc"), &mounts, ID, std::process::id()).unwrap();
        assert_eq!(located, None);
    }

    #[test]
    fn counter_files_read_like_the_daemon() {
        assert_eq!(
            parse_blkio_v1(
                "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Total 12288\nTotal 12288\n"
            ),
            vec![
                BlockIoEntry {
                    operation: "Read".into(),
                    bytes: 4096
                },
                BlockIoEntry {
                    operation: "Write".into(),
                    bytes: 8192
                },
                BlockIoEntry {
                    operation: "Sync".into(),
                    bytes: 0
                },
                BlockIoEntry {
                    operation: "Total".into(),
                    bytes: 12288
                },
            ]
        );
        assert_eq!(parse_blkio_v1("Total 0\n"), Vec::new());
        assert_eq!(
            parse_io_stat(
                "8:0 rbytes=1024 wbytes=2048 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=0\n"
            ),
            vec![
                BlockIoEntry {
                    operation: "read".into(),
                    bytes: 1024
                },
                BlockIoEntry {
                    operation: "write".into(),
                    bytes: 2048
                },
                BlockIoEntry {
                    operation: "read".into(),
                    bytes: 1
                },
                BlockIoEntry {
                    operation: "write".into(),
                    bytes: 0
                },
            ]
        );
        // Recorded from a busybox container's network namespace.
        let net = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
             lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  \
             eth0:     936      12    0    0    0     0          0         0       42       1    0    0    0     0       0          0\n";
        let parsed = parse_net_dev(net);
        assert_eq!(parsed.len(), 1, "{parsed:?}");
        assert_eq!(
            parsed["eth0"],
            NetworkCounters {
                rx_bytes: 936,
                tx_bytes: 42
            }
        );
        assert_eq!(
            parse_memory_total("MemTotal:       24683652 kB\nMemFree: 1 kB\n"),
            Some(25_276_059_648)
        );
        let stat = parse_flat_keyed("cache 68845568\ntotal_inactive_file 67424256\nbad line x\n");
        assert_eq!(stat["total_inactive_file"], 67_424_256);
        assert_eq!(stat.len(), 2);
    }

    #[test]
    fn proc_stat_and_cpu_stat_read_like_the_daemon() {
        // Recorded on the 2-CPU test host.
        let text = "cpu  269297 0 65164 423398 5772 0 467 151 0 0\n\
                    cpu0 119289 0 29577 231676 1304 0 67 78 0 0\n\
                    cpu1 150007 0 35587 191721 4468 0 399 73 0 0\n\
                    intr 1 2 3\nctxt 5\n";
        let (total, online) = parse_proc_stat(text).unwrap();
        assert_eq!(
            total,
            (269_297 + 65_164 + 423_398 + 5_772 + 467) * 10_000_000
        );
        assert_eq!(online, 2);
        assert_eq!(parse_proc_stat("intr 1\n"), None);
        assert_eq!(
            parse_cpu_stat_usage("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"),
            Some(1234)
        );
        assert_eq!(parse_cpu_stat_usage("nr_periods 0\n"), None);
    }
}
