//! The real Docker daemon in tests, driven through the `docker` CLI.
//!
//! envctl itself talks to the Engine API; the tests use the CLI to set up and inspect
//! what envctl should see.
//!
//! # Skip or fail when there is no daemon
//!
//! Start every test that needs Docker with
//!
//! ```ignore
//! if !support::docker::require_daemon() {
//!     return;
//! }
//! ```
//!
//! [`require_daemon`] runs `docker version` once per test process (10 s timeout). When the
//! daemon does not answer:
//!
//! - with `ENVCTL_REQUIRE_DOCKER=1` in the environment (CI sets it), the test **panics**
//!   with what failed, the stderr of `docker`, and how to start a daemon;
//! - otherwise it writes `SKIPPED (no Docker daemon): <test name>` to the real stderr (not
//!   the captured one, so it shows even for passing tests), records it in the skip log
//!   ([`skip_log`]: `bash .ci/skipped ARGS…` runs `cargo test ARGS…` and closes with
//!   `N skipped: …`) and
//!   returns `false`.
//!
//! `DOCKER_HOST` is honoured, as the `docker` CLI honours it. The registry helpers push to
//! `127.0.0.1:<port>`, so the daemon must share the test's network namespace.
//!
//! # Images and containers
//!
//! [`test_image`] returns `envctl-test/busybox:<hash>`, a tiny image imported from a root
//! filesystem holding Debian's static busybox (`apt-get install busybox-static`) with its
//! applets (`sh`, `sleep`, `cat`, `echo`, `env`, `id`, …) as symlinks, `CMD ["sh"]` and the
//! label `envctl.test=1`. It is built only when missing (its tag is a hash of its content;
//! concurrent test processes serialise the build with `flock(1)` on
//! `$TMPDIR/envctl-test-image.lock`), so it is shared by parallel tests and later test
//! processes. Do not remove it from a test.
//!
//! Containers made from it inherit the label `envctl.test=1`; add `--label envctl.test=1`
//! to anything else a test creates, so `.ci/run` can sweep leftovers. Hold a
//! [`ContainerGuard`] / [`ImageGuard`] for everything a test creates: the drop removes it
//! even when the test panics. Name things with [`unique_name`].

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The label every test container and image carries (`key=value`).
pub const TEST_LABEL: &str = "envctl.test=1";
/// Set to `1` to turn a missing daemon (or registry binary) into a test failure.
pub const REQUIRE_DOCKER_ENV: &str = "ENVCTL_REQUIRE_DOCKER";
/// Where each skip is recorded, one line each (`CARGO_PID<TAB>REASON<TAB>TEST`); default
/// `target/tmp/skipped-tests.log`. `bash .ci/skipped ARGS…` empties it, runs `cargo test
/// ARGS…` and closes with `N skipped: …`; under `ENVCTL_REQUIRE_DOCKER=1` (`.ci/run`) a
/// skip fails the run.
pub const SKIP_LOG_ENV: &str = "ENVCTL_SKIP_LOG";
/// Overrides the busybox binary the test image is built from.
pub const BUSYBOX_ENV: &str = "ENVCTL_TEST_BUSYBOX";
/// Repository of the test image; the tag is a hash of its content.
pub const TEST_IMAGE_REPO: &str = "envctl-test/busybox";
/// How long `docker version` may take before the daemon counts as absent.
pub const DAEMON_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound for any other `docker` command (import, push, pull, run…).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// Bump when the way the image is built changes, so machines rebuild it.
const RECIPE: &str = "envctl-test-image v1: busybox + applet symlinks + passwd/group + /tmp; \
                      CMD [\"sh\"]; LABEL envctl.test=1; ENV PATH";
const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// True when `ENVCTL_REQUIRE_DOCKER=1` (or `true`): missing Docker is a failure, not a skip.
pub fn docker_required() -> bool {
    matches!(
        std::env::var(REQUIRE_DOCKER_ENV).as_deref().map(str::trim),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

/// The name of the running test, as libtest names its thread (`module::test_fn`).
pub fn current_test_name() -> String {
    match thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => "<unknown test: run with more than one test thread to see its name>".to_owned(),
    }
}

/// Skip (print and return `false`) or, when Docker is required, panic.
///
/// `reason` is the short form used in the `SKIPPED (<reason>): <test>` line; `details`
/// says what failed and how to fix it.
pub fn skip_or_panic(reason: &str, test: &str, details: &str) -> bool {
    let bar = "=".repeat(78);
    if docker_required() {
        panic!(
            "\n{bar}\n{REQUIRE_DOCKER_ENV}=1 and {reason} — test `{test}` cannot run.\n\n\
             {details}\n\n(Unset {REQUIRE_DOCKER_ENV} to skip Docker tests instead.)\n{bar}\n"
        );
    }
    let first = details.lines().next().unwrap_or_default();
    record_skip(reason, test);
    // Straight to the process's stderr: libtest captures `eprintln!` of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED ({reason}): {test}\n***   {first}\n***   (set {REQUIRE_DOCKER_ENV}=1 to make this a failure)"
    );
    false
}

/// The skip log: `$ENVCTL_SKIP_LOG`, else `skipped-tests.log` in cargo's folder for
/// integration-test files.
pub fn skip_log() -> PathBuf {
    match std::env::var_os(SKIP_LOG_ENV) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.log"),
    }
}

/// Appends `test`'s skip to the skip log, with the id of the `cargo test` that ran it (this
/// process's parent). A skip that cannot be recorded says so on stderr: it is still
/// printed there.
fn record_skip(reason: &str, test: &str) {
    let run = std::os::unix::process::parent_id();
    let line = format!("{run}\t{reason}\t{test}\n");
    let written = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(skip_log())
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(error) = written {
        let _ = writeln!(
            std::io::stderr(),
            "*** the skip of {test} could not be recorded in {}: {error}",
            skip_log().display()
        );
    }
}

static DAEMON: OnceLock<Result<String, String>> = OnceLock::new();

/// The daemon's version (`Ok`) or why it does not answer (`Err`), probed once per process.
pub fn daemon_status() -> &'static Result<String, String> {
    DAEMON.get_or_init(probe_daemon)
}

fn probe_daemon() -> Result<String, String> {
    let mut cmd = Command::new("docker");
    cmd.args(["version", "--format", "{{.Server.Version}}"]);
    let out = run_with_timeout(&mut cmd, DAEMON_TIMEOUT)?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if out.status.success() && !stdout.is_empty() {
        Ok(stdout)
    } else {
        let first = stderr.lines().next().unwrap_or("<no stderr>");
        let mut why = format!("`docker version` failed ({}): {first}", out.status);
        if stderr.lines().nth(1).is_some() {
            why.push_str("\nstderr of docker:\n");
            why.push_str(&stderr);
        }
        Err(why)
    }
}

/// Is the daemon there? `true`: go on. `false`: the test should return now (skipped).
/// Panics instead of returning `false` when `ENVCTL_REQUIRE_DOCKER=1`.
pub fn require_daemon() -> bool {
    require_daemon_for(&current_test_name())
}

/// [`require_daemon`] with an explicit test name for the skip/panic message.
pub fn require_daemon_for(test: &str) -> bool {
    match daemon_status() {
        Ok(_) => true,
        Err(why) => {
            let host = std::env::var("DOCKER_HOST")
                .map(|h| format!("DOCKER_HOST={h}"))
                .unwrap_or_else(|_| {
                    "DOCKER_HOST unset (default unix:///var/run/docker.sock)".into()
                });
            let details = format!(
                "The Docker daemon does not answer: {why}\n\
                 Daemon address: {host}\n\
                 Fix: start the daemon — `sudo systemctl start docker`, or \
                 `sudo dockerd >/tmp/dockerd.log 2>&1 &` — or point DOCKER_HOST at a live one;\n\
                 without a `docker` CLI: `sudo apt-get install docker.io`;\n\
                 without permission on the socket: add your user to the `docker` group."
            );
            skip_or_panic("no Docker daemon", test, &details)
        }
    }
}

/// Runs `cmd` with stdin closed and output captured, killing it after `timeout`.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    let desc = describe(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{desc}`: {e}"))?;
    let stdout = child.stdout.take().map(read_in_background);
    let stderr = child.stderr.take().map(read_in_background);
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{desc}` did not finish within {} s and was killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => {
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(format!("waiting for `{desc}`: {e}")),
        }
    };
    let join = |h: Option<thread::JoinHandle<Vec<u8>>>| {
        h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: join(stdout),
        stderr: join(stderr),
    })
}

fn read_in_background<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

pub fn docker_command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new("docker");
    cmd.args(args);
    cmd
}

/// Runs `docker ARGS…` (timeout [`COMMAND_TIMEOUT`]) and returns its output whatever the
/// exit status. Panics only when `docker` cannot be run or times out.
pub fn docker_output<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = docker_command(args);
    run_with_timeout(&mut cmd, COMMAND_TIMEOUT).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `docker ARGS…`, panics (with its stderr) unless it succeeds, returns stdout with
/// trailing whitespace trimmed.
pub fn docker_stdout<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = docker_command(args);
    let desc = describe(&cmd);
    let out = run_with_timeout(&mut cmd, COMMAND_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    if !out.status.success() {
        panic!(
            "`{desc}` failed ({})\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

/// Does `docker ARGS…` exit 0? (Never panics on a non-zero exit.)
pub fn docker_succeeds<I, S>(args: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = docker_command(args);
    run_with_timeout(&mut cmd, COMMAND_TIMEOUT).is_ok_and(|o| o.status.success())
}

/// Is there a local image (or tag) called `reference`?
pub fn image_exists(reference: &str) -> bool {
    docker_succeeds(["image", "inspect", "--format", "{{.Id}}", reference])
}

/// Does a container with this name or id exist (running or not)?
pub fn container_exists(name: &str) -> bool {
    docker_succeeds(["container", "inspect", "--format", "{{.Id}}", name])
}

/// The image id (`sha256:…`) of a local image reference, if it exists.
pub fn image_id(reference: &str) -> Option<String> {
    let out = docker_output(["image", "inspect", "--format", "{{.Id}}", reference]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A name no other test, thread or test process uses at the same time:
/// `<prefix>-<pid>-<counter>-<nanoseconds, hex>`. With a lowercase `[a-z0-9-]` prefix it
/// is valid both as a container name and as an image repository component.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{prefix}-{}-{n}-{nanos:x}", std::process::id())
}

/// Removes a container (`docker rm -f -v`) when dropped, even if the test panics.
#[derive(Debug)]
pub struct ContainerGuard {
    name: String,
}

impl ContainerGuard {
    /// Guards the container with this name or id (it need not exist yet).
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }

    /// Guards a fresh [`unique_name`] built from `prefix`; create the container with
    /// `--name guard.name()`.
    pub fn unique(prefix: &str) -> Self {
        Self::new(unique_name(prefix))
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        let mut cmd = docker_command(["rm", "-f", "-v", self.name.as_str()]);
        let _ = run_with_timeout(&mut cmd, Duration::from_secs(60));
    }
}

/// Removes an image reference (`docker rmi -f`) when dropped, even if the test panics.
///
/// Given a `repo:tag` of an image that has other tags, only that tag goes. Never guard
/// [`test_image`] itself: the guard refuses to remove it.
#[derive(Debug)]
pub struct ImageGuard {
    reference: String,
}

impl ImageGuard {
    pub fn new(reference: impl Into<String>) -> Self {
        Self {
            reference: reference.into(),
        }
    }

    /// Guards the image `reference` names now, by its id: when a later build, pull or
    /// `lock --update` moves the tag to other bytes, the image it named keeps only a
    /// digest (`repo <none>`) and a guard by name would leave it behind. None when no
    /// local image has that name.
    pub fn by_id_of(reference: &str) -> Option<Self> {
        image_id(reference).map(Self::new)
    }

    pub fn reference(&self) -> &str {
        &self.reference
    }
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        if TEST_IMAGE.get().is_some_and(|img| {
            *img == self.reference || image_id(img).is_some_and(|id| id == self.reference)
        }) {
            return;
        }
        let mut cmd = docker_command(["rmi", "-f", self.reference.as_str()]);
        let _ = run_with_timeout(&mut cmd, Duration::from_secs(60));
    }
}

static TEST_IMAGE: OnceLock<String> = OnceLock::new();

/// The tiny local test image (`envctl-test/busybox:<hash>`), built if missing.
///
/// Idempotent across threads (once per process) and across processes: the tag is a hash
/// of the busybox binary, its applet list and the build recipe; an existing image with that
/// tag is reused, and a concurrent build by another process is tolerated. Panics (with the
/// fix) when busybox is missing or not static; call [`require_daemon`] first.
pub fn test_image() -> String {
    TEST_IMAGE.get_or_init(ensure_test_image).clone()
}

/// The busybox binary the test image is built from: `$ENVCTL_TEST_BUSYBOX`, else
/// `/bin/busybox` or `/usr/bin/busybox` (Debian's `busybox-static`).
pub fn busybox_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(BUSYBOX_ENV) {
        return Some(PathBuf::from(p));
    }
    ["/bin/busybox", "/usr/bin/busybox", "/usr/local/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn ensure_test_image() -> String {
    let busybox = busybox_path().unwrap_or_else(|| {
        panic!(
            "the test image needs a static busybox, and none was found at /bin/busybox or \
             /usr/bin/busybox.\nFix: `sudo apt-get install busybox-static` (or set \
             {BUSYBOX_ENV}=/path/to/static/busybox)."
        )
    });
    let bytes = fs::read(&busybox)
        .unwrap_or_else(|e| panic!("cannot read busybox at {}: {e}", busybox.display()));
    check_static_elf(&busybox, &bytes);
    let applets = busybox_applets(&busybox);

    let mut hash = Fnv64::new();
    hash.write(RECIPE.as_bytes());
    hash.write(&bytes);
    for a in &applets {
        hash.write(a.as_bytes());
        hash.write(b"\n");
    }
    let reference = format!("{TEST_IMAGE_REPO}:{:016x}", hash.finish());
    if image_exists(&reference) {
        return reference;
    }
    // Another test process may be building the same image right now: take the build lock,
    // then look again.
    let _lock = BuildLock::acquire();
    if !image_exists(&reference) {
        build_test_image(&busybox, &applets, &reference);
    }
    reference
}

/// A machine-wide lock around building the test image, held by a `flock(1)` child
/// (util-linux, always present on Debian) for as long as this value lives. Closing its
/// stdin — on drop, or when this process dies — releases the lock. Without `flock`, or
/// after waiting [`COMMAND_TIMEOUT`], the build goes ahead unlocked: a concurrent build is
/// tolerated anyway, it only costs an extra import. [`BuildLock::acquire_at`] takes another
/// lock file (`support::engines` copies the image to each engine under one of its own).
pub struct BuildLock {
    child: Option<std::process::Child>,
}

/// The second daemon's GPU record (volume `envctl-gpus` of `.ci/dockerd2.sh`) is one
/// fact of that machine shared by tests: the Slurm tests' envctl keeps it from their
/// stand-in NVML while they run (shared holders of this lock), and a test that asserts
/// what a probe of the daemon's own fixture says takes it alone and removes the record.
pub fn dockerd2_record_lock() -> std::path::PathBuf {
    std::env::temp_dir().join("envctl-test-dockerd2-gpu-record.lock")
}

impl BuildLock {
    fn acquire() -> Self {
        Self::acquire_at(&std::env::temp_dir().join("envctl-test-image.lock"))
    }

    pub fn acquire_at(path: &Path) -> Self {
        Self::acquire_with(path, &[])
    }

    /// [`BuildLock::acquire_at`] shared (`flock -s`): held by many at once, never beside
    /// an exclusive holder.
    pub fn acquire_shared_at(path: &Path) -> Self {
        Self::acquire_with(path, &["-s"])
    }

    fn acquire_with(path: &Path, flags: &[&str]) -> Self {
        let mut cmd = Command::new("flock");
        cmd.args(flags)
            .arg(path)
            .args(["-c", "echo locked && exec cat >/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let Ok(mut child) = cmd.spawn() else {
            return Self { child: None };
        };
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(mut stdout) = child.stdout.take() {
            thread::spawn(move || {
                let mut buf = [0u8; 7];
                let locked = stdout.read_exact(&mut buf).is_ok() && &buf[..6] == b"locked";
                let _ = tx.send(locked);
            });
        }
        match rx.recv_timeout(COMMAND_TIMEOUT) {
            Ok(true) => Self { child: Some(child) },
            _ => {
                let _ = child.kill();
                drop(child.stdin.take());
                let _ = child.wait();
                Self { child: None }
            }
        }
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

fn build_test_image(busybox: &Path, applets: &[String], reference: &str) {
    let tmp = tempfile::Builder::new()
        .prefix("envctl-test-image-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"));
    let root = tmp.path().join("rootfs");
    let io = |what: &str, r: std::io::Result<()>| {
        r.unwrap_or_else(|e| panic!("building the test image rootfs: {what}: {e}"))
    };
    for dir in ["bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "tmp"] {
        io(dir, fs::create_dir_all(root.join(dir)));
    }
    let target = root.join("bin/busybox");
    io("copy busybox", fs::copy(busybox, &target).map(|_| ()));
    io(
        "chmod busybox",
        fs::set_permissions(&target, fs::Permissions::from_mode(0o755)),
    );
    io(
        "chmod /tmp",
        fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777)),
    );
    for applet in applets {
        // `--list-full` gives paths like `usr/bin/env`; skip top-level ones (`linuxrc`).
        if !applet.contains('/') || applet == "bin/busybox" {
            continue;
        }
        let link = root.join(applet);
        if let Some(parent) = link.parent() {
            io(applet, fs::create_dir_all(parent));
        }
        io(applet, std::os::unix::fs::symlink("/bin/busybox", &link));
    }
    io(
        "etc/passwd",
        fs::write(
            root.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
        ),
    );
    io(
        "etc/group",
        fs::write(root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n"),
    );

    let tarball = tmp.path().join("rootfs.tar");
    let mut tar = Command::new("tar");
    tar.args([
        "--sort=name",
        "--mtime=@0",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "-C",
    ])
    .arg(&root)
    .arg("-cf")
    .arg(&tarball)
    .arg(".");
    let out = run_with_timeout(&mut tar, Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e}"));
    if !out.status.success() {
        panic!(
            "tar of the test image rootfs failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let cmd_change = "CMD [\"sh\"]".to_owned();
    let label_change = format!("LABEL {TEST_LABEL}");
    let env_change = format!("ENV PATH={IMAGE_PATH}");
    let mut import = docker_command(["import", "--message", "envctl test image (busybox)"]);
    for change in [&cmd_change, &label_change, &env_change] {
        import.arg("--change").arg(change);
    }
    import.arg(&tarball).arg(reference);
    let desc = describe(&import);
    let out = run_with_timeout(&mut import, COMMAND_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    if !out.status.success() {
        // Another process may have imported the same tag at the same moment.
        if image_exists(reference) {
            return;
        }
        panic!(
            "`{desc}` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // If a concurrent build retagged `reference` after ours, ours is now dangling: drop it
    // (best effort; a container created from it in the meantime keeps it alive).
    let ours = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if let Some(current) = image_id(reference)
        && !ours.is_empty()
        && current != ours
    {
        let _ = docker_output(["rmi", ours.as_str()]);
    }
}

fn busybox_applets(busybox: &Path) -> Vec<String> {
    let mut cmd = Command::new(busybox);
    cmd.arg("--list-full");
    let out = run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap_or_else(|e| panic!("{e}"));
    if !out.status.success() {
        panic!(
            "`{} --list-full` failed ({}): {}",
            busybox.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut applets: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().trim_start_matches('/').to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    applets.sort();
    applets.dedup();
    applets
}

/// Panics unless `bytes` is an ELF executable without a program interpreter, i.e. static:
/// a dynamically linked busybox (Debian's `busybox` package) cannot run in the empty image.
fn check_static_elf(path: &Path, bytes: &[u8]) {
    let fix = "Fix: `sudo apt-get install busybox-static` (it replaces the dynamic `busybox` \
               package), or set ENVCTL_TEST_BUSYBOX to a static busybox.";
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        panic!("{} is not an ELF executable. {fix}", path.display());
    }
    let is64 = bytes[4] == 2;
    let le = bytes[5] == 1;
    let rd = |off: usize, len: usize| -> u64 {
        let mut v = 0u64;
        for i in 0..len {
            let b = u64::from(bytes.get(off + i).copied().unwrap_or_default());
            v |= if le {
                b << (8 * i)
            } else {
                b << (8 * (len - 1 - i))
            };
        }
        v
    };
    let (phoff, phentsize, phnum) = if is64 {
        (rd(0x20, 8), rd(0x36, 2), rd(0x38, 2))
    } else {
        (rd(0x1c, 4), rd(0x2a, 2), rd(0x2c, 2))
    };
    const PT_INTERP: u64 = 3;
    for i in 0..phnum {
        let Some(off) = usize::try_from(phoff + i * phentsize).ok() else {
            break;
        };
        if rd(off, 4) == PT_INTERP {
            panic!(
                "{} is dynamically linked; the test image needs a static busybox. {fix}",
                path.display()
            );
        }
    }
}

/// FNV-1a, 64 bit: stable across Rust versions (unlike `DefaultHasher`).
struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, data: &[u8]) {
        for &b in data {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
