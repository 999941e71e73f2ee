//! What a registry holds under a tag or digest, for `lock`: the manifest's digest (an
//! image index's own digest for a multi-platform image, the digest `docker pull` records
//! in `RepoDigests` and `docker pull IMAGE@DIGEST` takes), and the platforms it serves,
//! read from the registry alone, so that nothing is pulled.

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{MANIFEST_TYPES, MAX_BODY_BYTES, RegistryClient, RegistryError, endpoint};
use crate::profile::image::ImageReference;

/// A manifest as the registry serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `sha256:…` of the manifest's bytes: what a pull by digest asks for.
    pub digest: String,
    /// An image index (a manifest list) or one image's manifest.
    pub kind: ManifestKind,
    /// `os/architecture[/variant]` of each image it serves, in the registry's order;
    /// entries that are no image (`unknown/unknown`: build attestations) are left out.
    pub platforms: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    Index,
    Image,
}

/// The parts of an index or an image manifest envctl reads.
#[derive(Deserialize)]
struct ManifestBody {
    #[serde(default)]
    manifests: Option<Vec<IndexEntry>>,
    #[serde(default)]
    config: Option<Descriptor>,
}

#[derive(Deserialize)]
struct IndexEntry {
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Descriptor {
    digest: String,
}

/// An index entry's `platform`, or an image config's own fields.
#[derive(Deserialize)]
struct Platform {
    #[serde(default)]
    os: Option<String>,
    #[serde(default)]
    architecture: Option<String>,
    #[serde(default)]
    variant: Option<String>,
}

impl Platform {
    /// `os/architecture[/variant]`; none when a part is missing or `unknown`.
    fn named(&self) -> Option<String> {
        let os = self
            .os
            .as_deref()
            .filter(|os| !os.is_empty() && *os != "unknown")?;
        let architecture = self
            .architecture
            .as_deref()
            .filter(|architecture| !architecture.is_empty() && *architecture != "unknown")?;
        Some(
            match self
                .variant
                .as_deref()
                .filter(|variant| !variant.is_empty())
            {
                Some(variant) => format!("{os}/{architecture}/{variant}"),
                None => format!("{os}/{architecture}"),
            },
        )
    }
}

/// `sha256:` and the hex digest of `bytes`.
fn sha256(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The digest of a manifest's bytes, checked against what the registry said it is (its
/// `Docker-Content-Digest`) and, when asked by digest, against the digest asked for: a pin
/// is only ever a digest the bytes have, or a later pull by it would fail.
pub fn checked_digest(
    body: &[u8],
    header: Option<&str>,
    asked: Option<&str>,
) -> Result<String, String> {
    let digest = sha256(body);
    for (said, by) in [
        (header, "its Docker-Content-Digest"),
        (asked, "the digest asked for"),
    ] {
        if let Some(said) = said
            && said != digest
        {
            // Only sha256 is computed here; a registry naming another algorithm is
            // believed for its own answer, never for a mismatch of sha256s.
            if said.starts_with("sha256:") {
                return Err(format!(
                    "the manifest's bytes have digest {digest}, {by} is {}",
                    crate::text::shown(said)
                ));
            }
        }
    }
    Ok(digest)
}

impl RegistryClient {
    /// The manifest `reference` (a tag or a `sha256:` digest) of `image` names: its
    /// digest, whether it is an index, and the platforms it serves. An image manifest's
    /// platform is read from its config blob (one more small request).
    pub async fn manifest(
        &self,
        image: &ImageReference,
        reference: &str,
    ) -> Result<Manifest, RegistryError> {
        let (base, repository, registry) = endpoint(image);
        let url = format!("{base}/v2/{repository}/manifests/{reference}");
        let mut token = None;
        let answer = self
            .get(
                &url,
                &registry,
                &repository,
                Some(MANIFEST_TYPES),
                &mut token,
                MAX_BODY_BYTES,
            )
            .await?;
        let invalid = |message: String| RegistryError::Invalid {
            registry: registry.clone(),
            message,
        };
        let asked = reference.starts_with("sha256:").then_some(reference);
        let digest = checked_digest(&answer.body, answer.digest.as_deref(), asked)
            .map_err(|message| invalid(format!("{message} ({url})")))?;
        let body: ManifestBody = serde_json::from_slice(&answer.body)
            .map_err(|error| invalid(format!("its manifest for {url} is not one: {error}")))?;
        match (body.manifests, body.config) {
            (Some(entries), _) => Ok(Manifest {
                digest,
                kind: ManifestKind::Index,
                platforms: entries
                    .iter()
                    .filter_map(|entry| entry.platform.as_ref().and_then(Platform::named))
                    .collect(),
            }),
            (None, Some(config)) => {
                if !crate::lock::is_sha256_digest(&config.digest) {
                    return Err(invalid(format!(
                        "its manifest for {url} names a config that is no sha256 digest"
                    )));
                }
                let blob = self
                    .get(
                        &format!("{base}/v2/{repository}/blobs/{}", config.digest),
                        &registry,
                        &repository,
                        None,
                        &mut token,
                        MAX_BODY_BYTES,
                    )
                    .await?;
                if sha256(&blob.body) != config.digest {
                    return Err(invalid(format!(
                        "the config blob {} it served has other bytes",
                        config.digest
                    )));
                }
                let platform: Platform = serde_json::from_slice(&blob.body).map_err(|error| {
                    invalid(format!(
                        "its image config {} is not one: {error}",
                        config.digest
                    ))
                })?;
                Ok(Manifest {
                    digest,
                    kind: ManifestKind::Image,
                    platforms: platform.named().into_iter().collect(),
                })
            }
            (None, None) => Err(invalid(format!(
                "its manifest for {url} is neither an image index nor an image manifest (a schema 1 manifest?)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_the_bytes_digest_and_a_mismatch_is_refused() {
        let body = b"{}";
        let digest = sha256(body);
        assert_eq!(
            digest,
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(checked_digest(body, None, None).unwrap(), digest);
        assert_eq!(
            checked_digest(body, Some(&digest), Some(&digest)).unwrap(),
            digest
        );
        let other = format!("sha256:{}", "0".repeat(64));
        let refused = checked_digest(body, Some(&other), None).unwrap_err();
        assert!(refused.contains("Docker-Content-Digest"), "{refused}");
        let refused = checked_digest(body, None, Some(&other)).unwrap_err();
        assert!(refused.contains("the digest asked for"), "{refused}");
    }

    #[test]
    fn platforms_are_named_as_docker_names_them() {
        let platform = |os: &str, architecture: &str, variant: Option<&str>| Platform {
            os: Some(os.into()),
            architecture: Some(architecture.into()),
            variant: variant.map(str::to_string),
        };
        assert_eq!(
            platform("linux", "amd64", None).named().as_deref(),
            Some("linux/amd64")
        );
        assert_eq!(
            platform("linux", "arm64", Some("v8")).named().as_deref(),
            Some("linux/arm64/v8")
        );
        assert_eq!(platform("unknown", "unknown", None).named(), None);
        let body: ManifestBody = serde_json::from_str(
            r#"{"schemaVersion":2,"manifests":[
                {"digest":"sha256:a","platform":{"os":"linux","architecture":"amd64"}},
                {"digest":"sha256:b","platform":{"os":"unknown","architecture":"unknown"}},
                {"digest":"sha256:c","platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}"#,
        )
        .unwrap();
        let named: Vec<String> = body
            .manifests
            .unwrap()
            .iter()
            .filter_map(|entry| entry.platform.as_ref().and_then(Platform::named))
            .collect();
        assert_eq!(named, ["linux/amd64", "linux/arm64/v8"]);
    }
}
