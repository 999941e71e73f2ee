//! Plain inputs for the unit tests of `ops::up`'s parts: a context that reads no process
//! environment, doctor's facts as an engine and NVML would give them, profiles resolved
//! from their text, and the running containers a daemon would list. Nothing here speaks
//! to a daemon.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Plan;
use crate::container_plan::gpus::Gpus;
use crate::container_plan::{CreateBody, SpecContext};
use crate::context::{Clock, Context, Environment};
use crate::facts::container::{ContainerSummary, PublishedPort};
use crate::facts::engine::{DaemonFacts, EngineFacts, EngineKind, EngineState};
use crate::facts::gpu::{FailureKind, GpuDevice, GpuFacts, LoadOutcome, NvmlFacts, NvmlFailure};
use crate::facts::user::User;
use crate::ops::doctor::Facts;
use crate::profile::ResolvedProfile;
use crate::ui::printer::{ColorChoice, Printer, Verbosity};

/// Where the tests' profiles are said to be resolved.
pub const WORKING_DIRECTORY: &str = "/work/project";

/// The user running the tests' `up`.
pub fn user() -> User {
    User {
        uid: Some(1000),
        name: "ada".into(),
        identity: None,
    }
}

/// A context of no variables but `HOME`, quiet, at a fixed time.
pub fn context() -> Context {
    let environment = Environment::from_variables(
        [("HOME", "/home/ada")],
        PathBuf::from(WORKING_DIRECTORY),
        Clock::Fixed(std::time::SystemTime::UNIX_EPOCH),
    );
    Context {
        printer: Printer::new(ColorChoice::Never, Verbosity::Quiet),
        json: false,
        search_path: environment.search_path(),
        environment,
        host_flag: None,
        context_flag: None,
        user: user(),
        other_user: false,
        chosen_daemon: std::sync::OnceLock::new(),
        me: std::sync::OnceLock::new(),
        me_on_chosen: std::sync::OnceLock::new(),
    }
}

/// A daemon of `kind` and `version` with these runtimes registered.
pub fn daemon(kind: EngineKind, version: &str, runtimes: &[&str]) -> DaemonFacts {
    DaemonFacts {
        kind,
        server_version: Some(version.into()),
        api_version: Some("1.47".into()),
        runtimes: runtimes.iter().map(|runtime| runtime.to_string()).collect(),
        ..DaemonFacts::default()
    }
}

pub fn reachable(daemon: DaemonFacts) -> EngineState {
    EngineState::Reachable(Box::new(daemon))
}

pub fn unreachable() -> EngineState {
    EngineState::Unreachable {
        kind: "not_reachable".into(),
        message: "connection refused".into(),
        hint: None,
    }
}

/// NVML loaded and listing `count` GPUs (whose own queries failed: only the count
/// matters to `up`'s decisions tested here).
pub fn nvml_with_gpus(count: u32) -> LoadOutcome {
    let failure = NvmlFailure::new(FailureKind::Other, "not asked");
    LoadOutcome::Loaded(Box::new(NvmlFacts {
        driver_version: crate::facts::gpu::Fact::Value("570.124.06".into()),
        cuda_driver_version: crate::facts::gpu::Fact::Error(failure.clone()),
        nvml_version: crate::facts::gpu::Fact::Value("12.570.124.06".into()),
        device_count: crate::facts::gpu::Fact::Value(count),
        gpus: (0..count)
            .map(|index| GpuDevice::unreachable(index, failure.clone()))
            .collect(),
        shutdown_failure: None,
    }))
}

/// NVML that would not load: no GPU seen.
pub fn nvml_missing() -> LoadOutcome {
    LoadOutcome::LibraryNotFound {
        message: "libnvidia-ml.so.1: cannot open shared object file".into(),
    }
}

/// Doctor's facts for one profile: this engine and NVML, an empty host.
pub fn facts(engine: EngineState, nvml: LoadOutcome) -> Facts {
    Facts {
        engine: EngineFacts {
            endpoint: "unix:///var/run/docker.sock".into(),
            state: engine,
        },
        gpu: GpuFacts {
            library: "libnvidia-ml.so.1".into(),
            nvml,
        },
        host: crate::facts::host::HostFacts::default(),
        images: vec![Ok(None)],
        free_bytes: None,
        library_from_environment: false,
        home: None,
        lock: Ok(None),
        today: "2026-12-07".into(),
        holders: None,
        process_owners: (BTreeMap::new(), Vec::new()),
        process_users: BTreeMap::new(),
        daemon_policy: None,
        host_crashed: None,
        slurm: None,
        cdi_stale_nodes: Vec::new(),
        image_libraries: vec![None],
    }
}

/// The profile `text` resolved as if read from `test.toml`.
pub fn resolved(text: &str) -> ResolvedProfile {
    crate::profile::resolve::resolve_text("test.toml", text)
        .unwrap_or_else(|error| panic!("{error}: {error:?}"))
}

fn every_path_exists(_: &Path) -> bool {
    true
}

/// The create body of `resolved`, on a host without GPUs.
pub fn body(resolved: &ResolvedProfile) -> CreateBody {
    let context = SpecContext {
        working_directory: PathBuf::from(WORKING_DIRECTORY),
        home: Some(PathBuf::from("/home/ada")),
        host_has_gpus: false,
        overrides: crate::container_plan::Overrides::default(),
        path_exists: &every_path_exists,
    };
    crate::container_plan::create_body(resolved, &context).unwrap_or_else(|error| panic!("{error}"))
}

/// The plan of profile `text` asking for `gpus`, named `envctl-<profile>`, with no facts
/// gathered and no policy.
pub fn plan(text: &str, gpus: Gpus) -> Plan {
    let resolved = resolved(text);
    let body = body(&resolved);
    Plan {
        name: crate::container_plan::container_name(&resolved.profile.name),
        resolved,
        body,
        gpus,
        locked_digest: None,
        facts: None,
        user: user(),
        policies: Vec::new(),
        force: false,
    }
}

/// A running container as the daemon lists it: `labels`, and `published` as
/// `(host address, host port, protocol)`.
pub fn running(
    name: &str,
    labels: &[(&str, &str)],
    published: &[(&str, u16, &str)],
) -> ContainerSummary {
    ContainerSummary {
        id: format!("{name}-id"),
        name: name.into(),
        image: "ubuntu:24.04".into(),
        image_id: "sha256:0".into(),
        state: "running".into(),
        status: "Up 3 minutes".into(),
        created: 0,
        labels: labels
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect(),
        ports: Vec::new(),
        published: published
            .iter()
            .map(|(address, port, protocol)| PublishedPort {
                host_ip: address.to_string(),
                host_port: *port,
                protocol: protocol.to_string(),
                container_port: Some(*port),
            })
            .collect(),
    }
}
