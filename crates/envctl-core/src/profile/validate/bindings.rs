//! `ports` and `mounts`, each an entry in Docker's short form or as a table.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::{Checker, MOUNT_HINT, MOUNT_KEYS, PORT_HINT, PORT_KEYS, Value, integer_value};
use crate::profile::model::{Mount, PortBinding};
use crate::profile::{mounts, ports};

impl Checker<'_> {
    pub(super) fn ports(&mut self, value: &Value<'_>) -> Option<Vec<PortBinding>> {
        let Some(array) = value.get_ref().as_array() else {
            self.type_error("ports", value, "an array", "ports = [\"8888:8888\"]");
            return None;
        };
        let mut bindings: Vec<(PortBinding, Range<usize>)> = Vec::new();
        let mut claims = ports::HostPortClaims::default();
        let mut expanded: u32 = 0;
        let mut valid = true;
        for item in array.iter() {
            let binding = match item.get_ref() {
                DeValue::String(spec) => {
                    ports::parse_port_spec(spec).map_err(|message| Some((message, item.span())))
                }
                DeValue::Table(table) => self.port_table(table, item.span()),
                DeValue::Integer(integer) => ports::parse_port_spec(
                    &integer_value(integer)
                        .map_or_else(|| integer.to_string(), |port| port.to_string()),
                )
                .map_err(|message| Some((message, item.span()))),
                other => Err(Some((
                    format!(
                        "a port must be a string or a table, found {}",
                        other.type_str()
                    ),
                    item.span(),
                ))),
            };
            match binding {
                Ok(binding) => {
                    expanded = expanded.saturating_add(binding.container.len());
                    if expanded > ports::MAXIMUM_PORT_BINDINGS {
                        self.error(
                            item.span(),
                            format!(
                                "`ports` expands to more than {} port bindings: with `{binding}` it makes {expanded}",
                                ports::MAXIMUM_PORT_BINDINGS
                            ),
                            Some("Docker publishes each port of a range as a binding of its own; publish fewer or shorter ranges".into()),
                        );
                        // What follows is not expanded: the cost stays bounded.
                        return None;
                    }
                    if let Some(first_span) = claims
                        .conflict(&binding)
                        .map(|index: usize| bindings[index].1.clone())
                    {
                        valid = false;
                        let first = self
                            .source
                            .diagnostic(first_span.clone(), String::new(), None);
                        self.error(
                            item.span(),
                            format!("port `{binding}` binds a host address and port that line {} already binds", first.line),
                            Some("give each binding its own host port, or drop one".into()),
                        );
                    } else {
                        claims.claim(&binding, bindings.len());
                        bindings.push((binding, item.span()));
                    }
                }
                Err(None) => valid = false,
                Err(Some((message, span))) => {
                    valid = false;
                    self.error(span, message, Some(PORT_HINT.into()));
                }
            }
        }
        valid.then(|| bindings.into_iter().map(|(binding, _)| binding).collect())
    }

    /// A long-form port. Each key's problem is reported where it is; `Err(None)` means
    /// they are already reported, `Err(Some(..))` is a problem of the table as a whole.
    fn port_table(
        &mut self,
        table: &DeTable<'_>,
        span: Range<usize>,
    ) -> Result<PortBinding, Option<(String, Range<usize>)>> {
        let mut host_ip = None;
        let mut host = None;
        let mut container = None;
        let mut protocol = crate::profile::model::Protocol::Tcp;
        let mut failed = false;
        for (key, item) in table {
            let port_range = |item: &Value<'_>| match item.get_ref() {
                DeValue::Integer(integer) => ports::parse_port_range(
                    &integer_value(integer)
                        .map_or_else(|| integer.to_string(), |port| port.to_string()),
                ),
                DeValue::String(text) => ports::parse_port_range(text),
                other => Err(format!(
                    "a port must be a number or a \"start-end\" range, found {}",
                    other.type_str()
                )),
            };
            let as_text = |item: &Value<'_>| {
                item.get_ref()
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("must be a string, found {}", item.get_ref().type_str()))
            };
            let result = match key.get_ref().as_ref() {
                "host_ip" => as_text(item)
                    .and_then(|text| ports::parse_host_ip(&text))
                    .map(|ip| host_ip = Some(ip)),
                "host" => port_range(item).map(|range| host = Some(range)),
                "container" => port_range(item).map(|range| container = Some(range)),
                "protocol" => as_text(item)
                    .and_then(|text| ports::parse_protocol(&text))
                    .map(|parsed| protocol = parsed),
                _ => {
                    failed = true;
                    self.unknown_key(key, &PORT_KEYS, Some("ports"));
                    Ok(())
                }
            };
            if let Err(message) = result {
                failed = true;
                self.error(
                    item.span(),
                    format!("`{}`: {message}", key.get_ref()),
                    Some(PORT_HINT.into()),
                );
            }
        }
        if failed {
            return Err(None);
        }
        let container = container
            .ok_or_else(|| Some(("a port table needs `container`".to_string(), span.clone())))?;
        ports::make_binding(host_ip, host, container, protocol)
            .map_err(|message| Some((message, span)))
    }

    pub(super) fn mounts(&mut self, value: &Value<'_>) -> Option<Vec<Mount>> {
        let Some(array) = value.get_ref().as_array() else {
            self.type_error(
                "mounts",
                value,
                "an array",
                "mounts = [\"./data:/data:ro\"]",
            );
            return None;
        };
        let mut mounts: Vec<(Mount, Range<usize>)> = Vec::new();
        // Each target's first mount, so that a duplicate is found in one look-up.
        let mut targets: HashMap<String, usize> = HashMap::new();
        let mut valid = true;
        for item in array.iter() {
            let mount = match item.get_ref() {
                DeValue::String(spec) => {
                    mounts::parse_mount_spec(spec).map_err(|message| Some((message, item.span())))
                }
                DeValue::Table(table) => self.mount_table(table, item.span()),
                other => Err(Some((
                    format!(
                        "a mount must be a string or a table, found {}",
                        other.type_str()
                    ),
                    item.span(),
                ))),
            };
            match mount {
                Ok(mount) => {
                    if let Some(&index) = targets.get(&mount.target) {
                        valid = false;
                        let first =
                            self.source
                                .diagnostic(mounts[index].1.clone(), String::new(), None);
                        self.error(
                            item.span(),
                            format!(
                                "mount target `{}` is already used on line {}",
                                mount.target, first.line
                            ),
                            Some("each container path can be mounted once".into()),
                        );
                    } else {
                        targets.insert(mount.target.clone(), mounts.len());
                        mounts.push((mount, item.span()));
                    }
                }
                Err(None) => valid = false,
                Err(Some((message, span))) => {
                    valid = false;
                    self.error(span, message, Some(MOUNT_HINT.into()));
                }
            }
        }
        valid.then(|| mounts.into_iter().map(|(mount, _)| mount).collect())
    }

    /// A long-form mount; like [`Self::port_table`], key problems are reported in place.
    fn mount_table(
        &mut self,
        table: &DeTable<'_>,
        span: Range<usize>,
    ) -> Result<Mount, Option<(String, Range<usize>)>> {
        let mut source = None;
        let mut target = None;
        let mut read_only = false;
        let mut failed = false;
        for (key, item) in table {
            let name = key.get_ref().as_ref();
            match name {
                "source" | "target" => match item.get_ref().as_str() {
                    Some(text) if name == "source" => source = Some(text.to_string()),
                    Some(text) => target = Some(text.to_string()),
                    None => {
                        failed = true;
                        self.error(
                            item.span(),
                            format!(
                                "`{name}` must be a string, found {}",
                                item.get_ref().type_str()
                            ),
                            Some(MOUNT_HINT.into()),
                        );
                    }
                },
                "read_only" => match item.get_ref().as_bool() {
                    Some(flag) => read_only = flag,
                    None => {
                        failed = true;
                        self.error(
                            item.span(),
                            format!(
                                "`read_only` must be true or false, found {}",
                                item.get_ref().type_str()
                            ),
                            Some(MOUNT_HINT.into()),
                        );
                    }
                },
                _ => {
                    failed = true;
                    self.unknown_key(key, &MOUNT_KEYS, Some("mounts"));
                }
            }
        }
        if failed {
            return Err(None);
        }
        let source = source
            .ok_or_else(|| Some(("a mount table needs `source`".to_string(), span.clone())))?;
        let target = target
            .ok_or_else(|| Some(("a mount table needs `target`".to_string(), span.clone())))?;
        mounts::make_mount(&source, &target, read_only).map_err(|message| Some((message, span)))
    }
}
