//! The keys that reach the host: `network`, `devices`, `cap_add` and `ipc`.

use std::ops::Range;

use super::{Checker, Value, did_you_mean};
use crate::profile::host_access::{self, Device, Network};
use crate::profile::model::Ipc;

impl Checker<'_> {
    /// `network = "host"`, `"none"`, `"bridge"` or the name of a network.
    pub(super) fn network(&mut self, value: &Value<'_>) -> Option<Network> {
        let example = "network = \"host\" (NCCL across nodes), \"none\", or a network's name";
        let Some(text) = value.get_ref().as_str() else {
            self.type_error("network", value, "a string", example);
            return None;
        };
        match Network::parse(text) {
            Ok(network) => Some(network),
            Err(message) => {
                let hint = did_you_mean(text, &["host", "none", "bridge"]).map_or_else(
                    || example.to_string(),
                    |word| format!("did you mean \"{word}\"?"),
                );
                self.error(value.span(), message, Some(hint));
                None
            }
        }
    }

    /// `devices = ["/dev/infiniband", "/dev/fuse:/dev/fuse:rw"]`, as `docker run --device`.
    pub(super) fn devices(&mut self, value: &Value<'_>) -> Option<Vec<Device>> {
        let example = "devices = [\"/dev/infiniband\"]";
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("devices", value, "an array of strings", example);
            return None;
        };
        let mut devices: Vec<(Device, Range<usize>)> = Vec::new();
        let mut valid = true;
        for item in array.iter() {
            let Some(spec) = item.get_ref().as_str() else {
                valid = false;
                self.error(
                    item.span(),
                    format!(
                        "`devices` items must be strings, found {}",
                        item.get_ref().type_str()
                    ),
                    Some(format!("for example: {example}")),
                );
                continue;
            };
            match Device::parse(spec) {
                Ok(device) => {
                    if let Some((_, first)) = devices
                        .iter()
                        .find(|(earlier, _)| earlier.container == device.container)
                    {
                        valid = false;
                        let line = self
                            .source
                            .diagnostic(first.clone(), String::new(), None)
                            .line;
                        self.error(
                            item.span(),
                            format!(
                                "device path `{}` in the container is already given on line {line}",
                                device.container
                            ),
                            Some("give each container path one device".into()),
                        );
                    } else {
                        devices.push((device, item.span()));
                    }
                }
                Err(message) => {
                    valid = false;
                    self.error(
                        item.span(),
                        message,
                        Some("write HOST[:CONTAINER][:PERMISSIONS], for example \"/dev/infiniband\" or \"/dev/fuse:/dev/fuse:rw\"".into()),
                    );
                }
            }
        }
        valid.then(|| devices.into_iter().map(|(device, _)| device).collect())
    }

    /// `cap_add = ["IPC_LOCK"]`: Linux capability names, with or without `CAP_`, any case.
    pub(super) fn cap_add(&mut self, value: &Value<'_>) -> Option<Vec<String>> {
        let example = "cap_add = [\"IPC_LOCK\"]";
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("cap_add", value, "an array of strings", example);
            return None;
        };
        let mut capabilities = Vec::new();
        let mut valid = true;
        for item in array.iter() {
            let Some(text) = item.get_ref().as_str() else {
                valid = false;
                self.error(
                    item.span(),
                    format!(
                        "`cap_add` items must be strings, found {}",
                        item.get_ref().type_str()
                    ),
                    Some(format!("for example: {example}")),
                );
                continue;
            };
            match host_access::capability(text) {
                Ok(name) if capabilities.contains(&name) => {
                    valid = false;
                    self.error(
                        item.span(),
                        format!("capability `{name}` is listed twice"),
                        None,
                    );
                }
                Ok(name) => capabilities.push(name),
                Err(suggestion) => {
                    valid = false;
                    let hint = match suggestion {
                        Some(name) => format!("did you mean \"{name}\"?"),
                        None => "write a Linux capability as capabilities(7) names it, without `CAP_`, like \"IPC_LOCK\" or \"SYS_NICE\"".into(),
                    };
                    self.error(
                        item.span(),
                        format!("`{}` is not a Linux capability", text.escape_debug()),
                        Some(hint),
                    );
                }
            }
        }
        valid.then_some(capabilities)
    }

    pub(super) fn ipc(&mut self, value: &Value<'_>) -> Option<Ipc> {
        let text = self.string("ipc", value)?;
        match text.as_str() {
            "private" => Some(Ipc::Private),
            "shareable" => Some(Ipc::Shareable),
            "host" => Some(Ipc::Host),
            other => {
                let hint = did_you_mean(other, &Ipc::NAMES).map_or_else(
                    || "use \"private\", \"shareable\" or \"host\"".to_string(),
                    |word| format!("did you mean \"{word}\"?"),
                );
                self.error(
                    value.span(),
                    format!("`ipc` = \"{other}\" is not private, shareable or host"),
                    Some(hint),
                );
                None
            }
        }
    }
}
