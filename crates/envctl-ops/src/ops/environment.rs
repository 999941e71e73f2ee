//! The resolved environment: a profile, the user's overrides (`up -e/-p/-v`), `envctl.lock`
//! and what this host decides (`gpus = "optional"`) turned into the one container create
//! body. `up`, `up --dry-run` and every export read it, so they describe the same
//! container: the image `up` would run pinned by the lock is the image every export names.
//!
//! The lock rule lives here once ([`lock_decision`]): a lock entry for the profile's
//! current image pins it by digest; an entry for another image (the profile moved on), a
//! digest that is not `sha256:`, or a lock file that cannot be read leaves the tag, and
//! the caller decides how loudly ([`LockPolicy`]).

use std::path::{Path, PathBuf};

use crate::container_plan::{self, CreateBody, MissingSource, Overrides, SpecContext, SpecError};
use crate::error::Error;
use crate::facts::gpu::GpuFacts;
use crate::lock::file::LockReadError;
use crate::lock::{LockFile, LockState};
use crate::profile::ResolvedProfile;
use crate::profile::image::ImageReference;
use crate::profile::model::GpuRequest;

/// Where the container will run, which decides two things: whether `gpus = "optional"`
/// asks for GPUs, and whether a missing bind source is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On this host (`up`, `--dry-run`, `export --to docker-run`): `gpus_reachable` when
    /// a container here can be given GPUs (for `up`: NVML sees GPUs and the daemon can
    /// hand them over); a missing bind source is refused.
    ThisHost { gpus_reachable: bool },
    /// On another machine (compose, Kubernetes, devcontainer files): as on a host with
    /// GPUs; a bind source missing here is reported, not refused.
    Elsewhere,
}

/// How a lock that cannot pin the image is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockPolicy {
    /// `up` and its dry run: a lock file that cannot be read is an error (the user must
    /// know the pin is not applied); a missing or stale entry keeps the tag quietly.
    Use,
    /// `up --locked`: anything but a current pin is an error.
    Require,
    /// Exports: every reason the tag is kept becomes a notice.
    Report,
}

/// What the lock says for one profile's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockDecision {
    /// Run `reference` (`name:tag@sha256:…`): the digest the lock pins.
    Pinned { reference: String, digest: String },
    /// No lock file, no entry for the profile, or the profile already names a digest.
    NotLocked,
    /// The lock's entry is for another image: the profile changed since `envctl lock`.
    Stale { locked_image: String },
    /// The entry's digest is not a `sha256:` digest.
    NotADigest { digest: String },
}

/// A profile resolved for one run: the create body and how it came about.
#[derive(Debug, Clone)]
pub struct ResolvedEnvironment {
    pub resolved: ResolvedProfile,
    /// The create body, its image pinned when the lock pins it.
    pub body: CreateBody,
    /// The GPUs the body asks for (`optional` decided by the placement's host), from
    /// which placement and the engine's form of the request start.
    pub gpus: container_plan::gpus::Gpus,
    /// The digest pinned, when one is.
    pub locked_digest: Option<String>,
    /// Why the lock did not pin the image, for [`LockPolicy::Report`].
    pub lock_notice: Option<String>,
    /// Bind sources missing on this machine, for [`Placement::Elsewhere`].
    pub missing_sources: Vec<MissingSource>,
}

/// What the resolution reads besides the profile.
pub struct EnvironmentRequest<'a> {
    pub overrides: Overrides,
    pub placement: Placement,
    pub lock_policy: LockPolicy,
    /// `envctl.lock` as read from the working directory ([`read_lock`]).
    pub lock: Result<Option<LockFile>, LockReadError>,
    /// Absolute: relative bind sources resolve against it.
    pub working_directory: PathBuf,
    /// `~` bind sources resolve against it.
    pub home: Option<PathBuf>,
    /// Whether a host path exists (the command asks the file system, tests a closure).
    pub path_exists: &'a dyn Fn(&Path) -> bool,
}

/// What NVML says on this host, asked only when the profile's container depends on it
/// (`gpus = "optional"`); `up` hands the same answer to its preflight.
pub fn host_gpus(resolved: &ResolvedProfile, nvml_library: Option<&Path>) -> Option<GpuFacts> {
    (resolved.profile.gpus == GpuRequest::Optional).then(|| crate::gpu::gather(nvml_library))
}

impl Placement {
    /// This host, with GPUs when NVML found some ([`host_gpus`]).
    pub fn this_host(gpu_facts: Option<&GpuFacts>) -> Placement {
        Placement::ThisHost {
            gpus_reachable: gpu_facts
                .and_then(GpuFacts::loaded)
                .is_some_and(|facts| !facts.gpus.is_empty()),
        }
    }
}

/// `envctl.lock` in the working directory, read once per command. Named relatively (the
/// working directory is the process's), so messages say `envctl.lock` as the user knows it.
pub fn read_lock() -> Result<Option<LockFile>, LockReadError> {
    crate::lock::file::read(Path::new(crate::lock::LOCK_FILE))
}

/// Builds the environment `request` asks for from `resolved`.
pub fn resolve(
    resolved: ResolvedProfile,
    request: EnvironmentRequest<'_>,
) -> Result<ResolvedEnvironment, Error> {
    let EnvironmentRequest {
        overrides,
        placement,
        lock_policy,
        lock,
        working_directory,
        home,
        path_exists,
    } = request;
    let host_has_gpus = match placement {
        Placement::ThisHost { gpus_reachable } => gpus_reachable,
        Placement::Elsewhere => true,
    };
    let mut spec_context = SpecContext {
        working_directory,
        home,
        host_has_gpus,
        overrides,
        path_exists,
    };
    let mut missing_sources = Vec::new();
    let mut body = match container_plan::create_body(&resolved, &spec_context) {
        Err(SpecError::MissingBindSources { missing }) if placement == Placement::Elsewhere => {
            missing_sources = missing;
            spec_context.path_exists = &everything_exists;
            container_plan::create_body(&resolved, &spec_context)?
        }
        other => other?,
    };
    let (locked_digest, lock_notice) = apply_lock(&mut body, &resolved, lock, lock_policy)?;
    // The GPUs asked, decided once: the body's request is their `--gpus` form, and
    // placement and the engine's form start from this value, never from the body.
    let gpus = container_plan::gpus::Gpus::asked(
        spec_context
            .overrides
            .gpus
            .as_ref()
            .unwrap_or(&resolved.profile.gpus),
        host_has_gpus,
    );
    Ok(ResolvedEnvironment {
        resolved,
        body,
        gpus,
        locked_digest,
        lock_notice,
        missing_sources,
    })
}

/// For an environment that runs elsewhere: its bind sources are that machine's business.
fn everything_exists(_: &Path) -> bool {
    true
}

/// What `--locked` refusals suggest.
const PIN_HINT: &str = "run `envctl lock` to pin the profile's image, and commit envctl.lock";

/// Pins `body.image` as the lock says, under the request's policy: the digest pinned, and
/// for [`LockPolicy::Report`] why none was.
fn apply_lock(
    body: &mut CreateBody,
    resolved: &ResolvedProfile,
    lock: Result<Option<LockFile>, LockReadError>,
    policy: LockPolicy,
) -> Result<(Option<String>, Option<String>), Error> {
    let profile = &resolved.profile.name;
    let image = &resolved.profile.image;
    let lock = match (lock, policy) {
        (Ok(lock), _) => lock,
        // A lock file that is not read at all (a FIFO, a device, a link out of the
        // project) is planted, not stale: no export goes on past it as if it were absent.
        (Err(error @ LockReadError::Refused { .. }), _) => return Err(Error::LockFile(error)),
        (Err(error), LockPolicy::Report) => {
            return Ok((
                None,
                Some(format!(
                    "{}; the image keeps its tag",
                    crate::error::error_chain(&error)
                )),
            ));
        }
        (Err(error), LockPolicy::Use | LockPolicy::Require) => {
            return Err(Error::LockFile(error));
        }
    };
    let lock = lock.as_ref();
    let decision = lock.map_or(LockDecision::NotLocked, |lock| {
        lock_decision(lock, profile, image)
    });
    let written = image.to_string();
    match (decision, policy) {
        (LockDecision::Pinned { reference, digest }, _) => {
            body.image = reference;
            Ok((Some(digest), None))
        }
        (LockDecision::NotLocked, LockPolicy::Require) if lock.is_none() => Err(Error::Lock {
            message: "`--locked` but there is no envctl.lock here".into(),
            hint: PIN_HINT.into(),
        }),
        (LockDecision::NotLocked, LockPolicy::Require) => Err(Error::Lock {
            message: format!("`--locked` but envctl.lock has no entry for profile `{profile}`"),
            hint: PIN_HINT.into(),
        }),
        (LockDecision::Stale { locked_image }, LockPolicy::Require) => Err(Error::Lock {
            message: format!(
                "`--locked` but envctl.lock pins `{locked_image}` while profile `{profile}` now uses `{written}`"
            ),
            hint: PIN_HINT.into(),
        }),
        // A hand-edited entry is invalid input, like a lock file that does not parse.
        (LockDecision::NotADigest { digest }, LockPolicy::Use | LockPolicy::Require) => {
            Err(Error::LockFile(LockReadError::Invalid {
                path: crate::lock::LOCK_FILE.into(),
                message: format!(
                    "profile `{profile}` is pinned to `{digest}`, which is not a `sha256:` digest"
                ),
            }))
        }
        (LockDecision::NotLocked, _) => Ok((None, None)),
        (LockDecision::Stale { .. }, LockPolicy::Use) => Ok((None, None)),
        (LockDecision::Stale { locked_image }, LockPolicy::Report) => Ok((
            None,
            Some(format!(
                "envctl.lock pins `{locked_image}` for this profile, but the profile now names `{written}`; the image keeps its tag (run `envctl lock {profile}` to pin the new one)"
            )),
        )),
        (LockDecision::NotADigest { digest }, LockPolicy::Report) => Ok((
            None,
            Some(format!(
                "envctl.lock has `{digest}` for this profile, which is not a `sha256:` digest; the image keeps its tag"
            )),
        )),
    }
}

/// The lock rule: what `lock` says for profile `profile` whose profile names `image`.
pub fn lock_decision(lock: &LockFile, profile: &str, image: &ImageReference) -> LockDecision {
    if image.digest.is_some() {
        return LockDecision::NotLocked;
    }
    let written = image.to_string();
    match crate::lock::state(lock, profile, &written) {
        LockState::Missing => LockDecision::NotLocked,
        LockState::Stale { locked_image } => LockDecision::Stale {
            locked_image: locked_image.to_string(),
        },
        // The tag stays for the reader; the digest decides what is pulled.
        LockState::Current(entry) if crate::lock::is_sha256_digest(&entry.digest) => {
            LockDecision::Pinned {
                reference: crate::lock::pinned_reference(&written, &entry.digest),
                digest: entry.digest.clone(),
            }
        }
        LockState::Current(entry) => LockDecision::NotADigest {
            digest: entry.digest.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn image(text: &str) -> ImageReference {
        text.parse()
            .unwrap_or_else(|error: String| panic!("{error}"))
    }

    fn lock(entries: &[(&str, &str, &str)]) -> LockFile {
        let mut text = String::from("version = 1\n");
        for (profile, image, digest) in entries {
            text.push_str(&format!(
                "[[image]]\nprofile = \"{profile}\"\nimage = \"{image}\"\ndigest = \"{digest}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
            ));
        }
        LockFile::parse(&text).unwrap()
    }

    #[test]
    fn pins_the_profile_image() {
        let lock = lock(&[("p", "pytorch/pytorch:2.8", DIGEST), ("other", "x", DIGEST)]);
        assert_eq!(
            lock_decision(&lock, "p", &image("pytorch/pytorch:2.8")),
            LockDecision::Pinned {
                reference: format!("pytorch/pytorch:2.8@{DIGEST}"),
                digest: DIGEST.into()
            }
        );
        assert_eq!(
            lock_decision(&lock, "q", &image("pytorch/pytorch:2.8")),
            LockDecision::NotLocked
        );
        assert_eq!(
            lock_decision(&lock, "p", &image("pytorch/pytorch:2.9")),
            LockDecision::Stale {
                locked_image: "pytorch/pytorch:2.8".into()
            }
        );
        // A profile that names a digest is pinned already.
        assert_eq!(
            lock_decision(&lock, "p", &image(&format!("pytorch/pytorch@{DIGEST}"))),
            LockDecision::NotLocked
        );
    }

    #[test]
    fn a_digest_must_be_sha256() {
        let lock = lock(&[("p", "a:1", "latest")]);
        assert_eq!(
            lock_decision(&lock, "p", &image("a:1")),
            LockDecision::NotADigest {
                digest: "latest".into()
            }
        );
        assert!(!crate::lock::is_sha256_digest("sha256:ABC"));
        assert!(crate::lock::is_sha256_digest(DIGEST));
    }
}
