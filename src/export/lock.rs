//! Reading `envctl.lock` for the Kubernetes export, which names the image by digest so
//! every node runs the same bytes.
//!
//! The format is `envctl lock`'s (`crate::lock::LockFile`): TOML with `version = 1` and
//! one `[[image]]` table per pinned image —
//!
//! ```toml
//! version = 1
//!
//! [[image]]
//! profile = "pytorch-2.8"
//! image = "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime"
//! digest = "sha256:…"
//! date = "2026-11-29"
//! platform = "linux/amd64"
//! ```
//!
//! The file is read by `crate::lock`, exactly as `envctl up` reads it, so the export and
//! `up` never disagree about what a lock pins.

use crate::lock::{LockFile, LockState};
use crate::profile::image::ImageReference;

/// What the lock file says about a profile's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockLookup {
    /// `name:tag@sha256:…` to run instead of the tag alone.
    Pinned(String),
    /// The lock has no entry for this profile (or the profile already names a digest).
    NotLocked,
    /// The lock cannot be used for this profile; the reason, for a notice.
    Unusable(String),
}

/// The reference to run for `profile_name` whose profile names `image`, from the text of
/// `envctl.lock`.
pub fn locked_image(lock_text: &str, profile_name: &str, image: &ImageReference) -> LockLookup {
    if image.digest.is_some() {
        return LockLookup::NotLocked;
    }
    let lock = match LockFile::parse(lock_text) {
        Ok(lock) => lock,
        Err(message) => {
            return LockLookup::Unusable(format!(
                "envctl.lock is not a valid envctl lock file ({message}); the image keeps its tag"
            ));
        }
    };
    let written = image.to_string();
    match crate::lock::state(&lock, profile_name, &written) {
        LockState::Missing => LockLookup::NotLocked,
        LockState::Stale { locked_image } => LockLookup::Unusable(format!(
            "envctl.lock pins `{locked_image}` for this profile, but the profile now names `{written}`; the image keeps its tag (run `envctl lock {profile_name}` to pin the new one)"
        )),
        // The tag stays for the reader; the digest decides what is pulled.
        LockState::Current(entry) if is_digest(&entry.digest) => {
            LockLookup::Pinned(crate::lock::pinned_reference(&written, &entry.digest))
        }
        LockState::Current(entry) => LockLookup::Unusable(format!(
            "envctl.lock has `{}` for this profile, which is not a `sha256:` digest; the image keeps its tag",
            entry.digest
        )),
    }
}

fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn image(text: &str) -> ImageReference {
        text.parse()
            .unwrap_or_else(|error: String| panic!("{error}"))
    }

    fn entry(profile: &str, image: &str, digest: &str) -> String {
        format!(
            "[[image]]\nprofile = \"{profile}\"\nimage = \"{image}\"\ndigest = \"{digest}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
        )
    }

    #[test]
    fn pins_the_profile_image() {
        let lock = format!(
            "version = 1\n{}{}",
            entry("p", "pytorch/pytorch:2.8", DIGEST),
            entry("other", "x", DIGEST)
        );
        assert_eq!(
            locked_image(&lock, "p", &image("pytorch/pytorch:2.8")),
            LockLookup::Pinned(format!("pytorch/pytorch:2.8@{DIGEST}"))
        );
        assert_eq!(
            locked_image(&lock, "q", &image("pytorch/pytorch:2.8")),
            LockLookup::NotLocked
        );
        assert!(matches!(
            locked_image(&lock, "p", &image("pytorch/pytorch:2.9")),
            LockLookup::Unusable(reason) if reason.contains("now names")
        ));
    }

    #[test]
    fn unusable_locks_say_why() {
        assert!(matches!(
            locked_image("not toml [", "p", &image("a:1")),
            LockLookup::Unusable(_)
        ));
        // What `envctl up` refuses, the export does not use either.
        let without_version = entry("p", "a:1", DIGEST);
        assert!(matches!(
            locked_image(&without_version, "p", &image("a:1")),
            LockLookup::Unusable(reason) if reason.contains("not a valid envctl lock file")
        ));
        let not_a_digest = format!("version = 1\n{}", entry("p", "a:1", "latest"));
        assert!(matches!(
            locked_image(&not_a_digest, "p", &image("a:1")),
            LockLookup::Unusable(reason) if reason.contains("not a `sha256:` digest")
        ));
    }
}
