//! Writing the files envctl is asked to write (`export -o`, `envctl.lock`,
//! `stats report -o`): whole or not at all, and never over anything but a regular file.
//!
//! The text goes to a temporary file created exclusively (`O_EXCL`, no symlink followed)
//! under an unpredictable name in the target's folder (the `tempfile` crate), is synced,
//! and is then renamed over the target, or hard-linked to it when an existing file must
//! not be replaced, so a reader never sees half a file and a name planted in the folder
//! beforehand is never written through. A target that exists and is not a regular file
//! (a device such as `/dev/null`, a FIFO, a folder, a symlink) is refused even with
//! `--force`: replacing it would break whatever relied on it.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// What to do when the target exists (and is a regular file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse: the user did not ask to replace it.
    Refuse,
    /// Replace it, keeping its permissions.
    Replace,
}

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("it exists")]
    Exists,
    #[error("it is {kind}, not a regular file")]
    NotRegular { kind: &'static str },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The permissions of a new file: `rw-r--r--`, as `File::create` under the usual umask
/// gives (`tempfile` makes its files `rw-------`, which would hide a committed
/// `envctl.lock` from the rest of the team).
const NEW_FILE_MODE: u32 = 0o644;

/// Writes `bytes` to `path` as a whole, following [`Existing`].
pub fn write_atomically(path: &Path, bytes: &[u8], existing: Existing) -> Result<(), WriteError> {
    use std::os::unix::fs::MetadataExt as _;
    let owner = std::fs::symlink_metadata(path)
        .ok()
        .filter(|metadata| metadata.file_type().is_file())
        .map(|metadata| (metadata.uid(), metadata.gid()));
    let mode = match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.file_type().is_file() => {
            return Err(WriteError::NotRegular {
                kind: kind_of(metadata.file_type()),
            });
        }
        Ok(_) if existing == Existing::Refuse => return Err(WriteError::Exists),
        // Set-uid, set-gid and sticky bits are not carried over, nor write access for
        // everyone: as root, replacing another user's file must not make a set-uid root
        // program or a root-owned file anyone can change.
        Ok(metadata) => metadata.permissions().mode() & 0o777 & !0o002,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => NEW_FILE_MODE,
        Err(error) => return Err(error.into()),
    };
    let folder = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // `-o deploy/job.yaml` in a fresh checkout: the folder is made, as `mkdir -p` would.
    std::fs::create_dir_all(folder)?;
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".envctl.tmp")
        .tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    temporary
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        keep_owner(temporary.as_file(), uid, gid)?;
    }
    temporary.as_file().sync_all()?;
    // A failed persist hands the temporary back; dropping it removes it.
    match existing {
        Existing::Replace => temporary
            .persist(path)
            .map(drop)
            .map_err(|error| error.error.into()),
        Existing::Refuse => match temporary.persist_noclobber(path) {
            Ok(_) => Ok(()),
            Err(error) if error.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(WriteError::Exists)
            }
            Err(error) => Err(error.error.into()),
        },
    }
}

/// Gives the new file the owner of the file it replaces, so that `--force` run as root
/// over a user's file leaves it theirs. Only root may give a file away: for anyone else
/// the kernel refuses (`EPERM`), and the file is theirs as any file they write.
fn keep_owner(file: &std::fs::File, uid: u32, gid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let made = file.metadata()?;
    if made.uid() == uid && made.gid() == gid {
        return Ok(());
    }
    match std::os::unix::fs::fchown(file, Some(uid), Some(gid)) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        other => other,
    }
}

pub fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Why [`open_regular`] did not open a file.
#[derive(Debug, thiserror::Error)]
pub enum OpenRefused {
    /// Something other than a regular file is there (a link with [`Links::Refuse`]).
    #[error("it is {kind}, not a regular file")]
    NotRegular { kind: &'static str },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Whether [`open_regular`] follows a symbolic link at the path's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A file the user named to read (`stats report FILE`): read where it leads.
    Follow,
    /// A file to create or append to: a link is refused, dangling or not.
    Refuse,
}

/// Opens `path` to append to it, creating it when missing, never through a link: a
/// recording another run may have begun.
pub fn open_for_appending(path: &Path) -> Result<std::fs::File, OpenRefused> {
    open_regular(
        std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true),
        path,
        Links::Refuse,
    )
}

/// Opens `path` to read it, following a link the user's path names ([`open_regular`]).
pub fn open_for_reading(path: &Path) -> Result<std::fs::File, OpenRefused> {
    open_regular(std::fs::OpenOptions::new().read(true), path, Links::Follow)
}

/// Opens `path` with `options` without blocking in `open(2)` (`O_NONBLOCK`: a FIFO with
/// no writer, or no reader, would wait there forever) and checks the opened descriptor,
/// not the name, so a file swapped after a check is caught: anything but a regular file
/// (a FIFO, a device such as `/dev/zero`, a socket, a folder) is refused. The one opener
/// for a file envctl appends to (a `stats --record` recording), which [`write_atomically`]
/// cannot write whole.
fn open_regular(
    options: &mut std::fs::OpenOptions,
    path: &Path,
    links: Links,
) -> Result<std::fs::File, OpenRefused> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = match links {
        Links::Follow => rustix::fs::OFlags::NONBLOCK,
        Links::Refuse => rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW,
    };
    let file = options
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            // `O_NOFOLLOW` on a link.
            Some(code)
                if code == rustix::io::Errno::LOOP.raw_os_error() && links == Links::Refuse =>
            {
                OpenRefused::NotRegular {
                    kind: "a symbolic link",
                }
            }
            // `open(2)` refuses a folder for writing before any check of ours can.
            Some(code) if code == rustix::io::Errno::ISDIR.raw_os_error() => {
                OpenRefused::NotRegular { kind: "a folder" }
            }
            _ => OpenRefused::Io(source),
        })?;
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(OpenRefused::NotRegular {
            kind: kind_of(file_type),
        });
    }
    // A regular file never blocks; the flag is cleared so that nothing later reads it.
    let flags = rustix::fs::fcntl_getfl(&file).map_err(std::io::Error::from)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
        .map_err(std::io::Error::from)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(folder: &Path) -> Vec<String> {
        std::fs::read_dir(folder)
            .unwrap()
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn writes_new_files_readable_by_the_team_and_refuses_or_replaces_existing_ones() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("out.yaml");
        write_atomically(&path, b"one", Existing::Refuse).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        assert!(matches!(
            write_atomically(&path, b"two", Existing::Refuse),
            Err(WriteError::Exists)
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&path, b"three", Existing::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a replaced file keeps its permissions");
        // …but not the special bits nor write access for everyone.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o6777)).unwrap();
        write_atomically(&path, b"four", Existing::Replace).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o775, "set-uid, set-gid and o+w are dropped");
        assert!(leftovers(folder.path()).is_empty());
    }

    #[test]
    fn never_replaces_what_is_not_a_regular_file() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        let link = folder.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let subfolder = folder.path().join("sub");
        std::fs::create_dir(&subfolder).unwrap();
        for (path, kind) in [
            (link.as_path(), "a symbolic link"),
            (subfolder.as_path(), "a folder"),
            (Path::new("/dev/null"), "a character device"),
        ] {
            match write_atomically(path, b"x", Existing::Replace) {
                Err(WriteError::NotRegular { kind: found }) => assert_eq!(found, kind),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(leftovers(folder.path()).is_empty());
    }

    #[test]
    fn a_planted_name_is_never_written_through() {
        // The old temporary names were `.NAME.envctl-PID.tmp`: plant every such name as a
        // symlink to a file that must survive; the write must still go to its target only.
        let folder = tempfile::tempdir().unwrap();
        let victim = folder.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let pid = std::process::id();
        for planted in [
            format!(".out.yaml.envctl-{pid}.tmp"),
            format!(".out.yaml.{pid}.tmp"),
        ] {
            std::os::unix::fs::symlink(&victim, folder.path().join(planted)).unwrap();
        }
        let path = folder.path().join("out.yaml");
        write_atomically(&path, b"new", Existing::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }
}
