//! Secrets (issue 12, class 5): the value of a secret-looking variable (`API_TOKEN`,
//! `DB_PASSWORD`, …) and of every `up -e KEY` taken from the shell never appears in what
//! envctl prints or writes — `up --dry-run` (line and JSON), `profiles show`, `up`'s drift
//! refusal, every export — while the container itself gets the real values. Exports
//! reference the values instead (`${KEY}`, `${localEnv:KEY}`, a Kubernetes `secretKeyRef`,
//! `-e KEY`) and stay valid for their tools; `doctor` warns about a literal secret.
//!
//! The daemon tests skip without Docker (`SKIPPED …`), and the compose check without
//! `docker-compose`, unless `ENVCTL_REQUIRE_DOCKER=1` makes either a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    ContainerGuard, docker_stdout, require_daemon, run_with_timeout, skip_or_panic, test_image,
    unique_name,
};

/// The values no output may contain.
const VALUES: [&str; 4] = [
    "supersecret",
    "hunter2",
    "xyz-from-shell",
    "plain-from-shell",
];

/// A profile with two literal secrets, two look-alikes that are not secret, and a plain value.
fn profile_text(image: &str) -> String {
    format!(
        "image = \"{image}\"\nenv = {{ API_TOKEN = \"supersecret\", DB_PASSWORD = \"hunter2\", FLAG = \"on\", TOKENIZERS_PARALLELISM = \"false\", KEYBOARD = \"us\" }}\n"
    )
}

/// A working directory with `./envctl/NAME.toml` and empty config and home folders.
fn project(name: &str, text: &str) -> tempfile::TempDir {
    let directory = tempfile::Builder::new()
        .prefix("envctl-secrets-test-")
        .tempdir()
        .unwrap();
    for folder in ["envctl", "xdg", "home"] {
        std::fs::create_dir_all(directory.path().join(folder)).unwrap();
    }
    std::fs::write(
        directory.path().join("envctl").join(format!("{name}.toml")),
        text,
    )
    .unwrap();
    directory
}

/// envctl in `directory` with `environment` added, where the shell's `GH_TOKEN` and
/// `PLAIN` never reach it unless `environment` holds them.
fn envctl(directory: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
    Envctl::in_folder(directory)
        .args(arguments)
        .timeout(Duration::from_secs(120))
        .env_remove("GH_TOKEN")
        .env_remove("PLAIN")
        .envs(environment.iter().copied())
        .run()
}

/// The shell's variables of the `-e KEY` flags below.
const SHELL: [(&str, &str); 2] = [
    ("GH_TOKEN", "xyz-from-shell"),
    ("PLAIN", "plain-from-shell"),
];

#[test]
fn dry_run_writes_secrets_without_their_values() {
    let directory = project("p", &profile_text("busybox:1.36"));
    let flags = ["-e", "GH_TOKEN", "-e", "PLAIN", "-e", "GIVEN=visible"];
    let mut arguments = vec!["up", "p", "--dry-run"];
    arguments.extend_from_slice(&flags);
    let run = envctl(directory.path(), &arguments, &SHELL);
    run.expect(0, "up --dry-run")
        .shows_none(&VALUES, "up --dry-run");
    for flag in [
        "-e API_TOKEN ",
        "-e DB_PASSWORD ",
        "-e GH_TOKEN ",
        "-e PLAIN ",
        "-e FLAG=on ",
        "-e GIVEN=visible ",
        "-e KEYBOARD=us ",
        "-e TOKENIZERS_PARALLELISM=false ",
    ] {
        assert!(run.stdout.contains(flag), "{flag} in {}", run.stdout);
    }
    assert!(
        run.stderr
            .contains("`API_TOKEN`, `DB_PASSWORD`, `GH_TOKEN` and `PLAIN` are written `-e KEY`"),
        "{}",
        run.stderr
    );

    let mut arguments = vec!["--json", "up", "p", "--dry-run"];
    arguments.extend_from_slice(&flags);
    let run = envctl(directory.path(), &arguments, &SHELL);
    run.expect(0, "up --dry-run --json")
        .shows_none(&VALUES, "up --dry-run --json");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        document["body"]["Env"],
        serde_json::json!([
            "API_TOKEN=<masked>",
            "DB_PASSWORD=<masked>",
            "FLAG=on",
            "GH_TOKEN=<masked>",
            "GIVEN=visible",
            "KEYBOARD=us",
            "PLAIN=<masked>",
            "TOKENIZERS_PARALLELISM=false",
        ])
    );
    assert_eq!(
        document["masked_env"],
        serde_json::json!(["API_TOKEN", "DB_PASSWORD", "GH_TOKEN", "PLAIN"])
    );
}

#[test]
fn profiles_show_masks_secret_values() {
    let directory = project("p", &profile_text("busybox:1.36"));
    let shown = envctl(directory.path(), &["profiles", "show", "p"], &[]);
    shown
        .expect(0, "profiles show")
        .shows_none(&VALUES, "profiles show");
    for line in [
        "API_TOKEN = \"<masked>\"",
        "DB_PASSWORD = \"<masked>\"",
        "FLAG = \"on\"",
        "KEYBOARD = \"us\"",
    ] {
        assert!(shown.stdout.contains(line), "{line} in {}", shown.stdout);
    }
    let json = envctl(directory.path(), &["--json", "profiles", "show", "p"], &[]);
    json.expect(0, "profiles show --json")
        .shows_none(&VALUES, "profiles show --json");
    let document: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        document["profile"]["profile"]["env"]["API_TOKEN"],
        "<masked>"
    );
    assert_eq!(document["profile"]["profile"]["env"]["FLAG"], "on");
}

#[test]
fn doctor_warns_about_a_literal_secret_by_key_and_file() {
    let directory = project("p", &profile_text("busybox:1.36"));
    let run = envctl(directory.path(), &["--json", "doctor", "p"], &[]);
    run.shows_none(&VALUES, "doctor --json");
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let findings: Vec<&Value> = report["profiles"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == "profile.literal-secret")
        .collect();
    let keys: Vec<&str> = findings
        .iter()
        .map(|finding| finding["facts"]["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["API_TOKEN", "DB_PASSWORD"]);
    for finding in &findings {
        assert_eq!(finding["status"], "warn");
        assert!(
            finding["facts"]["file"]
                .as_str()
                .unwrap()
                .ends_with("p.toml"),
            "{finding}"
        );
        assert!(
            finding["hint"]
                .as_str()
                .unwrap()
                .contains("envctl up p -e "),
            "{finding}"
        );
    }
    let human = envctl(directory.path(), &["doctor", "p"], &[]);
    human.shows_none(&VALUES, "doctor");
    assert!(
        human.stdout.contains("`env.API_TOKEN` in ") && human.stdout.contains("p.toml"),
        "{}",
        human.stdout
    );
}

/// Every YAML document of a multi-document file.
fn yaml_documents(text: &str) -> Vec<serde_norway::Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| serde_norway::Value::deserialize(document).unwrap())
        .collect()
}

#[test]
fn exports_reference_secrets_instead_of_copying_them() {
    let directory = project("p", &profile_text("busybox:1.36"));
    let export = |target: &str, file: &str| -> (String, String) {
        let run = envctl(
            directory.path(),
            &["export", "p", "--to", target, "-o", file],
            &[],
        );
        run.expect(0, target).shows_none(&VALUES, target);
        let text = std::fs::read_to_string(directory.path().join(file)).unwrap();
        for value in VALUES {
            assert!(!text.contains(value), "{target} writes `{value}`:\n{text}");
        }
        (text, run.stderr)
    };

    let (compose, notices) = export("compose", "compose.yml");
    let document = serde_json::to_value(&yaml_documents(&compose)[0]).unwrap();
    let environment = &document["services"]["p"]["environment"];
    assert_eq!(environment["API_TOKEN"], "${API_TOKEN}");
    assert_eq!(environment["DB_PASSWORD"], "${DB_PASSWORD}");
    assert_eq!(environment["FLAG"], "on");
    assert!(
        compose.contains("# Secrets: API_TOKEN, DB_PASSWORD "),
        "{compose}"
    );
    assert!(
        notices.contains("compose: `env`: secret values are not written"),
        "{notices}"
    );

    let (kubernetes, notices) = export("k8s", "k8s.yml");
    let documents = yaml_documents(&kubernetes);
    let job = serde_json::to_value(&documents[0]).unwrap();
    assert_eq!(job["kind"], "Job");
    let env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    let variable = |name: &str| {
        env.iter()
            .find(|variable| variable["name"] == name)
            .unwrap_or_else(|| panic!("no `{name}` in {env:?}"))
    };
    let token = variable("API_TOKEN");
    assert!(token.get("value").is_none(), "{token}");
    let reference = &token["valueFrom"]["secretKeyRef"];
    assert_eq!(
        (&reference["name"], &reference["key"]),
        (&Value::from("envctl-p-env"), &Value::from("API_TOKEN"))
    );
    assert_eq!(variable("FLAG")["value"], "on");
    let command = "kubectl create secret generic envctl-p-env --from-literal=API_TOKEN=\"$API_TOKEN\" --from-literal=DB_PASSWORD=\"$DB_PASSWORD\"";
    assert!(
        kubernetes.contains(&format!("#   {command}\n")),
        "{kubernetes}"
    );
    assert!(notices.contains(command), "{notices}");
    assert!(
        !kubernetes.contains("kind: Secret"),
        "no Secret object: applying a placeholder would overwrite the real one"
    );

    let (devcontainer, notices) = export("devcontainer", "devcontainer.json");
    let document: Value = serde_json::from_str(&devcontainer).unwrap();
    assert_eq!(
        document["containerEnv"]["API_TOKEN"],
        "${localEnv:API_TOKEN}"
    );
    assert_eq!(document["containerEnv"]["FLAG"], "on");
    assert!(notices.contains("devcontainer: `env`:"), "{notices}");

    let (line, notices) = export("docker-run", "run.sh");
    assert!(
        line.contains(" -e API_TOKEN -e DB_PASSWORD -e FLAG=on "),
        "{line}"
    );
    assert!(notices.contains("docker-run: `env`:"), "{notices}");
}

/// `docker-compose config` accepts the file and fills the secrets from its environment.
#[test]
fn compose_reads_the_secrets_from_its_environment() {
    let program = ["docker-compose", "version"];
    let mut probe = Command::new(program[0]);
    probe.arg(program[1]);
    if !run_with_timeout(&mut probe, Duration::from_secs(30))
        .is_ok_and(|output| output.status.success())
    {
        skip_or_panic(
            "no docker-compose",
            &crate::support::docker::current_test_name(),
            "`docker-compose` does not run: `sudo apt-get install docker-compose`",
        );
        return;
    }
    let directory = project("p", &profile_text("busybox:1.36"));
    envctl(
        directory.path(),
        &["export", "p", "--to", "compose", "-o", "compose.yml"],
        &[],
    )
    .expect(0, "export --to compose");
    let compose = |arguments: &[&str]| {
        let mut command = Command::new("docker-compose");
        command
            .args(["-f", "compose.yml"])
            .args(arguments)
            .current_dir(directory.path())
            .env_remove("COMPOSE_PROJECT_NAME")
            .env_remove("COMPOSE_FILE")
            .env("API_TOKEN", "from-the-environment")
            .env("DB_PASSWORD", "also-from-it");
        let output = run_with_timeout(&mut command, Duration::from_secs(60)).unwrap();
        assert!(
            output.status.success(),
            "docker-compose {arguments:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    compose(&["config", "-q"]);
    let config = compose(&["config"]);
    let document = serde_json::to_value(&yaml_documents(&config)[0]).unwrap();
    let environment = &document["services"]["p"]["environment"];
    assert_eq!(environment["API_TOKEN"], "from-the-environment", "{config}");
    assert_eq!(environment["DB_PASSWORD"], "also-from-it", "{config}");
}

fn container_env(container: &str) -> Vec<String> {
    let text = docker_stdout([
        "container",
        "inspect",
        "-f",
        "{{json .Config.Env}}",
        container,
    ]);
    let mut env: Vec<String> = serde_json::from_str(&text).unwrap();
    env.retain(|entry| !entry.starts_with("PATH="));
    env.sort();
    env
}

/// The container gets the real values, the output none; the dry-run line, run where the
/// secrets are exported, makes the same environment; a changed secret is named, not shown.
#[test]
fn the_container_gets_the_values_the_output_never_shows() {
    if !require_daemon() {
        return;
    }
    let name = unique_name("secrets");
    let container = format!("envctl-{name}");
    let _guard = ContainerGuard::new(container.as_str());
    let from_line = unique_name("secrets-line");
    let _line_guard = ContainerGuard::new(from_line.as_str());
    let directory = project(&name, &profile_text(&test_image()));
    let flags = ["-e", "GH_TOKEN", "-e", "PLAIN"];

    let mut arguments = vec!["up", name.as_str()];
    arguments.extend_from_slice(&flags);
    envctl(directory.path(), &arguments, &SHELL)
        .expect(0, "up")
        .shows_none(&VALUES, "up");
    let env = container_env(&container);
    for entry in [
        "API_TOKEN=supersecret",
        "DB_PASSWORD=hunter2",
        "GH_TOKEN=xyz-from-shell",
        "PLAIN=plain-from-shell",
        "FLAG=on",
    ] {
        assert!(env.contains(&entry.to_string()), "{entry} in {env:?}");
    }

    // The printed line, run by a shell that has the secrets, gives the same environment.
    let mut arguments = vec!["up", name.as_str(), "--dry-run"];
    arguments.extend_from_slice(&flags);
    let run = envctl(directory.path(), &arguments, &SHELL);
    let line = &run.expect(0, "up --dry-run").stdout;
    let create = line
        .trim_end()
        .replacen("docker run -d --name ", "docker create --name ", 1)
        .replacen(
            &format!("--name {container} "),
            &format!("--name {from_line} "),
            1,
        );
    let mut shell = Command::new("sh");
    shell
        .args(["-c", create.as_str()])
        .env("API_TOKEN", "supersecret")
        .env("DB_PASSWORD", "hunter2");
    for (key, value) in SHELL {
        shell.env(key, value);
    }
    let output = run_with_timeout(&mut shell, Duration::from_secs(120)).unwrap();
    assert!(
        output.status.success(),
        "{create}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(container_env(&from_line), env);

    // A rotated secret: `up` refuses the changed profile and names the key only.
    std::fs::write(
        directory.path().join("envctl").join(format!("{name}.toml")),
        profile_text(&test_image()).replace("supersecret", "rotated-secret"),
    )
    .unwrap();
    let mut arguments = vec!["up", name.as_str()];
    arguments.extend_from_slice(&flags);
    let refused = envctl(directory.path(), &arguments, &SHELL);
    refused.shows_none(&VALUES, "up (changed)");
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("env: API_TOKEN changed (a secret: values not shown)"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("rotated-secret"),
        "{}",
        refused.stderr
    );
}

/// Issue 39: well-known token shapes under harmless names — a JWT, `sk-…`, `ghp_…`, `hf_…`,
/// and shapes the issue does not name (an AWS access key id, `glpat-…`, `xoxb-…`,
/// `github_pat_…`) — are masked by `up --dry-run` (line and JSON) and referenced by every
/// export, never written; values that only begin alike (`sk-learn`) stay plain.
#[test]
fn token_shaped_values_are_secret_whatever_their_name() {
    const TOKENS: [(&str, &str); 8] = [
        (
            "SESSION",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("OPENAI", "sk-proj-4f9A8b7C6d5E4f3G2h1I0jKlMnOpQrSt"),
        ("GH", "ghp_0123456789abcdefghijABCDEFGHIJklmnop"),
        ("HF", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
        ("AWS_ID", "AKIAIOSFODNN7EXAMPLE"),
        ("GITLAB", "glpat-xxxxXXXX1234yyyyZZZZ"),
        ("SLACK_HOOK_ID", "xoxb-1234567890-abcdefghij"),
        (
            "FINE",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        ),
    ];
    let env: Vec<String> = TOKENS
        .iter()
        .map(|(key, value)| format!("{key} = \"{value}\""))
        .collect();
    let directory = project(
        "p",
        &format!(
            "image = \"busybox:1.36\"\nenv = {{ {}, LIBRARY = \"sk-learn\" }}\n",
            env.join(", ")
        ),
    );
    let shows_no_token = |what: &str, text: &str| {
        for (_, value) in TOKENS {
            assert!(!text.contains(value), "{what} shows `{value}`:\n{text}");
        }
    };
    let no_daemon = [("DOCKER_HOST", "unix:///nonexistent/envctl-secrets.sock")];
    let line = envctl(directory.path(), &["up", "p", "--dry-run"], &no_daemon);
    line.expect(0, "dry run");
    shows_no_token("up --dry-run", &format!("{}{}", line.stdout, line.stderr));
    assert!(line.stdout.contains("-e GH "), "{}", line.stdout);
    assert!(line.stdout.contains("LIBRARY=sk-learn"), "{}", line.stdout);
    let json = envctl(
        directory.path(),
        &["--json", "up", "p", "--dry-run"],
        &no_daemon,
    );
    json.expect(0, "dry run --json");
    shows_no_token("up --dry-run --json", &json.stdout);
    let document: Value = serde_json::from_str(&json.stdout).unwrap();
    let masked = document["masked_env"].as_array().unwrap();
    assert_eq!(masked.len(), TOKENS.len(), "{document}");
    for target in [
        "compose",
        "k8s",
        "devcontainer",
        "docker-run",
        "slurm",
        "pyxis",
        "apptainer",
        "edf",
    ] {
        let file = format!("out-{target}");
        let run = envctl(
            directory.path(),
            &["export", "p", "--to", target, "-o", &file],
            &[],
        );
        assert!(run.code == 0 || run.code == 1, "{target}: {}", run.stderr);
        shows_no_token(target, &format!("{}{}", run.stdout, run.stderr));
        if let Ok(text) = std::fs::read_to_string(directory.path().join(&file)) {
            shows_no_token(target, &text);
        }
    }
}

/// Issue 39: the hint of `exec TARGET -e KEY=VALUE CMD` (a flag after TARGET) moves the
/// flag before TARGET without repeating a secret value: `-e KEY`, the value from the shell.
#[test]
fn the_exec_hint_never_repeats_a_secret_value() {
    if !require_daemon() {
        return;
    }
    let profile = unique_name("secrets-exec-hint");
    let directory = project(&profile, &format!("image = \"{}\"\n", test_image()));
    let _guard = ContainerGuard::new(format!("envctl-{profile}"));
    envctl(directory.path(), &["up", &profile], &[]).expect(0, "up");
    for (word, shown) in [
        ("X=ghp_0123456789abcdefghijABCDEFGHIJklmnop", "-e X=\"$X\" "),
        ("API_TOKEN=supersecret", "-e API_TOKEN=\"$API_TOKEN\" "),
    ] {
        let (key, value) = word.split_once('=').unwrap();
        let script = format!("echo ${key}");
        let run = envctl(
            directory.path(),
            &["exec", &profile, "-e", word, "sh", "-c", &script],
            &[],
        );
        run.expect(2, "a flag after TARGET")
            .shows_none(&VALUES, "exec hint");
        assert!(!run.stderr.contains(value), "{}", run.stderr);
        assert!(run.stderr.contains(shown), "{}", run.stderr);
        // The hint, run by a shell that holds the value, gives the container that value.
        let hint = run
            .stderr
            .lines()
            .find(|line| line.trim_start().starts_with("hint:"))
            .unwrap();
        let command = hint.split('`').nth(1).unwrap();
        let binary = assert_cmd::cargo::cargo_bin("envctl");
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command.replacen("envctl", &binary.display().to_string(), 1));
        crate::support::cli::hermetic(&mut shell, directory.path());
        shell.env(key, value);
        let output = run_with_timeout(&mut shell, Duration::from_secs(60)).unwrap();
        assert!(output.status.success(), "{command}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), value);
    }
    // A plain value is repeated as it is.
    let run = envctl(
        directory.path(),
        &["exec", &profile, "-e", "MODE=fast", "true"],
        &[],
    );
    run.expect(2, "a flag after TARGET");
    assert!(run.stderr.contains("-e MODE=fast "), "{}", run.stderr);
}
