//! An image's CUDA libraries for `doctor` and `nvidia-check`: from the cache kept per image id
//! (`$XDG_CACHE_HOME/envctl/image-libraries/<id>.json`: an id names the image's bytes, so a
//! scan never goes stale), else read through the daemon (`Engine::image_libraries`) and
//! cached. A cache that cannot be read is rescanned; one that cannot be written is said in
//! the result's `cache_problem`, never a failure of the scan.

use std::path::{Path, PathBuf};

use crate::checks::Finding;
use crate::compat::fatbin::{IMAGE_LIBRARIES_SCHEMA, ImageLibraries};
use crate::engine::Engine;
use crate::facts::engine::ImageFacts;

/// A cached scan larger than this is not read (they are kilobytes).
const CACHE_LIMIT: u64 = 64 << 20;

/// What [`of_image`] found, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub libraries: ImageLibraries,
    /// Read from the cache, not scanned now.
    pub cached: bool,
    /// Why the cache could not be used or written, if it could not.
    pub cache_problem: Option<String>,
}

/// The cache file of an image id (`sha256:` and 64 hex digits); none for another form.
pub fn cache_file(cache_home: &Path, image_id: &str) -> Option<PathBuf> {
    let digest = image_id.strip_prefix("sha256:")?;
    let valid = digest.len() == 64 && digest.bytes().all(|byte| byte.is_ascii_hexdigit());
    valid.then(|| {
        cache_home
            .join("envctl")
            .join("image-libraries")
            .join(format!("{digest}.json"))
    })
}

/// The CUDA libraries of `image`, cached under `cache_home` when there is one.
pub async fn of_image(
    engine: &Engine,
    image: &ImageFacts,
    cache_home: Option<&Path>,
) -> Result<Found, String> {
    of_reference(engine, &image.reference, image.id.as_deref(), cache_home).await
}

/// The CUDA libraries of the image `reference` whose id is `id` (when known: what it is
/// read by and cached under), cached under `cache_home` when there is one.
pub async fn of_reference(
    engine: &Engine,
    reference: &str,
    id: Option<&str>,
    cache_home: Option<&Path>,
) -> Result<Found, String> {
    let id = id.map(str::to_string);
    let file = cache_home
        .zip(id.as_deref())
        .and_then(|(home, id)| cache_file(home, id));
    let mut cache_problem = None;
    if let (Some(file), Some(id)) = (&file, &id) {
        match crate::untrusted::read_json::<ImageLibraries>(file, CACHE_LIMIT) {
            Ok(Some(libraries))
                if libraries.schema_version == IMAGE_LIBRARIES_SCHEMA
                    && libraries.image_id.as_deref() == Some(id.as_str()) =>
            {
                return Ok(Found {
                    libraries,
                    cached: true,
                    cache_problem: None,
                });
            }
            Ok(_) => {}
            Err(why) => {
                cache_problem = Some(format!("the cache {} was rescanned: {why}", file.display()))
            }
        }
    }
    // By id when there is one: the bytes the cache will be named by.
    let name = id.as_deref().unwrap_or(reference);
    let scan = engine
        .image_libraries(name)
        .await
        .map_err(|error| crate::error::error_chain(&error))?;
    let libraries = scan.libraries(id.as_deref());
    if let Some(file) = &file {
        let written = serde_json::to_vec(&libraries)
            .map_err(|error| error.to_string())
            .and_then(|bytes| {
                if let Some(folder) = file.parent() {
                    std::fs::create_dir_all(folder)
                        .map_err(|error| format!("{}: {error}", folder.display()))?;
                }
                crate::files::write_atomically(file, &bytes, crate::files::Existing::Replace)
                    .map_err(|error| format!("{}: {error}", file.display()))
            });
        if let Err(why) = written {
            cache_problem = Some(format!("the scan could not be cached: {why}"));
        }
    }
    Ok(Found {
        libraries,
        cached: false,
        cache_problem,
    })
}

/// `gpu.library-arch`: the findings of an image scan (or of its failure) on `gpus`, each
/// named with its compute capability, the driver able to JIT PTX up to `driver_cuda`.
pub fn findings(
    image: &str,
    found: Result<Found, String>,
    gpus: &[(String, crate::compat::ComputeCapability)],
    driver_cuda: Option<crate::profile::model::CudaVersion>,
) -> Vec<Finding> {
    let found = match found {
        Ok(found) => found,
        Err(why) => {
            return vec![Finding::warn(
                crate::compat::fatbin::GPU_LIBRARY_ARCH,
                format!("the CUDA libraries of image `{image}` could not be read: {why}"),
            )];
        }
    };
    let mut findings =
        crate::compat::fatbin::image_findings(image, &found.libraries, gpus, driver_cuda);
    if let Some(problem) = found.cache_problem {
        findings.push(Finding::info(
            crate::compat::fatbin::GPU_LIBRARY_ARCH,
            problem,
        ));
    }
    findings
}

/// The GPUs of `nvml` that run a container asking `request`, named as the findings name
/// them ("GPU 0 (NVIDIA H100 80GB HBM3)") with their compute capability: those a device
/// list names (by index or UUID), every GPU for `all`, `optional` and a count (which GPUs a
/// count gets is placement's choice, made later), none for `none`. A list naming anything
/// that is no GPU here (a MIG UUID) is judged on every GPU: which one it means is not
/// known. A GPU whose capability NVML did not give is left out (nothing to judge on).
pub fn gpus_asked(
    request: &crate::profile::model::GpuRequest,
    nvml: &crate::facts::gpu::NvmlFacts,
) -> Vec<(String, crate::compat::ComputeCapability)> {
    use crate::profile::model::GpuRequest;
    let names = |gpu: &crate::facts::gpu::GpuDevice, name: &str| {
        name.parse::<u32>().ok() == Some(gpu.index)
            || gpu.uuid.value().map(String::as_str) == Some(name)
    };
    let asked: Vec<&crate::facts::gpu::GpuDevice> = match request {
        GpuRequest::None => Vec::new(),
        GpuRequest::Devices(list)
            if list
                .iter()
                .all(|name| nvml.gpus.iter().any(|gpu| names(gpu, name))) =>
        {
            nvml.gpus
                .iter()
                .filter(|gpu| list.iter().any(|name| names(gpu, name)))
                .collect()
        }
        GpuRequest::All | GpuRequest::Optional | GpuRequest::Count(_) | GpuRequest::Devices(_) => {
            nvml.gpus.iter().collect()
        }
    };
    asked
        .into_iter()
        .filter_map(|gpu| {
            let capability = *gpu.compute_capability.value()?;
            let name = gpu
                .name
                .value()
                .map_or_else(String::new, |name| format!(" ({name})"));
            Some((format!("GPU {}{name}", gpu.index), capability))
        })
        .collect()
}

/// A RECORD larger than this is not read (they are kilobytes).
const RECORD_LIMIT: u64 = 16 << 20;

/// The CUDA libraries installed in `folders` on this machine (a Python environment's
/// site-packages, a library folder), read with the image scan's code: every file named
/// like a shared object, read in place (only its headers and fat-binary sections), with
/// the package each came from (`*.dist-info/RECORD`). Symbolic links are not followed (a
/// library is read once, under its own name). Paths are given as found.
pub fn of_folders(folders: &[PathBuf]) -> Result<ImageLibraries, String> {
    let mut libraries_found: Vec<(String, PathBuf)> = Vec::new();
    let mut packages: std::collections::BTreeMap<String, String> = Default::default();
    let mut pending: Vec<PathBuf> = folders.to_vec();
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder)
            .map_err(|error| format!("cannot list {}: {error}", folder.display()))?;
        for entry in entries {
            let entry =
                entry.map_err(|error| format!("cannot list {}: {error}", folder.display()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            if kind.is_dir() {
                pending.push(path);
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let shown = path.to_string_lossy().into_owned();
            if shown.ends_with(".dist-info/RECORD") {
                let small = entry
                    .metadata()
                    .is_ok_and(|metadata| metadata.len() <= RECORD_LIMIT);
                if let (true, Ok(text)) = (small, std::fs::read_to_string(&path)) {
                    packages.extend(crate::compat::fatbin::record_packages(&shown, &text));
                }
            } else if crate::compat::fatbin::is_shared_object(&shown) {
                libraries_found.push((shown, path));
            }
        }
    }
    libraries_found.sort();
    let mut scan = ImageLibraries {
        schema_version: IMAGE_LIBRARIES_SCHEMA,
        image_id: None,
        libraries: Vec::new(),
        unreadable: Vec::new(),
        unread_layers: Vec::new(),
        shared_objects: libraries_found.len(),
    };
    for (shown, path) in libraries_found {
        let read = std::fs::File::open(&path)
            .map_err(|error| error.to_string())
            .and_then(|file| {
                let mut file = std::io::BufReader::new(file);
                let mut magic = [0u8; 4];
                let elf = std::io::Read::read_exact(&mut file, &mut magic).is_ok()
                    && crate::compat::fatbin::is_elf(&magic);
                if !elf {
                    return Ok(None);
                }
                crate::compat::fatbin::read_library_from(&mut file)
                    .map(Some)
                    .map_err(|error| crate::error::error_chain(&error))
            });
        match read {
            Ok(Some(code)) if !code.sections.is_empty() => {
                scan.libraries.push(crate::compat::fatbin::ScannedLibrary {
                    package: packages.get(shown.trim_start_matches('/')).cloned(),
                    path: shown,
                    code: code.summary(),
                });
            }
            Ok(_) => {}
            Err(why) => scan
                .unreadable
                .push(crate::compat::fatbin::UnreadLibrary { path: shown, why }),
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::gpu::{Fact, FailureKind, GpuDevice, NvmlFacts, NvmlFailure};
    use crate::profile::model::GpuRequest;

    /// A host of an RTX 5090 (GPU 0, sm_120) and an H100 (GPU 1, sm_90), and a GPU 2 whose
    /// capability NVML did not give.
    fn mixed_host() -> NvmlFacts {
        let failure = NvmlFailure::new(FailureKind::Other, "not asked");
        let gpu = |index: u32, name: &str, capability: Option<(u32, u32)>| {
            let mut gpu = GpuDevice::unreachable(index, failure.clone());
            gpu.name = Fact::Value(name.into());
            gpu.uuid = Fact::Value(format!("GPU-{index}"));
            if let Some((major, minor)) = capability {
                gpu.compute_capability =
                    Fact::Value(crate::compat::ComputeCapability::new(major, minor));
            }
            gpu
        };
        NvmlFacts {
            driver_version: Fact::Value("580.95.05".into()),
            cuda_driver_version: Fact::Error(failure.clone()),
            nvml_version: Fact::Value("13.580.95.05".into()),
            device_count: Fact::Value(3),
            gpus: vec![
                gpu(0, "NVIDIA GeForce RTX 5090", Some((12, 0))),
                gpu(1, "NVIDIA H100 80GB HBM3", Some((9, 0))),
                gpu(2, "NVIDIA H100 80GB HBM3", None),
            ],
            shutdown_failure: None,
        }
    }

    fn named(request: GpuRequest) -> Vec<String> {
        gpus_asked(&request, &mixed_host())
            .into_iter()
            .map(|(name, capability)| format!("{name} {}", capability.sm()))
            .collect()
    }

    /// The GPUs a library is judged on are those the profile asks for: a device list's (by
    /// index or UUID), every GPU for all, optional and a count, none for none; a list
    /// naming no GPU here (a MIG UUID) is judged on every GPU.
    #[test]
    fn libraries_are_judged_on_the_gpus_the_profile_asks_for() {
        let every = [
            "GPU 0 (NVIDIA GeForce RTX 5090) sm_120",
            "GPU 1 (NVIDIA H100 80GB HBM3) sm_90",
        ];
        assert_eq!(named(GpuRequest::All), every);
        assert_eq!(named(GpuRequest::Optional), every);
        assert_eq!(named(GpuRequest::Count(1)), every);
        assert!(named(GpuRequest::None).is_empty());
        assert_eq!(
            named(GpuRequest::Devices(vec!["1".into()])),
            ["GPU 1 (NVIDIA H100 80GB HBM3) sm_90"]
        );
        assert_eq!(
            named(GpuRequest::Devices(vec!["GPU-0".into()])),
            ["GPU 0 (NVIDIA GeForce RTX 5090) sm_120"]
        );
        assert_eq!(
            named(GpuRequest::Devices(vec![
                "MIG-4b9f2e56-0000-0000-0000-000000000000".into()
            ])),
            every
        );
    }
}
