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
