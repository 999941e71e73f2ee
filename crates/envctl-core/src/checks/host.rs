//! Host and daemon findings: is Docker reachable and how is it set up, can containers get
//! GPUs (NVIDIA runtime, CDI, hooks), is the NVIDIA toolkit current, are the device nodes
//! and their `/dev/char` links in place. Pure over `EngineFacts` and `HostFacts`.
//!
//! Finding ids: `docker.reachable`, `docker.socket`, `docker.desktop`, `docker.rootless`,
//! `docker.cgroup`, `docker.disk`, `docker.gpu-support`, `docker.cdi-spec`, `toolkit.version`,
//! `host.device-nodes`, `host.dev-char-links`, `host.wsl`.

use super::{Area, Finding};
pub use crate::container_plan::gpu_path::{
    GpuPath, GpuSupport, gpu_path, gpu_support, gpus_reachable, specs_making_gpus_unknown,
    unreadable_specs,
};
use crate::facts::engine::{DaemonFacts, EngineFacts, EngineState};
use crate::facts::host::HostFacts;

/// NVIDIA Container Toolkit releases below this have published container-escape CVEs
/// (CVE-2025-23266, fixed in 1.17.8; earlier CVE-2024-0132/0133 in 1.16.2).
pub const TOOLKIT_FIXED_RELEASE: semver::Version = semver::Version::new(1, 17, 8);

/// Below this much free space under the Docker root, pulling a CUDA image (5–20 GB) fails.
pub const MINIMUM_FREE_BYTES: u64 = 20 * 1024 * 1024 * 1024;

pub fn cdi_spec_hint(paths: &[&str]) -> String {
    format!(
        "check that {} {} a readable file (its permissions, and where a link points: `ls -lL {}`), or, for NVIDIA's spec, generate it again: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`",
        paths.join(" and "),
        if paths.len() == 1 { "is" } else { "are" },
        paths.join(" ")
    )
}

/// The daemon's findings, all in doctor's Docker section.
pub fn docker(
    engine: &EngineFacts,
    host: &HostFacts,
    free_bytes: Option<&Result<u64, String>>,
) -> Vec<Finding> {
    in_area(Area::Docker, docker_findings(engine, host, free_bytes))
}

/// The Docker section's findings in the order doctor prints them: the socket, whether
/// the daemon answers (nothing more when it does not), how it is set up, its free space,
/// then how containers get GPUs on it.
fn docker_findings(
    engine: &EngineFacts,
    host: &HostFacts,
    free_bytes: Option<&Result<u64, String>>,
) -> Vec<Finding> {
    let mut findings: Vec<Finding> = socket_finding(host).into_iter().collect();
    let daemon = match &engine.state {
        EngineState::Unreachable {
            message,
            hint,
            kind,
        } => {
            findings.push(unreachable_finding(engine, message, hint.as_deref(), kind));
            return findings;
        }
        EngineState::Reachable(daemon) => daemon,
    };
    findings.push(reachable_finding(engine, daemon));
    findings.extend(setup_findings(daemon));
    findings.extend(free_bytes.map(|free_bytes| disk_finding(daemon, free_bytes)));
    findings.extend(gpu_support_findings(daemon, host));
    findings
}

/// `docker.socket`: the engine's socket refuses this user.
fn socket_finding(host: &HostFacts) -> Option<Finding> {
    let socket = host
        .docker_socket
        .as_ref()
        .filter(|socket| socket.access == "permission_denied")?;
    Some(
        Finding::fail(
            "docker.socket",
            format!("permission denied on the engine's socket {}", socket.path),
        )
        .with_hint(crate::facts::engine::EngineKind::Unknown.permission_fix())
        .with_fact("socket", &socket.path),
    )
}

/// `docker.reachable` failed: the engine answered with an error, or not at all (`kind`
/// says which).
fn unreachable_finding(
    engine: &EngineFacts,
    message: &str,
    hint: Option<&str>,
    kind: &str,
) -> Finding {
    let finding = Finding::fail(
        "docker.reachable",
        if crate::facts::engine::daemon_answered(kind) {
            format!("the engine answered with an error: {message}")
        } else {
            format!("the engine is not reachable: {message}")
        },
    )
    .with_fact("endpoint", &engine.endpoint)
    .with_fact("cause", kind);
    match hint {
        Some(hint) => finding.with_hint(hint.to_string()),
        None => finding,
    }
}

/// `docker.reachable` passed: which engine, its version and API.
fn reachable_finding(engine: &EngineFacts, daemon: &DaemonFacts) -> Finding {
    Finding::pass(
        "docker.reachable",
        format!(
            "{} {} at {} (API {})",
            daemon.kind.name(),
            daemon.server_version.as_deref().unwrap_or("?"),
            engine.endpoint,
            daemon.api_version.as_deref().unwrap_or("?")
        ),
    )
    .with_fact("endpoint", &engine.endpoint)
    .with_fact("engine", daemon.kind)
}

/// How the daemon is set up: Docker Desktop (`docker.desktop`), rootless
/// (`docker.rootless`), and its cgroups (`docker.cgroup`).
fn setup_findings(daemon: &DaemonFacts) -> Vec<Finding> {
    let mut findings = Vec::new();
    if daemon.docker_desktop {
        findings.push(
            Finding::warn("docker.desktop", format!("the daemon is Docker Desktop ({}): containers run in its VM, and GPUs only reach them through the WSL 2 backend", daemon.operating_system.as_deref().unwrap_or("Docker Desktop")))
                .with_hint("on Linux, use the system Docker Engine: `docker context use default`"),
        );
    }
    if daemon.rootless {
        findings.push(
            Finding::info(
                "docker.rootless",
                "the daemon runs rootless: GPUs reach containers only through CDI",
            )
            .with_hint(
                "generate a CDI spec: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`",
            ),
        );
    }
    findings.push(Finding::info(
        "docker.cgroup",
        format!(
            "cgroup {} with the {} driver",
            daemon
                .cgroup_version
                .as_deref()
                .map_or("?".to_string(), |version| format!("v{version}")),
            daemon.cgroup_driver.as_deref().unwrap_or("?")
        ),
    ));
    findings
}

/// `docker.disk`: the free space under the Docker root, against [`MINIMUM_FREE_BYTES`].
fn disk_finding(daemon: &DaemonFacts, free_bytes: &Result<u64, String>) -> Finding {
    match free_bytes {
        Ok(free) if *free < MINIMUM_FREE_BYTES => Finding::warn("docker.disk", format!("only {} free under the Docker root {}: CUDA images take 5 to 20 GB", gigabytes(*free), daemon.docker_root_dir.as_deref().unwrap_or("?")))
            .with_hint("free space with `docker system prune` (removes stopped containers and dangling images)")
            .with_fact("free_bytes", free),
        Ok(free) => Finding::pass("docker.disk", format!("{} free under the Docker root", gigabytes(*free))).with_fact("free_bytes", free),
        Err(error) => Finding::info("docker.disk", format!("free space under the Docker root unknown: {error}")),
    }
}

/// `docker.gpu-support`, then a `docker.cdi-spec` warning for each CDI spec that cannot
/// be read (unless those specs already make the support unknown).
fn gpu_support_findings(daemon: &DaemonFacts, host: &HostFacts) -> Vec<Finding> {
    let support = gpu_support(daemon, host);
    // Podman before 5.4: whatever is set up, its Docker API drops GPU requests.
    if let Some(reason) = daemon.drops_gpu_requests() {
        return vec![
            Finding::info(
                "docker.gpu-support",
                format!("{reason}: containers cannot get GPUs through envctl"),
            )
            .with_hint(daemon.kind.gpu_fix())
            .with_fact("gpu_support", &support),
        ];
    }
    let unreadable = unreadable_specs(host);
    let unknown = !specs_making_gpus_unknown(daemon, host, &support).is_empty();
    let mut findings = vec![
        support_finding(daemon, &support, &unreadable, unknown).with_fact("gpu_support", &support),
    ];
    if !unknown {
        for (path, error) in unreadable {
            findings.push(
                Finding::warn(
                    "docker.cdi-spec",
                    format!("CDI spec {path} cannot be read: {error}; whether it names NVIDIA GPUs is unknown"),
                )
                .with_hint(cdi_spec_hint(&[path]))
                .with_fact("spec", path),
            );
        }
    }
    findings
}

/// The words of `docker.gpu-support` for each way GPUs reach containers; `unknown` when
/// the `unreadable` CDI specs leave it open.
fn support_finding(
    daemon: &DaemonFacts,
    support: &GpuSupport,
    unreadable: &[(&str, &str)],
    unknown: bool,
) -> Finding {
    match support {
        GpuSupport::None if unknown => {
            let paths: Vec<&str> = unreadable.iter().map(|(path, _)| *path).collect();
            let causes: Vec<String> = unreadable
                .iter()
                .map(|(path, error)| format!("CDI spec {path} cannot be read: {error}"))
                .collect();
            Finding::warn(
                "docker.gpu-support",
                format!(
                    "{}; with no NVIDIA container runtime or hook either, whether containers can get GPUs on this daemon is unknown",
                    causes.join("; ")
                ),
            )
            .with_hint(cdi_spec_hint(&paths))
            .with_fact("unreadable_cdi_specs", &paths)
        }
        GpuSupport::DiscoveredDevices { devices } => Finding::pass("docker.gpu-support", format!("the daemon discovered GPUs through CDI: {}", devices.join(", "))),
        GpuSupport::Cdi { specs } => Finding::pass("docker.gpu-support", format!("CDI is enabled and {} names NVIDIA GPUs", specs.join(", "))),
        GpuSupport::Runtime => Finding::pass("docker.gpu-support", "the `nvidia` runtime is registered with the daemon"),
        GpuSupport::Hook { path } => Finding::pass("docker.gpu-support", format!("{path} is installed: `--gpus` works if dockerd was restarted after installing it")),
        GpuSupport::Unseen { host } => Finding::info("docker.gpu-support", format!("the daemon on {host} reports no NVIDIA runtime or device; a hook or CDI spec there cannot be seen from here, so whether its containers get GPUs is told by the create"))
            .with_hint(format!("run `envctl doctor` on {host} for its container toolkit")),
        GpuSupport::None => Finding::info("docker.gpu-support", "no NVIDIA container runtime, CDI spec or hook: containers cannot get GPUs on this daemon")
            .with_hint(format!("{} (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html)", daemon.kind.gpu_fix())),
    }
}

/// For a daemon on another machine, in place of [`host`]: this machine's driver, device
/// nodes, CDI specs and cgroups are not judged for it, and doctor says where they are.
pub fn elsewhere(daemon: &crate::facts::engine::DaemonFacts) -> Finding {
    let host = daemon.host.elsewhere().unwrap_or("the daemon's host");
    Finding::info(
        "host.elsewhere",
        format!("the daemon runs on {host}, not on this machine: its kernel driver, device nodes, CDI specs and cgroups are judged there"),
    )
    .with_hint(format!("run `envctl doctor` on {host}"))
    .with_fact("daemon_host", host)
    .in_area(Area::Nvidia)
}

/// The machine's findings outside Docker. `cgroup_driver` comes from the daemon when known.
pub fn host(host: &HostFacts, cgroup_driver: Option<&str>) -> Vec<Finding> {
    in_area(Area::Nvidia, host_findings(host, cgroup_driver))
}

fn host_findings(host: &HostFacts, cgroup_driver: Option<&str>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for tool in &host.tools {
        let Some(version) = &tool.version else {
            // Asked for and not read: whether it has the fixes cannot be told.
            if let Some(error) = &tool.version_error {
                findings.push(
                    Finding::warn("toolkit.version", format!("the version of {} could not be read ({error}), so whether it has the fixes for container-escape vulnerabilities (CVE-2025-23266 and earlier, fixed in {TOOLKIT_FIXED_RELEASE}) cannot be told", tool.path.as_deref().unwrap_or(&tool.name)))
                        .with_hint(format!("run `{} --version`; if it is older than {TOOLKIT_FIXED_RELEASE}, upgrade the NVIDIA Container Toolkit: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html", tool.name))
                        .with_fact("version_error", error),
                );
            }
            continue;
        };
        if *version < TOOLKIT_FIXED_RELEASE {
            findings.push(
                Finding::warn("toolkit.version", format!("{} {version} is older than {TOOLKIT_FIXED_RELEASE}, which fixes container-escape vulnerabilities (CVE-2025-23266 and earlier)", tool.name))
                    .with_hint("upgrade the NVIDIA Container Toolkit: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html")
                    .with_fact("version", version.to_string()),
            );
        } else {
            findings.push(Finding::pass(
                "toolkit.version",
                format!("{} {version}", tool.name),
            ));
        }
    }
    let has_gpu_nodes = host.device_nodes.iter().any(|node| {
        node.path
            .trim_start_matches("/dev/nvidia")
            .chars()
            .all(|c| c.is_ascii_digit())
            && node.path != "/dev/nvidia"
    });
    if has_gpu_nodes {
        let missing: Vec<&str> = ["/dev/nvidiactl", "/dev/nvidia-uvm"]
            .into_iter()
            .filter(|required| !host.device_nodes.iter().any(|node| node.path == *required))
            .collect();
        if missing.is_empty() {
            findings.push(Finding::pass(
                "host.device-nodes",
                "NVIDIA device nodes present, including /dev/nvidia-uvm",
            ));
        } else {
            findings.push(
                Finding::warn("host.device-nodes", format!("{} missing: CUDA fails with CUDA_ERROR_UNKNOWN until it exists", missing.join(" and ")))
                    .with_hint("load the module: `sudo nvidia-modprobe -u -c=0` (or `sudo modprobe nvidia-uvm`)"),
            );
        }
        let unlinked: Vec<&str> = host
            .device_nodes
            .iter()
            .filter(|node| node.char_link == Some(false))
            .map(|node| node.path.as_str())
            .collect();
        if !unlinked.is_empty() && cgroup_driver == Some("systemd") {
            findings.push(
                Finding::warn("host.dev-char-links", format!("{} {} no /dev/char link: with the systemd cgroup driver, GPU containers fail with `Failed to initialize NVML: Unknown Error` after `systemctl daemon-reload`", unlinked.join(", "), if unlinked.len() == 1 { "has" } else { "have" }))
                    .with_hint("`sudo nvidia-ctk system create-dev-char-symlinks --create-all`, and add NVIDIA's udev rule (NVIDIA/nvidia-docker#1730)"),
            );
        }
    }
    if host.wsl {
        findings.push(Finding::info("host.wsl", "WSL 2 (/dev/dxg): GPUs come through the Windows driver; NVML and nvidia-smi live in /usr/lib/wsl/lib"));
    }
    findings
}

fn in_area(area: Area, findings: Vec<Finding>) -> Vec<Finding> {
    findings
        .into_iter()
        .map(|finding| finding.in_area(area))
        .collect()
}

fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::container_plan::gpu_path::is_discovered_nvidia_gpu;
    use crate::facts::engine::DaemonFacts;
    use crate::facts::host::{CdiSpec, DeviceNode, SocketAccess, ToolFacts};

    fn daemon() -> DaemonFacts {
        DaemonFacts {
            server_version: Some("28.2.2".into()),
            api_version: Some("1.50".into()),
            cgroup_driver: Some("systemd".into()),
            cgroup_version: Some("2".into()),
            runtimes: vec!["runc".into()],
            docker_root_dir: Some("/var/lib/docker".into()),
            ..DaemonFacts::default()
        }
    }

    fn reachable(daemon: DaemonFacts) -> EngineFacts {
        EngineFacts {
            endpoint: "unix:///var/run/docker.sock".into(),
            state: EngineState::Reachable(Box::new(daemon)),
        }
    }

    fn tool(name: &str, path: Option<&str>, version: Option<(u64, u64, u64)>) -> ToolFacts {
        ToolFacts {
            name: name.into(),
            path: path.map(str::to_string),
            version: version.map(|(major, minor, patch)| semver::Version::new(major, minor, patch)),
            version_error: None,
        }
    }

    fn status_of<'a>(findings: &'a [Finding], id: &str) -> Option<&'a Finding> {
        findings.iter().find(|finding| finding.id == id)
    }

    #[test]
    fn the_docker_root_needs_room_for_cuda_images() {
        let statuses = |free: Result<u64, String>| disk_finding(&daemon(), &free).status;
        assert_eq!(statuses(Ok(MINIMUM_FREE_BYTES - 1)), Status::Warn);
        assert_eq!(statuses(Ok(MINIMUM_FREE_BYTES)), Status::Pass);
        assert_eq!(statuses(Err("statfs failed".into())), Status::Info);
    }

    #[test]
    fn the_daemons_setup_is_told_in_one_step() {
        let ids = |daemon: &DaemonFacts| -> Vec<&'static str> {
            setup_findings(daemon)
                .iter()
                .map(|finding| match finding.id.as_str() {
                    "docker.desktop" => "desktop",
                    "docker.rootless" => "rootless",
                    "docker.cgroup" => "cgroup",
                    _ => "other",
                })
                .collect()
        };
        assert_eq!(ids(&daemon()), ["cgroup"]);
        let everything = DaemonFacts {
            docker_desktop: true,
            rootless: true,
            ..daemon()
        };
        assert_eq!(ids(&everything), ["desktop", "rootless", "cgroup"]);
        assert_eq!(
            setup_findings(&daemon())[0].message,
            "cgroup v2 with the systemd driver"
        );
    }

    #[test]
    fn gpus_are_reachable_only_through_a_way_the_daemon_can_use() {
        let reachable = |daemon: DaemonFacts, host: &HostFacts| {
            gpus_reachable(
                &EngineFacts {
                    endpoint: "unix:///var/run/docker.sock".into(),
                    state: EngineState::Reachable(Box::new(daemon)),
                },
                host,
            )
        };
        let mut host = HostFacts::default();
        assert!(!reachable(daemon(), &host), "no runtime, CDI or hook");
        let mut with_runtime = daemon();
        with_runtime.runtimes.push("nvidia".into());
        assert!(reachable(with_runtime.clone(), &host));
        with_runtime.rootless = true;
        assert!(
            !reachable(with_runtime.clone(), &host),
            "rootless reaches GPUs only through CDI"
        );
        host.cdi_specs.push(CdiSpec {
            path: "/etc/cdi/nvidia.yaml".into(),
            nvidia_gpus: true,
            unreadable: None,
        });
        with_runtime.cdi_spec_dirs = Some(vec!["/etc/cdi".into()]);
        assert!(reachable(with_runtime, &host), "rootless with CDI");
        let unreachable = EngineFacts {
            endpoint: "unix:///var/run/docker.sock".into(),
            state: EngineState::Unreachable {
                kind: "socket_missing".into(),
                message: "gone".into(),
                hint: None,
            },
        };
        assert!(!gpus_reachable(&unreachable, &host));
    }

    #[test]
    fn another_machines_daemon_is_judged_by_its_own_answers_only() {
        // This machine has a hook and an NVIDIA CDI spec; the daemon is gpu2's.
        let mut host = HostFacts::default();
        host.tools.push(tool(
            "nvidia-container-runtime-hook",
            Some("/usr/bin/nvidia-container-runtime-hook"),
            None,
        ));
        host.cdi_specs.push(CdiSpec {
            path: "/etc/cdi/nvidia.yaml".into(),
            nvidia_gpus: true,
            unreadable: None,
        });
        let mut facts = daemon();
        facts.cdi_spec_dirs = Some(vec!["/etc/cdi".into()]);
        facts.host = crate::facts::engine::DaemonHost::Elsewhere {
            name: "gpu2".into(),
        };
        assert_eq!(
            gpu_support(&facts, &host),
            GpuSupport::Unseen {
                host: "gpu2".into()
            }
        );
        facts.runtimes.push("nvidia".into());
        assert_eq!(gpu_support(&facts, &host), GpuSupport::Runtime);
        facts.discovered_devices = Some(vec!["cdi:nvidia.com/gpu=0".into()]);
        assert!(matches!(
            gpu_support(&facts, &host),
            GpuSupport::DiscoveredDevices { .. }
        ));
    }

    #[test]
    fn gpu_support_prefers_the_strongest_evidence() {
        let mut host = HostFacts::default();
        let mut facts = daemon();
        assert_eq!(gpu_support(&facts, &host), GpuSupport::None);
        host.tools.push(tool(
            "nvidia-container-runtime-hook",
            Some("/usr/bin/nvidia-container-runtime-hook"),
            None,
        ));
        assert!(matches!(
            gpu_support(&facts, &host),
            GpuSupport::Hook { .. }
        ));
        facts.runtimes.push("nvidia".into());
        assert_eq!(gpu_support(&facts, &host), GpuSupport::Runtime);
        host.cdi_specs.push(CdiSpec {
            path: "/etc/cdi/nvidia.yaml".into(),
            nvidia_gpus: true,
            unreadable: None,
        });
        assert_eq!(
            gpu_support(&facts, &host),
            GpuSupport::Runtime,
            "CDI specs count only when the daemon has CDI on"
        );
        facts.cdi_spec_dirs = Some(vec!["/etc/cdi".into()]);
        assert!(matches!(gpu_support(&facts, &host), GpuSupport::Cdi { .. }));
        for not_a_gpu in [
            "cdi:example.com/x=nvidia.com/gpu",
            "other:nvidia.com/gpu=0",
            "cdi:nvidia.com/gpu=",
        ] {
            assert!(!is_discovered_nvidia_gpu(not_a_gpu), "{not_a_gpu}");
        }
        facts.discovered_devices = Some(vec!["cdi:nvidia.com/gpu=0".into()]);
        assert!(matches!(
            gpu_support(&facts, &host),
            GpuSupport::DiscoveredDevices { .. }
        ));
    }

    #[test]
    fn unreachable_daemon_is_one_failure_with_its_hint() {
        let engine = EngineFacts {
            endpoint: "unix:///var/run/docker.sock".into(),
            state: EngineState::Unreachable {
                kind: "socket_missing".into(),
                message: "the Docker socket `/var/run/docker.sock` does not exist".into(),
                hint: Some("start Docker".into()),
            },
        };
        let findings = docker(&engine, &HostFacts::default(), None);
        assert_eq!(findings.len(), 1);
        assert_eq!(
            (findings[0].id.as_str(), findings[0].status),
            ("docker.reachable", Status::Fail)
        );
        assert_eq!(findings[0].hint.as_deref(), Some("start Docker"));
    }

    #[test]
    fn socket_permission_and_disk_space() {
        let host = HostFacts {
            docker_socket: Some(SocketAccess {
                path: "/var/run/docker.sock".into(),
                exists: true,
                access: "permission_denied".into(),
            }),
            ..HostFacts::default()
        };
        let low = docker(&reachable(daemon()), &host, Some(&Ok(5_000_000_000)));
        assert_eq!(
            status_of(&low, "docker.socket").unwrap().status,
            Status::Fail
        );
        assert_eq!(status_of(&low, "docker.disk").unwrap().status, Status::Warn);
        let plenty = docker(
            &reachable(daemon()),
            &HostFacts::default(),
            Some(&Ok(MINIMUM_FREE_BYTES)),
        );
        assert_eq!(
            status_of(&plenty, "docker.disk").unwrap().status,
            Status::Pass
        );
        assert_eq!(
            status_of(&plenty, "docker.gpu-support").unwrap().status,
            Status::Info
        );
    }

    #[test]
    fn desktop_and_rootless_are_named() {
        let mut facts = daemon();
        facts.docker_desktop = true;
        facts.operating_system = Some("Docker Desktop".into());
        facts.rootless = true;
        let findings = docker(&reachable(facts), &HostFacts::default(), None);
        assert_eq!(
            status_of(&findings, "docker.desktop").unwrap().status,
            Status::Warn
        );
        assert_eq!(
            status_of(&findings, "docker.rootless").unwrap().status,
            Status::Info
        );
    }

    #[test]
    fn toolkit_versions_on_both_sides_of_the_fix() {
        let host_facts = HostFacts {
            tools: vec![
                tool("nvidia-ctk", Some("/usr/bin/nvidia-ctk"), Some((1, 17, 7))),
                tool(
                    "nvidia-container-cli",
                    Some("/usr/bin/nvidia-container-cli"),
                    Some((1, 17, 8)),
                ),
            ],
            ..HostFacts::default()
        };
        let findings = host(&host_facts, None);
        assert_eq!(
            findings
                .iter()
                .map(|finding| finding.status)
                .collect::<Vec<_>>(),
            [Status::Warn, Status::Pass]
        );
    }

    #[test]
    fn a_cdi_spec_that_cannot_be_read_is_unknown_not_absent() {
        let denied = "Permission denied (os error 13)";
        let host_facts = HostFacts {
            cdi_specs: vec![CdiSpec {
                path: "/etc/cdi/nvidia.yaml".into(),
                // Even a record claiming GPUs is not counted when it was not read.
                nvidia_gpus: true,
                unreadable: Some(denied.into()),
            }],
            ..HostFacts::default()
        };
        let mut facts = daemon();
        facts.cdi_spec_dirs = Some(vec!["/etc/cdi".into()]);
        assert_eq!(gpu_support(&facts, &host_facts), GpuSupport::None);
        let findings = docker(&reachable(facts.clone()), &host_facts, None);
        let gpu = status_of(&findings, "docker.gpu-support").unwrap();
        assert_eq!(gpu.status, Status::Warn);
        assert!(
            gpu.message.contains(&format!(
                "CDI spec /etc/cdi/nvidia.yaml cannot be read: {denied}"
            )),
            "{}",
            gpu.message
        );
        assert!(gpu.message.contains("unknown"), "{}", gpu.message);
        assert!(!gpu.message.starts_with("no NVIDIA"), "{}", gpu.message);
        assert!(
            gpu.hint.as_deref().unwrap().contains("permissions"),
            "{:?}",
            gpu.hint
        );
        assert!(
            status_of(&findings, "docker.cdi-spec").is_none(),
            "said once"
        );

        // With the runtime, GPUs reach containers anyway; the spec is still named.
        facts.runtimes.push("nvidia".into());
        let findings = docker(&reachable(facts), &host_facts, None);
        assert_eq!(
            status_of(&findings, "docker.gpu-support").unwrap().status,
            Status::Pass
        );
        let spec = status_of(&findings, "docker.cdi-spec").unwrap();
        assert_eq!(spec.status, Status::Warn);
        assert!(
            spec.message.starts_with(&format!(
                "CDI spec /etc/cdi/nvidia.yaml cannot be read: {denied}"
            )),
            "{}",
            spec.message
        );
    }

    #[test]
    fn a_toolkit_version_that_cannot_be_read_is_a_warning() {
        let mut ctk = tool("nvidia-ctk", Some("/usr/bin/nvidia-ctk"), None);
        ctk.version_error = Some("no version in `nvidia-ctk --version` output".into());
        let host_facts = HostFacts {
            tools: vec![
                ctk,
                // No version is asked of nvidia-smi: nothing to say.
                tool("nvidia-smi", Some("/usr/bin/nvidia-smi"), None),
            ],
            ..HostFacts::default()
        };
        let findings = host(&host_facts, None);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let finding = &findings[0];
        assert_eq!(
            (finding.id.as_str(), finding.status),
            ("toolkit.version", Status::Warn)
        );
        assert!(
            finding.message.contains("/usr/bin/nvidia-ctk")
                && finding
                    .message
                    .contains("no version in `nvidia-ctk --version` output")
                && finding.message.contains("CVE-2025-23266")
                && finding.message.contains("cannot be told"),
            "{}",
            finding.message
        );
        assert!(
            finding
                .hint
                .as_deref()
                .unwrap()
                .contains("`nvidia-ctk --version`"),
            "{:?}",
            finding.hint
        );
    }

    #[test]
    fn device_nodes_and_char_links() {
        let node = |path: &str, link: Option<bool>| DeviceNode {
            path: path.into(),
            device_number: link.map(|_| "195:0".into()),
            char_link: link,
        };
        let host_facts = HostFacts {
            device_nodes: vec![
                node("/dev/nvidia0", Some(false)),
                node("/dev/nvidiactl", Some(true)),
            ],
            ..HostFacts::default()
        };
        let findings = host(&host_facts, Some("systemd"));
        assert_eq!(
            status_of(&findings, "host.device-nodes").unwrap().status,
            Status::Warn,
            "nvidia-uvm is missing"
        );
        assert!(
            status_of(&findings, "host.dev-char-links")
                .unwrap()
                .message
                .contains("/dev/nvidia0")
        );
        let cgroupfs = host(&host_facts, Some("cgroupfs"));
        assert!(
            status_of(&cgroupfs, "host.dev-char-links").is_none(),
            "the links matter with systemd only"
        );
        assert!(
            host(&HostFacts::default(), Some("systemd")).is_empty(),
            "no GPU, nothing to say"
        );
    }
}
