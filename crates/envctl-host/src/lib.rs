//! Facts about this machine outside NVML and Docker: the NVIDIA kernel module, device
//! nodes and their `/dev/char` links, WSL, the NVIDIA container tools and their versions,
//! CDI specs, the Docker socket's permissions, kernel, distribution and cgroups.
//! Everything is read under a root folder so tests can lay out a fake machine, into the
//! plain structs of `envctl_facts::host`.
//!
//! The host adapter is a crate of its own (the binary re-exports it as `envctl::host`):
//! its manifest names the core and the facts, no engine, NVML or terminal crate, so it
//! cannot reach another adapter, `ops` or the printer. `interrupt` (the first signal, as
//! blocking waits see it) lives here because the GPU lock's wait reads it.

pub mod cdi;
pub mod cgroup;
pub mod docker_config;
pub mod gpu_health;
pub mod gpu_lock;
pub mod here;
pub mod interrupt;
pub mod ports;
pub mod process;
pub mod slurm;
pub mod tools;
pub mod user;

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use envctl_facts::host::{CdiSpec, DeviceNode, HostFacts, KernelModule, SocketAccess};

/// Where Podman finds its container init: containers.conf's default `init_path` and its
/// helper folders (Debian's `catatonit` package links the first to `/usr/bin/catatonit`).
const PODMAN_INIT_PATHS: [&str; 4] = [
    "/usr/libexec/podman/catatonit",
    "/usr/lib/podman/catatonit",
    "/usr/local/libexec/podman/catatonit",
    "/usr/bin/catatonit",
];

/// Where to look: `/` on a real machine, a folder in tests.
#[derive(Debug, Clone)]
pub struct Probe {
    pub root: PathBuf,
    /// `PATH` to search for tools.
    pub path: Option<std::ffi::OsString>,
    /// Where a relative `PATH` entry is relative to: envctl's working directory.
    pub working_directory: PathBuf,
    /// The daemon endpoint (`DOCKER_HOST` or the default socket).
    pub docker_endpoint: String,
}

impl Probe {
    fn at(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Gathers every host fact. Cheap when there is no NVIDIA stack: no tool is run
    /// unless it is found on `PATH`.
    pub fn gather(&self) -> HostFacts {
        HostFacts {
            kernel: read_trimmed(&self.at("/proc/sys/kernel/osrelease")),
            // The architecture envctl was built for is the host's: the kernel runs it.
            machine: Some(std::env::consts::ARCH.to_string()),
            l4t_release: read_trimmed(&self.at("/etc/nv_tegra_release"))
                .and_then(|text| text.lines().next().map(str::to_string)),
            distribution: read_os_release(&self.at("/etc/os-release")),
            kernel_module: read_trimmed(&self.at("/proc/driver/nvidia/version")).map(|text| {
                let first_line = text.lines().next().unwrap_or_default().to_string();
                KernelModule {
                    version: parse_module_version(&first_line),
                    text: first_line,
                }
            }),
            device_nodes: self.device_nodes(),
            wsl: self.at("/dev/dxg").exists(),
            cgroup_version: self.cgroup_version(),
            tools: tools::gather(self.path.as_deref(), &self.working_directory),
            cdi_specs: self.cdi_specs(),
            docker_socket: socket_access(&self.docker_endpoint),
            container_init: PODMAN_INIT_PATHS
                .iter()
                .find(|path| self.at(path).is_file())
                .map(|path| path.to_string()),
        }
    }

    fn device_nodes(&self) -> Vec<DeviceNode> {
        let Ok(entries) = std::fs::read_dir(self.at("/dev")) else {
            return Vec::new();
        };
        let mut nodes: Vec<DeviceNode> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("nvidia"))
            .filter(|entry| !entry.path().is_dir())
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let device_number = std::fs::metadata(entry.path())
                    .ok()
                    .filter(|metadata| metadata.file_type().is_char_device())
                    .map(|metadata| {
                        let (major, minor) = split_device_number(metadata.rdev());
                        format!("{major}:{minor}")
                    });
                let char_link = device_number
                    .as_ref()
                    .map(|number| self.at(&format!("/dev/char/{number}")).exists());
                DeviceNode {
                    path: format!("/dev/{name}"),
                    device_number,
                    char_link,
                }
            })
            .collect();
        nodes.sort_by(|first, second| first.path.cmp(&second.path));
        nodes
    }

    fn cgroup_version(&self) -> Option<String> {
        let cgroup = self.at("/sys/fs/cgroup");
        if cgroup.join("cgroup.controllers").exists() {
            Some("v2".into())
        } else if cgroup.exists() {
            Some("v1".into())
        } else {
            None
        }
    }

    fn cdi_specs(&self) -> Vec<CdiSpec> {
        let mut specs = Vec::new();
        for folder in ["/etc/cdi", "/var/run/cdi"] {
            let Ok(entries) = std::fs::read_dir(self.at(folder)) else {
                continue;
            };
            let mut paths: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    path.extension().is_some_and(|extension| {
                        matches!(extension.to_str(), Some("yaml" | "yml" | "json"))
                    })
                })
                .collect();
            paths.sort();
            for path in paths {
                // CDI skips folders in its spec folders, whatever their name.
                if std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_dir()) {
                    continue;
                }
                let read = envctl_core::untrusted::read(
                    &path,
                    4 * 1024 * 1024,
                    envctl_core::untrusted::Named::Found,
                )
                .map_err(|error| envctl_core::text::error_chain(&error))
                .and_then(|bytes| bytes.ok_or_else(|| "it is gone".to_string()))
                .and_then(|bytes| {
                    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
                });
                let (nvidia_gpus, unreadable) =
                    match read.and_then(|text| cdi_kind_is_nvidia_gpu(&path, &text)) {
                        Ok(nvidia_gpus) => (nvidia_gpus, None),
                        // Unknown whether it names GPUs: not counted, and the cause kept.
                        Err(error) => (false, Some(error)),
                    };
                let name = path
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                specs.push(CdiSpec {
                    path: format!("{folder}/{name}"),
                    nvidia_gpus,
                    unreadable,
                });
            }
        }
        specs
    }
}

/// Whether a CDI spec's `kind` (its devices' vendor and class) is `nvidia.com/gpu`: the
/// top-level `kind` key, read from JSON or from YAML's unindented `kind:` line, so that the
/// words in a comment or in another field do not count.
/// A JSON spec that does not parse is an error: whether it names GPUs is unknown.
fn cdi_kind_is_nvidia_gpu(path: &Path, text: &str) -> Result<bool, String> {
    const KIND: &str = "nvidia.com/gpu";
    if path
        .extension()
        .is_some_and(|extension| extension == "json")
    {
        let spec: serde_json::Value =
            serde_json::from_str(text).map_err(|error| format!("it is not valid JSON: {error}"))?;
        return Ok(spec.get("kind").and_then(serde_json::Value::as_str) == Some(KIND));
    }
    Ok(text.lines().any(|line| {
        line.strip_prefix("kind:").is_some_and(|value| {
            let value = value.split(" #").next().unwrap_or(value).trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|value| value.strip_suffix('"'))
                .or_else(|| {
                    value
                        .strip_prefix('\'')
                        .and_then(|value| value.strip_suffix('\''))
                })
                .unwrap_or(value);
            unquoted == KIND
        })
    }))
}

/// Linux's encoding of a device number (glibc `gnu_dev_major` / `gnu_dev_minor`).
fn split_device_number(device: u64) -> (u64, u64) {
    let major = ((device >> 8) & 0xfff) | ((device >> 32) & !0xfff);
    let minor = (device & 0xff) | ((device >> 12) & !0xff);
    (major, minor)
}

/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 …` → `550.54.15`.
pub fn parse_module_version(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|word| {
            word.contains('.')
                && word.split('.').count() >= 2
                && word
                    .split('.')
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

fn read_trimmed(path: &Path) -> Option<String> {
    read_limited(path, 64 * 1024)
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

fn read_limited(path: &Path, limit: u64) -> Option<String> {
    read_text(path, limit).ok()
}

/// A regular file of at most `limit` bytes as text, or why it could not be read: through
/// `untrusted` (never a FIFO or a device, opened without blocking), as every file envctl
/// did not write.
fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    match envctl_core::untrusted::read(path, limit, envctl_core::untrusted::Named::ByTheUser) {
        Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into()),
        Ok(None) => Err("it does not exist".into()),
        Err(error) => Err(envctl_core::text::error_chain(&error)),
    }
}

fn read_os_release(path: &Path) -> Option<String> {
    let text = read_limited(path, 64 * 1024)?;
    text.lines()
        .find_map(|line| line.strip_prefix("PRETTY_NAME="))
        .map(|value| value.trim_matches('"').to_string())
}

/// Whether this user can open the daemon's unix socket, tried directly.
fn socket_access(endpoint: &str) -> Option<SocketAccess> {
    let path = endpoint.strip_prefix("unix://")?;
    let exists = Path::new(path).exists();
    let access = if !exists {
        "missing".to_string()
    } else {
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => "ok".into(),
            Err(error) => match error.kind() {
                std::io::ErrorKind::PermissionDenied => "permission_denied".into(),
                std::io::ErrorKind::ConnectionRefused => "refused".into(),
                _ => format!("error: {error}"),
            },
        }
    };
    Some(SocketAccess {
        path: path.to_string(),
        exists,
        access,
    })
}

/// The host's name as the kernel has it (`/proc/sys/kernel/hostname`); an empty one is an
/// error, never a name.
pub fn hostname() -> Result<String, std::io::Error> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
    let name = name.trim();
    if name.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the kernel's hostname is empty",
        ));
    }
    Ok(name.to_string())
}

/// Free bytes for unprivileged users on the filesystem holding `path` (the Docker root).
pub fn free_space(path: &Path) -> Result<u64, std::io::Error> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_module_line() {
        assert_eq!(
            parse_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024").as_deref(),
            Some("550.54.15")
        );
        assert_eq!(
            parse_module_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build"
            )
            .as_deref(),
            Some("570.124.06")
        );
        assert_eq!(parse_module_version("garbage"), None);
    }

    #[test]
    fn splits_device_numbers_like_glibc() {
        assert_eq!(split_device_number((195 << 8) | 255), (195, 255));
        assert_eq!(split_device_number((509 << 8) | 1), (509, 1));
    }

    #[test]
    fn gathers_a_fake_machine() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let full = root.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        };
        write(
            "proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue\nGCC version: 12\n",
        );
        write("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write(
            "etc/os-release",
            "NAME=Debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
        );
        write("dev/nvidia0", "");
        write("dev/nvidiactl", "");
        write("dev/dxg", "");
        write("etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n");
        write("var/run/cdi/other.json", "{\"kind\": \"vendor.com/thing\"}");
        write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        let probe = Probe {
            root: root.path().to_path_buf(),
            path: Some(std::ffi::OsString::new()),
            working_directory: root.path().to_path_buf(),
            docker_endpoint: format!("unix://{}/missing.sock", root.path().display()),
        };
        let facts = probe.gather();
        assert_eq!(
            facts.kernel_module.unwrap().version.as_deref(),
            Some("550.54.15")
        );
        assert_eq!(facts.kernel.as_deref(), Some("6.1.0-18-amd64"));
        assert_eq!(
            facts.distribution.as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        let paths: Vec<&str> = facts
            .device_nodes
            .iter()
            .map(|node| node.path.as_str())
            .collect();
        assert_eq!(paths, ["/dev/nvidia0", "/dev/nvidiactl"]);
        assert!(facts.wsl);
        assert_eq!(facts.cgroup_version.as_deref(), Some("v2"));
        assert_eq!(
            facts.cdi_specs,
            [
                CdiSpec {
                    path: "/etc/cdi/nvidia.yaml".into(),
                    nvidia_gpus: true,
                    unreadable: None,
                },
                CdiSpec {
                    path: "/var/run/cdi/other.json".into(),
                    nvidia_gpus: false,
                    unreadable: None,
                },
            ]
        );
        assert_eq!(facts.docker_socket.unwrap().access, "missing");
        assert!(facts.tools.iter().all(|tool| tool.path.is_none()));
    }

    #[test]
    fn a_cdi_spec_names_nvidia_gpus_by_its_kind_not_by_a_substring() {
        let yaml = Path::new("/etc/cdi/x.yaml");
        let json = Path::new("/etc/cdi/x.json");
        for (path, text, names) in [
            (yaml, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n", true),
            (yaml, "kind: \"nvidia.com/gpu\" # the GPUs\n", true),
            (yaml, "# kind: nvidia.com/gpu\nkind: example.com/x\n", false),
            (
                yaml,
                "kind: example.com/x\ndevices: [{name: nvidia.com/gpu}]\n",
                false,
            ),
            (yaml, "  kind: nvidia.com/gpu\n", false),
            (json, r#"{"kind": "nvidia.com/gpu"}"#, true),
            (json, r#"{"kind": "x", "note": "nvidia.com/gpu"}"#, false),
        ] {
            assert_eq!(cdi_kind_is_nvidia_gpu(path, text), Ok(names), "{text}");
        }
        assert!(cdi_kind_is_nvidia_gpu(json, "{nvidia.com/gpu").is_err());
    }

    #[test]
    fn a_cdi_spec_that_cannot_be_read_is_recorded_as_unreadable() {
        // Failures that stop root too: a dangling link, a link to a folder, bytes that
        // are not text. A folder itself is no spec (CDI skips folders).
        let root = tempfile::tempdir().unwrap();
        let cdi = root.path().join("etc/cdi");
        std::fs::create_dir_all(cdi.join("folder.json")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/nvidia.yaml", cdi.join("dangling.yaml")).unwrap();
        std::os::unix::fs::symlink(cdi.join("folder.json"), cdi.join("linked.json")).unwrap();
        std::fs::write(cdi.join("nvidia.yaml"), b"kind: nvidia.com/gpu\n\xff\xfe").unwrap();
        std::fs::write(cdi.join("readable.yaml"), "kind: nvidia.com/gpu\n").unwrap();
        let probe = Probe {
            root: root.path().to_path_buf(),
            path: Some(std::ffi::OsString::new()),
            working_directory: root.path().to_path_buf(),
            docker_endpoint: "tcp://127.0.0.1:1".into(),
        };
        let specs = probe.gather().cdi_specs;
        let paths: Vec<&str> = specs.iter().map(|spec| spec.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/etc/cdi/dangling.yaml",
                "/etc/cdi/linked.json",
                "/etc/cdi/nvidia.yaml",
                "/etc/cdi/readable.yaml"
            ]
        );
        for spec in &specs[..3] {
            assert!(!spec.nvidia_gpus, "{spec:?}");
            assert!(
                spec.unreadable
                    .as_ref()
                    .is_some_and(|error| !error.is_empty()),
                "{spec:?}"
            );
        }
        assert_eq!(
            specs[3],
            CdiSpec {
                path: "/etc/cdi/readable.yaml".into(),
                nvidia_gpus: true,
                unreadable: None,
            }
        );
    }

    #[test]
    fn cdi_specs_recorded_before_unreadable_existed_still_load() {
        let spec: CdiSpec =
            serde_json::from_str(r#"{"path": "/etc/cdi/nvidia.yaml", "nvidia_gpus": true}"#)
                .unwrap();
        assert_eq!(spec.unreadable, None);
        assert!(spec.nvidia_gpus);
    }

    #[test]
    fn an_empty_machine_has_no_nvidia_facts() {
        let root = tempfile::tempdir().unwrap();
        let probe = Probe {
            root: root.path().to_path_buf(),
            path: Some(std::ffi::OsString::new()),
            working_directory: root.path().to_path_buf(),
            docker_endpoint: "tcp://127.0.0.1:1".into(),
        };
        let facts = probe.gather();
        assert!(facts.kernel_module.is_none() && facts.device_nodes.is_empty() && !facts.wsl);
        assert!(
            facts.docker_socket.is_none(),
            "no socket facts for a tcp endpoint"
        );
    }
}
