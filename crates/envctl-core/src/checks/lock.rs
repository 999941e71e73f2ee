//! Lock drift: does the profile's image still match what `envctl.lock` pins?
//!
//! Finding id: `profile.lock`.

use super::Finding;
use crate::facts::engine::ImageFacts;
use crate::lock::LockState;

/// A finding when the lock and the image disagree; none when there is nothing to say.
pub fn drift(state: &LockState<'_>, image: Option<&ImageFacts>) -> Option<Finding> {
    match state {
        LockState::Missing => None,
        LockState::Stale { locked_image } => Some(
            Finding::warn(
                "profile.lock",
                format!(
                    "envctl.lock pins `{locked_image}`, but the profile now uses another image"
                ),
            )
            .with_hint("run `envctl lock` and commit envctl.lock"),
        ),
        LockState::Current(entry) if !crate::lock::is_sha256_digest(&entry.digest) => Some(
            Finding::fail(
                "profile.lock",
                format!(
                    "envctl.lock has `{}` for this profile, which is not a `sha256:` digest: `up` refuses it",
                    entry.digest
                ),
            )
            .with_hint(format!(
                "fix the entry, or run `envctl lock {}` to write it anew",
                crate::container_plan::shell_quote(&entry.profile)
            )),
        ),
        LockState::Current(entry) => {
            let digests = &image?.repo_digests;
            if digests.is_empty() || digests.iter().any(|digest| digest.ends_with(&entry.digest)) {
                return Some(Finding::pass(
                    "profile.lock",
                    format!("locked to {}", short(&entry.digest)),
                ));
            }
            Some(
                Finding::warn(
                    "profile.lock",
                    format!(
                        "the local `{}` is not the locked {}: `up` will pull the locked digest",
                        entry.image,
                        short(&entry.digest)
                    ),
                )
                // Plain `lock PROFILE` asks the registry and moves this profile's pin only
                // (`lock` alone re-pins every profile of the folder).
                .with_hint(format!(
                    "`envctl lock {}` moves the pin to what the tag points at now",
                    crate::container_plan::shell_quote(&entry.profile)
                )),
            )
        }
    }
}

fn short(digest: &str) -> String {
    digest.chars().take(19).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::lock::LockedImage;

    fn entry() -> LockedImage {
        LockedImage {
            profile: "p".into(),
            image: "x:1".into(),
            digest: format!("sha256:{}", "a".repeat(64)),
            date: String::new(),
            platform: String::new(),
        }
    }

    fn image(digests: &[&str]) -> ImageFacts {
        ImageFacts {
            reference: "x:1".into(),
            repo_digests: digests.iter().map(|digest| digest.to_string()).collect(),
            ..ImageFacts::default()
        }
    }

    #[test]
    fn each_state() {
        let locked = entry();
        assert!(drift(&LockState::Missing, None).is_none());
        assert_eq!(
            drift(
                &LockState::Stale {
                    locked_image: "x:0"
                },
                None
            )
            .unwrap()
            .status,
            Status::Warn
        );
        assert!(
            drift(&LockState::Current(&locked), None).is_none(),
            "image not pulled: nothing to compare"
        );
        assert_eq!(
            drift(
                &LockState::Current(&locked),
                Some(&image(&[&format!("x@sha256:{}", "a".repeat(64))]))
            )
            .unwrap()
            .status,
            Status::Pass
        );
        assert_eq!(
            drift(
                &LockState::Current(&locked),
                Some(&image(&[&format!("x@sha256:{}", "b".repeat(64))]))
            )
            .unwrap()
            .status,
            Status::Warn
        );
        let not_a_digest = LockedImage {
            digest: "latest".into(),
            ..entry()
        };
        let finding = drift(&LockState::Current(&not_a_digest), None).unwrap();
        assert_eq!(finding.status, Status::Fail);
        assert!(
            finding.message.contains("not a `sha256:` digest"),
            "{}",
            finding.message
        );
    }
}
