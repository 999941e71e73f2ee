//! envctl inside real Slurm jobs (issue 29): the cluster of `.ci/slurm.sh` (nodes n1 and
//! n2 on this machine, four fake GPUs each, `ConstrainDevices=yes`, `KillWait=10`), GPU
//! containers on the second daemon of `.ci/dockerd2.sh` (its stand-in NVIDIA hook makes
//! `--gpus` containers start, and PID 1 gets `NVIDIA_VISIBLE_DEVICES`), the stand-in NVML
//! for the host's four GPUs.
//!
//! The stand-in GPUs' device minor numbers run backwards (NVML index i is `/dev/nvidia(3-i)`),
//! so a Slurm index matched by NVML index instead of minor number shows. GPU jobs run on
//! n1 only: both nodes are this one machine, and its GPUs are n1's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::{Envctl, Run, hermetic};
use crate::support::docker;
use crate::support::nvml;
use crate::support::slurm::{
    self, Cluster, GPU_DAEMON, KILL_WAIT, containers_labelled, gpu_docker, wait_until,
};

/// A test's folder: `./envctl/` profiles, the stand-in NVML's fixture, the GPU lock.
struct Setup {
    folder: tempfile::TempDir,
    fixture: PathBuf,
    /// By NVML index.
    uuids: Vec<String>,
    /// While the test runs, its envctl may keep the second daemon's GPU record from this
    /// stand-in NVML: shared with other Slurm tests, never with a test asserting the
    /// daemon's own fixture (`support::docker::dockerd2_record_lock`).
    _record: crate::support::docker::BuildLock,
}

impl Setup {
    /// Four H100s with UUIDs of this test's own, minor numbers backwards, and `profiles`
    /// (`name`, rest of the file) on `image`.
    fn new(image: &str, profiles: &[(&str, &str)]) -> Setup {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
        for (name, rest) in profiles {
            std::fs::write(
                folder.path().join("envctl").join(format!("{name}.toml")),
                format!("image = \"{image}\"\n{rest}"),
            )
            .unwrap();
        }
        let prefix = format!("{:08x}", std::process::id() ^ nanos());
        let uuids: Vec<String> = (0..4)
            .map(|index| format!("GPU-{prefix}-51a8-4b8e-9a57-0c3f1e2d4a0{index}"))
            .collect();
        let base = std::fs::read_to_string(nvml::fixture("healthy-8x-h100.conf")).unwrap();
        let mut text: String = base
            .lines()
            .filter(|line| {
                !line.contains(".uuid=")
                    && !line.starts_with("device_count=")
                    && !["gpu.4.", "gpu.5.", "gpu.6.", "gpu.7."]
                        .iter()
                        .any(|gpu| line.starts_with(gpu))
            })
            .map(|line| format!("{line}\n"))
            .collect();
        text.push_str("device_count=4\n");
        for (index, uuid) in uuids.iter().enumerate() {
            text.push_str(&format!("gpu.{index}.uuid={uuid}\n"));
            text.push_str(&format!("gpu.{index}.minor_number={}\n", 3 - index));
        }
        let fixture = folder.path().join("gpus.conf");
        std::fs::write(&fixture, text).unwrap();
        Setup {
            folder,
            fixture,
            uuids,
            _record: crate::support::docker::BuildLock::acquire_shared_at(
                &crate::support::docker::dockerd2_record_lock(),
            ),
        }
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// The environment of a job or of envctl: the test's hermetic one, the second daemon
    /// (or `host`), the stand-in NVML, a GPU lock of the test's own.
    fn environment(&self, host: &str) -> impl FnOnce(&mut Command) + '_ {
        let host = host.to_string();
        move |command: &mut Command| {
            hermetic(command, self.path());
            command
                .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
                .env("ENVCTL_NVML_STUB_FIXTURE", &self.fixture)
                .env("ENVCTL_GPU_LOCK", self.path().join("gpus.lock"));
            if !host.is_empty() {
                command.env("DOCKER_HOST", host);
            }
        }
    }

    /// The UUID of Slurm's GPU `id` (`/dev/nvidia<id>`: NVML index 3 - id).
    fn uuid_of_slurm_gpu(&self, id: u32) -> &str {
        &self.uuids[3 - id as usize]
    }

    /// A batch script that prints its GPUs and ends in `exec envctl ARGS…`.
    fn script(&self, name: &str, envctl_arguments: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"job-gpus=$SLURM_JOB_GPUS\"\nexec '{}' {envctl_arguments}\n",
                envctl_on_gpu2().display()
            ),
        )
        .unwrap();
        path
    }
}

/// envctl as the GPU server's own runs it: the second daemon is another machine (its own
/// UTS namespace names it `gpu2`, `.ci/dockerd2.sh`), and the Slurm nodes here stand in for
/// that server, so envctl runs in a UTS namespace named `gpu2` too (the stand-in NVML is
/// then the daemon's machine's, as on a real node). A script, so jobs, `srun` and the
/// Epilog run it as they run envctl; `unshare` and `sh` exec, so signals reach envctl.
fn envctl_on_gpu2() -> PathBuf {
    static WRAPPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    WRAPPER
        .get_or_init(|| {
            let path = std::env::temp_dir().join(format!(
                "envctl-on-gpu2-{}.sh",
                std::process::id()
            ));
            let real = assert_cmd::cargo::cargo_bin("envctl");
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\nexec unshare --uts -- sh -c 'hostname gpu2 && exec \"$0\" \"$@\"' '{}' \"$@\"\n",
                    real.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            path
        })
        .clone()
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

/// The cluster, the second daemon and the test image on it, or `None` (skipped).
fn ready() -> Option<(Cluster, String)> {
    if !docker::require_daemon() {
        return None;
    }
    let cluster = slurm::cluster()?;
    if !slurm::gpu_daemon() {
        return None;
    }
    Some((cluster, slurm::gpu_daemon_image()))
}

/// The value of `label` on container `name` of the second daemon.
fn label_of(name: &str, label: &str) -> String {
    gpu_docker(&[
        "inspect",
        "--format",
        &format!("{{{{index .Config.Labels \"{label}\"}}}}"),
        name,
    ])
    .trim()
    .to_string()
}

/// A job's output file once it has ended.
fn output_of(folder: &Path, name: &str) -> String {
    std::fs::read_to_string(folder.join(name)).unwrap_or_default()
}

#[test]
fn two_concurrent_gpu_jobs_get_disjoint_gpus_in_their_containers() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(&image, &[("twojobs", "gpus = \"all\"\n")]);
    let script = setup.script(
        "job.sh",
        "run twojobs --force --stop-timeout 5 -- sh -c 'tr \"\\0\" \"\\n\" </proc/1/environ | grep NVIDIA_VISIBLE_DEVICES; sleep 6'",
    );
    let first = cluster.sbatch(
        &["-w", "n1", "--gres=gpu:2", "-o", "first.out"],
        &script,
        setup.environment(GPU_DAEMON),
    );
    let second = cluster.sbatch(
        &["-w", "n1", "--gres=gpu:2", "-o", "second.out"],
        &script,
        setup.environment(GPU_DAEMON),
    );
    // Both containers run at one moment: the jobs are concurrent, not queued.
    let both = wait_until(Duration::from_secs(60), || {
        !containers_labelled(&format!("envctl.slurm-job={}", first.id)).is_empty()
            && !containers_labelled(&format!("envctl.slurm-job={}", second.id)).is_empty()
    });
    assert!(
        both.is_some(),
        "the two jobs' containers never ran together: {}\n{}",
        output_of(setup.path(), "first.out"),
        output_of(setup.path(), "second.out")
    );
    let mut seen = Vec::new();
    for (job, output) in [(&first, "first.out"), (&second, "second.out")] {
        cluster.wait_state(&job.id, &["COMPLETED", "FAILED"], Duration::from_secs(60));
        let text = output_of(setup.path(), output);
        let ids: Vec<u32> = text
            .lines()
            .find_map(|line| line.strip_prefix("job-gpus="))
            .unwrap_or_else(|| panic!("no job-gpus line: {text}"))
            .split(',')
            .map(|id| id.parse().unwrap())
            .collect();
        let visible: Vec<String> = text
            .lines()
            .find_map(|line| line.strip_prefix("NVIDIA_VISIBLE_DEVICES="))
            .unwrap_or_else(|| {
                panic!("the container's PID 1 has no NVIDIA_VISIBLE_DEVICES: {text}")
            })
            .split(',')
            .map(str::to_string)
            .collect();
        let wanted: Vec<String> = ids
            .iter()
            .map(|id| setup.uuid_of_slurm_gpu(*id).to_string())
            .collect();
        let mut sorted = visible.clone();
        sorted.sort();
        let mut wanted_sorted = wanted.clone();
        wanted_sorted.sort();
        assert_eq!(
            sorted, wanted_sorted,
            "job {} was allocated GPUs {ids:?}; its container got {visible:?}:\n{text}",
            job.id
        );
        seen.extend(visible);
        assert!(
            containers_labelled(&format!("envctl.slurm-job={}", job.id)).is_empty(),
            "job {}'s container outlived the command",
            job.id
        );
    }
    let mut distinct = seen.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "the jobs shared GPUs: {seen:?}");
}

/// Submits or starts `run PROFILE -- sleep 1000` in a job, waits for its container, cancels
/// the job, and gives the container's name and how long it outlived `scancel`.
fn cancelled_while_running(
    cluster: &Cluster,
    setup: &Setup,
    profile: &str,
    under_srun: bool,
) -> (String, Duration) {
    let arguments = format!("run {profile} --force --stop-timeout 5 -- sleep 1000");
    let (job, mut srun) = if under_srun {
        let child = cluster.srun(
            &["-w", "n1", "--gres=gpu:2"],
            &[
                &envctl_on_gpu2().to_string_lossy(),
                "run",
                profile,
                "--force",
                "--stop-timeout",
                "5",
                "--",
                "sleep",
                "1000",
            ],
            setup.environment(GPU_DAEMON),
        );
        (None, Some(child))
    } else {
        let script = setup.script("cancel.sh", &arguments);
        let job = cluster.sbatch(
            &["-w", "n1", "--gres=gpu:2", "-o", "cancel.out"],
            &script,
            setup.environment(GPU_DAEMON),
        );
        (Some(job), None)
    };
    let mut name = String::new();
    let running = wait_until(Duration::from_secs(60), || {
        name = containers_labelled(&format!("envctl.profile={profile}"))
            .into_iter()
            .next()
            .unwrap_or_default();
        !name.is_empty()
            && gpu_docker(&["inspect", "--format", "{{.State.Running}}", &name]).trim() == "true"
    });
    assert!(
        running.is_some(),
        "the job's container never ran: {}",
        output_of(setup.path(), "cancel.out")
    );
    let id = label_of(&name, "envctl.slurm-job");
    if let Some(job) = &job {
        assert_eq!(id, job.id, "the container names its job");
    }
    assert!(
        !label_of(&name, "envctl.slurm-step").is_empty(),
        "no step label on {name}"
    );
    let cancelled = Instant::now();
    cluster.scancel(&id);
    let gone = wait_until(KILL_WAIT + Duration::from_secs(10), || {
        containers_labelled(&format!("envctl.profile={profile}")).is_empty()
    });
    let outlived = gone.unwrap_or_else(|| cancelled.elapsed());
    if let Some(child) = srun.as_mut() {
        crate::support::signal::wait_within(child, KILL_WAIT + Duration::from_secs(10))
            .expect("srun did not end after scancel");
    }
    cluster.wait_state(&id, &["CANCELLED"], Duration::from_secs(30));
    (name, outlived)
}

#[test]
fn scancel_during_run_under_sbatch_leaves_no_container_within_killwait() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(&image, &[("cancelbatch", "gpus = 2\n")]);
    let (name, outlived) = cancelled_while_running(&cluster, &setup, "cancelbatch", false);
    eprintln!("sbatch: {name} was gone {outlived:?} after scancel");
    assert!(
        outlived < KILL_WAIT,
        "{name} was still there {outlived:?} after scancel (KillWait {KILL_WAIT:?}): {}",
        output_of(setup.path(), "cancel.out")
    );
}

#[test]
fn scancel_during_run_under_srun_leaves_no_container_within_killwait() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(&image, &[("cancelstep", "gpus = 2\n")]);
    let (name, outlived) = cancelled_while_running(&cluster, &setup, "cancelstep", true);
    eprintln!("srun: {name} was gone {outlived:?} after scancel");
    assert!(
        outlived < KILL_WAIT,
        "{name} was still there {outlived:?} after scancel (KillWait {KILL_WAIT:?})"
    );
}

#[test]
fn gpus_above_the_allocation_fail_naming_both_and_make_nothing() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(&image, &[("greedy", "gpus = 2\n")]);
    let child = cluster.srun(
        &["-w", "n1", "--gres=gpu:1"],
        &[
            &envctl_on_gpu2().to_string_lossy(),
            "run",
            "greedy",
            "--force",
            "--",
            "true",
        ],
        setup.environment(GPU_DAEMON),
    );
    let run = Run::of(child.wait_with_output().unwrap());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("asks for 2 GPU(s)")
            && run.stderr.contains("allocated 1")
            && run.stderr.contains("SLURM_STEP_GPUS="),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: ask Slurm for them"),
        "{}",
        run.stderr
    );
    assert!(containers_labelled("envctl.profile=greedy").is_empty());
}

#[test]
fn the_time_limit_leaves_no_container() {
    let Some((cluster, _)) = ready() else {
        return;
    };
    // Without GPUs, on the main daemon and node n2: Slurm's time limit is whole minutes.
    let image = docker::test_image();
    let setup = Setup::new(&image, &[("timelimit", "")]);
    let script = setup.script("limit.sh", "run timelimit --stop-timeout 5 -- sleep 1000");
    let job = cluster.sbatch(
        &["-w", "n2", "--time=1", "-o", "limit.out"],
        &script,
        setup.environment(""),
    );
    let listed = |label: &str| {
        docker::docker_stdout([
            "ps",
            "-a",
            "--filter",
            &format!("label={label}"),
            "--format",
            "{{.Names}}",
        ])
    };
    let label = format!("envctl.slurm-job={}", job.id);
    assert!(
        wait_until(Duration::from_secs(60), || !listed(&label)
            .trim()
            .is_empty())
        .is_some(),
        "the job's container never ran: {}",
        output_of(setup.path(), "limit.out")
    );
    cluster.wait_state(&job.id, &["TIMEOUT"], Duration::from_secs(180));
    let ended = Instant::now();
    let gone = wait_until(KILL_WAIT + Duration::from_secs(10), || {
        listed(&label).trim().is_empty()
    });
    assert!(
        gone.is_some_and(|took| took < KILL_WAIT),
        "the container outlived the time limit by {:?}: {}",
        ended.elapsed(),
        output_of(setup.path(), "limit.out")
    );
}

#[test]
fn an_epilog_sweep_removes_what_a_killed_run_left() {
    if !docker::require_daemon() {
        return;
    }
    let image = docker::test_image();
    let setup = Setup::new(&image, &[("swept", "")]);
    let job = format!("{}", 900_000 + nanos() % 99_999);
    let mut command = Command::new(envctl_on_gpu2());
    setup.environment("")(&mut command);
    let mut child = command
        .env("SLURM_JOB_ID", &job)
        .args(["run", "swept", "--", "sleep", "1000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let label = format!("envctl.slurm-job={job}");
    let listed = || {
        docker::docker_stdout([
            "ps",
            "-a",
            "--filter",
            &format!("label={label}"),
            "--format",
            "{{.Names}}",
        ])
    };
    assert!(wait_until(Duration::from_secs(30), || !listed().trim().is_empty()).is_some());
    // SIGKILL: envctl cannot remove anything; the container runs on outside the job.
    child.kill().unwrap();
    child.wait().unwrap();
    let left = listed();
    assert!(!left.trim().is_empty(), "nothing was left to sweep");
    let _guard = docker::ContainerGuard::new(left.trim().to_string());
    let mut sweep = Command::new(envctl_on_gpu2());
    setup.environment("")(&mut sweep);
    let run = Envctl::from_command(sweep)
        .args(["down", "--rm", "--slurm-job", &job])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("stopped and removed"), "{}", run.stderr);
    assert!(listed().trim().is_empty(), "the sweep left {}", listed());
    // Nothing carries the label any more: said, exit 0 (an Epilog runs after every job).
    let mut again = Command::new(envctl_on_gpu2());
    setup.environment("")(&mut again);
    let run = Envctl::from_command(again)
        .args(["down", "--rm", "--slurm-job", &job])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("nothing to stop"), "{}", run.stderr);
}

/// A stand-in `torch` that counts the GPUs CUDA_VISIBLE_DEVICES shows, as CUDA does.
fn fake_torch(folder: &Path) -> PathBuf {
    let package = folder.join("python").join("torch");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("__init__.py"),
        "import os\n__version__ = '2.8.0+cu128'\n\
         class version:\n    cuda = '12.8'\n    hip = None\n    debug = False\n\
         class cuda:\n    @staticmethod\n    def is_available():\n        return True\n\
         \x20   @staticmethod\n    def device_count():\n        shown = os.environ.get('CUDA_VISIBLE_DEVICES', '')\n        return len([gpu for gpu in shown.split(',') if gpu])\n",
    )
    .unwrap();
    folder.join("python")
}

fn slurm_finding(run: &Run) -> Value {
    let report = run.json();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "slurm.gpus")
        .cloned()
        .unwrap_or_else(|| panic!("no slurm.gpus finding: {}", run.stdout))
}

#[test]
fn nvidia_check_here_in_a_job_wants_exactly_the_allocated_gpus() {
    let Some((cluster, _)) = ready() else {
        return;
    };
    let setup = Setup::new("unused", &[]);
    let python = fake_torch(setup.path());
    let check = |shell: &str| {
        let child = cluster.srun(
            &["-w", "n1", "--gres=gpu:2"],
            &["sh", "-c", shell],
            |command: &mut Command| {
                setup.environment("")(command);
                command
                    .env("PYTHONPATH", &python)
                    .env("ENVCTL", envctl_on_gpu2());
            },
        );
        Run::of(child.wait_with_output().unwrap())
    };
    let run = check("exec \"$ENVCTL\" nvidia-check --json --quick --timeout 60");
    let finding = slurm_finding(&run);
    assert_eq!(finding["status"], "pass", "{finding}\n{}", run.stderr);
    assert_eq!(run.json()["ran"], "here");
    assert!(run.json()["container"].is_null());
    // More GPUs than the job's (set by hand): the check fails, exit 1.
    let run = check(
        "CUDA_VISIBLE_DEVICES=0,1,2 exec \"$ENVCTL\" nvidia-check --json --quick --timeout 60",
    );
    let finding = slurm_finding(&run);
    assert_eq!(finding["status"], "fail", "{finding}");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("torch sees 3 GPU(s)"),
        "{finding}"
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
}

/// A hook in the test cluster's Epilog (`.ci/slurm.sh`: `…/epilog.d/*.sh`) that sweeps the
/// containers of the jobs listed in `jobs`, as a site's Epilog runs
/// `envctl down --rm --slurm-job "$SLURM_JOB_ID"`. Removed on drop.
struct EpilogHook {
    path: PathBuf,
}

impl EpilogHook {
    fn new(cluster: &Cluster, setup: &Setup, jobs: &Path) -> EpilogHook {
        let folder = cluster
            .conf
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .join("epilog.d");
        let path = folder.join(format!(
            "envctl-test-{:08x}.sh",
            std::process::id() ^ nanos()
        ));
        std::fs::write(
            &path,
            format!(
                "grep -qx \"$SLURM_JOB_ID\" '{jobs}' || exit 0\n\
                 HOME='{home}' XDG_CONFIG_HOME='{home}' ENVCTL_POLICY='{home}/no-policy.toml' DOCKER_HOST='{GPU_DAEMON}' \
                 '{envctl}' down --rm --slurm-job \"$SLURM_JOB_ID\" --timeout 5\n",
                jobs = jobs.display(),
                home = setup.path().display(),
                envctl = envctl_on_gpu2().display(),
            ),
        )
        .unwrap();
        EpilogHook { path }
    }
}

impl Drop for EpilogHook {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[test]
fn an_sbatch_script_that_does_not_exec_run_leaves_nothing_with_the_epilog_sweep() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(&image, &[("epilog", "gpus = 1\n")]);
    let jobs = setup.path().join("jobs");
    std::fs::write(&jobs, "").unwrap();
    let _hook = EpilogHook::new(&cluster, &setup, &jobs);
    // `envctl run` is a child of the batch shell: scancel's SIGTERM ends the shell, and
    // Slurm SIGKILLs envctl with the step before it can remove anything.
    let script = setup.path().join("plain.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n'{}' run epilog --force --stop-timeout 5 -- sleep 1000\necho \"run ended: $?\"\n",
            envctl_on_gpu2().display()
        ),
    )
    .unwrap();
    let job = cluster.sbatch(
        &["-w", "n1", "--gres=gpu:1", "-o", "plain.out"],
        &script,
        setup.environment(GPU_DAEMON),
    );
    std::fs::write(&jobs, format!("{}\n", job.id)).unwrap();
    let label = format!("envctl.slurm-job={}", job.id);
    assert!(
        wait_until(Duration::from_secs(60), || !containers_labelled(&label)
            .is_empty())
        .is_some(),
        "the job's container never ran: {}",
        output_of(setup.path(), "plain.out")
    );
    let cancelled = Instant::now();
    cluster.scancel(&job.id);
    let gone = wait_until(KILL_WAIT + Duration::from_secs(10), || {
        containers_labelled(&label).is_empty()
    });
    eprintln!("sbatch without exec, with the Epilog sweep: gone {gone:?} after scancel");
    assert!(
        gone.is_some_and(|took| took < KILL_WAIT),
        "the container outlived the job by {:?} with the Epilog sweep: {}",
        cancelled.elapsed(),
        output_of(setup.path(), "plain.out")
    );
}

#[test]
fn doctor_inside_a_job_names_the_job_its_gpus_and_the_cgroup() {
    let Some((cluster, _)) = ready() else {
        return;
    };
    let setup = Setup::new("unused", &[]);
    let child = cluster.srun(
        &["-w", "n1", "--gres=gpu:2"],
        &[&envctl_on_gpu2().to_string_lossy(), "doctor", "--json"],
        setup.environment(GPU_DAEMON),
    );
    let run = Run::of(child.wait_with_output().unwrap());
    let report = run.json();
    let findings = report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let find = |id: &str| {
        findings
            .iter()
            .find(|finding| finding["id"] == id)
            .unwrap_or_else(|| panic!("no {id} finding: {}", run.stdout))
    };
    let job = find("slurm.job");
    assert_eq!(job["status"], "info", "{job}");
    let ids: Vec<u64> = job["facts"]["allocation"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_u64().unwrap())
        .collect();
    let uuids: Vec<&str> = job["facts"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| gpu["uuid"].as_str().unwrap())
        .collect();
    let wanted: Vec<&str> = ids
        .iter()
        .map(|id| setup.uuid_of_slurm_gpu(*id as u32))
        .collect();
    assert_eq!(uuids, wanted, "{job}");
    assert_eq!(job["facts"]["allocation"]["source"], "step");
    let cgroup = find("slurm.cgroup");
    assert_eq!(cgroup["status"], "warn");
    assert!(
        cgroup["hint"]
            .as_str()
            .unwrap()
            .contains("envctl down --rm --slurm-job"),
        "{cgroup}"
    );
}

#[test]
fn up_in_a_job_takes_the_jobs_gpus_memory_and_cpus_and_refuses_more() {
    let Some((cluster, image)) = ready() else {
        return;
    };
    let setup = Setup::new(
        &image,
        &[
            ("fits", "gpus = \"all\"\n"),
            ("toobig", "gpus = 1\nmemory = \"1g\"\n"),
            ("toomanycpus", "cpus = 3.0\n"),
        ],
    );
    // A batch script: a bare `srun` step is not told the job's memory (no
    // SLURM_MEM_PER_NODE); a batch script and the steps inside it are.
    let up = |profile: &str| {
        let script = setup.path().join(format!("{profile}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n'{}' up {profile} --dry-run --json --force >{profile}.json 2>{profile}.err\necho $? >{profile}.code\n",
                envctl_on_gpu2().display()
            ),
        )
        .unwrap();
        let job = cluster.sbatch(
            &[
                "-w",
                "n1",
                "--gres=gpu:2",
                "--mem=500",
                "--cpus-per-task=2",
                "-o",
                "/dev/null",
            ],
            &script,
            setup.environment(GPU_DAEMON),
        );
        cluster.wait_state(&job.id, &["COMPLETED", "FAILED"], Duration::from_secs(60));
        Run {
            code: output_of(setup.path(), &format!("{profile}.code"))
                .trim()
                .parse()
                .unwrap_or(-1),
            stdout: output_of(setup.path(), &format!("{profile}.json")),
            stderr: output_of(setup.path(), &format!("{profile}.err")),
        }
    };
    let run = up("fits");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body = &run.json()["body"];
    assert_eq!(body["HostConfig"]["Memory"], 500 << 20, "{body}");
    assert_eq!(body["HostConfig"]["NanoCpus"], 2_000_000_000_i64, "{body}");
    let job = body["Labels"]["envctl.slurm-job"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!job.is_empty());
    assert_eq!(body["Labels"]["envctl.slurm-step"], "batch");
    // The job's own container: never one a finished job left, pinned to its GPUs.
    assert_eq!(run.json()["name"], format!("envctl-fits-job{job}"));
    let pinned: Vec<&str> = body["HostConfig"]["DeviceRequests"][0]["DeviceIDs"]
        .as_array()
        .unwrap_or_else(|| panic!("not pinned: {body}"))
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(pinned.len(), 2, "`all` is the job's two GPUs: {body}");
    for uuid in &pinned {
        assert!(setup.uuids.iter().any(|known| known == uuid), "{uuid}");
    }
    let run = up("toobig");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("asks for 1024M of memory") && run.stderr.contains("allocated 500M"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--mem=1024M"), "{}", run.stderr);
    let run = up("toomanycpus");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("asks for 3 CPUs") && run.stderr.contains("SLURM_CPUS_PER_TASK=2"),
        "{}",
        run.stderr
    );
}

#[test]
fn slurm_indices_are_positions_in_the_nodes_gres_file_list() {
    let Some((cluster, _)) = ready() else {
        return;
    };
    // Eight stand-in GPUs whose minor numbers are their indices: n2's gres.conf lists
    // /dev/nvidia[4-7], and Slurm calls them 0-3.
    let folder = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(nvml::fixture("healthy-8x-h100.conf")).unwrap();
    let mut text: String = base
        .lines()
        .filter(|line| !line.contains(".uuid="))
        .map(|line| format!("{line}\n"))
        .collect();
    let prefix = format!("{:08x}", std::process::id() ^ nanos());
    let uuids: Vec<String> = (0..8)
        .map(|index| format!("GPU-{prefix}-77a8-4b8e-9a57-0c3f1e2d4a0{index}"))
        .collect();
    for (index, uuid) in uuids.iter().enumerate() {
        text.push_str(&format!(
            "gpu.{index}.uuid={uuid}\ngpu.{index}.minor_number={index}\n"
        ));
    }
    let fixture = folder.path().join("gpus.conf");
    std::fs::write(&fixture, text).unwrap();
    let child = cluster.srun(
        &["-w", "n2", "--gres=gpu:2"],
        &[&envctl_on_gpu2().to_string_lossy(), "doctor", "--json"],
        |command: &mut Command| {
            hermetic(command, folder.path());
            command
                .env("ENVCTL_NVML_LIBRARY", nvml::stub_library())
                .env("ENVCTL_NVML_STUB_FIXTURE", &fixture)
                .env("DOCKER_HOST", GPU_DAEMON);
        },
    );
    let run = Run::of(child.wait_with_output().unwrap());
    let report = run.json();
    let job = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["id"] == "slurm.job")
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .clone();
    let ids: Vec<u64> = job["facts"]["allocation"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_u64().unwrap())
        .collect();
    assert!(
        ids.iter().all(|id| *id < 4),
        "Slurm's indices are positions: {job}"
    );
    let gpus = job["facts"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{job}"));
    for (gpu, id) in gpus.iter().zip(&ids) {
        assert_eq!(gpu["matched_by"], "gres_file", "{job}");
        assert_eq!(gpu["index"], id + 4, "{job}");
        assert_eq!(gpu["uuid"], uuids[*id as usize + 4], "{job}");
    }
}
