//! GPU preflight: a GPU profile without the NVIDIA runtime refused (`--force` leaving nothing),
//! optional GPUs starting without them and warning, and a pulled image's CUDA libraries judged
//! before the create.

use super::*;

/// Whether the daemon has an NVIDIA runtime (then the GPU scenarios below do not apply).
/// Whether the daemon lacks an NVIDIA runtime, which the GPU-refusal scenarios need; says
/// so loudly when it has one (the scenario then cannot happen here).
fn daemon_without_nvidia_runtime() -> bool {
    if !docker_stdout(["info", "--format", "{{json .Runtimes}}"]).contains("nvidia") {
        return true;
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED (the daemon has an NVIDIA runtime): {}",
        crate::support::docker::current_test_name()
    );
    false
}

#[test]
fn a_gpu_profile_without_nvidia_runtime_is_refused_and_force_leaves_nothing() {
    if !require_daemon() {
        return;
    }
    if !daemon_without_nvidia_runtime() {
        return;
    }
    let scenario = Scenario::new("up-gpu");
    scenario.write_profile(&test_image(), "gpus = \"all\"\n");
    let refused = scenario.up(&[]);
    refused.expect_code(1, "preflight of a GPU profile without NVIDIA runtime");
    assert!(refused.stderr.contains("NVIDIA runtime"), "{refused}");
    // Not offered: the forced start below fails as the finding says it would.
    assert!(!refused.stderr.contains("--force"), "{refused}");
    // `up` creates (never starts) the container while the preflight runs; a refusal
    // removes it again, without talk about a container the user never asked for.
    assert_eq!(
        scenario.containers(),
        0,
        "a refused preflight leaves nothing"
    );
    assert!(!refused.stderr.contains("removed"), "{refused}");

    let forced = scenario.up(&["--force"]);
    forced.expect_code(1, "up --force of a GPU profile without NVIDIA runtime");
    assert!(
        forced.stderr.contains("could not select device driver"),
        "{forced}"
    );
    assert!(
        forced.stderr.contains("NVIDIA Container Toolkit"),
        "{forced}"
    );
    assert!(
        forced
            .stderr
            .contains("removed the container this run created but did not start"),
        "{forced}"
    );
    assert_eq!(
        scenario.containers(),
        0,
        "the half-made container must be removed\n{forced}"
    );
}

#[test]
fn optional_gpus_start_without_them_when_the_daemon_cannot_hand_them_over() {
    if !require_daemon() {
        return;
    }
    if !daemon_without_nvidia_runtime() {
        return;
    }
    let scenario = Scenario::new("up-optional");
    scenario.write_profile(&test_image(), "gpus = \"optional\"\n");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("healthy-8x-h100.conf");
    let init_log = scenario.path().join("nvml-inits.log");
    let environment = [
        ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_INIT_LOG", init_log.to_str().unwrap()),
    ];
    let run = scenario.run_with(&["up", &scenario.profile], &environment);
    run.expect_code(
        0,
        "up of a gpus = \"optional\" profile on a GPU host without runtime",
    );
    assert!(
        run.stderr.contains("cannot hand them to containers")
            && run.stderr.contains("starts without them"),
        "{run}"
    );
    assert!(scenario.is_running(), "{run}");
    let requests = &scenario.inspect()["HostConfig"]["DeviceRequests"];
    assert!(
        requests.is_null() || requests.as_array().is_some_and(Vec::is_empty),
        "no GPU request when the daemon cannot serve it: {requests}"
    );
    let inits = std::fs::read_to_string(&init_log).unwrap();
    assert_eq!(
        inits.lines().count(),
        1,
        "NVML is initialised once per run (the body and the preflight share it): {inits:?}"
    );
}

/// Issue 13, item 3: `gpus = "optional"` says so whenever the container runs without GPUs
/// (here: no NVML, so no GPU); before, nothing was printed.
#[test]
fn optional_gpus_warn_when_the_container_runs_without_them() {
    if !require_daemon() {
        return;
    }
    let scenario = Scenario::new("up-optional");
    scenario.write_profile(&test_image(), "gpus = \"optional\"\n");
    let _guard = ContainerGuard::new(scenario.container.clone());
    let run = scenario.run_with(
        &["up", scenario.profile.as_str()],
        &[("ENVCTL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")],
    );
    run.expect_code(0, "up");
    assert!(
        run.stderr.contains("`gpus = \"optional\"`: NVML sees no GPU on this host, so the container runs without GPUs"),
        "{}",
        run.stderr
    );
    let requests = docker_stdout([
        "inspect",
        "--format",
        "{{json .HostConfig.DeviceRequests}}",
        scenario.container.as_str(),
    ]);
    assert_eq!(requests.trim(), "null", "no GPU request was sent");
}

/// Issue 41: an image built FROM the test image with bitsandbytes 0.50.2's real CUDA
/// `library` (`tests/corpus/fatbin`) in site-packages, pushed to `registry` as `repo:v1`
/// and removed here, so that `up` must pull it. None (the test skipped, said) when the
/// corpus is not fetched.
fn push_cuda_library_image(registry: &Registry, repo: &str, library: &str) -> Option<String> {
    let Some(folder) = crate::fatbin_corpus::bitsandbytes_folder() else {
        crate::support::docker::skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            &crate::support::docker::current_test_name(),
            "hint: bash tests/corpus/fatbin/fetch.sh",
        );
        return None;
    };
    let reference = registry.reference(repo, "v1");
    let built = crate::support::cuda_images::ImageBuild::new()
        .package(
            crate::fatbin_corpus::SITE,
            ("bitsandbytes", "0.50.2"),
            &folder,
            &[library],
        )
        .build(&reference);
    let pushed = docker_output(["push", reference.as_str()]);
    assert!(
        pushed.status.success(),
        "docker push {reference}: {}\n{}",
        String::from_utf8_lossy(&pushed.stderr),
        registry.log()
    );
    drop(built);
    assert!(!image_exists(&reference));
    Some(reference)
}

/// The files of the library-scan cache under `cache` (`<id>.json`, per image id).
fn cached_scans(cache: &Path) -> Vec<String> {
    let folder = cache.join("envctl/image-libraries");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The cache file's name of the local image `reference` (`<digest of its id>.json`).
fn cache_name_of(reference: &str) -> String {
    let id = crate::support::docker::image_id(reference).unwrap();
    format!("{}.json", id.trim_start_matches("sha256:"))
}

/// Issue 41: an image that is only in the registry is read once `up` has pulled it, before
/// anything is created, and judged as the preflight judges a local image: bitsandbytes'
/// CUDA 11.8 build (sm_60 … sm_90, no PTX) on the stand-in NVML's RTX 5090 (sm_120) is
/// doctor's own `gpu.library-arch` failure, said after the pull and before the create —
/// here with `--force` (this daemon has no NVIDIA runtime, which the preflight refuses
/// first; the refusal without `--force` is `preflight`'s unit test), so the create that
/// follows fails on the missing runtime and nothing is left. Both ways an image is pulled:
/// `gpus = "all"` (pulled by the create) and `gpus = 1` (pulled before placing). The scan
/// is cached per image id, the cache doctor then reads. `--dry-run` says the scan will
/// follow the pull.
#[test]
fn a_pulled_images_cuda_libraries_are_judged_before_the_create() {
    if !require_daemon() || !require_registry() || !daemon_without_nvidia_runtime() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pulled-cuda");
    let Some(reference) = push_cuda_library_image(&registry, &repo, "libbitsandbytes_cuda118.so")
    else {
        return;
    };
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pulled-cuda");
    let cache = scenario.path().join("cache");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("rtx-5090.conf");
    let environment = [
        ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
        ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
    ];
    scenario.write_profile(&reference, "gpus = \"all\"\n");

    let planned = scenario.run_with(
        &["--json", "up", &scenario.profile, "--dry-run", "--force"],
        &environment,
    );
    planned.expect_code(0, "up --dry-run --force of an image in the registry only");
    let said = planned.json()["library_scan"].as_str().unwrap().to_string();
    assert!(
        said.contains(&format!("image `{reference}` is not here"))
            && said.contains("pulls it, then reads its CUDA libraries"),
        "{planned}"
    );
    assert!(!image_exists(&reference), "a dry run pulls nothing");

    for gpus in ["gpus = \"all\"\n", "gpus = 1\n"] {
        scenario.write_profile(&reference, gpus);
        let run = scenario.run_with(&["up", &scenario.profile, "--force"], &environment);
        run.expect_code(
            1,
            "the create after the forced scan fails: no NVIDIA runtime",
        );
        let pulled = run
            .stderr
            .find(&format!("pulling {reference}"))
            .unwrap_or_else(|| panic!("no pull ({gpus})\n{run}"));
        let judged = run
            .stderr
            .find("libbitsandbytes_cuda118.so")
            .unwrap_or_else(|| panic!("no library verdict ({gpus})\n{run}"));
        // Docker 20.10 creates a GPU container without the runtime, and fails its start.
        let created = run
            .stderr
            .find("removed the container this run created but did not start")
            .unwrap_or_else(|| panic!("no create ({gpus})\n{run}"));
        assert!(pulled < judged && judged < created, "{gpus}\n{run}");
        let verdict = run.stderr[judged..].lines().next().unwrap().to_string();
        for expected in [
            "(from bitsandbytes 0.50.2)",
            "sm_120",
            "no kernel image",
            "(starting anyway: --force)",
        ] {
            assert!(verdict.contains(expected), "{expected:?} not in {verdict}");
        }
        assert_eq!(scenario.containers(), 0, "{run}");
        assert_eq!(
            cached_scans(&cache),
            [cache_name_of(&reference)],
            "one scan, cached per image id"
        );

        // doctor, with the image here now, gives the same verdict, read from that cache.
        let doctor = scenario.run_with(&["--json", "doctor", &scenario.profile], &environment);
        doctor.expect_code(1, "doctor on the pulled image");
        let report = doctor.json();
        let failure = report["profiles"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|finding| finding["id"] == "gpu.library-arch")
            .unwrap_or_else(|| panic!("{report:#}"));
        assert_eq!(failure["status"], "fail", "{failure:#}");
        assert!(
            run.stderr.contains(&format!(
                "{} (starting anyway: --force)",
                failure["message"].as_str().unwrap()
            )),
            "up said doctor's words\n{failure:#}\n{run}"
        );
        docker_stdout(["rmi", reference.as_str()]);
    }
}

/// Issue 41, the negative control: bitsandbytes' CUDA 13.2 build (which has sm_120), only
/// in the registry, pulled by `up` on the stand-in RTX 5090: scanned (the cache holds its
/// id) and nothing said of it; `up` goes on to the create (which fails here on the missing
/// NVIDIA runtime, forced past the preflight).
#[test]
fn a_pulled_image_whose_libraries_cover_the_gpu_is_not_warned_about() {
    if !require_daemon() || !require_registry() || !daemon_without_nvidia_runtime() {
        return;
    }
    let registry = Registry::start();
    let repo = unique_name("envctl-test/pulled-cuda-ok");
    let Some(reference) = push_cuda_library_image(&registry, &repo, "libbitsandbytes_cuda132.so")
    else {
        return;
    };
    let _pulled = ImageGuard::new(reference.as_str());
    let scenario = Scenario::new("up-pulled-cuda-ok");
    let cache = scenario.path().join("cache");
    let library = crate::support::nvml::stub_library();
    let machine = crate::support::nvml::fixture("rtx-5090.conf");
    scenario.write_profile(&reference, "gpus = \"all\"\n");
    let run = scenario.run_with(
        &["up", &scenario.profile, "--force"],
        &[
            ("ENVCTL_NVML_LIBRARY", library.to_str().unwrap()),
            ("ENVCTL_NVML_STUB_FIXTURE", machine.to_str().unwrap()),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ],
    );
    run.expect_code(1, "the create fails: no NVIDIA runtime");
    assert!(
        run.stderr.contains(&format!("pulling {reference}")),
        "{run}"
    );
    assert!(
        run.stderr.contains("could not select device driver"),
        "the create was reached\n{run}"
    );
    for unwanted in ["libbitsandbytes", "no kernel image", "CUDA libraries"] {
        assert!(!run.stderr.contains(unwanted), "{unwanted:?} said\n{run}");
    }
    assert_eq!(
        cached_scans(&cache),
        [cache_name_of(&reference)],
        "the pulled image was scanned"
    );
}
