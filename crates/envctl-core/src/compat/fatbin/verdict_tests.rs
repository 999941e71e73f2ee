//! `gpu.library-arch` over the image × GPU cases of `tests/corpus/fatbin/verdicts.toml`:
//! every outcome as the corpus says, recall of failures ≥ 95 %, false alarms ≤ 2 %.

use serde::Deserialize;

use super::container::{Damage, DamageKind};
use super::*;
use crate::checks::Status;
use crate::profile::model::CudaVersion;

const CASES: &str = include_str!("../../../../../tests/corpus/fatbin/verdicts.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    source: String,
    library: String,
    package: String,
    #[serde(default)]
    sass: Vec<String>,
    #[serde(default)]
    ptx: Vec<PtxCase>,
    #[serde(default)]
    damaged: bool,
    gpu: String,
    driver_cuda: String,
    outcome: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PtxCase {
    target: String,
    isa: String,
}

fn entry(target: Target, isa: (u16, u16)) -> Entry {
    Entry {
        kind: match target.kind {
            TargetKind::Real => EntryKind::Cubin,
            TargetKind::Virtual => EntryKind::Ptx,
        },
        arch: target.capability.major * 10 + target.capability.minor,
        variant: match target.suffix {
            TargetSuffix::Portable => Variant::Portable,
            TargetSuffix::ArchitectureSpecific => Variant::ArchitectureSpecific,
            TargetSuffix::Family => Variant::Family,
        },
        code_version: isa,
        compression: Compression::None,
    }
}

fn code_of(case: &Case) -> LibraryCode {
    let mut entries: Vec<Entry> = case
        .sass
        .iter()
        .map(|name| entry(name.parse().unwrap(), (1, 8)))
        .collect();
    for ptx in &case.ptx {
        let (major, minor) = ptx.isa.split_once('.').unwrap();
        entries.push(entry(
            ptx.target.parse().unwrap(),
            (major.parse().unwrap(), minor.parse().unwrap()),
        ));
    }
    LibraryCode {
        sections: vec![SectionCode {
            name: LOADED_SECTION,
            containers: 1,
            entries,
            damage: case.damaged.then_some(Damage {
                offset: 0x400,
                what: DamageKind::BadMagic { found: 0xdead_beef },
            }),
        }],
    }
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Fail => "fail",
        Status::Warn => "warn",
        Status::Pass => "pass",
        Status::Info => "info",
    }
}

#[test]
fn every_case_of_the_corpus_has_its_known_outcome() {
    let corpus: Corpus = toml::from_str(CASES).unwrap();
    assert!(corpus.case.len() >= 20, "{} cases", corpus.case.len());
    let (mut failures, mut caught, mut others, mut false_alarms) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for case in &corpus.case {
        assert!(!case.source.is_empty(), "{}: no source", case.name);
        let code = code_of(case).summary();
        let capability: ComputeCapability = case.gpu.parse().unwrap();
        let driver_cuda: Option<CudaVersion> =
            (!case.driver_cuda.is_empty()).then(|| case.driver_cuda.parse().unwrap());
        let library = Library {
            path: &case.library,
            package: Some(&case.package),
            code: &code,
        };
        let finding = library_finding(library, "GPU 0", capability, driver_cuda).unwrap();
        let got = status_word(finding.status);
        if case.outcome == "fail" {
            failures += 1;
            caught += usize::from(got == "fail");
        } else {
            others += 1;
            false_alarms += usize::from(got == "fail");
        }
        if got != case.outcome {
            wrong.push(format!(
                "{}: expected {}, got {got}: {}",
                case.name, case.outcome, finding.message
            ));
        }
        if got == "fail" {
            // A failure names the library, its package and a fix.
            assert!(
                finding.message.contains(&case.library),
                "{}",
                finding.message
            );
            assert!(
                finding.message.contains(&case.package),
                "{}",
                finding.message
            );
            assert!(finding.hint.is_some(), "{}", finding.message);
        }
    }
    let recall = caught as f64 / failures as f64;
    let false_alarm_rate = false_alarms as f64 / others as f64;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(recall >= 0.95, "recall {recall}");
    assert!(false_alarm_rate <= 0.02, "false alarms {false_alarm_rate}");
    // Both kinds are there in number.
    assert!(
        failures >= 10 && others >= 10,
        "{failures} failures, {others} others"
    );
}

#[test]
fn the_no_kernel_image_message_says_what_the_library_has_and_the_fix() {
    let code = LibraryCode {
        sections: vec![SectionCode {
            name: LOADED_SECTION,
            containers: 1,
            entries: vec![
                entry("sm_80".parse().unwrap(), (1, 8)),
                entry("sm_90".parse().unwrap(), (1, 8)),
            ],
            damage: None,
        }],
    };
    let code = code.summary();
    let library = Library {
        path: "/usr/lib/python3/site-packages/flash_attn_2_cuda.so",
        package: Some("flash_attn 2.7.4"),
        code: &code,
    };
    let capability = ComputeCapability::new(12, 0);
    let finding =
        library_finding(library, "GPU 0 (NVIDIA GeForce RTX 5090)", capability, None).unwrap();
    assert_eq!(finding.id, GPU_LIBRARY_ARCH);
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(
        finding.message,
        "/usr/lib/python3/site-packages/flash_attn_2_cuda.so (from flash_attn 2.7.4) has machine \
         code for sm_80, sm_90 and no PTX; GPU 0 (NVIDIA GeForce RTX 5090) is sm_120 → it will \
         fail with `no kernel image is available for execution on the device`"
    );
    assert_eq!(
        finding.hint.as_deref(),
        Some(
            "install a build of flash_attn 2.7.4 compiled for sm_120 (for example \
             `TORCH_CUDA_ARCH_LIST=\"12.0\" pip install --no-binary :all: --no-build-isolation \
             flash_attn`), or use an image whose build has sm_120"
        )
    );
    assert_eq!(
        finding.facts["rests_on"],
        "image scan (the library's fat binaries)"
    );
    // Without a package, the library alone is named.
    let library = Library {
        package: None,
        ..library
    };
    let finding = library_finding(library, "GPU 0", capability, None).unwrap();
    assert!(finding.message.contains("(no package records it)"));
    // A library without GPU code gives no finding.
    let empty = LibraryCode::default().summary();
    let library = Library {
        code: &empty,
        ..library
    };
    assert!(library_finding(library, "GPU 0", capability, None).is_none());
}

fn scanned(path: &str, sass: &[&str]) -> super::ScannedLibrary {
    super::ScannedLibrary {
        path: path.to_string(),
        package: Some("bitsandbytes 0.50.2".to_string()),
        code: LibraryCode {
            sections: vec![SectionCode {
                name: LOADED_SECTION,
                containers: 1,
                entries: sass
                    .iter()
                    .map(|name| entry(name.parse().unwrap(), (1, 8)))
                    .collect(),
                damage: None,
            }],
        }
        .summary(),
    }
}

#[test]
fn builds_for_several_cuda_releases_fail_only_when_none_runs() {
    // bitsandbytes 0.50.2 ships one library per CUDA release and loads one: on an sm_120
    // GPU its CUDA 11.8 build fails, its CUDA 12.8 build runs (corpus.toml).
    let folder = "usr/lib/python3/site-packages/bitsandbytes";
    let old = scanned(
        &format!("{folder}/libbitsandbytes_cuda118.so"),
        &["sm_80", "sm_90"],
    );
    let new = scanned(
        &format!("{folder}/libbitsandbytes_cuda128.so"),
        &["sm_90", "sm_120"],
    );
    let other = scanned("usr/lib/libother_cu118.so", &["sm_80"]);
    assert_eq!(
        super::verdict::variant_group(&old.path),
        super::verdict::variant_group(&new.path)
    );
    assert_ne!(
        super::verdict::variant_group(&old.path),
        super::verdict::variant_group(&other.path)
    );
    let image = |libraries: Vec<super::ScannedLibrary>| ImageLibraries {
        schema_version: IMAGE_LIBRARIES_SCHEMA,
        image_id: None,
        libraries,
        unreadable: Vec::new(),
        unread_layers: Vec::new(),
        shared_objects: 2,
    };
    let gpus = [("GPU 0".to_string(), ComputeCapability::new(12, 0))];
    let findings = image_findings("bnb", &image(vec![old.clone(), new]), &gpus, None);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].status, Status::Pass);
    // Without a build that runs, each is named.
    let older = scanned(&format!("{folder}/libbitsandbytes_cuda121.so"), &["sm_60"]);
    let findings = image_findings("bnb", &image(vec![old, older]), &gpus, None);
    assert_eq!(findings.len(), 2, "{findings:#?}");
    assert!(
        findings
            .iter()
            .all(|finding| finding.status == Status::Fail)
    );
}
