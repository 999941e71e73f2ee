//! Reading a profile file without trusting it: size limit, no FIFOs or devices, binary
//! data and invalid UTF-8 reported with their place instead of a crash or a hang.
//!
//! The file type is judged on the opened descriptor (`fstat`), not on the path before the
//! open: a profile swapped for a FIFO between a check and the open is still refused. The
//! open itself never blocks (`O_NONBLOCK`: opening a FIFO without a writer returns at once)
//! and never makes a terminal ours (`O_NOCTTY`).

use std::fs::{File, FileType, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::diagnostic::{Diagnostic, SourceText, file_diagnostic};

/// Profiles larger than this are refused: no real profile comes near it.
pub const MAXIMUM_PROFILE_BYTES: u64 = 1024 * 1024;

/// Reads `path` as profile text, or explains why it cannot be one.
pub fn read_profile_text(path: &Path, shown: &str) -> Result<String, Diagnostic> {
    read_profile_text_verified(path, shown, |_| Ok(()))
}

/// Reads `path` as profile text; `verify` judges the opened regular file (for example
/// where it really lies) before a byte of it is read.
pub fn read_profile_text_verified(
    path: &Path,
    shown: &str,
    verify: impl FnOnce(&File) -> Result<(), Diagnostic>,
) -> Result<String, Diagnostic> {
    // A first look at the path spares opening a device at all (opening some has effects);
    // the descriptor's own type below is what decides.
    let metadata = std::fs::metadata(path).map_err(|error| {
        file_diagnostic(
            shown,
            format!("cannot read the profile: {error}"),
            read_hint(&error),
        )
    })?;
    if !metadata.is_file() {
        return Err(not_regular(shown, metadata.file_type()));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|error| {
            file_diagnostic(
                shown,
                format!("cannot open the profile: {error}"),
                read_hint(&error),
            )
        })?;
    let opened = file.metadata().map_err(|error| {
        file_diagnostic(shown, format!("cannot read the profile: {error}"), None)
    })?;
    if !opened.is_file() {
        return Err(not_regular(shown, opened.file_type()));
    }
    if opened.len() > MAXIMUM_PROFILE_BYTES {
        return Err(too_large(shown, opened.len()));
    }
    verify(&file)?;
    let mut bytes = Vec::new();
    // Read one byte past the limit, in case the file grows while it is read.
    file.take(MAXIMUM_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| {
            file_diagnostic(shown, format!("cannot read the profile: {error}"), None)
        })?;
    if bytes.len() as u64 > MAXIMUM_PROFILE_BYTES {
        return Err(too_large(shown, bytes.len() as u64));
    }
    decode_profile_bytes(bytes, shown)
}

/// Where an opened file really lies, as the kernel knows it (Linux `/proc/self/fd`);
/// `None` where that is not available.
pub fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd as _;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// What a file that is not a regular file is, in words (one vocabulary: `files::kind_of`).
pub use crate::files::kind_of;

fn not_regular(shown: &str, file_type: FileType) -> Diagnostic {
    file_diagnostic(
        shown,
        format!(
            "`{shown}` is {}, not a regular file; a profile must be a regular file",
            kind_of(file_type)
        ),
        Some("name a profile's `.toml` file, or a profile by its name".into()),
    )
}

/// Turns bytes into text, naming the line and column of the first invalid byte.
pub fn decode_profile_bytes(bytes: Vec<u8>, shown: &str) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|error| {
        let valid_up_to = error.utf8_error().valid_up_to();
        let valid = String::from_utf8_lossy(&error.as_bytes()[..valid_up_to]).into_owned();
        let mut diagnostic = SourceText::new(shown.to_string(), &valid).diagnostic(
            valid_up_to..valid_up_to,
            "the file is not valid UTF-8 (binary data or another encoding)".into(),
            Some("save the profile as UTF-8 text".into()),
        );
        diagnostic.source_line = None;
        diagnostic
    })
}

fn too_large(shown: &str, bytes: u64) -> Diagnostic {
    file_diagnostic(
        shown,
        format!(
            "the file is {bytes} bytes; profiles are limited to {MAXIMUM_PROFILE_BYTES} bytes (1 MiB)"
        ),
        Some("check that the path names a profile and not a data file".into()),
    )
}

fn read_hint(error: &std::io::Error) -> Option<String> {
    match error.kind() {
        std::io::ErrorKind::PermissionDenied => {
            Some("check the file's permissions with `ls -l`".into())
        }
        std::io::ErrorKind::NotFound => {
            Some("check the path; `envctl profiles list` shows the profiles envctl finds".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_regular_files_are_named_by_what_they_are() {
        let folder = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let directory = folder.path().join("folder.toml");
        std::fs::create_dir(&directory).unwrap_or_else(|error| panic!("{error}"));
        let fifo = folder.path().join("fifo.toml");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap_or_else(|error| panic!("{error}"));
        for (path, kind) in [
            (directory.as_path(), "a folder"),
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/null"), "a character device"),
        ] {
            let shown = path.display().to_string();
            let diagnostic = read_profile_text(path, &shown)
                .err()
                .unwrap_or_else(|| panic!("{shown} was read"));
            assert_eq!(
                diagnostic.message,
                format!(
                    "`{shown}` is {kind}, not a regular file; a profile must be a regular file"
                )
            );
        }
    }
}
