//! Containers that another tool made from an export: `docker-compose up` of
//! `export --to compose` gives a container of the profile that envctl did not create.
//! `ps` says where it came from, `up` of the same profile names it instead of making a
//! second one beside it or starting its own stopped one (either would collide on its host
//! port), and `exec` works in it.
//!
//! Needs the daemon and Compose (`docker-compose` v1, else `docker compose` v2); skips
//! without them, fails under `ENVCTL_REQUIRE_DOCKER=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    current_test_name, docker_stdout, require_daemon, run_with_timeout, skip_or_panic, test_image,
    unique_name,
};

/// How long one run of envctl or compose may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(300);

/// `docker-compose` (v1) or `docker compose` (v2), whichever answers; `None` after a skip.
fn require_compose() -> Option<Vec<String>> {
    let answers = |program: &str, arguments: &[&str]| {
        let mut command = Command::new(program);
        command.args(arguments);
        run_with_timeout(&mut command, Duration::from_secs(30))
            .is_ok_and(|output| output.status.success())
    };
    if answers("docker-compose", &["version"]) {
        Some(vec!["docker-compose".into()])
    } else if answers("docker", &["compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        skip_or_panic(
            "no docker-compose",
            &current_test_name(),
            "neither `docker-compose` nor `docker compose` runs: `sudo apt-get install docker-compose`",
        );
        None
    }
}

/// A project folder with `./envctl/PROFILE.toml`, its compose export and a compose
/// project of a unique name, taken down (`down -v`) when dropped, even after a panic.
struct Exported {
    directory: tempfile::TempDir,
    program: Vec<String>,
    profile: String,
    project: String,
}

impl Exported {
    /// Writes the profile (the test image, `ports`), exports it and runs `compose up -d`.
    fn up(program: Vec<String>, ports: &str) -> Exported {
        let exported = Exported::new(program, ports);
        exported.compose_up();
        exported
    }

    /// Writes the profile (the test image, `ports`) and exports it.
    fn new(program: Vec<String>, ports: &str) -> Exported {
        let directory = tempfile::Builder::new()
            .prefix("envctl-export-origin-")
            .tempdir()
            .unwrap();
        for folder in ["envctl", "xdg", "home"] {
            std::fs::create_dir_all(directory.path().join(folder)).unwrap();
        }
        let profile = unique_name("origin");
        std::fs::write(
            directory.path().join(format!("envctl/{profile}.toml")),
            format!(
                "image = \"{}\"\nmemory = \"64m\"\nports = [{ports}]\n",
                test_image()
            ),
        )
        .unwrap();
        let exported = Exported {
            directory,
            program,
            project: unique_name("origin").replace('-', ""),
            profile,
        };
        exported
            .envctl(&[
                "export",
                &exported.profile,
                "--to",
                "compose",
                "-o",
                "compose.yml",
            ])
            .expect(0, "envctl export --to compose");
        exported
    }

    fn compose_up(&self) {
        let output = run_with_timeout(&mut self.compose(&["up", "-d"]), LIMIT)
            .unwrap_or_else(|error| panic!("compose up: {error}"));
        Run::of(output).expect(0, "compose up -d");
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }

    fn compose(&self, arguments: &[&str]) -> Command {
        let mut command = Command::new(&self.program[0]);
        command
            .args(&self.program[1..])
            .args(["-p", &self.project, "-f", "compose.yml"])
            .args(arguments)
            .current_dir(self.path())
            .env_remove("COMPOSE_PROJECT_NAME")
            .env_remove("COMPOSE_FILE");
        command
    }

    /// envctl in the project folder.
    fn envctl(&self, arguments: &[&str]) -> Run {
        Envctl::in_folder(self.path())
            .args(arguments)
            .timeout(LIMIT)
            .run()
    }

    /// Every container (running or not) of the profile, by name.
    fn containers(&self) -> Vec<String> {
        docker_stdout([
            "ps",
            "-a",
            "--filter",
            &format!("label=envctl.profile={}", self.profile),
            "--format",
            "{{.Names}}",
        ])
        .lines()
        .map(str::to_string)
        .collect()
    }
}

impl Drop for Exported {
    fn drop(&mut self) {
        let _ = run_with_timeout(&mut self.compose(&["down", "-v"]), Duration::from_secs(120));
        // Should `up` have made one despite the refusal, it goes too.
        let own: PathBuf = format!("envctl-{}", self.profile).into();
        let _ = run_with_timeout(
            Command::new("docker").args(["rm", "-f", "-v"]).arg(&own),
            Duration::from_secs(60),
        );
    }
}

/// A host port nothing listens on now, so the profile publishes a fixed one (the case
/// where a second container would collide).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `up`'s refusal: exit 1, naming the compose container and how to stop it, and no
/// second container made.
fn assert_up_refuses(exported: &Exported) {
    let before = exported.containers();
    let compose_made: Vec<&String> = before
        .iter()
        .filter(|name| **name != format!("envctl-{}", exported.profile))
        .collect();
    assert_eq!(
        compose_made.len(),
        1,
        "compose made one container: {before:?}"
    );
    let container = compose_made[0];
    let up = exported.envctl(&["up", &exported.profile]);
    up.expect(1, "envctl up while compose runs the profile");
    assert!(
        up.stderr.contains(&format!(
            "profile `{}` already runs as `{container}`",
            exported.profile
        )),
        "{}",
        up.stderr
    );
    // `docker-compose -p X down` in its folder (v1) or `docker compose -p X down` (v2).
    assert!(
        up.stderr
            .contains(&format!("-p {} down`", exported.project)),
        "{}",
        up.stderr
    );
    assert!(
        up.stderr
            .contains(&format!("envctl exec {}", exported.profile)),
        "{}",
        up.stderr
    );
    assert_eq!(exported.containers(), before, "up made a second container");
}

#[test]
fn ps_names_compose_as_the_origin_up_refuses_a_second_and_exec_enters_it() {
    if !require_daemon() {
        return;
    }
    let Some(program) = require_compose() else {
        return;
    };
    let exported = Exported::up(program, &format!("\"127.0.0.1:{}:8080\"", free_port()));
    let container = exported.containers().remove(0);
    let labels = docker_stdout(["inspect", "--format", "{{json .Config.Labels}}", &container]);
    let labels: Value = serde_json::from_str(&labels).unwrap();
    assert_eq!(labels["envctl.origin"], "compose", "{labels}");
    assert_eq!(
        labels["com.docker.compose.project"], exported.project,
        "{labels}"
    );

    let ps = exported.envctl(&["ps", "--json"]);
    ps.expect(0, "envctl ps --json");
    let listing: Value = serde_json::from_str(&ps.stdout).unwrap();
    let row = listing["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == container.as_str())
        .unwrap_or_else(|| panic!("{container} not in {listing}"))
        .clone();
    assert_eq!(row["origin"], "compose", "{row}");
    assert_eq!(row["compose_project"], exported.project, "{row}");
    assert_eq!(row["drift"], "current", "{row}");
    let table = exported.envctl(&["ps"]);
    table.expect(0, "envctl ps");
    assert!(
        table
            .stdout
            .contains(&format!("compose ({})", exported.project)),
        "{}",
        table.stdout
    );

    assert_up_refuses(&exported);

    let exec = exported.envctl(&["exec", &exported.profile, "--", "echo", "hi"]);
    exec.expect(0, "envctl exec into the compose container");
    assert_eq!(exec.stdout, "hi\n");
}

/// Without ports nothing would collide, but a second environment of the profile beside
/// compose's would split the work: refused as well (the list `up` makes is then of
/// envctl's containers only).
#[test]
fn up_refuses_beside_a_compose_container_that_publishes_nothing() {
    if !require_daemon() {
        return;
    }
    let Some(program) = require_compose() else {
        return;
    };
    let exported = Exported::up(program, "");
    assert_up_refuses(&exported);
}

/// Issue 14, item 6: a stopped `envctl-P` that `up` made before, beside a running compose
/// container of P. `up P` names the compose one instead of starting its own, which would
/// then fail on the host port compose holds (or run a second environment).
#[test]
fn up_names_compose_instead_of_starting_its_own_stopped_container() {
    if !require_daemon() {
        return;
    }
    let Some(program) = require_compose() else {
        return;
    };
    let exported = Exported::new(program, &format!("\"127.0.0.1:{}:8080\"", free_port()));
    let own = format!("envctl-{}", exported.profile);
    exported
        .envctl(&["up", &exported.profile])
        .expect(0, "envctl up (before compose)");
    exported
        .envctl(&["down", &exported.profile])
        .expect(0, "envctl down (stops it, keeps it)");
    exported.compose_up();
    let state = |name: &str| docker_stdout(["inspect", "--format", "{{.State.Status}}", name]);
    assert_eq!(state(&own), "exited", "envctl's container stays stopped");

    assert_up_refuses(&exported);
    assert_eq!(
        state(&own),
        "exited",
        "up started its own container beside compose's"
    );
    assert_eq!(
        exported.containers().len(),
        2,
        "{:?}",
        exported.containers()
    );
}
