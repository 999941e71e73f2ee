//! The Docker daemon through bollard: the only crate whose manifest names bollard (the
//! binary re-exports it as `envctl::engine`), so no other part of envctl can speak the
//! Engine API: the compiler refuses it. It connects, and gathers the plain facts of
//! `envctl_facts` (`EngineFacts`, `ImageFacts`, `ContainerSample`, …) for the pure checks.
//!
//! # Deadlines
//!
//! bollard's own timeout bounds only the wait for an answer's headers; a daemon that sends
//! headers and then one byte a second would hold a request for ever. So every request is
//! bounded here, headers and body together: short answers (list, inspect, version, exec
//! set-up) by [`ANSWER_DEADLINE`], requests that do work (create, start, stop, remove) by
//! the connection's timeout (which `down --timeout` raises). Streams meant to be long (exec
//! output, logs `-f`, stats) get no total deadline but a liveness rule instead:
//! [`Engine::stopped_answering`] pings the daemon while they are open and ends when it
//! stops answering. Every such failure is [`EngineError::StoppedAnswering`], naming the socket.

pub mod attach;
pub(crate) mod connector;
pub mod containers;
pub mod daemon_placement;
pub mod daemon_policy;
pub mod error;
pub mod exec;
pub mod facts;
pub mod forward;
pub(crate) mod http;
pub mod identity;
pub mod image_scan;
pub(crate) mod list;
pub mod logs;
pub mod occupancy;
pub mod probe;
pub mod pull;
pub mod reference;
pub mod stats;
pub mod volumes;

use std::future::Future;
use std::time::Duration;

use bollard::Docker;

pub use error::{Endpoint, EngineError};

/// The most requests envctl keeps in flight to the daemon when it asks about many
/// containers at once (the stats sampler's reads, doctor's image inspects): each is a
/// connection and a file descriptor of its own, and one per container ran out of file
/// descriptors at 86 containers under `ulimit -n 64` (about 1,000 under the usual 1,024).
pub const MAX_CONCURRENT_REQUESTS: usize = 24;

/// The answers of `requests`, in their order, with at most [`MAX_CONCURRENT_REQUESTS`] of
/// them in flight at a time.
pub async fn each_bounded<F: std::future::Future>(
    requests: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    use futures_util::StreamExt as _;
    futures_util::stream::iter(requests)
        .buffered(MAX_CONCURRENT_REQUESTS)
        .collect()
        .await
}

/// How long `ping` waits: a daemon that does not answer this fast is named as the
/// problem (the fault tests ask for an answer within 3 s).
pub const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a short answer may take, headers and body together: a list, an inspect,
/// `/version`, `/info`, setting up or inspecting an exec. The daemon builds these in memory
/// and writes them at once; one that has not finished in this time has stopped answering.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(15);

/// How much later than the connection's timeout envctl's own deadline for the same
/// request fires, so that the two never race.
const TIMEOUT_GRACE: Duration = Duration::from_millis(250);

/// How often a long stream checks that the daemon still answers (a ping, bounded by
/// [`PING_TIMEOUT`]).
pub const LIVENESS_INTERVAL: Duration = Duration::from_secs(10);

/// The default socket when `DOCKER_HOST` is not set.
pub const DEFAULT_ENDPOINT: &str = envctl_host::docker_config::DEFAULT_ENDPOINT;

/// A connection to one daemon, and how to name it in messages.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
    endpoint: String,
    /// How every stream to the daemon is opened.
    route: std::sync::Arc<connector::Route>,
    /// The HTTP client over those streams, bollard's and envctl's own alike.
    client: connector::Client,
    /// Where a connection costs a handshake (ssh, TLS), how many whole request-answer
    /// cycles run at once ([`connector::Route::concurrent_answers`]), so that many short
    /// answers asked together (`ps`'s inspects) share the kept connections instead of each
    /// opening one (an ssh each); long streams never wait on it.
    answers: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    timeout: Duration,
    /// Which engine answers, asked once (`/version`) by what must work around an
    /// engine's own answers (Podman lists only the first port of a published range).
    identity: std::sync::Arc<tokio::sync::OnceCell<Identity>>,
    /// Whether the daemon runs on this machine (`DaemonHost::of`), asked once (`/info`).
    host: std::sync::Arc<tokio::sync::OnceCell<envctl_facts::engine::DaemonHost>>,
    /// Which engine a `_ping`'s headers named ([`Engine::identify_by_ping`]): what messages
    /// go by until `/version` was asked.
    pinged: std::sync::Arc<std::sync::OnceLock<envctl_facts::engine::EngineKind>>,
    /// Image labels by image id, for proving container labels (`list::ImageLabels`): an
    /// image's labels never change, so each image is inspected once per connection.
    image_labels: std::sync::Arc<std::sync::Mutex<list::ImageLabels>>,
}

/// Which engine answers and its version, from `/version`.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub kind: envctl_facts::engine::EngineKind,
    pub version: Option<String>,
}

impl Identity {
    /// Podman before 4.4 reports a container's network counters from the host's side of
    /// its interface: received as sent (podman 75f6a1d "Fix swapped NetInput/-Output
    /// stats", first in v4.4.0). Its cgroup-side counters are right.
    pub fn swaps_network_directions(&self) -> bool {
        self.kind == envctl_facts::engine::EngineKind::Podman
            && envctl_facts::engine::major_minor(self.version.as_deref().unwrap_or(""))
                .is_some_and(|version| version < (4, 4))
    }
}

impl Engine {
    /// Connects to `docker_host` (`unix://`, `tcp://` in plain HTTP, `ssh://`) or the
    /// default socket, without TLS. A missing socket fails here; a dead one on the first
    /// request.
    pub fn connect(docker_host: Option<&str>, timeout: Duration) -> Result<Engine, EngineError> {
        let endpoint = docker_host
            .filter(|host| !host.is_empty())
            .unwrap_or(DEFAULT_ENDPOINT);
        Engine::open(endpoint, None, timeout)
    }

    /// Connects to the daemon the user chose, over TLS when the choice asks for it.
    pub fn connect_to(
        choice: &envctl_host::docker_config::DaemonChoice,
        timeout: Duration,
    ) -> Result<Engine, EngineError> {
        Engine::open(&choice.endpoint, choice.tls.as_ref(), timeout)
    }

    fn open(
        endpoint: &str,
        tls: Option<&envctl_host::docker_config::TlsChoice>,
        timeout: Duration,
    ) -> Result<Engine, EngineError> {
        // bollard keeps its request deadline in whole seconds: a part of one rounds up,
        // never down to 0 (a completion's 500 ms became "no answer within 0 s" at once,
        // so it never offered a running container).
        let timeout =
            Duration::from_secs(timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0));
        // While descriptors are free: an error about running out of them names the limit.
        error::note_open_files_limit();
        let endpoint = endpoint.to_string();
        if let Some(path) = endpoint.strip_prefix("unix://") {
            refuse_what_is_not_a_socket(path)?;
            if !std::path::Path::new(path).exists() {
                return Err(EngineError::SocketMissing {
                    path: path.to_string(),
                    engine: envctl_facts::engine::EngineKind::Unknown,
                });
            }
        }
        let route = std::sync::Arc::new(connector::Route::new(&endpoint, tls)?);
        let answers = route
            .concurrent_answers()
            .map(|permits| std::sync::Arc::new(tokio::sync::Semaphore::new(permits)));
        let client = connector::Client::new(std::sync::Arc::clone(&route));
        let docker = client
            .docker(timeout)
            .map_err(|error| {
                EngineError::classify(
                    &Endpoint::unidentified(endpoint.as_str()),
                    error,
                    timeout.as_secs(),
                )
            })?
            .with_timeout(timeout);
        Ok(Engine {
            docker,
            endpoint,
            route,
            client,
            answers,
            timeout,
            identity: Default::default(),
            host: Default::default(),
            pinged: Default::default(),
            image_labels: Default::default(),
        })
    }

    /// Which engine answers, from `/version`'s components, asked once per connection.
    pub async fn kind(&self) -> Result<envctl_facts::engine::EngineKind, EngineError> {
        Ok(self.identity().await?.kind)
    }

    /// Records what `/version` said, when the facts asked it first.
    pub(crate) fn remember_identity(
        &self,
        kind: envctl_facts::engine::EngineKind,
        version: Option<String>,
    ) {
        // Already known: the same daemon answered the same.
        let _ = self.identity.set(Identity { kind, version });
    }

    pub(crate) async fn identity(&self) -> Result<Identity, EngineError> {
        self.identity
            .get_or_try_init(|| async {
                let version = self
                    .short_answer("GET /version", self.docker.version())
                    .await?;
                Ok(Identity {
                    kind: envctl_facts::engine::EngineKind::from_components(
                        version
                            .components
                            .iter()
                            .flatten()
                            .map(|component| component.name.as_str()),
                        // Docker Desktop and Docker Engine answer alike here.
                        false,
                    ),
                    version: version.version,
                })
            })
            .await
            .cloned()
    }

    /// The socket or host this engine talks to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The engine that answers here as far as this connection knows: `/version`'s word,
    /// else a `_ping`'s headers' (`Context::engine` reads them when it connects), else
    /// `Unknown`.
    pub fn known_kind(&self) -> envctl_facts::engine::EngineKind {
        use envctl_facts::engine::EngineKind;
        self.identity
            .get()
            .map(|identity| identity.kind)
            .filter(|kind| *kind != EngineKind::Unknown)
            .or_else(|| self.pinged.get().copied())
            .unwrap_or(EngineKind::Unknown)
    }

    /// Records the engine a `_ping`'s headers named.
    pub(crate) fn remember_ping(&self, kind: envctl_facts::engine::EngineKind) {
        // Already known: the same daemon answered the same.
        let _ = self.pinged.set(kind);
    }

    /// The endpoint as errors name it: its address and the engine known to answer there.
    pub fn at(&self) -> Endpoint {
        Endpoint {
            address: self.endpoint.clone(),
            kind: self.known_kind(),
        }
    }

    pub(crate) fn classify(&self, error: bollard::errors::Error) -> EngineError {
        EngineError::classify(&self.at(), error, self.timeout.as_secs())
    }

    /// `request` (a bollard call) bounded by `limit`, headers and body together; `what`
    /// names it in the error (`listing containers`).
    pub(crate) async fn answer<T>(
        &self,
        what: &'static str,
        limit: Duration,
        request: impl Future<Output = Result<T, bollard::errors::Error>>,
    ) -> Result<T, EngineError> {
        // The wait for a turn is outside the deadline: it is bounded by the deadlines of
        // the answers before it.
        let _turn = self.turn().await;
        self.with_deadline(what, limit, request)
            .await?
            .map_err(|error| self.classify(error))
    }

    /// [`Engine::with_deadline`] for one whole request-answer cycle (a bollard call that
    /// reads its answer to the end), in its turn where connections are costly.
    pub(crate) async fn whole_answer<F: Future>(
        &self,
        what: &'static str,
        limit: Duration,
        future: F,
    ) -> Result<F::Output, EngineError> {
        let _turn = self.turn().await;
        self.with_deadline(what, limit, future).await
    }

    /// A turn for one whole request-answer cycle where connections are costly; none is
    /// needed elsewhere (or when the semaphore is closed, which nothing does).
    pub(crate) async fn turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        match &self.answers {
            Some(answers) => answers.acquire().await.ok(),
            None => None,
        }
    }

    /// A short answer: [`Engine::answer`] with [`ANSWER_DEADLINE`] (or the connection's
    /// timeout when shorter).
    pub(crate) async fn short_answer<T>(
        &self,
        what: &'static str,
        request: impl Future<Output = Result<T, bollard::errors::Error>>,
    ) -> Result<T, EngineError> {
        self.answer(what, self.answer_deadline(), request).await
    }

    /// An answer that may take as long as the work it asks for: bounded by the
    /// connection's timeout (two minutes, or what `down --timeout` needs).
    pub(crate) async fn work_answer<T>(
        &self,
        what: &'static str,
        request: impl Future<Output = Result<T, bollard::errors::Error>>,
    ) -> Result<T, EngineError> {
        self.answer(what, self.timeout + TIMEOUT_GRACE, request)
            .await
    }

    /// The deadline of a short answer on this connection. Where the connection's own
    /// timeout is the shorter, it is the one that fires (cause `timeout`, "did not answer
    /// within N s"): the deadline waits [`TIMEOUT_GRACE`] longer instead of racing it.
    pub fn answer_deadline(&self) -> Duration {
        ANSWER_DEADLINE.min(self.timeout + TIMEOUT_GRACE)
    }

    /// Any future bounded by `limit`: past it, [`EngineError::StoppedAnswering`] naming the socket
    /// and `what`. For reads that are not one bollard call: the next item of a stream that
    /// should come soon (`stream.next()`), a body read in parts.
    pub async fn with_deadline<F: Future>(
        &self,
        what: &'static str,
        limit: Duration,
        future: F,
    ) -> Result<F::Output, EngineError> {
        tokio::time::timeout(limit, future)
            .await
            .map_err(|_| self.stalled(what, limit))
    }

    /// The liveness rule of a long stream: resolves, with [`EngineError::StoppedAnswering`], only
    /// when the daemon stops answering pings (checked every [`LIVENESS_INTERVAL`]). Select
    /// it against the stream: a stream that is merely quiet (`sleep 3600`) goes on.
    pub async fn stopped_answering(&self, what: &'static str) -> EngineError {
        loop {
            tokio::time::sleep(LIVENESS_INTERVAL).await;
            let limit = PING_TIMEOUT.min(self.timeout);
            match tokio::time::timeout(limit, self.docker.ping()).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return self.classify(error),
                Err(_) => return self.stalled(what, limit),
            }
        }
    }

    fn stalled(&self, request: &'static str, limit: Duration) -> EngineError {
        EngineError::StoppedAnswering {
            endpoint: self.at(),
            request: request.to_string(),
            detail: format!("no complete answer within {} s", limit.as_secs()),
        }
    }

    /// `GET /_ping`, bounded by [`PING_TIMEOUT`] (or the request timeout when shorter) even
    /// when the daemon accepts the connection and never answers.
    pub async fn ping(&self) -> Result<(), EngineError> {
        let limit = PING_TIMEOUT.min(self.timeout);
        // The inner deadline a little later, so the outer one is what fires (`Timeout`).
        match tokio::time::timeout(limit, self.ping_named(limit + TIMEOUT_GRACE)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(self.first_failure(error).await),
            Err(_) => Err(EngineError::Timeout {
                endpoint: self.at(),
                seconds: limit.as_secs(),
            }),
        }
    }

    /// The first request's failure, said as what it is: a plain HTTP request that reached
    /// a TLS port gets a 400 (Go's "Client sent an HTTP request to an HTTPS server"), a
    /// reset or a body that is not JSON, so after such a failure on a plain `tcp://`
    /// endpoint a TLS hello asks whether TLS is spoken there (by the answer's record
    /// type, never by the 400's words). Any other status is an HTTP answer: whatever
    /// answered speaks plain HTTP, so it is said as its status (a proxy or another web
    /// server that also answers a TLS hello on the same port is no TLS-only daemon).
    pub(crate) async fn first_failure(&self, error: EngineError) -> EngineError {
        let Some(address) = self.route.plain_tcp_address() else {
            return error;
        };
        let may_be_tls = matches!(
            error,
            EngineError::Daemon { status: 400, .. }
                | EngineError::BadAnswer { .. }
                | EngineError::Other { .. }
        );
        if may_be_tls && connector::speaks_tls(address, PING_TIMEOUT).await {
            return EngineError::TlsMismatch {
                endpoint: self.at(),
                mismatch: error::TlsMismatch::TlsEndpoint,
            };
        }
        error
    }
}

/// A `unix://` path that exists but is not a socket (`/etc/passwd`, a folder) cannot be a
/// daemon's: say so, rather than let `connect` report "connection refused". A path that
/// does not exist is bollard's to report (`EngineError::SocketMissing`).
fn refuse_what_is_not_a_socket(path: &str) -> Result<(), EngineError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(());
    };
    let kind = metadata.file_type();
    let what = if kind.is_socket() {
        return Ok(());
    } else if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "another kind of file"
    };
    Err(EngineError::NotASocket {
        path: path.to_string(),
        what,
    })
}
