//! Profile safety findings: what a profile exposes or risks on the host, each with the
//! safer setting as its hint. Pure over the resolved profile.
//!
//! Finding ids: `profile.port-exposed`, `profile.service-exposed`,
//! `profile.docker-socket-mount`, `profile.sensitive-mount`, `profile.shm-size`,
//! `profile.memory-limit`, `profile.no-mount`, `profile.user`, `profile.ipc-host`,
//! `profile.literal-secret`, `profile.host-network`, `profile.cap-add`,
//! `profile.sensitive-device`.
//!
//! [`root_equivalent`] is the trust rule's half of the same judgement: the settings that
//! hand the container root on the host (or the user's whole account), which `up` and `run`
//! take from a repository profile only with an explicit yes (`ops::trust`).

use std::path::Path;

use serde::Serialize;

use super::Finding;
use crate::profile::ResolvedProfile;
use crate::profile::model::{Ipc, Mount, MountKind, PortBinding, Profile};

/// Ports whose services run code for whoever reaches them, with their usual names.
const SENSITIVE_PORTS: [(u16, &str, &str); 3] = [
    (
        8888,
        "Jupyter",
        "set a token or password (`--ServerApp.token`), or keep it on 127.0.0.1 and use an SSH tunnel",
    ),
    (
        22,
        "SSH",
        "allow keys only (`PasswordAuthentication no`), or keep it on 127.0.0.1",
    ),
    (
        6006,
        "TensorBoard",
        "TensorBoard has no authentication; keep it on 127.0.0.1 and use an SSH tunnel",
    ),
];

/// Docker sockets: mounting one gives the container root on the host.
const DOCKER_SOCKETS: [&str; 3] = ["/var/run/docker.sock", "/run/docker.sock", "/run/user"];

/// Whether the image is a PyTorch one (DataLoader workers then need shared memory).
pub fn is_pytorch(profile: &Profile) -> bool {
    profile.stack.torch.is_some() || profile.image.repository.contains("pytorch")
}

/// Every safety finding for `profile`; `home` is the user's home folder, to recognise `~`.
pub fn check(profile: &Profile, home: Option<&Path>) -> Vec<Finding> {
    let mut findings: Vec<Finding> = profile.ports.iter().filter_map(exposed_port).collect();
    findings.extend(
        profile
            .mounts
            .iter()
            .filter_map(|mount| risky_mount(mount, home)),
    );
    findings.extend(shared_memory(profile));
    findings.extend(host_access(profile));
    findings.extend(missing_limits(profile));
    findings
}

/// A port published beyond loopback: a service known to be unsafe there (Jupyter, SSH…)
/// by name, any other as a port every interface of the host publishes.
fn exposed_port(port: &PortBinding) -> Option<Finding> {
    if port.host_ip.is_loopback() {
        return None;
    }
    let host = port.host?;
    let sensitive = SENSITIVE_PORTS
        .iter()
        .find(|(number, _, _)| port.container.start <= *number && *number <= port.container.end);
    Some(match sensitive {
        Some((_, service, hint)) => Finding::warn(
            "profile.service-exposed",
            format!("{service} (container port {}) is published on {} port {host}: anyone who reaches this host can use it", port.container, port.host_ip),
        )
        .with_hint(*hint)
        .with_fact("port", port.to_string()),
        None => Finding::warn(
            "profile.port-exposed",
            format!("port {port} is published on {}, every network interface of the host", port.host_ip),
        )
        .with_hint(format!("bind it to loopback: \"127.0.0.1:{host}:{}\"", port.container))
        .with_fact("port", port.to_string()),
    })
}

/// A bind mount of a container engine's socket (root on the host), or of a sensitive
/// folder of the host or of the user's `home`.
fn risky_mount(mount: &Mount, home: Option<&Path>) -> Option<Finding> {
    if mount.kind != MountKind::Bind {
        return None;
    }
    let source = expand_home(&mount.source, home);
    let normalized = source.trim_end_matches('/');
    // The socket itself, or a folder it lies in (`/var/run`, `/run`, `/var`): the
    // container reaches it either way.
    if holds_engine_socket(normalized) {
        return Some(
            Finding::warn(
                "profile.docker-socket-mount",
                format!("`{}` mounts a container engine's socket (Docker's, Podman's, containerd's) or a folder holding one: the container can control the daemon, which is root on the host", mount.source),
            )
            .with_hint("remove the mount; if the container must build images, use a rootless Docker or a remote builder")
            .with_fact("mount", mount.to_string()),
        );
    }
    let what = sensitive_mount(normalized, home)?;
    let access = if mount.read_only {
        "read-only"
    } else {
        "read-write"
    };
    Some(
        Finding::warn("profile.sensitive-mount", format!("`{}` mounts {what} into the container, {access}", mount.source))
            .with_hint("mount only the project folder the job needs, e.g. \"./:/workspace\", and add `:ro` where it only reads")
            .with_fact("mount", mount.to_string()),
    )
}

/// Shared memory: too little of it for a PyTorch image's DataLoader workers, or the
/// host's own IPC namespace shared.
fn shared_memory(profile: &Profile) -> Vec<Finding> {
    let mut findings = Vec::new();
    if is_pytorch(profile) && profile.shm_size.is_none() && profile.ipc != Some(Ipc::Host) {
        findings.push(
            Finding::warn(
                "profile.shm-size",
                "no `shm_size` for a PyTorch image: Docker's default /dev/shm is 64 MiB, and DataLoader workers fail with `Bus error` once batches outgrow it",
            )
            .with_hint("add shm_size = \"8g\" (or more for large batches)"),
        );
    }
    if profile.ipc == Some(Ipc::Host) {
        // The one namespace a profile can share with the host: privileged-like in effect.
        findings.push(
            Finding::info("profile.ipc-host", "`ipc = \"host\"` shares the host's IPC namespace: the container can read and write every host process's shared memory")
                .with_hint("prefer shm_size = \"8g\" unless processes in several containers must share memory"),
        );
    }
    findings
}

/// What the profile leaves to chance: no memory limit, no mount to keep results, no user
/// (so root writes on mounts).
fn missing_limits(profile: &Profile) -> Vec<Finding> {
    let mut findings = Vec::new();
    if profile.memory.is_none() {
        findings.push(
            Finding::info(
                "profile.memory-limit",
                "no `memory` limit: a leak in the job can push the whole host into the OOM killer",
            )
            .with_hint("set memory = \"32g\" (or what the job needs) to contain it"),
        );
    }
    if profile.mounts.is_empty() {
        findings.push(
            Finding::warn(
                "profile.no-mount",
                "no mount: everything the job writes is lost with the container",
            )
            .with_hint(
                "mount a folder for checkpoints and results, e.g. mounts = [\"./:/workspace\"]",
            ),
        );
    }
    if profile.user.is_none() {
        findings.push(
            Finding::info("profile.user", "no `user`: the container runs as the image's user, usually root, and files it writes on mounts belong to root")
                .with_hint("set user = \"1000:1000\" (your `id -u`:`id -g`) to own what it writes"),
        );
    }
    findings
}

/// What each capability lets a container do to the host, for the ones that matter most;
/// the rest are named with the general reason.
const CAPABILITY_REASONS: [(&str, &str); 9] = [
    (
        "ALL",
        "every capability: as good as `--privileged` for what the kernel checks",
    ),
    (
        "SYS_ADMIN",
        "mount file systems and much more: the usual way out of a container to root on the host",
    ),
    (
        "NET_ADMIN",
        "change interfaces, routes and firewall rules (of the host's network with `network = \"host\"`)",
    ),
    (
        "NET_RAW",
        "craft raw packets and sniff the traffic it can see",
    ),
    (
        "SYS_PTRACE",
        "trace and read the memory of the processes it can see",
    ),
    ("SYS_MODULE", "load kernel modules: root on the host"),
    ("SYS_RAWIO", "raw I/O ports and device memory"),
    (
        "DAC_READ_SEARCH",
        "open host files by handle, past every permission (the \"shocker\" escape)",
    ),
    (
        "IPC_LOCK",
        "lock any amount of memory, which RDMA needs for NCCL over InfiniBand; a leak can pin the host's RAM",
    ),
];

/// `network = "host"` and added capabilities are warnings with their reasons, as the
/// Docker socket mount is; a device node that reaches host memory or disks is one too.
fn host_access(profile: &Profile) -> Vec<Finding> {
    let mut findings = Vec::new();
    if profile.network.as_ref().map(|network| network.as_str()) == Some("host") {
        findings.push(
            Finding::warn(
                "profile.host-network",
                "`network = \"host\"` shares the host's network: every port the container listens on is open on all of the host's interfaces, and it reaches services the host binds to 127.0.0.1",
            )
            .with_hint("keep it for multi-node training (NCCL over InfiniBand/RoCE) on a trusted network; on one machine leave `network` out and publish ports on 127.0.0.1"),
        );
    }
    for capability in &profile.cap_add {
        let reason = CAPABILITY_REASONS
            .iter()
            .find(|(name, _)| name == capability)
            .map_or(
                "a power Docker leaves out of containers by default",
                |(_, reason)| reason,
            );
        findings.push(
            Finding::warn(
                "profile.cap-add",
                format!("`cap_add` gives the container `{capability}`: {reason}"),
            )
            .with_hint("add only what the job needs: NCCL over InfiniBand needs IPC_LOCK alone")
            .with_fact("capability", capability),
        );
    }
    for device in &profile.devices {
        if let Some(what) = sensitive_device(&device.host) {
            findings.push(
                Finding::warn(
                    "profile.sensitive-device",
                    format!("`devices` gives the container `{}`, {what}", device.host),
                )
                .with_hint("give only the devices the job uses, e.g. \"/dev/infiniband\" for RDMA")
                .with_fact("device", device.to_string()),
            );
        }
    }
    findings
}

/// What a device node reaches, when it reaches the host's memory, disks or every device.
fn sensitive_device(path: &str) -> Option<&'static str> {
    let name = path.strip_prefix("/dev/")?;
    let disk = [
        "sd", "nvme", "vd", "xvd", "hd", "mmcblk", "dm-", "md", "loop",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix));
    match name {
        "mem" | "kmem" | "port" => {
            Some("the host's physical memory or I/O ports: root on the host")
        }
        "" => Some("every device of the host"),
        "mapper" | "disk" => {
            Some("the host's disks: it can read and write them under any file system")
        }
        _ if disk => Some("a host disk: it can read and write it under any file system"),
        _ => None,
    }
}

/// One `profile.literal-secret` warning per secret-looking env key (`crate::secret`) that
/// the profile gives a value: whoever reads the file (or its repository) reads the secret.
/// Names the key and the file that sets it, never the value.
pub fn literal_secrets(resolved: &ResolvedProfile) -> Vec<Finding> {
    let profile = &resolved.profile;
    profile
        .env
        .iter()
        .filter(|(key, value)| !value.is_empty() && crate::secret::is_secret(key, value))
        .map(|(key, _)| {
            let file = resolved
                .origins
                .get(&format!("env.{key}"))
                .unwrap_or(&resolved.file);
            Finding::warn(
                "profile.literal-secret",
                format!("`env.{key}` in {file} is a literal secret: whoever can read the file can read it"),
            )
            .with_hint(format!(
                "remove it from the profile and pass it from your shell: `export {key}=…`, then `envctl up {} -e {key}`",
                profile.name
            ))
            .with_fact("key", key)
            .with_fact("file", file)
        })
        .collect()
}

/// What a bind mount of the host path `normalized` (no trailing `/`, `~` expanded) gives
/// the container, when that is the host's system or the user's keys or home.
fn sensitive_mount(normalized: &str, home: Option<&Path>) -> Option<&'static str> {
    let home_text = home.map(|home| home.display().to_string());
    match normalized {
        "" => Some("the host's root filesystem"),
        "/etc" => Some("the host's configuration (/etc)"),
        "/proc" => Some("every host process (/proc: their environments, memory and files)"),
        "/sys" => Some("the kernel's settings (/sys)"),
        "/dev" => Some("the host's devices (/dev)"),
        "/boot" => Some("the host's kernel and boot files (/boot)"),
        "/root" => Some("root's home folder"),
        "/var/lib/docker" => Some("Docker's own data (/var/lib/docker)"),
        _ if normalized.starts_with("/proc/") => Some("part of the host's /proc"),
        _ if normalized.starts_with("/etc/") => Some("part of the host's configuration (/etc)"),
        _ if normalized.ends_with("/.ssh") || normalized.contains("/.ssh/") => {
            Some("SSH keys (~/.ssh)")
        }
        _ if home_text.as_deref() == Some(normalized) => Some("your whole home folder"),
        _ => None,
    }
}

/// Whether a bind mount of `normalized` reaches a container engine's socket (the socket,
/// or a folder it lies in: `/var/run`, `/run`, `/var`).
fn holds_engine_socket(normalized: &str) -> bool {
    let holds_socket = |socket: &str| {
        !normalized.is_empty()
            && socket
                .strip_prefix(normalized)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    DOCKER_SOCKETS.iter().any(|socket| {
        normalized == *socket
            || (normalized.ends_with("docker.sock") && normalized.starts_with(socket))
            || holds_socket(socket)
    }) || ENGINE_SOCKETS.iter().any(|socket| {
        normalized == *socket
            || normalized.starts_with(&format!("{socket}/"))
            || holds_socket(socket)
    })
}

/// The other engines' sockets and state a mount must not reach either (Podman's, containerd's,
/// CRI-O's): each one is root on the host as Docker's is.
const ENGINE_SOCKETS: [&str; 6] = [
    "/run/podman",
    "/var/run/podman",
    "/run/containerd",
    "/var/run/containerd",
    "/run/crio",
    "/var/lib/containers",
];

/// The host's own programs and libraries: a read-write mount of one replaces what root runs.
const SYSTEM_FOLDERS: [&str; 7] = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/opt"];

/// Capabilities that are root on the host (or past every file permission) in a container's
/// hands; `IPC_LOCK` (NCCL over InfiniBand) and `SYS_NICE` are not among them.
const ROOT_CAPABILITIES: [&str; 14] = [
    "ALL",
    "SYS_ADMIN",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_PTRACE",
    "SYS_BOOT",
    "SYS_TIME",
    "DAC_READ_SEARCH",
    "NET_ADMIN",
    "BPF",
    "PERFMON",
    "MAC_ADMIN",
    "MAC_OVERRIDE",
    "SYSLOG",
];

/// One setting that gives the container root on the host (or the user's whole account):
/// the profile key, the value as the profile writes it, and what it gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootEquivalent {
    /// The profile key: `mounts`, `cap_add`, `devices`, `network` or `ipc`.
    pub key: &'static str,
    /// The entry as the profile writes it (`/:/host`, `SYS_ADMIN`, `host`).
    pub value: String,
    /// What it gives the container.
    pub gives: String,
}

/// Every root-equivalent setting of `profile`, in the profile's order of keys: bind mounts
/// of the host's root, system folders, engine sockets, keys or home (judged on the source as
/// written and, through `real_source`, on the real path a link in it leads to); dangerous
/// capabilities; device nodes of memory and disks; the host's network and IPC namespaces.
/// `real_source` gives the real host path of a bind mount's source when it is known (the
/// source exists on this machine), so `./link-to-root:/host` is judged as `/:/host`.
pub fn root_equivalent(
    profile: &Profile,
    home: Option<&Path>,
    real_source: &dyn Fn(&Mount) -> Option<std::path::PathBuf>,
) -> Vec<RootEquivalent> {
    let mut found: Vec<RootEquivalent> = profile
        .mounts
        .iter()
        .filter_map(|mount| root_mount(mount, home, real_source))
        .collect();
    found.extend(
        profile
            .cap_add
            .iter()
            .filter(|capability| ROOT_CAPABILITIES.contains(&capability.as_str()))
            .map(|capability| RootEquivalent {
                key: "cap_add",
                value: capability.clone(),
                gives: CAPABILITY_REASONS
                    .iter()
                    .find(|(name, _)| name == capability)
                    .map_or(
                        "a power that reaches past the container to the host",
                        |(_, reason)| reason,
                    )
                    .to_string(),
            }),
    );
    found.extend(profile.devices.iter().filter_map(|device| {
        sensitive_device(&device.host).map(|what| RootEquivalent {
            key: "devices",
            value: device.to_string(),
            gives: what.to_string(),
        })
    }));
    if profile.network.as_ref().map(|network| network.as_str()) == Some("host") {
        found.push(RootEquivalent {
            key: "network",
            value: "host".into(),
            gives:
                "the host's network: every service the host binds to 127.0.0.1, and its interfaces"
                    .into(),
        });
    }
    if profile.ipc == Some(Ipc::Host) {
        found.push(RootEquivalent {
            key: "ipc",
            value: "host".into(),
            gives: "the host's IPC namespace: every host process's shared memory".into(),
        });
    }
    found
}

/// A bind mount that gives the host away, judged on its source as written and on the
/// real path a link in it leads to (`real_source`).
fn root_mount(
    mount: &Mount,
    home: Option<&Path>,
    real_source: &dyn Fn(&Mount) -> Option<std::path::PathBuf>,
) -> Option<RootEquivalent> {
    if mount.kind != MountKind::Bind {
        return None;
    }
    let written = expand_home(&mount.source, home);
    let real = real_source(mount).map(|path| path.display().to_string());
    let gives = root_source(&written, home).or_else(|| {
        real.as_deref().and_then(|real| {
            root_source(real, home).map(|what| format!("{what}, through a link to `{real}`"))
        })
    })?;
    let access = if mount.read_only {
        "read-only"
    } else {
        "read-write"
    };
    Some(RootEquivalent {
        key: "mounts",
        value: mount.to_string(),
        gives: format!("{gives}, {access}"),
    })
}

/// What a bind mount of host path `source` gives the container, when it gives the host
/// away: an engine's socket, a sensitive folder, or the host's programs.
fn root_source(source: &str, home: Option<&Path>) -> Option<String> {
    let normalized = source.trim_end_matches('/');
    if holds_engine_socket(normalized) {
        return Some(
            "the container engine's socket: control of the daemon, which is root on the host"
                .into(),
        );
    }
    if let Some(what) = sensitive_mount(normalized, home) {
        return Some(what.to_string());
    }
    SYSTEM_FOLDERS
        .iter()
        .find(|folder| normalized == **folder || normalized.starts_with(&format!("{folder}/")))
        .map(|folder| format!("the host's programs ({folder})"))
}

fn expand_home(source: &str, home: Option<&Path>) -> String {
    match (source.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", home.display())
        }
        _ => source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;

    fn profile(text: &str) -> Profile {
        match crate::profile::resolve::resolve_text("test.toml", text) {
            Ok(resolved) => resolved.profile,
            Err(error) => panic!("{error}: {:?}", error.diagnostics()),
        }
    }

    fn ids(findings: &[Finding]) -> Vec<(&str, Status)> {
        findings
            .iter()
            .map(|finding| (finding.id.as_str(), finding.status))
            .collect()
    }

    #[test]
    fn a_bind_source_gives_the_host_away_by_what_it_holds() {
        assert!(
            root_source("/var/run/docker.sock", None)
                .is_some_and(|what| what.contains("engine's socket"))
        );
        assert_eq!(
            root_source("/usr/local/", None).as_deref(),
            Some("the host's programs (/usr)")
        );
        assert_eq!(root_source("/usrdata", None), None);
        assert_eq!(root_source("/data/project", None), None);
    }

    #[test]
    fn a_careful_profile_has_no_warnings() {
        let findings = check(
            &profile(
                "image = \"pytorch/pytorch:2.8.0\"\nuser = \"1000\"\nmemory = \"8g\"\nshm_size = \"8g\"\nports = [\"8888:8888\"]\nmounts = [\"./:/workspace\"]\n",
            ),
            Some(Path::new("/home/ada")),
        );
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn exposed_ports_and_services() {
        let findings = check(
            &profile(
                "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"./:/w\"]\nports = [\"0.0.0.0:8888:8888\", \"[::]:2222:22\", \"0.0.0.0:9000:9000\", \"127.0.0.1:22:22\"]\n",
            ),
            None,
        );
        assert_eq!(
            ids(&findings),
            [
                ("profile.service-exposed", Status::Warn),
                ("profile.service-exposed", Status::Warn),
                ("profile.port-exposed", Status::Warn)
            ]
        );
        assert!(findings[0].message.contains("Jupyter"));
        assert!(findings[1].message.contains("SSH"));
        assert_eq!(
            findings[2].hint.as_deref(),
            Some("bind it to loopback: \"127.0.0.1:9000:9000\"")
        );
    }

    #[test]
    fn literal_secrets_are_named_by_key_and_file_without_their_value() {
        let resolved = crate::profile::resolve::resolve_text(
            "team/p.toml",
            "image = \"x\"\nenv = { API_TOKEN = \"supersecret\", DB_PASSWORD = \"hunter2\", EMPTY_TOKEN = \"\", TOKENIZERS_PARALLELISM = \"false\", KEYBOARD = \"us\" }\n",
        )
        .unwrap();
        let findings = literal_secrets(&resolved);
        assert_eq!(
            ids(&findings),
            [
                ("profile.literal-secret", Status::Warn),
                ("profile.literal-secret", Status::Warn)
            ]
        );
        assert_eq!(
            findings[0].message,
            "`env.API_TOKEN` in team/p.toml is a literal secret: whoever can read the file can read it"
        );
        assert!(
            findings[0]
                .hint
                .as_deref()
                .is_some_and(|hint| hint.contains("-e API_TOKEN")),
            "{findings:?}"
        );
        assert!(findings[1].message.contains("`env.DB_PASSWORD`"));
        let text = serde_json::to_string(&findings).unwrap();
        assert!(
            !text.contains("supersecret") && !text.contains("hunter2"),
            "{text}"
        );
    }

    #[test]
    fn dangerous_mounts() {
        let findings = check(
            &profile(
                "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"/var/run/docker.sock:/var/run/docker.sock\", \"/:/host:ro\", \"/etc:/e\", \"~/.ssh:/root/.ssh\", \"~:/home\", \"./data:/data\", \"cache:/cache\"]\n",
            ),
            Some(Path::new("/home/ada")),
        );
        assert_eq!(
            ids(&findings),
            [
                ("profile.docker-socket-mount", Status::Warn),
                ("profile.sensitive-mount", Status::Warn),
                ("profile.sensitive-mount", Status::Warn),
                ("profile.sensitive-mount", Status::Warn),
                ("profile.sensitive-mount", Status::Warn),
            ]
        );
        assert!(findings[1].message.contains("read-only"));
    }

    #[test]
    fn folders_holding_the_socket_and_the_hosts_proc_are_dangerous_too() {
        for (mount, id) in [
            ("/var/run:/x", "profile.docker-socket-mount"),
            ("/run:/x", "profile.docker-socket-mount"),
            ("/run/:/x", "profile.docker-socket-mount"),
            ("/var:/x", "profile.docker-socket-mount"),
            ("/proc:/x", "profile.sensitive-mount"),
            ("/proc/1:/x", "profile.sensitive-mount"),
            ("/sys:/x", "profile.sensitive-mount"),
            ("/dev:/x", "profile.sensitive-mount"),
        ] {
            let findings = check(
                &profile(&format!(
                    "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"{mount}\"]\n"
                )),
                None,
            );
            assert_eq!(ids(&findings), [(id, Status::Warn)], "{mount}");
        }
        let harmless = check(
            &profile(
                "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"/var/data:/x\", \"/running:/y\"]\n",
            ),
            None,
        );
        assert!(ids(&harmless).is_empty(), "{:?}", ids(&harmless));
    }

    #[test]
    fn host_network_capabilities_and_disks_are_warnings_with_reasons() {
        let findings = check(
            &profile(
                "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"./:/w\"]\nnetwork = \"host\"\ncap_add = [\"IPC_LOCK\", \"sys_admin\", \"SETFCAP\"]\ndevices = [\"/dev/infiniband\", \"/dev/sda\", \"/dev/mem\"]\n",
            ),
            None,
        );
        assert_eq!(
            ids(&findings),
            [
                ("profile.host-network", Status::Warn),
                ("profile.cap-add", Status::Warn),
                ("profile.cap-add", Status::Warn),
                ("profile.cap-add", Status::Warn),
                ("profile.sensitive-device", Status::Warn),
                ("profile.sensitive-device", Status::Warn),
            ]
        );
        assert!(findings[1].message.contains("RDMA"), "{:?}", findings[1]);
        assert!(findings[2].message.contains("SYS_ADMIN"));
        assert!(findings[3].message.contains("by default"));
        assert!(findings[4].message.contains("/dev/sda"));
        assert!(findings.iter().all(|finding| finding.hint.is_some()));
        // A named network and RDMA devices alone are not findings.
        let quiet = check(
            &profile(
                "image = \"x\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"./:/w\"]\nnetwork = \"train\"\ndevices = [\"/dev/infiniband\"]\n",
            ),
            None,
        );
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    #[test]
    fn pytorch_without_shared_memory_and_bare_profiles() {
        let findings = check(
            &profile("image = \"x\"\n[stack]\ntorch = \"2.8.0\"\n"),
            None,
        );
        assert_eq!(
            ids(&findings),
            [
                ("profile.shm-size", Status::Warn),
                ("profile.memory-limit", Status::Info),
                ("profile.no-mount", Status::Warn),
                ("profile.user", Status::Info),
            ]
        );
        let host_ipc = check(
            &profile(
                "image = \"pytorch/pytorch\"\nipc = \"host\"\nuser = \"1\"\nmemory = \"1g\"\nmounts = [\"./:/w\"]\n",
            ),
            None,
        );
        assert_eq!(
            ids(&host_ipc),
            [("profile.ipc-host", Status::Info)],
            "ipc = host needs no shm_size, and is named as the host namespace it is"
        );
    }

    #[test]
    fn root_equivalent_settings_and_their_harmless_neighbours() {
        let judged = |text: &str| {
            let profile = profile(&format!("image = \"x\"\n{text}"));
            root_equivalent(&profile, Some(Path::new("/home/ada")), &|mount| {
                (mount.source == "./rootfs").then(|| std::path::PathBuf::from("/"))
            })
            .into_iter()
            .map(|setting| (setting.key, setting.value))
            .collect::<Vec<_>>()
        };
        assert_eq!(
            judged(
                "mounts = [\"/:/h:ro\", \"./rootfs:/r\", \"./data:/d\", \"/run/containerd:/c\", \"/usr/lib:/l\", \"~:/home\", \"cache:/cache\"]\n"
            ),
            [
                ("mounts", "/:/h:ro".to_string()),
                ("mounts", "./rootfs:/r".to_string()),
                ("mounts", "/run/containerd:/c".to_string()),
                ("mounts", "/usr/lib:/l".to_string()),
                ("mounts", "~:/home".to_string()),
            ]
        );
        assert_eq!(
            judged(
                "cap_add = [\"IPC_LOCK\", \"SYS_NICE\", \"BPF\", \"all\"]\nnetwork = \"host\"\nports = []\nipc = \"host\"\ndevices = [\"/dev/infiniband\", \"/dev/nvme0n1\"]\n"
            ),
            [
                ("cap_add", "BPF".to_string()),
                ("cap_add", "ALL".to_string()),
                ("devices", "/dev/nvme0n1".to_string()),
                ("network", "host".to_string()),
                ("ipc", "host".to_string()),
            ]
        );
        assert!(
            judged("mounts = [\"/srv/data:/d\", \"/var/data:/v\"]\nipc = \"shareable\"\n")
                .is_empty()
        );
    }
}
