//! Kubernetes names for the profile's mounts: one volume name per mount within the pod and
//! one claim name per mount (or per named volume) within the namespace, never two mounts'
//! data in one claim, with why a name is not the plain label of its text.

use std::collections::BTreeMap;

use crate::export::{DNS_LABEL_MAX, dns_label_whole, hashed_label};

/// The text a mount target's volume name is made from: `/data/sets` → `data/sets`
/// (named `data-sets`).
pub(super) fn volume_text(target: &str) -> &str {
    let text = target.trim_start_matches('/');
    if text.trim_matches('/').is_empty() {
        "root"
    } else {
        text
    }
}

/// Names made from the profile's text (mount targets, named volumes, the claim of a bind
/// mount), each held by one mount within one export: two mounts share a name only when
/// [`Names::shared`] is asked for the same text (a named volume mounted twice is one
/// volume). A text whose label ([`dns_label_whole`]) is longer than 63 characters, or is
/// another mount's name already (`my_cache` and `my.cache` both read `my-cache`), is named
/// with [`hashed_label`] instead: cut, then `-` and a short hash of the text.
#[derive(Debug, Default)]
pub(super) struct Names {
    given: BTreeMap<String, Holder>,
}

/// Who holds a name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holder {
    /// envctl itself (the `shm` volume).
    Envctl,
    /// A mount, described for notices (`the named volume \`cache\``); `shared` is the
    /// text when other mounts of the same text share the name.
    Mount {
        what: String,
        shared: Option<String>,
    },
}

/// Why a mount is not named by its text's plain label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Renamed {
    /// The label is longer than a Kubernetes name.
    TooLong { label: String },
    /// The label is held by another mount (described) or, with `None`, by envctl.
    Taken { label: String, by: Option<String> },
}

impl Renamed {
    /// The notice for `object` (`the PersistentVolumeClaim for …`) named `name`.
    pub(super) fn message(&self, object: &str, name: &str) -> String {
        match self {
            Renamed::TooLong { label } => format!(
                "{object} is named `{name}`: `{label}` is longer than the {DNS_LABEL_MAX} characters of a Kubernetes name"
            ),
            Renamed::Taken {
                label,
                by: Some(by),
            } => format!(
                "{object} is named `{name}`: `{label}` is the name of {by} already, and the two must not share data"
            ),
            Renamed::Taken { label, by: None } => {
                format!("{object} is named `{name}`: envctl uses `{label}` itself")
            }
        }
    }
}

impl Names {
    /// Keeps `name` for envctl's own use.
    pub(super) fn reserve(&mut self, name: &str) {
        self.given.insert(name.to_string(), Holder::Envctl);
    }

    /// The name of `text` for the mount `what`, the same for every mount of the same
    /// `text`, and why it is not `text`'s plain label, if it is not.
    pub(super) fn shared(&mut self, text: &str, what: &str) -> (String, Option<Renamed>) {
        let held = self.given.iter().find(|(_, holder)| {
            matches!(holder, Holder::Mount { shared: Some(shared), .. } if shared == text)
        });
        if let Some((name, _)) = held {
            return (name.clone(), None);
        }
        self.give(text, what, Some(text.to_string()))
    }

    /// A name of `text` for the mount `what` alone, and why it is not `text`'s plain
    /// label, if it is not.
    pub(super) fn unique(&mut self, text: &str, what: &str) -> (String, Option<Renamed>) {
        self.give(text, what, None)
    }

    fn give(
        &mut self,
        text: &str,
        what: &str,
        shared: Option<String>,
    ) -> (String, Option<Renamed>) {
        let label = dns_label_whole(text);
        let (mut name, mut renamed) = if label.len() > DNS_LABEL_MAX {
            let renamed = Renamed::TooLong {
                label: label.clone(),
            };
            (hashed_label(&label, text), Some(renamed))
        } else {
            (label.clone(), None)
        };
        if let Some(holder) = self.given.get(&name) {
            renamed = Some(Renamed::Taken {
                label: name.clone(),
                by: match holder {
                    Holder::Envctl => None,
                    Holder::Mount { what, .. } => Some(what.clone()),
                },
            });
            name = hashed_label(&label, text);
        }
        // A hash that is held too (a text that reads as `name` literally, or the same text
        // for another mount): hash again, with a round number.
        let mut round = 1u32;
        while self.given.contains_key(&name) {
            name = hashed_label(&label, &format!("{text}\n{round}"));
            round += 1;
        }
        self.given.insert(
            name.clone(),
            Holder::Mount {
                what: what.to_string(),
                shared,
            },
        );
        (name, renamed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::kubernetes::SHM_VOLUME;

    #[test]
    fn claim_names_are_one_per_mount() {
        use crate::export::short_hash;
        let mut claims = Names::default();
        // Named volumes that read the same as a label.
        let underscore = "the named volume `my_cache`";
        let dot = "the named volume `my.cache`";
        assert_eq!(
            claims.shared("my_cache", underscore),
            ("my-cache".to_string(), None)
        );
        let (dotted, renamed) = claims.shared("my.cache", dot);
        assert_eq!(dotted, format!("my-cache-{}", short_hash("my.cache")));
        let renamed = renamed.unwrap();
        assert_eq!(
            renamed,
            Renamed::Taken {
                label: "my-cache".into(),
                by: Some(underscore.into())
            }
        );
        assert_eq!(
            renamed.message(&format!("the PersistentVolumeClaim for {dot}"), &dotted),
            format!(
                "the PersistentVolumeClaim for the named volume `my.cache` is named `{dotted}`: `my-cache` is the name of the named volume `my_cache` already, and the two must not share data"
            )
        );
        // A named volume mounted again: the same claim, nothing renamed.
        assert_eq!(claims.shared("my.cache", dot), (dotted.clone(), None));
        assert_eq!(
            claims.shared("my_cache", underscore),
            ("my-cache".to_string(), None)
        );
        // A bind mount whose text reads as a named volume's: a claim of its own.
        let (bind, renamed) = claims.unique("my_cache", "the bind mount `./c:/c`");
        assert_ne!(bind, "my-cache");
        assert!(matches!(renamed, Some(Renamed::Taken { .. })));
        // ... and a named volume after it does not join it either.
        let (later, _) = claims.shared("my-cache", "the named volume `my-cache`");
        assert!(![dotted.as_str(), bind.as_str(), "my-cache"].contains(&later.as_str()));
        // Bind claims of a 59-character profile: cut, with different hashes.
        let profile = format!("envctl-{}", "p".repeat(59));
        let train_text = format!("{profile}-data-train");
        let valid_text = format!("{profile}-data-valid");
        let (train, renamed) = claims.unique(&train_text, "/data/train");
        assert_eq!(
            renamed,
            Some(Renamed::TooLong {
                label: train_text.clone()
            })
        );
        let (valid, _) = claims.unique(&valid_text, "/data/valid");
        assert_ne!(train, valid);
        assert_eq!(train.len(), 63);
        assert!(train.ends_with(&short_hash(&train_text)), "{train}");
        assert!(valid.ends_with(&short_hash(&valid_text)), "{valid}");
        // The same text for two mounts, and a text that reads as a hashed name literally.
        let (again, _) = claims.unique(&train_text, "/other");
        assert_ne!(again, train);
        let (literal, renamed) = claims.shared(&dotted, "the named volume `literal`");
        assert_ne!(literal, dotted);
        assert!(matches!(renamed, Some(Renamed::Taken { .. })));
        for name in claims.given.keys() {
            assert!(name.len() <= DNS_LABEL_MAX, "{name}");
        }
        assert_eq!(claims.given.len(), 8);
        // Reserved names are never given.
        let mut volumes = Names::default();
        volumes.reserve(SHM_VOLUME);
        let (shm, renamed) = volumes.shared("shm", "the named volume `shm`");
        assert_ne!(shm, SHM_VOLUME);
        assert_eq!(
            renamed.unwrap().message("the volume", &shm),
            format!("the volume is named `{shm}`: envctl uses `shm` itself")
        );
    }
}
