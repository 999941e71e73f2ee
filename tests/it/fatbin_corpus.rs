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
    use envctl::engine::Engine;
    use envctl::engine::image_scan::ImageLibrariesError;

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
/// bitsandbytes' site-packages folder with the wheel's RECORD: its work folder, its
/// reference and the guard that removes it.
pub fn import_bitsandbytes_image(
    folder: &Path,
    libraries: &[&str],
) -> (
    tempfile::TempDir,
    String,
    crate::support::docker::ImageGuard,
) {
    use crate::support::docker::{ImageGuard, docker_stdout, unique_name};
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    let site = SITE;
    let installed = root.join(site).join("bitsandbytes");
    std::fs::create_dir_all(&installed).unwrap();
    let mut record = String::new();
    for library in libraries {
        std::fs::copy(folder.join(library), installed.join(library)).unwrap();
        record.push_str(&format!("bitsandbytes/{library},sha256=unchecked,0\n"));
    }
    let dist_info = root.join(site).join("bitsandbytes-0.50.2.dist-info");
    std::fs::create_dir_all(&dist_info).unwrap();
    std::fs::write(dist_info.join("RECORD"), record).unwrap();
    let rootfs = work.path().join("rootfs.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&rootfs)
        .arg(".")
        .status()
        .unwrap();
    assert!(status.success(), "tar: {status}");
    let reference = format!("{}:1", unique_name("envctl-test-fatbin"));
    docker_stdout([
        "import",
        "--change",
        "LABEL envctl.test=1",
        rootfs.to_str().unwrap(),
        reference.as_str(),
    ]);
    let guard = ImageGuard::new(reference.clone());
    (work, reference, guard)
}
