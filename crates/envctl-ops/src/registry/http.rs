//! The registry client's HTTP: GET requests through hyper 1's client (hyper-util's pooled
//! client, so the pages and manifests of one registry share a kept-alive connection),
//! over connections opened here: TCP, a `CONNECT` tunnel through the proxy the
//! environment names ([`super::proxy`]), and TLS with rustls (ring) trusting the Mozilla
//! roots compiled in (`webpki-roots`), as the registry client trusted before it moved
//! onto hyper. The engine's client is a separate one: it reaches daemons, with their own
//! TLS files.
//!
//! Redirects are not followed here (the caller follows them, keeping the bearer token on
//! the registry's own origin); one deadline bounds a request from the connection to the
//! last byte of its body, as the client's global timeout did.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::proxy::{Proxy, tunnel};

/// What envctl says it is to registries and proxies.
pub const USER_AGENT: &str = concat!("envctl/", env!("CARGO_PKG_VERSION"));

/// Why a request got no answer envctl can use.
#[derive(Debug)]
pub enum Failure {
    /// The network: no name, no route, no connection, a proxy that refused the tunnel, a
    /// TLS handshake that failed, no answer in time.
    Unreachable(String),
    /// Something answered, but not in HTTP envctl can read.
    Invalid(String),
}

/// Why a body could not be read whole.
#[derive(Debug)]
pub enum BodyFailure {
    /// Longer than the limit asked for: read no further.
    TooLarge,
    Invalid(String),
}

/// An answer's status and headers, with its body still to be read before `deadline`.
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    body: Incoming,
    deadline: Instant,
    timeout: Duration,
}

/// GET requests with one deadline each.
pub struct Http {
    client: Client<Connector, Empty<Bytes>>,
    timeout: Duration,
}

impl Http {
    pub fn new(timeout: Duration, proxy: Proxy) -> Http {
        let connector = Connector {
            tls: Arc::new(tls_config()),
            proxy: Arc::new(proxy),
        };
        Http {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        }
    }

    /// GET `url` with `headers`; the body is read with [`Answer::body`].
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Answer, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut request = http::Request::get(url).header(http::header::USER_AGENT, USER_AGENT);
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("accept"))
        {
            request = request.header(http::header::ACCEPT, "*/*");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Empty::new())
            .map_err(|error| Failure::Invalid(format!("{url} is no request: {error}")))?;
        let response = tokio::time::timeout_at(deadline, self.client.request(request))
            .await
            .map_err(|_| Failure::Unreachable(self.no_answer()))?
            .map_err(classify)?;
        let (parts, body) = response.into_parts();
        Ok(Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            deadline,
            timeout: self.timeout,
        })
    }

    fn no_answer(&self) -> String {
        format!("no answer within {} s", self.timeout.as_secs_f64())
    }
}

impl Answer {
    /// The text of header `name`, when it is set and is text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string)
    }

    /// At most `limit` bytes of the body, before the request's deadline; a longer body is
    /// [`BodyFailure::TooLarge`], read no further.
    pub async fn body(self, limit: u64) -> Result<Vec<u8>, BodyFailure> {
        let declared = self
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit) {
            return Err(BodyFailure::TooLarge);
        }
        let timeout = self.timeout;
        let mut body = self.body;
        let read = async move {
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|error| BodyFailure::Invalid(chain(&error)))?;
                if let Ok(data) = frame.into_data() {
                    if (bytes.len() + data.len()) as u64 > limit {
                        return Err(BodyFailure::TooLarge);
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            Ok(bytes)
        };
        tokio::time::timeout_at(self.deadline, read)
            .await
            .map_err(|_| {
                BodyFailure::Invalid(format!(
                    "the answer's body did not arrive within {} s",
                    timeout.as_secs_f64()
                ))
            })?
    }
}

/// A failed request as the network (no connection, the proxy, TLS, the connection lost)
/// or as an answer that is no HTTP envctl reads.
fn classify(error: hyper_util::client::legacy::Error) -> Failure {
    let message = chain(&error);
    if error.is_connect() {
        return Failure::Unreachable(message);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&error);
    while let Some(cause) = source {
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>()
            && (hyper.is_parse() || hyper.is_parse_status() || hyper.is_parse_too_large())
        {
            return Failure::Invalid(message);
        }
        source = cause.source();
    }
    // The connection closed or failed mid-request: the network, as an I/O error was.
    Failure::Unreachable(message)
}

/// An error with its causes, `: `-separated, without hyper-util's own wrapper words.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut current = Some(error);
    while let Some(cause) = current {
        let text = cause.to_string();
        if !text.starts_with("client error (") && parts.last() != Some(&text) {
            parts.push(text);
        }
        current = cause.source();
    }
    if parts.is_empty() {
        error.to_string()
    } else {
        parts.join(": ")
    }
}

/// rustls with ring and the Mozilla roots. Built once per client; a failure (none is
/// expected of a fixed provider) is said when an `https` connection needs it.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|builder| {
            Arc::new(
                builder
                    .with_root_certificates(roots())
                    .with_no_client_auth(),
            )
        })
        .map_err(|error| format!("TLS cannot be set up: {error}"))
}

/// The Mozilla roots compiled in (`webpki-roots`): the same on every machine, whatever
/// its own store holds.
fn roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// A byte stream to a registry (or through a proxy to one).
trait Wire: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Wire for T {}

/// A stream as hyper's client takes it.
pub struct Stream(Box<dyn Wire>);

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(context, buffer)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(context, bytes)
    }
    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(context)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(context)
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// Opens the client's connections: directly or through the proxy, then TLS for `https`.
#[derive(Clone)]
pub struct Connector {
    tls: Arc<Result<Arc<rustls::ClientConfig>, String>>,
    proxy: Arc<Proxy>,
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move { connector.open(&uri).await.map(TokioIo::new) })
    }
}

impl Connector {
    async fn open(&self, uri: &http::Uri) -> io::Result<Stream> {
        let secure = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("envctl speaks http and https only, not {other:?}"),
                ));
            }
        };
        // As a URL writes it: an IPv6 address in brackets. A URL without a host is refused
        // here, not sent to a connect to "" that would fail with a vaguer cause.
        let Some(host) = uri.host().filter(|host| !host.is_empty()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the URL {uri} names no host"),
            ));
        };
        let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let stream: Box<dyn Wire> = match self.proxy.for_host(host) {
            Some(via) => {
                let stream = tcp(&via.host, via.port).await.map_err(|error| {
                    io::Error::new(
                        error.kind(),
                        format!("the proxy {} ({}): {error}", via.shown, via.variable),
                    )
                })?;
                let mut stream: Box<dyn Wire> = if via.tls {
                    Box::new(self.tls(&via.host, stream).await?)
                } else {
                    Box::new(stream)
                };
                tunnel(&mut stream, via, host, port).await?;
                stream
            }
            None => Box::new(tcp(host, port).await?),
        };
        if secure {
            Ok(Stream(Box::new(self.tls(host, stream).await?)))
        } else {
            Ok(Stream(stream))
        }
    }

    /// A TLS client session over `stream`, verifying `host`'s certificate.
    async fn tls<S: AsyncRead + AsyncWrite + Unpin + Send>(
        &self,
        host: &str,
        stream: S,
    ) -> io::Result<tokio_rustls::client::TlsStream<S>> {
        let config = self
            .tls
            .as_ref()
            .as_ref()
            .map_err(|message| io::Error::other(message.clone()))?;
        let name = unbracketed(host);
        let server = rustls_pki_types::ServerName::try_from(name.to_string()).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is no name TLS can verify: {error}"),
            )
        })?;
        tokio_rustls::TlsConnector::from(Arc::clone(config))
            .connect(server, stream)
            .await
    }
}

/// `[::1]` → `::1`, for the resolver and TLS; a name stays as it is.
fn unbracketed(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host)
}

/// A TCP connection to `host:port` (a name is resolved by the system's resolver).
async fn tcp(host: &str, port: u16) -> io::Result<tokio::net::TcpStream> {
    let stream = tokio::net::TcpStream::connect((unbracketed(host), port)).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusts_the_compiled_in_mozilla_roots() {
        assert!(tls_config().is_ok());
        assert_eq!(roots().len(), webpki_roots::TLS_SERVER_ROOTS.len());
        assert!(roots().len() > 100, "{}", roots().len());
    }

    #[test]
    fn hosts_lose_their_brackets_for_the_resolver() {
        assert_eq!(unbracketed("[::1]"), "::1");
        assert_eq!(unbracketed("ghcr.io"), "ghcr.io");
    }
}
