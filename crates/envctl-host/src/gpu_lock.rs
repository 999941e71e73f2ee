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
//! Anyone may hold it as long as they like, so the wait is bounded ([`WAIT`]), ends at the
//! first termination signal, and the error names the file. Anything else at the path (a
//! link, a folder, a FIFO, a file nobody may read) was planted, and is named as such with
//! the admin's fix: pointing `ENVCTL_GPU_LOCK` elsewhere would only drop the exclusion.

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
    /// Something envctl never makes sits where the lock belongs: in a folder every user
    /// may write, someone planted it, and every GPU `up` on the host stops there.
    #[error(
        "the GPU placement lock {path} is {what}, not the empty regular file envctl makes: someone else put it there"
    )]
    Hostile {
        path: PathBuf,
        what: String,
        /// Who owns what stands there (`uid 1001 (mallory)`), when it can be told: the
        /// person to ask.
        owner: Option<String>,
    },
    /// Nothing stands at the path, and its folder does not let this user make the lock:
    /// no one planted anything (it was called "someone else's").
    #[error(
        "cannot make the GPU placement lock {path}: this user may not create files in {}",
        folder.display()
    )]
    FolderNotWritable { path: PathBuf, folder: PathBuf },
    #[error("another envctl has held the GPU placement lock {path} for {seconds} s")]
    Busy { path: PathBuf, seconds: u64 },
    #[error("interrupted while waiting for the GPU placement lock {path}")]
    Interrupted { path: PathBuf, code: u8 },
    /// The daemon's own placement lock (`engine::daemon_placement`) stayed taken.
    #[error("another envctl ({}) has held the GPU placement lock of the daemon at {endpoint} for {seconds} s", holder.as_deref().unwrap_or("unnamed"))]
    DaemonBusy {
        endpoint: String,
        seconds: u64,
        holder: Option<String>,
    },
    /// This `up` held the daemon's lock so long before its create that a waiter may take
    /// it as a dead holder's: it gave the lock back and created nothing.
    #[error(
        "placing on the daemon at {endpoint} took {seconds} s under its GPU placement lock, too long to create safely; the lock was given back"
    )]
    DaemonSlow { endpoint: String, seconds: u64 },
    #[error("interrupted while waiting for the GPU placement lock of the daemon at {endpoint}")]
    DaemonInterrupted { endpoint: String, code: u8 },
    /// A container envctl did not make has the daemon lock's name: someone's, so it is
    /// never removed as a dead holder's lock, and no `up` on that daemon can place.
    #[error(
        "a container named `{name}` that envctl did not make holds the GPU placement lock's name on the daemon at {endpoint}"
    )]
    DaemonPlanted { endpoint: String, name: String },
}

impl GpuLockError {
    pub fn hint(&self) -> String {
        match self {
            GpuLockError::Open { path, .. } => format!(
                "the lock keeps two `up`s from taking the same GPU; check that {} can be created and read by every user",
                path.display()
            ),
            // Not "point ENVCTL_GPU_LOCK elsewhere": one user doing so silently drops the
            // exclusion between that user's `up`s and everyone else's.
            GpuLockError::Hostile { path, owner, .. } => format!(
                "ask the host's admin to remove it (`sudo rm -rf {}`; {}); envctl makes a fresh one at the next `up`",
                envctl_core::container_plan::shell_quote(&path.to_string_lossy()),
                match owner {
                    Some(owner) => format!("it belongs to {owner}"),
                    None => format!(
                        "`ls -la {}` shows who made it",
                        envctl_core::container_plan::shell_quote(&path.to_string_lossy())
                    ),
                },
            ),
            GpuLockError::FolderNotWritable { folder, .. } => format!(
                "ask the host's admin to let every user create it there (`sudo chmod 1777 {}`, as /tmp is), or to make the lock once for all (`sudo install -m 666 /dev/null LOCK`)",
                envctl_core::container_plan::shell_quote(&folder.to_string_lossy())
            ),
            GpuLockError::Busy { path, .. } => format!(
                "`fuser -v {}` shows which process holds it; it is released when that process ends",
                envctl_core::container_plan::shell_quote(&path.to_string_lossy())
            ),
            GpuLockError::Interrupted { .. } | GpuLockError::DaemonInterrupted { .. } => {
                "nothing was placed or created".into()
            }
            GpuLockError::DaemonPlanted { name, .. } => format!(
                "ask its owner to remove or rename it (`docker inspect {name}` shows it); envctl never removes a container it did not make"
            ),
            GpuLockError::DaemonSlow { .. } => {
                "nothing was created; run the same `envctl up` again".into()
            }
            GpuLockError::DaemonBusy { .. } => {
                "another `up` is placing on that daemon; it is released when that `up` has created its container".into()
            }
        }
    }
}

/// What stands at `path` when it is not a lock envctl could open, in words: `a symbolic
/// link`, `a FIFO (named pipe)`, `a regular file this user cannot read (mode 000, owner
/// uid 1001)`.
fn described(path: &Path, fallback: &str) -> String {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_file() => format!(
            "a regular file this user cannot open (mode {:03o}, owner uid {})",
            metadata.mode() & 0o7777,
            metadata.uid()
        ),
        Ok(metadata) => envctl_core::files::kind_of(metadata.file_type()).to_string(),
        Err(_) => fallback.to_string(),
    }
}

/// The create of the lock refused with `error`: with nothing at `path`, a refused
/// permission is the folder's (no one planted anything); else what stands there is said.
fn create_refused(
    path: &Path,
    error: rustix::io::Errno,
    opened: impl Fn(rustix::io::Errno) -> GpuLockError,
) -> GpuLockError {
    let nothing_there = std::fs::symlink_metadata(path)
        .is_err_and(|missing| missing.kind() == std::io::ErrorKind::NotFound);
    match error {
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM if nothing_there => {
            GpuLockError::FolderNotWritable {
                path: path.to_path_buf(),
                folder: path.parent().unwrap_or(Path::new("/")).to_path_buf(),
            }
        }
        error => opened(error),
    }
}

/// Who owns what stands at `path` (not followed): `uid 1001 (mallory)`.
fn owner_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let uid = std::fs::symlink_metadata(path).ok()?.uid();
    Some(format!(
        "uid {uid} ({})",
        crate::user::name_of_uid_here(uid)
    ))
}

/// Takes the lock at `path`, waiting up to [`WAIT`]; gives up at once when a termination
/// signal arrives ([`crate::interrupt`]). Blocking: call it where a thread may sleep (it
/// sleeps [`RETRY`] between tries).
pub fn acquire(path: &Path) -> Result<GpuLock, GpuLockError> {
    acquire_until(path, crate::interrupt::received)
}

/// [`acquire`], giving up when `signalled` gives the exit code of a signal.
fn acquire_until(path: &Path, signalled: impl Fn() -> Option<u8>) -> Result<GpuLock, GpuLockError> {
    let started = Instant::now();
    loop {
        if let Some(code) = signalled() {
            return Err(GpuLockError::Interrupted {
                path: path.to_path_buf(),
                code,
            });
        }
        if let Some(lock) = try_acquire(path)? {
            return Ok(lock);
        }
        if started.elapsed() >= WAIT {
            return Err(GpuLockError::Busy {
                path: path.to_path_buf(),
                seconds: WAIT.as_secs(),
            });
        }
        std::thread::sleep(RETRY);
    }
}

/// One try at the lock: `Ok(None)` while another process holds it. For a caller that
/// waits in its own way (saying so after a second, selecting on signals).
pub fn try_acquire(path: &Path) -> Result<Option<GpuLock>, GpuLockError> {
    let open = |flags: OFlags| {
        rustix::fs::open(
            path,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::from_raw_mode(0o666),
        )
    };
    let opened = |error: rustix::io::Errno| match error {
        // `O_NOFOLLOW` at a link, or a file this user may not even read: planted.
        rustix::io::Errno::LOOP | rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => {
            GpuLockError::Hostile {
                path: path.to_path_buf(),
                what: described(path, "unreadable"),
                owner: owner_of(path),
            }
        }
        error => GpuLockError::Open {
            path: path.to_path_buf(),
            source: error.into(),
        },
    };
    // `flock` needs only an open descriptor, not write access: another user's lock file
    // is opened read-only, so a mode the umask narrowed never locks anyone out.
    let (file, created) = match open(OFlags::CREATE | OFlags::EXCL | OFlags::RDWR) {
        Ok(file) => (file, true),
        Err(rustix::io::Errno::EXIST) => (open(OFlags::RDONLY).map_err(opened)?, false),
        Err(error) => return Err(create_refused(path, error, opened)),
    };
    let stat = rustix::fs::fstat(&file).map_err(|error| GpuLockError::Open {
        path: path.to_path_buf(),
        source: error.into(),
    })?;
    let file_type = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    if file_type != rustix::fs::FileType::RegularFile {
        return Err(GpuLockError::Hostile {
            path: path.to_path_buf(),
            what: described(path, "not a regular file"),
            owner: owner_of(path),
        });
    }
    if created {
        // The umask took bits off 0666; give them back, so the file reads as what it is,
        // a lock for everyone. Nothing depends on it: the others open it read-only.
        let _ = rustix::fs::fchmod(&file, Mode::from_raw_mode(0o666));
    }
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(GpuLock {
            _file: file,
            path: path.to_path_buf(),
        })),
        Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => Ok(None),
        Err(error) => Err(GpuLockError::Open {
            path: path.to_path_buf(),
            source: error.into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 40: a folder the user may not write, with nothing in it, is the folder's
    /// fault, said with the admin's command; something standing there is still named.
    #[test]
    fn a_lock_folder_this_user_cannot_write_is_not_called_planted() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gpu.lock");
        let planted = |errno| GpuLockError::Hostile {
            path: path.clone(),
            what: format!("{errno:?}"),
            owner: None,
        };
        let refused = create_refused(&path, rustix::io::Errno::ACCESS, planted);
        assert!(
            matches!(&refused, GpuLockError::FolderNotWritable { folder: at, .. } if at == folder.path()),
            "{refused:?}"
        );
        assert!(!refused.to_string().contains("someone else"), "{refused}");
        assert!(
            refused.hint().contains("sudo chmod 1777"),
            "{}",
            refused.hint()
        );
        std::fs::write(&path, "").unwrap();
        let planted = |errno| GpuLockError::Hostile {
            path: path.clone(),
            what: format!("{errno:?}"),
            owner: None,
        };
        assert!(matches!(
            create_refused(&path, rustix::io::Errno::ACCESS, planted),
            GpuLockError::Hostile { .. }
        ));
    }
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
    fn planted_files_are_named_as_planted_with_the_admins_fix() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("elsewhere");
        std::fs::write(&target, "keep me").unwrap();
        let link = folder.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = folder.path().join("dangling.lock");
        std::os::unix::fs::symlink(folder.path().join("nothing"), &dangling).unwrap();
        let fifo = folder.path().join("fifo.lock");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::RUSR | Mode::WUSR).unwrap();
        for (path, what) in [
            (link.as_path(), "a symbolic link"),
            (dangling.as_path(), "a symbolic link"),
            (fifo.as_path(), "a FIFO (named pipe)"),
            (folder.path(), "a folder"),
        ] {
            let error = acquire(path).unwrap_err();
            match &error {
                GpuLockError::Hostile { what: found, .. } => assert_eq!(found, what),
                other => panic!("{}: {other:?}", path.display()),
            }
            assert!(error.to_string().contains("someone else put it there"));
            let hint = error.hint();
            assert!(hint.contains("sudo rm -rf"), "{hint}");
            // Who put it there is said: the person to ask.
            let uid =
                std::os::unix::fs::MetadataExt::uid(&std::fs::symlink_metadata(path).unwrap());
            assert!(
                hint.contains(&format!("it belongs to uid {uid} (")),
                "{hint}"
            );
            assert!(!hint.contains("ENVCTL_GPU_LOCK"), "{hint}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(
            !folder.path().join("nothing").exists(),
            "no file made through a link"
        );
    }

    #[test]
    fn a_signal_ends_the_wait() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gpus.lock");
        let _held = acquire(&path).unwrap();
        let started = Instant::now();
        let error = acquire_until(&path, || Some(130)).unwrap_err();
        assert!(
            matches!(error, GpuLockError::Interrupted { code: 130, .. }),
            "{error:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
