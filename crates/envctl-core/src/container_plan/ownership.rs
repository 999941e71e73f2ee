//! Whose a container is. envctl acts on a container (`up` meets it, `--recreate`, `down`,
//! `exec`, `shell`, `logs`, the no-TARGET rule) only when it is envctl's and the user's
//! own; another user's is named as theirs and touched only when named with
//! `--other-user`, never by `--recreate`.
//!
//! # Labels are claims, not proof
//!
//! An image's `LABEL`s end up on every container made from it, so an image can carry
//! `envctl.profile=X` and make a plain `docker run` container look like envctl's. envctl
//! therefore reads a container's `envctl.*` labels against its image's
//! ([`proven_labels`]): a label whose value is the image's own was inherited, not set at
//! create, and is dropped; and when the container's [`RUN_LABEL`] (a random value each
//! `up` sets at create) is inherited or absent while the image carries `envctl.*` labels,
//! every `envctl.*` label is dropped. What is left is what a create set. The engine adapter
//! applies this to every container it reads, so each rule that asks "is it envctl's"
//! (a [`PROFILE_LABEL`]) asks the proven labels.
//!
//! # Labels against the daemon's facts
//!
//! Labels a create set are claims too: anyone with the daemon's socket can copy a user's
//! onto a container of their own. A container whose labels claim to be what envctl makes
//! of a profile now (its config hash, [`claims_current`]) is believed only where the
//! daemon's inspect of it agrees with the create body ([`daemon_facts::not_as_claimed`]):
//! otherwise it is an impostor ([`not_an_impostor`], [`OwnershipError::Impostor`]), named
//! with what differs, never started, exec'd into or called current. docs/identity.md says
//! what is compared and why an exact replica cannot be told apart.
//!
//! # The owner
//!
//! `up` records who the daemon's transport proves the user to be in [`IDENTITY_LABEL`]
//! (`facts::user::Identity`: `uid:1001@laptop` over a unix socket, `ssh:alice@gpu2`,
//! `tls:CN=alice`, `unproven:uid:1001@laptop` over plain tcp), the local real uid in
//! [`UID_LABEL`] and the login name in [`USER_LABEL`]. The identity decides
//! (`facts::user::identity_key`: an ssh user is one owner from any laptop); the name is
//! for messages. A container made by an envctl older than the identity label keeps the
//! rule of its time: the uid decides, whichever machine the uid was counted on. One
//! older than the uid label is its named user's, and one older than both labels is
//! anyone's (a single-user host made it). docs/identity.md says what this protects.

use std::collections::BTreeMap;

use super::{CONFIG_HASH_LABEL, PROFILE_LABEL, USER_LABEL};

pub mod daemon_facts;

/// The real uid of whoever ran `up`, recorded at create.
pub const UID_LABEL: &str = "envctl.uid";

/// Who the daemon's transport proved the user of `up` to be (`facts::user::Identity`).
pub const IDENTITY_LABEL: &str = "envctl.identity";

/// The label each `up` sets at create to a value of its own (process id and 64 random
/// bits): its containers are found after an interruption, and an image cannot forge it.
pub const RUN_LABEL: &str = "envctl.run";

/// The labels envctl writes on the containers it makes (and the exports write on
/// theirs): the claims an image could forge. Other `envctl.*` labels (a test suite's
/// `envctl.test`) claim nothing.
pub const CLAIMS: [&str; 10] = [
    PROFILE_LABEL,
    CONFIG_HASH_LABEL,
    super::PROFILE_HASH_LABEL,
    super::PROFILE_FILE_LABEL,
    super::GPUS_LABEL,
    super::ORIGIN_LABEL,
    UID_LABEL,
    USER_LABEL,
    RUN_LABEL,
    IDENTITY_LABEL,
];

/// Whether `key` is one of envctl's [`CLAIMS`].
pub fn is_claim(key: &str) -> bool {
    CLAIMS.contains(&key)
}

/// The labels of a container that a create set: `labels` without the `envctl.*` ones
/// inherited from the image (`image_labels`). Returns the labels kept and the keys dropped.
pub fn proven_labels(
    labels: BTreeMap<String, String>,
    image_labels: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let image_claims = image_labels.keys().any(|key| is_claim(key));
    if !image_claims {
        return (labels, Vec::new());
    }
    let run_proven = match (labels.get(RUN_LABEL), image_labels.get(RUN_LABEL)) {
        (Some(own), Some(inherited)) => own != inherited,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let mut dropped = Vec::new();
    let kept = labels
        .into_iter()
        .filter(|(key, value)| {
            let inherited = is_claim(key) && (!run_proven || image_labels.get(key) == Some(value));
            // envctl's own create sets this run's label even where the image repeats one
            // of the other values (an image built with `LABEL envctl.profile=X`).
            let keep = !inherited || (run_proven && key != RUN_LABEL && is_envctl_set(key));
            if !keep {
                dropped.push(key.clone());
            }
            keep
        })
        .collect();
    (kept, dropped)
}

/// Labels every `up` sets in each create: with a proven run label they are the create's
/// even when the image repeats their value (others, such as `envctl.gpus`, a create sets
/// only sometimes, so a value equal to the image's may be the image's).
fn is_envctl_set(key: &str) -> bool {
    [
        PROFILE_LABEL,
        CONFIG_HASH_LABEL,
        UID_LABEL,
        USER_LABEL,
        IDENTITY_LABEL,
    ]
    .contains(&key)
}

/// Who runs envctl, as ownership compares it.
pub use crate::facts::user::User as Me;

/// Whose a container is, by its proven labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Belonging {
    /// envctl made it for this user.
    Mine,
    /// It names no owner: made by an envctl older than the owner labels, or by another
    /// tool from an export (`docker compose up`). Acted on when named, as before owners
    /// were recorded, but never the obvious container of a folder it is not from.
    Unowned,
    /// envctl made it for another user: their name (or uid) for messages.
    Theirs { owner: String },
    /// envctl did not make it (no proven `envctl.profile`).
    NotEnvctls,
}

/// Whose the container with these (proven) labels is: the one place every command asks
/// "is it mine". With an identity label, the identity `me` has (`Context::me`) decides;
/// `me` without one (a view over several daemons at once) and a container made before
/// the label are judged by the uid, as envctl did before identities.
pub fn belonging(labels: &BTreeMap<String, String>, me: &Me) -> Belonging {
    if !labels.contains_key(PROFILE_LABEL) {
        return Belonging::NotEnvctls;
    }
    let name = labels.get(USER_LABEL);
    if let (Some(theirs), Some(mine)) = (labels.get(IDENTITY_LABEL), &me.identity) {
        return if crate::facts::user::identity_key(theirs)
            == crate::facts::user::identity_key(&mine.label())
        {
            Belonging::Mine
        } else {
            Belonging::Theirs {
                owner: owner_with_identity(labels, theirs),
            }
        };
    }
    let theirs = |fallback: String| Belonging::Theirs {
        owner: name.cloned().unwrap_or(fallback),
    };
    match labels.get(UID_LABEL) {
        Some(uid) => match (uid.parse::<u32>(), me.uid) {
            (Ok(uid), Some(mine)) if uid == mine => Belonging::Mine,
            // A uid label that is no number is not envctl's writing: nobody's to act on.
            (Err(_), _) => theirs(format!("uid {uid}")),
            (Ok(uid), _) => theirs(format!("uid {uid}")),
        },
        None => match name {
            Some(name) if *name != me.name => theirs(name.clone()),
            Some(_) => Belonging::Mine,
            None => Belonging::Unowned,
        },
    }
}

/// The owner to show (`ps`'s OWNER column): the login name, else the identity, else
/// `uid N`, else `None` for a container made before owners were recorded.
pub fn owner_label(labels: &BTreeMap<String, String>) -> Option<String> {
    labels
        .get(USER_LABEL)
        .or_else(|| labels.get(IDENTITY_LABEL))
        .map(|text| text.chars().take(200).collect())
        .or_else(|| labels.get(UID_LABEL).map(|uid| format!("uid {uid}")))
}

/// The owner as a refusal names them: the login name with the identity that decided
/// (`carol (uid:1001@laptop2)`). Label text is a claim: capped here, escaped where shown.
fn owner_with_identity(labels: &BTreeMap<String, String>, identity: &str) -> String {
    let identity: String = identity.chars().take(200).collect();
    match labels.get(USER_LABEL) {
        Some(name) => format!(
            "{} ({identity})",
            name.chars().take(200).collect::<String>()
        ),
        None => identity,
    }
}

/// Whether the container `name` with these (proven) labels was made from `profile`: one
/// of another profile is that profile's, whatever name it was given.
pub fn made_from(
    labels: &BTreeMap<String, String>,
    name: &str,
    profile: &str,
) -> Result<(), OwnershipError> {
    match labels.get(PROFILE_LABEL) {
        Some(other) if other != profile => Err(OwnershipError::OtherProfile {
            name: name.to_string(),
            profile: profile.to_string(),
            other: other.clone(),
        }),
        _ => Ok(()),
    }
}

/// Whether a container's labels claim the config of the body `wanted` (its labels): the
/// same config hash, or the same profile hash (what `ps` compares for a container made
/// with `up -e/-p/-v`).
pub fn claims_current(
    labels: &BTreeMap<String, String>,
    wanted: &BTreeMap<String, String>,
) -> bool {
    let profile_hash = wanted
        .get(super::PROFILE_HASH_LABEL)
        .or_else(|| wanted.get(CONFIG_HASH_LABEL));
    labels.get(CONFIG_HASH_LABEL) == wanted.get(CONFIG_HASH_LABEL)
        || (profile_hash.is_some() && labels.get(super::PROFILE_HASH_LABEL) == profile_hash)
}

/// The container `name` of `profile`, whose labels claim what envctl made of it, unless
/// the daemon's own facts say otherwise (`differences`, from
/// [`daemon_facts::not_as_claimed`]): then it is named with them, never adopted.
pub fn not_an_impostor(
    name: &str,
    profile: &str,
    differences: &[super::drift::Difference],
    cli: &'static str,
) -> Result<(), OwnershipError> {
    if differences.is_empty() {
        return Ok(());
    }
    // Each line is capped by drift; a container with many differences is named by its
    // first few, so a forged container cannot flood the message.
    const SHOWN: usize = 6;
    let mut said: Vec<String> = differences
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if differences.len() > SHOWN {
        said.push(format!("and {} more", differences.len() - SHOWN));
    }
    Err(OwnershipError::Impostor {
        name: name.to_string(),
        profile: profile.to_string(),
        differences: said.join("; "),
        cli,
    })
}

/// ` --name NAME` for a hint that acts on the container `name` of `profile`, unless `name`
/// is one `up` gives that profile by itself (`envctl-<profile>`, `envctl-<profile>-<user>`):
/// a hint that dropped `--name` would act on another container.
pub fn name_flag(name: &str, profile: &str) -> String {
    let default = format!("envctl-{profile}");
    if name == default || name.starts_with(&format!("{default}-")) {
        String::new()
    } else {
        format!(" --name {}", super::shell_quote(name))
    }
}

/// What ownership and occupancy refuse to believe: a claim the daemon's own facts do not
/// bear out. Each names the thing (volume, container, daemon) and comes with a command.
#[derive(Debug, thiserror::Error)]
pub enum OwnershipError {
    /// The daemon's GPU record (`engine::daemon_placement`) is not one envctl wrote for
    /// that daemon: placing by it could put several containers on one GPU.
    #[error("the GPU record of the daemon on {host} (volume `{volume}`) is not believed: {why}")]
    ForgedRecord {
        host: String,
        volume: String,
        why: String,
        /// The daemon's endpoint and its command-line tool, for the hint.
        endpoint: String,
        cli: &'static str,
    },
    /// A container carries the user's identity and claims what envctl makes of the
    /// profile (its config or profile hash), but the daemon says it differs from that:
    /// another image, mount, capability, namespace, command… (`daemon_facts`). envctl did
    /// not make it as it is, so it is named, never adopted (started, exec'd into, called
    /// current).
    #[error(
        "container `{name}` claims to be your `{profile}` container (its labels say so), but the daemon says it is not what envctl makes of the profile ({differences}): envctl did not make it as it is"
    )]
    Impostor {
        name: String,
        profile: String,
        /// What differs, as `container_plan::drift` names it (`mounts: /:/host → (none)`).
        differences: String,
        cli: &'static str,
    },
    /// `up P --name NAME` met a container of another profile at NAME.
    #[error(
        "container `{name}` was made from profile `{other}`, not `{profile}`: envctl never replaces it for `{profile}`"
    )]
    OtherProfile {
        name: String,
        profile: String,
        other: String,
    },
}

impl OwnershipError {
    /// The command that mends it.
    pub fn hint(&self) -> String {
        match self {
            OwnershipError::ForgedRecord {
                host,
                volume,
                endpoint,
                cli,
                ..
            } => format!(
                "remove it (`{cli} -H {} volume rm {volume}`); the next `envctl up` on {host} that places GPUs writes it again from that host's NVML",
                super::shell_quote(endpoint)
            ),
            OwnershipError::Impostor {
                name, profile, cli, ..
            } => format!(
                "`{cli} inspect {name}` shows who made it; remove it if it is not yours (`{cli} rm -f {name}`), or make yours under another name: `envctl up {profile} --name {}`",
                super::shell_quote(&format!("{name}-2")),
                name = super::shell_quote(name),
            ),
            OwnershipError::OtherProfile {
                name,
                profile,
                other,
            } => format!(
                "give `{profile}` a container of its own: `envctl up {profile} --name {}`; `{name}` stays `{other}`'s (`envctl up {other} --name {}` meets it)",
                super::shell_quote(&format!("{name}-{profile}")),
                super::shell_quote(name),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn an_impostor_is_named_by_its_first_differences_only() {
        use crate::container_plan::drift::{Change, Difference};
        assert!(not_an_impostor("c", "p", &[], "docker").is_ok());
        let differences: Vec<Difference> = (0..9)
            .map(|index| Difference {
                field: format!("f{index}"),
                change: Change::Values {
                    actual: "a".into(),
                    wanted: "b".into(),
                },
            })
            .collect();
        let error = not_an_impostor("c", "p", &differences, "podman").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("(f0: a → b; "), "{text}");
        assert!(text.contains("f5: a → b; and 3 more)"), "{text}");
        assert!(!text.contains("f6"), "{text}");
        assert!(
            error.hint().starts_with("`podman inspect c`"),
            "{}",
            error.hint()
        );
    }

    #[test]
    fn labels_inherited_from_the_image_are_not_envctls() {
        let image = labels(&[("envctl.profile", "x"), ("maintainer", "m")]);
        // `docker run` of the image: every envctl label is the image's.
        let container = labels(&[("envctl.profile", "x"), ("maintainer", "m")]);
        let (kept, dropped) = proven_labels(container, &image);
        assert_eq!(kept, labels(&[("maintainer", "m")]));
        assert_eq!(dropped, ["envctl.profile"]);
        // A run label copied from the image proves nothing either.
        let image = labels(&[("envctl.profile", "x"), ("envctl.run", "1-2")]);
        let container = labels(&[
            ("envctl.profile", "y"),
            ("envctl.run", "1-2"),
            ("envctl.uid", "0"),
        ]);
        let (kept, _) = proven_labels(container, &image);
        assert!(kept.is_empty(), "{kept:?}");
    }

    #[test]
    fn envctls_own_create_keeps_its_labels_over_an_image_that_repeats_them() {
        let image = labels(&[("envctl.profile", "x"), ("envctl.gpus", "all")]);
        let container = labels(&[
            ("envctl.profile", "x"),
            ("envctl.run", "42-abc"),
            ("envctl.uid", "1000"),
            ("envctl.gpus", "all"),
        ]);
        let (kept, dropped) = proven_labels(container, &image);
        assert_eq!(kept.get("envctl.profile").map(String::as_str), Some("x"));
        assert_eq!(kept.get("envctl.uid").map(String::as_str), Some("1000"));
        // A GPU claim equal to the image's is the image's.
        assert_eq!(dropped, ["envctl.gpus"]);
        // An image without envctl labels changes nothing.
        let plain = labels(&[("envctl.profile", "x")]);
        assert_eq!(proven_labels(plain.clone(), &BTreeMap::new()).0, plain);
    }

    #[test]
    fn the_uid_decides_whose_a_container_is() {
        let me = Me {
            uid: Some(1000),
            name: "ada".into(),
            identity: None,
        };
        let mine = labels(&[("envctl.profile", "p"), ("envctl.uid", "1000")]);
        assert_eq!(belonging(&mine, &me), Belonging::Mine);
        let theirs = labels(&[
            ("envctl.profile", "p"),
            ("envctl.uid", "1001"),
            ("envctl.user", "ada"),
        ]);
        // Same name, other uid: the uid decides, the name is shown.
        assert_eq!(
            belonging(&theirs, &me),
            Belonging::Theirs {
                owner: "ada".into()
            }
        );
        let legacy = labels(&[("envctl.profile", "p"), ("envctl.user", "bob")]);
        assert_eq!(
            belonging(&legacy, &me),
            Belonging::Theirs {
                owner: "bob".into()
            }
        );
        let oldest = labels(&[("envctl.profile", "p")]);
        assert_eq!(belonging(&oldest, &me), Belonging::Unowned);
        let forged = labels(&[("envctl.profile", "p"), ("envctl.uid", "me")]);
        assert!(matches!(belonging(&forged, &me), Belonging::Theirs { .. }));
        assert_eq!(
            belonging(&labels(&[("a", "b")]), &me),
            Belonging::NotEnvctls
        );
        let unknown = Me {
            uid: None,
            name: "unknown user".into(),
            identity: None,
        };
        assert!(matches!(
            belonging(&mine, &unknown),
            Belonging::Theirs { .. }
        ));
    }

    #[test]
    fn the_identity_decides_where_the_container_has_one() {
        use crate::facts::user::Identity;
        let carol = |host: &str| Me {
            uid: Some(1001),
            name: "carol".into(),
            identity: Some(Identity::LocalUid {
                uid: 1001,
                host: host.into(),
            }),
        };
        let made = labels(&[
            ("envctl.profile", "p"),
            ("envctl.uid", "1001"),
            ("envctl.user", "dave"),
            ("envctl.identity", "uid:1001@laptop1"),
        ]);
        // The same uid on another machine is another user.
        assert_eq!(belonging(&made, &carol("laptop1")), Belonging::Mine);
        assert_eq!(
            belonging(&made, &carol("laptop2")),
            Belonging::Theirs {
                owner: "dave (uid:1001@laptop1)".into()
            }
        );
        // One ssh user from two laptops, whatever each calls the server.
        let over_ssh = labels(&[
            ("envctl.profile", "p"),
            ("envctl.uid", "1000"),
            ("envctl.identity", "ssh:alice@gpu2"),
        ]);
        let alice = |uid, server: &str| Me {
            uid: Some(uid),
            name: "whoever".into(),
            identity: Some(Identity::Ssh {
                user: "alice".into(),
                server: server.into(),
            }),
        };
        assert_eq!(belonging(&over_ssh, &alice(1000, "gpu2")), Belonging::Mine);
        assert_eq!(
            belonging(&over_ssh, &alice(1234, "10.0.0.2")),
            Belonging::Mine
        );
        // The uid matches, the identity does not: another's.
        let bob = Me {
            identity: Some(Identity::Ssh {
                user: "bob".into(),
                server: "gpu2".into(),
            }),
            ..alice(1000, "gpu2")
        };
        assert!(matches!(
            belonging(&over_ssh, &bob),
            Belonging::Theirs { .. }
        ));
        // Made before the label: the uid, as before.
        let legacy = labels(&[("envctl.profile", "p"), ("envctl.uid", "1001")]);
        assert_eq!(belonging(&legacy, &carol("anywhere")), Belonging::Mine);
        // An identity copied from the image is no claim at all.
        let image = labels(&[("envctl.identity", "uid:1001@laptop1")]);
        let (kept, dropped) = proven_labels(made.clone(), &image);
        assert!(kept.is_empty(), "{kept:?}");
        assert!(dropped.contains(&"envctl.identity".to_string()));
    }
}
