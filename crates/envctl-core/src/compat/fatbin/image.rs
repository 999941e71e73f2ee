//! The CUDA libraries of an image, from the archive the daemon writes for
//! `GET /images/{name}/get` (what `docker save` writes): the outer tar holds each layer as a
//! tar of its own (`<id>/layer.tar`, or `blobs/sha256/<digest>` in the OCI layout) and
//! `manifest.json`, whose `Layers` gives their order. Read in one pass, as the stream comes:
//!
//! - every file of a layer named like a shared object (`x.so`, `x.so.12`) is read, and only
//!   an ELF file's fat binaries are kept ([`super::read_library`]);
//! - `*.dist-info/RECORD` files name the package each installed file came from;
//! - layers are applied in the manifest's order, with their whiteouts (`.wh.NAME` removes
//!   NAME, `.wh..wh..opq` empties its folder), so a library a later layer removed or
//!   replaced is judged as the image has it.
//!
//! A compressed layer (gzip, as an image store may keep) is not read here: it is named in
//! [`ImageScan::unread_layers`], so that nothing is said to be absent that was not looked at.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::tar::{EntryType, TarError, TarReader};
use super::{LibraryCode, LibrarySummary, read_library};

/// The version of [`ImageLibraries`]' cached form; a cache of another version is rescanned.
pub const IMAGE_LIBRARIES_SCHEMA: u32 = 1;

/// A `RECORD` larger than this is not read (they are kilobytes).
const RECORD_LIMIT: u64 = 16 * 1024 * 1024;
/// `manifest.json` larger than this is refused.
const MANIFEST_LIMIT: u64 = 4 * 1024 * 1024;
/// A shared object larger than this is named as unread rather than held in memory.
const LIBRARY_LIMIT: u64 = 4 * 1024 * 1024 * 1024;

#[derive(Debug, Error)]
pub enum ImageScanError {
    #[error("the image archive is not a tar archive as `docker save` writes")]
    Archive(#[source] TarError),
    #[error("layer {layer} of the image archive is not a readable tar archive")]
    Layer {
        layer: String,
        #[source]
        source: TarError,
    },
    #[error("the image archive's manifest.json is not the list `docker save` writes: {0}")]
    Manifest(String),
}

/// One library of the image with GPU code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLibrary {
    /// Its path in the image, without the leading `/`.
    pub path: String,
    /// `name version` of the distribution whose RECORD lists it.
    pub package: Option<String>,
    pub code: LibraryCode,
}

/// A library that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadLibrary {
    pub path: String,
    pub why: String,
}

/// What the scan of one image found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageScan {
    pub libraries: Vec<ImageLibrary>,
    pub unreadable: Vec<UnreadLibrary>,
    /// Layers not read (compressed), by their name in the archive.
    pub unread_layers: Vec<String>,
    /// Shared objects looked at, GPU code or not.
    pub shared_objects: usize,
}

/// What the verdicts need of an image's scan, kept per image id
/// (`$XDG_CACHE_HOME/envctl/image-libraries/`): an image's layers never change under its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageLibraries {
    pub schema_version: u32,
    /// The image id the daemon gave (`sha256:…`), when it gave one.
    pub image_id: Option<String>,
    pub libraries: Vec<ScannedLibrary>,
    pub unreadable: Vec<UnreadLibrary>,
    pub unread_layers: Vec<String>,
    pub shared_objects: usize,
}

/// One library of [`ImageLibraries`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScannedLibrary {
    pub path: String,
    pub package: Option<String>,
    pub code: LibrarySummary,
}

impl ImageScan {
    /// What the verdicts need of it, for the image `image_id`.
    pub fn libraries(&self, image_id: Option<&str>) -> ImageLibraries {
        ImageLibraries {
            schema_version: IMAGE_LIBRARIES_SCHEMA,
            image_id: image_id.map(str::to_string),
            libraries: self
                .libraries
                .iter()
                .map(|library| ScannedLibrary {
                    path: library.path.clone(),
                    package: library.package.clone(),
                    code: library.code.summary(),
                })
                .collect(),
            unreadable: self.unreadable.clone(),
            unread_layers: self.unread_layers.clone(),
            shared_objects: self.shared_objects,
        }
    }
}

/// What one file of a layer is, for the merge.
#[derive(Debug, Clone)]
enum Found {
    /// A shared object: its code when it is an ELF file with fat binaries (or the error).
    Library(Option<Result<LibraryCode, String>>),
}

#[derive(Debug, Default)]
struct Layer {
    files: BTreeMap<String, Found>,
    /// Paths removed by this layer (`.wh.NAME`).
    whiteouts: Vec<String>,
    /// Folders this layer empties first (`.wh..wh..opq`).
    opaque: Vec<String>,
    /// Installed file → package, from RECORD files.
    packages: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ManifestEntry {
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

/// Whether `path` names a shared object: `libx.so`, `libx.so.12.1`, `_C.abi3.so`.
pub fn is_shared_object(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.ends_with(".so") || file.contains(".so.")
}

/// `a/b/../c` → `a/c`.
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// `site-packages/flash_attn-2.7.4.dist-info/RECORD` → (`site-packages`, `flash_attn 2.7.4`).
fn record_of(path: &str) -> Option<(String, String)> {
    let folder = path.strip_suffix("/RECORD")?;
    let (parent, dist_info) = folder.rsplit_once('/').unwrap_or(("", folder));
    let stem = dist_info.strip_suffix(".dist-info")?;
    let (name, version) = stem.split_once('-')?;
    Some((parent.to_string(), format!("{name} {version}")))
}

fn scan_layer<R: Read>(reader: R, name: &str) -> Result<Layer, ImageScanError> {
    let layer_error = |source| ImageScanError::Layer {
        layer: name.to_string(),
        source,
    };
    let mut tar = TarReader::new(reader);
    let mut layer = Layer::default();
    while let Some(entry) = tar.next_entry().map_err(layer_error)? {
        let (folder, file) = entry.path.rsplit_once('/').unwrap_or(("", &entry.path));
        if file == ".wh..wh..opq" {
            layer.opaque.push(folder.to_string());
            continue;
        }
        if let Some(removed) = file.strip_prefix(".wh.") {
            layer
                .whiteouts
                .push(normalise(&format!("{folder}/{removed}")));
            continue;
        }
        if entry.kind != EntryType::File {
            continue;
        }
        if let Some((site, package)) = record_of(&entry.path) {
            if entry.size > RECORD_LIMIT {
                continue;
            }
            let mut text = String::new();
            let read = tar.body(entry.size).read_to_string(&mut text);
            if read.is_err() {
                // A RECORD that is not text names no package; its library is still judged.
                continue;
            }
            for line in text.lines() {
                let installed = line.split(',').next().unwrap_or("").trim_matches('"');
                if is_shared_object(installed) {
                    layer
                        .packages
                        .insert(normalise(&format!("{site}/{installed}")), package.clone());
                }
            }
            continue;
        }
        if !is_shared_object(&entry.path) {
            continue;
        }
        let path = normalise(&entry.path);
        if entry.size > LIBRARY_LIMIT {
            layer.files.insert(
                path,
                Found::Library(Some(Err(format!(
                    "{} bytes, more than the scan holds in memory",
                    entry.size
                )))),
            );
            continue;
        }
        let mut bytes = Vec::new();
        tar.body(entry.size)
            .read_to_end(&mut bytes)
            .map_err(|error| layer_error(TarError::Io(error)))?;
        if bytes.len() as u64 != entry.size {
            return Err(layer_error(TarError::Truncated));
        }
        let found = if super::is_elf(&bytes) {
            Some(read_library(&bytes).map_err(|error| error.to_string()))
        } else {
            None
        };
        layer.files.insert(path, Found::Library(found));
    }
    Ok(layer)
}

/// Scans the image archive `archive` (the bytes of `GET /images/{name}/get`).
pub fn scan_archive<R: Read>(archive: R) -> Result<ImageScan, ImageScanError> {
    let mut outer = TarReader::new(archive);
    let mut layers: Vec<(String, Layer)> = Vec::new();
    let mut order: Option<Vec<String>> = None;
    let mut unread_layers = Vec::new();
    while let Some(entry) = outer.next_entry().map_err(ImageScanError::Archive)? {
        if entry.kind != EntryType::File {
            continue;
        }
        if entry.path == "manifest.json" {
            if entry.size > MANIFEST_LIMIT {
                return Err(ImageScanError::Manifest(format!("{} bytes", entry.size)));
            }
            let mut text = Vec::new();
            outer
                .body(entry.size)
                .read_to_end(&mut text)
                .map_err(|error| ImageScanError::Archive(TarError::Io(error)))?;
            let manifest: Vec<ManifestEntry> = serde_json::from_slice(&text)
                .map_err(|error| ImageScanError::Manifest(error.to_string()))?;
            let first = manifest
                .into_iter()
                .next()
                .ok_or_else(|| ImageScanError::Manifest("an empty list".to_string()))?;
            order = Some(first.layers.iter().map(|layer| normalise(layer)).collect());
            continue;
        }
        // Config blobs, index.json and oci-layout are small; a layer starts like a tar.
        let mut start = Vec::with_capacity(512);
        outer
            .body(entry.size)
            .take(512)
            .read_to_end(&mut start)
            .map_err(|error| ImageScanError::Archive(TarError::Io(error)))?;
        if start.starts_with(&[0x1f, 0x8b]) {
            unread_layers.push(entry.path.clone());
            continue;
        }
        if start.len() < 512 || &start[257..262] != b"ustar" {
            continue;
        }
        let rest = entry.size - start.len() as u64;
        let body = Cursor::new(start).chain(outer.body(rest));
        let layer = scan_layer(body, &entry.path)?;
        layers.push((normalise(&entry.path), layer));
    }
    // The manifest's order; layers it does not name (none, in a well-formed archive) after.
    if let Some(order) = &order {
        layers.sort_by_key(|(name, _)| {
            order
                .iter()
                .position(|wanted| wanted == name)
                .unwrap_or(usize::MAX)
        });
        unread_layers.retain(|layer| order.contains(&normalise(layer)));
    }
    Ok(merge(layers, unread_layers))
}

fn under(path: &str, folder: &str) -> bool {
    folder.is_empty() || path == folder || path.starts_with(&format!("{folder}/"))
}

fn merge(layers: Vec<(String, Layer)>, unread_layers: Vec<String>) -> ImageScan {
    let mut files: BTreeMap<String, Found> = BTreeMap::new();
    let mut packages: BTreeMap<String, String> = BTreeMap::new();
    for (_, layer) in layers {
        for folder in &layer.opaque {
            files.retain(|path, _| !under(path, folder) || path == folder);
        }
        for removed in &layer.whiteouts {
            files.retain(|path, _| !under(path, removed));
        }
        files.extend(layer.files);
        packages.extend(layer.packages);
    }
    let mut scan = ImageScan {
        unread_layers,
        shared_objects: files.len(),
        ..ImageScan::default()
    };
    for (path, found) in files {
        let Found::Library(found) = found;
        match found {
            Some(Ok(code)) if !code.sections.is_empty() => scan.libraries.push(ImageLibrary {
                package: packages.get(&path).cloned(),
                path,
                code,
            }),
            Some(Err(why)) => scan.unreadable.push(UnreadLibrary { path, why }),
            Some(Ok(_)) | None => {}
        }
    }
    scan
}
