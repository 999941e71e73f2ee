//! The names, labels and annotations every Kubernetes object of an export carries: the
//! object name (a DNS label of the container name), the `envctl.profile` label (also the
//! selector) and the config hash as an annotation.

use std::collections::BTreeMap;

use super::Notices;
use super::objects::ObjectMeta;
use crate::container_plan::{CONFIG_HASH_LABEL, PROFILE_LABEL, container_name};
use crate::export::view::BodyView;
use crate::export::{DNS_LABEL_MAX, dns_label, dns_label_whole, short_hash};

/// Who the objects are: their name, labels and annotations.
#[derive(Debug)]
pub(super) struct Identity {
    /// `up`'s container name for the profile; claim names of bind mounts are made from it.
    pub(super) container: String,
    /// The workload's, the container's and the Service's name.
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) annotations: BTreeMap<String, String>,
}

impl Identity {
    pub(super) fn new(view: &BodyView<'_>, notices: &mut Notices) -> Self {
        let profile = view.profile_name;
        let container = container_name(profile);
        let name = dns_label(&container);
        if name != dns_label_whole(&container) {
            notices.add(
                "name",
                format!(
                    "`{container}` is longer than the {DNS_LABEL_MAX} characters of a Kubernetes name: the objects are named `{name}`"
                ),
            );
        }
        let label = label_value(profile);
        if label != profile {
            notices.add(
                "name",
                format!(
                    "`{profile}` is not a valid label value; the `{PROFILE_LABEL}` label says `{label}`"
                ),
            );
        }
        let mut labels = BTreeMap::from([(PROFILE_LABEL.to_string(), label)]);
        // A 64-character hash does not fit a label value (63 at most).
        let mut annotations = BTreeMap::new();
        // The profile's own labels: Kubernetes labels where its rules allow, else
        // annotations (which take any key and value), said in a notice.
        for (key, value) in view
            .labels
            .iter()
            .filter(|(key, _)| !key.starts_with("envctl."))
        {
            if is_label_key(key) && is_label_value(value) {
                labels.insert(key.clone(), value.clone());
            } else {
                notices.add(
                    "labels",
                    format!(
                        "label `{key}` is not a valid Kubernetes label (name and value: at most 63 of A-Z a-z 0-9 - _ .): it is an annotation"
                    ),
                );
                annotations.insert(key.clone(), value.clone());
            }
        }
        if let Some(hash) = view.config_hash() {
            annotations.insert(CONFIG_HASH_LABEL.to_string(), hash.to_string());
        }
        Identity {
            container,
            name,
            labels,
            annotations,
        }
    }

    /// The metadata of the workload itself: name, labels and annotations.
    pub(super) fn workload_metadata(&self) -> ObjectMeta {
        metadata(&self.name, &self.labels, &self.annotations)
    }

    /// The metadata of another object (a claim, the Service): name and labels.
    pub(super) fn object_metadata(&self, name: &str) -> ObjectMeta {
        metadata(name, &self.labels, &BTreeMap::new())
    }

    /// The pod template's metadata: labels and annotations, no name.
    pub(super) fn template_metadata(&self) -> ObjectMeta {
        ObjectMeta {
            name: None,
            labels: self.labels.clone(),
            annotations: self.annotations_if_any(),
        }
    }

    fn annotations_if_any(&self) -> Option<BTreeMap<String, String>> {
        (!self.annotations.is_empty()).then(|| self.annotations.clone())
    }
}

fn metadata(
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: labels.clone(),
        annotations: (!annotations.is_empty()).then(|| annotations.clone()),
    }
}

/// A profile name as a label value: `[A-Za-z0-9._-]`, at most 63 characters, starting
/// and ending with a letter or digit. A longer one is cut and ends in `-` and a short hash
/// of the name, so that two long names do not select each other's pods.
pub(super) fn label_value(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.len() <= DNS_LABEL_MAX {
        return trimmed.to_string();
    }
    let suffix = short_hash(name);
    let cut: String = trimmed
        .chars()
        .take(DNS_LABEL_MAX - suffix.len() - 1)
        .collect();
    format!(
        "{}-{suffix}",
        cut.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
    )
}

/// A Kubernetes label name: an optional DNS-subdomain prefix and `/`, then at most 63
/// alphanumerics, `-`, `_` or `.`, starting and ending with an alphanumeric.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part.len() <= 63
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && is_label_value(name)
}

/// A Kubernetes label value: empty, or at most 63 alphanumerics, `-`, `_` or `.`, starting
/// and ending with an alphanumeric.
fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn kubernetes_label_rules() {
        assert!(is_label_key("com.example.team"));
        assert!(is_label_key("example.com/team"));
        assert!(!is_label_key("Example.com/team"));
        assert!(!is_label_key("team name"));
        assert!(!is_label_key(&"x".repeat(64)));
        assert!(is_label_value("vision") && is_label_value(""));
        assert!(!is_label_value("two words") && !is_label_value("-x"));
    }
}
