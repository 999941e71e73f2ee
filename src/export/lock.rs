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
//! Only `profile`, `image`, `digest` (and `platform`, for a message) are read and unknown
//! keys are ignored, so the export keeps working while the lock format grows; this is the
//! one place here that knows the format.

use serde::Deserialize;

use crate::profile::image::ImageReference;

#[derive(Debug, Deserialize)]
struct LockFile {
    #[serde(default)]
    image: Vec<LockEntry>,
}

#[derive(Debug, Deserialize)]
struct LockEntry {
    profile: String,
    #[serde(default)]
    image: Option<String>,
    digest: String,
    #[serde(default)]
    platform: Option<String>,
}

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
    let lock: LockFile = match toml::from_str(lock_text) {
        Ok(lock) => lock,
        Err(error) => {
            return LockLookup::Unusable(format!(
                "envctl.lock cannot be read ({}); the image keeps its tag",
                error.message()
            ));
        }
    };
    let written = image.to_string();
    let entries: Vec<&LockEntry> = lock
        .image
        .iter()
        .filter(|entry| entry.profile == profile_name)
        .collect();
    if entries.is_empty() {
        return LockLookup::NotLocked;
    }
    let current: Vec<&&LockEntry> = entries
        .iter()
        .filter(|entry| {
            entry
                .image
                .as_deref()
                .is_none_or(|locked| locked == written)
        })
        .collect();
    if current.is_empty() {
        let locked = entries
            .first()
            .and_then(|entry| entry.image.clone())
            .unwrap_or_default();
        return LockLookup::Unusable(format!(
            "envctl.lock pins `{locked}` for this profile, but the profile now names `{written}`; the image keeps its tag (run `envctl lock {profile_name}` to pin the new one)"
        ));
    }
    let mut digests: Vec<&str> = current.iter().map(|entry| entry.digest.as_str()).collect();
    digests.sort_unstable();
    digests.dedup();
    match digests.as_slice() {
        // The tag stays for the reader; the digest decides what is pulled.
        [digest] if is_digest(digest) => LockLookup::Pinned(format!("{written}@{digest}")),
        [digest] => LockLookup::Unusable(format!(
            "envctl.lock has `{digest}` for this profile, which is not a `sha256:` digest; the image keeps its tag"
        )),
        _ => {
            let platforms: Vec<String> = current
                .iter()
                .map(|entry| entry.platform.clone().unwrap_or_else(|| "?".into()))
                .collect();
            LockLookup::Unusable(format!(
                "envctl.lock has one digest per platform for this profile ({}); a manifest cannot name one for every node, so the image keeps its tag",
                platforms.join(", ")
            ))
        }
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

    #[test]
    fn pins_the_profile_image() {
        let lock = format!(
            "[[image]]\nprofile = \"p\"\nimage = \"pytorch/pytorch:2.8\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n\n[[image]]\nprofile = \"other\"\nimage = \"x\"\ndigest = \"{DIGEST}\"\n"
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
        let two = format!(
            "[[image]]\nprofile = \"p\"\nimage = \"a:1\"\ndigest = \"{DIGEST}\"\nplatform = \"linux/amd64\"\n[[image]]\nprofile = \"p\"\nimage = \"a:1\"\ndigest = \"sha256:{}\"\nplatform = \"linux/arm64\"\n",
            "f".repeat(64)
        );
        assert!(matches!(
            locked_image(&two, "p", &image("a:1")),
            LockLookup::Unusable(reason) if reason.contains("linux/arm64")
        ));
    }
}
