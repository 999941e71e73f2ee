//! Reading a file envctl did not write in this run: a cloned repository's `envctl.lock`,
//! the host policy, the user's matrix override, CDI specs, caches other tools or users can
//! reach. One reader for all of them, because each one read with a plain `read_to_string`
//! was a way in: a lock file linked to `/proc/self/environ` printed every variable in the
//! parse error, one linked to `/dev/zero` grew without end, and a FIFO hung the command.
//!
//! The rules, each judged on the opened descriptor where a path check could be raced:
//! - only a regular file is read (a FIFO, a device, a socket or a folder is named as what
//!   it is), and the path is looked at before opening so a device is never opened at all;
//! - the open never blocks (`O_NONBLOCK`) and never takes a terminal (`O_NOCTTY`);
//! - a file envctl found by itself ([`Named::Found`]) must really lie in the folder it was
//!   found in: a symbolic link out of it (to `~/.git-credentials`, `/etc/shadow`) is
//!   refused, where one the user typed ([`Named::ByTheUser`]) is followed as typed;
//! - at most `limit` bytes, checked before and while reading (a file may grow).
//!
//! What such a file says is never echoed when envctl found it: callers word their parse
//! errors by place (line and column) and [`redacted`] text.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

/// Whether the user named the file (on the command line, in a variable of their own) or
/// envctl found it where it looks (the project folder, `/etc`, the config folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    ByTheUser,
    Found,
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("it is {kind}, not a regular file")]
    NotRegular { kind: &'static str },
    #[error(
        "it is a symbolic link out of its folder (to `{}`); envctl reads only files that lie in the folder it found them in",
        target.display()
    )]
    LinksOut { target: PathBuf },
    /// `seen`: its size when opened, or how much was read when it grew past the limit.
    #[error("it is {seen} bytes, more than the {limit} allowed")]
    TooLarge { limit: u64, seen: u64 },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The bytes of `path` under this module's rules, or `Ok(None)` when there is no such file
/// (a dangling link included: nothing is there to read).
pub fn read(path: &Path, limit: u64, named: Named) -> Result<Option<Vec<u8>>, ReadError> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata.file_type().is_symlink(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    // The folder a found file must lie in, as the kernel resolves it.
    let folder = match named {
        Named::ByTheUser => None,
        Named::Found => Some(std::fs::canonicalize(folder_of(path))?),
    };
    if link && let Some(folder) = &folder {
        match std::fs::canonicalize(path) {
            Ok(target) if !target.starts_with(folder) => {
                return Err(ReadError::LinksOut { target });
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error.into()),
        }
    }
    // A first look spares opening a device at all (opening some has effects); the
    // descriptor's own type below is what decides.
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    if !metadata.is_file() {
        return Err(ReadError::NotRegular {
            kind: crate::files::kind_of(metadata.file_type()),
        });
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(ReadError::NotRegular {
            kind: crate::files::kind_of(opened.file_type()),
        });
    }
    // The name may have been swapped for a link between the look and the open.
    if let Some(folder) = &folder
        && let Some(target) = crate::profile::file::opened_path(&file)
        && !target.starts_with(folder)
    {
        return Err(ReadError::LinksOut { target });
    }
    if opened.len() > limit {
        return Err(ReadError::TooLarge {
            limit,
            seen: opened.len(),
        });
    }
    let mut bytes = Vec::new();
    // One byte past the limit, in case the file grows while it is read.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            limit,
            seen: bytes.len() as u64,
        });
    }
    Ok(Some(bytes))
}

/// A JSON file envctl found (a cache of its own, which another user or tool may have
/// replaced with a FIFO, a link or anything else): `Ok(None)` when there is none; why it
/// cannot be used otherwise, in words that quote none of its text.
pub fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    limit: u64,
) -> Result<Option<T>, String> {
    let Some(bytes) =
        read(path, limit, Named::Found).map_err(|error| crate::text::error_chain(&error))?
    else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|error| {
        format!(
            "line {}, column {}: {}",
            error.line(),
            error.column(),
            redacted(&error.to_string(), &[])
        )
    })
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A parser's message about a file envctl found, with every quoted part (`` `…` `` or
/// `"…"`) that is not one of `known` (the format's own key names and punctuation) written
/// `…`: parsers quote the text they stopped at (`invalid type: string "hf_…"`, ``unknown
/// field `ghp_…` ``), and that text is the file's, which may be anything the link reached.
pub fn redacted(message: &str, known: &[&str]) -> String {
    let mut shown = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(['`', '"']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        shown.push_str(&rest[..=start]);
        let after = &rest[start + 1..];
        match after.find(quote) {
            Some(end) => {
                let quoted = &after[..end];
                if known.contains(&quoted) || quoted.chars().count() <= 1 {
                    shown.push_str(quoted);
                } else {
                    shown.push('…');
                }
                shown.push(quote);
                rest = &after[end + 1..];
            }
            None => {
                // An unclosed quote: whatever follows is the file's.
                shown.push('…');
                rest = "";
            }
        }
    }
    shown.push_str(rest);
    // Only the first line: parsers add the file's line below their message.
    shown.lines().next().unwrap_or_default().to_string()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
    }

    #[test]
    fn found_files_are_regular_bounded_and_stay_in_their_folder() {
        let folder = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("credentials");
        std::fs::write(&secret, "https://u:ghp_x@github.com\n").unwrap();
        let path = |name: &str| folder.path().join(name);
        std::fs::write(path("plain"), "version = 1\n").unwrap();
        std::os::unix::fs::symlink("plain", path("inside-link")).unwrap();
        std::os::unix::fs::symlink(&secret, path("outside-link")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", path("environ")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", path("zero")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("none"), path("dangling")).unwrap();
        fifo(&path("fifo"));
        std::fs::write(path("large"), vec![b'#'; 2048]).unwrap();

        let read = |name: &str, named| read(&path(name), 1024, named);
        assert_eq!(
            read("plain", Named::Found).unwrap().unwrap(),
            b"version = 1\n"
        );
        assert_eq!(
            read("inside-link", Named::Found).unwrap().unwrap(),
            b"version = 1\n"
        );
        assert!(read("missing", Named::Found).unwrap().is_none());
        assert!(read("dangling", Named::Found).unwrap().is_none());
        for name in ["outside-link", "environ"] {
            assert!(
                matches!(read(name, Named::Found), Err(ReadError::LinksOut { .. })),
                "{name}"
            );
        }
        // A file the user typed is read where it leads.
        assert!(read("outside-link", Named::ByTheUser).unwrap().is_some());
        for (name, kind) in [
            ("fifo", "a FIFO (named pipe)"),
            ("zero", "a character device"),
        ] {
            match read(name, Named::ByTheUser) {
                Err(ReadError::NotRegular { kind: found }) => assert_eq!(found, kind),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(matches!(
            read("large", Named::Found),
            Err(ReadError::TooLarge {
                limit: 1024,
                seen: 2048
            })
        ));
    }

    #[test]
    fn a_found_json_cache_is_read_by_the_same_rules() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("cache.json");
        assert_eq!(read_json::<serde_json::Value>(&path, 1024), Ok(None));
        fifo(&path);
        let started = std::time::Instant::now();
        let error = read_json::<serde_json::Value>(&path, 1024).unwrap_err();
        assert!(error.contains("FIFO"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "{\"a\": \"hf_cachesecret\" x}").unwrap();
        let error = read_json::<serde_json::Value>(&path, 1024).unwrap_err();
        assert!(!error.contains("hf_cachesecret"), "{error}");
        assert!(error.starts_with("line 1, column"), "{error}");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        assert_eq!(
            read_json::<serde_json::Value>(&path, 1024).unwrap(),
            Some(serde_json::json!({"a": 1}))
        );
    }

    #[test]
    fn messages_about_found_files_keep_no_quoted_text_of_theirs() {
        assert_eq!(
            redacted(
                "invalid type: string \"hf_secret\", expected u32\n1 | version = \"hf_secret\"",
                &["version"]
            ),
            "invalid type: string \"…\", expected u32"
        );
        assert_eq!(
            redacted(
                "unknown field `AWS_SECRET=x`, expected `version` or `image`",
                &["version", "image"]
            ),
            "unknown field `…`, expected `version` or `image`"
        );
        assert_eq!(redacted("expected `=`, `.`", &[]), "expected `=`, `.`");
        assert_eq!(redacted("unclosed \"abc", &[]), "unclosed \"…");
        assert_eq!(line_and_column("a\nbé c", 6), (2, 4));
    }
}
