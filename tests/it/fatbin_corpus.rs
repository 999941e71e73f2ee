//! envctl's fat-binary reader against NVIDIA's `cuobjdump` on real CUDA libraries: the
//! shared objects of the PyPI wheels in `tests/corpus/fatbin/wheels.tsv`, fetched by
//! `bash tests/corpus/fatbin/fetch.sh` (which `.ci/run` calls), and the lists
//! `cuobjdump --list-elf/--list-ptx` (and `-all`) printed for each, in
//! `tests/corpus/fatbin/corpus.toml` (written by `measure.py`). Library by library, the
//! reader's lists must equal cuobjdump's, and each PTX entry's ISA version the `.version`
//! of the PTX cuobjdump extracts.
//!
//! Without the fetched libraries the test is skipped and the skip recorded (a failure
//! under ENVCTL_REQUIRE_DOCKER=1, as in CI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use envctl::compat::fatbin::{LibraryCode, PtxTarget, read_library};
use envctl::compat::{Target, TargetSuffix};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::support::cli::Envctl;
use crate::support::docker::skip_or_panic;

const CORPUS_ENV: &str = "ENVCTL_FATBIN_CORPUS";

#[derive(Deserialize)]
struct Corpus {
    cuobjdump: String,
    library: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    requirement: String,
    path: String,
    sha256: String,
    sass: Vec<String>,
    ptx: Vec<String>,
    sass_all: Vec<String>,
    ptx_all: Vec<String>,
    ptx_isa: BTreeMap<String, String>,
    /// cuobjdump stopped part-way with this error: its lists are a prefix of the truth.
    cuobjdump_error: Option<String>,
    /// Then: the architectures each uncompressed cubin's own ELF header names.
    sass_by_cubin_header: Option<Vec<String>>,
}

fn corpus_folder() -> PathBuf {
    match std::env::var_os(CORPUS_ENV) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fatbin-corpus"),
    }
}

/// A target as cuobjdump names its file: `sm_90a`, PTX as `sm_121`, `f` without suffix.
fn cuobjdump_name(target: &Target) -> String {
    let suffix = match target.suffix {
        TargetSuffix::ArchitectureSpecific => "a",
        TargetSuffix::Portable | TargetSuffix::Family => "",
    };
    format!(
        "sm_{}{}{suffix}",
        target.capability.major, target.capability.minor
    )
}

fn names(targets: impl Iterator<Item = Target>) -> Vec<String> {
    let mut names: Vec<String> = targets.map(|target| cuobjdump_name(&target)).collect();
    names.dedup();
    names
}

fn compare(expected: &Expected, code: &LibraryCode) -> Vec<String> {
    let mut mismatches = Vec::new();
    let ptx_names = |ptx: Vec<PtxTarget>| names(ptx.into_iter().map(|entry| entry.target));
    let lists = [
        ("sass", &expected.sass, names(code.sass().into_iter())),
        ("ptx", &expected.ptx, ptx_names(code.ptx())),
        (
            "sass_all",
            &expected.sass_all,
            names(code.sass_all().into_iter()),
        ),
        ("ptx_all", &expected.ptx_all, ptx_names(code.ptx_all())),
    ];
    for (list, want, got) in lists {
        let agrees = match &expected.cuobjdump_error {
            None => *want == got,
            // cuobjdump printed what it read before its error: envctl must have read that
            // too, and the machine code must be what the cubins' own headers say.
            Some(_) => {
                want.iter().all(|name| got.contains(name))
                    && (list != "sass" || expected.sass_by_cubin_header.as_ref() == Some(&got))
            }
        };
        if !agrees {
            mismatches.push(format!(
                "{}: {list}: cuobjdump {want:?}, envctl {got:?}",
                expected.path
            ));
        }
    }
    let isa: BTreeMap<String, String> = code
        .ptx()
        .iter()
        .map(|entry| (cuobjdump_name(&entry.target), entry.isa.to_string()))
        .collect();
    if isa != expected.ptx_isa {
        mismatches.push(format!(
            "{}: PTX ISA versions: cuobjdump {:?}, envctl {isa:?}",
            expected.path, expected.ptx_isa
        ));
    }
    if code.damage().is_some() || code.unnamed_entries() > 0 {
        mismatches.push(format!(
            "{}: damage {:?}, {} unnamed entries",
            expected.path,
            code.damage(),
            code.unnamed_entries()
        ));
    }
    mismatches
}

#[test]
fn reader_lists_equal_cuobjdump_library_by_library() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fatbin/corpus.toml"),
    )
    .unwrap();
    let corpus: Corpus = toml::from_str(&text).unwrap();
    let folder = corpus_folder();
    if !folder.join(&corpus.library[0].path).is_file() {
        skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            "fatbin_corpus::reader_lists_equal_cuobjdump_library_by_library",
            &format!(
                "{} holds no {}.\nhint: bash tests/corpus/fatbin/fetch.sh {}",
                folder.display(),
                corpus.library[0].path,
                folder.display()
            ),
        );
        return;
    }
    let mut mismatches = Vec::new();
    let mut with_code = 0;
    let mut with_ptx = 0;
    let mut compressed = 0;
    for expected in &corpus.library {
        let path = folder.join(&expected.path);
        let bytes =
            std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let sha256: String = Sha256::digest(&bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(
            sha256, expected.sha256,
            "{} ({}) is not the file cuobjdump {} read",
            expected.path, expected.requirement, corpus.cuobjdump
        );
        let code =
            read_library(&bytes).unwrap_or_else(|error| panic!("{}: {error}", expected.path));
        mismatches.extend(compare(expected, &code));
        with_code += usize::from(code.has_gpu_code());
        with_ptx += usize::from(!code.ptx().is_empty());
        compressed += code.compressed_entries();
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // The corpus exercises what it claims to: several libraries with machine code, PTX,
    // and compressed entries (libcurand's PTX, bitsandbytes' relocatable code), and the
    // library cuobjdump 13.x cannot finish (bitsandbytes' CUDA 12.1 build).
    assert!(corpus.library.len() >= 15, "{}", corpus.library.len());
    assert!(with_code >= 7, "{with_code} libraries with GPU code");
    assert!(with_ptx >= 1, "{with_ptx} libraries with PTX");
    assert!(compressed > 0, "no compressed entry read");
    assert!(
        corpus
            .library
            .iter()
            .any(|expected| expected.cuobjdump_error.is_some()),
        "the corpus lost its library cuobjdump cannot read"
    );
}

/// The libraries of the image test: (path in the corpus folder, path in the image).
const IMAGE_LIBRARIES: [&str; 4] = [
    "libbitsandbytes_cuda118.so",
    "libbitsandbytes_cuda132.so",
    "libbitsandbytes_cpu.so",
    "libbitsandbytes_rocm64.so",
];

/// A real daemon's image archive: an image imported from a root filesystem holding four
/// of bitsandbytes' libraries (two with fat binaries, one host-only, one ROCm) and the
/// wheel's RECORD, saved by `docker save` and scanned: each CUDA library found with its
/// package and cuobjdump's lists, and judged on an sm_120 GPU as the corpus says; the
/// engine adapter, streaming `GET /images/{name}/get`, finds exactly the same.
#[test]
fn a_saved_image_yields_its_libraries_as_cuobjdump_lists_them() {
    use std::time::{Duration, Instant};

    use envctl::compat::ComputeCapability;
    use envctl::compat::fatbin::{judge, scan_archive};
    use envctl_engine::Engine;
    use envctl_engine::image_scan::ImageLibrariesError;

    use crate::support::docker::{docker_stdout, require_daemon};

    const TEST: &str = "fatbin_corpus::a_saved_image_yields_its_libraries_as_cuobjdump_lists_them";
    if !require_daemon() {
        return;
    }
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fatbin/corpus.toml"),
    )
    .unwrap();
    let corpus: Corpus = toml::from_str(&text).unwrap();
    let folder = corpus_folder().join("bitsandbytes/bitsandbytes");
    if !folder.join(IMAGE_LIBRARIES[0]).is_file() {
        skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            TEST,
            &format!(
                "{} holds no {}.\nhint: bash tests/corpus/fatbin/fetch.sh",
                folder.display(),
                IMAGE_LIBRARIES[0]
            ),
        );
        return;
    }
    let (work, reference, _guard) = import_bitsandbytes_image(&folder, &IMAGE_LIBRARIES);
    let site = SITE;
    let saved = work.path().join("saved.tar");
    docker_stdout(["save", "-o", saved.to_str().unwrap(), reference.as_str()]);

    let scan = scan_archive(std::fs::File::open(&saved).unwrap()).unwrap();
    // Through the engine adapter: the daemon's stream, scanned as it comes, finds the same.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = Engine::connect(
        std::env::var("DOCKER_HOST").ok().as_deref(),
        Duration::from_secs(30),
    )
    .unwrap();
    let started = Instant::now();
    let streamed = runtime
        .block_on(engine.image_libraries(&reference))
        .unwrap();
    let streamed_in = started.elapsed();
    assert_eq!(streamed, scan);
    let started = Instant::now();
    let saved_to_null = std::process::Command::new("sh")
        .args(["-c", &format!("docker save '{reference}' >/dev/null")])
        .status()
        .unwrap();
    assert!(saved_to_null.success(), "docker save: {saved_to_null}");
    eprintln!(
        "scan through the daemon {streamed_in:?}, docker save to /dev/null {:?} ({} bytes of archive)",
        started.elapsed(),
        std::fs::metadata(&saved).unwrap().len()
    );
    // An image the daemon does not have: the daemon's answer, named with the image.
    let missing = runtime.block_on(engine.image_libraries("envctl-test-fatbin-missing:1"));
    assert!(
        matches!(missing, Err(ImageLibrariesError::Engine { ref image, .. }) if image == "envctl-test-fatbin-missing:1"),
        "{missing:?}"
    );
    assert!(scan.unread_layers.is_empty(), "{:?}", scan.unread_layers);
    assert!(scan.unreadable.is_empty(), "{:?}", scan.unreadable);
    assert_eq!(scan.shared_objects, IMAGE_LIBRARIES.len());
    let found: Vec<&str> = scan
        .libraries
        .iter()
        .map(|library| library.path.as_str())
        .collect();
    assert_eq!(
        found,
        [
            format!("{site}/bitsandbytes/libbitsandbytes_cuda118.so"),
            format!("{site}/bitsandbytes/libbitsandbytes_cuda132.so"),
        ]
    );
    let blackwell = ComputeCapability::new(12, 0);
    for library in &scan.libraries {
        assert_eq!(library.package.as_deref(), Some("bitsandbytes 0.50.2"));
        let file = library.path.rsplit('/').next().unwrap();
        let expected = corpus
            .library
            .iter()
            .find(|expected| expected.path.ends_with(&format!("/{file}")))
            .unwrap();
        assert!(compare(expected, &library.code).is_empty(), "{file}");
        // CUDA 11.8's build stops at sm_90: no kernel image on sm_120; 13.2's has sm_120.
        let fails = judge(&library.code, blackwell, None).fails();
        assert_eq!(fails, file.contains("cuda118"), "{file}");
    }
}

/// Where the image test puts bitsandbytes.
pub const SITE: &str = "usr/lib/python3.12/site-packages";

/// The folder of the fetched bitsandbytes libraries, when fetched.
pub fn bitsandbytes_folder() -> Option<PathBuf> {
    let folder = corpus_folder().join("bitsandbytes/bitsandbytes");
    folder.join(IMAGE_LIBRARIES[0]).is_file().then_some(folder)
}

/// Imports an image (labelled `envctl.test=1`) whose root holds `libraries` of `folder` in
/// bitsandbytes' site-packages folder with the wheel's RECORD, and nothing else: its work
/// folder, its reference and the guard that removes it.
pub fn import_bitsandbytes_image(
    folder: &Path,
    libraries: &[&str],
) -> (
    tempfile::TempDir,
    String,
    crate::support::docker::ImageGuard,
) {
    crate::support::cuda_images::import_package_image(
        SITE,
        ("bitsandbytes", "0.50.2"),
        folder,
        libraries,
    )
}

/// A gzip layer as an image store may keep one: a hand-made `docker save` archive whose one
/// layer is bitsandbytes' two CUDA libraries and RECORD, compressed by the system's `gzip`
/// (another encoder than the one the unit tests use). The scan decompresses it in its one
/// pass and finds both libraries with their package and cuobjdump's lists; the daemon
/// accepts the archive (`docker load`) and, streaming the image back (uncompressed, from
/// its own store), the engine adapter finds exactly the same.
#[test]
fn a_gzip_layer_archive_scans_as_the_daemon_loads_it() {
    use std::process::Command;
    use std::time::{Duration, Instant};

    use envctl::compat::fatbin::scan_archive;
    use envctl_engine::Engine;

    use crate::support::docker::{ImageGuard, docker_stdout, require_daemon, unique_name};

    const TEST: &str = "fatbin_corpus::a_gzip_layer_archive_scans_as_the_daemon_loads_it";
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
    let libraries = ["libbitsandbytes_cuda118.so", "libbitsandbytes_cuda132.so"];
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    let installed = root.join(SITE).join("bitsandbytes");
    std::fs::create_dir_all(&installed).unwrap();
    let mut record = String::new();
    for library in libraries {
        std::fs::copy(folder.join(library), installed.join(library)).unwrap();
        record.push_str(&format!("bitsandbytes/{library},sha256=unchecked,0\n"));
    }
    let dist_info = root.join(SITE).join("bitsandbytes-0.50.2.dist-info");
    std::fs::create_dir_all(&dist_info).unwrap();
    std::fs::write(dist_info.join("RECORD"), record).unwrap();
    let run = |command: &mut Command| {
        let status = command.status().unwrap();
        assert!(status.success(), "{command:?}: {status}");
    };
    let layer = work.path().join("layer.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&layer)
        .arg("."));
    let hex = |bytes: &[u8]| -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    };
    let diff_id = hex(&std::fs::read(&layer).unwrap());
    let archive = work.path().join("archive");
    std::fs::create_dir_all(archive.join("layer")).unwrap();
    let compressed = std::fs::File::create(archive.join("layer/layer.tar")).unwrap();
    run(Command::new("gzip")
        .arg("-c")
        .arg(&layer)
        .stdout(compressed));
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{"Labels":{{"envctl.test":"1"}}}},"rootfs":{{"type":"layers","diff_ids":["sha256:{diff_id}"]}}}}"#
    );
    let config_name = format!("{}.json", hex(config.as_bytes()));
    std::fs::write(archive.join(&config_name), &config).unwrap();
    let reference = format!("{}:1", unique_name("envctl-test-fatbin-gzip"));
    std::fs::write(
        archive.join("manifest.json"),
        format!(
            r#"[{{"Config":"{config_name}","RepoTags":["{reference}"],"Layers":["layer/layer.tar"]}}]"#
        ),
    )
    .unwrap();
    let image = work.path().join("image.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&archive)
        .arg("-cf")
        .arg(&image)
        .arg("."));
    let gzip_magic = std::fs::read(archive.join("layer/layer.tar")).unwrap();
    assert_eq!(gzip_magic[..2], [0x1f, 0x8b], "the layer is gzip");

    let started = Instant::now();
    let scan = scan_archive(std::fs::File::open(&image).unwrap()).unwrap();
    let gzip_scan = started.elapsed();
    assert!(scan.unread_layers.is_empty(), "{:?}", scan.unread_layers);
    assert!(scan.unreadable.is_empty(), "{:?}", scan.unreadable);
    let corpus: Corpus = toml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fatbin/corpus.toml"),
        )
        .unwrap(),
    )
    .unwrap();
    let found: Vec<String> = scan.libraries.iter().map(|l| l.path.clone()).collect();
    assert_eq!(
        found,
        libraries.map(|library| format!("{SITE}/bitsandbytes/{library}"))
    );
    for library in &scan.libraries {
        assert_eq!(library.package.as_deref(), Some("bitsandbytes 0.50.2"));
        let file = library.path.rsplit('/').next().unwrap();
        let expected = corpus
            .library
            .iter()
            .find(|expected| expected.path.ends_with(&format!("/{file}")))
            .unwrap();
        assert!(compare(expected, &library.code).is_empty(), "{file}");
    }

    let _guard = ImageGuard::new(reference.clone());
    docker_stdout(["load", "-i", image.to_str().unwrap()]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = Engine::connect(
        std::env::var("DOCKER_HOST").ok().as_deref(),
        Duration::from_secs(30),
    )
    .unwrap();
    let streamed = runtime
        .block_on(engine.image_libraries(&reference))
        .unwrap();
    assert_eq!(streamed, scan);
    // The same archive with the layer stored plain, for the figure beside the gzip one.
    std::fs::copy(&layer, archive.join("layer/layer.tar")).unwrap();
    let plain = work.path().join("plain.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&archive)
        .arg("-cf")
        .arg(&plain)
        .arg("."));
    let started = Instant::now();
    let plain_scan = scan_archive(std::fs::File::open(&plain).unwrap()).unwrap();
    eprintln!(
        "scan of a {} byte archive with a gzip layer {gzip_scan:?}; of the same layer plain ({} bytes) {:?}",
        std::fs::metadata(&image).unwrap().len(),
        std::fs::metadata(&plain).unwrap().len(),
        started.elapsed()
    );
    assert_eq!(plain_scan, scan);
}

/// `envctl exec TARGET nvidia-check` judges the CUDA libraries of the container's image on
/// the GPUs the check saw inside it: an image (FROM the busybox test image) with the
/// stand-in `python3`/`nvidia-smi` of `tests/fixtures/nvidia-check` and bitsandbytes
/// 0.50.2's real CUDA 11.8 library (sm_60 … sm_90, no PTX). Playing an RTX 5090 (sm_120)
/// the library fails with "no kernel image", naming its package; playing two H100s (sm_90)
/// it runs; the second check reads the scan from the cache per image id.
#[test]
fn nvidia_check_judges_the_images_cuda_libraries_on_the_containers_gpus() {
    use std::time::Duration;

    use serde_json::Value;

    use crate::support::cuda_images::ImageBuild;
    use crate::support::docker::{
        ContainerGuard, TEST_LABEL, docker_stdout, require_daemon, unique_name,
    };

    const TEST: &str =
        "fatbin_corpus::nvidia_check_judges_the_images_cuda_libraries_on_the_containers_gpus";
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
    let library = "libbitsandbytes_cuda118.so";
    let reference = format!("{}:1", unique_name("envctl-test-fatbin-nvcheck"));
    let _image = ImageBuild::new()
        .stand_in()
        .scenarios(&["h100", "rtx-5090-torch-2.6"])
        .package(SITE, ("bitsandbytes", "0.50.2"), &folder, &[library])
        .build(&reference);
    let home = tempfile::tempdir().unwrap();
    let check = |scenario: &str| -> Value {
        let container = ContainerGuard::unique("envctl-fatbin-nvcheck");
        docker_stdout([
            "run",
            "--detach",
            "--name",
            container.name(),
            "--label",
            TEST_LABEL,
            "--env",
            &format!("ENVCTL_TEST_SCENARIO={scenario}"),
            reference.as_str(),
            "sh",
            "-c",
            "touch /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl /dev/nvidia-uvm && exec sleep 600",
        ]);
        let run = Envctl::in_folder(home.path())
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .timeout(Duration::from_secs(120))
            .args([
                "--color",
                "never",
                "exec",
                container.name(),
                "nvidia-check",
                "--json",
            ])
            .run();
        serde_json::from_str(&run.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}\n{}", run.stdout, run.stderr))
    };
    let library_findings = |report: &Value| -> Vec<(String, String)> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["id"] == "gpu.library-arch")
            .map(|finding| {
                (
                    finding["status"].as_str().unwrap().to_string(),
                    finding["message"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };

    let blackwell = library_findings(&check("rtx-5090-torch-2.6"));
    assert_eq!(blackwell.len(), 1, "{blackwell:#?}");
    let (status, message) = &blackwell[0];
    assert_eq!(status, "fail", "{message}");
    for expected in [library, "bitsandbytes 0.50.2", "sm_120", "no kernel image"] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }
    let cache = home.path().join("cache/envctl/image-libraries");
    let cached = std::fs::read_dir(&cache)
        .unwrap_or_else(|error| panic!("{}: {error}", cache.display()))
        .count();
    assert_eq!(cached, 1, "one scan cached per image id");

    let hopper = library_findings(&check("h100"));
    assert!(!hopper.is_empty());
    assert!(
        hopper.iter().all(|(status, _)| status == "pass"),
        "{hopper:#?}"
    );
    assert!(hopper[0].1.contains("sm_90"), "{hopper:#?}");
}

/// `envctl nvidia-check --libraries FOLDER` (what tests/gpu/check.sh runs on a GPU
/// machine): the CUDA libraries installed in a folder, read in place with the image scan's
/// code, listed in the JSON as cuobjdump lists them, with the package from RECORD, and
/// judged on this machine's GPUs (here the stand-in NVML's RTX 5090, sm_120: bitsandbytes'
/// CUDA 11.8 build has no code for it; its CUDA 13.2 build has).
#[test]
fn nvidia_check_here_scans_an_installed_folder_as_cuobjdump_lists_it() {
    const TEST: &str =
        "fatbin_corpus::nvidia_check_here_scans_an_installed_folder_as_cuobjdump_lists_it";
    let Some(folder) = bitsandbytes_folder() else {
        skip_or_panic(
            "the CUDA libraries of tests/corpus/fatbin are not fetched",
            TEST,
            "hint: bash tests/corpus/fatbin/fetch.sh",
        );
        return;
    };
    let corpus: Corpus = toml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fatbin/corpus.toml"),
        )
        .unwrap(),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let site = home.path().join("site-packages");
    crate::support::cuda_images::install_package(
        &site,
        ("bitsandbytes", "0.50.2"),
        &folder,
        &IMAGE_LIBRARIES,
    );
    let run = Envctl::in_folder(home.path())
        .env("HOME", home.path())
        .nvml("rtx-5090.conf")
        .timeout(std::time::Duration::from_secs(180))
        .args([
            "--color",
            "never",
            "nvidia-check",
            "--quick",
            "--json",
            "--libraries",
        ])
        .arg(&site)
        .run();
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}: {}", run.stderr));
    let libraries = report["libraries"]["libraries"].as_array().unwrap();
    let found: Vec<&str> = libraries
        .iter()
        .map(|library| {
            library["path"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        found,
        ["libbitsandbytes_cuda118.so", "libbitsandbytes_cuda132.so"]
    );
    for library in libraries {
        assert_eq!(library["package"], "bitsandbytes 0.50.2");
        let file = library["path"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap();
        let expected = corpus
            .library
            .iter()
            .find(|expected| expected.path.ends_with(&format!("/{file}")))
            .unwrap();
        let sass: Vec<&str> = library["code"]["sass"]
            .as_array()
            .unwrap()
            .iter()
            .map(|target| target.as_str().unwrap())
            .collect();
        assert_eq!(sass, expected.sass, "{file}");
    }
    let judged: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["id"] == "gpu.library-arch")
        .map(|finding| {
            (
                finding["status"].as_str().unwrap(),
                finding["message"].as_str().unwrap(),
            )
        })
        .collect();
    // The package loads the build for its CUDA release: one that runs is enough (a pass).
    assert_eq!(judged.len(), 1, "{judged:#?}");
    assert_eq!(judged[0].0, "pass", "{judged:#?}");
    assert!(judged[0].1.contains("sm_120"), "{judged:#?}");
}

/// The rebuild hint of `gpu.library-arch` names a pip command: it is run, as the hint
/// gives it, in a sandbox. A local source distribution of a package (`envctl_probe 1.0`)
/// stands in for PyPI (`--no-index --find-links`), a build of the same version is already
/// installed in a throw-away virtual environment whose `pip` the hint's `pip` is, and pip
/// runs with `--dry-run`: it must choose to build that source distribution again (not
/// "already satisfied", not another version, no dependency), which is what the hint
/// promises. The hint of before (`--no-binary :all:`, no `--force-reinstall`) fails here.
/// Needs python3 with `venv` and `ensurepip` only (no network): the package builds with
/// a backend of its own, since the hint's `--no-build-isolation` builds with what is
/// installed.
#[test]
fn the_rebuild_hints_pip_command_builds_the_same_version_from_source() {
    use std::process::Command;

    use envctl::compat::ComputeCapability;
    use envctl::compat::fatbin::{
        GPU_LIBRARY_ARCH, Library, LibrarySummary, library_finding, rebuild_command,
    };

    const TEST: &str =
        "fatbin_corpus::the_rebuild_hints_pip_command_builds_the_same_version_from_source";
    let usable = Command::new("python3")
        .args(["-c", "import ensurepip, venv"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !usable {
        skip_or_panic(
            "python3 cannot make a virtual environment with pip: the rebuild hint's pip command is not run",
            TEST,
            "hint: sudo apt-get install python3-venv",
        );
        return;
    }
    // The hint as a user reads it, with the command between backticks.
    let code: LibrarySummary = serde_json::from_value(serde_json::json!({
        "sass": ["sm_80"], "ptx": [], "has_gpu_code": true, "incomplete": null
    }))
    .unwrap();
    let library = Library {
        path: "usr/lib/python3/site-packages/envctl_probe/_C.so",
        package: Some("envctl_probe 1.0"),
        code: &code,
    };
    let capability = ComputeCapability::new(12, 0);
    let finding = library_finding(library, "GPU 0", capability, None).unwrap();
    assert_eq!(finding.id, GPU_LIBRARY_ARCH);
    let hint = finding.hint.unwrap();
    let command = hint.split('`').nth(1).unwrap();
    assert_eq!(command, rebuild_command("envctl_probe 1.0", capability));

    let sandbox = tempfile::tempdir().unwrap();
    let index = sandbox.path().join("index");
    std::fs::create_dir_all(&index).unwrap();
    // The source distribution, and a wheel of the same version (what the image has).
    let source = sandbox.path().join("envctl_probe-1.0");
    std::fs::create_dir_all(&source).unwrap();
    // A build backend of its own (PEP 517, in the tree): the sandbox needs neither
    // setuptools nor wheel, and no network. It declares a dependency that exists nowhere,
    // so that pip fails unless the hint keeps dependencies alone (`--no-deps`).
    std::fs::write(
        source.join("pyproject.toml"),
        "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
    )
    .unwrap();
    std::fs::write(source.join("backend.py"), PROBE_BACKEND).unwrap();
    std::fs::write(
        source.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: envctl_probe\nVersion: 1.0\n",
    )
    .unwrap();
    let run = |command: &mut Command| {
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{command:?}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    run(Command::new("tar")
        .arg("-C")
        .arg(sandbox.path())
        .args(["-czf"])
        .arg(index.join("envctl_probe-1.0.tar.gz"))
        .arg("envctl_probe-1.0"));
    let environment = sandbox.path().join("environment");
    run(Command::new("python3")
        .args(["-m", "venv"])
        .arg(&environment));
    let bin = environment.join("bin");
    run(Command::new(bin.join("pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
        ])
        .arg(&source)
        .env("PIP_CONFIG_FILE", "/dev/null"));
    // The hint's command, word for word, with the environment's pip first on PATH and
    // pointed at the sandbox's index.
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = run(Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{command} --dry-run --no-index --find-links \"$1\" --disable-pip-version-check"
        ))
        .arg("sh")
        .arg(&index)
        .env("PATH", path)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("HOME", sandbox.path()));
    assert!(
        output.contains("Would install envctl_probe-1.0")
            || output.contains("Would install envctl-probe-1.0"),
        "{output}"
    );
    assert!(!output.contains("absent"), "{output}");
}

/// The probe package's PEP 517 build backend: metadata, and a pure-Python wheel.
const PROBE_BACKEND: &str = r#"import base64, hashlib, os, zipfile

METADATA = "Metadata-Version: 2.1\nName: envctl_probe\nVersion: 1.0\nRequires-Dist: envctl-absent-dependency\n"
WHEEL = "Wheel-Version: 1.0\nGenerator: envctl-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
INFO = "envctl_probe-1.0.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    os.makedirs(os.path.join(directory, INFO))
    for name, text in (("METADATA", METADATA), ("WHEEL", WHEEL)):
        with open(os.path.join(directory, INFO, name), "w") as file:
            file.write(text)
    return INFO


def build_wheel(directory, config_settings=None, metadata_directory=None):
    files = {"envctl_probe/__init__.py": b"", INFO + "/METADATA": METADATA.encode(), INFO + "/WHEEL": WHEEL.encode()}
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(INFO + "/RECORD,,")
    files[INFO + "/RECORD"] = ("\n".join(record) + "\n").encode()
    name = "envctl_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    return name
"#;
