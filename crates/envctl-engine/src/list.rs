//! `GET /containers/json` read by envctl itself rather than through bollard's model:
//! bollard's `State` is a closed list (`created`, `running`, …, `stopping`), and Podman
//! 4.3 answers `"stopped"` for a container it is stopping right then (seen in CI), which
//! made the whole list fail to parse. Here the state is the engine's own word.

use std::collections::HashMap;

use serde::Deserialize;

use super::{Engine, EngineError};

/// The largest list envctl reads: a few kilobytes per container, so room for tens of
/// thousands; a bigger answer is an error, not memory.
const MAX_LIST_BYTES: usize = 64 << 20;

/// One container as listed, in the Engine API's field names.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct Listed {
    pub id: String,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub image: String,
    #[serde(rename = "ImageID", default)]
    pub image_id: String,
    /// `running`, `exited`, `created`, … as the engine says it (Podman: also `stopped`).
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub created: i64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub labels: HashMap<String, String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub ports: Vec<ListedPort>,
}

impl Listed {
    /// The name without Docker's leading `/`; the short id when the engine gave none.
    pub fn name(&self) -> String {
        self.names
            .first()
            .map(|name| name.trim_start_matches('/').to_string())
            .unwrap_or_else(|| self.id.chars().take(12).collect())
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListedPort {
    #[serde(rename = "IP")]
    pub ip: Option<String>,
    #[serde(rename = "PrivatePort", default)]
    pub private_port: u16,
    #[serde(rename = "PublicPort")]
    pub public_port: Option<u16>,
    #[serde(rename = "Type")]
    pub protocol: Option<String>,
}

/// `null` (Podman writes it for no labels) as the empty value.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Engine {
    /// The containers, with stopped ones when `all`, and only those with `label` (`KEY`
    /// or `KEY=VALUE`) when given. Labels are the proven ones
    /// (`container_plan::ownership::proven_labels`): `envctl.*` labels inherited from the image are
    /// gone, and a container whose `label` was only inherited is not listed.
    pub(crate) async fn list_raw(
        &self,
        all: bool,
        label: Option<&str>,
    ) -> Result<Vec<Listed>, EngineError> {
        let mut path = format!("/containers/json?all={}", if all { 1 } else { 0 });
        if let Some(label) = label {
            let filters = serde_json::json!({ "label": [label] }).to_string();
            path.push_str("&filters=");
            path.extend(url::form_urlencoded::byte_serialize(filters.as_bytes()));
        }
        let listed: Vec<Listed> = self
            .get_json(&path, "listing containers", MAX_LIST_BYTES)
            .await?;
        let mut proven = Vec::with_capacity(listed.len());
        for mut container in listed {
            let labels = std::mem::take(&mut container.labels).into_iter().collect();
            let labels = self.proven(&container.image_id, labels).await?;
            container.labels = labels.into_iter().collect();
            if label.is_none_or(|label| has_label(&container.labels, label)) {
                proven.push(container);
            }
        }
        Ok(proven)
    }
}

/// Whether `labels` has `filter` (`KEY` or `KEY=VALUE`), as the daemon's label filter.
fn has_label(labels: &HashMap<String, String>, filter: &str) -> bool {
    match filter.split_once('=') {
        Some((key, value)) => labels.get(key).is_some_and(|have| have == value),
        None => labels.contains_key(filter),
    }
}

/// Image labels by image id, read once per connection ([`Engine::proven`]).
#[derive(Debug, Default)]
pub(crate) struct ImageLabels {
    read: HashMap<String, Option<std::collections::BTreeMap<String, String>>>,
}

impl Engine {
    /// `labels` without the `envctl.*` ones the image `image_id` gave them
    /// (`container_plan::ownership::proven_labels`). Only a container with `envctl.*` labels costs an
    /// image inspect, once per image. An image the engine no longer has cannot be
    /// compared: the labels stay as the create left them.
    pub(crate) async fn proven(
        &self,
        image_id: &str,
        labels: std::collections::BTreeMap<String, String>,
    ) -> Result<std::collections::BTreeMap<String, String>, EngineError> {
        if image_id.is_empty()
            || !labels
                .keys()
                .any(|key| envctl_core::container_plan::ownership::is_claim(key))
        {
            return Ok(labels);
        }
        let known = self
            .image_labels
            .lock()
            .ok()
            .and_then(|cache| cache.read.get(image_id).cloned());
        let image = match known {
            Some(image) => image,
            None => {
                let read = self.image_labels(image_id).await?;
                if let Ok(mut cache) = self.image_labels.lock() {
                    cache.read.insert(image_id.to_string(), read.clone());
                }
                read
            }
        };
        Ok(match image {
            Some(image) => envctl_core::container_plan::ownership::proven_labels(labels, &image).0,
            None => labels,
        })
    }
}

impl Engine {
    /// The labels of an image (by id or reference); `Ok(None)` when the engine has no such
    /// image.
    pub(crate) async fn image_labels(
        &self,
        image: &str,
    ) -> Result<Option<std::collections::BTreeMap<String, String>>, EngineError> {
        let image = super::reference::image(image)?;
        let inspect = self.whole_answer(
            "inspecting an image",
            self.answer_deadline(),
            self.docker.inspect_image(image),
        );
        match inspect.await? {
            Ok(inspect) => Ok(Some(
                inspect
                    .config
                    .and_then(|config| config.labels)
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
            )),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(error) => Err(self.classify(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podmans_stopped_and_nulls_read_as_they_are() {
        let answer = r#"[{"Id":"4634ede2","Names":["/a"],"Image":"x:1","ImageID":"sha256:7c","State":"stopped","Status":"Exited (137)","Created":1796155246,"Labels":null,"Ports":null},
            {"Id":"86cba56a","State":"running","Labels":{"envctl.profile":"p"},"Ports":[{"IP":"127.0.0.1","PrivatePort":8000,"PublicPort":25682,"Type":"tcp"},{"PrivatePort":9000,"Type":"tcp"}]}]"#;
        let listed: Vec<Listed> = serde_json::from_str(answer).unwrap();
        assert_eq!(listed[0].state, "stopped");
        assert_eq!(listed[0].name(), "a");
        assert!(listed[0].labels.is_empty() && listed[0].ports.is_empty());
        assert_eq!(listed[1].name(), "86cba56a");
        assert_eq!(listed[1].labels["envctl.profile"], "p");
        assert_eq!(listed[1].ports[0].public_port, Some(25682));
        assert_eq!(listed[1].ports[1].public_port, None);
    }
}
