//! Profiles never hurt the host or hang: `extends` reads profiles only, inside the search
//! folders and the project (links resolved, the whole chain); FIFOs and devices are named
//! for what they are and never block; names taken from file stems follow the name rule;
//! a profile that expands to more port bindings than envctl allows is refused at its place,
//! and validation time grows linearly with the profile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use envctl::profile::file::read_profile_text;
use envctl::profile::validate::validate;
use tempfile::TempDir;

use crate::support::cli::{Envctl, Run};

const IMAGE_LINE: &str = "image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"\n";
/// What the file outside the project holds: no output may ever show it.
const SECRET: &str = "SECRET-7f3a9c";

/// A project folder (the working directory, with `./envctl/`) and a folder outside it.
struct World {
    project: TempDir,
    outside: TempDir,
}

impl World {
    fn new() -> World {
        let world = World {
            project: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(world.profiles()).unwrap();
        std::fs::write(world.outside.path().join("secret"), format!("{SECRET}\n")).unwrap();
        std::fs::write(
            world.outside.path().join("secret.toml"),
            format!("{IMAGE_LINE}leaked = \"{SECRET}\"\n"),
        )
        .unwrap();
        world
    }

    fn profiles(&self) -> PathBuf {
        self.project.path().join("envctl")
    }

    fn outside(&self, name: &str) -> String {
        self.outside.path().join(name).display().to_string()
    }

    /// `name` relative to `./envctl/`, through `..` up to the root.
    fn outside_relative(&self, name: &str) -> String {
        let absolute = self.outside(name);
        format!("../../../../../../../../..{absolute}")
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.profiles().join(name), text).unwrap();
    }

    /// envctl in the project, with no daemon to reach.
    fn run(&self, arguments: &[&str]) -> Run {
        Envctl::in_folder(self.project.path())
            .daemon("unix:///nonexistent/envctl-test.sock")
            .args(arguments)
            .timeout(Duration::from_secs(30))
            .run()
    }
}

/// The run with each stream clipped, for a failure message.
fn describe(run: &Run) -> String {
    let clip = |text: &str| text.chars().take(4000).collect::<String>();
    format!(
        "exit code {:?}\n--- stderr\n{}\n--- stdout\n{}",
        run.code,
        clip(&run.stderr),
        clip(&run.stdout)
    )
}

/// Refused as invalid input, without a word of the host's files.
fn assert_refused_without_leaking(run: &Run, context: &str, expected: &[&str]) {
    assert_eq!(run.code, 2, "{context}: {}", describe(run));
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(SECRET) && !text.contains("root:x:0:0"),
            "{context}: a file of the host was quoted:\n{}",
            describe(run)
        );
    }
    for part in expected {
        assert!(
            run.stderr.contains(part),
            "{context}: stderr lacks {part:?}:\n{}",
            describe(run)
        );
    }
}

/// Every way the issue found (and its neighbours) for `./envctl/a.toml` to name a file of
/// the host: refused at `a.toml:LINE:COL` with the path, and never read.
#[test]
fn extends_never_reads_a_file_outside_the_profile_folders() {
    let world = World::new();
    let real = |name: &str| {
        std::fs::canonicalize(world.outside.path().join(name))
            .unwrap()
            .display()
            .to_string()
    };
    std::os::unix::fs::symlink(
        world.outside.path().join("secret.toml"),
        world.profiles().join("linked.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(world.outside.path(), world.profiles().join("linked-folder"))
        .unwrap();
    let not_a_profile = "is neither a profile name nor a `.toml` file";
    let escapes = "outside the profile folders and the project; envctl does not read it";
    let cases: Vec<(String, Vec<String>)> = vec![
        ("/etc/shadow".into(), vec![not_a_profile.into()]),
        ("/etc/passwd".into(), vec![not_a_profile.into()]),
        (
            "../../../../../../../../etc/passwd".into(),
            vec![not_a_profile.into()],
        ),
        (world.outside("secret"), vec![not_a_profile.into()]),
        (world.outside_relative("secret"), vec![not_a_profile.into()]),
        (
            world.outside("secret.toml"),
            vec![escapes.into(), real("secret.toml")],
        ),
        (
            world.outside_relative("secret.toml"),
            vec![escapes.into(), real("secret.toml")],
        ),
        // A link in `./envctl/`, by name and by path, and a linked folder.
        ("linked".into(), vec![escapes.into(), real("secret.toml")]),
        (
            "linked.toml".into(),
            vec![escapes.into(), real("secret.toml")],
        ),
        (
            "linked-folder/secret.toml".into(),
            vec![escapes.into(), real("secret.toml")],
        ),
    ];
    for (target, expected) in &cases {
        world.write("a.toml", &format!("extends = \"{target}\"\n{IMAGE_LINE}"));
        let mut expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        expected.push("envctl/a.toml:1:11");
        for arguments in [
            &["profiles", "show", "a"][..],
            &["profiles", "check", "a"],
            &["profiles", "check", "envctl/a.toml"],
            &["up", "a", "--dry-run"],
        ] {
            assert_refused_without_leaking(
                &world.run(arguments),
                &format!("extends = {target:?}, {arguments:?}"),
                &expected,
            );
        }
        let listed = world.run(&["profiles", "list"]);
        assert!(
            !listed.stdout.contains(SECRET) && !listed.stderr.contains(SECRET),
            "{}",
            describe(&listed)
        );
    }
}

/// The link itself, named or found, is held to the same folders, and so is every file of
/// a chain: a parent inside the project cannot walk out either.
#[test]
fn links_and_every_file_of_a_chain_stay_inside() {
    let world = World::new();
    std::os::unix::fs::symlink(
        world.outside.path().join("secret.toml"),
        world.profiles().join("linked.toml"),
    )
    .unwrap();
    let escapes = "leads to";
    for arguments in [
        &["profiles", "show", "linked"][..],
        &["profiles", "check", "envctl/linked.toml"],
        &["up", "linked", "--dry-run", "--json"],
    ] {
        assert_refused_without_leaking(
            &world.run(arguments),
            &format!("{arguments:?}"),
            &[escapes, "envctl/linked.toml:1:1"],
        );
    }
    world.write("a.toml", "extends = \"b\"\n");
    world.write(
        "b.toml",
        &format!(
            "# the middle of the chain\nextends = \"{}\"\n",
            world.outside("secret.toml")
        ),
    );
    assert_refused_without_leaking(
        &world.run(&["profiles", "show", "a"]),
        "chain",
        &[escapes, "envctl/b.toml:2:11"],
    );
}

/// What stays allowed: the project's own files (through `..` or a link), and a folder
/// outside once it is added to `ENVCTL_PROFILE_PATH`.
#[test]
fn the_project_and_configured_folders_stay_readable() {
    let world = World::new();
    std::fs::create_dir(world.project.path().join("shared")).unwrap();
    std::fs::write(world.project.path().join("shared/base.toml"), IMAGE_LINE).unwrap();
    std::os::unix::fs::symlink(
        world.project.path().join("shared/base.toml"),
        world.profiles().join("base.toml"),
    )
    .unwrap();
    for target in ["../shared/base.toml", "base"] {
        world.write("a.toml", &format!("extends = \"{target}\"\n"));
        let run = world.run(&["profiles", "show", "a"]);
        assert_eq!(run.code, 0, "{target}: {}", describe(&run));
    }
    std::fs::write(world.outside.path().join("team.toml"), IMAGE_LINE).unwrap();
    world.write(
        "a.toml",
        &format!("extends = \"{}\"\n", world.outside("team.toml")),
    );
    let refused = world.run(&["profiles", "show", "a"]);
    assert_eq!(refused.code, 2, "{}", describe(&refused));
    assert!(
        refused.stderr.contains("ENVCTL_PROFILE_PATH"),
        "the hint names the way out:\n{}",
        describe(&refused)
    );
    let allowed = Envctl::in_folder(world.project.path())
        .env("ENVCTL_PROFILE_PATH", world.outside.path())
        .args(["profiles", "show", "a"])
        .timeout(Duration::from_secs(30))
        .run();
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
}

/// A FIFO, a device or a folder where a profile is expected is named for what it is, with
/// its path, by name, by path and through `extends`: never "not found — did you mean
/// `zero`?" (itself), and never a hang.
#[test]
fn fifos_devices_and_folders_are_named_for_what_they_are() {
    let world = World::new();
    mkfifo(&world.profiles().join("zero.toml"));
    std::fs::create_dir(world.profiles().join("folder.toml")).unwrap();
    world.write("child.toml", "extends = \"zero\"\n");
    let cases: [(&[&str], &str); 7] = [
        (
            &["profiles", "show", "zero"],
            "`envctl/zero.toml` is a FIFO (named pipe), not a regular file",
        ),
        (
            &["profiles", "check", "zero"],
            "`envctl/zero.toml` is a FIFO (named pipe), not a regular file",
        ),
        (
            &["up", "zero", "--dry-run"],
            "`envctl/zero.toml` is a FIFO (named pipe), not a regular file",
        ),
        (
            &["profiles", "show", "child"],
            "`envctl/zero.toml` is a FIFO (named pipe), not a regular file",
        ),
        (
            &["profiles", "show", "/dev/zero"],
            "`/dev/zero` is a character device, not a regular file",
        ),
        (
            &["profiles", "show", "envctl/zero.toml"],
            "`envctl/zero.toml` is a FIFO (named pipe), not a regular file",
        ),
        (
            &["profiles", "show", "folder"],
            "`envctl/folder.toml` is a folder, not a regular file",
        ),
    ];
    for (arguments, expected) in cases {
        let started = Instant::now();
        let run = world.run(arguments);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{arguments:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(run.code, 2, "{arguments:?}: {}", describe(&run));
        assert!(
            run.stderr.contains(expected),
            "{arguments:?}: {}",
            describe(&run)
        );
        assert!(
            !run.stderr.contains("not found") && !run.stderr.contains("did you mean"),
            "{arguments:?}: {}",
            describe(&run)
        );
    }
}

/// A profile swapped for a FIFO between a look at its type and the open: the reader judges
/// the opened descriptor and never blocks (a stat-then-open reader hung on the FIFO).
#[test]
fn a_profile_swapped_for_a_fifo_never_blocks_the_reader() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("p.toml");
    std::fs::write(&path, IMAGE_LINE).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (folder, path, stop) = (folder.path().to_path_buf(), path.clone(), stop.clone());
        std::thread::spawn(move || {
            let (regular, fifo) = (folder.join("regular.tmp"), folder.join("fifo.tmp"));
            while !stop.load(Ordering::Relaxed) {
                std::fs::write(&regular, IMAGE_LINE).unwrap();
                std::fs::rename(&regular, &path).unwrap();
                mkfifo(&fifo);
                std::fs::rename(&fifo, &path).unwrap();
            }
        })
    };
    let (done, finished) = std::sync::mpsc::channel();
    let reader_path = path.clone();
    std::thread::spawn(move || {
        let (mut texts, mut refusals) = (0, 0);
        // The window between a look and an open is a few microseconds: try for a while.
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            match read_profile_text(&reader_path, "p.toml") {
                Ok(_) => texts += 1,
                Err(diagnostic) => {
                    assert!(
                        diagnostic.message.contains("not a regular file")
                            || diagnostic.message.contains("cannot"),
                        "{diagnostic:?}"
                    );
                    refusals += 1;
                }
            }
        }
        let _ = done.send((texts, refusals));
    });
    let outcome = finished.recv_timeout(Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    let (texts, refusals) = outcome.expect("the reader blocked on a FIFO");
    swapper.join().unwrap();
    assert!(
        texts > 0 && refusals > 0,
        "the reader saw {texts} profiles and {refusals} FIFOs: the test proves nothing"
    );
}

/// A profile named after its file gets a name that `up` and the daemon accept, or none.
#[test]
fn names_taken_from_file_stems_follow_the_name_rule() {
    let world = World::new();
    world.write("rel space.toml", IMAGE_LINE);
    world.write("Upper.toml", IMAGE_LINE);
    for (arguments, shown) in [
        (
            &["profiles", "check", "envctl/rel space.toml"][..],
            "envctl/rel space.toml:1:1",
        ),
        (
            &["profiles", "check", "rel space"],
            "envctl/rel space.toml:1:1",
        ),
        (
            &["up", "rel space", "--dry-run"],
            "envctl/rel space.toml:1:1",
        ),
        (
            &["up", "Upper", "--dry-run", "--json"],
            "envctl/Upper.toml:1:1",
        ),
    ] {
        let run = world.run(arguments);
        assert_eq!(run.code, 2, "{arguments:?}: {}", describe(&run));
        assert!(
            run.stderr.contains("the profile is named after its file")
                && run.stderr.contains(shown),
            "{arguments:?}: {}",
            describe(&run)
        );
    }
}

/// 200 ranges of 65535 ports in a 6 KB profile made `up --dry-run --json` print 1.2 GB
/// (2.8 GB RSS, 50 s): the profile is refused at the entry that goes past the limit.
#[test]
fn a_profile_expanding_to_too_many_port_bindings_is_refused_at_its_place() {
    let world = World::new();
    let mut text = format!("{IMAGE_LINE}gpus = \"none\"\nports = [\n");
    for host in 1..=200 {
        text.push_str(&format!("  \"127.0.0.{host}:1-65535:1-65535\",\n"));
    }
    text.push_str("]\n");
    world.write("many.toml", &text);
    let started = Instant::now();
    let run = world.run(&["up", "many", "--dry-run", "--json"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 2, "{}", describe(&run));
    assert!(
        run.stdout.len() < 4096,
        "stdout is {} bytes",
        run.stdout.len()
    );
    assert!(
        run.stderr
            .contains("`ports` expands to more than 65535 port bindings")
            && run.stderr.contains("envctl/many.toml:5:3"),
        "{}",
        describe(&run)
    );
}

/// Port conflicts and duplicate mount targets were found by comparing every pair: 40,000
/// ports took 10 s and 60,000 mounts 20 s. Both now take a look-up per entry.
#[test]
fn validation_time_grows_linearly_with_ports_and_mounts() {
    let mut ports = format!("{IMAGE_LINE}ports = [\n");
    for port in 1..=40_000 {
        ports.push_str(&format!("\"{port}:{port}\",\n"));
    }
    ports.push_str("]\n");
    let mut mounts = format!("{IMAGE_LINE}mounts = [\n");
    for index in 1..=60_000 {
        mounts.push_str(&format!("\"v:/m{index}\",\n"));
    }
    mounts.push_str("]\n");
    for (what, text) in [("ports", ports), ("mounts", mounts)] {
        let started = Instant::now();
        let (_, diagnostics) = validate("p.toml", &text);
        let elapsed = started.elapsed();
        assert!(diagnostics.is_empty(), "{what}: {:?}", diagnostics.first());
        assert!(
            elapsed < Duration::from_secs(5),
            "{what}: validation took {elapsed:?}"
        );
    }
}
