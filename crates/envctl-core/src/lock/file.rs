//! Reading and writing `envctl.lock`. Writes go to a temporary file in the same folder and
//! are renamed over the old one, so a full disk or a kill never leaves half a lock file.
//!
//! The lock file comes with the repository, so it is read as a file envctl did not write
//! ([`crate::untrusted`]): a regular file of at most [`MAXIMUM_LOCK_BYTES`] lying in the
//! project folder, and a parse error names the place, never the text found there.

use std::path::Path;

use super::LockFile;

/// Lock files larger than this are refused: one entry is about 250 bytes.
pub const MAXIMUM_LOCK_BYTES: u64 = 1024 * 1024;

/// Why an existing lock file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LockReadError {
    #[error("cannot read `{path}`")]
    Unreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Not read at all: a FIFO, a device, a link out of the project, too large.
    #[error("`{path}` was not read")]
    Refused {
        path: String,
        #[source]
        source: crate::untrusted::ReadError,
    },
    #[error("`{path}` is not a valid envctl lock file: {message}")]
    Invalid { path: String, message: String },
}

impl LockReadError {
    pub fn hint(&self) -> String {
        match self {
            LockReadError::Unreadable { .. } => "check the file's permissions".into(),
            // Whoever made the repository made this file: it is not to be read, and `envctl
            // lock` writes a regular one in its place once it is gone.
            LockReadError::Refused { path, .. } => format!(
                "envctl.lock must be a regular file in the project folder; look at it with `ls -l {}`, remove it, and run `envctl lock` to write one",
                crate::container_plan::shell_quote(path)
            ),
            // Not "run `envctl lock`": it reads the same file and would fail the same way.
            LockReadError::Invalid { .. } => {
                "fix it (`git diff envctl.lock` shows what changed), or delete it and run `envctl lock` to write a new one".into()
            }
        }
    }
}

/// The lock file at `path`; `Ok(None)` when there is none.
pub fn read(path: &Path) -> Result<Option<LockFile>, LockReadError> {
    let shown = || path.display().to_string();
    let bytes =
        match crate::untrusted::read(path, MAXIMUM_LOCK_BYTES, crate::untrusted::Named::Found) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(crate::untrusted::ReadError::Io(source)) => {
                return Err(LockReadError::Unreadable {
                    path: shown(),
                    source,
                });
            }
            Err(source) => {
                return Err(LockReadError::Refused {
                    path: shown(),
                    source,
                });
            }
        };
    let text = String::from_utf8(bytes).map_err(|error| LockReadError::Invalid {
        path: shown(),
        message: format!(
            "it is not UTF-8 text (an invalid byte at offset {})",
            error.utf8_error().valid_up_to()
        ),
    })?;
    LockFile::parse(&text)
        .map(Some)
        .map_err(|message| LockReadError::Invalid {
            path: shown(),
            message,
        })
}

/// Writes `text` to `path` atomically: the old file stays intact if anything fails.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    crate::files::write_atomically(path, text.as_bytes(), crate::files::Existing::Replace).map_err(
        |error| match error {
            crate::files::WriteError::Io(error) => error,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
        },
    )
}

/// Why [`update`] did not write the lock file.
#[derive(Debug, thiserror::Error)]
pub enum LockUpdateError {
    #[error(transparent)]
    Read(#[from] LockReadError),
    #[error("cannot take the lock on `{folder}` for envctl.lock")]
    Guard {
        folder: String,
        #[source]
        source: std::io::Error,
    },
    #[error("another process has held the lock on {folder} for {seconds} s")]
    Busy { folder: String, seconds: u64 },
    #[error("cannot write `{path}`")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The lock could not be written as TOML: nothing is written.
    #[error("cannot write `{path}`: the lock could not be rendered as TOML")]
    Render {
        path: String,
        #[source]
        source: toml::ser::Error,
    },
}

/// The advisory lock (`flock`) on the folder of `envctl.lock`, held until dropped: two
/// `envctl lock` runs at once each keep the other's entries. The folder, not the file, is
/// locked because the write renames a new file over the old one, and a lock on the old
/// inode would not stop the next reader.
#[derive(Debug)]
pub struct FolderGuard {
    _folder: std::fs::File,
}

/// One try at the folder's lock for `path`: `Ok(None)` while another process holds it.
/// Never waits: whoever holds it may hold it forever (any process that can open the
/// folder can), so the caller bounds the wait, says it is waiting, and stops at a signal.
pub fn try_guard(path: &Path) -> Result<Option<FolderGuard>, LockUpdateError> {
    let folder = folder_of(path);
    let guard_failed = |source| LockUpdateError::Guard {
        folder: folder.display().to_string(),
        source,
    };
    let guard = std::fs::File::open(folder).map_err(guard_failed)?;
    match rustix::fs::flock(&guard, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(FolderGuard { _folder: guard })),
        Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => Ok(None),
        Err(errno) => Err(guard_failed(errno.into())),
    }
}

fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Reads the lock file at `path` (a new one when there is none), lets `change` edit it and
/// writes it back, under `guard` (taken with [`try_guard`] for the same path).
pub fn update<T>(
    _guard: &FolderGuard,
    path: &Path,
    change: impl FnOnce(&mut LockFile) -> T,
) -> Result<T, LockUpdateError> {
    let before = read(path)?;
    let mut lock = before.clone().unwrap_or(LockFile {
        version: LockFile::VERSION,
        images: Vec::new(),
    });
    let result = change(&mut lock);
    // Nothing changed: the file is left as it is (not even rewritten).
    if before.as_ref() != Some(&lock) {
        let text = lock.render().map_err(|source| LockUpdateError::Render {
            path: path.display().to_string(),
            source,
        })?;
        write_atomically(path, &text).map_err(|source| LockUpdateError::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_atomically_and_keeps_the_old_file_on_failure() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("envctl.lock");
        write_atomically(&path, "version = 1\n").unwrap();
        assert_eq!(
            read(&path).unwrap(),
            Some(LockFile {
                version: 1,
                images: Vec::new()
            })
        );
        // A folder where the lock should be cannot be replaced by a file: the write fails
        // and nothing is left behind.
        let blocked = folder.path().join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("keep"), "x").unwrap();
        assert!(write_atomically(&blocked, "version = 1\n").is_err());
        assert!(blocked.join("keep").exists());
        let leftovers: Vec<_> = std::fs::read_dir(folder.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        assert_eq!(read(&folder.path().join("missing.lock")).unwrap(), None);
    }
}
