//! The `docker run` command line that creates the same container as a [`CreateBody`]: what
//! `up --dry-run` and `export --to docker-run` print, and what `tests/it/spec_equivalence.rs`
//! runs to prove the two give identical `docker inspect` output.
//!
//! Built from the body, not from the profile, so the line cannot drift from what envctl
//! sends. Every word is shell-quoted only when it needs it.
//!
//! A secret variable ([`CreateBody::is_secret_env`]) is written `-e KEY`, without its
//! value: docker then takes it from the environment of the shell that runs the line, so
//! the line still makes the same container where the variable is exported, and the
//! value never reaches a terminal, a log or a file. [`CreateBody::secret_env_keys`] says
//! which, for the caller's notice.

use std::collections::BTreeMap;

use crate::profile::size::ByteSize;

use super::body::{
    CreateBody, DeviceMapping, DeviceRequest, HostConfig, Mount, MountType, PortBinding,
};

/// `docker run -d --name NAME …` for `body`, one shell line (POSIX quoting).
pub fn docker_run_line(body: &CreateBody, name: &str) -> String {
    let mut line = String::from("docker");
    for argument in docker_run_arguments(body, name) {
        line.push(' ');
        line.push_str(&shell_quote(&argument));
    }
    line
}

/// The arguments of [`docker_run_line`] after `docker`, unquoted (`run`, `-d`, …), for
/// callers that run docker without a shell.
pub fn docker_run_arguments(body: &CreateBody, name: &str) -> Vec<String> {
    let host = &body.host_config;
    let mut arguments: Vec<String> = vec!["run".into(), "-d".into(), "--name".into(), name.into()];
    for (flag, value) in container_flags(body).into_iter().chain(host_flags(host)) {
        arguments.push(flag.to_string());
        arguments.push(value);
    }
    match host.init {
        Some(true) => arguments.push("--init".into()),
        Some(false) => arguments.push("--init=false".into()),
        None => {}
    }
    let restart = &host.restart_policy;
    if restart.name != "no" {
        let value = if restart.maximum_retry_count > 0 {
            format!("{}:{}", restart.name, restart.maximum_retry_count)
        } else {
            restart.name.clone()
        };
        arguments.push("--restart".into());
        arguments.push(value);
    }
    arguments.push(body.image.clone());
    arguments.extend(body.cmd.iter().cloned());
    arguments
}

/// The flags of the container's own settings: labels, variables (a secret by name only,
/// so its value is read from the caller's environment), working directory, user, hostname.
fn container_flags(body: &CreateBody) -> Vec<(&'static str, String)> {
    let mut flags = Vec::new();
    for (key, value) in &body.labels {
        flags.push(("--label", format!("{key}={value}")));
    }
    for variable in &body.env {
        match variable.split_once('=') {
            Some((key, value)) if body.is_secret_env(key, value) => {
                flags.push(("-e", key.to_string()));
            }
            _ => flags.push(("-e", variable.clone())),
        }
    }
    if let Some(workdir) = &body.working_dir {
        flags.push(("-w", workdir.clone()));
    }
    if let Some(user) = &body.user {
        flags.push(("--user", user.clone()));
    }
    if let Some(hostname) = &body.hostname {
        flags.push(("--hostname", hostname.clone()));
    }
    flags
}

/// The flags of the host config: network, devices, capabilities, limits, IPC, ports,
/// mounts, ulimits and GPUs (a CDI request as `--device NAME`, as Docker 25+ and Podman
/// send it).
fn host_flags(host: &HostConfig) -> Vec<(&'static str, String)> {
    let mut flags = Vec::new();
    if let Some(network) = &host.network_mode {
        flags.push(("--network", network.clone()));
    }
    flags.extend(
        host.devices
            .iter()
            .map(|device| ("--device", device_flag(device))),
    );
    flags.extend(
        host.cap_add
            .iter()
            .map(|capability| ("--cap-add", capability.clone())),
    );
    if let Some(memory) = host.memory {
        flags.push(("--memory", docker_size(memory)));
    }
    if let Some(nanos) = host.nano_cpus {
        flags.push(("--cpus", decimal_cpus(nanos)));
    }
    if let Some(shm) = host.shm_size {
        flags.push(("--shm-size", docker_size(shm)));
    }
    if let Some(ipc) = &host.ipc_mode {
        flags.push(("--ipc", ipc.clone()));
    }
    flags.extend(
        port_flags(&host.port_bindings)
            .into_iter()
            .map(|port| ("-p", port)),
    );
    flags.extend(
        host.mounts
            .iter()
            .map(|mount| ("--mount", mount_flag(mount))),
    );
    flags.extend(host.ulimits.iter().map(|ulimit| {
        (
            "--ulimit",
            format!("{}={}:{}", ulimit.name, ulimit.soft, ulimit.hard),
        )
    }));
    for request in &host.device_requests {
        if super::gpus::is_cdi(request) {
            flags.extend(
                request
                    .device_ids
                    .iter()
                    .flatten()
                    .map(|name| ("--device", name.clone())),
            );
        } else {
            flags.push(("--gpus", gpus_flag(request)));
        }
    }
    flags
}

/// Kept under its old path: quoting is a text helper every layer uses (`text`).
pub use crate::text::shell_quote;

/// Bytes in docker's shortest exact unit (`8g`, `1536m`).
fn docker_size(bytes: i64) -> String {
    u64::try_from(bytes).map_or_else(|_| bytes.to_string(), |bytes| ByteSize(bytes).to_string())
}

/// One binding of one container port, flattened for grouping.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PortEntry {
    /// Position in its key's binding list: flags are emitted in this order, so each key's
    /// bindings come back in the same order when docker parses the flags. Then by
    /// protocol and port, so runs of ports are neighbours.
    position: usize,
    protocol: String,
    container: u16,
    host_ip: String,
    host: Option<u16>,
}

/// `-p` values for `PortBindings`, folding runs of consecutive ports back into ranges
/// (`127.0.0.1:8000-8010:8000-8010/tcp`), which docker expands into the same entries.
fn port_flags(bindings: &BTreeMap<String, Vec<PortBinding>>) -> Vec<String> {
    let mut entries = Vec::new();
    let mut flags = Vec::new();
    for (key, list) in bindings {
        let parsed = key
            .split_once('/')
            .and_then(|(port, protocol)| Some((port.parse::<u16>().ok()?, protocol)));
        for (position, binding) in list.iter().enumerate() {
            let host = match binding.host_port.as_str() {
                "" => Some(None),
                text => text.parse::<u16>().ok().map(Some),
            };
            match (parsed, host) {
                (Some((container, protocol)), Some(host)) => entries.push(PortEntry {
                    position,
                    protocol: protocol.to_string(),
                    host_ip: binding.host_ip.clone(),
                    container,
                    host,
                }),
                // Not a shape envctl writes; pass it through unfolded.
                _ => flags.push(format!(
                    "{}:{}:{key}",
                    bracketed(&binding.host_ip),
                    binding.host_port
                )),
            }
        }
    }
    entries.sort();
    let mut runs: Vec<(PortEntry, PortEntry)> = Vec::new();
    for entry in entries {
        if let Some((_, last)) = runs.last_mut() {
            let follows = |previous: u16, next: u16| previous.checked_add(1) == Some(next);
            let hosts_follow = match (last.host, entry.host) {
                (None, None) => true,
                (Some(previous), Some(next)) => follows(previous, next),
                _ => false,
            };
            if last.position == entry.position
                && last.protocol == entry.protocol
                && last.host_ip == entry.host_ip
                && follows(last.container, entry.container)
                && hosts_follow
            {
                *last = entry;
                continue;
            }
        }
        runs.push((entry.clone(), entry));
    }
    let range = |start: u16, end: u16| {
        if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        }
    };
    flags.extend(runs.iter().map(|(first, last)| {
        let host = match (first.host, last.host) {
            (Some(start), Some(end)) => range(start, end),
            _ => String::new(),
        };
        format!(
            "{}:{host}:{}/{}",
            bracketed(&first.host_ip),
            range(first.container, last.container),
            first.protocol
        )
    }));
    flags
}

/// IPv6 addresses go in brackets in `-p`.
fn bracketed(host_ip: &str) -> String {
    if host_ip.contains(':') {
        format!("[{host_ip}]")
    } else {
        host_ip.to_string()
    }
}

/// `--device HOST[:CONTAINER][:PERMISSIONS]`, as short as reads back the same.
pub fn device_flag(device: &DeviceMapping) -> String {
    let mut flag = device.path_on_host.clone();
    if device.path_in_container != device.path_on_host {
        flag.push(':');
        flag.push_str(&device.path_in_container);
    }
    if device.cgroup_permissions != crate::profile::host_access::DEFAULT_DEVICE_PERMISSIONS {
        flag.push(':');
        flag.push_str(&device.cgroup_permissions);
    }
    flag
}

fn mount_flag(mount: &Mount) -> String {
    let kind = match mount.kind {
        MountType::Bind => "bind",
        MountType::Volume => "volume",
    };
    mount_value(kind, &mount.source, &mount.target, mount.read_only)
}

/// A `--mount` value, `type=bind,source=/x,target=/y,readonly`; docker reads it as one CSV
/// record, so a field holding `,` or `"` is CSV-quoted. The devcontainer export writes its
/// `mounts` and `runArgs` with it too.
pub fn mount_value(kind: &str, source: &str, target: &str, read_only: bool) -> String {
    let mut fields = vec![
        format!("type={kind}"),
        format!("source={source}"),
        format!("target={target}"),
    ];
    if read_only {
        fields.push("readonly".into());
    }
    let fields: Vec<String> = fields.iter().map(|field| csv_field(field)).collect();
    fields.join(",")
}

/// One field of a CSV record as docker's flag parser reads it (`--mount`, `--gpus`):
/// quoted, with `"` doubled, when it holds `,`, `"` or a line break.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// `--gpus` as the docker CLI reads it: `all`, `2`, or `"device=0,1"` with the quotes
/// inside the argument (docker splits the value as CSV, so the quotes keep the IDs
/// together; the devcontainer export runs docker without a shell and passes it as is).
/// Only plain GPU requests, the kind `create_body` makes, have a `--gpus` spelling.
pub fn gpus_flag(request: &DeviceRequest) -> String {
    match &request.device_ids {
        Some(devices) if !devices.is_empty() => csv_field(&format!("device={}", devices.join(","))),
        _ if request.count < 0 => "all".into(),
        _ => request.count.to_string(),
    }
}

use crate::units::decimal_cpus;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("envctl.profile=a"), "envctl.profile=a");
        assert_eq!(
            shell_quote("127.0.0.1:8888:8888/tcp"),
            "127.0.0.1:8888:8888/tcp"
        );
        assert_eq!(shell_quote("[::1]:1:1/tcp"), "'[::1]:1:1/tcp'");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("\"device=0,1\""), "'\"device=0,1\"'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn control_characters_are_quoted_as_escapes() {
        assert_eq!(
            shell_quote("a\u{1b}]0;x\u{7}b c'd\\e\nf\r\u{202e}"),
            r"$'a\x1b]0;x\x07b c\'d\\e\nf\x0d\xe2\x80\xae'"
        );
    }

    #[test]
    fn cpus_and_sizes_read_back_exactly() {
        assert_eq!(decimal_cpus(1_500_000_000), "1.5");
        assert_eq!(decimal_cpus(2_000_000_000), "2");
        assert_eq!(decimal_cpus(10_000_000), "0.01");
        assert_eq!(decimal_cpus(1), "0.000000001");
        assert_eq!(docker_size(8 << 30), "8g");
        assert_eq!(docker_size(1536 << 20), "1536m");
    }

    #[test]
    fn port_runs_fold_into_ranges_keeping_order_per_port() {
        let binding = |ip: &str, port: &str| PortBinding {
            host_ip: ip.into(),
            host_port: port.into(),
        };
        let bindings = BTreeMap::from([
            ("8000/tcp".to_string(), vec![binding("127.0.0.1", "9000")]),
            ("8001/tcp".to_string(), vec![binding("127.0.0.1", "9001")]),
            ("8002/tcp".to_string(), vec![binding("127.0.0.1", "9005")]),
            (
                "8888/tcp".to_string(),
                vec![binding("::1", "18888"), binding("127.0.0.1", "18888")],
            ),
            ("53/udp".to_string(), vec![binding("0.0.0.0", "")]),
            ("54/udp".to_string(), vec![binding("0.0.0.0", "")]),
        ]);
        assert_eq!(
            port_flags(&bindings),
            [
                "127.0.0.1:9000-9001:8000-8001/tcp",
                "127.0.0.1:9005:8002/tcp",
                "[::1]:18888:8888/tcp",
                "0.0.0.0::53-54/udp",
                "127.0.0.1:18888:8888/tcp",
            ]
        );
    }

    fn body_with(text: &str, env_specs: &[&str]) -> CreateBody {
        use crate::container_plan::{Overrides, SpecContext, create_body};
        let resolved = crate::profile::resolve::resolve_text("p.toml", text).unwrap();
        let specs: Vec<String> = env_specs.iter().map(|spec| spec.to_string()).collect();
        let shell = |key: &str| (key == "FROM_SHELL").then(|| "shell-value".to_string());
        let exists = |_: &std::path::Path| true;
        let context = SpecContext {
            working_directory: std::path::PathBuf::from("/work"),
            home: None,
            host_has_gpus: false,
            overrides: Overrides::parse(&specs, &[], &[], &shell).unwrap(),
            path_exists: &exists,
        };
        create_body(&resolved, &context).unwrap()
    }

    #[test]
    fn secret_values_are_left_to_the_shell() {
        let body = body_with(
            "image = \"busybox\"\nenv = { API_TOKEN = \"supersecret\", DB_PASSWORD = \"hunter2\", FLAG = \"on\" }\n",
            &["FROM_SHELL", "GIVEN=visible"],
        );
        let line = docker_run_line(&body, "c");
        for secret in ["supersecret", "hunter2", "shell-value"] {
            assert!(!line.contains(secret), "{line}");
        }
        for flag in [
            "-e API_TOKEN ",
            "-e DB_PASSWORD ",
            "-e FROM_SHELL ",
            "-e FLAG=on ",
            "-e GIVEN=visible ",
        ] {
            assert!(line.contains(flag), "{flag} in {line}");
        }
        assert_eq!(
            body.secret_env_keys(),
            ["API_TOKEN", "DB_PASSWORD", "FROM_SHELL"]
        );
        // The body sent keeps the values; the masked one, for showing, does not.
        assert!(body.env.contains(&"API_TOKEN=supersecret".to_string()));
        assert!(body.env.contains(&"FROM_SHELL=shell-value".to_string()));
        let masked = body.masked();
        assert_eq!(
            masked.env,
            [
                "API_TOKEN=<masked>",
                "DB_PASSWORD=<masked>",
                "FLAG=on",
                "FROM_SHELL=<masked>",
                "GIVEN=visible"
            ]
        );
        assert!(
            !serde_json::to_string(&body)
                .unwrap()
                .contains("env_from_shell"),
            "the shell keys are not part of the request"
        );
    }

    #[test]
    fn host_access_flags_read_back_as_docker_reads_them() {
        let body = body_with(
            "image = \"busybox\"\nnetwork = \"host\"\ndevices = [\"/dev/infiniband\", \"/dev/fuse:/dev/f:rw\"]\ncap_add = [\"ipc_lock\", \"ALL\"]\nhostname = \"node-0\"\n",
            &[],
        );
        let line = docker_run_line(&body, "c");
        for flag in [
            " --hostname node-0 ",
            " --network host ",
            " --device /dev/infiniband ",
            " --device /dev/fuse:/dev/f:rw ",
            " --cap-add CAP_IPC_LOCK ",
            " --cap-add ALL ",
        ] {
            assert!(line.contains(flag), "{flag} in {line}");
        }
    }

    #[test]
    fn ports_from_flags_on_a_host_network_are_refused() {
        use crate::container_plan::{Overrides, SpecContext, SpecError, create_body};
        let resolved = crate::profile::resolve::resolve_text(
            "p.toml",
            "image = \"busybox\"\nnetwork = \"host\"\n",
        )
        .unwrap();
        let shell = |_: &str| None;
        let exists = |_: &std::path::Path| true;
        let context = SpecContext {
            working_directory: std::path::PathBuf::from("/work"),
            home: None,
            host_has_gpus: false,
            overrides: Overrides::parse(&[], &["8888:8888".to_string()], &[], &shell).unwrap(),
            path_exists: &exists,
        };
        let error = create_body(&resolved, &context).unwrap_err();
        assert!(
            matches!(&error, SpecError::PortsWithoutNetwork { network, .. } if network == "host"),
            "{error:?}"
        );
        assert!(error.hint().is_some_and(|hint| hint.contains("drop `-p`")));
    }

    #[test]
    fn mount_fields_with_commas_are_csv_quoted() {
        let mount = Mount {
            kind: MountType::Bind,
            source: "/data/a,b".into(),
            target: "/data".into(),
            read_only: true,
        };
        assert_eq!(
            mount_flag(&mount),
            "type=bind,\"source=/data/a,b\",target=/data,readonly"
        );
    }
}
