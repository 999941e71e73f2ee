//! Measuring a torch wheel: its `torch/version.py` (version, CUDA) and the census of the
//! `.nv_fatbin` section of `torch/lib/libtorch_cuda.so` (which fat binaries carry which
//! cubin and PTX targets), and of every other `torch/lib/libtorch_cuda*.so` the wheel
//! ships (`libtorch_cuda_linalg.so`: the MAGMA kernels, built for fewer targets). The
//! wheel's own bytes are the source: its file name, sha256 and the date in its zip
//! directory go into the row. A CPU wheel (`cuda = None`) is said to be one. Its
//! `*.dist-info/METADATA` gives the CUDA runtime it pins (`metadata`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use sha2::{Digest, Sha256};
use thiserror::Error;

use envctl_fatbin::elf::{ElfError, ElfFileError, read_fatbin_sections};

use crate::fatbin::{self, FatbinError, Target};
use crate::metadata::{self, Pins};
use crate::zip::{self, ZipError};

pub const VERSION_MEMBER: &str = "torch/version.py";
pub const LIBRARY_MEMBER: &str = "torch/lib/libtorch_cuda.so";
/// Every CUDA library of torch is `torch/lib/libtorch_cuda*.so`.
const LIBRARY_PREFIX: &str = "torch/lib/libtorch_cuda";
pub const SECTION: &str = ".nv_fatbin";

#[derive(Debug, Error)]
pub enum TorchError {
    #[error("reading the wheel")]
    Zip(#[from] ZipError),
    #[error("reading {LIBRARY_MEMBER}")]
    Elf(#[from] ElfError),
    #[error("reading {library}")]
    LibraryElf {
        library: String,
        #[source]
        source: ElfError,
    },
    #[error("reading the {SECTION} section of {LIBRARY_MEMBER}")]
    Fatbin(#[from] FatbinError),
    #[error("{LIBRARY_MEMBER} has no {SECTION} section: no CUDA code to measure")]
    NoSection,
    #[error("{VERSION_MEMBER} has no `__version__ = '...'` line")]
    NoVersion,
    #[error("{VERSION_MEMBER} says `cuda = None`: a CPU build has no CUDA rows")]
    NotCuda,
    #[error(
        "the wheel is torch {found} (its {VERSION_MEMBER}), not the torch {asked} that was asked for"
    )]
    WrongVersion { asked: String, found: String },
    #[error(
        "{VERSION_MEMBER}: version {version} names {from_version}, but cuda = '{cuda}' is {from_cuda}"
    )]
    VariantMismatch {
        version: String,
        cuda: String,
        from_version: String,
        from_cuda: String,
    },
    #[error("reading the wheel file")]
    Io(#[from] io::Error),
}

/// `torch/version.py` as far as the matrix needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFile {
    /// `2.15.0+cu132`.
    pub version: String,
    /// `13.2`; `None` for a CPU build.
    pub cuda: Option<String>,
}

/// Reads `__version__ = '2.15.0+cu132'` and `cuda: Optional[str] = '13.2'` (older files:
/// `cuda = '12.1'`).
pub fn parse_version_file(text: &str) -> Result<VersionFile, TorchError> {
    let mut version = None;
    let mut cuda = None;
    for line in text.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.split_once(':').map_or(name, |(name, _)| name).trim();
        let value = value.trim();
        let quoted = value
            .strip_prefix('\'')
            .and_then(|rest| rest.strip_suffix('\''))
            .or_else(|| {
                value
                    .strip_prefix('"')
                    .and_then(|rest| rest.strip_suffix('"'))
            })
            .map(str::to_string);
        match name {
            "__version__" => version = quoted,
            "cuda" => cuda = quoted,
            _ => {}
        }
    }
    Ok(VersionFile {
        version: version.ok_or(TorchError::NoVersion)?,
        cuda,
    })
}

/// Whether `asked` (`2.11.0`, or `2.11.0+cu130` with its local part) names the version
/// `version.py` gives (`2.11.0+cu130`): a wheel measured as another release would put its
/// arch list in the wrong row.
pub fn check_version(asked: &str, version: &VersionFile) -> Result<(), TorchError> {
    let found = version.version.as_str();
    let public = found.split_once('+').map_or(found, |(public, _)| public);
    let matches = if asked.contains('+') {
        asked == found
    } else {
        asked == public
    };
    if matches {
        Ok(())
    } else {
        Err(TorchError::WrongVersion {
            asked: asked.to_string(),
            found: found.to_string(),
        })
    }
}

/// The census of one CUDA library of the wheel other than `libtorch_cuda.so`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// The member's name: `torch/lib/libtorch_cuda_linalg.so`.
    pub name: String,
    /// 0 when the library has no `.nv_fatbin` section at all: no device code (the aarch64
    /// 2.11.0 wheel's linalg, built without MAGMA's kernels).
    pub fatbins: usize,
    pub census: BTreeMap<Target, usize>,
}

/// What a wheel's version.py says, when it is a CPU build: nothing to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wheel {
    Cuda(Box<Measurement>),
    /// `cuda = None`: the version it gives (`2.10.0`, `2.10.0+cpu`) and the build date.
    Cpu {
        version: String,
        built: String,
    },
}

/// What one wheel holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// The wheel's file name.
    pub wheel: String,
    pub sha256: String,
    pub bytes: u64,
    /// The date of `torch/version.py` in the wheel's zip directory: when it was built.
    pub built: String,
    pub version: VersionFile,
    pub fatbins: usize,
    /// How many fat binaries carry each target.
    pub census: BTreeMap<Target, usize>,
    /// The wheel's other CUDA libraries (`libtorch_cuda_linalg.so`), by name.
    pub libraries: Vec<Library>,
    /// The runtime pins of its METADATA; `None` when the wheel has no METADATA.
    pub pins: Option<Pins>,
}

impl Measurement {
    /// `2.15` of `2.15.0+cu132`.
    pub fn release(&self) -> String {
        let public = self
            .version
            .version
            .split_once('+')
            .map_or(self.version.version.as_str(), |(public, _)| public);
        let mut parts = public.split('.');
        match (parts.next(), parts.next()) {
            (Some(major), Some(minor)) => format!("{major}.{minor}"),
            _ => public.to_string(),
        }
    }

    /// `cu132`: the local version's and `cuda`'s, which must agree.
    pub fn variant(&self) -> Result<String, TorchError> {
        let cuda = self.version.cuda.as_deref().ok_or(TorchError::NotCuda)?;
        let from_cuda = format!("cu{}", cuda.replace('.', ""));
        match self.version.version.split_once('+') {
            Some((_, local)) if local.starts_with("cu") && local != from_cuda => {
                Err(TorchError::VariantMismatch {
                    version: self.version.version.clone(),
                    cuda: cuda.to_string(),
                    from_version: local.to_string(),
                    from_cuda,
                })
            }
            _ => Ok(from_cuda),
        }
    }
}

/// The sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = BufReader::new(File::open(path)?);
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Measures the wheel at `path`; `asked` is the version it must be (see
/// [`check_version`]). Each library is inflated into an unnamed temporary file (they are
/// 0.5–1.5 GB), then only its section headers and `.nv_fatbin` are read.
pub fn measure_wheel(path: &Path, asked: &str) -> Result<Wheel, TorchError> {
    let wheel = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let sha256 = sha256_file(path)?;
    let bytes = std::fs::metadata(path)?.len();
    let mut file = BufReader::new(File::open(path)?);
    let archive = measure_archive(&mut file)?;
    check_version(asked, &archive.version)?;
    if archive.version.cuda.is_none() {
        return Ok(Wheel::Cpu {
            version: archive.version.version,
            built: archive.built,
        });
    }
    let (census, fatbins) = archive.main.ok_or(TorchError::NotCuda)?;
    Ok(Wheel::Cuda(Box::new(Measurement {
        wheel,
        sha256,
        bytes,
        built: archive.built,
        version: archive.version,
        fatbins,
        census,
        libraries: archive.libraries,
        pins: archive.pins,
    })))
}

/// What the archive holds, apart from the file's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveFacts {
    pub version: VersionFile,
    /// The date of `torch/version.py` in the zip directory.
    pub built: String,
    /// `libtorch_cuda.so`'s census and fat-binary count; `None` for a CPU build.
    pub main: Option<(BTreeMap<Target, usize>, usize)>,
    pub libraries: Vec<Library>,
    /// The `Requires-Dist` pins of `*.dist-info/METADATA`.
    pub pins: Option<Pins>,
}

fn library_census<R: Read + Seek>(
    file: &mut R,
    member: &zip::Member,
) -> Result<(BTreeMap<Target, usize>, usize), TorchError> {
    let mut inflated = tempfile::tempfile()?;
    {
        let mut writer = io::BufWriter::new(&mut inflated);
        zip::extract(file, member, &mut writer)?;
        io::Write::flush(&mut writer)?;
    }
    let sections = read_fatbin_sections(&mut inflated).map_err(|error| match error {
        ElfFileError::Elf(error) => TorchError::Elf(error),
        ElfFileError::Io(error) => TorchError::Io(error),
    })?;
    let section = sections
        .into_iter()
        .find(|section| section.name == SECTION)
        .ok_or(TorchError::NoSection)?;
    Ok(fatbin::census(&section.bytes)?)
}

/// The part of the measurement that reads the archive. A CPU build (version.py's `cuda =
/// None`) is read no further: it has no CUDA library to measure.
pub fn measure_archive<R: Read + Seek>(file: &mut R) -> Result<ArchiveFacts, TorchError> {
    let members = zip::members(file)?;
    let version_member = zip::find(&members, VERSION_MEMBER)?;
    let text = zip::read_member(file, version_member)?;
    let version = parse_version_file(&String::from_utf8_lossy(&text))?;
    let built = version_member.date.clone();
    if version.cuda.is_none() {
        return Ok(ArchiveFacts {
            version,
            built,
            main: None,
            libraries: Vec::new(),
            pins: None,
        });
    }
    let pins = match members
        .iter()
        .find(|member| metadata::is_metadata_member(&member.name))
    {
        Some(member) => {
            let text = zip::read_member(file, member)?;
            Some(metadata::pins(
                &member.name,
                &String::from_utf8_lossy(&text),
            ))
        }
        None => None,
    };
    let library = zip::find(&members, LIBRARY_MEMBER)?;
    let main = library_census(file, library)?;
    let mut libraries = Vec::new();
    for member in members.iter().filter(|member| {
        member.name.starts_with(LIBRARY_PREFIX)
            && member.name.ends_with(".so")
            && member.name != LIBRARY_MEMBER
    }) {
        let (census, fatbins) = match library_census(file, member) {
            Ok(found) => found,
            Err(TorchError::NoSection) => (BTreeMap::new(), 0),
            Err(TorchError::Elf(source)) => {
                return Err(TorchError::LibraryElf {
                    library: member.name.clone(),
                    source,
                });
            }
            Err(other) => return Err(other),
        };
        libraries.push(Library {
            name: member.name.clone(),
            fatbins,
            census,
        });
    }
    Ok(ArchiveFacts {
        version,
        built,
        main: Some(main),
        libraries,
        pins,
    })
}

/// A synthetic wheel for tests, here and in `main`.
#[cfg(test)]
pub mod tests_support {
    use super::*;
    use envctl_fatbin::fixture::{FixtureEntry, container as fatbin, elf};

    /// A wheel as PyPI's look: version.py and a libtorch_cuda.so whose `.nv_fatbin` holds
    /// fat binaries of the main targets, one with specialised kernels, and PTX.
    pub fn wheel_fixture(version_py: &str, with_ptx: bool) -> Vec<u8> {
        let main = || {
            let mut entries = vec![
                FixtureEntry::cubin(75),
                FixtureEntry::cubin(80),
                FixtureEntry::cubin(120),
            ];
            if with_ptx {
                entries.push(FixtureEntry::ptx(120, (8, 8)));
            }
            entries
        };
        let mut section = Vec::new();
        for _ in 0..3 {
            section.extend(fatbin(&main()));
        }
        let mut special = main();
        special.push(FixtureEntry::cubin(90).specific());
        special.push(FixtureEntry::cubin(103).family());
        section.extend(fatbin(&special));
        let library = elf(&[(".text", b"host code"), (SECTION, &section)]);
        zip::fixture(&[
            ("torch/__init__.py", b"", true),
            (VERSION_MEMBER, version_py.as_bytes(), true),
            (LIBRARY_MEMBER, &library, true),
            (
                "torch-2.15.0.dist-info/METADATA",
                b"Name: torch\nVersion: 2.15.0\nRequires-Dist: cuda-toolkit[cublas,cudart]==13.2.2; platform_system == \"Linux\"\n",
                true,
            ),
        ])
    }

    pub const VERSION_PY: &str = "from typing import Optional\n\n__all__ = ['__version__']\n__version__ = '2.15.0+cu132'\ndebug = False\ncuda: Optional[str] = '13.2'\nhip: Optional[str] = None\n";

    pub fn wheel() -> Vec<u8> {
        wheel_fixture(VERSION_PY, true)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::tests_support::{VERSION_PY, wheel_fixture};
    use super::*;

    #[test]
    fn parses_both_forms_of_version_py() {
        assert_eq!(
            parse_version_file(VERSION_PY).unwrap(),
            VersionFile {
                version: "2.15.0+cu132".into(),
                cuda: Some("13.2".into())
            }
        );
        let old = "__version__ = '2.1.2+cu121'\ndebug = False\ncuda = '12.1'\n";
        assert_eq!(
            parse_version_file(old).unwrap().cuda.as_deref(),
            Some("12.1")
        );
        let cpu = "__version__ = '2.15.0+cpu'\ncuda: Optional[str] = None\n";
        assert_eq!(parse_version_file(cpu).unwrap().cuda, None);
        assert!(matches!(
            parse_version_file("debug = False\n"),
            Err(TorchError::NoVersion)
        ));
    }

    #[test]
    fn measures_a_synthetic_wheel() {
        let mut file = Cursor::new(wheel_fixture(VERSION_PY, true));
        let archive = measure_archive(&mut file).unwrap();
        let (census, fatbins) = archive.main.unwrap();
        assert_eq!(archive.version.version, "2.15.0+cu132");
        assert_eq!(archive.built, "2026-11-30");
        assert!(archive.libraries.is_empty());
        assert_eq!(fatbins, 4);
        let pins = archive.pins.unwrap();
        assert_eq!(pins.member, "torch-2.15.0.dist-info/METADATA");
        assert_eq!(pins.cuda_toolkit_version.as_deref(), Some("13.2.2"));
        let named: Vec<(String, usize)> = census
            .iter()
            .map(|(target, count)| (target.to_string(), *count))
            .collect();
        assert_eq!(
            named,
            [
                ("compute_120".to_string(), 4),
                ("sm_75".to_string(), 4),
                ("sm_80".to_string(), 4),
                ("sm_90a".to_string(), 1),
                ("sm_103f".to_string(), 1),
                ("sm_120".to_string(), 4),
            ]
        );
    }

    #[test]
    fn a_wheel_without_the_library_is_an_error() {
        let mut file = Cursor::new(zip::fixture(&[(
            VERSION_MEMBER,
            VERSION_PY.as_bytes(),
            false,
        )]));
        assert!(matches!(
            measure_archive(&mut file),
            Err(TorchError::Zip(ZipError::NoMember(name))) if name == LIBRARY_MEMBER
        ));
    }

    /// PyPI's aarch64 wheels up to 2.10 are CPU builds: version.py says `cuda = None` and no
    /// libtorch_cuda.so exists. That is said, not reported as a missing member.
    #[test]
    fn a_cpu_wheel_is_named_as_such() {
        let version_py = "__version__ = '2.10.0'\ndebug = False\ncuda: Optional[str] = None\n";
        let mut file = Cursor::new(zip::fixture(&[
            ("torch/__init__.py", b"", true),
            (VERSION_MEMBER, version_py.as_bytes(), true),
        ]));
        let archive = measure_archive(&mut file).unwrap();
        assert_eq!(archive.main, None);
        assert_eq!(archive.version.version, "2.10.0");
        let folder = tempfile::tempdir().unwrap();
        let path = folder
            .path()
            .join("torch-2.10.0-cp311-cp311-manylinux_2_28_aarch64.whl");
        std::fs::write(&path, file.into_inner()).unwrap();
        assert!(matches!(
            measure_wheel(&path, "2.10.0").unwrap(),
            Wheel::Cpu { version, .. } if version == "2.10.0"
        ));
    }

    /// `--wheel FILE` is checked against the VERSION asked for.
    #[test]
    fn the_wheel_must_be_the_version_asked_for() {
        let version = parse_version_file(VERSION_PY).unwrap();
        assert!(check_version("2.15.0", &version).is_ok());
        assert!(check_version("2.15.0+cu132", &version).is_ok());
        assert!(matches!(
            check_version("2.14.1", &version),
            Err(TorchError::WrongVersion { asked, found }) if asked == "2.14.1" && found == "2.15.0+cu132"
        ));
        assert!(check_version("2.15.0+cu130", &version).is_err());
        assert!(check_version("2.15", &version).is_err());
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("w.whl");
        std::fs::write(&path, wheel_fixture(VERSION_PY, false)).unwrap();
        assert!(matches!(
            measure_wheel(&path, "2.11.0"),
            Err(TorchError::WrongVersion { .. })
        ));
    }

    /// Every `libtorch_cuda*.so` is measured, each on its own.
    #[test]
    fn every_cuda_library_is_measured() {
        use envctl_fatbin::fixture::{FixtureEntry, container as fatbin, elf};
        let section = fatbin(&[FixtureEntry::cubin(80), FixtureEntry::cubin(120)]);
        let linalg = elf(&[(SECTION, &section)]);
        let main = wheel_fixture(VERSION_PY, false);
        let library = {
            let mut file = Cursor::new(&main);
            let all = zip::members(&mut file).unwrap();
            let member = zip::find(&all, LIBRARY_MEMBER).unwrap().clone();
            zip::read_member(&mut file, &member).unwrap()
        };
        let mut file = Cursor::new(zip::fixture(&[
            (VERSION_MEMBER, VERSION_PY.as_bytes(), true),
            (LIBRARY_MEMBER, &library, true),
            ("torch/lib/libtorch_cuda_linalg.so", &linalg, true),
            ("torch/lib/libtorch_cpu.so", b"not measured", true),
            (
                "torch/lib/libtorch_cuda_extra.so",
                &elf(&[(".text", b"host code only")]),
                true,
            ),
        ]));
        let archive = measure_archive(&mut file).unwrap();
        assert_eq!(archive.libraries.len(), 2);
        // A library without a .nv_fatbin section has no device code: 0 fat binaries.
        let extra = &archive.libraries[1];
        assert_eq!(
            (extra.name.as_str(), extra.fatbins),
            ("torch/lib/libtorch_cuda_extra.so", 0)
        );
        let linalg = &archive.libraries[0];
        assert_eq!(linalg.name, "torch/lib/libtorch_cuda_linalg.so");
        assert_eq!(linalg.fatbins, 1);
        let targets: Vec<String> = linalg.census.keys().map(ToString::to_string).collect();
        assert_eq!(targets, ["sm_80", "sm_120"]);
    }

    #[test]
    fn release_and_variant_come_from_version_py() {
        let measurement = |version: &str, cuda: Option<&str>| Measurement {
            wheel: "w.whl".into(),
            sha256: String::new(),
            bytes: 0,
            built: String::new(),
            version: VersionFile {
                version: version.into(),
                cuda: cuda.map(str::to_string),
            },
            fatbins: 0,
            census: BTreeMap::new(),
            libraries: Vec::new(),
            pins: None,
        };
        let good = measurement("2.15.0+cu132", Some("13.2"));
        assert_eq!(good.release(), "2.15");
        assert_eq!(good.variant().unwrap(), "cu132");
        assert_eq!(
            measurement("2.1.2", Some("12.1")).variant().unwrap(),
            "cu121"
        );
        assert!(matches!(
            measurement("2.15.0+cu130", Some("13.2")).variant(),
            Err(TorchError::VariantMismatch { .. })
        ));
        assert!(matches!(
            measurement("2.15.0+cpu", None).variant(),
            Err(TorchError::NotCuda)
        ));
    }
}
