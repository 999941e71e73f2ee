//! The host-wide GPU health record (issue 43): the Xids a `stats` watcher saw, kept where
//! every user's `up` on this host reads them, so that a GPU that failed while someone
//! watched is kept out of placement until it is cleared (`checks::health::keep_out`).
//!
//! # Where, and whose
//!
//! Beside the GPU placement lock (`host::gpu_lock`, `/run/lock` by default), one file per
//! user: `envctl-gpu-health.<uid>.json`. One file each because the lock's folder is
//! sticky (mode 1777): a user may replace only their own files, so a shared file could be
//! written atomically by its first writer alone. Each user's watcher and `envctl gpu
//! clear` write their own file (whole, through `files::write_atomically`, readable by
//! all); readers merge every user's file, and a clear (its time) covers the Xids any
//! user recorded before it.
//!
//! A file is believed only when it is a regular file owned by the uid its name carries;
//! anything else (a link, a FIFO, a file named for another user) was planted and is named,
//! never read. Each is read through `untrusted`, size-capped. What a record can do is
//! bounded: at worst it keeps a GPU out of envctl's placement, which any user of the host
//! could also do by holding the GPU.
//!
//! # When a record ends
//!
//! Each record carries the boot id (`/proc/sys/kernel/random/boot_id`): a record of
//! another boot is ignored, so a reboot clears every GPU (and `/run/lock` is a tmpfs,
//! emptied at boot anyway). A GPU reset (`nvidia-smi -r`) leaves nothing NVML can show
//! (no reset count, no reset time), so it is not guessed from the GPU's answers: after a
//! reset, `envctl gpu clear` says the GPU is sound again.

use std::path::{Path, PathBuf};

use envctl_core::checks::health::{HealthRecord, SourcedRecord};

/// The start of every record's file name, before the uid.
const PREFIX: &str = "envctl-gpu-health.";
const SUFFIX: &str = ".json";

/// The most a record may weigh (64 GPUs × 32 Xids stay far under it).
const LIMIT: u64 = 1 << 20;

/// Where the kernel says which boot this is.
pub const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// Why the record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum GpuHealthFileError {
    #[error("cannot read which boot this is ({path}): {source}")]
    Boot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the GPU health record {path}: {why}")]
    Read { path: PathBuf, why: String },
    #[error("cannot write the GPU health record {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: envctl_core::files::WriteError,
    },
}

/// This boot's id.
pub fn boot_id() -> Result<String, GpuHealthFileError> {
    std::fs::read_to_string(BOOT_ID)
        .map(|text| text.trim().to_string())
        .map_err(|source| GpuHealthFileError::Boot {
            path: PathBuf::from(BOOT_ID),
            source,
        })
}

/// The folder the records lie in: the placement lock's.
fn folder_of(lock: &Path) -> &Path {
    lock.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The record file of user `uid`, beside the lock `lock`.
pub fn path_of(lock: &Path, uid: u32) -> PathBuf {
    folder_of(lock).join(format!("{PREFIX}{uid}{SUFFIX}"))
}

/// This process's uid: the owner of `/proc/self` (its effective uid, the one its files
/// are made with, which is the name its record must carry).
pub fn my_uid() -> Result<u32, GpuHealthFileError> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self")
        .map(|metadata| metadata.uid())
        .map_err(|error| GpuHealthFileError::Read {
            path: PathBuf::from("/proc/self"),
            why: format!("cannot tell this process's uid: {error}"),
        })
}

/// Every user's record beside `lock`, and what was found there and not believed (each a
/// sentence naming the file).
#[derive(Debug, Default)]
pub struct Records {
    pub records: Vec<SourcedRecord>,
    pub ignored: Vec<String>,
}

/// Reads every record beside `lock`. A folder that does not exist holds none.
pub fn read_all(lock: &Path) -> Records {
    use std::os::unix::fs::MetadataExt as _;
    let folder = folder_of(lock);
    let mut found = Records::default();
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return found,
        Err(error) => {
            found.ignored.push(format!(
                "cannot list {} for GPU health records: {error}",
                folder.display()
            ));
            return found;
        }
    };
    let mut paths: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let uid = name
                .strip_prefix(PREFIX)?
                .strip_suffix(SUFFIX)?
                .parse()
                .ok()?;
            Some((uid, entry.path()))
        })
        .collect();
    paths.sort();
    for (uid, path) in paths {
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            // Replaced meanwhile by its owner: the next read sees the new one.
            Err(_) => continue,
        };
        if !metadata.file_type().is_file() || metadata.uid() != uid {
            found.ignored.push(format!(
                "ignoring {}: it is {} owned by uid {}, not the regular file of uid {uid} envctl writes",
                path.display(),
                envctl_core::files::kind_of(metadata.file_type()),
                metadata.uid()
            ));
            continue;
        }
        match envctl_core::untrusted::read_json::<HealthRecord>(&path, LIMIT) {
            Ok(Some(record)) => found.records.push(SourcedRecord {
                owner: format!("uid {uid} ({})", super::user::name_of_uid_here(uid)),
                record,
            }),
            Ok(None) => {}
            Err(why) => found
                .ignored
                .push(format!("ignoring {}: {why}", path.display())),
        }
    }
    found
}

/// Changes this user's record beside `lock` with `change`, as of boot `boot_id` (a record
/// of another boot starts empty), and writes it whole.
pub fn update(
    lock: &Path,
    boot_id: &str,
    change: impl FnOnce(&mut HealthRecord),
) -> Result<(), GpuHealthFileError> {
    let path = path_of(lock, my_uid()?);
    let record = match envctl_core::untrusted::read_json::<HealthRecord>(&path, LIMIT) {
        Ok(Some(record)) => record.for_boot(boot_id),
        Ok(None) => HealthRecord::new(boot_id),
        // Only this user writes it, so what cannot be read (cut short by a full disk) is
        // replaced; a planted file is refused by the write itself (not a regular file).
        Err(_) => HealthRecord::new(boot_id),
    };
    let mut record = record;
    change(&mut record);
    let bytes = serde_json::to_vec_pretty(&record).map_err(|error| GpuHealthFileError::Read {
        path: path.clone(),
        why: error.to_string(),
    })?;
    envctl_core::files::write_atomically(&path, &bytes, envctl_core::files::Existing::Replace)
        .map_err(|source| GpuHealthFileError::Write { path, source })
}

/// `at` in milliseconds since the epoch (negative before it).
pub fn milliseconds(at: std::time::SystemTime) -> i64 {
    match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// Why container `id` (main process `pid`) can no longer open NVIDIA's device nodes: its
/// cgroup v1 `devices.list` lost their rules (`checks::health::gpu_nodes_denied`), as
/// `systemctl daemon-reload` does under the systemd cgroup driver. `None` when the rules
/// let it, and where this host cannot tell: cgroup v2 keeps device rules in an eBPF
/// program no file shows, and a PID that is not the container's here (another machine's
/// daemon, another PID namespace) says nothing.
pub fn gpu_nodes_denied(proc_root: &Path, id: &str, pid: u32) -> Option<String> {
    let text = super::cgroup::read_process_cgroup(proc_root, pid).ok()?;
    if !super::cgroup::container_id_candidates(&text)
        .iter()
        .any(|candidate| candidate == id)
    {
        return None;
    }
    let path = super::cgroup::parse_process_cgroups(&text)
        .v1
        .get("devices")?
        .clone();
    let mounts = std::fs::read_to_string(proc_root.join("self/mountinfo")).ok()?;
    let (point, root) = devices_mount(&mounts)?;
    let relative = path
        .strip_prefix(root.trim_end_matches('/'))
        .unwrap_or(&path)
        .trim_start_matches('/');
    let list = std::fs::read_to_string(point.join(relative).join("devices.list")).ok()?;
    envctl_core::checks::health::gpu_nodes_denied(&list)
}

/// The v1 `devices` hierarchy's mount point and root, from a `mountinfo` text.
fn devices_mount(mountinfo: &str) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let (kind, _, options) = (after.next()?, after.next()?, after.next()?);
        if kind != "cgroup" || !options.split(',').any(|option| option == "devices") {
            return None;
        }
        Some((PathBuf::from(fields.get(4)?), fields.get(3)?.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_per_user_beside_the_lock_and_a_planted_one_is_named_not_read() {
        let folder = tempfile::tempdir().unwrap();
        let lock = folder.path().join("gpus.lock");
        update(&lock, "boot-a", |record| {
            record.add_xid("GPU-two", 2, 79, 1_000);
        })
        .unwrap();
        let path = path_of(&lock, my_uid().unwrap());
        assert!(path.exists());
        let read = read_all(&lock);
        assert!(read.ignored.is_empty(), "{:?}", read.ignored);
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.records[0].record.gpus[0].xids[0].xid, 79);
        // Another boot's record is dropped at the next write.
        update(&lock, "boot-b", |record| {
            record.add_xid("GPU-one", 1, 43, 2_000)
        })
        .unwrap();
        let read = read_all(&lock);
        assert_eq!(read.records[0].record.boot_id, "boot-b");
        assert_eq!(read.records[0].record.gpus.len(), 1);
        // A file named for another uid than its owner's, and a link: planted.
        let other = my_uid().unwrap().wrapping_add(4242);
        std::fs::write(path_of(&lock, other), b"{}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", path_of(&lock, other + 1)).unwrap();
        let read = read_all(&lock);
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.ignored.len(), 2, "{:?}", read.ignored);
        assert!(
            read.ignored
                .iter()
                .any(|said| said.contains("a symbolic link")),
            "{:?}",
            read.ignored
        );
    }

    #[test]
    fn this_boot_has_an_id() {
        assert!(!boot_id().unwrap().is_empty());
    }
}
