//! The container engines the engine-parametrised tests (`tests/it/engines.rs`) run against:
//! the Docker daemon (`DOCKER_HOST`, or the default socket) and each Podman service named
//! in `ENVCTL_TEST_PODMAN` (`name=unix:///socket …`, as `.ci/podman.sh` exports it).
//!
//! Each engine is driven with the docker CLI (`docker -H HOST …`, the reference client: it
//! speaks to Podman's compat API as to Docker) and envctl with `DOCKER_HOST=HOST`.
//!
//! Skip or fail: without a Docker daemon the tests skip (see [`docker::require_daemon`]).
//! A Podman socket that does not answer — or `ENVCTL_TEST_PODMAN` unset — prints a
//! `SKIPPED` line, or **fails** the test when `ENVCTL_REQUIRE_DOCKER=1` (as CI sets it):
//! an engine test that quietly ran on Docker alone would prove nothing about Podman.
//!
//! [`for_each_engine`] runs one body per engine in sequence and catches each engine's
//! panic, so one run names every engine's failures; then it fails with all of them.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use super::docker::{self, COMMAND_TIMEOUT, DAEMON_TIMEOUT, TEST_LABEL};

/// `name=unix:///socket` pairs, space-separated: the Podman services to test.
pub const PODMAN_ENV: &str = "ENVCTL_TEST_PODMAN";
/// A folder Podman reads CDI specs from, where the GPU test writes its own spec
/// (`.ci/podman.sh`: `/var/run/cdi`; Podman 5.4.2 ignores containers.conf's `cdi_spec_dirs`).
pub const CDI_DIR_ENV: &str = "ENVCTL_TEST_CDI_DIR";

/// Which engine answers on a socket; the tests expect some behaviour per family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Docker,
    Podman,
}

/// One engine under test.
#[derive(Clone, Debug)]
pub struct TestEngine {
    /// `docker`, or the name given in `ENVCTL_TEST_PODMAN` (`podman-4.3`).
    pub name: String,
    /// `DOCKER_HOST` for it (`unix:///run/envctl-ci/podman4.sock`); empty for Docker's
    /// own (DOCKER_HOST of the test process, or the default socket).
    pub host: String,
    pub family: Family,
    /// `Server.Version` as the engine reports it (`20.10.24`, `4.3.1`, `5.4.2`).
    pub version: String,
}

impl TestEngine {
    /// `major.minor` of [`TestEngine::version`], e.g. `(5, 4)`.
    pub fn version_pair(&self) -> (u32, u32) {
        let mut parts = self.version.split(['.', '-', '+']);
        let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        (next(), next())
    }

    pub fn is_podman(&self) -> bool {
        self.family == Family::Podman
    }

    fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new("docker");
        if !self.host.is_empty() {
            command.args(["-H", self.host.as_str()]);
        }
        command.args(args);
        command
    }

    /// `docker -H HOST ARGS…` (timeout [`COMMAND_TIMEOUT`]), whatever its exit status.
    pub fn docker<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        docker::run_with_timeout(&mut self.command(args), COMMAND_TIMEOUT)
            .unwrap_or_else(|error| panic!("[{}] {error}", self.name))
    }

    /// `docker -H HOST ARGS…`; panics with its stderr unless it succeeds; trimmed stdout.
    pub fn docker_stdout<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let line: Vec<String> = args
            .clone()
            .into_iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        let output = self.docker(args);
        assert!(
            output.status.success(),
            "[{}] `docker {}` failed ({}):\n{}",
            self.name,
            line.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    }

    /// `docker inspect` of one container or image, as JSON.
    pub fn inspect(&self, kind: &str, name: &str) -> serde_json::Value {
        let text = self.docker_stdout(["inspect", "--type", kind, name]);
        let mut list: Vec<serde_json::Value> = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("[{}] inspect {name}: {error}: {text}", self.name));
        assert_eq!(list.len(), 1, "[{}] {text}", self.name);
        list.remove(0)
    }

    /// Does a container with this name exist (running or not)?
    pub fn container_exists(&self, name: &str) -> bool {
        self.docker(["container", "inspect", "--format", "{{.Id}}", name])
            .status
            .success()
    }

    /// The names of the containers labelled `envctl.profile=PROFILE` (running or not).
    pub fn containers_of_profile(&self, profile: &str) -> Vec<String> {
        let filter = format!("label=envctl.profile={profile}");
        self.docker_stdout([
            "ps",
            "-a",
            "--filter",
            filter.as_str(),
            "--format",
            "{{.Names}}",
        ])
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// envctl in `directory` (see [`super::cli::Envctl::in_folder`]) talking to this engine,
    /// ended if it runs past three minutes.
    pub fn envctl(&self, directory: &Path) -> super::cli::Envctl {
        let envctl = super::cli::Envctl::in_folder(directory)
            .env_remove("DOCKER_CONTEXT")
            .timeout(Duration::from_secs(180));
        if self.host.is_empty() {
            envctl
        } else {
            envctl.daemon(&self.host)
        }
    }

    /// The test image on this engine: [`docker::test_image`] on Docker; on Podman the same
    /// image copied over (`docker save` | `docker -H … load`), so every engine runs the
    /// same bytes under the same content-hash tag. Loaded once per engine and process;
    /// test processes serialise the copy with a lock per engine.
    pub fn test_image(&self) -> String {
        let reference = docker::test_image();
        // The local Docker daemon's own; any other daemon (a second Docker too) gets a copy.
        if self.family == Family::Docker && self.host.is_empty() {
            return reference;
        }
        static LOADED: OnceLock<std::sync::Mutex<Vec<String>>> = OnceLock::new();
        let loaded = LOADED.get_or_init(Default::default);
        let mut loaded = loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !loaded.contains(&self.name) {
            self.load_test_image(&reference);
            loaded.push(self.name.clone());
        }
        reference
    }

    fn load_test_image(&self, reference: &str) {
        let present = |engine: &Self| {
            engine
                .docker(["image", "inspect", "--format", "{{.Id}}", reference])
                .status
                .success()
        };
        if present(self) {
            return;
        }
        let lock_name = format!("envctl-test-image-{}.lock", self.name);
        let _lock = docker::BuildLock::acquire_at(&std::env::temp_dir().join(lock_name));
        if present(self) {
            return;
        }
        let folder = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        let tarball = folder.path().join("image.tar");
        let tarball = tarball.to_string_lossy();
        docker::docker_stdout(["save", "-o", &tarball, reference]);
        self.docker_stdout(["load", "-i", &tarball]);
        assert!(
            present(self),
            "[{}] `docker load` did not make {reference}",
            self.name
        );
    }

    /// A named volume labelled `envctl.test=1`, removed on drop.
    pub fn volume(&self, prefix: &str) -> VolumeGuard {
        let name = docker::unique_name(prefix);
        self.docker_stdout(["volume", "create", "--label", TEST_LABEL, name.as_str()]);
        VolumeGuard {
            engine: self.clone(),
            name,
        }
    }

    /// Removes the container with this name (`rm -f -v`) on drop, even when the test panics.
    pub fn container_guard(&self, name: impl Into<String>) -> ContainerGuard {
        ContainerGuard {
            engine: self.clone(),
            name: name.into(),
        }
    }

    /// Removes an image reference (`rmi -f`) on drop; never the test image itself.
    pub fn image_guard(&self, reference: impl Into<String>) -> ImageGuard {
        ImageGuard {
            engine: self.clone(),
            reference: reference.into(),
        }
    }
}

/// See [`TestEngine::container_guard`].
#[derive(Debug)]
pub struct ContainerGuard {
    engine: TestEngine,
    name: String,
}

impl ContainerGuard {
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        let _ = docker::run_with_timeout(
            &mut self.engine.command(["rm", "-f", "-v", self.name.as_str()]),
            Duration::from_secs(60),
        );
    }
}

/// See [`TestEngine::image_guard`].
#[derive(Debug)]
pub struct ImageGuard {
    engine: TestEngine,
    reference: String,
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        if self.reference.starts_with(docker::TEST_IMAGE_REPO) {
            return;
        }
        let _ = docker::run_with_timeout(
            &mut self.engine.command(["rmi", "-f", self.reference.as_str()]),
            Duration::from_secs(60),
        );
    }
}

/// See [`TestEngine::volume`]. Declare it before the container guards: locals drop in
/// reverse order, and a volume in use cannot be removed.
#[derive(Debug)]
pub struct VolumeGuard {
    engine: TestEngine,
    pub name: String,
}

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let _ = docker::run_with_timeout(
            &mut self
                .engine
                .command(["volume", "rm", "-f", self.name.as_str()]),
            Duration::from_secs(60),
        );
    }
}

static ENGINES: OnceLock<Result<Vec<TestEngine>, String>> = OnceLock::new();

/// Docker and every Podman of `ENVCTL_TEST_PODMAN` that answers, probed once per process.
///
/// `None`: the test should return now (skipped; a `SKIPPED` line was printed). Panics
/// instead when `ENVCTL_REQUIRE_DOCKER=1` and an engine is missing.
pub fn engines() -> Option<Vec<TestEngine>> {
    if !docker::require_daemon() {
        return None;
    }
    match ENGINES.get_or_init(probe_engines) {
        Ok(engines) => Some(engines.clone()),
        Err(why) => {
            docker::skip_or_panic("no Podman engine", &docker::current_test_name(), why);
            None
        }
    }
}

fn probe_engines() -> Result<Vec<TestEngine>, String> {
    let docker_version = docker::daemon_status().clone()?;
    let mut engines = vec![TestEngine {
        name: "docker".into(),
        host: String::new(),
        family: Family::Docker,
        version: docker_version,
    }];
    let fix = "Fix: `sudo bash .ci/podman.sh` starts Podman 4.3 and 5.4 on private sockets and \
               prints the ENVCTL_TEST_PODMAN and ENVCTL_TEST_CDI_DIR to export.";
    let listed = std::env::var(PODMAN_ENV).unwrap_or_default();
    if listed.trim().is_empty() {
        return Err(format!(
            "{PODMAN_ENV} is not set: the engine tests would run on Docker alone.\n{fix}"
        ));
    }
    for pair in listed.split_whitespace() {
        let (name, host) = pair
            .split_once('=')
            .ok_or_else(|| format!("{PODMAN_ENV}: `{pair}` is not NAME=unix:///SOCKET\n{fix}"))?;
        let mut engine = TestEngine {
            name: name.to_owned(),
            host: host.to_owned(),
            family: Family::Podman,
            version: String::new(),
        };
        let mut probe = engine.command(["version", "--format", "{{json .Server}}"]);
        let output = docker::run_with_timeout(&mut probe, DAEMON_TIMEOUT)?;
        let server: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
        let Some(version) = server["Version"]
            .as_str()
            .filter(|_| output.status.success())
        else {
            return Err(format!(
                "{name} does not answer on {host}: `docker -H {host} version` failed ({}): {}\n{fix}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        };
        let is_podman = server["Components"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["Name"] == "Podman Engine"));
        if !is_podman {
            return Err(format!(
                "{name} on {host} is not Podman (server {server}): {PODMAN_ENV} names Podman \
                 services only\n{fix}"
            ));
        }
        engine.version = version.to_owned();
        engines.push(engine);
    }
    Ok(engines)
}

/// Runs `body` for each engine in sequence; an engine's panic is caught and kept, and the
/// next engine runs. Panics at the end with every engine's failure, or returns.
pub fn for_each_engine(engines: &[TestEngine], body: impl FnMut(&TestEngine)) {
    let failures = collect_failures(engines, body);
    assert_no_failures(engines, &failures);
}

/// [`for_each_engine`] without the final panic: each failing engine's message, headed
/// `---- NAME VERSION ----`, for a test that adds comparisons across engines.
pub fn collect_failures(engines: &[TestEngine], mut body: impl FnMut(&TestEngine)) -> Vec<String> {
    let mut failures = Vec::new();
    for engine in engines {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| body(engine))) {
            let message = panic_message(payload.as_ref());
            failures.push(format!(
                "---- {} {} ----\n{message}",
                engine.name, engine.version
            ));
        }
    }
    failures
}

/// The steps of one engine's scenario, each run even when one before it failed: a run
/// then names every step that fails on that engine, not just the first.
pub struct Steps {
    engine: String,
    failed: Vec<String>,
}

impl Steps {
    pub fn new(engine: &TestEngine) -> Self {
        Self {
            engine: engine.name.clone(),
            failed: Vec::new(),
        }
    }

    /// Runs `body`, keeping its panic message as this step's failure.
    pub fn run(&mut self, what: &str, body: impl FnOnce()) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
            self.failed.push(format!(
                "step `{what}`: {}",
                panic_message(payload.as_ref())
            ));
        }
    }

    /// Panics with every failed step, if any.
    pub fn finish(self) {
        assert!(
            self.failed.is_empty(),
            "[{}] {} step(s) failed:\n{}",
            self.engine,
            self.failed.len(),
            self.failed.join("\n")
        );
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "<panic without a message>".into())
}

/// Panics with every failure of [`collect_failures`], if any.
pub fn assert_no_failures(engines: &[TestEngine], failures: &[String]) {
    assert!(
        failures.is_empty(),
        "failed on {} of {} engines ({}):\n{}",
        failures.len(),
        engines.len(),
        engines
            .iter()
            .map(|engine| format!("{} {}", engine.name, engine.version))
            .collect::<Vec<_>>()
            .join(", "),
        failures.join("\n")
    );
}

/// The digest a registry serves for `repo:tag` (`Docker-Content-Digest` of `HEAD
/// /v2/REPO/manifests/TAG`, accepting Docker v2 and OCI manifests and lists).
pub fn registry_manifest_digest(addr: SocketAddr, repo: &str, tag: &str) -> String {
    let timeout = Duration::from_secs(10);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .unwrap_or_else(|error| panic!("connect {addr}: {error}"));
    stream.set_read_timeout(Some(timeout)).ok();
    let accept = [
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
    ]
    .join(", ");
    write!(
        stream,
        "HEAD /v2/{repo}/manifests/{tag} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap_or_else(|error| panic!("write to {addr}: {error}"));
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|error| panic!("read from {addr}: {error}"));
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "HEAD /v2/{repo}/manifests/{tag}: {answer}"
    );
    answer
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("docker-content-digest"))
        .map(|(_, value)| value.trim().to_owned())
        .unwrap_or_else(|| panic!("no Docker-Content-Digest in: {answer}"))
}

/// A character device at `path` with /dev/null's numbers (1:3), for a test CDI spec's
/// device node (NVIDIA's specs name `/dev/nvidiaN`). Needs root, as CI runs.
pub fn null_device_node(path: &Path) {
    let made = std::process::Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .output()
        .unwrap_or_else(|error| panic!("mknod: {error}"));
    assert!(
        made.status.success(),
        "mknod {} (needs root): {}",
        path.display(),
        String::from_utf8_lossy(&made.stderr)
    );
}
