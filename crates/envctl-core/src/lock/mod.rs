//! `envctl.lock`: image tags pinned to registry digests so a team runs the same bytes.
//! The model, its TOML form, the tag-family rules of `outdated`, and the atomic write.

pub mod family;
pub mod file;

use serde::{Deserialize, Serialize};

use crate::profile::image::ImageReference;

/// The lock file's name, in the project folder (next to `./envctl/`).
pub const LOCK_FILE: &str = "envctl.lock";

/// The whole lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    #[serde(default, rename = "image")]
    pub images: Vec<LockedImage>,
}

/// One profile's image, pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedImage {
    pub profile: String,
    /// The reference as the profile writes it (`pytorch/pytorch:2.8.0-…`).
    pub image: String,
    /// `sha256:…` of the manifest the tag pointed to when locked.
    pub digest: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// `linux/amd64`: the image's platform; for a multi-platform image (the digest is its
    /// index's) every platform the index serves, `linux/amd64, linux/arm64`.
    pub platform: String,
}

impl LockFile {
    pub const VERSION: u32 = 1;

    pub fn entry(&self, profile: &str) -> Option<&LockedImage> {
        self.images.iter().find(|image| image.profile == profile)
    }

    /// Adds or replaces the entry of `locked.profile`; entries stay sorted by profile.
    pub fn upsert(&mut self, locked: LockedImage) {
        self.images.retain(|image| image.profile != locked.profile);
        self.images.push(locked);
        self.images
            .sort_by(|first, second| first.profile.cmp(&second.profile));
    }

    /// The lock in `text`, or what is wrong with it by place: the message never quotes the
    /// file's own text (it may be anything a planted link reached), only its key names.
    pub fn parse(text: &str) -> Result<LockFile, String> {
        const WORDS: [&str; 6] = ["version", "image", "profile", "digest", "date", "platform"];
        let lock: LockFile = toml::from_str(text).map_err(|error| {
            let message = crate::untrusted::redacted(error.message(), &WORDS);
            match error.span() {
                Some(span) => {
                    let (line, column) = crate::untrusted::line_and_column(text, span.start);
                    format!("line {line}, column {column}: {message}")
                }
                None => message,
            }
        })?;
        if lock.version != Self::VERSION {
            return Err(format!(
                "lock file version {} is not {} (written by another envctl?)",
                lock.version,
                Self::VERSION
            ));
        }
        Ok(lock)
    }

    /// The file's text. A serialisation failure is its own error: never a lock file of
    /// its header alone, which would read as "nothing pinned".
    pub fn render(&self) -> Result<String, toml::ser::Error> {
        let mut text = String::from(
            "# envctl.lock: image tags pinned to digests by `envctl lock`. Commit it.\n",
        );
        text.push_str(&toml::to_string(self)?);
        Ok(text)
    }
}

/// How a profile's image relates to its lock entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState<'a> {
    /// No entry for the profile.
    Missing,
    /// The entry was made for another image reference: the profile moved on since.
    Stale {
        locked_image: &'a str,
    },
    Current(&'a LockedImage),
}

pub fn state<'a>(lock: &'a LockFile, profile: &str, image: &str) -> LockState<'a> {
    match lock.entry(profile) {
        None => LockState::Missing,
        Some(entry) if entry.image != image => LockState::Stale {
            locked_image: &entry.image,
        },
        Some(entry) => LockState::Current(entry),
    }
}

/// Whether `text` is a `sha256:` digest as registries write it (64 lower-case hex digits):
/// the only kind of pin `up`, the exports and doctor accept.
pub fn is_sha256_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    })
}

/// `repo:tag@sha256:…`: the reference that pulls exactly the locked bytes.
pub fn pinned_reference(image: &str, digest: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    format!("{without_digest}@{digest}")
}

/// Whether a `RepoDigests` entry (`name@sha256:…`) belongs to `image`'s repository,
/// compared in their canonical forms (`busybox` is `docker.io/library/busybox`). A name
/// that is no image reference belongs to no repository.
pub fn repo_digest_matches(repo_digest: &str, image_name: &str) -> bool {
    let canonical_name = |name: &str| {
        name.parse::<ImageReference>()
            .map(|reference| reference.canonical().name())
    };
    repo_digest.split_once('@').is_some_and(|(name, _)| {
        match (canonical_name(name), canonical_name(image_name)) {
            (Ok(found), Ok(wanted)) => found == wanted,
            _ => false,
        }
    })
}

/// The pin `lock` writes for an image, from the digests the engine recorded for its
/// repository at pull (`RepoDigests`) and what the registry serves for the tag now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// The registry's digest for the tag, which the local image carries: the same pin
    /// whichever engine pulled it.
    Registry(String),
    /// The registry could not be asked; the one digest the engine recorded at pull.
    Recorded {
        digest: String,
        registry_error: String,
    },
}

/// Why no digest can be pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinRefusal {
    /// The local image has no digest of its repository: built, imported or loaded here.
    NoRegistryDigest,
    /// The registry serves another digest for the tag than the local image carries: the
    /// tag moved since the pull (or the engine recorded a digest of its own).
    Moved {
        registry: String,
        local: Vec<String>,
    },
    /// The registry could not be asked and the engine recorded several digests.
    Ambiguous {
        local: Vec<String>,
        registry_error: String,
    },
}

/// The one rule of `lock`: a pin is a digest the registry answers for the tag. Right
/// after a pull (`fresh_pull`) the registry's digest is the image just pulled, whatever
/// the engine recorded (Podman may record a digest of its own, which the registry does
/// not know); otherwise the local image must carry it. Only when the registry cannot be
/// asked does the engine's record stand in, if it is one digest.
pub fn choose_pin(
    local: &[String],
    registry: Result<String, String>,
    fresh_pull: bool,
) -> Result<Pin, PinRefusal> {
    match registry {
        Ok(digest) if local.contains(&digest) => Ok(Pin::Registry(digest)),
        Ok(_) if local.is_empty() => Err(PinRefusal::NoRegistryDigest),
        Ok(digest) if fresh_pull => Ok(Pin::Registry(digest)),
        Ok(digest) => Err(PinRefusal::Moved {
            registry: digest,
            local: local.to_vec(),
        }),
        Err(registry_error) => match local {
            [] => Err(PinRefusal::NoRegistryDigest),
            [digest] => Ok(Pin::Recorded {
                digest: digest.clone(),
                registry_error,
            }),
            several => Err(PinRefusal::Ambiguous {
                local: several.to_vec(),
                registry_error,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(profile: &str) -> LockedImage {
        LockedImage {
            profile: profile.into(),
            image: "busybox:1.36".into(),
            digest: format!("sha256:{}", "a".repeat(64)),
            date: "2026-11-29".into(),
            platform: "linux/amd64".into(),
        }
    }

    #[test]
    fn round_trips_and_stays_sorted() {
        let mut lock = LockFile {
            version: 1,
            images: Vec::new(),
        };
        lock.upsert(entry("b"));
        lock.upsert(entry("a"));
        lock.upsert(entry("b"));
        assert_eq!(
            lock.images
                .iter()
                .map(|image| image.profile.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(LockFile::parse(&lock.render().unwrap()), Ok(lock));
        assert!(LockFile::parse("version = 2\n").is_err());
        assert!(LockFile::parse("version = 1\nextra = 1\n").is_err());
    }

    #[test]
    fn states_and_references() {
        let lock = LockFile {
            version: 1,
            images: vec![entry("p")],
        };
        assert_eq!(state(&lock, "q", "busybox:1.36"), LockState::Missing);
        assert!(matches!(
            state(&lock, "p", "busybox:1.37"),
            LockState::Stale { .. }
        ));
        assert!(matches!(
            state(&lock, "p", "busybox:1.36"),
            LockState::Current(_)
        ));
        assert_eq!(
            pinned_reference("busybox:1.36", "sha256:x"),
            "busybox:1.36@sha256:x"
        );
        assert!(repo_digest_matches(
            "busybox@sha256:x",
            "docker.io/library/busybox"
        ));
        assert!(repo_digest_matches(
            "127.0.0.1:5000/team/x@sha256:y",
            "127.0.0.1:5000/team/x"
        ));
        assert!(!repo_digest_matches("other@sha256:y", "busybox"));
        // Docker Hub's aliases, and Podman's `localhost/` for images built locally.
        assert!(repo_digest_matches(
            "index.docker.io/library/busybox@sha256:x",
            "busybox"
        ));
        assert!(repo_digest_matches("localhost/x@sha256:y", "localhost/x"));
        assert!(!repo_digest_matches("localhost/x@sha256:y", "x"));
        assert!(!repo_digest_matches("not a name@sha256:y", "busybox"));
    }

    #[test]
    fn a_pin_is_what_the_registry_serves() {
        let (a, b) = ("sha256:a".to_string(), "sha256:b".to_string());
        assert_eq!(
            choose_pin(&[b.clone(), a.clone()], Ok(a.clone()), false),
            Ok(Pin::Registry(a.clone()))
        );
        // Podman's own digest beside none of the registry's, right after a pull.
        assert_eq!(
            choose_pin(std::slice::from_ref(&b), Ok(a.clone()), true),
            Ok(Pin::Registry(a.clone()))
        );
        assert_eq!(
            choose_pin(std::slice::from_ref(&b), Ok(a.clone()), false),
            Err(PinRefusal::Moved {
                registry: a.clone(),
                local: vec![b.clone()]
            })
        );
        assert_eq!(
            choose_pin(&[], Ok(a.clone()), true),
            Err(PinRefusal::NoRegistryDigest)
        );
        assert_eq!(
            choose_pin(std::slice::from_ref(&a), Err("offline".into()), false),
            Ok(Pin::Recorded {
                digest: a.clone(),
                registry_error: "offline".into()
            })
        );
        assert!(matches!(
            choose_pin(&[a, b], Err("offline".into()), false),
            Err(PinRefusal::Ambiguous { .. })
        ));
        assert_eq!(
            choose_pin(&[], Err("offline".into()), false),
            Err(PinRefusal::NoRegistryDigest)
        );
    }
}
