//! The human output a newcomer reads, pinned word for word (issue 42): `doctor` and
//! `compat` verdicts, `ps` with containers and with none, `up --dry-run` and `up` start to
//! finish, `stats --once`, and the errors met in a first hour — each snapshot holds the
//! command, its exit code and both streams, so a changed word, hint or code is a diff to
//! review (`tests/it/snapshots/it__human_output__*.snap`).
//!
//! What differs between runs is redacted, and only that: the test's folder (`[DIR]`), the
//! token that keeps names unique (`XXXXXXXX`), the test image's tag, container ids, ports,
//! the daemon's version and free space, and the numbers of a live sample (as shapes). A
//! table whose cells are redacted is laid out again from its columns (each left-aligned,
//! two spaces apart), since a redacted cell changes the width of its column.
//!
//! `ps` runs as a uid of the test's own (with `setpriv`, as root, given the socket's
//! group), so the containers of other tests on the daemon are not in the output, and
//! keeps only its own rows besides, since a container nobody owns is everyone's.
//! Everything else runs as the test process's user.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::support::cli::{Envctl, Run, envctl_for_other_users, hermetic};
use crate::support::docker::{
    ContainerGuard, require_daemon, skip_or_panic, test_image, unique_name,
};
use crate::support::nvml::{fixture as nvml_fixture, stub_library};

/// No envctl run of these tests may take longer: a hang is a failure.
const LIMIT: Duration = Duration::from_secs(120);

/// What the daemon and the disk decide in `doctor`'s report (as `doctor.rs` filters them).
const DOCTOR_FILTERS: [(&str, &str); 7] = [
    // Who holds each GPU depends on the containers other tests have on the daemon now.
    (
        r"(?m)^  · GPU ([0-9]+): (?:free|held by .*?); ",
        "  · GPU $1: [FREE OR HELD]; ",
    ),
    (
        r"Docker \S+ at \S+ \(API [0-9.]+\)",
        "Docker [VERSION] at [ENDPOINT] (API [API])",
    ),
    (
        r"cgroup \S+ with the \S+ driver",
        "cgroup [VERSION] with the [DRIVER] driver",
    ),
    // Free space: its amount, and whether it is low enough to warn (and so the totals).
    (
        r"(?m)^  . (only )?[0-9.]+ GB free under the Docker root.*$",
        "  [DISK] free under the Docker root",
    ),
    (
        r"(?m)^      hint: free space with `docker system prune`.*\n",
        "",
    ),
    (r"(?m)^. Docker$", "[STATUS] Docker"),
    (
        r"(?m)^[0-9]+ passed, [0-9]+ warnings?, ",
        "[N] passed, [N] warnings, ",
    ),
];

/// The date of the bundled matrix, which each refresh of it moves.
const MATRIX_DATE: (&str, &str) = (r"dated [0-9]{4}-[0-9]{2}-[0-9]{2}", "dated [MATRIX DATE]");

// ---------------------------------------------------------------------------------------
// A project folder and its runs
// ---------------------------------------------------------------------------------------

/// A project folder with `./envctl/` profiles, its own home and configuration, and the
/// token that makes its profile names unique on the shared daemon.
struct Project {
    folder: tempfile::TempDir,
    token: String,
    /// Run envctl as this uid (given the docker socket's group) instead of this user.
    uid: Option<u32>,
    /// Variables added to every run.
    variables: Vec<(String, String)>,
    /// The test image, once a profile of this project named it (building it needs the
    /// daemon, which the tests of errors before any daemon do without).
    image: std::cell::OnceCell<String>,
}

impl Project {
    fn new() -> Project {
        let folder = tempfile::tempdir().unwrap();
        for sub in ["envctl", "home", "xdg"] {
            std::fs::create_dir_all(folder.path().join(sub)).unwrap();
        }
        Project {
            folder,
            token: token(),
            uid: None,
            variables: Vec::new(),
            image: std::cell::OnceCell::new(),
        }
    }

    /// A project whose envctl runs as a uid no other test uses: its `ps` shows its own
    /// containers, and those that name no owner.
    fn of_a_fresh_user() -> Project {
        let mut project = Project::new();
        project.uid = Some(fresh_uid());
        project
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// The local test image (built if missing; needs the daemon).
    fn image(&self) -> &str {
        self.image.get_or_init(test_image)
    }

    /// `NAME-TOKEN`: a profile name no other run of this test uses at the same time.
    fn name(&self, name: &str) -> String {
        format!("{name}-{}", self.token)
    }

    /// Writes `text` to `relative` in the folder.
    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Loads the stand-in NVML with this fixture of `tests/fixtures/nvml/` in every run.
    fn with_stand_in_nvml(mut self, fixture: &str) -> Project {
        self.variables.push((
            "ENVCTL_NVML_LIBRARY".into(),
            stub_library().display().to_string(),
        ));
        self.variables.push((
            "ENVCTL_NVML_STUB_FIXTURE".into(),
            nvml_fixture(fixture).display().to_string(),
        ));
        self
    }

    fn with(mut self, key: &str, value: &str) -> Project {
        self.variables.push((key.into(), value.into()));
        self
    }

    /// `envctl ARGUMENTS…` in the folder, stdin closed, bounded by [`LIMIT`].
    fn run(&self, arguments: &[&str]) -> Run {
        let (_copy, envctl) = match self.uid {
            None => (None, Envctl::in_folder(self.path())),
            Some(uid) => {
                let (copy, command) = self.as_other_user(uid);
                (Some(copy), Envctl::from_command(command))
            }
        };
        envctl
            .args(arguments)
            .envs(self.variables.iter().map(|(key, value)| (key, value)))
            .timeout(LIMIT)
            .run()
    }

    /// envctl (a copy others may run) as `uid` with the socket's group, in the folder,
    /// which is handed to that uid first.
    fn as_other_user(&self, uid: u32) -> (tempfile::TempDir, Command) {
        for path in walk(self.path()) {
            std::os::unix::fs::chown(&path, Some(uid), None).unwrap();
        }
        std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let (copy, binary) = envctl_for_other_users();
        let socket_group = std::fs::metadata("/var/run/docker.sock")
            .map(|metadata| metadata.gid())
            .unwrap();
        let mut command = Command::new("setpriv");
        hermetic(&mut command, self.path());
        command
            .args([
                &format!("--reuid={uid}"),
                &format!("--regid={socket_group}"),
                "--clear-groups",
                "--",
            ])
            .arg(binary)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin");
        (copy, command)
    }

    /// `ps ARGUMENTS…` at a moment when it lists only this project's containers: the
    /// unowned containers of other tests on the shared daemon (everyone's, so listed)
    /// come and go, and the hint of an empty table is said only without them.
    fn ps_alone(&self, arguments: &[&str]) -> Run {
        for _ in 0..120 {
            let run = self.run(arguments);
            if run.code != 0 || run.stdout == self.own_rows(&run.stdout) {
                return run;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("`envctl {arguments:?}` listed other tests' containers for a minute");
    }

    /// The run as a reviewer reads it: the command, its exit code and both streams, with
    /// the folder and the token redacted.
    fn transcript(&self, arguments: &[&str], run: &Run) -> String {
        let text = format!(
            "$ envctl {}\nexit code: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            arguments
                .iter()
                .map(|word| if word.contains(' ') {
                    format!("'{word}'")
                } else {
                    word.to_string()
                })
                .collect::<Vec<_>>()
                .join(" "),
            run.code,
            run.stdout,
            run.stderr
        );
        self.redact(&text)
    }

    /// `ps`'s header and the rows of this project's containers. A container with
    /// envctl's labels but no owner (made by docker from an export, as other tests on the
    /// shared daemon do) is every user's, so another test's may be listed meanwhile.
    fn own_rows(&self, stdout: &str) -> String {
        stdout
            .lines()
            .filter(|line| line.starts_with("NAME ") || line.contains(&self.token))
            .map(|line| format!("{line}\n"))
            .collect()
    }

    fn redact(&self, text: &str) -> String {
        // The folder as the process sees it and as a canonical path (`/tmp` may be a link).
        let canonical = self.path().canonicalize().unwrap();
        text.replace(&canonical.display().to_string(), "[DIR]")
            .replace(&self.path().display().to_string(), "[DIR]")
            .replace(&self.token, "XXXXXXXX")
            .replace(
                self.image.get().map_or("[TEST IMAGE]", String::as_str),
                "[TEST IMAGE]",
            )
    }
}

/// A copy of a [`Run`] (it derives no `Clone`), for one with a stream changed.
trait CloneRun {
    fn clone_run(&self) -> Run;
}

impl CloneRun for Run {
    fn clone_run(&self) -> Run {
        Run {
            code: self.code,
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
        }
    }
}

/// Eight hex digits no other test (thread or process) of this machine uses now: the tail
/// of [`unique_name`] hashed, so names keep one length.
fn token() -> String {
    let unique = unique_name("snapshot");
    let mut hash: u32 = 0x811c_9dc5;
    for byte in unique.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{hash:08x}")
}

/// A uid of this process's own (from its pid), that no password database names: a user
/// with no containers until the test makes some.
fn fresh_uid() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    1_000_000_000 + std::process::id() * 16 + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Whether this process may run envctl as another uid (it is root).
fn can_switch_users() -> bool {
    let root = std::fs::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0);
    root || skip_or_panic(
        "running as another user needs root (setpriv)",
        &crate::support::docker::current_test_name(),
        "run the tests as root, as .ci/run does",
    )
}

/// Every path under `root`, `root` included.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    let mut index = 0;
    while index < found.len() {
        if found[index].is_dir() {
            let mut children: Vec<PathBuf> = std::fs::read_dir(&found[index])
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            found.append(&mut children);
        }
        index += 1;
    }
    found
}

/// `snapshot` with these regex filters applied.
fn assert_filtered(name: &str, filters: &[(&str, &str)], snapshot: &str) {
    let filters: Vec<(&str, &str)> = filters.to_vec();
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

// ---------------------------------------------------------------------------------------
// Tables whose cells are redacted
// ---------------------------------------------------------------------------------------

/// The table that starts at the line beginning with `header_start` and ends at the next
/// blank line (or the end), laid out again after `redact(column, cell)` changed its cells.
/// Columns are found where every line of the table has at least two spaces.
fn relayout(text: &str, header_start: &str, redact: impl Fn(&str, &str) -> String) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|line| line.starts_with(header_start))
        .unwrap_or_else(|| panic!("no table with `{header_start}` in:\n{text}"));
    let end = lines[first..]
        .iter()
        .position(|line| line.trim().is_empty())
        .map_or(lines.len(), |offset| first + offset);
    let rows: Vec<Vec<char>> = lines[first..end]
        .iter()
        .map(|line| line.chars().collect())
        .collect();
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let blank = |column: usize| {
        rows.iter()
            .all(|row| row.get(column).is_none_or(|c| *c == ' '))
    };
    // Column spans: runs of characters between gutters of two or more blank columns.
    let mut spans = Vec::new();
    let mut column = 0;
    while column < width {
        if blank(column) {
            column += 1;
            continue;
        }
        let start = column;
        while column < width && !(blank(column) && (column + 1 >= width || blank(column + 1))) {
            column += 1;
        }
        spans.push((start, column));
    }
    let cell = |row: &Vec<char>, (start, stop): (usize, usize)| -> String {
        row.iter()
            .skip(start)
            .take(stop - start)
            .collect::<String>()
            .trim()
            .to_string()
    };
    let headers: Vec<String> = spans.iter().map(|span| cell(&rows[0], *span)).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(index, row)| {
            spans
                .iter()
                .zip(&headers)
                .map(|(span, header)| {
                    let text = cell(row, *span);
                    if index == 0 {
                        text
                    } else {
                        redact(header, &text)
                    }
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..spans.len())
        .map(|index| {
            cells
                .iter()
                .map(|row| row[index].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let table: Vec<String> = cells
        .iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(text, width)| format!("{text:width$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect();
    let mut out: Vec<String> = lines[..first].iter().map(|line| line.to_string()).collect();
    out.extend(table);
    out.extend(lines[end..].iter().map(|line| line.to_string()));
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

/// A number with a unit (`460KiB`, `0B`, `1.2MB`) as `[SIZE]`, a percentage as `[N]%`;
/// anything else as it is.
fn shape(word: &str) -> String {
    let digits = word
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(word.len());
    let (number, unit) = word.split_at(digits);
    if number.is_empty() || !number.starts_with(|c: char| c.is_ascii_digit()) {
        word.to_string()
    } else if unit == "%" {
        "[N]%".to_string()
    } else if [
        "B", "kB", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB",
    ]
    .contains(&unit)
    {
        "[SIZE]".to_string()
    } else {
        word.to_string()
    }
}

/// Every word of `cell` as its [`shape`].
fn shapes(cell: &str) -> String {
    cell.split(' ').map(shape).collect::<Vec<_>>().join(" ")
}

/// Docker's words for how long ago (`Less than a second`, `3 seconds`, `About a minute`)
/// as `[WHEN]`: the number moves from one run to the next.
fn when(cell: &str) -> String {
    let cell = cell
        .replace("Less than a second", "[WHEN]")
        .replace("About a minute", "[WHEN]");
    let words: Vec<&str> = cell.split(' ').collect();
    let mut out = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let number = !words[index].is_empty() && words[index].chars().all(|c| c.is_ascii_digit());
        let unit = words
            .get(index + 1)
            .is_some_and(|next| next.starts_with("second") || next.starts_with("minute"));
        if number && unit {
            out.push("[WHEN]");
            index += 2;
        } else {
            out.push(words[index]);
            index += 1;
        }
    }
    out.join(" ")
}

/// `REFERENCE (0123456789ab)`: the image id beside the reference as `[IMAGE ID]`.
fn image_id_redacted(cell: &str) -> String {
    match cell.rsplit_once(" (") {
        Some((reference, id))
            if id.len() == 13
                && id.ends_with(')')
                && id[..12].chars().all(|c| c.is_ascii_hexdigit()) =>
        {
            format!("{reference} ([IMAGE ID])")
        }
        _ => cell.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// doctor and compat
// ---------------------------------------------------------------------------------------

/// A GeForce RTX 5090 (sm_120) and a profile whose torch (cu126) has no kernels for it.
#[test]
fn doctor_rtx_5090_with_a_cu126_profile() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with_stand_in_nvml("rtx-5090.conf");
    let arguments = ["doctor", "pytorch-2.8-cu126"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 1, "{run}");
    assert_filtered(
        "doctor_rtx_5090_pytorch_2_8_cu126",
        &DOCTOR_FILTERS,
        &project.transcript(&arguments, &run),
    );
}

/// A driver that is installed but whose kernel module is not loaded.
#[test]
fn doctor_driver_not_loaded() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with_stand_in_nvml("driver-not-loaded.conf");
    let arguments = ["doctor"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 1, "{run}");
    assert_filtered(
        "doctor_driver_not_loaded",
        &DOCTOR_FILTERS,
        &project.transcript(&arguments, &run),
    );
}

/// `compat`'s verdicts in words: a pass, a failure with its hint, what the matrix does not
/// know, and a GPU found only in Arm hosts. No daemon is asked.
#[test]
fn compat_verdicts_in_words() {
    let cases: [(&str, &[&str], i32); 5] = [
        (
            "compat_pass_rtx_4090_pytorch_2_8",
            &[
                "--profile",
                "pytorch-2.8",
                "--driver",
                "580.95.05",
                "--gpu",
                "RTX 4090",
            ],
            0,
        ),
        (
            "compat_fail_gtx_1080_ti_pytorch_2_8",
            &[
                "--profile",
                "pytorch-2.8",
                "--driver",
                "570.124.06",
                "--gpu",
                "GTX 1080 Ti",
            ],
            1,
        ),
        (
            "compat_unknown_torch_2_99",
            &[
                "--torch",
                "2.99.0+cu128",
                "--driver",
                "580.95.05",
                "--gpu",
                "RTX 4090",
            ],
            0,
        ),
        (
            "compat_unknown_cuda_14_2",
            &[
                "--image-cuda",
                "14.2",
                "--driver",
                "580.95.05",
                "--gpu",
                "RTX 4090",
            ],
            0,
        ),
        (
            "compat_aarch64_gh200_pytorch_2_8",
            &[
                "--profile",
                "pytorch-2.8",
                "--driver",
                "580.95.05",
                "--gpu",
                "GH200",
            ],
            0,
        ),
    ];
    let project = Project::new();
    for (name, options, code) in cases {
        let mut arguments = vec!["compat"];
        arguments.extend_from_slice(options);
        let run = project.run(&arguments);
        assert_eq!(run.code, code, "{name}: {run}");
        assert_filtered(name, &[MATRIX_DATE], &project.transcript(&arguments, &run));
    }
}

// ---------------------------------------------------------------------------------------
// ps, up, stats
// ---------------------------------------------------------------------------------------

/// The test image, idle, with a memory limit and a port on loopback.
fn idle_profile(project: &Project, port: u16) -> String {
    format!(
        "image = \"{}\"\nmemory = \"64m\"\nports = [\"127.0.0.1:{port}:8000\"]\n",
        project.image()
    )
}

/// `ps` and `ps -a` of a user with one running container and one stopped.
#[test]
fn ps_one_running_one_stopped() {
    if !require_daemon() || !can_switch_users() {
        return;
    }
    let project = Project::of_a_fresh_user();
    let (first, second) = (project.name("alpha"), project.name("beta"));
    let _guards = [
        ContainerGuard::new(format!("envctl-{first}")),
        ContainerGuard::new(format!("envctl-{second}")),
    ];
    let ports = [
        crate::support::registry::free_loopback_port(),
        crate::support::registry::free_loopback_port(),
    ];
    project.write(
        &format!("envctl/{first}.toml"),
        &idle_profile(&project, ports[0]),
    );
    project.write(
        &format!("envctl/{second}.toml"),
        &idle_profile(&project, ports[1]),
    );
    for profile in [&first, &second] {
        let up = project.run(&["up", profile]);
        assert_eq!(up.code, 0, "{up}");
    }
    let down = project.run(&["down", &second]);
    assert_eq!(down.code, 0, "{down}");

    let mut runs = Vec::new();
    for arguments in [&["ps"][..], &["ps", "-a"]] {
        let run = project.run(arguments);
        assert_eq!(run.code, 0, "{run}");
        runs.push((arguments, run));
    }
    // Laid out again from redacted cells: the test image's tag, the image id, the ports
    // and how long ago differ in width from one run to the next.
    let shown: Vec<String> = runs
        .iter()
        .map(|(arguments, run)| {
            let stdout = relayout(&project.own_rows(&run.stdout), "NAME ", |column, cell| {
                let cell = project
                    .redact(cell)
                    .replace(&ports[0].to_string(), "[PORT]")
                    .replace(&ports[1].to_string(), "[PORT]");
                match column {
                    "STATUS" => when(&cell),
                    "IMAGE" => image_id_redacted(&cell),
                    _ => cell,
                }
            });
            project.transcript(
                arguments,
                &Run {
                    stdout,
                    ..run.clone_run()
                },
            )
        })
        .collect();
    insta::assert_snapshot!("ps_one_running_one_stopped", shown.join("\n"));

    // Both stopped: `ps` lists none and says how many `-a` would, and its hint lists them.
    let down = project.run(&["down", &first]);
    assert_eq!(down.code, 0, "{down}");
    let none_running = project.ps_alone(&["ps"]);
    assert_eq!(none_running.code, 0, "{none_running}");
    assert_eq!(
        none_running.stderr, "hint: no running containers of yours; 2 stopped: `envctl ps -a`\n",
        "{none_running}"
    );
    let listed = project.run(&["ps", "-a"]);
    assert_eq!(
        project.own_rows(&listed.stdout).lines().count(),
        3,
        "{listed}"
    );
}

/// `ps` and `ps -a` of a user with no container: what a newcomer sees before the first
/// `up`. (`exec` with no TARGET is not pinned here: a container that names no owner,
/// which another test may have running meanwhile, is the obvious one to any user.)
#[test]
fn ps_with_nothing_to_show() {
    if !require_daemon() || !can_switch_users() {
        return;
    }
    let project = Project::of_a_fresh_user();
    let mut transcripts = Vec::new();
    for (arguments, code) in [(&["ps"][..], 0), (&["ps", "-a"], 0)] {
        let run = project.ps_alone(arguments);
        assert_eq!(run.code, code, "{arguments:?}: {run}");
        let stdout = project.own_rows(&run.stdout);
        transcripts.push(project.transcript(
            arguments,
            &Run {
                stdout,
                ..run.clone_run()
            },
        ));
    }
    insta::assert_snapshot!("ps_with_nothing_to_show", transcripts.join("\n"));
}

/// `up --dry-run` of a profile like a bundled one (GPUs named, ports, mounts, env,
/// ulimits) on the stand-in NVML's eight H100s, forced past the daemon's missing NVIDIA
/// runtime: the warning, the placement and the `docker run` it would be.
#[test]
fn up_dry_run_of_a_gpu_profile() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with_stand_in_nvml("healthy-8x-h100.conf");
    let profile = project.name("train");
    std::fs::create_dir_all(project.path().join("data")).unwrap();
    project.write(
        &format!("envctl/{profile}.toml"),
        &format!(
            "description = \"Training on two GPUs\"\nimage = \"{}\"\nworkdir = \"/workspace\"\n\
             gpus = [\"0\", \"1\"]\nmemory = \"2g\"\nshm_size = \"1g\"\n\
             mounts = [\"./:/workspace\", \"./data:/data:ro\"]\n\
             ports = [\"127.0.0.1:6006:6006\"]\n\
             env = {{ PYTHONUNBUFFERED = \"1\", WANDB_MODE = \"offline\" }}\n\n\
             [ulimits]\nmemlock = -1\n",
            project.image()
        ),
    );
    let arguments = ["up", &profile, "--dry-run", "--force"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 0, "{run}");
    assert_filtered(
        "up_dry_run_gpu_profile",
        &[(
            r"envctl\.config-hash=[0-9a-f]{64}",
            "envctl.config-hash=[HASH]",
        )],
        &project.transcript(&arguments, &run),
    );
}

/// `up` of the local test image, start to finish, without a terminal (no progress lines),
/// then `stats --once` of that container beside the stand-in NVML's one GPU.
#[test]
fn up_then_stats_once() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with_stand_in_nvml("rtx-5090.conf");
    let profile = project.name("notebook");
    let _guard = ContainerGuard::new(format!("envctl-{profile}"));
    let port = crate::support::registry::free_loopback_port();
    project.write(
        &format!("envctl/{profile}.toml"),
        &idle_profile(&project, port),
    );

    let up_arguments = ["up", &profile];
    let up = project.run(&up_arguments);
    assert_eq!(up.code, 0, "{up}");
    // The port line is the daemon's answer: `docker port` says the same.
    let docker_port =
        crate::support::docker::docker_stdout(["port", &format!("envctl-{profile}"), "8000/tcp"]);
    assert_eq!(docker_port, format!("127.0.0.1:{port}"), "{up}");
    assert!(
        up.stderr
            .contains(&format!("  port:       {docker_port} → 8000/tcp\n")),
        "{up}"
    );
    let up_text = project
        .transcript(&up_arguments, &up)
        .replace(&port.to_string(), "[PORT]");
    assert_filtered(
        "up_start_to_finish",
        &[(r"\([0-9a-f]{12}\)", "([CONTAINER ID])")],
        &up_text,
    );

    let stats_arguments = ["stats", "--once", &profile];
    let stats = project.run(&stats_arguments);
    assert_eq!(stats.code, 0, "{stats}");
    let stdout = relayout(&stats.stdout, "CONTAINER ", |column, cell| {
        match column {
            // The usage moves; the limit is the profile's.
            "MEM USAGE / LIMIT" => match cell.split_once(" / ") {
                Some((usage, limit)) => format!("{} / {limit}", shape(usage)),
                None => cell.to_string(),
            },
            "CPU %" | "MEM %" | "NET I/O" | "BLOCK I/O" => shapes(cell),
            _ => cell.to_string(),
        }
    });
    let stats_text = project.transcript(
        &stats_arguments,
        &Run {
            stdout,
            ..stats.clone_run()
        },
    );
    insta::assert_snapshot!("stats_once_one_container", stats_text);
}

// ---------------------------------------------------------------------------------------
// The errors a newcomer meets
// ---------------------------------------------------------------------------------------

/// A bundled profile's name misspelt: the nearest name, and where to see them all.
#[test]
fn error_unknown_profile_name() {
    let project = Project::new();
    let arguments = ["up", "pytorch-2.88"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 1, "{run}");
    insta::assert_snapshot!(
        "error_unknown_profile_name",
        project.transcript(&arguments, &run)
    );
}

/// A misspelt key in a profile of `./envctl/`: file, line, column and the key meant.
#[test]
fn error_misspelt_key_in_a_profile() {
    let project = Project::new();
    project.write(
        "envctl/train.toml",
        "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\nmemroy = \"16g\"\n",
    );
    let arguments = ["up", "train"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 2, "{run}");
    insta::assert_snapshot!(
        "error_misspelt_key_in_a_profile",
        project.transcript(&arguments, &run)
    );
}

/// No daemon at `DOCKER_HOST`: what to start, or where to point it.
#[test]
fn error_docker_not_reachable() {
    let project = Project::new().with("DOCKER_HOST", "unix:///nonexistent");
    let arguments = ["ps"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 1, "{run}");
    insta::assert_snapshot!(
        "error_docker_not_reachable",
        project.transcript(&arguments, &run)
    );
}

/// `exec` of a profile whose container was never started.
#[test]
fn error_exec_with_no_container_running() {
    if !require_daemon() {
        return;
    }
    let project = Project::new();
    let profile = project.name("train");
    project.write(
        &format!("envctl/{profile}.toml"),
        &format!("image = \"{}\"\n", project.image()),
    );
    let arguments = ["exec", &profile, "python", "train.py"];
    let run = project.run(&arguments);
    assert_ne!(run.code, 0, "{run}");
    insta::assert_snapshot!(
        "error_exec_with_no_container_running",
        project.transcript(&arguments, &run)
    );
}

/// `up` of a bundled GPU profile on a machine without NVML (a laptop): the NVML library
/// named by `ENVCTL_NVML_LIBRARY` is not there, as `libnvidia-ml.so.1` is not on a laptop.
#[test]
fn error_up_of_a_gpu_profile_without_nvml() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    let arguments = ["up", "pytorch-2.8"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 1, "{run}");
    insta::assert_snapshot!(
        "error_up_gpu_profile_without_nvml",
        project.transcript(&arguments, &run)
    );
}

/// The same on a profile of the test image: the hint's command for this host starts it
/// without GPUs, and `--force`, which could only start a container that fails, is not
/// offered.
#[test]
fn the_hint_without_nvml_starts_it_without_gpus() {
    if !require_daemon() {
        return;
    }
    let project = Project::new().with("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    let profile = project.name("gpu");
    let _guard = ContainerGuard::new(format!("envctl-{profile}"));
    project.write(
        &format!("envctl/{profile}.toml"),
        &format!("image = \"{}\"\ngpus = \"all\"\n", project.image()),
    );
    let refused = project.run(&["up", &profile]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused.stderr.contains(
            "\n      caused by: a libloading error occurred: /nonexistent/libnvidia-ml.so.1"
        ),
        "{refused}"
    );
    assert!(!refused.stderr.contains("--force"), "{refused}");
    let hint = format!("`envctl up {profile} --gpus none`");
    assert!(refused.stderr.contains(&hint), "{refused}");
    let words: Vec<&str> = hint.trim_matches('`').split(' ').skip(1).collect();
    let started = project.run(&words);
    assert_eq!(started.code, 0, "{started}");
    let running = crate::support::docker::docker_stdout([
        "inspect",
        "--format",
        "{{.State.Running}}",
        &format!("envctl-{profile}"),
    ]);
    assert_eq!(running, "true", "{started}");
}

/// `--hosts` naming a host that is neither in the team file nor a docker context.
#[test]
fn error_unknown_host_name() {
    let project = Project::new();
    project.write(
        "envctl/hosts.toml",
        "[hosts]\ngpu1 = \"tcp://127.0.0.1:9\"\ngpu2 = \"tcp://127.0.0.1:9\"\n",
    );
    let arguments = ["ps", "--hosts", "gpu3"];
    let run = project.run(&arguments);
    assert_eq!(run.code, 2, "{run}");
    insta::assert_snapshot!(
        "error_unknown_host_name",
        project.transcript(&arguments, &run)
    );
}
