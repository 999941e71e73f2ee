//! What `host/` read about this machine outside NVML and Docker — kernel, distribution,
//! the NVIDIA kernel module, device nodes, WSL, cgroups, the NVIDIA container tools, CDI
//! specs and the Docker socket's permissions — as plain serde data for `checks/`.

use serde::{Deserialize, Serialize};

/// Everything `host/` gathers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostFacts {
    pub kernel: Option<String>,
    /// The machine architecture (`x86_64`, `aarch64`): which platform's torch wheels apply.
    #[serde(default)]
    pub machine: Option<String>,
    /// `/etc/nv_tegra_release`'s first line: this is a Jetson (L4T) host.
    #[serde(default)]
    pub l4t_release: Option<String>,
    pub distribution: Option<String>,
    /// `/proc/driver/nvidia/version`: the loaded kernel module, when there is one.
    pub kernel_module: Option<KernelModule>,
    /// `/dev/nvidia*` nodes.
    pub device_nodes: Vec<DeviceNode>,
    /// `/dev/dxg` exists: this is WSL 2, where GPUs come through the Windows driver.
    pub wsl: bool,
    /// `v1` or `v2`, from `/sys/fs/cgroup`.
    pub cgroup_version: Option<String>,
    pub tools: Vec<ToolFacts>,
    pub cdi_specs: Vec<CdiSpec>,
    /// Only for a local unix socket; `None` for tcp/ssh endpoints.
    pub docker_socket: Option<SocketAccess>,
    /// Podman's container init (`catatonit`) where Podman looks for it, when found: a
    /// container with `--init` cannot be created without it.
    #[serde(default)]
    pub container_init: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelModule {
    pub version: Option<String>,
    /// The first line as the driver writes it.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNode {
    pub path: String,
    /// `major:minor` for character devices.
    pub device_number: Option<String>,
    /// Whether `/dev/char/MAJOR:MINOR` exists. systemd's cgroup driver needs these links or
    /// containers lose the GPU after `systemctl daemon-reload` (NVIDIA/nvidia-docker#1730).
    pub char_link: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CdiSpec {
    pub path: String,
    /// The spec names `nvidia.com/gpu` devices. `false` also when the spec could not be
    /// read: then `unreadable` says why, and whether it names them is unknown.
    pub nvidia_gpus: bool,
    /// Why the spec could not be read (permission denied, a dangling link, an I/O error);
    /// `None` when it was read.
    #[serde(default)]
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketAccess {
    pub path: String,
    pub exists: bool,
    /// `ok`, `permission-denied`, `refused` (stale socket), `missing`, or another error.
    pub access: String,
}

/// One NVIDIA container tool on `PATH`, and its version when it prints one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFacts {
    pub name: String,
    pub path: Option<String>,
    pub version: Option<semver::Version>,
    /// Why the version could not be read, when it was asked for.
    pub version_error: Option<String>,
}

/// A device node an NVIDIA CDI spec hands to containers that does not match this host's
/// `/dev` (issue 43): it is missing, or its `major:minor` differ from the spec's. A spec
/// left from before a driver upgrade or a GPU change makes containers fail to start, or
/// get the wrong device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleCdiNode {
    /// The spec, e.g. `/etc/cdi/nvidia.yaml`.
    pub spec: String,
    /// The node on the host (`hostPath`, else `path`), e.g. `/dev/nvidia3`.
    pub node: String,
    /// `major:minor` as the spec writes them, when it does.
    pub spec_number: Option<String>,
    /// `major:minor` in `/dev`; `None` when the node does not exist.
    pub host_number: Option<String>,
}
