//! The real Slurm cluster of `.ci/slurm.sh` (slurmctld, nodes n1 and n2, four fake GPUs
//! each, `KillWait=10`) and the second Docker daemon of `.ci/dockerd2.sh` (its stand-in
//! NVIDIA hook starts `--gpus` containers), for `tests/it/slurm.rs`.
//!
//! Jobs are submitted with `sbatch`/`srun` against the cluster's own slurm.conf
//! (`SLURM_CONF`), with the environment the test gives the command: Slurm hands the
//! submitting environment to the job, so envctl inside runs under the test's hermetic
//! settings. Every job a test submits is cancelled on drop ([`Job`]).
//!
//! Skip or fail: without `ENVCTL_TEST_SLURM_CONF` or an answering slurmctld, or without
//! the second daemon, a test prints `SKIPPED` — or fails under `ENVCTL_REQUIRE_DOCKER=1`.

// Test support: a failed step is the test's failure, with the step's own error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::docker;

/// The cluster's slurm.conf, as `.ci/slurm.sh` exports it.
pub const SLURM_CONF_ENV: &str = "ENVCTL_TEST_SLURM_CONF";
/// The second daemon's socket (`.ci/dockerd2.sh`).
pub const GPU_DAEMON: &str = "unix:///run/envctl-ci/dockerd2.sock";
/// The cluster's `KillWait`: how long Slurm waits between SIGTERM and SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_secs(10);

/// The test cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub conf: PathBuf,
}

/// The cluster, when it answers; `None` (skipped) or a panic under `ENVCTL_REQUIRE_DOCKER=1`.
pub fn cluster() -> Option<Cluster> {
    let test = docker::current_test_name();
    let Some(conf) = std::env::var_os(SLURM_CONF_ENV).filter(|value| !value.is_empty()) else {
        docker::skip_or_panic(
            "no Slurm cluster",
            &test,
            &format!(
                "{SLURM_CONF_ENV} is not set.\nFix: `sudo bash .ci/slurm.sh start` and export the {SLURM_CONF_ENV} it prints."
            ),
        );
        return None;
    };
    let cluster = Cluster {
        conf: PathBuf::from(conf),
    };
    let ping = cluster.output(&mut cluster.command("scontrol", &["ping"]));
    if !ping.contains("UP") {
        docker::skip_or_panic(
            "no Slurm cluster",
            &test,
            &format!(
                "`scontrol ping` with SLURM_CONF={} says: {ping}\nFix: `sudo bash .ci/slurm.sh start`.",
                cluster.conf.display()
            ),
        );
        return None;
    }
    Some(cluster)
}

/// The second daemon answers (with the test image loaded on it); `false`: skipped, or a
/// panic under `ENVCTL_REQUIRE_DOCKER=1`.
pub fn gpu_daemon() -> bool {
    let version = Command::new("docker")
        .args([
            "-H",
            GPU_DAEMON,
            "version",
            "--format",
            "{{.Server.Version}}",
        ])
        .output();
    if !version.is_ok_and(|output| output.status.success()) {
        return docker::skip_or_panic(
            "no second Docker daemon",
            &docker::current_test_name(),
            &format!("nothing answers at {GPU_DAEMON}.\nFix: `sudo bash .ci/dockerd2.sh start`."),
        );
    }
    true
}

/// The test image on the second daemon (`docker save` | `docker -H … load`, once).
pub fn gpu_daemon_image() -> String {
    let reference = docker::test_image();
    let present = || {
        Command::new("docker")
            .args(["-H", GPU_DAEMON, "image", "inspect", &reference])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if present() {
        return reference;
    }
    let _lock = docker::BuildLock::acquire_at(
        &std::env::temp_dir().join("envctl-test-image-dockerd2.lock"),
    );
    if !present() {
        let folder = tempfile::tempdir().unwrap();
        let tarball = folder.path().join("image.tar");
        docker::docker_stdout(["save", "-o", &tarball.to_string_lossy(), reference.as_str()]);
        let loaded = Command::new("docker")
            .args(["-H", GPU_DAEMON, "load", "-i"])
            .arg(&tarball)
            .output()
            .unwrap();
        assert!(
            loaded.status.success(),
            "docker load on {GPU_DAEMON}: {loaded:?}"
        );
    }
    reference
}

/// `docker -H <second daemon> ARGS…`'s stdout.
pub fn gpu_docker(args: &[&str]) -> String {
    let output = Command::new("docker")
        .args(["-H", GPU_DAEMON])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The names of the containers on the second daemon carrying `label` (KEY=VALUE).
pub fn containers_labelled(label: &str) -> Vec<String> {
    gpu_docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label={label}"),
        "--format",
        "{{.Names}}",
    ])
    .lines()
    .map(str::to_string)
    .filter(|name| !name.is_empty())
    .collect()
}

/// Waits until `done` holds, for at most `limit`; how long it took, or `None`.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if done() {
            return Some(started.elapsed());
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A job submitted by a test, cancelled on drop.
#[derive(Debug)]
pub struct Job {
    pub cluster: Cluster,
    pub id: String,
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self
            .cluster
            .command("scancel", &[self.id.as_str()])
            .output();
    }
}

impl Cluster {
    /// `PROGRAM ARGS…` against this cluster (`SLURM_CONF`), nothing else changed.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command.args(args).env("SLURM_CONF", &self.conf);
        command
    }

    fn output(&self, command: &mut Command) -> String {
        match command.output() {
            Ok(output) => format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(error) => format!("cannot run it: {error}"),
        }
    }

    /// Submits `script` with `sbatch --parsable ARGS…`; `prepare` sets the job's
    /// environment (Slurm hands it to the job) before the submit.
    pub fn sbatch(&self, args: &[&str], script: &Path, prepare: impl FnOnce(&mut Command)) -> Job {
        let mut command = Command::new("sbatch");
        prepare(&mut command);
        command
            .env("SLURM_CONF", &self.conf)
            .arg("--parsable")
            .args(args)
            .arg(script);
        let output = command.output().unwrap();
        let id = String::from_utf8_lossy(&output.stdout).trim().to_string();
        assert!(
            output.status.success() && !id.is_empty(),
            "sbatch failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Job {
            cluster: self.clone(),
            id: id.split(';').next().unwrap_or_default().to_string(),
        }
    }

    /// `srun ARGS… -- COMMAND…` started in the background, its output piped.
    pub fn srun(
        &self,
        args: &[&str],
        command: &[&str],
        prepare: impl FnOnce(&mut Command),
    ) -> Child {
        let mut srun = Command::new("srun");
        prepare(&mut srun);
        srun.env("SLURM_CONF", &self.conf)
            .args(args)
            .arg("--")
            .args(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The job's state (`RUNNING`, `PENDING`, `COMPLETED`, `CANCELLED`, `TIMEOUT`…), as
    /// `scontrol show job` says it; `None` once Slurm has forgotten it.
    pub fn state(&self, job: &str) -> Option<String> {
        let shown = self.output(&mut self.command("scontrol", &["show", "job", job]));
        shown
            .split_whitespace()
            .find_map(|field| field.strip_prefix("JobState="))
            .map(str::to_string)
    }

    /// Waits (at most `limit`) until the job's state is one of `states`; the state reached.
    pub fn wait_state(&self, job: &str, states: &[&str], limit: Duration) -> String {
        let mut last = None;
        let reached = wait_until(limit, || {
            last = self.state(job);
            last.as_deref().is_some_and(|state| states.contains(&state))
        });
        assert!(
            reached.is_some(),
            "job {job} did not reach {states:?} within {limit:?} (last state: {last:?}); {}",
            self.output(&mut self.command("scontrol", &["show", "job", job]))
        );
        last.unwrap_or_default()
    }

    /// `scancel JOB`.
    pub fn scancel(&self, job: &str) {
        let output = self.command("scancel", &[job]).output().unwrap();
        assert!(output.status.success(), "scancel {job}: {output:?}");
    }
}
