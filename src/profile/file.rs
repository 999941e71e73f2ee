//! Reading a profile file without trusting it: size limit, no FIFOs or devices, binary
//! data and invalid UTF-8 reported with their place instead of a crash or a hang.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::diagnostic::{Diagnostic, SourceText, file_diagnostic};

/// Profiles larger than this are refused: no real profile comes near it.
pub const MAXIMUM_PROFILE_BYTES: u64 = 1024 * 1024;

/// Reads `path` as profile text, or explains why it cannot be one.
pub fn read_profile_text(path: &Path, shown: &str) -> Result<String, Diagnostic> {
    let metadata = std::fs::metadata(path).map_err(|error| {
        file_diagnostic(
            shown,
            format!("cannot read the profile: {error}"),
            read_hint(&error),
        )
    })?;
    if !metadata.is_file() {
        return Err(file_diagnostic(
            shown,
            "not a regular file (a directory, device or pipe cannot be a profile)".into(),
            None,
        ));
    }
    if metadata.len() > MAXIMUM_PROFILE_BYTES {
        return Err(too_large(shown, metadata.len()));
    }
    let file = File::open(path).map_err(|error| {
        file_diagnostic(
            shown,
            format!("cannot open the profile: {error}"),
            read_hint(&error),
        )
    })?;
    let mut bytes = Vec::new();
    // Read one byte past the limit, in case the file grew since `metadata`.
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
