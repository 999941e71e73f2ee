//! From a measurement to matrix rows: which targets are the build's own (carried by most of
//! its fat binaries) and which are a few specialised kernels, and the `[[torch_build]]` /
//! `[[cuda_targets]]` text in the form of `crates/envctl-core/src/compat/matrix.toml`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::fatbin::{Kind, Target, Variant};
use crate::torch::{Measurement, TorchError};

/// A build's targets, split by how widely its fat binaries carry them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildTargets {
    /// Cubins in at least half of the fat binaries: the arch list the build was made with.
    pub targets: Vec<Target>,
    /// PTX in at least half of the fat binaries.
    pub ptx: Vec<Target>,
    /// Everything else, with the number of fat binaries carrying it.
    pub specialised: Vec<(Target, usize)>,
}

/// A target belongs to the build's arch list when at least half of the fat binaries carry
/// it: TORCH_CUDA_ARCH_LIST compiles every kernel file for each of its targets, while the
/// hand-tuned kernels (FlashAttention, CUTLASS) add a few fat binaries for `a`/`f` targets.
pub fn classify(census: &BTreeMap<Target, usize>, fatbins: usize) -> BuildTargets {
    let mut targets = Vec::new();
    let mut ptx = Vec::new();
    let mut specialised = Vec::new();
    for (target, count) in census {
        let widespread = count * 2 >= fatbins;
        match (widespread, target.kind) {
            (true, Kind::Cubin) => targets.push(*target),
            (true, Kind::Ptx) => ptx.push(*target),
            (false, _) => specialised.push((*target, *count)),
        }
    }
    BuildTargets {
        targets,
        ptx,
        specialised,
    }
}

/// A TOML basic string.
pub fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            character if character.is_control() => {
                let _ = write!(out, "\\u{:04X}", character as u32);
            }
            character => out.push(character),
        }
    }
    out.push('"');
    out
}

fn list<T: ToString>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|item| quoted(&item.to_string())).collect();
    format!("[{}]", items.join(", "))
}

/// Where the wheel came from, for the source: `PyPI`, an index URL, or a local file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    PyPi,
    Index(String),
    LocalFile,
}

impl Origin {
    fn describe(&self) -> String {
        match self {
            Origin::PyPi => "PyPI wheel".into(),
            Origin::Index(url) => format!("wheel from {url}"),
            Origin::LocalFile => "wheel".into(),
        }
    }
}

/// A target of the build's arch list that one of the wheel's other CUDA libraries carries
/// in fewer than half of its fat binaries: kernels of that library (linalg's MAGMA) are
/// missing for GPUs of that target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryGap {
    /// `libtorch_cuda_linalg.so`.
    pub library: String,
    pub target: Target,
    /// How many of the library's fat binaries carry it, of `fatbins`.
    pub carried: usize,
    pub fatbins: usize,
}

impl std::fmt::Display for LibraryGap {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.fatbins == 0 {
            write!(
                formatter,
                "{} carries no device code at all (no .nv_fatbin section)",
                self.library
            )
        } else {
            write!(
                formatter,
                "{} has {} in {} of its {} fat binaries",
                self.library, self.target, self.carried, self.fatbins
            )
        }
    }
}

/// What a CUDA library of torch holds, for the matrix's messages.
fn holds(library: &str) -> &'static str {
    match library {
        "libtorch_cuda_linalg.so" => "linalg operations run with MAGMA",
        _ => "its operations",
    }
}

/// Whether `code` in a fat binary runs on a GPU of the portable target `gpu`.
fn reaches(code: &Target, gpu: &Target) -> bool {
    match code.kind {
        Kind::Cubin => {
            code.variant == Variant::Portable
                && code.arch / 10 == gpu.arch / 10
                && code.arch <= gpu.arch
        }
        Kind::Ptx => code.arch <= gpu.arch,
    }
}

/// Every target of the main arch list that another CUDA library of the wheel mostly lacks:
/// nothing in most of its fat binaries runs on a GPU of that target.
pub fn library_gaps(measurement: &Measurement) -> Vec<LibraryGap> {
    let build = classify(&measurement.census, measurement.fatbins);
    let mut gaps = Vec::new();
    for library in &measurement.libraries {
        let name = library
            .name
            .rsplit('/')
            .next()
            .unwrap_or(&library.name)
            .to_string();
        if library.fatbins == 0 {
            // One line for the whole library, named by the first target it lacks.
            if let Some(first) = build.targets.first() {
                gaps.push(LibraryGap {
                    library: name.clone(),
                    target: *first,
                    carried: 0,
                    fatbins: 0,
                });
            }
            continue;
        }
        for target in &build.targets {
            // What runs on a GPU of this target: machine code of the same major and an equal
            // or lower minor (sm_70 code runs on 7.5), or PTX of an equal or lower target.
            // The census counts per target, so the most any one of them is carried stands
            // for the library's reach.
            let carried = library
                .census
                .iter()
                .filter(|(other, _)| reaches(other, target))
                .map(|(_, count)| *count)
                .max()
                .unwrap_or(0);
            if carried * 2 < library.fatbins {
                gaps.push(LibraryGap {
                    library: name.clone(),
                    target: *target,
                    carried,
                    fatbins: library.fatbins,
                });
            }
        }
    }
    gaps
}

/// The `[[torch_build]]` row of a measured wheel for `platform` (`x86_64`, `aarch64`).
/// `read` is the day of the measurement.
pub fn torch_build_row(
    measurement: &Measurement,
    origin: &Origin,
    platform: &str,
    read: &str,
) -> Result<String, TorchError> {
    let variant = measurement.variant()?;
    let build = classify(&measurement.census, measurement.fatbins);
    let mut row = String::new();
    let _ = writeln!(row, "[[torch_build]]");
    let _ = writeln!(row, "torch = {}", quoted(&measurement.release()));
    let _ = writeln!(row, "variant = {}", quoted(&variant));
    let _ = writeln!(row, "platform = {}", quoted(platform));
    let _ = writeln!(row, "targets = {}", list(&build.targets));
    // The matrix records one PTX target: the newest, the one a newer GPU would JIT.
    if let Some(newest) = build.ptx.last() {
        let _ = writeln!(row, "ptx = {}", quoted(&newest.to_string()));
    }
    let entries = library_gap_entries(measurement);
    if !entries.is_empty() {
        let _ = writeln!(row, "library_gaps = [{}]", entries.join(", "));
    }
    // The toolkit release the wheel pins: its minimum driver is the build's driver floor.
    let pins = measurement.pins.as_ref();
    if let Some(version) = pins.and_then(|pins| pins.cuda_toolkit_version.as_deref()) {
        let _ = writeln!(row, "cuda_runtime = {}", quoted(version));
    }
    let _ = writeln!(row, "status = \"verified\"");
    let _ = writeln!(
        row,
        "source = {}",
        quoted(&source_words(measurement, origin))
    );
    let _ = writeln!(row, "read = {}", quoted(read));
    let notes = row_notes(measurement, &build);
    let _ = writeln!(row, "note = {}", quoted(&notes.join("; ")));
    Ok(row)
}

/// Libraries with device code that lack targets of the arch list, one entry each; a
/// library without any device code is only noted (no kernels of its own may be by design).
fn library_gap_entries(measurement: &Measurement) -> Vec<String> {
    let mut entries = Vec::new();
    for library in &measurement.libraries {
        let gaps: Vec<LibraryGap> = library_gaps(measurement)
            .into_iter()
            .filter(|gap| gap.fatbins > 0 && library.name.ends_with(&format!("/{}", gap.library)))
            .collect();
        let (Some(first), false) = (gaps.first(), gaps.is_empty()) else {
            continue;
        };
        let missing: Vec<Target> = gaps.iter().map(|gap| gap.target).collect();
        let carried = gaps.iter().map(|gap| gap.carried).max().unwrap_or(0);
        entries.push(format!(
            "{{ library = {}, holds = {}, missing = {}, carried = {carried}, fatbins = {} }}",
            quoted(&first.library),
            quoted(holds(&first.library)),
            list(&missing),
            first.fatbins
        ));
    }
    entries
}

/// The row's `source`: where the wheel came from, what was read of it, and where its
/// `cuda_runtime` pin is written.
fn source_words(measurement: &Measurement, origin: &Origin) -> String {
    let pins = measurement.pins.as_ref();
    let mut source = format!(
        "measured (cargo xtask matrix torch): {} {}, sha256 {}, built {}; {} {} (CUDA {}); {} of torch/lib/libtorch_cuda.so, {} fat binaries",
        origin.describe(),
        measurement.wheel,
        measurement.sha256,
        measurement.built,
        crate::torch::VERSION_MEMBER,
        measurement.version.version,
        measurement.version.cuda.as_deref().unwrap_or("none"),
        crate::torch::SECTION,
        measurement.fatbins,
    );
    if let Some((pins, pin)) = pins.and_then(|pins| Some((pins, pins.cuda_toolkit.as_deref()?))) {
        let _ = write!(
            source,
            "; cuda_runtime: Requires-Dist `{pin}` of the same wheel's {}",
            pins.member
        );
    }
    source
}

/// The row's notes: its PTX, its specialised kernels, the library gaps and what the
/// wheel's METADATA pins.
fn row_notes(measurement: &Measurement, build: &BuildTargets) -> Vec<String> {
    let pins = measurement.pins.as_ref();
    let mut notes = Vec::new();
    if build.ptx.is_empty() {
        notes.push("no PTX".to_string());
    } else if build.ptx.len() > 1 {
        notes.push(format!("PTX for {}", names(&build.ptx)));
    }
    if !build.specialised.is_empty() {
        let kernels: Vec<String> = build
            .specialised
            .iter()
            .map(|(target, count)| format!("{target} ({count})"))
            .collect();
        notes.push(format!(
            "also specialised kernels in a few of the {} fat binaries: {}",
            measurement.fatbins,
            kernels.join(", ")
        ));
    }
    for gap in library_gaps(measurement) {
        notes.push(gap.to_string());
    }
    match pins {
        Some(pins) if pins.cuda_toolkit.is_none() => match &pins.runtime_component {
            Some(component) => notes.push(format!(
                "its METADATA pins {component}, a component version: no cuda_runtime"
            )),
            None => notes.push("its METADATA pins no CUDA runtime".to_string()),
        },
        Some(_) => {}
        None => notes.push("the wheel has no *.dist-info/METADATA".to_string()),
    }
    if let Some(cudnn) = pins.and_then(|pins| pins.cudnn.as_deref()) {
        notes.push(format!("pins {cudnn}"));
    }
    notes
}

fn names(targets: &[Target]) -> String {
    targets
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The targets `ptxas --help` accepts, for a `[[cuda_targets]]` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerTargets {
    /// `13.0` of `13.0.88`.
    pub cuda: String,
    pub package: String,
    pub version: String,
    pub wheel: String,
    pub sha256: String,
    /// Real targets (sm_XY, sm_XYa, sm_XYf), sorted.
    pub real: Vec<Target>,
    /// Virtual targets without a suffix (compute_XY), sorted: the list
    /// `nvcc --list-gpu-arch` prints.
    pub virtual_targets: Vec<Target>,
}

pub fn cuda_targets_row(targets: &CompilerTargets, read: &str) -> String {
    let mut row = String::new();
    let _ = writeln!(row, "[[cuda_targets]]");
    let _ = writeln!(row, "cuda = {}", quoted(&targets.cuda));
    let _ = writeln!(row, "targets = {}", list(&targets.real));
    if !targets.virtual_targets.is_empty() {
        let _ = writeln!(row, "virtual_targets = {}", list(&targets.virtual_targets));
    }
    if let (Some(lowest), Some(highest)) = (targets.real.first(), targets.real.last()) {
        let _ = writeln!(row, "lowest = {}", quoted(&lowest.to_string()));
        let _ = writeln!(row, "highest = {}", quoted(&highest.to_string()));
    }
    let _ = writeln!(row, "status = \"verified\"");
    let source = format!(
        "measured (cargo xtask matrix nvcc): NVIDIA ptxas --help (--gpu-name allowed values) from PyPI package {}=={} ({}, sha256 {})",
        targets.package, targets.version, targets.wheel, targets.sha256
    );
    let _ = writeln!(row, "source = {}", quoted(&source));
    let _ = writeln!(row, "read = {}", quoted(read));
    row
}

/// Portable targets only (no `a`/`f`): what `nvcc --list-gpu-arch` lists.
pub fn portable(targets: &[Target]) -> Vec<Target> {
    targets
        .iter()
        .copied()
        .filter(|target| target.variant == Variant::Portable)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torch::VersionFile;

    fn target(kind: Kind, arch: u32, variant: Variant) -> Target {
        Target {
            kind,
            arch,
            variant,
        }
    }

    fn measurement(with_ptx: bool) -> Measurement {
        let mut census = BTreeMap::new();
        for arch in [75, 80, 86, 90, 100, 120] {
            census.insert(target(Kind::Cubin, arch, Variant::Portable), 476);
        }
        census.insert(target(Kind::Cubin, 90, Variant::ArchitectureSpecific), 4);
        census.insert(target(Kind::Cubin, 103, Variant::Family), 59);
        if with_ptx {
            census.insert(target(Kind::Ptx, 120, Variant::Portable), 470);
        }
        Measurement {
            wheel: "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl".into(),
            sha256: "ab".repeat(32),
            bytes: 539_136_850,
            built: "2026-11-02".into(),
            version: VersionFile {
                version: "2.15.0+cu132".into(),
                cuda: Some("13.2".into()),
            },
            fatbins: 476,
            census,
            libraries: Vec::new(),
            pins: Some(crate::metadata::pins(
                "torch-2.15.0.dist-info/METADATA",
                "Name: torch\nRequires-Dist: cuda-toolkit[cudart]==13.2.2; platform_system == \"Linux\"\nRequires-Dist: nvidia-cudnn-cu13==9.26.0.51\n",
            )),
        }
    }

    #[test]
    fn the_arch_list_is_what_most_fat_binaries_carry() {
        let build = classify(&measurement(true).census, 476);
        assert_eq!(
            names(&build.targets),
            "sm_75, sm_80, sm_86, sm_90, sm_100, sm_120"
        );
        assert_eq!(names(&build.ptx), "compute_120");
        assert_eq!(build.specialised.len(), 2);
    }

    #[test]
    fn writes_a_row_the_matrix_can_read() {
        let row =
            torch_build_row(&measurement(false), &Origin::PyPi, "x86_64", "2026-12-01").unwrap();
        let parsed: toml::Table = toml::from_str(&row).unwrap();
        let build = &parsed["torch_build"].as_array().unwrap()[0];
        assert_eq!(build["torch"].as_str(), Some("2.15"));
        assert_eq!(build["variant"].as_str(), Some("cu132"));
        assert_eq!(build["platform"].as_str(), Some("x86_64"));
        assert_eq!(build["targets"].as_array().unwrap().len(), 6);
        assert!(build.get("ptx").is_none());
        let source = build["source"].as_str().unwrap();
        assert!(source.contains("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"));
        assert!(source.contains(&"ab".repeat(32)));
        assert!(source.contains("built 2026-11-02"));
        // The toolkit release the METADATA pins, with where it was read.
        assert_eq!(build["cuda_runtime"].as_str(), Some("13.2.2"));
        assert!(
            source.contains(
                "cuda_runtime: Requires-Dist `cuda-toolkit[cudart]==13.2.2` of the same wheel's torch-2.15.0.dist-info/METADATA"
            ),
            "{source}"
        );
        let note = build["note"].as_str().unwrap();
        assert!(note.starts_with("no PTX"), "{note}");
        assert!(
            note.contains("sm_90a (4)") && note.contains("sm_103f (59)"),
            "{note}"
        );
        assert!(note.contains("pins nvidia-cudnn-cu13==9.26.0.51"), "{note}");
    }

    #[test]
    fn a_row_records_the_newest_ptx() {
        let row = torch_build_row(
            &measurement(true),
            &Origin::LocalFile,
            "aarch64",
            "2026-12-01",
        )
        .unwrap();
        assert!(row.contains("ptx = \"compute_120\"\n"), "{row}");
        assert!(row.contains("platform = \"aarch64\"\n"), "{row}");
    }

    /// linalg's MAGMA kernels of the PyPI 2.14.1 wheel start at sm_80: a library that mostly
    /// lacks a target of the arch list is named, per target, in the note.
    #[test]
    fn a_library_lacking_a_target_is_named() {
        let mut measured = measurement(false);
        let mut census = BTreeMap::new();
        for arch in [80, 86, 90, 100, 120] {
            census.insert(target(Kind::Cubin, arch, Variant::Portable), 65);
        }
        measured.libraries.push(crate::torch::Library {
            name: "torch/lib/libtorch_cuda_linalg.so".into(),
            fatbins: 65,
            census,
        });
        let gaps = library_gaps(&measured);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(
            gaps[0].to_string(),
            "libtorch_cuda_linalg.so has sm_75 in 0 of its 65 fat binaries"
        );
        let row = torch_build_row(&measured, &Origin::PyPi, "x86_64", "2026-12-01").unwrap();
        assert!(
            row.contains("libtorch_cuda_linalg.so has sm_75 in 0 of its 65 fat binaries"),
            "{row}"
        );
        // The row carries the gap as the matrix reads it.
        let parsed: toml::Table = toml::from_str(&row).unwrap();
        let gap = &parsed["torch_build"].as_array().unwrap()[0]["library_gaps"][0];
        assert_eq!(gap["library"].as_str(), Some("libtorch_cuda_linalg.so"));
        assert_eq!(
            gap["holds"].as_str(),
            Some("linalg operations run with MAGMA")
        );
        assert_eq!(gap["missing"][0].as_str(), Some("sm_75"));
        assert_eq!(gap["fatbins"].as_integer(), Some(65));
        // A library that carries every target is not named.
        measured.libraries[0]
            .census
            .insert(target(Kind::Cubin, 75, Variant::Portable), 64);
        assert!(library_gaps(&measured).is_empty());
        // Nor one whose sm_70 machine code runs on 7.5 (the cu12x wheels' linalg), or whose
        // PTX does; an sm_80 cubin does not.
        let census = &mut measured.libraries[0].census;
        census.remove(&target(Kind::Cubin, 75, Variant::Portable));
        census.insert(target(Kind::Cubin, 70, Variant::Portable), 107);
        assert!(library_gaps(&measured).is_empty());
        let census = &mut measured.libraries[0].census;
        census.remove(&target(Kind::Cubin, 70, Variant::Portable));
        census.insert(target(Kind::Ptx, 75, Variant::Portable), 65);
        assert!(library_gaps(&measured).is_empty());
    }

    #[test]
    fn compiler_rows_list_lowest_and_highest() {
        let real = vec![
            target(Kind::Cubin, 75, Variant::Portable),
            target(Kind::Cubin, 121, Variant::Portable),
            target(Kind::Cubin, 121, Variant::Family),
        ];
        let row = cuda_targets_row(
            &CompilerTargets {
                cuda: "13.0".into(),
                package: "nvidia-cuda-nvcc".into(),
                version: "13.0.88".into(),
                wheel: "w.whl".into(),
                sha256: "00".into(),
                real: real.clone(),
                virtual_targets: vec![target(Kind::Ptx, 75, Variant::Portable)],
            },
            "2026-12-01",
        );
        let parsed: toml::Table = toml::from_str(&row).unwrap();
        let targets = &parsed["cuda_targets"].as_array().unwrap()[0];
        assert_eq!(targets["lowest"].as_str(), Some("sm_75"));
        assert_eq!(targets["highest"].as_str(), Some("sm_121f"));
        assert_eq!(targets["virtual_targets"].as_array().unwrap().len(), 1);
        assert_eq!(portable(&real).len(), 2);
    }

    #[test]
    fn quoting_escapes_what_toml_needs() {
        assert_eq!(quoted("a \"b\" \\ c\n"), "\"a \\\"b\\\" \\\\ c\\n\"");
    }
}
