//! Measuring a torch wheel: its `torch/version.py` (version, CUDA) and the census of the
//! `.nv_fatbin` section of `torch/lib/libtorch_cuda.so` (which fat binaries carry which
//! cubin and PTX targets). The wheel's own bytes are the source: its file name, sha256 and
//! the date in its zip directory go into the row.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::elf::{self, ElfError};
use crate::fatbin::{self, FatbinError, Target};
use crate::zip::{self, ZipError};

pub const VERSION_MEMBER: &str = "torch/version.py";
pub const LIBRARY_MEMBER: &str = "torch/lib/libtorch_cuda.so";
pub const SECTION: &str = ".nv_fatbin";

#[derive(Debug, Error)]
pub enum TorchError {
    #[error("reading the wheel")]
    Zip(#[from] ZipError),
    #[error("reading {LIBRARY_MEMBER}")]
    Elf(#[from] ElfError),
    #[error("reading the {SECTION} section of {LIBRARY_MEMBER}")]
    Fatbin(#[from] FatbinError),
    #[error("{VERSION_MEMBER} has no `__version__ = '...'` line")]
    NoVersion,
    #[error("{VERSION_MEMBER} says `cuda = None`: a CPU build has no CUDA rows")]
    NotCuda,
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

/// Measures the wheel at `path`. The library is inflated into an unnamed temporary file
/// (it is 0.5–1.5 GB), then only its section headers and `.nv_fatbin` are read.
pub fn measure_wheel(path: &Path) -> Result<Measurement, TorchError> {
    let wheel = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let sha256 = sha256_file(path)?;
    let bytes = std::fs::metadata(path)?.len();
    let mut file = BufReader::new(File::open(path)?);
    let (version, built, census, fatbins) = measure_archive(&mut file)?;
    Ok(Measurement {
        wheel,
        sha256,
        bytes,
        built,
        version,
        fatbins,
        census,
    })
}

type ArchiveFacts = (VersionFile, String, BTreeMap<Target, usize>, usize);

/// The part of the measurement that reads the archive, apart from the file's identity.
pub fn measure_archive<R: Read + Seek>(file: &mut R) -> Result<ArchiveFacts, TorchError> {
    let members = zip::members(file)?;
    let version_member = zip::find(&members, VERSION_MEMBER)?;
    let text = zip::read_member(file, version_member)?;
    let version = parse_version_file(&String::from_utf8_lossy(&text))?;
    let library = zip::find(&members, LIBRARY_MEMBER)?;
    let mut inflated = tempfile::tempfile()?;
    {
        let mut writer = io::BufWriter::new(&mut inflated);
        zip::extract(file, library, &mut writer)?;
        io::Write::flush(&mut writer)?;
    }
    let section = elf::section_bytes(&mut inflated, SECTION)?;
    let fatbins = fatbin::parse_section(&section)?;
    Ok((
        version,
        version_member.date.clone(),
        fatbin::census(&fatbins),
        fatbins.len(),
    ))
}

/// A synthetic wheel for tests, here and in `main`.
#[cfg(test)]
pub mod tests_support {
    use super::*;
    use crate::fatbin::fixture::{FixtureEntry, fatbin};
    use crate::fatbin::{FLAG_ARCHITECTURE_SPECIFIC, FLAG_FAMILY};

    /// A wheel as PyPI's look: version.py and a libtorch_cuda.so whose `.nv_fatbin` holds
    /// fat binaries of the main targets, one with specialised kernels, and PTX.
    pub fn wheel_fixture(version_py: &str, with_ptx: bool) -> Vec<u8> {
        let main = || {
            let mut entries = vec![
                FixtureEntry::cubin(75, 0),
                FixtureEntry::cubin(80, 0),
                FixtureEntry::cubin(120, 0),
            ];
            if with_ptx {
                entries.push(FixtureEntry::ptx(120));
            }
            entries
        };
        let mut section = Vec::new();
        for _ in 0..3 {
            section.extend(fatbin(&main()));
        }
        let mut special = main();
        special.push(FixtureEntry::cubin(90, FLAG_ARCHITECTURE_SPECIFIC));
        special.push(FixtureEntry::cubin(103, FLAG_FAMILY));
        section.extend(fatbin(&special));
        let library = elf::fixture(&[(".text", b"host code"), (SECTION, &section)]);
        zip::fixture(&[
            ("torch/__init__.py", b"", true),
            (VERSION_MEMBER, version_py.as_bytes(), true),
            (LIBRARY_MEMBER, &library, true),
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
        let (version, built, census, fatbins) = measure_archive(&mut file).unwrap();
        assert_eq!(version.version, "2.15.0+cu132");
        assert_eq!(built, "2026-11-30");
        assert_eq!(fatbins, 4);
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
