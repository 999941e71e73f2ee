//! The host-wide lock around GPU placement: one `up` at a time chooses GPUs and creates
//! its container, so two launches never pick the same free GPU.
//!
//! # Where, and with which permissions
//!
//! `/run/lock/envctl-gpus.lock` by default (`ENVCTL_GPU_LOCK` names another file):
//! - **One file per host**, not per engine: Docker and Podman on one host hand out the
//!   same GPUs, and every user of the host must meet the same lock.
//! - **`/run/lock`** is the FHS place for lock files. It is a tmpfs that every user may
//!   write (mode 1777 on Debian and Ubuntu), cleared at boot, so a lock never outlives
//!   the processes that could hold it; the sticky bit keeps one user from deleting
//!   another's file.
//! - **Any user may take it**: it is opened read-only when it exists (`flock(2)` needs no
//!   write access), and made mode 0666 when created. The file holds nothing, only `flock`
//!   is used, and the kernel releases it when its holder exits, even on a crash or
//!   `kill -9`.
//! - **Opened without following links** and only when it is a regular file: in a folder
//!   every user can write, another user's symlink must not make envctl open something else.
//!
//! Anyone may hold it as long as they like, so the wait is bounded ([`WAIT`]) and the error
//! names the file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};

/// The lock file when `ENVCTL_GPU_LOCK` does not name one.
pub const DEFAULT_PATH: &str = "/run/lock/envctl-gpus.lock";

/// How long `up` waits for another `up` to finish placing (a create takes ~20 ms; a pull
/// is never done under the lock).
pub const WAIT: Duration = Duration::from_secs(30);

/// How often a waiting `up` tries again.
const RETRY: Duration = Duration::from_millis(10);

/// The lock, held until dropped (closing the file releases it).
#[derive(Debug)]
pub struct GpuLock {
    _file: std::os::fd::OwnedFd,
    pub path: PathBuf,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum GpuLockError {
    #[error("cannot open the GPU placement lock {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the GPU placement lock {path} is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("another envctl has held the GPU placement lock {path} for {seconds} s")]
    Busy { path: PathBuf, seconds: u64 },
}

impl GpuLockError {
    pub fn hint(&self) -> String {
        match self {
            GpuLockError::Open { path, .. } | GpuLockError::NotAFile { path } => format!(
                "the lock keeps two `up`s from taking the same GPU; `ENVCTL_GPU_LOCK` names another file (now {})",
                path.display()
            ),
            GpuLockError::Busy { path, .. } => format!(
                "`fuser -v {}` shows which process holds it; it is released when that process ends",
                path.display()
            ),
        }
    }
}

/// Takes the lock at `path`, waiting up to [`WAIT`]. Blocking: call it where a thread
/// may sleep (it sleeps [`RETRY`] between tries).
pub fn acquire(path: &Path) -> Result<GpuLock, GpuLockError> {
    let open = |flags: OFlags| {
        rustix::fs::open(
            path,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::from_raw_mode(0o666),
        )
    };
    // `flock` needs only an open descriptor, not write access: another user's lock file
    // is opened read-only, so a mode the umask narrowed never locks anyone out.
    let (file, created) = match open(OFlags::CREATE | OFlags::EXCL | OFlags::RDWR) {
        Ok(file) => (file, true),
        Err(rustix::io::Errno::EXIST) => (
            open(OFlags::RDONLY).map_err(|error| GpuLockError::Open {
                path: path.to_path_buf(),
                source: error.into(),
            })?,
            false,
        ),
        Err(error) => {
            return Err(GpuLockError::Open {
                path: path.to_path_buf(),
                source: error.into(),
            });
        }
    };
    let stat = rustix::fs::fstat(&file).map_err(|error| GpuLockError::Open {
        path: path.to_path_buf(),
        source: error.into(),
    })?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(GpuLockError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    if created {
        // The umask took bits off 0666; give them back, so the file reads as what it is,
        // a lock for everyone. Nothing depends on it: the others open it read-only.
        let _ = rustix::fs::fchmod(&file, Mode::from_raw_mode(0o666));
    }
    let started = Instant::now();
    loop {
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(GpuLock {
                    _file: file,
                    path: path.to_path_buf(),
                });
            }
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR)
                if started.elapsed() < WAIT =>
            {
                std::thread::sleep(RETRY);
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(GpuLockError::Busy {
                    path: path.to_path_buf(),
                    seconds: WAIT.as_secs(),
                });
            }
            Err(error) => {
                return Err(GpuLockError::Open {
                    path: path.to_path_buf(),
                    source: error.into(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn one_holder_at_a_time_and_any_user_may_open_it() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gpus.lock");
        let held = acquire(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        // A second descriptor (as another process would have) cannot take it meanwhile.
        let other = rustix::fs::open(&path, OFlags::RDWR, Mode::empty()).unwrap();
        assert_eq!(
            rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        drop(held);
        rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).unwrap();
    }

    #[test]
    fn an_existing_lock_file_is_opened_read_only_and_still_locks() {
        // The existing-file path opens read-only (whoever runs the test): that descriptor
        // takes the exclusive lock and keeps others out, whatever the file's mode.
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gpus.lock");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let held = acquire(&path).unwrap();
        let other = rustix::fs::open(&path, OFlags::RDONLY, Mode::empty()).unwrap();
        assert_eq!(
            rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        drop(held);
    }

    #[test]
    fn links_and_folders_are_refused() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("elsewhere");
        std::fs::write(&target, "keep me").unwrap();
        let link = folder.path().join("gpus.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(acquire(&link), Err(GpuLockError::Open { .. })));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        let error = acquire(folder.path()).unwrap_err();
        assert!(
            matches!(
                error,
                GpuLockError::Open { .. } | GpuLockError::NotAFile { .. }
            ),
            "{error:?}"
        );
    }
}
