//! Stale CDI specs (issue 43): the device nodes an NVIDIA CDI spec in `/etc/cdi` or
//! `/var/run/cdi` hands to containers, compared with `/dev`. A spec generated before a
//! driver upgrade, a GPU swap or a reboot that renumbered the devices names nodes that no
//! longer exist, or gives them other numbers than the kernel's; a container given such a
//! device fails to start or gets the wrong GPU.
//!
//! Specs are read through `envctl_core::untrusted` (envctl did not write them). JSON specs are
//! parsed; YAML specs (what `nvidia-ctk cdi generate` writes) are read line by line for
//! the `deviceNodes` lists only, as envctl carries no YAML parser.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

pub use envctl_facts::host::StaleCdiNode;

/// A spec larger than this is not read (NVIDIA's are a few KiB per GPU).
const MAXIMUM_SPEC_BYTES: u64 = 4 * 1024 * 1024;

/// One `deviceNodes` entry as a spec writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SpecNode {
    path: Option<String>,
    host_path: Option<String>,
    major: Option<u64>,
    minor: Option<u64>,
}

impl SpecNode {
    /// The node on the host: `hostPath` when the spec sets it, else `path`.
    fn host_node(&self) -> Option<&str> {
        self.host_path.as_deref().or(self.path.as_deref())
    }
}

/// The stale nodes of the specs `spec_paths` (absolute, as the host names them), looked up
/// under `root` (`/` on a real machine, a folder in tests). A spec that cannot be read is
/// the host probe's to report (`CdiSpec::unreadable`), not this check's.
pub fn stale_nodes(root: &Path, spec_paths: &[&str]) -> Vec<StaleCdiNode> {
    let at = |path: &str| -> PathBuf { root.join(path.trim_start_matches('/')) };
    let mut stale = Vec::new();
    for &spec in spec_paths {
        let path = at(spec);
        let Ok(Some(bytes)) = envctl_core::untrusted::read(
            &path,
            MAXIMUM_SPEC_BYTES,
            envctl_core::untrusted::Named::Found,
        ) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let nodes = if spec.ends_with(".json") {
            json_nodes(&text)
        } else {
            yaml_nodes(&text)
        };
        for node in nodes {
            let Some(host_node) = node.host_node() else {
                continue;
            };
            let spec_number = match (node.major, node.minor) {
                (Some(major), Some(minor)) => Some(format!("{major}:{minor}")),
                _ => None,
            };
            let host_number = std::fs::metadata(at(host_node))
                .ok()
                .filter(|metadata| {
                    metadata.file_type().is_char_device() || metadata.file_type().is_block_device()
                })
                .map(|metadata| {
                    let (major, minor) = super::split_device_number(metadata.rdev());
                    format!("{major}:{minor}")
                });
            let missing = host_number.is_none();
            let renumbered = match (&spec_number, &host_number) {
                (Some(spec_number), Some(host_number)) => spec_number != host_number,
                _ => false,
            };
            if missing || renumbered {
                stale.push(StaleCdiNode {
                    spec: spec.to_string(),
                    node: host_node.to_string(),
                    spec_number,
                    host_number,
                });
            }
        }
    }
    stale
}

/// Every `deviceNodes` entry anywhere in a JSON spec.
fn json_nodes(text: &str) -> Vec<SpecNode> {
    fn walk(value: &serde_json::Value, nodes: &mut Vec<SpecNode>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, child) in map {
                    if key == "deviceNodes"
                        && let Some(items) = child.as_array()
                    {
                        nodes.extend(items.iter().map(|item| {
                            SpecNode {
                                path: item
                                    .get("path")
                                    .and_then(|v| v.as_str())
                                    .map(str::to_string),
                                host_path: item
                                    .get("hostPath")
                                    .and_then(|v| v.as_str())
                                    .map(str::to_string),
                                major: item.get("major").and_then(serde_json::Value::as_u64),
                                minor: item.get("minor").and_then(serde_json::Value::as_u64),
                            }
                        }));
                    } else {
                        walk(child, nodes);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, nodes)),
            _ => {}
        }
    }
    let mut nodes = Vec::new();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        walk(&value, &mut nodes);
    }
    nodes
}

/// Every `deviceNodes` entry of a YAML spec, read by indentation: a `deviceNodes:` key,
/// then its list items (`- path: …`) and their `path`, `hostPath`, `major`, `minor` keys,
/// until a line at the key's indentation or less that is not one of its items.
fn yaml_nodes(text: &str) -> Vec<SpecNode> {
    let mut nodes = Vec::new();
    let mut block: Option<usize> = None;
    let mut current: Option<SpecNode> = None;
    for line in text.lines() {
        let content = line.split(" #").next().unwrap_or(line);
        let trimmed = content.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = content.len() - content.trim_start().len();
        if trimmed == "deviceNodes:" {
            nodes.extend(current.take());
            block = Some(indent);
            continue;
        }
        let Some(key_indent) = block else { continue };
        let item = trimmed.starts_with("- ") || trimmed == "-";
        if indent < key_indent || (indent == key_indent && !item) {
            nodes.extend(current.take());
            block = None;
            continue;
        }
        let body = if item {
            nodes.extend(current.take());
            current = Some(SpecNode::default());
            trimmed.trim_start_matches('-').trim()
        } else {
            trimmed
        };
        let (Some(node), Some((key, value))) = (current.as_mut(), body.split_once(':')) else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        match key.trim() {
            "path" => node.path = Some(value.to_string()),
            "hostPath" => node.host_path = Some(value.to_string()),
            "major" => node.major = value.parse().ok(),
            "minor" => node.minor = value.parse().ok(),
            _ => {}
        }
    }
    nodes.extend(current);
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVIDIA_CTK_YAML: &str = "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n    - path: /dev/dri/card1\n      major: 226\n      minor: 1\n- name: \"1\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia1\n      hostPath: /dev/nvidia1\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  hooks:\n  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n";

    #[test]
    fn yaml_device_nodes_are_read_and_other_paths_are_not() {
        let nodes = yaml_nodes(NVIDIA_CTK_YAML);
        let paths: Vec<&str> = nodes.iter().filter_map(SpecNode::host_node).collect();
        assert_eq!(
            paths,
            [
                "/dev/nvidia0",
                "/dev/dri/card1",
                "/dev/nvidia1",
                "/dev/nvidiactl"
            ]
        );
        assert_eq!(nodes[1].major, Some(226));
        assert_eq!(nodes[1].minor, Some(1));
    }

    #[test]
    fn json_device_nodes_are_read() {
        let nodes = json_nodes(
            r#"{"kind":"nvidia.com/gpu","devices":[{"name":"0","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia0","major":195,"minor":0}]}}]}"#,
        );
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].path.as_deref(), Some("/dev/nvidia0"));
        assert_eq!(nodes[0].major, Some(195));
    }

    #[test]
    fn a_missing_node_and_other_numbers_are_stale() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc/cdi")).unwrap();
        // /dev/null is a real character device (1:3): link it in as the spec's nodes.
        std::fs::create_dir_all(root.path().join("dev")).unwrap();
        std::os::unix::fs::symlink("/dev/null", root.path().join("dev/nvidia0")).unwrap();
        std::os::unix::fs::symlink("/dev/null", root.path().join("dev/nvidiactl")).unwrap();
        std::fs::write(
            root.path().join("etc/cdi/nvidia.yaml"),
            "kind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n      major: 195\n      minor: 0\n    - path: /dev/nvidia3\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n    major: 1\n    minor: 3\n",
        )
        .unwrap();
        let stale = stale_nodes(root.path(), &["/etc/cdi/nvidia.yaml", "/etc/cdi/gone.yaml"]);
        assert_eq!(
            stale,
            [
                StaleCdiNode {
                    spec: "/etc/cdi/nvidia.yaml".into(),
                    node: "/dev/nvidia0".into(),
                    spec_number: Some("195:0".into()),
                    host_number: Some("1:3".into()),
                },
                StaleCdiNode {
                    spec: "/etc/cdi/nvidia.yaml".into(),
                    node: "/dev/nvidia3".into(),
                    spec_number: None,
                    host_number: None,
                },
            ]
        );
    }
}
