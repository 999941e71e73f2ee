//! Another machine for a test: a Docker daemon of the test's own in a network **and** UTS
//! namespace of its own (its `/info` Name is the host name the test gives), with its own
//! data root, exec root and socket, and — unless the test asks for a server without
//! NVIDIA's toolkit — the stand-in NVIDIA hook of `.ci/dockerd2.sh`, whose `nvidia-smi`
//! answers from this server's [`Fixture`] (GPUs, driver, CUDA version, compute processes).
//!
//! Three servers with different GPUs and drivers are three [`Server::start`]s. Everything
//! is removed on drop: the daemon (TERM, then KILL), what it left mounted, its namespace and
//! folders. Needs root; without it (or without dockerd, `unshare`, `nsenter`) the test
//! skips, or fails under `ENVCTL_REQUIRE_DOCKER=1`.
//!
//! The daemon is entered with `nsenter --net=` (`ip netns exec` remounts /sys and dockerd
//! then finds no devices cgroup), never started in the host's network namespace (with
//! `--bridge none` it would delete the host's docker0): `../shared/reference/cluster-facts.md`.

// Test support: a failed step is the test's failure, with the step's own error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::docker;

/// One GPU of a fixture, as `nvidia-smi --query-gpu` answers it. A field is written as
/// nvidia-smi writes it (`[N/A]` where a real GPU says so).
#[derive(Debug, Clone)]
pub struct FixtureGpu {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub compute_cap: String,
    /// MiB, or `[N/A]`.
    pub memory_total: String,
    pub memory_used: String,
}

/// A compute process of a fixture: on the GPU `gpu_uuid`, the host's `pid`.
#[derive(Debug, Clone)]
pub struct FixtureProcess {
    pub gpu_uuid: String,
    pub pid: u32,
    /// MiB.
    pub used_memory: String,
    pub name: String,
}

/// What a server's `nvidia-smi` answers.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub driver: String,
    pub cuda: String,
    pub gpus: Vec<FixtureGpu>,
    pub processes: Vec<FixtureProcess>,
}

impl Fixture {
    /// `count` GPUs named `model` with compute capability `cc`, 80 GiB each, none in use;
    /// UUIDs `GPU-<tag>-…-00000000000N`, so two servers' GPUs differ.
    pub fn gpus(tag: &str, count: u32, model: &str, cc: &str, driver: &str, cuda: &str) -> Self {
        Fixture {
            driver: driver.into(),
            cuda: cuda.into(),
            gpus: (0..count)
                .map(|index| FixtureGpu {
                    index,
                    uuid: format!("GPU-{tag}-0000-0000-0000-{index:012}"),
                    name: model.into(),
                    compute_cap: cc.into(),
                    memory_total: "81920".into(),
                    memory_used: "0".into(),
                })
                .collect(),
            processes: Vec::new(),
        }
    }

    /// Writes the fixture's files (`.ci/dockerd2.sh` describes them) into `folder`.
    pub fn write(&self, folder: &Path) {
        std::fs::create_dir_all(folder).unwrap();
        let mut gpus =
            String::from("index,uuid,name,compute_cap,memory.total,memory.used,driver_version\n");
        for gpu in &self.gpus {
            gpus.push_str(&format!(
                "{},{},{},{},{},{},{}\n",
                gpu.index,
                gpu.uuid,
                gpu.name,
                gpu.compute_cap,
                gpu.memory_total,
                gpu.memory_used,
                self.driver
            ));
        }
        let mut apps = String::from("gpu_uuid,pid,used_memory,process_name\n");
        for process in &self.processes {
            apps.push_str(&format!(
                "{},{},{},{}\n",
                process.gpu_uuid, process.pid, process.used_memory, process.name
            ));
        }
        // Written beside and renamed: a container starting now copies a whole file.
        for (name, text) in [
            ("gpus.csv", gpus),
            ("apps.csv", apps),
            ("cuda", format!("{}\n", self.cuda)),
        ] {
            let partial = folder.join(format!(".{name}.partial"));
            std::fs::write(&partial, text).unwrap();
            std::fs::rename(&partial, folder.join(name)).unwrap();
        }
    }
}

/// A daemon of the test's own; removed with everything it made on drop.
pub struct Server {
    pub hostname: String,
    netns: String,
    /// `/run/envctl-ci/s/<short>`: socket, exec root, state (hook, fixture, log).
    run: PathBuf,
    data_root: PathBuf,
}

static SERVERS: AtomicU32 = AtomicU32::new(0);

/// The repository's `.ci/dockerd2.sh`, whose stand-in NVIDIA hook and nvidia-smi servers use.
fn dockerd2_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/dockerd2.sh")
}

impl Server {
    /// A server named `hostname` (its `/info` Name), with the stand-in NVIDIA hook
    /// answering from `fixture`, or without any NVIDIA toolkit when `fixture` is `None`
    /// (a `--gpus` request is then refused by the daemon, as on a server without it).
    /// `None`: skipped (said), or a panic under `ENVCTL_REQUIRE_DOCKER=1`.
    pub fn start(test: &str, hostname: &str, fixture: Option<&Fixture>) -> Option<Server> {
        if !docker::require_daemon_for(test) {
            return None;
        }
        let missing: Vec<&str> = ["dockerd", "unshare", "nsenter", "setsid", "ip"]
            .into_iter()
            .filter(|tool| {
                !Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
            })
            .collect();
        if !crate::remote_daemons::is_root() || !missing.is_empty() {
            docker::skip_or_panic(
                "a test server cannot be started",
                test,
                &format!(
                    "a server of the test's own needs root and dockerd, unshare, nsenter, setsid, ip (missing: {missing:?}).\nFix: run the tests as root on a machine with Docker (.ci/run does)."
                ),
            );
            return None;
        }
        let short = format!(
            "{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        );
        let run = PathBuf::from(format!("/run/envctl-ci/s/{short}"));
        let data_root = PathBuf::from(format!("/var/lib/envctl-ci/s/{short}"));
        let server = Server {
            hostname: hostname.into(),
            netns: format!("envctl-s-{short}"),
            run,
            data_root,
        };
        let state = server.state();
        std::fs::create_dir_all(state.join("bin")).unwrap();
        std::fs::create_dir_all(server.run.join("exec")).unwrap();
        std::fs::create_dir_all(&server.data_root).unwrap();
        std::fs::write(state.join("daemon.json"), "{}\n").unwrap();
        let mut path = std::env::var_os("PATH").unwrap_or_default();
        if let Some(fixture) = fixture {
            fixture.write(&server.fixture_folder());
            let written = Command::new("bash")
                .arg("-c")
                // `$0` is not the script: sourced, it then defines its functions only.
                .arg(". \"$1\" && dockerd2_nvidia_standin \"$2\" \"$3\"")
                .arg("envctl-test-server")
                .arg(dockerd2_script())
                .arg(state.join("bin"))
                .arg(server.fixture_folder())
                .output()
                .unwrap();
            assert!(
                written.status.success(),
                "writing the stand-in hook: {written:?}"
            );
            let mut with_hook = state.join("bin").into_os_string();
            with_hook.push(":");
            with_hook.push(&path);
            path = with_hook;
        }
        let added = Command::new("ip")
            .args(["netns", "add", &server.netns])
            .output()
            .unwrap();
        assert!(added.status.success(), "ip netns add: {added:?}");
        let lo = Command::new("ip")
            .args([
                "netns",
                "exec",
                &server.netns,
                "ip",
                "link",
                "set",
                "lo",
                "up",
            ])
            .output()
            .unwrap();
        assert!(lo.status.success(), "lo up in {}: {lo:?}", server.netns);
        let log = std::fs::File::create(state.join("dockerd.log")).unwrap();
        let child = Command::new("setsid")
            .arg("nsenter")
            .arg(format!("--net=/run/netns/{}", server.netns))
            .args([
                "unshare",
                "--uts",
                "sh",
                "-c",
                "hostname \"$0\" && exec \"$@\"",
            ])
            .arg(hostname)
            .arg("dockerd")
            .arg("--config-file")
            .arg(state.join("daemon.json"))
            .arg("--data-root")
            .arg(&server.data_root)
            .arg("--exec-root")
            .arg(server.run.join("exec"))
            .arg("--pidfile")
            .arg(state.join("dockerd.pid"))
            .args(["--storage-driver", "vfs", "--bridge", "none"])
            .args(["--iptables=false", "--ip6tables=false", "--ip-masq=false"])
            .arg("-H")
            .arg(server.host())
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        // Reaped by a thread: a zombie would look alive to the drop's wait.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "the test server {hostname} did not answer on {} within 60 s; its log:\n{}",
                server.host(),
                std::fs::read_to_string(state.join("dockerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(server)
    }

    fn state(&self) -> PathBuf {
        self.run.join("state")
    }

    /// The folder the stand-in nvidia-smi answers from (read at each container's start).
    pub fn fixture_folder(&self) -> PathBuf {
        self.state().join("nvidia-fixture")
    }

    /// Makes the server's nvidia-smi answer `fixture` from the next container on.
    pub fn set_fixture(&self, fixture: &Fixture) {
        fixture.write(&self.fixture_folder());
    }

    /// `unix:///run/envctl-ci/s/<short>/docker.sock`, for `-H` and `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.run.join("docker.sock").display())
    }

    fn answers(&self) -> bool {
        self.run.join("docker.sock").exists()
            && Command::new("docker")
                .args([
                    "-H",
                    &self.host(),
                    "version",
                    "--format",
                    "{{.Server.Version}}",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
    }

    /// `docker -H <this server> ARGS…`.
    pub fn docker(&self, arguments: &[&str]) -> Output {
        Command::new("docker")
            .env_remove("DOCKER_CONTEXT")
            .env_remove("DOCKER_TLS_VERIFY")
            .args(["-H", &self.host()])
            .args(arguments)
            .output()
            .unwrap()
    }

    /// `docker -H <this server> ARGS…`'s stdout, asserting it succeeded.
    pub fn docker_ok(&self, arguments: &[&str]) -> String {
        let output = self.docker(arguments);
        assert!(
            output.status.success(),
            "docker -H {} {arguments:?}: {}",
            self.host(),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The test image (`docker::test_image`) loaded on this server; its reference.
    pub fn load_test_image(&self) -> String {
        let reference = docker::test_image();
        let folder = tempfile::tempdir().unwrap();
        let tarball = folder.path().join("image.tar");
        docker::docker_stdout(["save", "-o", &tarball.to_string_lossy(), reference.as_str()]);
        self.docker_ok(&["load", "-i", &tarball.to_string_lossy()]);
        reference
    }

    /// The host pid of the main process of container `name` on this server.
    pub fn container_pid(&self, name: &str) -> u32 {
        self.docker_ok(&["inspect", "--format", "{{.State.Pid}}", name])
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid_file = self.state().join("dockerd.pid");
        let pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        if let Some(pid) = pid {
            // dockerd stops its containers and its containerd on TERM.
            let _ = Command::new("kill")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if Path::new(&format!("/proc/{pid}")).exists() {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        // What the daemon may have left mounted under its roots, deepest first.
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let mut left: Vec<&str> = mounts
            .lines()
            .filter_map(|line| line.split_whitespace().nth(1))
            .filter(|mount| {
                Path::new(mount).starts_with(&self.data_root)
                    || Path::new(mount).starts_with(&self.run)
            })
            .collect();
        left.sort_unstable_by(|a, b| b.cmp(a));
        for mount in left {
            let _ = Command::new("umount").args(["-l", mount]).status();
        }
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.netns])
            .status();
        let _ = std::fs::remove_dir_all(&self.data_root);
        let _ = std::fs::remove_dir_all(&self.run);
    }
}
