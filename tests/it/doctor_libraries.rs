//! `envctl doctor PROFILE` reads the CUDA libraries of the profile's image through the
//! daemon and judges them on the host's GPUs (`gpu.library-arch`, issue 41): an image
//! imported from a root filesystem holding bitsandbytes 0.50.2's real CUDA 11.8 library
//! (sm_60 … sm_90, no PTX; `tests/corpus/fatbin`), the stand-in NVML presenting an RTX 5090
//! (sm_120: the library fails with "no kernel image", naming its package) or eight H100s
//! (sm_90: it runs). The second doctor reads the scan from the cache per image id. Against
//! another machine's daemon (a test server whose stand-in `nvidia-smi` has an RTX 5090),
//! the image is read through that daemon and judged on that machine's GPU.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use crate::fatbin_corpus::{SITE, bitsandbytes_folder, import_bitsandbytes_image};
use crate::support::cli::Envctl;
use crate::support::docker::{require_daemon, skip_or_panic};
use crate::support::nvml::{fixture, stub_library};

const TEST: &str = "doctor_libraries::doctor_judges_the_images_cuda_libraries_on_the_hosts_gpus";

/// Every finding with `id` anywhere in the report.
fn with_id<'a>(value: &'a Value, id: &str, found: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if map.get("id").and_then(Value::as_str) == Some(id) && map.contains_key("status") {
                found.push(value);
            }
            map.values().for_each(|inner| with_id(inner, id, found));
        }
        Value::Array(items) => items.iter().for_each(|inner| with_id(inner, id, found)),
        _ => {}
    }
}

fn doctor(directory: &Path, profile: &Path, nvml: &str) -> (Value, i32) {
    let output = Envctl::shared()
        .command()
        .current_dir(directory)
        .env("HOME", directory.join("home"))
        .env("XDG_CONFIG_HOME", directory.join("xdg"))
        .env("XDG_CACHE_HOME", directory.join("cache"))
        .env("ENVCTL_NVML_LIBRARY", stub_library())
        .env("ENVCTL_NVML_STUB_FIXTURE", fixture(nvml))
        .env_remove("ENVCTL_PROFILE_PATH")
        .args(["--color", "never", "doctor", "--json"])
        .arg(profile)
        .output()
        .unwrap();
    let code = output.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "doctor exited {code}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (serde_json::from_slice(&output.stdout).unwrap(), code)
}

#[test]
fn doctor_judges_the_images_cuda_libraries_on_the_hosts_gpus() {
    if !require_daemon() {
        return;
    }
    let Some(folder) = bitsandbytes_folder() else {
        skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            TEST,
            "hint: bash tests/corpus/fatbin/fetch.sh",
        );
        return;
    };
    let (_work, reference, _guard) =
        import_bitsandbytes_image(&folder, &["libbitsandbytes_cuda118.so"]);
    let directory = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(directory.path().join("home")).unwrap();
    let profile = directory.path().join("bnb.toml");
    std::fs::write(
        &profile,
        format!(
            "description = \"bitsandbytes built for CUDA 11.8\"\nimage = \"{reference}\"\ngpus = \"all\"\nuser = \"1000:1000\"\nmemory = \"8g\"\n"
        ),
    )
    .unwrap();
    let library = format!("{SITE}/bitsandbytes/libbitsandbytes_cuda118.so");

    let started = Instant::now();
    let (report, code) = doctor(directory.path(), &profile, "rtx-5090.conf");
    let cold = started.elapsed();
    let mut found = Vec::new();
    with_id(&report, "gpu.library-arch", &mut found);
    assert_eq!(found.len(), 1, "{report:#}");
    let failure = found[0];
    assert_eq!(failure["status"], "fail", "{failure:#}");
    let text = failure["message"].as_str().unwrap();
    assert!(text.contains(&library), "{text}");
    assert!(text.contains("(from bitsandbytes 0.50.2)"), "{text}");
    assert!(text.contains("no kernel image is available"), "{text}");
    assert!(
        failure["hint"].as_str().unwrap().contains("sm_120"),
        "{failure:#}"
    );
    assert_eq!(failure["facts"]["sass"][6], "sm_90", "{failure:#}");
    assert_eq!(code, 1, "a failed check exits 1");
    let cache = directory.path().join("cache/envctl/image-libraries");
    let cached_files: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(cached_files.len(), 1);
    let cache_file = cached_files[0].as_ref().unwrap().path();
    let written = std::fs::metadata(&cache_file).unwrap().modified().unwrap();

    // The same image on H100s (sm_90): the library runs; the scan comes from the cache.
    let started = Instant::now();
    let (report, _) = doctor(directory.path(), &profile, "healthy-8x-h100.conf");
    let cached = started.elapsed();
    assert_eq!(
        std::fs::metadata(&cache_file).unwrap().modified().unwrap(),
        written,
        "the second doctor read the cache, it did not scan again"
    );
    let mut found = Vec::new();
    with_id(&report, "gpu.library-arch", &mut found);
    assert!(!found.is_empty(), "{report:#}");
    assert!(
        found.iter().all(|finding| finding["status"] == "pass"),
        "{found:#?}"
    );
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("has code that runs on GPU 0"),
        "{found:#?}"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("\n*** doctor with the scan {cold:?}, from the cache {cached:?}\n").as_bytes(),
    );
}

/// Remote daemons included: `doctor` against another machine's daemon (a test server whose
/// stand-in `nvidia-smi` says it has an RTX 5090, sm_120; this machine's NVML is absent)
/// reads the image through that daemon and judges its libraries on that machine's GPU.
#[test]
fn doctor_judges_a_remote_daemons_image_on_that_machines_gpus() {
    use crate::support::server::{Fixture, Server};
    const REMOTE: &str =
        "doctor_libraries::doctor_judges_a_remote_daemons_image_on_that_machines_gpus";
    let Some(folder) = bitsandbytes_folder() else {
        skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            REMOTE,
            "hint: bash tests/corpus/fatbin/fetch.sh",
        );
        return;
    };
    let fixture = Fixture::gpus(
        "eeeeeeee",
        1,
        "NVIDIA GeForce RTX 5090",
        "12.0",
        "575.57.08",
        "12.9",
    );
    let Some(server) = Server::start(REMOTE, "gpu-libraries", Some(&fixture)) else {
        return;
    };
    // The probe that learns the server's GPUs runs the profile's image there: one with a
    // shell (the test image's), and the library.
    let reference = format!(
        "{}:1",
        crate::support::docker::unique_name("envctl-test-fatbin-remote")
    );
    let _guard = crate::support::cuda_images::ImageBuild::new()
        .package(
            SITE,
            ("bitsandbytes", "0.50.2"),
            &folder,
            &["libbitsandbytes_cuda118.so"],
        )
        .build(&reference);
    let work = tempfile::tempdir().unwrap();
    let tarball = work.path().join("image.tar");
    crate::support::docker::docker_stdout([
        "save",
        "-o",
        tarball.to_str().unwrap(),
        reference.as_str(),
    ]);
    server.docker_ok(&["load", "-i", tarball.to_str().unwrap()]);
    let directory = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(directory.path().join("home")).unwrap();
    let profile = directory.path().join("bnb.toml");
    std::fs::write(
        &profile,
        format!("image = \"{reference}\"\ngpus = 1\ncommand = [\"sleep\", \"600\"]\n"),
    )
    .unwrap();
    let output = Envctl::shared()
        .command()
        .current_dir(directory.path())
        .env("HOME", directory.path().join("home"))
        .env("XDG_CONFIG_HOME", directory.path().join("xdg"))
        .env("XDG_CACHE_HOME", directory.path().join("cache"))
        .env("DOCKER_HOST", server.host())
        .env(
            "ENVCTL_NVML_LIBRARY",
            directory.path().join("no-nvml-here.so"),
        )
        .env_remove("ENVCTL_PROFILE_PATH")
        .env_remove("DOCKER_CONTEXT")
        .args(["--color", "never", "doctor", "--json"])
        .arg(&profile)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&output.stderr)));
    let mut found = Vec::new();
    with_id(&report, "gpu.library-arch", &mut found);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["status"], "fail", "{:#}", found[0]);
    let text = found[0]["message"].as_str().unwrap();
    for expected in [
        "libbitsandbytes_cuda118.so",
        "(from bitsandbytes 0.50.2)",
        "GPU 0 (NVIDIA GeForce RTX 5090) is sm_120",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text}");
    }
    assert_eq!(
        found[0]["facts"]["rests_on"], "image scan (the library's fat binaries)",
        "the verdict says what it rests on"
    );
}
