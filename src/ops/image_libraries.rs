//! An image's CUDA libraries for `doctor`: from the cache kept per image id
//! (`$XDG_CACHE_HOME/envctl/image-libraries/<id>.json`: an id names the image's bytes, so a
//! scan never goes stale), else read through the daemon (`Engine::image_libraries`) and
//! cached. A cache that cannot be read is rescanned; one that cannot be written is said in
//! the result's `cache_problem`, never a failure of the scan.

use std::path::{Path, PathBuf};

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
    let id = image.id.clone();
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
    let name = id.as_deref().unwrap_or(&image.reference);
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
