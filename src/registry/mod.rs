//! The Registry HTTP API v2, for `outdated`: tag lists and the digest behind a tag, with the
//! bearer-token flow Docker Hub, GHCR and NGC use. The only module that speaks HTTP to
//! registries (ureq); the daemon does the pulling.

use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;

use crate::profile::image::ImageReference;

/// Why a registry could not answer, named so the user knows what to fix.
#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("{registry} cannot be reached: {message}")]
    Unreachable { registry: String, message: String },
    #[error("{registry} has no repository `{repository}` (or it is private)")]
    NotFound {
        registry: String,
        repository: String,
    },
    #[error("{registry} refused access to `{repository}` (HTTP {status})")]
    Unauthorized {
        registry: String,
        repository: String,
        status: u16,
    },
    #[error("{registry} answered HTTP {status} for {url}")]
    Http {
        registry: String,
        url: String,
        status: u16,
    },
    #[error("{registry} sent an answer envctl cannot read: {message}")]
    Invalid { registry: String, message: String },
}

impl RegistryError {
    pub fn hint(&self) -> Option<String> {
        match self {
            RegistryError::Unreachable { .. } => Some(
                "check the network or a proxy; `envctl outdated` needs to reach the registry"
                    .into(),
            ),
            RegistryError::NotFound { .. } => Some("check the image name in the profile".into()),
            RegistryError::Unauthorized { registry, .. } => Some(format!(
                "private repositories need credentials: `docker login {registry}` (envctl reads no credentials yet)"
            )),
            _ => None,
        }
    }
}

/// The manifest media types a registry may hold for a tag, newest first.
const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

pub struct RegistryClient {
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Token {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

impl RegistryClient {
    pub fn new(timeout: Duration) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        RegistryClient {
            agent: config.into(),
        }
    }

    /// Every tag of the image's repository.
    pub fn tags(&self, image: &ImageReference) -> Result<Vec<String>, RegistryError> {
        let (base, repository, registry) = endpoint(image);
        let url = format!("{base}/v2/{repository}/tags/list?n=10000");
        let text = self.get(&url, &registry, &repository, None)?.0;
        let list: TagList =
            serde_json::from_str(&text).map_err(|error| RegistryError::Invalid {
                registry,
                message: error.to_string(),
            })?;
        Ok(list.tags.unwrap_or_default())
    }

    /// The digest the registry serves for `tag` now (`Docker-Content-Digest`).
    pub fn digest(&self, image: &ImageReference, tag: &str) -> Result<String, RegistryError> {
        let (base, repository, registry) = endpoint(image);
        let url = format!("{base}/v2/{repository}/manifests/{tag}");
        let (_, digest) = self.get(&url, &registry, &repository, Some(MANIFEST_TYPES))?;
        digest.ok_or_else(|| RegistryError::Invalid {
            registry,
            message: format!("no Docker-Content-Digest for {url}"),
        })
    }

    /// GET with one retry through the bearer-token challenge. Returns the body and the
    /// `Docker-Content-Digest` header.
    fn get(
        &self,
        url: &str,
        registry: &str,
        repository: &str,
        accept: Option<&str>,
    ) -> Result<(String, Option<String>), RegistryError> {
        let mut token: Option<String> = None;
        for _ in 0..2 {
            let mut request = self.agent.get(url);
            if let Some(accept) = accept {
                request = request.header("Accept", accept);
            }
            if let Some(token) = &token {
                request = request.header("Authorization", &format!("Bearer {token}"));
            }
            let mut response = request.call().map_err(|error| RegistryError::Unreachable {
                registry: registry.into(),
                message: error.to_string(),
            })?;
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_string)
            };
            match status {
                200 => {
                    let digest = header("Docker-Content-Digest");
                    let body = response.body_mut().read_to_string().map_err(|error| {
                        RegistryError::Invalid {
                            registry: registry.into(),
                            message: error.to_string(),
                        }
                    })?;
                    return Ok((body, digest));
                }
                401 if token.is_none() => {
                    let challenge = header("WWW-Authenticate").unwrap_or_default();
                    token = Some(self.token(&challenge, registry, repository)?);
                }
                401 | 403 => {
                    return Err(RegistryError::Unauthorized {
                        registry: registry.into(),
                        repository: repository.into(),
                        status,
                    });
                }
                404 => {
                    return Err(RegistryError::NotFound {
                        registry: registry.into(),
                        repository: repository.into(),
                    });
                }
                _ => {
                    return Err(RegistryError::Http {
                        registry: registry.into(),
                        url: url.into(),
                        status,
                    });
                }
            }
        }
        Err(RegistryError::Unauthorized {
            registry: registry.into(),
            repository: repository.into(),
            status: 401,
        })
    }

    /// Anonymous token from the realm the challenge names (`Bearer realm="…",service="…",scope="…"`).
    fn token(
        &self,
        challenge: &str,
        registry: &str,
        repository: &str,
    ) -> Result<String, RegistryError> {
        let parameters = parse_challenge(challenge);
        let realm = parameters
            .iter()
            .find(|(key, _)| key == "realm")
            .map(|(_, value)| value.clone())
            .ok_or_else(|| RegistryError::Unauthorized {
                registry: registry.into(),
                repository: repository.into(),
                status: 401,
            })?;
        let mut url = format!("{realm}?");
        for (key, value) in parameters.iter().filter(|(key, _)| key != "realm") {
            url.push_str(&format!("{key}={}&", value.replace(' ', "%20")));
        }
        if !parameters.iter().any(|(key, _)| key == "scope") {
            url.push_str(&format!("scope=repository:{repository}:pull"));
        }
        let mut response =
            self.agent
                .get(&url)
                .call()
                .map_err(|error| RegistryError::Unreachable {
                    registry: registry.into(),
                    message: error.to_string(),
                })?;
        if response.status().as_u16() != 200 {
            return Err(RegistryError::Unauthorized {
                registry: registry.into(),
                repository: repository.into(),
                status: response.status().as_u16(),
            });
        }
        let text =
            response
                .body_mut()
                .read_to_string()
                .map_err(|error| RegistryError::Invalid {
                    registry: registry.into(),
                    message: error.to_string(),
                })?;
        let token: Token = serde_json::from_str(&text).map_err(|error| RegistryError::Invalid {
            registry: registry.into(),
            message: error.to_string(),
        })?;
        token
            .token
            .or(token.access_token)
            .ok_or_else(|| RegistryError::Invalid {
                registry: registry.into(),
                message: "the token answer holds no token".into(),
            })
    }
}

/// (base URL, repository path, registry name) for an image. Docker Hub's short names live
/// under `library/`; loopback registries speak plain HTTP, as the daemon allows.
pub fn endpoint(image: &ImageReference) -> (String, String, String) {
    match image.registry.as_deref() {
        None | Some("docker.io" | "index.docker.io" | "registry-1.docker.io") => {
            let repository = if image.repository.contains('/') {
                image.repository.clone()
            } else {
                format!("library/{}", image.repository)
            };
            (
                "https://registry-1.docker.io".into(),
                repository,
                "docker.io".into(),
            )
        }
        Some(registry) => {
            let host = registry.rsplit_once(':').map_or(registry, |(host, _)| host);
            let local = matches!(host, "localhost" | "[::1]") || host.starts_with("127.");
            let scheme = if local { "http" } else { "https" };
            (
                format!("{scheme}://{registry}"),
                image.repository.clone(),
                registry.to_string(),
            )
        }
    }
}

/// `Bearer realm="https://auth.docker.io/token",service="registry.docker.io"` → pairs.
fn parse_challenge(challenge: &str) -> Vec<(String, String)> {
    let parameters = challenge
        .trim()
        .strip_prefix("Bearer")
        .unwrap_or(challenge)
        .trim();
    let mut pairs = Vec::new();
    let mut rest = parameters;
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let (value, remainder) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.split_once('"') {
                Some((value, remainder)) => (value.to_string(), remainder),
                None => (quoted.to_string(), ""),
            },
            None => match after.split_once(',') {
                Some((value, remainder)) => (value.trim().to_string(), remainder),
                None => (after.trim().to_string(), ""),
            },
        };
        pairs.push((key, value));
        rest = remainder.trim_start_matches(',');
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let image = |text: &str| text.parse::<ImageReference>().unwrap();
        assert_eq!(
            endpoint(&image("busybox:1.36")),
            (
                "https://registry-1.docker.io".into(),
                "library/busybox".into(),
                "docker.io".into()
            )
        );
        assert_eq!(
            endpoint(&image("pytorch/pytorch:2.8.0")).1,
            "pytorch/pytorch"
        );
        assert_eq!(
            endpoint(&image("127.0.0.1:5000/team/x:1")).0,
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            endpoint(&image("nvcr.io/nvidia/pytorch:25.12-py3")).0,
            "https://nvcr.io"
        );
    }

    #[test]
    fn parses_bearer_challenges() {
        assert_eq!(
            parse_challenge(
                "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\",scope=\"repository:library/busybox:pull\""
            ),
            [
                (
                    "realm".to_string(),
                    "https://auth.docker.io/token".to_string()
                ),
                ("service".to_string(), "registry.docker.io".to_string()),
                (
                    "scope".to_string(),
                    "repository:library/busybox:pull".to_string()
                ),
            ]
        );
    }
}
