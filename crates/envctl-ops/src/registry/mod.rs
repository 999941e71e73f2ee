//! The Registry HTTP API v2, for `outdated` and `lock`: tag lists, the digest behind a tag
//! and the platforms it serves (`manifest`), with the bearer-token flow Docker Hub, GHCR
//! and NGC use. The only module that speaks HTTP to registries (hyper, through
//! [`http`], and the proxy of the environment, [`proxy`]); the daemon does the pulling.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;
use url::Url;

use crate::profile::image::ImageReference;

mod http;
pub mod manifest;
pub mod proxy;

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
    /// The registry answered; the token service its challenge names did not.
    #[error("the token service of {registry} ({realm}) cannot be reached: {message}")]
    TokenServiceUnreachable {
        registry: String,
        realm: String,
        message: String,
    },
    /// The token service answered, but neither a token nor a refusal of access.
    #[error("the token service of {registry} ({realm}) answered HTTP {status}")]
    TokenServiceAnswered {
        registry: String,
        realm: String,
        status: u16,
    },
    /// A redirect led off the registry's host, where its bearer token is not sent, and the
    /// host it led to refused the request without one.
    #[error(
        "{registry} redirected to {location}, which refused the request without the registry's token (HTTP {status})"
    )]
    RedirectRefused {
        registry: String,
        location: String,
        status: u16,
    },
    #[error("{registry} sent more than {limit} redirects for {url}")]
    TooManyRedirects {
        registry: String,
        url: String,
        limit: usize,
    },
    #[error("{registry} sent an answer larger than {limit} bytes for {url}")]
    TooLarge {
        registry: String,
        url: String,
        limit: u64,
    },
    #[error("{registry} lists more than {limit} tags for `{repository}`")]
    TooManyTags {
        registry: String,
        repository: String,
        limit: usize,
    },
}

impl RegistryError {
    pub fn hint(&self) -> Option<String> {
        match self {
            RegistryError::Unreachable { .. } => Some(
                "check the network or a proxy; `envctl outdated` needs to reach the registry"
                    .into(),
            ),
            RegistryError::NotFound { .. } => Some("check the image name in the profile".into()),
            RegistryError::TokenServiceUnreachable { .. } => Some(
                "the registry itself answers, the address its challenge sends envctl to for a token does not; ask the registry's operator, or pin the image by digest".into(),
            ),
            RegistryError::TokenServiceAnswered { status, .. } if (300..400).contains(status) => Some(
                "envctl follows no redirect from a token service (it could lead anywhere, a cloud's metadata address included); ask the registry's operator".into(),
            ),
            RegistryError::TokenServiceAnswered { .. } => Some(
                "the token service failed, not your access: try again later, or ask the registry's operator".into(),
            ),
            RegistryError::RedirectRefused { registry, .. } => Some(format!(
                "envctl sends {registry}'s token only to {registry} itself; ask the registry's operator to redirect within its own host, or pin the image by digest"
            )),
            RegistryError::TooLarge { .. } | RegistryError::TooManyTags { .. } => Some(
                "the registry ignores the page size envctl asks for (`n`) or holds far more tags than any image family needs; pin the image by digest, or ask the registry's operator".into(),
            ),
            RegistryError::Unauthorized { registry, .. } => Some(format!(
                "private repositories need credentials: `docker login {registry}` (envctl reads no credentials yet)"
            )),
            _ => None,
        }
    }
}

/// The manifest media types a registry may hold for a tag, newest first.
const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// The registry client: asynchronous, run on the command's tokio runtime.
pub struct RegistryClient {
    http: http::Http,
}

/// The most pages of a tag list envctl reads: Docker Hub, GHCR, NGC and Harbor page their
/// lists (`Link: <…>; rel="next"`), and a registry whose links never end must not keep
/// `outdated` waiting.
pub const MAX_TAG_PAGES: usize = 50;

/// Tags asked for per page (`n`).
pub const TAGS_PER_PAGE: usize = 1000;

/// The largest tag-list page envctl reads: 1000 tags of the longest name the OCI
/// distribution spec allows (128 characters) take about 130 KB, so a page past this is a
/// registry that ignores `n`, and reading it whole would grow without bound.
pub const MAX_PAGE_BYTES: u64 = 1024 * 1024;

/// The most bytes of tag-list pages envctl reads for one repository, over all pages: a
/// registry sending [`MAX_TAG_PAGES`] pages of [`MAX_PAGE_BYTES`] is stopped well before
/// that, and the list said to be incomplete.
pub const MAX_TAG_LIST_BYTES: u64 = 8 * 1024 * 1024;

/// The most tags envctl keeps for one repository, over all pages: far more than any
/// image family has, and a bound on memory whatever the registry sends.
pub const MAX_TAGS: usize = 100_000;

/// The most redirects envctl follows for one request.
pub const MAX_REDIRECTS: usize = 5;

/// The largest body envctl reads for anything but a tag list (a token, a manifest).
const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// A repository's tags, in the registry's order without repeats, and why the list may be
/// short of the registry's last page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    pub tags: Vec<String>,
    /// Set when envctl stopped before the registry's last page (the page limit, a next-page
    /// link that repeats a page, leads to another host or cannot be read): newer tags may
    /// be missing. Meant to be shown to the user as a warning.
    pub incomplete: Option<String>,
}

/// One page of `GET /v2/<name>/tags/list`.
#[derive(Deserialize)]
struct TagPage {
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

/// A 200 answer: its body and the headers envctl reads.
struct Answer {
    body: Vec<u8>,
    /// `Docker-Content-Digest`.
    digest: Option<String>,
    /// Every `Link` header, in order.
    links: Vec<String>,
}

impl RegistryClient {
    /// A client whose every request (its connection, its answer and its body) takes at
    /// most `timeout`, through `proxy` ([`proxy::Proxy::from_variables`], from the context's variables). Redirects
    /// are followed by `get`, so that a redirect within the registry's host keeps the
    /// bearer token and one off it is named as such.
    pub fn new(timeout: Duration, proxy: proxy::Proxy) -> Self {
        RegistryClient {
            http: http::Http::new(timeout, proxy),
        }
    }

    /// The image repository's tags, following the registry's `Link: <…>; rel="next"`
    /// pages (Registry API v2 / OCI distribution `tags/list?n=…&last=…`) on the same host
    /// only — the bearer token goes nowhere else — for at most [`MAX_TAG_PAGES`] pages.
    pub async fn tag_list(&self, image: &ImageReference) -> Result<Tags, RegistryError> {
        let (base, repository, registry) = endpoint(image);
        // 1000 a page: what Amazon ECR accepts at most (it refuses larger `n`); the pages
        // that follow come through `Link`.
        let mut url = format!("{base}/v2/{repository}/tags/list?n={TAGS_PER_PAGE}");
        let mut token = None;
        let mut visited = HashSet::from([url.clone()]);
        let mut known = HashSet::new();
        let mut list = Tags::default();
        let mut read_bytes = 0u64;
        for page in 1..=MAX_TAG_PAGES {
            if read_bytes >= MAX_TAG_LIST_BYTES {
                let reason = format!(
                    "envctl reads at most {} MiB of tag lists and the registry has more",
                    MAX_TAG_LIST_BYTES >> 20
                );
                list.incomplete = Some(incomplete(&registry, page - 1, &reason));
                return Ok(list);
            }
            let answer = self
                .get(
                    &url,
                    &registry,
                    &repository,
                    None,
                    &mut token,
                    MAX_PAGE_BYTES,
                )
                .await?;
            read_bytes += answer.body.len() as u64;
            let tags: TagPage =
                serde_json::from_slice(&answer.body).map_err(|error| RegistryError::Invalid {
                    registry: registry.clone(),
                    message: format!("the tag list {url}: {error}"),
                })?;
            drop(answer.body);
            add_tags(
                &mut list,
                &mut known,
                tags.tags.unwrap_or_default(),
                &registry,
                &repository,
            )?;
            let next = match next_page(&url, &answer.links) {
                Ok(Some(next)) => next,
                Ok(None) => return Ok(list),
                Err(reason) => {
                    list.incomplete = Some(incomplete(&registry, page, &reason));
                    return Ok(list);
                }
            };
            if !visited.insert(next.clone()) {
                let reason =
                    format!("its next-page link leads back to a page already read ({next})");
                list.incomplete = Some(incomplete(&registry, page, &reason));
                return Ok(list);
            }
            url = next;
        }
        let reason =
            format!("envctl reads at most {MAX_TAG_PAGES} pages and the registry has more");
        list.incomplete = Some(incomplete(&registry, MAX_TAG_PAGES, &reason));
        Ok(list)
    }

    /// The digest the registry serves for `tag` now (`Docker-Content-Digest`).
    pub async fn digest(&self, image: &ImageReference, tag: &str) -> Result<String, RegistryError> {
        let (base, repository, registry) = endpoint(image);
        let url = format!("{base}/v2/{repository}/manifests/{tag}");
        let answer = self
            .get(
                &url,
                &registry,
                &repository,
                Some(MANIFEST_TYPES),
                &mut None,
                MAX_BODY_BYTES,
            )
            .await?;
        answer.digest.ok_or_else(|| RegistryError::Invalid {
            registry,
            message: format!("no Docker-Content-Digest for {url}"),
        })
    }

    /// GET with `token` (the bearer token of an earlier request to the same registry, if
    /// any), fetching a new one once through the challenge of a 401, following at most
    /// [`MAX_REDIRECTS`] redirects (the token only within the registry's own origin), and
    /// reading at most `limit` bytes of the body.
    async fn get(
        &self,
        url: &str,
        registry: &str,
        repository: &str,
        accept: Option<&str>,
        token: &mut Option<String>,
        limit: u64,
    ) -> Result<Answer, RegistryError> {
        let mut fetched_token = false;
        let mut current = url.to_string();
        let mut redirects = 0;
        // Where a redirect led off the registry's origin: the token stays behind.
        let mut off_origin: Option<String> = None;
        loop {
            let authorization = token
                .as_deref()
                .filter(|_| off_origin.is_none())
                .map(|token| format!("Bearer {token}"));
            let headers = request_headers(accept, authorization.as_deref());
            let response = self
                .http
                .get(&current, &headers)
                .await
                .map_err(|failure| unreachable_or_invalid(failure, registry))?;
            let status = response.status;
            let header = |name: &str| response.header(name);
            match status {
                200 => return read_answer(response, limit, registry, &current).await,
                301 | 302 | 303 | 307 | 308 => {
                    redirects += 1;
                    if redirects > MAX_REDIRECTS {
                        return Err(RegistryError::TooManyRedirects {
                            registry: registry.into(),
                            url: url.into(),
                            limit: MAX_REDIRECTS,
                        });
                    }
                    let next = redirect_target(&current, header("Location"), status, registry)?;
                    if off_origin.is_none() && !same_origin(url, &next) {
                        off_origin = Some(next.to_string());
                    }
                    current = next.into();
                }
                401 | 403 if off_origin.is_some() => {
                    return Err(RegistryError::RedirectRefused {
                        registry: registry.into(),
                        location: off_origin.unwrap_or_default(),
                        status,
                    });
                }
                401 if !fetched_token => {
                    let challenge = header("WWW-Authenticate").unwrap_or_default();
                    *token = Some(self.token(&challenge, registry, repository).await?);
                    fetched_token = true;
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
                        url: current,
                        status,
                    });
                }
            }
        }
    }

    /// Anonymous token from the realm the challenge names (`Bearer realm="…",service="…",scope="…"`).
    async fn token(
        &self,
        challenge: &str,
        registry: &str,
        repository: &str,
    ) -> Result<String, RegistryError> {
        // A challenge with control characters is no challenge a registry sends; its
        // text reaches the terminal only through the escaping of error messages.
        if challenge.chars().any(char::is_control) {
            return Err(RegistryError::Invalid {
                registry: registry.into(),
                message: "its WWW-Authenticate challenge holds control characters".into(),
            });
        }
        let (realm, url) = token_realm(challenge, registry, repository)?;
        let response =
            self.http.get(url.as_str(), &[]).await.map_err(
                |failure| match unreachable_or_invalid(failure, registry) {
                    RegistryError::Unreachable { message, .. } => {
                        RegistryError::TokenServiceUnreachable {
                            registry: registry.into(),
                            realm: realm.clone(),
                            message,
                        }
                    }
                    other => other,
                },
            )?;
        match response.status {
            200 => {}
            // A refusal of access is about credentials; anything else (a redirect, a
            // server error) is the token service's own answer, said as such.
            status @ (401 | 403) => {
                return Err(RegistryError::Unauthorized {
                    registry: registry.into(),
                    repository: repository.into(),
                    status,
                });
            }
            status => {
                return Err(RegistryError::TokenServiceAnswered {
                    registry: registry.into(),
                    realm,
                    status,
                });
            }
        }
        let text = read_body(response, MAX_BODY_BYTES, registry, url.as_str()).await?;
        token_of(&text, registry)
    }
}

/// The realm a challenge names and the URL of the token for `repository` there.
fn token_realm(
    challenge: &str,
    registry: &str,
    repository: &str,
) -> Result<(String, Url), RegistryError> {
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
    let url =
        token_url(&realm, &parameters, repository).map_err(|error| RegistryError::Invalid {
            registry: registry.into(),
            message: format!("its token realm `{realm}` is no URL: {error}"),
        })?;
    Ok((realm, url))
}

/// The token in a token service's answer, refused where no header could carry it.
fn token_of(text: &[u8], registry: &str) -> Result<String, RegistryError> {
    let token: Token = serde_json::from_slice(text).map_err(|error| RegistryError::Invalid {
        registry: registry.into(),
        message: error.to_string(),
    })?;
    let token = token
        .token
        .or(token.access_token)
        .ok_or_else(|| RegistryError::Invalid {
            registry: registry.into(),
            message: "the token answer holds no token".into(),
        })?;
    // Sent back in a header: a token no header could carry fails the next request
    // in ways that read like the network.
    if token.len() > MAX_TOKEN_BYTES || token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(RegistryError::Invalid {
            registry: registry.into(),
            message: format!(
                "its token ({} bytes) is not one a header can carry (at most {MAX_TOKEN_BYTES} bytes of visible characters)",
                token.len()
            ),
        });
    }
    Ok(token)
}

/// Keeps each new tag of a page; a name Docker would refuse as a tag (longer than 128
/// characters, or with other characters) is no tag anything could pull: not kept.
fn add_tags(
    list: &mut Tags,
    known: &mut HashSet<String>,
    tags: Vec<String>,
    registry: &str,
    repository: &str,
) -> Result<(), RegistryError> {
    for tag in tags
        .into_iter()
        .filter(|tag| crate::profile::image::is_valid_tag(tag))
    {
        if known.insert(tag.clone()) {
            if list.tags.len() == MAX_TAGS {
                return Err(RegistryError::TooManyTags {
                    registry: registry.into(),
                    repository: repository.into(),
                    limit: MAX_TAGS,
                });
            }
            list.tags.push(tag);
        }
    }
    Ok(())
}

/// The URL of the page after `url` its `Link` headers name; `None` on the last page, or
/// why the link cannot be followed.
fn next_page(url: &str, links: &[String]) -> Result<Option<String>, String> {
    match next_link(links)? {
        Some(reference) => next_page_url(url, &reference).map(Some),
        None => Ok(None),
    }
}

/// The headers of a registry request: `Accept` and `Authorization` where there are.
fn request_headers<'a>(
    accept: Option<&'a str>,
    authorization: Option<&'a str>,
) -> Vec<(&'static str, &'a str)> {
    let mut headers = Vec::new();
    if let Some(accept) = accept {
        headers.push(("Accept", accept));
    }
    if let Some(authorization) = authorization {
        headers.push(("Authorization", authorization));
    }
    headers
}

/// A 200's body (at most `limit` bytes), digest and `Link` headers.
async fn read_answer(
    response: http::Answer,
    limit: u64,
    registry: &str,
    current: &str,
) -> Result<Answer, RegistryError> {
    let digest = response.header("Docker-Content-Digest");
    // A header that is not text is kept as lossy text, so that it reads as
    // a malformed link rather than as no link.
    let links = response
        .headers
        .get_all("Link")
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let body = read_body(response, limit, registry, current).await?;
    Ok(Answer {
        body,
        digest,
        links,
    })
}

/// Where a redirect from `current` leads: its `Location` resolved against `current`.
fn redirect_target(
    current: &str,
    location: Option<String>,
    status: u16,
    registry: &str,
) -> Result<Url, RegistryError> {
    let location = location.ok_or_else(|| RegistryError::Invalid {
        registry: registry.into(),
        message: format!("a redirect ({status}) without a Location for {current}"),
    })?;
    Url::parse(current)
        .and_then(|base| base.join(&location))
        .map_err(|error| RegistryError::Invalid {
            registry: registry.into(),
            message: format!(
                "its redirect to `{}` is no URL: {error}",
                location.escape_debug()
            ),
        })
}

/// The longest bearer token envctl sends back: real ones are JWTs of a few KiB.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A failed request as unreachable (the network: no route, no name, no connection, the
/// proxy, a timeout, TLS) or as an answer envctl cannot use (no HTTP it reads).
fn unreachable_or_invalid(failure: http::Failure, registry: &str) -> RegistryError {
    match failure {
        http::Failure::Unreachable(message) => RegistryError::Unreachable {
            registry: registry.into(),
            message,
        },
        http::Failure::Invalid(message) => RegistryError::Invalid {
            registry: registry.into(),
            message,
        },
    }
}

/// At most `limit` bytes of a body; a longer one is an error naming the limit, read no
/// further.
async fn read_body(
    response: http::Answer,
    limit: u64,
    registry: &str,
    url: &str,
) -> Result<Vec<u8>, RegistryError> {
    response.body(limit).await.map_err(|failure| match failure {
        http::BodyFailure::TooLarge => RegistryError::TooLarge {
            registry: registry.into(),
            url: url.into(),
            limit,
        },
        http::BodyFailure::Invalid(message) => RegistryError::Invalid {
            registry: registry.into(),
            message,
        },
    })
}

/// Whether `next` has the scheme, host and port of `url`: where the bearer token may go.
fn same_origin(url: &str, next: &Url) -> bool {
    Url::parse(url).is_ok_and(|url| url.origin() == next.origin())
}

/// (base URL, repository path, registry name) for an image, from its canonical form
/// (Docker Hub's short names live under `library/`). Docker Hub's API is at
/// `registry-1.docker.io`; loopback registries speak plain HTTP, as the daemon allows.
pub fn endpoint(image: &ImageReference) -> (String, String, String) {
    let canonical = image.canonical();
    let base = if canonical.is_docker_hub() {
        "https://registry-1.docker.io".to_string()
    } else {
        let registry = canonical.registry.as_str();
        let host = registry.rsplit_once(':').map_or(registry, |(host, _)| host);
        let local = matches!(host, "localhost" | "[::1]") || host.starts_with("127.");
        let scheme = if local { "http" } else { "https" };
        format!("{scheme}://{registry}")
    };
    (base, canonical.repository, canonical.registry)
}

/// The token request: the challenge's realm with its other parameters (`service`,
/// `scope`) as a query, percent-encoded the way Docker's own client sends them, and a
/// pull scope for `repository` when the challenge names none.
fn token_url(
    realm: &str,
    parameters: &[(String, String)],
    repository: &str,
) -> Result<Url, url::ParseError> {
    let mut url = Url::parse(realm)?;
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in parameters.iter().filter(|(key, _)| key != "realm") {
            query.append_pair(key, value);
        }
        if !parameters.iter().any(|(key, _)| key == "scope") {
            query.append_pair("scope", &format!("repository:{repository}:pull"));
        }
    }
    Ok(url)
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

/// The note of a tag list that stopped before the registry's last page.
fn incomplete(registry: &str, pages: usize, reason: &str) -> String {
    let pages = if pages == 1 {
        "1 page".to_string()
    } else {
        format!("{pages} pages")
    };
    format!(
        "{registry}: read the tag list's first {pages} only: {reason}; newer tags on later pages are not seen"
    )
}

/// The target of the `rel="next"` link among a response's `Link` headers (RFC 8288:
/// `<uri-reference>; param=value; rel="next", <…>; rel="prev"`), or `Ok(None)` when none
/// is next. `Err` says why a header cannot be read.
fn next_link(headers: &[String]) -> Result<Option<String>, String> {
    for header in headers {
        let mut rest = header.as_str();
        loop {
            rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
            if rest.is_empty() {
                break;
            }
            let malformed =
                || format!("its Link header `{}` cannot be read", header.escape_debug());
            let (target, after) = rest
                .strip_prefix('<')
                .and_then(|inside| inside.split_once('>'))
                .ok_or_else(malformed)?;
            let (parameters, remainder) = split_unquoted(after, ',');
            let parameters = parameters.trim();
            if !(parameters.is_empty() || parameters.starts_with(';')) {
                return Err(malformed());
            }
            let next = split_all_unquoted(parameters, ';')
                .into_iter()
                .any(|parameter| {
                    parameter.split_once('=').is_some_and(|(key, value)| {
                        key.trim().eq_ignore_ascii_case("rel")
                            && unquote(value.trim())
                                .split_ascii_whitespace()
                                .any(|relation| relation.eq_ignore_ascii_case("next"))
                    })
                });
            if next {
                return Ok(Some(target.trim().to_string()));
            }
            rest = remainder;
        }
    }
    Ok(None)
}

/// `text` up to the first `separator` outside double quotes, and what follows it.
fn split_unquoted(text: &str, separator: char) -> (&str, &str) {
    let mut quoted = false;
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == separator && !quoted {
            return (&text[..index], &text[index + c.len_utf8()..]);
        }
    }
    (text, "")
}

fn split_all_unquoted(mut text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    loop {
        let (part, rest) = split_unquoted(text, separator);
        parts.push(part);
        if rest.is_empty() {
            return parts;
        }
        text = rest;
    }
}

fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .unwrap_or(value)
}

/// The absolute URL of a next-page link, resolved against the page that sent it (RFC 3986
/// §5, by the `url` crate: an absolute URL, `//host/…`, `/path?…`, `?query` or a path
/// relative to the page's folder), without its fragment. `Err` when it leads to another
/// scheme, host or port (the bearer token is the registry's alone), carries credentials
/// or is no `http`/`https` URL.
fn next_page_url(current: &str, reference: &str) -> Result<String, String> {
    let shown = reference.escape_debug();
    // `<>` names the page itself (RFC 3986 §5.2): a repeat, which the caller notices.
    if reference.is_empty() {
        return Ok(current.to_string());
    }
    // A URI is printable ASCII (RFC 3986); anything else is no link to follow (the `url`
    // crate would percent-encode it into one).
    if !reference.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!("its next-page link `{shown}` is no URL"));
    }
    let page =
        Url::parse(current).map_err(|_| format!("the page {current} has no absolute URL"))?;
    let cannot_follow = || format!("its next-page link `{shown}` is no URL envctl can follow");
    let mut next = page.join(reference).map_err(|_| cannot_follow())?;
    next.set_fragment(None);
    match (url_origin(&page), url_origin(&next)) {
        (Some(here), Some(there)) if here == there => Ok(next.into()),
        (Some(_), Some(_)) => Err(format!(
            "its next-page link leads to another host ({next}), and envctl sends the registry's token to the registry only"
        )),
        _ => Err(cannot_follow()),
    }
}

/// (scheme, host, port) of an `http` or `https` URL without credentials, with the
/// scheme's default port.
fn url_origin(url: &Url) -> Option<(String, String, u16)> {
    if !matches!(url.scheme(), "http" | "https")
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    Some((
        url.scheme().to_string(),
        url.host_str()?.to_string(),
        url.port_or_known_default()?,
    ))
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

    #[test]
    fn finds_the_next_link() {
        let next = |headers: &[&str]| {
            let headers: Vec<String> = headers.iter().map(|header| header.to_string()).collect();
            next_link(&headers)
        };
        // Docker's distribution registry, Harbor, GHCR.
        assert_eq!(
            next(&["</v2/team/app/tags/list?last=1.1.0&n=2>; rel=\"next\""]),
            Ok(Some("/v2/team/app/tags/list?last=1.1.0&n=2".into()))
        );
        assert_eq!(
            next(&["<https://ghcr.io/v2/a/b/tags/list?n=2&last=x>;rel=next"]),
            Ok(Some("https://ghcr.io/v2/a/b/tags/list?n=2&last=x".into()))
        );
        // Several links, several relations, quoted commas and semicolons, several headers.
        assert_eq!(
            next(&["</first>; rel=\"first\"; title=\"a, b; c\", </page/3> ; REL=\"prev next\""]),
            Ok(Some("/page/3".into()))
        );
        assert_eq!(
            next(&["</prev>; rel=prev", " </next>; rel=\"next\""]),
            Ok(Some("/next".into()))
        );
        assert_eq!(next(&[]), Ok(None));
        assert_eq!(next(&["</prev>; rel=\"prev\""]), Ok(None));
        assert_eq!(next(&["  ,  "]), Ok(None));
        // Broken headers are errors, never a panic.
        for broken in [
            "/v2/x/tags/list?last=a; rel=\"next\"",
            "</v2/x/tags/list?last=a; rel=\"next\"",
            "</v2/x> rel=next",
            "<",
            ">",
        ] {
            assert!(next(&[broken]).is_err(), "{broken}");
        }
        // An unterminated quote ends the link, not the loop.
        assert_eq!(next(&["</a>; title=\"x, <b>; rel=next"]), Ok(None));
    }

    #[test]
    fn next_pages_stay_on_the_registry() {
        let page = "http://127.0.0.1:5000/v2/team/app/tags/list?n=1000";
        let resolved = |reference: &str| next_page_url(page, reference);
        assert_eq!(
            resolved("/v2/team/app/tags/list?n=2&last=1.1.0"),
            Ok("http://127.0.0.1:5000/v2/team/app/tags/list?n=2&last=1.1.0".into())
        );
        assert_eq!(
            resolved("?n=2&last=b"),
            Ok("http://127.0.0.1:5000/v2/team/app/tags/list?n=2&last=b".into())
        );
        assert_eq!(
            resolved("list?last=b#top"),
            Ok("http://127.0.0.1:5000/v2/team/app/tags/list?last=b".into())
        );
        // The `url` crate writes the scheme in lower case: the same request.
        assert_eq!(
            resolved("HTTP://127.0.0.1:5000/v2/team/app/tags/list?last=b"),
            Ok("http://127.0.0.1:5000/v2/team/app/tags/list?last=b".into())
        );
        assert_eq!(resolved(""), Ok(page.to_string()));
        assert_eq!(
            next_page_url(
                "https://ghcr.io/v2/a/tags/list",
                "https://ghcr.io:443/v2/a/tags/list?last=x"
            ),
            // The `url` crate leaves out the scheme's default port: the same request.
            Ok("https://ghcr.io/v2/a/tags/list?last=x".into())
        );
        // Another host, port or scheme, or credentials in the URL: never followed.
        for elsewhere in [
            "http://127.0.0.2:5000/v2/team/app/tags/list?last=b",
            "http://127.0.0.1:5001/v2/team/app/tags/list?last=b",
            "https://127.0.0.1:5000/v2/team/app/tags/list?last=b",
            "//evil.example/v2/team/app/tags/list",
            "http://user@127.0.0.1:5000/v2/team/app/tags/list",
            "http://127.0.0.1:5000@evil.example/v2/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "/v2/team app/tags/list",
            "/v2/\nx",
            "/v2/caf\u{e9}",
        ] {
            let error = resolved(elsewhere).unwrap_err();
            assert!(!error.is_empty(), "{elsewhere}");
        }
        assert!(
            resolved("http://evil.example/v2/x")
                .unwrap_err()
                .contains("another host (http://evil.example/v2/x)")
        );
    }

    #[test]
    fn token_requests_encode_their_query() {
        let parameters = parse_challenge(
            "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\",scope=\"repository:library/busybox:pull push\"",
        );
        assert_eq!(
            token_url(
                "https://auth.docker.io/token",
                &parameters,
                "library/busybox"
            )
            .unwrap()
            .as_str(),
            "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fbusybox%3Apull+push"
        );
        // No scope in the challenge: a pull scope for the repository; a realm with a
        // query of its own keeps it.
        assert_eq!(
            token_url(
                "https://ghcr.io/token?client=envctl",
                &[("service".into(), "ghcr.io".into())],
                "team/app"
            )
            .unwrap()
            .as_str(),
            "https://ghcr.io/token?client=envctl&service=ghcr.io&scope=repository%3Ateam%2Fapp%3Apull"
        );
        assert!(token_url("/token", &[], "x").is_err());
    }

    #[test]
    fn incomplete_lists_say_where_they_stopped() {
        assert_eq!(
            incomplete(
                "ghcr.io",
                50,
                "envctl reads at most 50 pages and the registry has more"
            ),
            "ghcr.io: read the tag list's first 50 pages only: envctl reads at most 50 pages and the registry has more; newer tags on later pages are not seen"
        );
        assert!(incomplete("nvcr.io", 1, "x").contains("first 1 page only"));
    }
}
