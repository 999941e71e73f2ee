//! Issue 39, items 4 to 9: ownership and occupancy believe the daemon's own facts over
//! labels. A forged GPU record, a bare `envctl.gpus` label, an image's
//! `NVIDIA_VISIBLE_DEVICES=all` under a default NVIDIA runtime, a live holder of the
//! daemon's placement lock with a slow create, a container squatting `envctl-PROFILE`
//! with forged owner labels, and `up P --name <Q's container>`: each reproduction, with
//! variants the issue did not name. The daemon's answers that a real daemon cannot be made
//! to give come from a fake daemon (`support::fake_daemon`); the rest runs on the real one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::placement::{Machine, envctl, project};
use crate::support::cli::{Envctl, Run};
use crate::support::docker::{
    self, ContainerGuard, docker_stdout, require_daemon, test_image, unique_name,
};
use crate::support::fake_daemon::{FakeDaemon, Reply, Request, standard};

/// Eight valid UUIDs of a daemon's record.
fn uuids() -> Vec<String> {
    (0..8)
        .map(|index| format!("GPU-7a0e3c55-91d4-4f2b-8c6e-1b2a3c4d5e0{index}"))
        .collect()
}

/// A container as the fake daemon lists and inspects it.
struct Listed {
    id: &'static str,
    name: &'static str,
    labels: Value,
    env: Vec<&'static str>,
    runtime: &'static str,
    device_requests: Value,
}

impl Listed {
    fn listed(&self) -> Value {
        json!({
            "Id": self.id, "Names": [format!("/{}", self.name)], "Image": "busybox:1",
            "ImageID": "sha256:0", "State": "created", "Status": "Created", "Created": 1,
            "Labels": self.labels, "Ports": []
        })
    }

    fn inspected(&self) -> Value {
        json!({
            "Id": self.id, "Name": format!("/{}", self.name), "Image": "sha256:0",
            "State": {"Status": "created", "Running": false, "ExitCode": 0},
            "Config": {"Image": "busybox:1", "Env": self.env, "Labels": self.labels},
            "HostConfig": {"Runtime": self.runtime, "DeviceRequests": self.device_requests},
            "Mounts": []
        })
    }
}

/// A fake daemon whose host is `name` (this machine's name: placed with the stand-in NVML;
/// another: placed by the record) with `default_runtime`, the image `busybox:1`, the
/// `containers` listed, and `route` answering first.
fn fake_daemon(
    name: &str,
    default_runtime: &str,
    containers: Vec<Listed>,
    route: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static,
) -> FakeDaemon {
    let info = json!({
        "Name": name, "OperatingSystem": "Debian", "OSType": "linux",
        "Runtimes": {"runc": {}, "nvidia": {}}, "DefaultRuntime": default_runtime, "NCPU": 2,
        "MemTotal": 1_000_000_000u64, "SecurityOptions": [], "CgroupDriver": "cgroupfs",
        "CgroupVersion": "1"
    })
    .to_string();
    let image = r#"{"Id":"sha256:0","RepoTags":["busybox:1"],"RepoDigests":[],"Config":{"Env":[],"Labels":{}}}"#;
    let listed = Value::Array(containers.iter().map(Listed::listed).collect()).to_string();
    FakeDaemon::start(move |request| {
        // The docker CLI asks `HEAD /_ping`, which has no body.
        if request.method == "HEAD" && request.route() == "/_ping" {
            return Some(Reply::Full {
                status: 200,
                body: Vec::new(),
            });
        }
        if let Some(reply) = standard(request).or_else(|| route(request)) {
            return Some(reply);
        }
        let route = request.route();
        if let Some(container) = containers
            .iter()
            .find(|container| route == format!("/containers/{}/json", container.id))
        {
            return Some(Reply::json(200, container.inspected().to_string()));
        }
        match (request.method.as_str(), route) {
            ("GET", "/info") => Some(Reply::json(200, info.clone())),
            ("GET", "/images/busybox:1/json" | "/images/sha256:0/json") => {
                Some(Reply::json(200, image))
            }
            ("GET", "/containers/json") => Some(Reply::json(200, listed.clone())),
            _ => None,
        }
    })
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The GPU indexes a dry run's placement chose.
fn chosen(run: &Run) -> Vec<u64> {
    assert_eq!(run.code, 0, "{run}");
    run.json()["placement"]["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no placement: {run}"))
        .iter()
        .map(|gpu| gpu["index"].as_u64().unwrap())
        .collect()
}

/// Item 9: `envctl.gpus` on a container the engine gave no GPU holds nothing, whatever it
/// claims (`all`, a count, devices) and whatever other envctl labels are forged beside it.
#[test]
fn a_bare_gpus_label_holds_no_gpu() {
    let label = |pairs: &[(&str, &str)]| {
        Value::Object(
            pairs
                .iter()
                .map(|(key, value)| (key.to_string(), Value::from(*value)))
                .collect(),
        )
    };
    let bare = |id, name, labels| Listed {
        id,
        name,
        labels,
        env: vec!["PATH=/bin"],
        runtime: "runc",
        device_requests: Value::Null,
    };
    let daemon = fake_daemon(
        &this_host(),
        "runc",
        vec![
            bare("a1", "squatter-all", label(&[("envctl.gpus", "all")])),
            bare(
                "a2",
                "squatter-forged",
                label(&[
                    ("envctl.gpus", "devices=0,1"),
                    ("envctl.profile", "train"),
                    ("envctl.uid", "0"),
                    ("envctl.run", "1-forged"),
                ]),
            ),
            bare("a3", "squatter-count", label(&[("envctl.gpus", "count=8")])),
        ],
        |_| None,
    );
    let machine = Machine::new("");
    let profile = unique_name("bare");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--dry-run", "--json", "--pull", "never"],
    );
    assert_eq!(chosen(&run), [0, 1], "{run}");
    assert!(!run.stdout.contains("squatter"), "{run}");
    // Each container was asked: its request decides, not its label.
    let requests = daemon.requests();
    for id in ["a1", "a2", "a3"] {
        assert!(
            requests
                .iter()
                .any(|request| request.contains(&format!("/containers/{id}/json"))),
            "{requests:#?}"
        );
    }
}

/// Item 4: another tool's container made from a CUDA image (`ENV
/// NVIDIA_VISIBLE_DEVICES=all`) under a default NVIDIA runtime holds every GPU; one that
/// names two holds those; under `runc`, or with `void`, it holds none. envctl's own bodies
/// say which GPUs they get, so an image's `all` never adds any.
#[test]
fn an_images_visible_devices_under_the_nvidia_runtime_holds_gpus() {
    let machine = Machine::new("");
    let (profile, plain) = (unique_name("env"), unique_name("plain"));
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n"), (&plain, "")]);
    let cuda = |env: Vec<&'static str>, runtime: &'static str| Listed {
        id: "c1",
        name: "cuda-notebook",
        labels: json!({}),
        env,
        runtime,
        device_requests: Value::Null,
    };
    let dry_run = |containers: Vec<Listed>, default_runtime: &str| {
        let daemon = fake_daemon(&this_host(), default_runtime, containers, |_| None);
        envctl(
            folder.path(),
            &machine,
            &daemon.host(),
            &["up", &profile, "--dry-run", "--json", "--pull", "never"],
        )
    };
    // The issue's case: every GPU is held, and the holder is named.
    let all = dry_run(
        vec![cuda(vec!["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"], "")],
        "nvidia",
    );
    assert_eq!(all.code, 1, "{all}");
    assert!(all.stderr.contains("0 free"), "{all}");
    assert!(all.stderr.contains("cuda-notebook"), "{all}");
    // Its own runtime, named: the same.
    let own = dry_run(
        vec![cuda(vec!["NVIDIA_VISIBLE_DEVICES=all"], "nvidia")],
        "runc",
    );
    assert_eq!(own.code, 1, "{own}");
    assert!(own.stderr.contains("cuda-notebook"), "{own}");
    // Two GPUs named in the environment: those two are held.
    let named = dry_run(vec![cuda(vec!["NVIDIA_VISIBLE_DEVICES=0,1"], "")], "nvidia");
    assert_eq!(chosen(&named), [2, 3], "{named}");
    // Under runc the variable gives nothing; `void` (last, as envctl writes it) neither.
    let runc = dry_run(
        vec![cuda(vec!["NVIDIA_VISIBLE_DEVICES=all"], "runc")],
        "nvidia",
    );
    assert_eq!(chosen(&runc), [0, 1], "{runc}");
    let void = dry_run(
        vec![cuda(
            vec!["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=void"],
            "",
        )],
        "nvidia",
    );
    assert_eq!(chosen(&void), [0, 1], "{void}");
}

/// Item 4, envctl's own containers: made from an image with `ENV
/// NVIDIA_VISIBLE_DEVICES=all` (every CUDA image), a profile without GPUs gets `void` after
/// it, so the NVIDIA runtime (where it is the daemon's default) gives it none; a profile
/// that sets the variable itself keeps its value (the policy counts it); an image that
/// sets `void` is left as it is.
#[test]
fn a_cuda_images_visible_devices_never_reach_a_container_without_gpus() {
    if !require_daemon() {
        return;
    }
    let cuda_like = format!("envctl-test/cuda-like:{}", unique_name("tag"));
    let void_image = format!("envctl-test/void-like:{}", unique_name("tag"));
    let _guards = [
        docker::ImageGuard::new(cuda_like.as_str()),
        docker::ImageGuard::new(void_image.as_str()),
    ];
    for (tag, value) in [(&cuda_like, "all"), (&void_image, "void")] {
        let dockerfile = format!(
            "FROM {}\nENV NVIDIA_VISIBLE_DEVICES={value}\nLABEL envctl.test=1\n",
            test_image()
        );
        let mut build = std::process::Command::new("docker")
            .args(["build", "-q", "-t", tag.as_str(), "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        build
            .stdin
            .take()
            .unwrap()
            .write_all(dockerfile.as_bytes())
            .unwrap();
        let built = build.wait_with_output().unwrap();
        assert!(built.status.success(), "{built:?}");
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let cases = [
        (&cuda_like, "", "NVIDIA_VISIBLE_DEVICES=void"),
        (
            &cuda_like,
            "env = { NVIDIA_VISIBLE_DEVICES = \"none\" }\n",
            "NVIDIA_VISIBLE_DEVICES=none",
        ),
        (&void_image, "", "NVIDIA_VISIBLE_DEVICES=void"),
    ];
    for (image, rest, last) in cases {
        let profile = unique_name("cudalike");
        write_profile(folder, &profile, image, rest);
        let name = format!("envctl-{profile}");
        let _guard = ContainerGuard::new(name.as_str());
        let up = run_in(folder, &["up", &profile]);
        assert_eq!(up.code, 0, "{up}");
        let env: Vec<String> = serde_json::from_str(&docker_stdout([
            "inspect",
            "--format",
            "{{json .Config.Env}}",
            name.as_str(),
        ]))
        .unwrap();
        let values: Vec<&String> = env
            .iter()
            .filter(|pair| pair.starts_with("NVIDIA_VISIBLE_DEVICES="))
            .collect();
        assert_eq!(
            values.last().map(|value| value.as_str()),
            Some(last),
            "{env:?}"
        );
        // The image's `void` is not repeated: nothing was added.
        if image == &void_image {
            assert_eq!(values.len(), 1, "{env:?}");
        }
    }
}

/// A fake daemon of another machine (`gpu-server`) whose GPU record is `record` (written
/// on `recorded_on`), and whose placement lock anyone may take.
fn far_daemon(record: String, recorded_on: Option<&'static str>) -> FakeDaemon {
    let mut labels = json!({ "envctl.gpu-record": record });
    if let Some(host) = recorded_on {
        labels["envctl.gpu-record.host"] = Value::from(host);
    }
    let volume = json!({
        "Name": "envctl-gpus", "Driver": "local", "Mountpoint": "/x", "Labels": labels,
        "Scope": "local", "Options": {}
    })
    .to_string();
    fake_daemon("gpu-server", "runc", Vec::new(), move |request| {
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create")
                if request.target.contains("envctl-gpu-placement-lock") =>
            {
                Some(Reply::json(201, r#"{"Id":"lock0","Warnings":[]}"#))
            }
            ("DELETE", "/containers/lock0" | "/volumes/envctl-gpus") => Some(Reply::no_content()),
            ("GET", "/volumes/envctl-gpus") => Some(Reply::json(200, volume.clone())),
            _ => None,
        }
    })
}

/// envctl with no NVML of its own (the daemon is another machine's) and a lock file of
/// the test's.
fn envctl_far(folder: &Path, host: &str, arguments: &[&str]) -> Run {
    Envctl::in_folder(folder)
        .env("ENVCTL_NVML_LIBRARY", folder.join("no-nvml-here.so"))
        .env("ENVCTL_GPU_LOCK", folder.join("gpus.lock"))
        .daemon(host)
        .timeout(Duration::from_secs(300))
        .args(arguments)
        .run()
}

/// Item 5: a record listing one UUID under every index, a UUID that is a shell command, a
/// record written on another host than the daemon's, one naming no host, an index twice:
/// refused, naming the volume, with a command that removes it (run here against the fake
/// daemon); no container is made and the lock is given back.
#[test]
fn a_forged_gpu_record_is_refused_naming_the_volume() {
    let valid = uuids();
    let listing = |uuids: &[String]| {
        uuids
            .iter()
            .enumerate()
            .map(|(index, uuid)| format!("{index}={uuid}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let forged = [
        (
            listing(&vec![valid[0].clone(); 8]),
            Some("gpu-server"),
            "the same UUID",
        ),
        (
            "0=GPU-$(id),1=GPU-`id`".to_string(),
            Some("gpu-server"),
            "is not a GPU UUID",
        ),
        (
            listing(&valid),
            Some("other-server"),
            "written on \"other-server\", but the daemon's host is \"gpu-server\"",
        ),
        (listing(&valid), None, "names no host"),
        (
            format!("{},0={}", listing(&valid[..2]), valid[5]),
            Some("gpu-server"),
            "index 0 twice",
        ),
    ];
    let profile = unique_name("forged");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    for (record, host, why) in forged {
        let daemon = far_daemon(record.clone(), host);
        let run = envctl_far(
            folder.path(),
            &daemon.host(),
            &["up", &profile, "--force", "--pull", "never"],
        );
        assert_eq!(run.code, 1, "{record}: {run}");
        assert!(
            run.stderr.contains(
                "the GPU record of the daemon on gpu-server (volume `envctl-gpus`) is not believed"
            ),
            "{record}: {run}"
        );
        assert!(run.stderr.contains(why), "{record}: {run}");
        let requests = daemon.requests();
        assert!(
            !requests
                .iter()
                .any(|request| request.contains(&format!("name=envctl-{profile}"))),
            "nothing is created: {requests:#?}"
        );
        assert!(
            requests
                .iter()
                .any(|request| request.starts_with("DELETE") && request.contains("lock0")),
            "the lock is given back: {requests:#?}"
        );
        // The hint is a command: it removes the record on that daemon.
        let hint = run
            .stderr
            .split("remove it (`")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("no command in the hint: {run}"))
            .to_string();
        assert!(hint.contains("volume rm envctl-gpus"), "{hint}");
        let status = std::process::Command::new("sh")
            .args(["-c", &hint])
            .output()
            .unwrap();
        assert!(status.status.success(), "{hint}: {status:?}");
        assert!(
            daemon
                .requests()
                .iter()
                .any(|request| request.starts_with("DELETE")
                    && request.contains("/volumes/envctl-gpus")),
            "{hint}"
        );
    }
    // The record as an `up` on that host writes it is believed.
    let daemon = far_daemon(listing(&valid), Some("gpu-server"));
    let run = envctl_far(
        folder.path(),
        &daemon.host(),
        &["up", &profile, "--dry-run", "--json", "--pull", "never"],
    );
    assert!(!run.stderr.contains("not believed"), "{run}");
}

/// Item 6: a live holder of the daemon's lock whose create takes 25 s (a loaded daemon on
/// fuse-overlayfs) keeps it: the waiter waits, says so, and never removes it; it places
/// once the holder is done.
#[test]
fn a_live_holders_placement_lock_is_never_taken() {
    const HOLDING: Duration = Duration::from_secs(25);
    let started: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let record = uuids()
        .iter()
        .enumerate()
        .map(|(index, uuid)| format!("{index}={uuid}"))
        .collect::<Vec<_>>()
        .join(",");
    let volume = json!({
        "Name": "envctl-gpus", "Driver": "local", "Mountpoint": "/x", "Scope": "local",
        "Options": {}, "Labels": {"envctl.gpu-record": record, "envctl.gpu-record.host": "gpu-server"}
    })
    .to_string();
    let clock = started.clone();
    let daemon = fake_daemon("gpu-server", "runc", Vec::new(), move |request| {
        let held = {
            let mut since = clock.lock().unwrap();
            since.get_or_insert_with(Instant::now).elapsed() < HOLDING
        };
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create")
                if request.target.contains("envctl-gpu-placement-lock") =>
            {
                Some(if held {
                    Reply::json(
                        409,
                        r#"{"message":"Conflict. The container name \"/envctl-gpu-placement-lock\" is already in use by container \"live0\". You have to remove (or rename) that container to be able to reuse that name."}"#,
                    )
                } else {
                    Reply::json(201, r#"{"Id":"lock1","Warnings":[]}"#)
                })
            }
            ("GET", "/containers/envctl-gpu-placement-lock/json") if held => Some(Reply::json(
                200,
                r#"{"Id":"live0","Name":"/envctl-gpu-placement-lock","Image":"sha256:0","State":{"Status":"created","Running":false,"ExitCode":0},"Config":{"Image":"busybox:1","Labels":{"envctl.placement-lock":"1-live","envctl.placement-lock.holder":"alice@laptop (pid 1)"}},"HostConfig":{},"Mounts":[]}"#,
            )),
            ("DELETE", "/containers/lock1" | "/containers/live0") => Some(Reply::no_content()),
            ("GET", "/volumes/envctl-gpus") => Some(Reply::json(200, volume.clone())),
            // The create of the user's container: refused, which ends the run once placed.
            ("POST", "/containers/create") => Some(Reply::json(
                500,
                r#"{"message":"test: the create is refused here"}"#,
            )),
            _ => None,
        }
    });
    let profile = unique_name("live");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let began = Instant::now();
    let run = envctl_far(
        folder.path(),
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    let requests = daemon.requests();
    assert!(
        !requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("live0")),
        "a live holder's lock was removed: {run}\n{requests:#?}"
    );
    assert!(
        run.stderr
            .contains("waiting for the daemon's GPU placement lock (held by alice@laptop (pid 1)"),
        "{run}"
    );
    // It took the lock once the holder was done, placed, and tried its create.
    assert!(began.elapsed() >= HOLDING, "{run}");
    assert!(
        requests
            .iter()
            .any(|request| request.contains(&format!("name=envctl-{profile}"))),
        "{run}\n{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("lock1")),
        "its own lock is given back: {requests:#?}"
    );
}

/// A profile file of `image` in `folder/envctl/NAME.toml`.
fn write_profile(folder: &Path, name: &str, image: &str, rest: &str) {
    std::fs::create_dir_all(folder.join("envctl")).unwrap();
    std::fs::write(
        folder.join(format!("envctl/{name}.toml")),
        format!("image = \"{image}\"\ncommand = [\"sleep\", \"300\"]\n{rest}"),
    )
    .unwrap();
}

fn run_in(folder: &Path, arguments: &[&str]) -> Run {
    Envctl::in_folder(folder).args(arguments).run()
}

fn id_of(name: &str) -> String {
    docker_stdout(["inspect", "--format", "{{.Id}}", name])
        .trim()
        .to_string()
}

/// The command between the backticks that follow `after` in `text`.
fn quoted_after(text: &str, after: &str) -> String {
    text.split(after)
        .nth(1)
        .and_then(|rest| rest.split('`').nth(1))
        .unwrap_or_else(|| panic!("no `{after}` command in: {text}"))
        .to_string()
}

/// Item 8: `up P --name <Q's container>` names Q, never calls it an earlier P, and
/// `--recreate` leaves it; the hint keeps `--name` and works. A variant: a changed profile
/// under a name of the user's own choice is recreated by the hint, which keeps `--name`.
#[test]
fn another_profiles_container_is_never_replaced_and_hints_keep_the_name() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let (p, q) = (unique_name("pee"), unique_name("queue"));
    let image = test_image();
    write_profile(folder, &p, &image, "");
    write_profile(folder, &q, &image, "");
    let q_container = format!("envctl-{q}");
    let _q_guard = ContainerGuard::new(q_container.as_str());
    let made = run_in(folder, &["up", &q]);
    assert_eq!(made.code, 0, "{made}");
    let id = id_of(&q_container);
    for extra in [&[][..], &["--recreate"][..]] {
        let mut arguments = vec!["up", p.as_str(), "--name", q_container.as_str()];
        arguments.extend(extra);
        let run = run_in(folder, &arguments);
        assert_eq!(run.code, 1, "{run}");
        assert!(
            run.stderr.contains(&format!(
                "container `{q_container}` was made from profile `{q}`, not `{p}`"
            )),
            "{run}"
        );
        assert!(!run.stderr.contains("earlier version"), "{run}");
        assert_eq!(id_of(&q_container), id, "Q's container stays");
    }
    // The hint: P gets a container of its own, under a name given with `--name`.
    let run = run_in(folder, &["up", &p, "--name", &q_container]);
    let hint = quoted_after(&run.stderr, "a container of its own:");
    assert!(hint.contains("--name"), "{hint}");
    let own = format!("{q_container}-{p}");
    let _own_guard = ContainerGuard::new(own.as_str());
    let words: Vec<&str> = hint.split_whitespace().skip(1).collect();
    let followed = run_in(folder, &words);
    assert_eq!(followed.code, 0, "{hint}: {followed}");
    assert_eq!(
        docker_stdout([
            "inspect",
            "--format",
            "{{index .Config.Labels \"envctl.profile\"}}",
            &own
        ])
        .trim(),
        p
    );

    // A changed profile under a chosen name: the hint recreates that container.
    let chosen = unique_name("chosen");
    let _chosen_guard = ContainerGuard::new(chosen.as_str());
    assert_eq!(run_in(folder, &["up", &p, "--name", &chosen]).code, 0);
    write_profile(folder, &p, &image, "env = { CHANGED = \"1\" }\n");
    let changed = run_in(folder, &["up", &p, "--name", &chosen]);
    assert_eq!(changed.code, 1, "{changed}");
    let hint = quoted_after(&changed.stderr, "recreate it with");
    assert!(
        hint.contains(&format!("--name {chosen}")),
        "the hint acts on the same container: {hint}"
    );
    let words: Vec<&str> = hint.split_whitespace().skip(1).collect();
    let recreated = run_in(folder, &words);
    assert_eq!(recreated.code, 0, "{hint}: {recreated}");
    assert!(
        docker_stdout(["inspect", "--format", "{{json .Config.Env}}", &chosen])
            .contains("CHANGED=1")
    );
}

/// Item 7: a container squatting `envctl-P` with forged owner labels and P's current
/// config hash, made from another image, is named, not adopted: `up` does not call it
/// running, `exec P` does not run in it, `ps` does not call it current. Variants: the hash
/// forged in `envctl.profile-hash` instead, and the impostor stopped (`up` would start it).
#[test]
fn a_container_squatting_a_profiles_name_with_forged_labels_is_named_not_adopted() {
    if !require_daemon() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path();
    let image = test_image();
    let impostor_image = format!("envctl-test/impostor:{}", unique_name("tag"));
    docker_stdout(["tag", image.as_str(), impostor_image.as_str()]);
    let _image_guard = docker::ImageGuard::new(impostor_image.as_str());
    let uid = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    for (hash_label, start) in [
        ("envctl.config-hash", true),
        ("envctl.profile-hash", true),
        ("envctl.config-hash", false),
    ] {
        let profile = unique_name("squat");
        write_profile(folder, &profile, &image, "");
        let plan = run_in(folder, &["up", &profile, "--dry-run", "--json"]);
        assert_eq!(plan.code, 0, "{plan}");
        let hash = plan.json()["body"]["Labels"]["envctl.config-hash"]
            .as_str()
            .unwrap()
            .to_string();
        let name = format!("envctl-{profile}");
        let _guard = ContainerGuard::new(name.as_str());
        let forged = [
            format!("envctl.profile={profile}"),
            format!("{hash_label}={hash}"),
            format!("envctl.uid={uid}"),
            "envctl.user=root".to_string(),
            "envctl.run=1-forged".to_string(),
            docker::TEST_LABEL.to_string(),
        ];
        let mut arguments = vec!["create".to_string(), "--name".into(), name.clone()];
        for label in &forged {
            arguments.push("--label".into());
            arguments.push(label.clone());
        }
        arguments.extend([impostor_image.clone(), "sleep".into(), "300".into()]);
        docker_stdout(&arguments);
        if start {
            docker_stdout(["start", name.as_str()]);
        }
        let id = id_of(&name);

        let up = run_in(folder, &["up", &profile]);
        assert_eq!(up.code, 1, "{hash_label}: {up}");
        assert!(
            up.stderr.contains(&format!(
                "container `{name}` claims to be your `{profile}` container"
            )) && up.stderr.contains(&impostor_image),
            "{up}"
        );
        assert!(!up.stderr.contains("already running"), "{up}");
        assert_eq!(id_of(&name), id, "never replaced");
        let running = docker_stdout(["inspect", "--format", "{{.State.Running}}", &name]);
        assert_eq!(running.trim(), start.to_string(), "never started: {up}");
        // The hint's first command works.
        let hint = quoted_after(&up.stderr, "hint:");
        assert!(hint.starts_with("docker inspect"), "{hint}");
        let words: Vec<&str> = hint.split_whitespace().collect();
        docker_stdout(&words[1..]);

        if start {
            let exec = run_in(folder, &["exec", &profile, "--", "true"]);
            assert_eq!(exec.code, 1, "{exec}");
            assert!(exec.stderr.contains("claims to be your"), "{exec}");
            // Nor as the folder's obvious container (no TARGET).
            let obvious = run_in(folder, &["exec", "--", "true"]);
            assert_eq!(obvious.code, 1, "{obvious}");
            assert!(obvious.stderr.contains("claims to be your"), "{obvious}");
        }
        let ps = run_in(folder, &["ps", "-a", "--json"]);
        assert_eq!(ps.code, 0, "{ps}");
        let report = ps.json();
        let row = report["containers"]
            .as_array()
            .or_else(|| report.as_array())
            .into_iter()
            .flatten()
            .find(|row| row["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} not listed: {ps}"))
            .clone();
        assert_ne!(row["drift"], "current", "{row:#}");
    }
}

/// Low item: `down --rm` racing `up` removes the stopped container `up` is starting; the
/// daemon still shows it as being removed. `up` says this run made nothing, never "was
/// created but could not start".
#[test]
fn a_container_removed_while_up_starts_it_is_not_called_created() {
    let machine = Machine::new("");
    let profile = unique_name("race");
    let folder = project("busybox:1", &[(&profile, "")]);
    let planner = fake_daemon(&this_host(), "runc", Vec::new(), |_| None);
    let plan = envctl(
        folder.path(),
        &machine,
        &planner.host(),
        &["up", &profile, "--dry-run", "--json", "--pull", "never"],
    );
    assert_eq!(plan.code, 0, "{plan}");
    let hash = plan.json()["body"]["Labels"]["envctl.config-hash"]
        .as_str()
        .unwrap()
        .to_string();
    let uid = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let container = |state: &str| {
        json!({
            "Id": "c9", "Name": format!("/envctl-{profile}"), "Image": "sha256:0",
            "State": {"Status": state, "Running": false, "ExitCode": 0},
            // What envctl makes of the profile, as the daemon reports it: its labels are
            // believed only where the daemon's facts agree (item 7).
            "Config": {"Image": "busybox:1", "Cmd": ["sleep", "infinity"], "Env": [], "Labels": {
                "envctl.profile": profile, "envctl.config-hash": hash, "envctl.uid": uid,
                "envctl.user": "root", "envctl.run": "1-earlier"
            }},
            "HostConfig": {"Init": true, "RestartPolicy": {"Name": "no"}}, "Mounts": []
        })
        .to_string()
    };
    let (stopped, removing) = (container("exited"), container("removing"));
    let by_name = format!("/containers/envctl-{profile}/json");
    let daemon = fake_daemon(&this_host(), "runc", Vec::new(), move |request| {
        match (request.method.as_str(), request.route()) {
            ("GET", route) if route == by_name => Some(Reply::json(200, stopped.clone())),
            ("POST", "/containers/c9/start") => {
                Some(Reply::json(404, r#"{"message":"No such container: c9"}"#))
            }
            ("GET", "/containers/c9/json") => Some(Reply::json(200, removing.clone())),
            _ => None,
        }
    });
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stderr.contains("this run made nothing"), "{run}");
    assert!(!run.stderr.contains("could not start"), "{run}");
}
