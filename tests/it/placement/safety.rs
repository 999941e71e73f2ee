//! Placement hurts nothing: a placed up Docker cannot start leaves nothing, a bad cache, a bad
//! flag and a planted link do no harm, and lock and record names taken by someone else's
//! container or volume are named and left as they are.

use super::*;

#[test]
fn a_placed_up_that_docker_cannot_start_leaves_nothing() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    // Docker without an NVIDIA runtime creates the placed container and refuses to start
    // it: `up` says where it placed it, then why it failed, and removes what it made.
    let machine = Machine::new("");
    let name = unique_name("placed");
    let folder = project(&docker::test_image(), &[(&name, "gpus = 2\n")]);
    let container = format!("envctl-{name}");
    let _guard = docker::ContainerGuard::new(container.clone());
    let up = envctl(folder.path(), &machine, "", &["up", &name, "--force"]);
    assert_eq!(up.code, 1, "{up}");
    assert!(up.stderr.contains("placement: GPUs "), "{up}");
    assert!(up.stderr.contains("could not select device driver"), "{up}");
    assert!(!docker::container_exists(&container), "{up}");
}

#[test]
fn a_bad_cache_a_bad_flag_and_a_planted_link_hurt_nothing() {
    if !docker::require_daemon() {
        return;
    }
    let _turn = turn();
    let machine = Machine::new("");
    let folder = project(&docker::test_image(), &[("two", "gpus = 2\n")]);
    // `--gpus` is read as `docker run --gpus` reads it; anything else is invalid input.
    let bad_flag = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force", "--gpus", "two gpus"],
    );
    assert_eq!(bad_flag.code, 2, "{bad_flag}");
    assert!(bad_flag.stderr.contains("--gpus"), "{bad_flag}");
    // A cache that is not JSON is said and ignored: the holders are the engine's.
    let cache = folder.path().join("home/.cache/envctl");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("gpu-requests.json"), "not json {").unwrap();
    let holders = Holders::create(&["device=0"]);
    let run = quietly(
        "",
        &|name| holders.names.iter().any(|own| own == name),
        || {
            envctl(
                folder.path(),
                &machine,
                "",
                &["up", "two", "--dry-run", "--force", "--json"],
            )
        },
    );
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stderr.contains("ignoring the GPU request cache"),
        "{run}"
    );
    assert_eq!(chosen(&run.json()), [1, 2], "{run}");
    // Rewritten by envctl, now JSON with the holder's request.
    let written = std::fs::read_to_string(cache.join("gpu-requests.json")).unwrap();
    assert!(written.contains("\"devices\":[\"0\"]"), "{written}");
    // A link planted in its place is never written through.
    let victim = folder.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(cache.join("gpu-requests.json")).unwrap();
    std::os::unix::fs::symlink(&victim, cache.join("gpu-requests.json")).unwrap();
    let _more = Holders::create(&["device=3"]);
    let linked = envctl(
        folder.path(),
        &machine,
        "",
        &["up", "two", "--dry-run", "--force"],
    );
    assert_eq!(linked.code, 0, "{linked}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "keep",
        "{linked}"
    );
}

/// A container of the daemon lock's name that envctl did not make (no
/// `envctl.placement-lock` label: someone's own) is never broken as a dead holder's lock:
/// `up` stops at once naming it, and nothing is removed. A fake daemon answers, so no
/// other test's placement meets the planted name.
#[test]
fn a_lock_name_taken_by_someone_elses_container_is_named_never_removed() {
    use crate::support::fake_daemon::Reply;
    let daemon = fake_daemon_of_this_host(|request| {
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create") => Some(Reply::json(
                409,
                r#"{"message":"Conflict. The container name \"/envctl-gpu-placement-lock\" is already in use"}"#,
            )),
            ("GET", "/containers/envctl-gpu-placement-lock/json") => Some(Reply::json(
                200,
                r#"{"Id":"planted0","Name":"/envctl-gpu-placement-lock","Image":"sha256:0","State":{"Status":"created","Running":false,"ExitCode":0},"Config":{"Image":"busybox:1","Labels":{"com.example.owner":"mallory"}},"HostConfig":{},"Mounts":[]}"#,
            )),
            _ => None,
        }
    });
    let _turn = turn();
    let machine = Machine::new("");
    let profile = unique_name("planted");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .contains("a container named `envctl-gpu-placement-lock` that envctl did not make"),
        "{run}"
    );
    let requests = daemon.requests();
    assert!(
        !requests.iter().any(|request| request.starts_with("DELETE")),
        "{requests:#?}"
    );
}

/// A volume named as the daemon's GPU record that envctl did not make (no
/// `envctl.gpu-record` label) is someone's: an `up` that places on this host says so and
/// never removes it to write its record.
#[test]
fn a_record_name_taken_by_someone_elses_volume_is_left_as_it_is() {
    use crate::support::fake_daemon::Reply;
    let daemon = fake_daemon_of_this_host(|request| {
        match (request.method.as_str(), request.route()) {
            ("POST", "/containers/create")
                if request.target.contains("envctl-gpu-placement-lock") =>
            {
                Some(Reply::json(201, r#"{"Id":"lock0","Warnings":[]}"#))
            }
            ("DELETE", "/containers/lock0") => Some(Reply::no_content()),
            ("GET", "/volumes/envctl-gpus") => Some(Reply::json(
                200,
                r#"{"Name":"envctl-gpus","Driver":"local","Mountpoint":"/x","Labels":{"com.example.owner":"mallory"},"Scope":"local","Options":{}}"#,
            )),
            _ => None,
        }
    });
    let _turn = turn();
    let machine = Machine::new("");
    let profile = unique_name("record");
    let folder = project("busybox:1", &[(&profile, "gpus = 2\n")]);
    let run = envctl(
        folder.path(),
        &machine,
        &daemon.host(),
        &["up", &profile, "--force", "--pull", "never"],
    );
    assert!(
        run.stderr
            .contains("the volume envctl-gpus on this daemon is not envctl's GPU record"),
        "{run}"
    );
    let requests = daemon.requests();
    assert!(
        !requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("/volumes/")),
        "{requests:#?}"
    );
    // The lock it took is released whatever became of the rest.
    assert!(
        requests
            .iter()
            .any(|request| request.starts_with("DELETE") && request.contains("/containers/lock0")),
        "{requests:#?}"
    );
}

/// A fake daemon that names its host as this machine (so `up` places with the stand-in
/// NVML under both locks), has the image `busybox:1` and no container; `route` answers
/// first.
fn fake_daemon_of_this_host(
    route: impl Fn(&crate::support::fake_daemon::Request) -> Option<crate::support::fake_daemon::Reply>
    + Send
    + Sync
    + 'static,
) -> crate::support::fake_daemon::FakeDaemon {
    use crate::support::fake_daemon::{FakeDaemon, Reply, standard};
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let info = format!(
        r#"{{"Name":"{hostname}","OperatingSystem":"Debian","OSType":"linux","Runtimes":{{"runc":{{}}}},"DefaultRuntime":"runc","NCPU":2,"MemTotal":1000000000,"SecurityOptions":[],"CgroupDriver":"cgroupfs","CgroupVersion":"1"}}"#
    );
    let image = r#"{"Id":"sha256:0","RepoTags":["busybox:1"],"RepoDigests":[],"Config":{"Env":[],"Labels":{}}}"#;
    FakeDaemon::start(move |request| {
        if let Some(reply) = standard(request).or_else(|| route(request)) {
            return Some(reply);
        }
        match (request.method.as_str(), request.route()) {
            ("GET", "/info") => Some(Reply::json(200, info.clone())),
            ("GET", "/images/busybox:1/json" | "/images/sha256:0/json") => {
                Some(Reply::json(200, image))
            }
            ("GET", "/containers/json") => Some(Reply::json(200, "[]")),
            _ => None,
        }
    })
}
