//! How envctl reaches a daemon: every byte stream to it, bollard's requests and envctl's
//! own (`engine::http`: the ping, the container list, logs and stats), is opened by one
//! function, [`Route::open`], so every command works alike over each scheme the docker CLI
//! knows:
//!
//! - `unix:///path`: the socket;
//! - `tcp://host[:port]` (port 2375 when left out, as the CLI 28 does), in plain HTTP, or
//!   over TLS when the choice asks for it (`DOCKER_TLS_VERIFY`/`DOCKER_TLS` with
//!   `DOCKER_CERT_PATH`, or a context's TLS files): never in cleartext then;
//! - `ssh://[user@]host[:port][/socket]`: `ssh [-l user] [-p port] -- host docker system
//!   dial-stdio`, as the CLI runs it (so `~/.ssh/config`, the agent and known hosts are
//!   ssh's own), HTTP over the child's stdin and stdout. The child is killed when its
//!   stream is dropped.
//!
//! A TLS or ssh connection costs a handshake, so bollard's client keeps those open between
//! requests (HTTP/1.1 keep-alive); a socket or plain TCP is opened per request, as before.
//!
//! What went wrong below HTTP is a [`ConnectFailure`] inside the I/O error, found again by
//! type (`EngineError::classify`), never by its words: an HTTP answer to a TLS hello, a
//! handshake refused, ssh that ended before the daemon said anything.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{Endpoint, EngineError};
use envctl_host::docker_config::TlsChoice;

/// A byte stream to a daemon.
pub(crate) trait Wire: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Wire for T {}

/// A stream [`Route::open`] opened.
pub(crate) type Stream = Box<dyn Wire>;

/// The largest certificate or key file envctl reads.
const MAXIMUM_PEM_BYTES: u64 = 1 << 20;

/// The most of ssh's own stderr kept for a message.
const MAXIMUM_SSH_MESSAGE: usize = 16 * 1024;

/// How long a TCP connection may take to complete: shorter than the first request's
/// deadline (`engine::PING_TIMEOUT`, 3 s), so a connection that never completes (a host
/// that is down, a firewall that drops) is said as that, not as a daemon that took the
/// request and stopped answering.
const CONNECT_DEADLINE: Duration = Duration::from_millis(2500);

/// The system's trusted roots, for a context that verifies the daemon with no CA of its own.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Where a daemon is and how a stream to it is opened.
#[derive(Clone)]
pub(crate) enum Route {
    Unix {
        path: String,
    },
    Tcp {
        address: String,
    },
    Tls {
        address: String,
        server: rustls_pki_types::ServerName<'static>,
        config: Arc<rustls::ClientConfig>,
    },
    Ssh(SshTarget),
}

impl std::fmt::Debug for Route {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Unix { path } => write!(formatter, "unix {path}"),
            Route::Tcp { address } => write!(formatter, "tcp {address}"),
            Route::Tls { address, .. } => write!(formatter, "tls {address}"),
            Route::Ssh(target) => write!(formatter, "ssh {target:?}"),
        }
    }
}

/// The `ssh://` endpoint's words, parsed and checked where every plain value is (the
/// facts crate): the team file, contexts and `ops` read them without naming the engine.
pub use envctl_facts::ssh::{SshRefusal, SshTarget};

/// What failed below HTTP, carried inside the `io::Error` the stream gives.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectFailure {
    /// TLS was asked for and the endpoint answered the hello in plain HTTP.
    #[error("the server gave an HTTP answer to a TLS client")]
    HttpAnswerToTls,
    /// The TLS handshake failed (an unknown CA, another host's certificate, a client
    /// certificate the daemon refused).
    #[error("the TLS handshake failed")]
    Handshake(#[source] rustls::Error),
    /// A TCP connection that did not complete within [`CONNECT_DEADLINE`]: nothing on the
    /// way answered, the daemon was never reached.
    #[error("no connection completed within {:.1} s", CONNECT_DEADLINE.as_secs_f64())]
    NeverConnected,
    /// `ssh` is not on `PATH`.
    #[error("cannot run `ssh`: {0}")]
    SshMissing(String),
    /// ssh ended before the far side answered: its status and what it said.
    #[error("ssh ended{} before the daemon answered{}", .status.map_or_else(String::new, |code| format!(" with status {code}")), if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    SshEnded {
        status: Option<i32>,
        message: String,
    },
}

impl ConnectFailure {
    fn into_io(self, kind: io::ErrorKind) -> io::Error {
        io::Error::new(kind, self)
    }
}

/// The [`ConnectFailure`] inside an error's chain, if any.
pub(crate) fn failure_in(error: &(dyn std::error::Error + 'static)) -> Option<ConnectFailure> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(failure) = error.downcast_ref::<ConnectFailure>() {
            return Some(failure.clone());
        }
        // An `io::Error`'s `source()` skips the error it wraps: look inside it.
        let io = error.downcast_ref::<io::Error>().or_else(|| {
            match error.downcast_ref::<bollard::errors::Error>() {
                Some(bollard::errors::Error::IOError { err }) => Some(err),
                _ => None,
            }
        });
        let inner = io.and_then(io::Error::get_ref);
        if let Some(failure) = inner.and_then(|inner| inner.downcast_ref::<ConnectFailure>()) {
            return Some(failure.clone());
        }
        // A TLS 1.3 server refuses a client certificate after the handshake: the alert
        // comes with the first answer.
        if let Some(tls) = inner.and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            return Some(ConnectFailure::Handshake(tls.clone()));
        }
        current = error.source();
    }
    None
}

impl Route {
    /// The route to `endpoint`, with TLS when `tls` asks for it (only `tcp://` endpoints
    /// take TLS, as the CLI applies it). The TLS files are read here, once per connection.
    pub(crate) fn new(endpoint: &str, tls: Option<&TlsChoice>) -> Result<Route, EngineError> {
        let unsupported = || EngineError::UnsupportedHost {
            endpoint: Endpoint::unidentified(endpoint),
        };
        if let Some(path) = endpoint.strip_prefix("unix://") {
            return Ok(Route::Unix {
                path: path.to_string(),
            });
        }
        let scheme = endpoint.split_once("://").map(|(scheme, _)| scheme);
        match scheme {
            Some("tcp" | "http") => {
                let url = url::Url::parse(endpoint).map_err(|_| unsupported())?;
                let host = url.host_str().filter(|host| !host.is_empty());
                let Some(host) = host else {
                    return Err(unsupported());
                };
                // The CLI 28's default port, with or without TLS.
                let address = format!("{host}:{}", url.port().unwrap_or(2375));
                match tls {
                    None => Ok(Route::Tcp { address }),
                    Some(tls) => {
                        let name = host.trim_start_matches('[').trim_end_matches(']');
                        let server = rustls_pki_types::ServerName::try_from(name.to_string())
                            .map_err(|_| unsupported())?;
                        Ok(Route::Tls {
                            address,
                            server,
                            config: Arc::new(tls_config(endpoint, tls)?),
                        })
                    }
                }
            }
            Some("ssh") => SshTarget::parse(endpoint)
                .map(Route::Ssh)
                .map_err(|refusal| EngineError::SshEndpoint {
                    endpoint: Endpoint::unidentified(endpoint),
                    refusal,
                }),
            _ => Err(unsupported()),
        }
    }

    /// Whether opening a stream costs a handshake (TLS, ssh): such connections are kept
    /// for the next request.
    pub(crate) fn keeps_connections(&self) -> bool {
        matches!(self, Route::Tls { .. } | Route::Ssh(_))
    }

    /// How many whole request-answer cycles may run at once on an `Engine` of this
    /// route: one over ssh (each connection is an ssh process and its handshake) and over
    /// TLS (a handshake, and through a proxy a process each), as the docker CLI keeps one
    /// connection; no limit on a socket or plain TCP, where a connection is nearly free.
    /// Measured on loopback (tests/bench/remote.sh): four over TLS made `ps` 2.7× the
    /// CLI's time, each extra connection a handshake.
    pub(crate) fn concurrent_answers(&self) -> Option<usize> {
        match self {
            Route::Ssh(_) | Route::Tls { .. } => Some(1),
            Route::Unix { .. } | Route::Tcp { .. } => None,
        }
    }

    /// A plain TCP endpoint's address (`host:port`), for the TLS probe after a failure.
    pub(crate) fn plain_tcp_address(&self) -> Option<&str> {
        match self {
            Route::Tcp { address } => Some(address),
            _ => None,
        }
    }

    /// The one function that opens a byte stream to the daemon.
    pub(crate) async fn open(&self) -> io::Result<Stream> {
        match self {
            Route::Unix { path } => Ok(Box::new(tokio::net::UnixStream::connect(path).await?)),
            Route::Tcp { address } => {
                let stream = connect(address).await?;
                stream.set_nodelay(true)?;
                Ok(Box::new(stream))
            }
            Route::Tls {
                address,
                server,
                config,
            } => {
                let stream = connect(address).await?;
                stream.set_nodelay(true)?;
                let first = Arc::new(Mutex::new(Vec::new()));
                let sniffed = FirstBytes {
                    inner: stream,
                    first: Arc::clone(&first),
                };
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                match connector.connect(server.clone(), sniffed).await {
                    Ok(stream) => Ok(Box::new(stream)),
                    Err(error) => Err(handshake_failure(error, &first)),
                }
            }
            Route::Ssh(target) => Ok(Box::new(SshStream::spawn(target)?)),
        }
    }
}

/// A TCP connection to `address`, bounded by [`CONNECT_DEADLINE`].
async fn connect(address: &str) -> io::Result<tokio::net::TcpStream> {
    match tokio::time::timeout(CONNECT_DEADLINE, tokio::net::TcpStream::connect(address)).await {
        Ok(connected) => connected,
        Err(_) => Err(ConnectFailure::NeverConnected.into_io(io::ErrorKind::TimedOut)),
    }
}

/// Why a TLS handshake failed: an HTTP answer (the first bytes the server sent were
/// `HTTP/`), the handshake's own error, or the I/O error as it came.
fn handshake_failure(error: io::Error, first: &Mutex<Vec<u8>>) -> io::Error {
    let said_http = first
        .lock()
        .map(|bytes| bytes.starts_with(b"HTTP/"))
        .unwrap_or(false);
    if said_http {
        return ConnectFailure::HttpAnswerToTls.into_io(io::ErrorKind::InvalidData);
    }
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(tls) => ConnectFailure::Handshake(tls.clone()).into_io(io::ErrorKind::InvalidData),
        None => error,
    }
}

/// A stream that keeps the first five bytes the server sent (a TLS record header, or
/// `HTTP/` from a plain server).
struct FirstBytes<S> {
    inner: S,
    first: Arc<Mutex<Vec<u8>>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstBytes<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buffer);
        if let Poll::Ready(Ok(())) = polled
            && let Ok(mut first) = self.first.lock()
            && first.len() < 5
        {
            let wanted = 5 - first.len();
            let new = &buffer.filled()[before..];
            first.extend_from_slice(&new[..new.len().min(wanted)]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstBytes<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(context, bytes)
    }
    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}

/// Whether something speaking TLS listens at `address`: a TLS hello is sent and the first
/// bytes of the answer are a TLS record (a handshake or an alert). For naming a plain
/// request that reached a TLS port, after it failed: nothing is verified or kept.
pub(crate) async fn speaks_tls(address: &str, deadline: Duration) -> bool {
    let probe = async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .ok()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
            .with_no_client_auth();
        let name = rustls_pki_types::ServerName::try_from("localhost").ok()?;
        let mut hello = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
        let mut bytes = Vec::new();
        hello.write_tls(&mut bytes).ok()?;
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        stream.write_all(&bytes).await.ok()?;
        let mut header = [0u8; 3];
        stream.read_exact(&mut header).await.ok()?;
        // A record of type handshake (22) or alert (21), protocol version 3.x.
        Some(matches!(header[0], 21 | 22) && header[1] == 3)
    };
    matches!(tokio::time::timeout(deadline, probe).await, Ok(Some(true)))
}

/// The rustls configuration for `tls`: the CA (or the system's roots) to verify the daemon
/// with, unless verification is off, and the client certificate when one is given.
fn tls_config(endpoint: &str, tls: &TlsChoice) -> Result<rustls::ClientConfig, EngineError> {
    let setup = |path: &Path, problem: String| EngineError::TlsFiles {
        endpoint: endpoint.to_string(),
        path: path.to_path_buf(),
        problem,
        why: tls.why.clone(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| setup(Path::new("(rustls)"), error.to_string()))?;
    // The CLI reads the CA whenever TLS is on, verifying or not: a missing one is refused.
    let authority = match &tls.ca {
        Some(path) => Some((path.clone(), certificates(path, &setup)?)),
        None => None,
    };
    let builder = if tls.verify {
        let (path, authorities) = match authority {
            Some(found) => found,
            None => {
                let path = PathBuf::from(SYSTEM_ROOTS);
                let roots = certificates(&path, &setup)?;
                (path, roots)
            }
        };
        let mut roots = rustls::RootCertStore::empty();
        for certificate in authorities {
            roots
                .add(certificate)
                .map_err(|error| setup(&path, format!("not a usable CA certificate: {error}")))?;
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
    };
    match (&tls.certificate, &tls.key) {
        (Some(certificate), Some(key)) => {
            let chain = certificates(certificate, &setup)?;
            let key = private_key(key, &setup)?;
            let first_version_1 = chain.first().is_some_and(|first| is_version_1(first));
            builder
                .with_client_auth_cert(chain, key.clone_key())
                .map_err(|error| {
                    let problem = match &error {
                        _ if first_version_1 => format!(
                            "is an X.509 version 1 certificate, which a TLS client cannot present (rustls reads version 3 only): make a version 3 one, `openssl x509 -req … -extfile FILE` with `extendedKeyUsage=clientAuth` in FILE ({error})"
                        ),
                        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                            format!("does not go with its key: {error}")
                        }
                        _ => format!("cannot be used as a client certificate with its key: {error}"),
                    };
                    setup(certificate, problem)
                })
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// Whether `certificate` is X.509 version 1: its `TBSCertificate` has no `[0]` version
/// field (DER: the outer SEQUENCE, the inner SEQUENCE, then tag 0xA0 for versions 2 and 3).
fn is_version_1(certificate: &[u8]) -> bool {
    /// The length of the DER header (tag and length) of the element at the start of `bytes`.
    fn header(bytes: &[u8]) -> Option<usize> {
        let first = *bytes.get(1)?;
        if first < 0x80 {
            Some(2)
        } else {
            Some(2 + usize::from(first & 0x7f))
        }
    }
    let Some(outer) = header(certificate) else {
        return false;
    };
    let Some(inner) = certificate.get(outer..).and_then(header) else {
        return false;
    };
    certificate.get(outer) == Some(&0x30) && certificate.get(outer + inner) != Some(&0xa0)
}

/// The certificates of a PEM file, at least one.
fn certificates(
    path: &Path,
    setup: &dyn Fn(&Path, String) -> EngineError,
) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, EngineError> {
    use rustls_pki_types::pem::PemObject as _;
    let bytes = pem_file(path, setup)?;
    let found: Result<Vec<_>, _> =
        rustls_pki_types::CertificateDer::pem_slice_iter(&bytes).collect();
    match found {
        Ok(found) if !found.is_empty() => Ok(found),
        Ok(_) => Err(setup(path, "holds no PEM certificate".into())),
        Err(error) => Err(setup(path, format!("is not PEM: {error}"))),
    }
}

fn private_key(
    path: &Path,
    setup: &dyn Fn(&Path, String) -> EngineError,
) -> Result<rustls_pki_types::PrivateKeyDer<'static>, EngineError> {
    use rustls_pki_types::pem::PemObject as _;
    let bytes = pem_file(path, setup)?;
    rustls_pki_types::PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|error| setup(path, format!("holds no usable private key: {error}")))
}

fn pem_file(
    path: &Path,
    setup: &dyn Fn(&Path, String) -> EngineError,
) -> Result<Vec<u8>, EngineError> {
    match envctl_core::untrusted::read(
        path,
        MAXIMUM_PEM_BYTES,
        envctl_core::untrusted::Named::ByTheUser,
    ) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(setup(path, "does not exist".into())),
        Err(error) => Err(setup(path, error.to_string())),
    }
}

/// The verifier when verification is off (`DOCKER_TLS` without `_VERIFY`, a context's
/// `SkipTLSVerify`): any certificate is taken, as the CLI takes it; the handshake's
/// signatures are still checked.
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &rustls_pki_types::CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &rustls_pki_types::CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `ssh … docker system dial-stdio`: HTTP over the child's stdin and stdout. Dropping the
/// stream kills the child (tokio reaps it).
struct SshStream {
    /// Kept for its `kill_on_drop` and its exit status.
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    /// ssh's stderr, read to its end (capped) by a task of its own.
    stderr: tokio::task::JoinHandle<String>,
    /// Whether the far side sent anything yet: an end before that is ssh's failure.
    answered: bool,
    /// After such an end, the wait for ssh's exit status (it closes its streams just
    /// before it exits): polled in steps, at most [`SSH_EXIT_WAIT`].
    exit_wait: Option<(Pin<Box<tokio::time::Sleep>>, tokio::time::Instant)>,
    /// ssh's stderr once its task finished (a finished task is not polled again).
    message: Option<String>,
}

/// How long an ssh that ended its output is waited for, for its exit status.
const SSH_EXIT_WAIT: Duration = Duration::from_secs(1);

/// Reads a child ssh's `stderr` to its end on a task of its own, so ssh never blocks on a
/// full pipe, keeping its first `cap` bytes as trimmed text. A read that fails ends the
/// text with what failed: what ssh said up to there is kept, the failure is not taken for
/// the end of its words. Used by the `ssh://` connection here and by `engine::forward`.
pub(crate) fn read_ssh_stderr(
    mut stderr: tokio::process::ChildStderr,
    cap: usize,
) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt as _;
        let mut kept = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut failure = None;
        loop {
            match stderr.read(&mut chunk).await {
                Ok(0) => break,
                Ok(read) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..read.min(room)]);
                }
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let text = String::from_utf8_lossy(&kept).trim().to_string();
        match failure {
            None => text,
            Some(error) if text.is_empty() => format!("(its stderr could not be read: {error})"),
            Some(error) => format!("{text} (the rest of its stderr could not be read: {error})"),
        }
    })
}

/// The text a [`read_ssh_stderr`] task gave, or why there is none: a task that failed
/// (it panicked or was cancelled) is said as such, never taken for an ssh that said
/// nothing.
pub(crate) fn ssh_stderr_text(joined: Result<String, tokio::task::JoinError>) -> String {
    joined.unwrap_or_else(|error| format!("(its stderr could not be read: {error})"))
}

impl SshStream {
    fn spawn(target: &SshTarget) -> io::Result<SshStream> {
        let mut child = tokio::process::Command::new("ssh")
            .args(target.arguments())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                let kind = error.kind();
                ConnectFailure::SshMissing(error.to_string()).into_io(kind)
            })?;
        let missing = || io::Error::other("ssh's standard streams were not piped");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = read_ssh_stderr(
            child.stderr.take().ok_or_else(missing)?,
            MAXIMUM_SSH_MESSAGE,
        );
        Ok(SshStream {
            child,
            stdin,
            stdout,
            stderr,
            answered: false,
            exit_wait: None,
            message: None,
        })
    }
}

impl SshStream {
    /// ssh ended before the far side answered: its status and its stderr, as one
    /// [`ConnectFailure::SshEnded`], once its stderr closed and its exit status is known
    /// (or [`SSH_EXIT_WAIT`] passed). Both ends of the pipe see the same end: a read finds
    /// the end of ssh's output, a write the broken pipe of its input, whichever hyper
    /// tries first; each is said as ssh's failure.
    fn poll_ended(&mut self, context: &mut Context<'_>) -> Poll<io::Error> {
        // Kept in `self.message` across each `Pending` below: a finished task is not
        // polled again.
        let message = match self.message.take() {
            Some(message) => message,
            None => match Pin::new(&mut self.stderr).poll(context) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(joined) => ssh_stderr_text(joined),
            },
        };
        let status = match self.child.try_wait() {
            Ok(Some(status)) => status.code(),
            Ok(None) => {
                let now = tokio::time::Instant::now();
                let (sleep, since) = self.exit_wait.get_or_insert_with(|| {
                    (Box::pin(tokio::time::sleep(Duration::from_millis(5))), now)
                });
                if now.duration_since(*since) < SSH_EXIT_WAIT {
                    if sleep.as_mut().poll(context).is_ready() {
                        sleep.as_mut().reset(now + Duration::from_millis(5));
                        // Polled again at once: the reset sleep registers the waker.
                        context.waker().wake_by_ref();
                    }
                    self.message = Some(message);
                    return Poll::Pending;
                }
                None
            }
            Err(_) => None,
        };
        self.answered = true;
        Poll::Ready(
            ConnectFailure::SshEnded { status, message }.into_io(io::ErrorKind::ConnectionAborted),
        )
    }

    /// A write's, flush's or shutdown's result: a broken pipe before any answer is ssh
    /// that ended, said with its status and stderr.
    fn written<T>(
        &mut self,
        context: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(Err(error))
                if error.kind() == io::ErrorKind::BrokenPipe && !self.answered =>
            {
                self.poll_ended(context).map(Err)
            }
            other => other,
        }
    }
}

impl AsyncRead for SshStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buffer.filled().len();
        match Pin::new(&mut self.stdout).poll_read(context, buffer) {
            Poll::Ready(Ok(())) if buffer.filled().len() == before && !self.answered => {
                // The end before any answer: ssh failed. Its message comes once its stderr
                // closes (at its exit).
                self.poll_ended(context).map(Err)
            }
            Poll::Ready(Ok(())) => {
                if buffer.filled().len() > before {
                    self.answered = true;
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl AsyncWrite for SshStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stdin).poll_write(context, bytes);
        self.written(context, result)
    }
    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.stdin).poll_flush(context);
        self.written(context, result)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.stdin).poll_shutdown(context);
        self.written(context, result)
    }
}

/// The connector bollard's hyper client opens its connections with: [`Route::open`].
#[derive(Clone)]
pub(crate) struct Connector {
    pub route: Arc<Route>,
}

/// A stream as hyper takes it.
pub(crate) struct HyperStream(Stream);

impl AsyncRead for HyperStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(context, buffer)
    }
}

impl AsyncWrite for HyperStream {
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

impl hyper_util::client::legacy::connect::Connection for HyperStream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

impl tower_service::Service<::http::Uri> for Connector {
    type Response = hyper_util::rt::TokioIo<HyperStream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: ::http::Uri) -> Self::Future {
        let route = Arc::clone(&self.route);
        Box::pin(async move {
            let stream = route.open().await?;
            Ok(hyper_util::rt::TokioIo::new(HyperStream(stream)))
        })
    }
}

/// An answer as the client gives it: headers, and a body still to be read.
pub(crate) type Answer = ::http::Response<hyper::body::Incoming>;

/// A request on its way.
pub(crate) type Sending =
    Pin<Box<dyn Future<Output = Result<Answer, bollard::errors::Error>> + Send>>;

/// The one HTTP client of a connection: bollard sends through it, and so does
/// `engine::http`, so both share its streams (and, over TLS or ssh, its kept connection).
#[derive(Clone)]
pub(crate) struct Client(Arc<dyn Fn(bollard::BollardRequest) -> Sending + Send + Sync>);

impl std::fmt::Debug for Client {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Client")
    }
}

impl Client {
    /// A client whose every connection is opened by `route`.
    pub(crate) fn new(route: Arc<Route>) -> Client {
        let keeps = route.keeps_connections();
        let mut builder =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
        if !keeps {
            // As bollard's own socket client: a connection per request.
            builder.pool_max_idle_per_host(0);
        }
        let client = builder.build(Connector { route });
        Client(Arc::new(move |request: bollard::BollardRequest| {
            let client = client.clone();
            Box::pin(async move {
                client
                    .request(request)
                    .await
                    .map_err(bollard::errors::Error::from)
            })
        }))
    }

    pub(crate) fn send(&self, request: bollard::BollardRequest) -> Sending {
        (self.0)(request)
    }

    /// bollard over this client.
    pub(crate) fn docker(
        &self,
        timeout: Duration,
    ) -> Result<bollard::Docker, bollard::errors::Error> {
        let client = self.clone();
        bollard::Docker::connect_with_custom_transport(
            move |request: bollard::BollardRequest| client.send(request),
            Some("http://docker"),
            timeout.as_secs().max(1),
            bollard::API_DEFAULT_VERSION,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envctl_facts::ssh::SshWord;

    fn route(endpoint: &str) -> Result<Route, EngineError> {
        Route::new(endpoint, None)
    }

    #[test]
    fn endpoints_are_read_as_the_docker_cli_reads_them() {
        assert!(
            matches!(route("tcp://127.0.0.1"), Ok(Route::Tcp { address }) if address == "127.0.0.1:2375")
        );
        assert!(
            matches!(route("tcp://[::1]:2376"), Ok(Route::Tcp { address }) if address == "[::1]:2376")
        );
        assert!(
            matches!(route("unix:///run/d.sock"), Ok(Route::Unix { path }) if path == "/run/d.sock")
        );
        let Ok(Route::Ssh(target)) = route("ssh://me@gpu2:2222") else {
            panic!("ssh");
        };
        assert_eq!(
            target.arguments(),
            [
                "-o",
                "ConnectTimeout=30",
                "-T",
                "-l",
                "me",
                "-p",
                "2222",
                "--",
                "gpu2",
                "docker",
                "system",
                "dial-stdio"
            ]
        );
        let Ok(Route::Ssh(target)) = route("ssh://gpu2/run/other.sock") else {
            panic!("ssh with a socket");
        };
        assert_eq!(target.user, None);
        assert_eq!(target.socket.as_deref(), Some("/run/other.sock"));
        assert!(
            target
                .arguments()
                .contains(&"unix:///run/other.sock".to_string())
        );
        for bad in ["ftp://x", "tcp://", "npipe:////./pipe/x"] {
            assert!(
                matches!(route(bad), Err(EngineError::UnsupportedHost { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_ssh_word_a_shell_would_read_is_refused() {
        let refused = |endpoint: &str| match route(endpoint) {
            Err(EngineError::SshEndpoint { refusal, .. }) => refusal,
            other => panic!("{endpoint}: {other:?}"),
        };
        // The socket path: the far side's shell runs it.
        for (endpoint, character) in [
            (
                "ssh://root@127.0.0.1/run/docker.sock;touch$IFS/tmp/PWN;true",
                ';',
            ),
            ("ssh://gpu2/run/d.sock%60id%60", '`'),
            ("ssh://gpu2/run/d.sock`id`", '`'),
            ("ssh://gpu2/run/$(id)", '$'),
            ("ssh://gpu2/run/d.sock|id", '|'),
            ("ssh://gpu2/run/d.sock&id", '&'),
            ("ssh://gpu2/run/d'.sock", '\''),
            ("ssh://gpu2/run/d%20x.sock", ' '),
            ("ssh://gpu2/run/d%0Aid", '\n'),
        ] {
            assert!(
                matches!(refused(endpoint), SshRefusal::Unsafe { word: SshWord::Socket, character: found, .. } if found == character),
                "{endpoint}"
            );
        }
        // The user name: ssh_config's `%r`.
        for endpoint in [
            "ssh://a;b@gpu2",
            "ssh://a%3Bb@gpu2",
            "ssh://a%20b@gpu2",
            "ssh://a$(id)@gpu2",
        ] {
            assert!(
                matches!(
                    refused(endpoint),
                    SshRefusal::Unsafe {
                        word: SshWord::User,
                        ..
                    }
                ),
                "{endpoint}"
            );
        }
        // The host: an option, or shell syntax for `%h`.
        assert!(matches!(
            refused("ssh://-oProxyCommand=id"),
            SshRefusal::Dash {
                word: SshWord::Host,
                ..
            }
        ));
        assert!(matches!(
            refused("ssh://-l@gpu2"),
            SshRefusal::Dash {
                word: SshWord::User,
                ..
            }
        ));
        assert!(matches!(
            refused("ssh://gpu2;id"),
            SshRefusal::Unsafe {
                word: SshWord::Host,
                ..
            }
        ));
        assert!(matches!(
            refused("ssh://gpu2$(id)"),
            SshRefusal::Unsafe {
                word: SshWord::Host,
                ..
            }
        ));
        // A raw line feed or tab, which the URL parser would drop silently.
        assert!(matches!(
            refused("ssh://gpu2/run/d.sock\ntouch"),
            SshRefusal::Control { .. }
        ));
        assert!(matches!(
            refused("ssh://me:secret@gpu2"),
            SshRefusal::Password
        ));
        assert!(matches!(
            refused("ssh://"),
            SshRefusal::NoHost | SshRefusal::NotAUrl
        ));
        assert!(matches!(refused("ssh://gpu2:0"), SshRefusal::PortZero));
        // Plain words pass, decoded as the CLI decodes them.
        let Ok(Route::Ssh(target)) = route("ssh://me.x%40corp@[::1]:22/run/user/1000/docker.sock")
        else {
            panic!("plain words");
        };
        assert_eq!(target.user.as_deref(), Some("me.x@corp"));
        assert_eq!(target.host, "::1");
        assert_eq!(target.socket.as_deref(), Some("/run/user/1000/docker.sock"));
        // The message names the word, the character and why.
        let message = route("ssh://gpu2/run/d.sock;id").unwrap_err().to_string();
        assert!(
            message.contains("socket path `/run/d.sock;id` holds `;`") && message.contains("shell"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_ca_is_refused_before_anything_is_sent() {
        let folder = tempfile::tempdir().unwrap();
        let tls = TlsChoice {
            ca: Some(folder.path().join("ca.pem")),
            certificate: None,
            key: None,
            verify: true,
            why: "DOCKER_TLS_VERIFY is set".into(),
        };
        let error = Route::new("tcp://127.0.0.1:2376", Some(&tls)).unwrap_err();
        assert!(
            matches!(&error, EngineError::TlsFiles { path, .. } if path.ends_with("ca.pem")),
            "{error:?}"
        );
        std::fs::write(folder.path().join("ca.pem"), "not pem").unwrap();
        let error = Route::new("tcp://127.0.0.1:2376", Some(&tls)).unwrap_err();
        assert!(error.to_string().contains("ca.pem"), "{error}");
    }

    #[test]
    fn failures_are_found_by_type_inside_io_errors() {
        let io = ConnectFailure::HttpAnswerToTls.into_io(io::ErrorKind::InvalidData);
        let bollard = bollard::errors::Error::IOError { err: io };
        assert!(matches!(
            failure_in(&bollard),
            Some(ConnectFailure::HttpAnswerToTls)
        ));
        let plain = bollard::errors::Error::IOError {
            err: io::Error::other("x"),
        };
        assert!(failure_in(&plain).is_none());
    }
}
