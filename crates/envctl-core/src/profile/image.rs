//! Image references (`registry:5000/team/pytorch:2.8.0@sha256:…`): parsing by the grammar
//! of Docker's distribution reference, so an invalid `image` is caught before any pull.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// A parsed image reference. The text it came from is kept for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    /// `registry.example.com:5000`, when the reference names one.
    pub registry: Option<String>,
    /// `pytorch/pytorch`.
    pub repository: String,
    /// `2.8.0-cuda12.8-cudnn9-runtime`; `None` means `latest` when pulling.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`.
    pub digest: Option<String>,
}

const MAX_NAME_LENGTH: usize = 255;
const MAX_TAG_LENGTH: usize = 128;

impl ImageReference {
    /// The tag to pull: the written one, or `latest` (never every tag).
    pub fn tag_or_latest(&self) -> &str {
        self.tag.as_deref().unwrap_or("latest")
    }

    /// `registry/repository` without tag or digest.
    pub fn name(&self) -> String {
        match &self.registry {
            Some(registry) => format!("{registry}/{}", self.repository),
            None => self.repository.clone(),
        }
    }
}

/// Docker Hub's registry, by the name the daemon gives it in `RepoDigests` and
/// `docker login`.
pub const DOCKER_HUB: &str = "docker.io";

/// Other names of Docker Hub's registry: an image written with one of them is the same
/// image as one written with none.
const DOCKER_HUB_ALIASES: &[&str] = &["index.docker.io", "registry-1.docker.io"];

/// Docker Hub's namespace of official images: `busybox` is `library/busybox`.
const DOCKER_HUB_OFFICIAL: &str = "library/";

/// An image reference in the one form that names an image whichever way it was written:
/// `busybox`, `docker.io/busybox`, `index.docker.io/library/busybox` are all
/// `docker.io/library/busybox`. What lock, registry and pull compare and send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalImage {
    /// [`DOCKER_HUB`] for none or one of its aliases; any other as written
    /// (`localhost:5000`, `localhost` as Podman writes local images, `[::1]:5000`).
    pub registry: String,
    /// On Docker Hub, a single-component name under `library/`.
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl CanonicalImage {
    pub fn is_docker_hub(&self) -> bool {
        self.registry == DOCKER_HUB
    }

    /// `docker.io/library/busybox`: registry and repository, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The name as Docker shows it (`busybox`, `pytorch/pytorch`, `nvcr.io/nvidia/pytorch`):
    /// Docker Hub and `library/` left out.
    pub fn short_name(&self) -> String {
        if !self.is_docker_hub() {
            return self.name();
        }
        self.repository
            .strip_prefix(DOCKER_HUB_OFFICIAL)
            .filter(|rest| !rest.contains('/'))
            .unwrap_or(&self.repository)
            .to_string()
    }

    /// [`Self::short_name`] with the tag and digest: `busybox:1.36`.
    pub fn short(&self) -> String {
        with_tag_and_digest(self.short_name(), &self.tag, &self.digest)
    }
}

/// `docker.io/library/busybox:1.36@sha256:…`.
impl fmt::Display for CanonicalImage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&with_tag_and_digest(self.name(), &self.tag, &self.digest))
    }
}

fn with_tag_and_digest(name: String, tag: &Option<String>, digest: &Option<String>) -> String {
    let mut text = name;
    if let Some(tag) = tag {
        text.push(':');
        text.push_str(tag);
    }
    if let Some(digest) = digest {
        text.push('@');
        text.push_str(digest);
    }
    text
}

impl ImageReference {
    /// The reference in its canonical form (see [`CanonicalImage`]).
    pub fn canonical(&self) -> CanonicalImage {
        let (registry, repository) = match self.registry.as_deref() {
            Some(registry) if registry != DOCKER_HUB && !DOCKER_HUB_ALIASES.contains(&registry) => {
                (registry.to_string(), self.repository.clone())
            }
            // No registry, or Docker Hub by any of its names.
            _ => {
                let repository = if self.repository.contains('/') {
                    self.repository.clone()
                } else {
                    format!("{DOCKER_HUB_OFFICIAL}{}", self.repository)
                };
                (DOCKER_HUB.to_string(), repository)
            }
        };
        CanonicalImage {
            registry,
            repository,
            tag: self.tag.clone(),
            digest: self.digest.clone(),
        }
    }
}

impl fmt::Display for ImageReference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.name())?;
        if let Some(tag) = &self.tag {
            write!(formatter, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(formatter, "@{digest}")?;
        }
        Ok(())
    }
}

impl Serialize for ImageReference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl FromStr for ImageReference {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() {
            return Err("the image reference is empty".into());
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("image `{text}` contains whitespace"));
        }
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => (rest, Some(parse_digest(digest)?)),
            None => (text, None),
        };
        // A tag is after the last `:` that comes after the last `/` (a `:` before it is a port).
        let last_slash = rest.rfind('/').map_or(0, |index| index + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(colon) => {
                let colon = last_slash + colon;
                (&rest[..colon], Some(parse_tag(&rest[colon + 1..])?))
            }
            None => (rest, None),
        };
        if name.len() > MAX_NAME_LENGTH {
            return Err(format!(
                "image name is {} characters long; the limit is {MAX_NAME_LENGTH}",
                name.len()
            ));
        }
        let mut components: Vec<&str> = name.split('/').collect();
        let registry = if components.len() > 1 && looks_like_registry(components[0]) {
            let registry = components.remove(0);
            parse_registry(registry)?;
            Some(registry.to_string())
        } else {
            None
        };
        for component in &components {
            parse_path_component(component, name)?;
        }
        Ok(ImageReference {
            registry,
            repository: components.join("/"),
            tag,
            digest,
        })
    }
}

/// Docker's rule: the first component is a registry when it has a `.` or `:` or is
/// `localhost`. (Docker also takes an upper-case first word for a registry; envctl reads
/// it as a repository path so that `PyTorch/pytorch` gets the lower-case error it deserves.)
fn looks_like_registry(component: &str) -> bool {
    component.contains(['.', ':']) || component == "localhost"
}

fn parse_registry(registry: &str) -> Result<(), String> {
    let (host, port) = if let Some(after_bracket) = registry.strip_prefix('[') {
        let (address, rest) = after_bracket
            .split_once(']')
            .ok_or_else(|| format!("registry `{registry}` has an unclosed `[`"))?;
        if address.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "registry `{registry}`: `{address}` is not an IPv6 address"
            ));
        }
        match rest {
            "" => (None, None),
            _ => match rest.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return Err(format!("registry `{registry}` is not host[:port]")),
            },
        }
    } else {
        match registry.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(registry), None),
        }
    };
    if let Some(host) = host {
        let valid = !host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !valid {
            return Err(format!("registry host `{host}` is not a valid host name"));
        }
    }
    if let Some(port) = port
        && (port.is_empty() || port.len() > 5 || port.parse::<u16>().is_err())
    {
        return Err(format!("registry port `{port}` is not a port number"));
    }
    Ok(())
}

fn parse_path_component(component: &str, name: &str) -> Result<(), String> {
    if component.is_empty() {
        return Err(format!("image name `{name}` has an empty path component"));
    }
    if component.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(format!(
            "image name `{name}` must be lower case (repository paths are)"
        ));
    }
    let bytes = component.as_bytes();
    let is_alphanumeric = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
    if !is_alphanumeric(bytes[0]) || !is_alphanumeric(bytes[bytes.len() - 1]) {
        return Err(format!(
            "image path component `{component}` must start and end with a letter or digit"
        ));
    }
    // Separators: `.`, `_`, `__`, or any run of `-`.
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if is_alphanumeric(byte) {
            index += 1;
            continue;
        }
        let run_start = index;
        while index < bytes.len() && !is_alphanumeric(bytes[index]) {
            index += 1;
        }
        let separator = &component[run_start..index];
        let valid = matches!(separator, "." | "_" | "__") || separator.chars().all(|c| c == '-');
        if !valid {
            return Err(format!(
                "image path component `{component}` has an invalid separator `{separator}` (allowed: `.`, `_`, `__`, `-`)"
            ));
        }
    }
    Ok(())
}

/// Whether `tag` is a tag Docker accepts: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn is_valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LENGTH
        && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn parse_tag(tag: &str) -> Result<String, String> {
    if is_valid_tag(tag) {
        Ok(tag.to_string())
    } else {
        Err(format!(
            "tag `{tag}` is invalid: up to {MAX_TAG_LENGTH} letters, digits, `_`, `.` or `-`, not starting with `.` or `-`"
        ))
    }
}

fn parse_digest(digest: &str) -> Result<String, String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!(
            "digest `{digest}` must be `sha256:<64 hex digits>`"
        ));
    };
    let valid = match algorithm {
        "sha256" => hex.len() == 64,
        "sha384" => hex.len() == 96,
        "sha512" => hex.len() == 128,
        _ => false,
    } && hex
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if valid {
        Ok(digest.to_string())
    } else {
        Err(format!(
            "digest `{digest}` must be `sha256:<64 lower-case hex digits>`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ImageReference {
        match text.parse() {
            Ok(reference) => reference,
            Err(message) => panic!("{text}: {message}"),
        }
    }

    #[test]
    fn parses_common_references() {
        let reference = parse("pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime");
        assert_eq!(reference.registry, None);
        assert_eq!(reference.repository, "pytorch/pytorch");
        assert_eq!(
            reference.tag.as_deref(),
            Some("2.8.0-cuda12.8-cudnn9-runtime")
        );

        let reference = parse("nvcr.io/nvidia/pytorch:25.01-py3");
        assert_eq!(reference.registry.as_deref(), Some("nvcr.io"));
        assert_eq!(reference.repository, "nvidia/pytorch");

        let reference = parse("localhost:5000/team/img");
        assert_eq!(reference.registry.as_deref(), Some("localhost:5000"));
        assert_eq!(reference.tag_or_latest(), "latest");

        let digest = format!("sha256:{}", "a".repeat(64));
        let reference = parse(&format!("busybox@{digest}"));
        assert_eq!(reference.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(reference.tag, None);

        let reference = parse("[::1]:5000/x:y");
        assert_eq!(reference.registry.as_deref(), Some("[::1]:5000"));
        assert_eq!(
            parse("x/a__b.c-d---e/f_g:T.1-x").to_string(),
            "x/a__b.c-d---e/f_g:T.1-x"
        );
    }

    #[test]
    fn canonical_forms() {
        let canonical = |text: &str| parse(text).canonical();
        // Docker Hub, however it is written.
        for text in [
            "busybox:1.36",
            "library/busybox:1.36",
            "docker.io/busybox:1.36",
            "docker.io/library/busybox:1.36",
            "index.docker.io/busybox:1.36",
            "registry-1.docker.io/library/busybox:1.36",
        ] {
            let image = canonical(text);
            assert_eq!(
                image.to_string(),
                "docker.io/library/busybox:1.36",
                "{text}"
            );
            assert_eq!(image.short(), "busybox:1.36", "{text}");
            assert!(image.is_docker_hub(), "{text}");
        }
        let image = canonical("pytorch/pytorch:2.8.0");
        assert_eq!(image.name(), "docker.io/pytorch/pytorch");
        assert_eq!(image.short_name(), "pytorch/pytorch");
        // `library/` is added to single-component names only, and left out of the short
        // form only where it was added.
        assert_eq!(canonical("library/a/b").short_name(), "library/a/b");
        // Other registries stay as written, ports included.
        let image = canonical("localhost:5000/x");
        assert_eq!(
            (image.registry.as_str(), image.repository.as_str()),
            ("localhost:5000", "x")
        );
        assert_eq!(image.short(), "localhost:5000/x");
        assert!(!image.is_docker_hub());
        // Podman names local images `localhost/x`: a registry, not Docker Hub's `localhost`.
        let image = canonical("localhost/x:1");
        assert_eq!(image.name(), "localhost/x");
        assert_eq!(image.short(), "localhost/x:1");
        assert_eq!(canonical("[::1]:5000/team/x").name(), "[::1]:5000/team/x");
        assert_eq!(
            canonical("nvcr.io/nvidia/pytorch:25.01-py3").short(),
            "nvcr.io/nvidia/pytorch:25.01-py3"
        );
        // Digests, with or without a tag.
        let digest = format!("sha256:{}", "a".repeat(64));
        let image = canonical(&format!("busybox@{digest}"));
        assert_eq!(image.tag, None);
        assert_eq!(image.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(
            image.to_string(),
            format!("docker.io/library/busybox@{digest}")
        );
        assert_eq!(
            canonical(&format!("127.0.0.1:5000/team/x:1@{digest}")).short(),
            format!("127.0.0.1:5000/team/x:1@{digest}")
        );
    }

    #[test]
    fn rejects_invalid_references() {
        for bad in [
            "",
            "PyTorch/pytorch",
            "pytorch/PyTorch:1",
            "pytorch//pytorch",
            "pytorch/pytorch:",
            "pytorch/pytorch:-tag",
            "pytorch/pytorch@sha256:abc",
            "pytorch/pytorch@md5:00",
            "a b",
            "registry:99999/x",
            "-bad/x",
            "x_/y",
            "a___b",
            "a..b",
            "[zz]:1/x",
            "host:port/x",
        ] {
            assert!(
                bad.parse::<ImageReference>().is_err(),
                "{bad:?} should be rejected"
            );
        }
        let long_tag = format!("x:{}", "t".repeat(129));
        assert!(long_tag.parse::<ImageReference>().is_err());
    }
}
