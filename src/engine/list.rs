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
    /// or `KEY=VALUE`) when given.
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
        self.get_json(&path, "listing containers", MAX_LIST_BYTES)
            .await
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
